/* Output files renamed into place together (out_files.h). */
#include "data/out_files.h"
#include "mtlab/error.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int out_dir_make(const char *dir)
{
    char path[PATH_MAX];
    if (!dir[0]) return mt_error("empty output directory name");
    if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path)
        return mt_error("%s: path too long", dir);
    for (char *p = path + 1;; p++) {
        if (*p != '/' && *p != '\0') continue;
        char saved = *p;
        *p = '\0';
        if (mkdir(path, 0777) < 0 && errno != EEXIST)
            return mt_error("%s: cannot create directory: %s", path, strerror(errno));
        *p = saved;
        if (saved == '\0') break;
    }
    struct stat st;
    if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) return mt_error("%s: not a directory", dir);
    return 0;
}

FILE *out_open(out_set *set, const char *dir, const char *name)
{
    if (set->failed) return NULL;
    if (set->n == OUT_MAX_FILES) {
        mt_error("%s/%s: more than %d output files", dir, name, OUT_MAX_FILES);
        set->failed = 1;
        return NULL;
    }
    out_file *o = &set->files[set->n];
    if (snprintf(o->final, sizeof o->final, "%s/%s", dir, name) >= (int)sizeof o->final ||
        snprintf(o->tmp, sizeof o->tmp, "%s/.%s.tmp-XXXXXX", dir, name) >= (int)sizeof o->tmp ||
        snprintf(o->name, sizeof o->name, "%s", name) >= (int)sizeof o->name) {
        mt_error("%s/%s: path too long", dir, name);
        set->failed = 1;
        return NULL;
    }
    int fd = mkstemp(o->tmp);
    if (fd < 0 || fchmod(fd, 0644) < 0 || !(o->f = fdopen(fd, "w"))) {
        mt_error("%s: cannot create: %s", o->tmp, strerror(errno));
        if (fd >= 0) {
            close(fd);
            unlink(o->tmp);
        }
        set->failed = 1;
        return NULL;
    }
    set->n++;
    return o->f;
}

int out_close_all(out_set *set)
{
    for (size_t i = 0; i < set->n; i++) {
        out_file *o = &set->files[i];
        if (!o->f) continue;
        int bad = ferror(o->f) || fflush(o->f) != 0 || fsync(fileno(o->f)) != 0;
        if (fclose(o->f) != 0) bad = 1;
        o->f = NULL;
        if (bad && !set->failed) {
            mt_error("%s: write error: %s", o->final, strerror(errno));
            set->failed = 1;
        }
    }
    return set->failed ? -1 : 0;
}

int out_commit(out_set *set)
{
    out_close_all(set);
    for (size_t i = 0; i < set->n && !set->failed; i++) {
        if (rename(set->files[i].tmp, set->files[i].final) < 0) {
            mt_error("%s: cannot rename into place: %s", set->files[i].final, strerror(errno));
            set->failed = 1;
        }
    }
    if (set->failed)
        for (size_t i = 0; i < set->n; i++)
            unlink(set->files[i].tmp); /* renamed ones are already gone */
    return set->failed ? -1 : 0;
}
