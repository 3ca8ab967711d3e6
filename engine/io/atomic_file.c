#include "io/atomic_file.h"

#include "mtlab/error.h"
#include "mtlab/files.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Temporary names are unique within the process by the counter and across processes by the
 * pid; O_EXCL makes a stale leftover of a crashed run with a recycled pid a retry, not a clash. */
static unsigned tmp_counter;

int atomic_file_begin(atomic_file *af, const char *path)
{
    memset(af, 0, sizeof *af);
    size_t len = strlen(path) + 64;
    char *tmp = mt_xmalloc(len);
    int fd = -1;
    for (int attempt = 0; attempt < 100 && fd < 0; attempt++) {
        unsigned n = __atomic_fetch_add(&tmp_counter, 1, __ATOMIC_RELAXED);
        snprintf(tmp, len, "%s.tmp-%ld-%u", path, (long)getpid(), n);
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0) {
        mt_error("%s: cannot create a temporary file beside it: %s", path, strerror(errno));
        free(tmp);
        return -1;
    }
    af->f = fdopen(fd, "wb");
    if (!af->f) {
        mt_error("%s: %s", tmp, strerror(errno));
        close(fd);
        unlink(tmp);
        free(tmp);
        return -1;
    }
    af->path = mt_xstrdup(path);
    af->tmp_path = tmp;
    return 0;
}

int atomic_file_write(atomic_file *af, const void *data, size_t n)
{
    if (n && fwrite(data, 1, n, af->f) != n)
        return mt_error("%s: write failed: %s", af->tmp_path, strerror(errno));
    return 0;
}

int atomic_file_seal(atomic_file *af)
{
    FILE *f = af->f;
    af->f = NULL;
    int err = 0;
    if (fflush(f) != 0 || fsync(fileno(f)) != 0) err = errno;
    if (fclose(f) != 0 && !err) err = errno;
    if (err) return mt_error("%s: write failed: %s", af->tmp_path, strerror(err));
    return 0;
}

/* The directory entry of a rename is only durable once the directory itself is synced. */
static int fsync_parent_dir(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
    if (!dir) return mt_error("%s: out of memory", path);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int rc = 0;
    if (fd < 0 || fsync(fd) != 0)
        rc = mt_error("%s: cannot sync the directory: %s", dir, strerror(errno));
    if (fd >= 0) close(fd);
    free(dir);
    return rc;
}

int atomic_file_commit(atomic_file *af)
{
    if (rename(af->tmp_path, af->path) != 0) {
        mt_error("%s: cannot rename %s over it: %s", af->path, af->tmp_path, strerror(errno));
        atomic_file_discard(af);
        return -1;
    }
    int rc = fsync_parent_dir(af->path);
    free(af->tmp_path);
    free(af->path);
    memset(af, 0, sizeof *af);
    return rc;
}

void atomic_file_discard(atomic_file *af)
{
    if (af->f) fclose(af->f);
    if (af->tmp_path) unlink(af->tmp_path);
    free(af->tmp_path);
    free(af->path);
    memset(af, 0, sizeof *af);
}

int atomic_file_replace(const char *path, const void *data, size_t n)
{
    atomic_file af;
    if (atomic_file_begin(&af, path)) return -1;
    if (atomic_file_write(&af, data, n) || atomic_file_seal(&af)) {
        atomic_file_discard(&af);
        return -1;
    }
    return atomic_file_commit(&af);
}

int atomic_file_write_file(atomic_file *af, const char *src)
{
    FILE *f = mt_file_fopen(src, MT_FILE_REGULAR);
    if (!f) return -1;
    char buf[1 << 16];
    size_t n;
    int rc = 0;
    while (!rc && (n = fread(buf, 1, sizeof buf, f)) > 0) rc = atomic_file_write(af, buf, n);
    if (!rc && ferror(f)) rc = mt_error("%s: read failed", src);
    fclose(f);
    return rc;
}

int atomic_file_copy(const char *path, const char *src)
{
    atomic_file af;
    if (atomic_file_begin(&af, path)) return -1;
    if (atomic_file_write_file(&af, src) || atomic_file_seal(&af)) {
        atomic_file_discard(&af);
        return -1;
    }
    return atomic_file_commit(&af);
}
