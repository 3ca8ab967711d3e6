/* Writing the corpus files. All of them go to temporary names first and are renamed into
 * place only when every one was written, so a failed run leaves the previous corpus intact. */
#include "data/manifest.h"
#include "data/out_files.h"
#include "mtlab/bible.h"
#include "mtlab/error.h"
#include "mtlab/rng.h"

#include <stdlib.h>
#include <string.h>

static const char *side_text(const mt_pair *p, int english)
{
    return english ? p->en->text : p->es->text;
}

/* {split}.{es,en,keys}: one verse per line. */
static void write_verses(out_set *set, const char *dir, const mt_bible_corpus *c, mt_split split)
{
    static const char *const ext[3] = {"es", "en", "keys"};
    for (int side = 0; side < 3; side++) {
        char name[64];
        snprintf(name, sizeof name, "%s.%s", mt_split_name(split), ext[side]);
        FILE *f = out_open(set, dir, name);
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
static void write_spans(out_set *set, const char *dir, const mt_bible_corpus *c, mt_split split,
                        const char *kind, const mt_span *spans, size_t n, int chapter_keys)
{
    static const char *const ext[3] = {"es", "en", "keys"};
    for (int side = 0; side < 3; side++) {
        char name[64];
        snprintf(name, sizeof name, "%s.%s.%s", mt_split_name(split), kind, ext[side]);
        FILE *f = out_open(set, dir, name);
        if (!f) return;
        for (size_t i = 0; i < n; i++) {
            const mt_pair *first = &c->pairs[spans[i].first], *last = first + spans[i].count - 1;
            if (side == 2 && chapter_keys)
                fprintf(f, "%s %d\n", first->es->book, first->es->chapter);
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
        int r = mt_names_substitute(&es, &en, out->to + n_names, p->es->text, p->en->text, &shared,
                                    &(mt_name_draw){g, 1.0, &rng});
        if (r != (int)shared.n) { /* p = 1 replaces every name unless the gazetteer runs short */
            if (r >= 0) {
                free(es);
                free(en);
                mt_error("the gazetteer has too few names (%zu) for the %zu names of one verse",
                         g->n, shared.n);
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
        FILE *f = out_open(set, dir, name);
        if (!f) return;
        if (side == 3) fprintf(f, "%s\n# segments=%zu\n", MT_NAMES_MAGIC, names->n);
        for (size_t i = 0; i < names->n; i++) {
            if (side == 3)
                for (size_t k = names->first[i]; k < names->first[i + 1]; k++)
                    fprintf(f, "%zu\t%s\t%s\n", i + 1, names->to[k], names->from[k]);
            else
                fprintf(f, "%s\n",
                        side == 0   ? names->es[i]
                        : side == 1 ? names->en[i]
                                    : names->pairs[i]->es->key);
        }
    }
}

int mt_bible_write(const mt_bible_corpus *c, const mt_bible_names *names, const char *dir)
{
    if (out_dir_make(dir) < 0) return -1;
    out_set set = {0};
    for (int s = 0; s < MT_SPLIT_COUNT; s++) write_verses(&set, dir, c, (mt_split)s);
    write_spans(&set, dir, c, MT_SPLIT_VALID, "para8", c->para[MT_SPLIT_VALID],
                c->n_para[MT_SPLIT_VALID], 0);
    write_spans(&set, dir, c, MT_SPLIT_TEST, "para8", c->para[MT_SPLIT_TEST],
                c->n_para[MT_SPLIT_TEST], 0);
    write_spans(&set, dir, c, MT_SPLIT_TEST, "chapter", c->chapters[MT_SPLIT_TEST],
                c->n_chapters[MT_SPLIT_TEST], 1);
    if (names) write_names(&set, dir, names);
    /* the same manifest as an imported dataset's (mtlab/dataset.h): the languages, what was
     * joined and dropped; the files' sizes and hashes are added by manifest_write */
    json_t *info = json_pack(
        "{s:[{s:s,s:s},{s:s,s:s}], s:{s:I, s:I, s:I, s:I, s:I}, s:s}", "sources", "module",
        "spaRV1909eb", "lang", "es", "module", "engWEB2015eb", "lang", "en", "filters",
        "common_keys", (json_int_t)c->n_common, "excluded", (json_int_t)c->n_excluded, "es_only",
        (json_int_t)c->n_es_only, "en_only", (json_int_t)c->n_en_only, "kept",
        (json_int_t)c->n_pairs, "split", "whole books (docs/data.md §4)");
    int rc = -1;
    if (set.failed) json_decref(info);
    else rc = manifest_write(&set, dir, "es", "en", info);
    return out_commit(&set) < 0 || rc < 0 ? -1 : 0;
}
