/* Writing the corpus files. All of them go to temporary names first and are renamed into
 * place only when every one was written, so a failed run leaves the previous corpus intact. */
#include "mtlab/bible.h"
#include "mtlab/error.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { MAX_FILES = 24 }; /* 18 written */

typedef struct {
    char final[PATH_MAX];
    char tmp[PATH_MAX];
    FILE *f;
} out_file;

typedef struct {
    out_file files[MAX_FILES];
    size_t n;
    int failed;
} out_set;

static int make_dirs(const char *dir)
{
    char path[PATH_MAX];
    if (!dir[0]) return mt_error("empty output directory name");
    if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path) return mt_error("%s: path too long", dir);
    for (char *p = path + 1;; p++) {
        if (*p != '/' && *p != '\0') continue;
        char saved = *p;
        *p = '\0';
        if (mkdir(path, 0777) < 0 && errno != EEXIST) return mt_error("%s: cannot create directory: %s", path, strerror(errno));
        *p = saved;
        if (saved == '\0') break;
    }
    struct stat st;
    if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) return mt_error("%s: not a directory", dir);
    return 0;
}

/* Open DIR/NAME's temporary file; NULL (and set->failed) on failure. */
static FILE *open_out(out_set *set, const char *dir, const char *name)
{
    if (set->failed) return NULL;
    if (set->n == MAX_FILES) {
        mt_error("%s/%s: more than %d output files", dir, name, MAX_FILES);
        set->failed = 1;
        return NULL;
    }
    out_file *o = &set->files[set->n];
    if (snprintf(o->final, sizeof o->final, "%s/%s", dir, name) >= (int)sizeof o->final ||
        snprintf(o->tmp, sizeof o->tmp, "%s/.%s.tmp-XXXXXX", dir, name) >= (int)sizeof o->tmp) {
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

/* Flush, sync and close every file; then rename all into place, or remove all temporaries. */
static int finish(out_set *set)
{
    for (size_t i = 0; i < set->n; i++) {
        out_file *o = &set->files[i];
        int bad = ferror(o->f) || fflush(o->f) != 0 || fsync(fileno(o->f)) != 0;
        if (fclose(o->f) != 0) bad = 1;
        if (bad && !set->failed) {
            mt_error("%s: write error: %s", o->final, strerror(errno));
            set->failed = 1;
        }
    }
    for (size_t i = 0; i < set->n && !set->failed; i++) {
        if (rename(set->files[i].tmp, set->files[i].final) < 0) {
            mt_error("%s: cannot rename into place: %s", set->files[i].final, strerror(errno));
            set->failed = 1;
        }
    }
    if (set->failed)
        for (size_t i = 0; i < set->n; i++) unlink(set->files[i].tmp); /* renamed ones are already gone */
    return set->failed ? -1 : 0;
}

static const char *side_text(const mt_pair *p, int english) { return english ? p->en->text : p->es->text; }

/* {split}.{es,en,keys}: one verse per line. */
static void write_verses(out_set *set, const char *dir, const mt_bible_corpus *c, mt_split split)
{
    static const char *const ext[3] = {"es", "en", "keys"};
    for (int side = 0; side < 3; side++) {
        char name[64];
        snprintf(name, sizeof name, "%s.%s", mt_split_name(split), ext[side]);
        FILE *f = open_out(set, dir, name);
        if (!f) return;
        for (size_t i = 0; i < c->n_pairs; i++) {
            const mt_pair *p = &c->pairs[i];
            if (p->split != split) continue;
            fputs(side == 2 ? p->es->key : side_text(p, side), f);
            fputc('\n', f);
        }
    }
}

/* {split}.{kind}.{es,en,keys}: the verses of each span joined by a space; the keys file names
 * the span ("Ruth 1:1-8" for a run, "Esther 3" for a chapter). */
static void write_spans(out_set *set, const char *dir, const mt_bible_corpus *c, mt_split split, const char *kind,
                        const mt_span *spans, size_t n, int chapter_keys)
{
    static const char *const ext[3] = {"es", "en", "keys"};
    for (int side = 0; side < 3; side++) {
        char name[64];
        snprintf(name, sizeof name, "%s.%s.%s", mt_split_name(split), kind, ext[side]);
        FILE *f = open_out(set, dir, name);
        if (!f) return;
        for (size_t i = 0; i < n; i++) {
            const mt_pair *first = &c->pairs[spans[i].first], *last = first + spans[i].count - 1;
            if (side == 2 && chapter_keys) fprintf(f, "%s %d\n", first->es->book, first->es->chapter);
            if (side == 2 && !chapter_keys) fprintf(f, "%s-%d\n", first->es->key, last->es->verse);
            if (side == 2) continue;
            for (const mt_pair *p = first; p <= last; p++) {
                if (p > first) fputc(' ', f);
                fputs(side_text(p, side), f);
            }
            fputc('\n', f);
        }
    }
}

int mt_bible_write(const mt_bible_corpus *c, const char *dir)
{
    if (make_dirs(dir) < 0) return -1;
    out_set set = {0};
    for (int s = 0; s < MT_SPLIT_COUNT; s++) write_verses(&set, dir, c, (mt_split)s);
    write_spans(&set, dir, c, MT_SPLIT_VALID, "para8", c->para[MT_SPLIT_VALID], c->n_para[MT_SPLIT_VALID], 0);
    write_spans(&set, dir, c, MT_SPLIT_TEST, "para8", c->para[MT_SPLIT_TEST], c->n_para[MT_SPLIT_TEST], 0);
    write_spans(&set, dir, c, MT_SPLIT_TEST, "chapter", c->chapters[MT_SPLIT_TEST], c->n_chapters[MT_SPLIT_TEST], 1);
    return finish(&set);
}
