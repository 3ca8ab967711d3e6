/* Named-entity recall by training-frequency bin (mtlab/entities.h), as scripts/ar.py and
 * notebooks/ar.ipynb of the paper compute it:
 *
 *   recall(e)   = hits(e) / occurrences(e)      over the test sentences whose copyable
 *                                              entities include e (once per sentence)
 *   bin(e)      = digitize(train_count(e), [0, 1, 16])  -> unseen, regular, frequent
 *   recall(bin) = mean over the distinct e in the bin of recall(e)   (unweighted) */
#include "eval/entities_words.h"
#include "mtlab/entities.h"
#include "mtlab/error.h"

#include "data/strmap.h"

#include <stdlib.h>
#include <string.h>

int mt_ne_bin(size_t train_count)
{
    if (train_count == 0) return MT_NE_UNSEEN;
    return train_count < MT_NE_FREQUENT_MIN ? MT_NE_REGULAR : MT_NE_FREQUENT;
}

const char *mt_ne_bin_name(int bin)
{
    static const char *const names[MT_NE_BINS] = {"unseen", "regular", "frequent"};
    return bin >= 0 && bin < MT_NE_BINS ? names[bin] : "?";
}

void mt_ne_testset_free(mt_ne_testset *ts)
{
    for (size_t i = 0; i < ts->n_names; i++) free(ts->names[i]);
    if (ts->copy_as)
        for (size_t k = 0; k < ts->first[ts->n_sentences]; k++) free(ts->copy_as[k]);
    free(ts->names);
    free(ts->train_count);
    free(ts->first);
    free(ts->ids);
    free(ts->copy_as);
    memset(ts, 0, sizeof *ts);
}

/* One kept entity of a sentence. */
typedef struct {
    char *name;
    char *copy_as; /* the source name whose copy also hits, NULL: the entity itself */
    size_t count; /* its training count */
} kept_entity;

typedef struct {
    kept_entity *e; /* (n) */
    size_t n;
} kept_list;

static void kept_push(kept_list *k, const char *name, size_t len, const char *copy_as, size_t count)
{
    k->e = mt_xrealloc(k->e, (k->n + 1) * sizeof *k->e);
    char *copy = mt_xmalloc(len + 1);
    memcpy(copy, name, len);
    copy[len] = '\0';
    k->e[k->n++] = (kept_entity){copy, copy_as ? mt_xstrdup(copy_as) : NULL, count};
}

static void kept_free(kept_list *k)
{
    for (size_t i = 0; i < k->n; i++) {
        free(k->e[i].name);
        free(k->e[i].copy_as);
    }
    free(k->e);
    memset(k, 0, sizeof *k);
}

/* The paper's kept entities: copyable ones (§5.1). */
static int kept_copyable(kept_list *out, const char *src, const char *ref, mt_ner_lang lang,
                         const mt_corpus_stats *stats)
{
    mt_entity_set set;
    if (mt_entities_copyable(&set, src, ref, lang) < 0) return -1;
    for (size_t k = 0; k < set.n; k++) {
        size_t len = strlen(set.names[k]);
        kept_push(out, set.names[k], len, NULL,
                  stats ? mt_corpus_stats_count(stats, set.names[k], len) : 0);
    }
    mt_entity_set_free(&set);
    return 0;
}

/* A source sentence and the spans of its name words. */
typedef struct {
    const char *text;
    const mt_text_span *spans;
    size_t n;
} source_names;

/* The first source name (copied into buf) with lexicon form name[0..len), or NULL; *pairs
 * set. */
static const char *translated_from(char *buf, size_t cap, const source_names *src,
                                   const mt_entity_lexicon *lex, const char *name, size_t len,
                                   size_t *pairs)
{
    for (size_t i = 0; i < src->n; i++) {
        const char *s = src->text + src->spans[i].start;
        size_t slen = src->spans[i].end - src->spans[i].start;
        const char *const *forms;
        const size_t *form_pairs;
        size_t nf = mt_entity_lexicon_forms(lex, s, slen, &forms, NULL, &form_pairs);
        for (size_t k = 0; k < nf; k++) {
            if (strlen(forms[k]) != len || memcmp(forms[k], name, len) != 0 || slen + 1 > cap)
                continue;
            memcpy(buf, s, slen);
            buf[slen] = '\0';
            *pairs = form_pairs[k];
            return buf;
        }
    }
    return NULL;
}

/* The translated-aware kept entities: copyable, or a lexicon form of a source name. */
static int kept_translated(kept_list *out, const char *src, const char *ref, mt_ner_lang lang,
                           const mt_corpus_stats *stats, const mt_entity_lexicon *lex)
{
    mt_text_span *ents, *names;
    size_t n_ents, n_names;
    if (mt_entities_find(&ents, &n_ents, ref, lang) < 0) return mt_error_context("reference");
    if (entity_source_name_words(&names, &n_names, src, lex) < 0) {
        free(ents);
        return mt_error_context("source");
    }
    source_names sn = {src, names, n_names};
    strmap seen = {0};
    for (size_t i = 0; i < n_ents; i++) {
        const char *e = ref + ents[i].start;
        size_t len = ents[i].end - ents[i].start;
        int inserted;
        strmap_put(&seen, e, len, 0, &inserted);
        if (!inserted) continue;
        size_t count = stats ? mt_corpus_stats_count(stats, e, len) : 0, pairs = 0;
        char from[256];
        if (mt_text_contains(src, e, len)) kept_push(out, e, len, NULL, count);
        else if (translated_from(from, sizeof from, &sn, lex, e, len, &pairs))
            kept_push(out, e, len, from, pairs > count ? pairs : count);
    }
    strmap_free(&seen);
    free(ents);
    free(names);
    return 0;
}

static int testset_build(mt_ne_testset *ts, const char *const *src, const char *const *ref,
                         size_t n, mt_ner_lang lang, const mt_corpus_stats *stats,
                         const mt_entity_lexicon *lex)
{
    memset(ts, 0, sizeof *ts);
    ts->n_sentences = n;
    ts->first = mt_xcalloc(n + 1, sizeof *ts->first);
    strmap id_of = {0};
    size_t ids_cap = 0, names_cap = 0;
    for (size_t i = 0; i < n; i++) {
        kept_list kept = {0};
        int rc = lex ? kept_translated(&kept, src[i], ref[i], lang, stats, lex)
                     : kept_copyable(&kept, src[i], ref[i], lang, stats);
        if (rc < 0) {
            mt_error_context("segment %zu", i + 1);
            kept_free(&kept);
            strmap_free(&id_of);
            ts->first[n] = ts->first[i]; /* what the free below releases */
            mt_ne_testset_free(ts);
            return -1;
        }
        for (size_t k = 0; k < kept.n; k++) {
            kept_entity *e = &kept.e[k];
            int inserted;
            size_t *id = strmap_put(&id_of, e->name, strlen(e->name), ts->n_names, &inserted);
            if (inserted) {
                if (ts->n_names == names_cap) {
                    names_cap = names_cap ? 2 * names_cap : 64;
                    ts->names = mt_xrealloc(ts->names, names_cap * sizeof *ts->names);
                    ts->train_count =
                        mt_xrealloc(ts->train_count, names_cap * sizeof *ts->train_count);
                }
                ts->train_count[ts->n_names] = 0;
                ts->names[ts->n_names++] = e->name;
                e->name = NULL; /* moved into the test set */
            }
            if (e->count > ts->train_count[*id]) ts->train_count[*id] = e->count;
            if (ts->first[i + 1] + 1 > ids_cap) {
                ids_cap = ids_cap ? 2 * ids_cap : 64;
                ts->ids = mt_xrealloc(ts->ids, ids_cap * sizeof *ts->ids);
                if (lex) ts->copy_as = mt_xrealloc(ts->copy_as, ids_cap * sizeof *ts->copy_as);
            }
            if (lex) {
                ts->copy_as[ts->first[i + 1]] = e->copy_as;
                e->copy_as = NULL;
            }
            ts->ids[ts->first[i + 1]++] = *id;
        }
        kept_free(&kept);
        if (i + 2 <= n) ts->first[i + 2] = ts->first[i + 1];
    }
    strmap_free(&id_of);
    return 0;
}

int mt_ne_testset_build(mt_ne_testset *ts, const char *const *src, const char *const *ref, size_t n,
                        mt_ner_lang lang, const mt_corpus_stats *stats)
{
    return testset_build(ts, src, ref, n, lang, stats, NULL);
}

int mt_ne_testset_build_translated(mt_ne_testset *ts, const char *const *src,
                                   const char *const *ref, size_t n, mt_ner_lang lang,
                                   const mt_corpus_stats *stats, const mt_entity_lexicon *lex)
{
    return testset_build(ts, src, ref, n, lang, stats, lex);
}

void mt_ne_recall_score(mt_ne_recall *out, const mt_ne_testset *ts, const char *const *hyps,
                        unsigned char *hit_of)
{
    memset(out, 0, sizeof *out);
    size_t *occ = mt_xcalloc(ts->n_names + 1, sizeof *occ);
    size_t *hits = mt_xcalloc(ts->n_names + 1, sizeof *hits);
    for (size_t i = 0; i < ts->n_sentences; i++) {
        for (size_t k = ts->first[i]; k < ts->first[i + 1]; k++) {
            size_t id = ts->ids[k];
            const char *also = ts->copy_as ? ts->copy_as[k] : NULL;
            int hit = mt_text_contains(hyps[i], ts->names[id], strlen(ts->names[id])) ||
                      (also && mt_text_contains(hyps[i], also, strlen(also)));
            occ[id]++;
            hits[id] += (size_t)hit;
            if (hit_of) hit_of[k] = (unsigned char)hit;
        }
    }
    double sum[MT_NE_BINS] = {0}, sum_all = 0;
    for (size_t id = 0; id < ts->n_names; id++) {
        int bin = mt_ne_bin(ts->train_count[id]);
        double r = (double)hits[id] / (double)occ[id];
        sum[bin] += r;
        sum_all += r;
        out->entities[bin]++;
        out->occurrences[bin] += occ[id];
        out->hits[bin] += hits[id];
    }
    for (int b = 0; b < MT_NE_BINS; b++) {
        out->recall[b] = out->entities[b] ? sum[b] / (double)out->entities[b] : 0.0;
        out->entities_all += out->entities[b];
        out->occurrences_all += out->occurrences[b];
        out->hits_all += out->hits[b];
    }
    out->recall_all = out->entities_all ? sum_all / (double)out->entities_all : 0.0;
    free(occ);
    free(hits);
}
