/* Writing a bundle where a user named it (mtlab/bundle.h, mt_bundle_target): into a new
 * sibling directory, then renamed into place; an old bundle is replaced only when asked, by
 * renameat2's exchange, so the name always holds one whole bundle, the old or the new. */
#include "mtlab/bundle.h"
#include "mtlab/error.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* mkdir -p of dir[0..len) */
static int make_parents(const char *dir, size_t len)
{
    char *path = mt_xmalloc(len + 1);
    memcpy(path, dir, len);
    path[len] = '\0';
    int rc = 0;
    for (size_t i = 1; i <= len && !rc; i++) {
        if (path[i] != '/' && path[i] != '\0') continue;
        char c = path[i];
        path[i] = '\0';
        if (mkdir(path, 0777) != 0 && errno != EEXIST)
            rc = mt_error("%s: cannot create: %s", path, strerror(errno));
        path[i] = c;
    }
    free(path);
    return rc;
}

/* What stops dir (an existing directory) from being replaced by a bundle, in *why; its entry
 * count in *n. A bundle is flat: regular files, config.json among them. */
static int scan_dir(const char *dir, size_t *n, int *has_config, char *why, size_t why_len)
{
    DIR *d = opendir(dir);
    if (!d) return mt_error("%s: %s", dir, strerror(errno));
    *n = 0;
    *has_config = 0;
    why[0] = '\0';
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        (*n)++;
        struct stat sb;
        if (fstatat(dirfd(d), e->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0) continue;
        if (!S_ISREG(sb.st_mode) && !why[0])
            snprintf(why, why_len, "holds %s%s, which no model bundle holds", e->d_name,
                     S_ISDIR(sb.st_mode) ? "/" : "");
        if (!strcmp(e->d_name, "config.json") && S_ISREG(sb.st_mode)) *has_config = 1;
    }
    closedir(d);
    if (*n && !*has_config && !why[0])
        snprintf(why, why_len, "holds no config.json: not a model bundle");
    return 0;
}

/* Removes dir and the regular files in it (a bundle, or the part of one written); quietly,
 * so that the message of what failed before stays. */
static void remove_flat(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) unlinkat(dirfd(d), e->d_name, 0);
    closedir(d);
    rmdir(dir);
}

int mt_bundle_target_begin(mt_bundle_target *t, const char *dir, int replace)
{
    memset(t, 0, sizeof *t);
    size_t len = strlen(dir);
    while (len > 1 && dir[len - 1] == '/') len--;
    if (len == 0) return mt_error("empty bundle directory name");
    struct stat sb;
    if (lstat(dir, &sb) == 0) {
        if (S_ISLNK(sb.st_mode))
            return mt_error("%s: a symbolic link; name the directory it points to", dir);
        if (!S_ISDIR(sb.st_mode)) return mt_error("%s: exists and is not a directory", dir);
        size_t n;
        int has_config;
        char why[320];
        if (scan_dir(dir, &n, &has_config, why, sizeof why)) return -1;
        if (n && !replace) {
            mt_error("%s: already exists and %s; not overwritten", dir,
                     has_config ? "holds a model bundle" : "is not empty");
            return MT_BUNDLE_TARGET_EXISTS;
        }
        if (n && why[0]) return mt_error("%s: %s: not replaced", dir, why);
        t->replace = n > 0;
    } else if (errno != ENOENT) {
        return mt_error("%s: %s", dir, strerror(errno));
    }
    size_t base = len;
    while (base > 0 && dir[base - 1] != '/') base--;
    if (base > 1 && make_parents(dir, base - 1)) return -1;
    size_t cap = len + 64;
    t->dir = mt_xmalloc(len + 1);
    memcpy(t->dir, dir, len);
    t->dir[len] = '\0';
    t->tmp = mt_xmalloc(cap);
    static int counter;
    for (int tries = 0;; tries++) {
        snprintf(t->tmp, cap, "%.*s.%.*s.new-%ld-%d", (int)base, dir, (int)(len - base), dir + base,
                 (long)getpid(), __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED));
        if (mkdir(t->tmp, 0777) == 0) return 0;
        if (errno != EEXIST || tries == 100) {
            mt_error("%s: cannot create: %s", t->tmp, strerror(errno));
            free(t->tmp);
            free(t->dir);
            memset(t, 0, sizeof *t);
            return -1;
        }
    }
}

/* After the renames: make them durable. */
static void sync_parent(const char *dir)
{
    const char *slash = strrchr(dir, '/');
    char *parent = slash ? strndup(dir, slash == dir ? 1 : (size_t)(slash - dir)) : strdup(".");
    int fd = parent ? open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
    free(parent);
}

int mt_bundle_target_commit(mt_bundle_target *t)
{
    int rc = 0;
    if (!t->replace) {
        /* over nothing or an empty directory; a bundle put there meanwhile stays */
        if (rename(t->tmp, t->dir) != 0)
            rc = mt_error("%s: %s; not overwritten", t->dir,
                          errno == ENOTEMPTY || errno == EEXIST
                              ? "was created while the bundle was written"
                              : strerror(errno));
    } else if (renameat2(AT_FDCWD, t->tmp, AT_FDCWD, t->dir, RENAME_EXCHANGE) != 0) {
        /* a file system without the exchange: two renames, with a moment without the name */
        if (errno != EINVAL && errno != ENOSYS) {
            rc = mt_error("%s: cannot replace: %s", t->dir, strerror(errno));
        } else {
            size_t cap = strlen(t->tmp) + 8;
            char *old = mt_xmalloc(cap);
            snprintf(old, cap, "%s.old", t->tmp);
            if (rename(t->dir, old) != 0) {
                rc = mt_error("%s: cannot replace: %s", t->dir, strerror(errno));
            } else if (rename(t->tmp, t->dir) != 0) {
                rc = mt_error("%s: cannot replace: %s", t->dir, strerror(errno));
                rename(old, t->dir);
            } else {
                remove_flat(old);
            }
            free(old);
        }
    }
    /* after an exchange, tmp holds the old bundle */
    if (rc == 0) sync_parent(t->dir);
    mt_bundle_target_discard(t);
    return rc;
}

void mt_bundle_target_discard(mt_bundle_target *t)
{
    if (t->tmp) remove_flat(t->tmp);
    free(t->tmp);
    free(t->dir);
    memset(t, 0, sizeof *t);
}
