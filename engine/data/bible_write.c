/* Writing the corpus files. All of them go to temporary names first and are renamed into
 * place only when every one was written, so a failed run leaves the previous corpus intact. */
#include "mtlab/bible.h"
#include "mtlab/error.h"
#include "mtlab/rng.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { MAX_FILES = 24 }; /* 22 written */

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

/* The fixed draws of test.names: seed 1 on a stream of its own. */
enum { NAMES_SEED = 1, NAMES_STREAM = 0x50000 };

void mt_bible_names_free(mt_bible_names *names)
{
    for (size_t i = 0; i < names->n; i++) {
        free(names->es[i]);
        free(names->en[i]);
    }
    if (names->first)
        for (size_t k = 0; k < names->first[names->n]; k++) free(names->from[k]);
    free(names->pairs);
    free(names->es);
    free(names->en);
    free(names->first);
    free(names->from);
    free(names->to);
    memset(names, 0, sizeof *names);
}

int mt_bible_names_build(mt_bible_names *out, const mt_bible_corpus *c, const mt_gazetteer *g)
{
    memset(out, 0, sizeof *out);
    size_t room = c->split_pairs[MT_SPLIT_TEST], name_room = 0, n_names = 0;
    out->pairs = mt_xmalloc((room ? room : 1) * sizeof *out->pairs);
    out->es = mt_xmalloc((room ? room : 1) * sizeof *out->es);
    out->en = mt_xmalloc((room ? room : 1) * sizeof *out->en);
    out->first = mt_xcalloc(room + 1, sizeof *out->first);
    mt_rng rng;
    mt_rng_init(&rng, NAMES_SEED, NAMES_STREAM);
    for (size_t i = 0; i < c->n_pairs; i++) {
        const mt_pair *p = &c->pairs[i];
        if (p->split != MT_SPLIT_TEST) continue;
        mt_entity_set shared;
        if (mt_names_shared(&shared, p->es->text, p->en->text, MT_NER_ENGLISH) < 0) {
            mt_bible_names_free(out);
            return mt_error_context("%s", p->es->key);
        }
        if (shared.n == 0) {
            mt_entity_set_free(&shared);
            continue;
        }
        if (n_names + shared.n > name_room) {
            name_room = (n_names + shared.n) * 2 + 64;
            out->from = mt_xrealloc(out->from, name_room * sizeof *out->from);
            out->to = mt_xrealloc(out->to, name_room * sizeof *out->to);
        }
        char *es, *en;
        int r = mt_names_substitute(&es, &en, out->to + n_names, p->es->text, p->en->text, &shared, g, 1.0, &rng);
        if (r != (int)shared.n) { /* p = 1 replaces every name unless the gazetteer runs short */
            if (r >= 0) {
                free(es);
                free(en);
                mt_error("the gazetteer has too few names (%zu) for the %zu names of one verse", g->n, shared.n);
            }
            mt_entity_set_free(&shared);
            mt_bible_names_free(out);
            return mt_error_context("%s", p->es->key);
        }
        for (size_t k = 0; k < shared.n; k++) out->from[n_names + k] = shared.names[k];
        n_names += shared.n;
        free(shared.names); /* the names themselves moved to out->from */
        out->pairs[out->n] = p;
        out->es[out->n] = es;
        out->en[out->n] = en;
        out->n++;
        out->first[out->n] = n_names;
    }
    return 0;
}

/* test.names.{es,en,keys,tsv}: the substituted verses and, per line, the names they carry. */
static void write_names(out_set *set, const char *dir, const mt_bible_names *names)
{
    static const char *const ext[4] = {"es", "en", "keys", "tsv"};
    for (int side = 0; side < 4; side++) {
        char name[64];
        snprintf(name, sizeof name, "test.names.%s", ext[side]);
        FILE *f = open_out(set, dir, name);
        if (!f) return;
        if (side == 3) fprintf(f, "%s\n# segments=%zu\n", MT_NAMES_MAGIC, names->n);
        for (size_t i = 0; i < names->n; i++) {
            if (side == 3)
                for (size_t k = names->first[i]; k < names->first[i + 1]; k++)
                    fprintf(f, "%zu\t%s\t%s\n", i + 1, names->to[k], names->from[k]);
            else
                fprintf(f, "%s\n", side == 0 ? names->es[i] : side == 1 ? names->en[i] : names->pairs[i]->es->key);
        }
    }
}

int mt_bible_write(const mt_bible_corpus *c, const mt_bible_names *names, const char *dir)
{
    if (make_dirs(dir) < 0) return -1;
    out_set set = {0};
    for (int s = 0; s < MT_SPLIT_COUNT; s++) write_verses(&set, dir, c, (mt_split)s);
    write_spans(&set, dir, c, MT_SPLIT_VALID, "para8", c->para[MT_SPLIT_VALID], c->n_para[MT_SPLIT_VALID], 0);
    write_spans(&set, dir, c, MT_SPLIT_TEST, "para8", c->para[MT_SPLIT_TEST], c->n_para[MT_SPLIT_TEST], 0);
    write_spans(&set, dir, c, MT_SPLIT_TEST, "chapter", c->chapters[MT_SPLIT_TEST], c->n_chapters[MT_SPLIT_TEST], 1);
    if (names) write_names(&set, dir, names);
    return finish(&set);
}
