/* Named-entity recall by training-frequency bin (mtlab/entities.h), as scripts/ar.py and
 * notebooks/ar.ipynb of the paper compute it:
 *
 *   recall(e)   = hits(e) / occurrences(e)      over the test sentences whose copyable
 *                                              entities include e (once per sentence)
 *   bin(e)      = digitize(train_count(e), [0, 1, 16])  -> unseen, regular, frequent
 *   recall(bin) = mean over the distinct e in the bin of recall(e)   (unweighted) */
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
    free(ts->names);
    free(ts->train_count);
    free(ts->first);
    free(ts->ids);
    memset(ts, 0, sizeof *ts);
}

int mt_ne_testset_build(mt_ne_testset *ts, const char *const *src, const char *const *ref,
                        size_t n, mt_ner_lang lang, const mt_corpus_stats *stats)
{
    memset(ts, 0, sizeof *ts);
    ts->n_sentences = n;
    ts->first = mt_xcalloc(n + 1, sizeof *ts->first);
    strmap id_of = {0};
    size_t ids_cap = 0, names_cap = 0;
    for (size_t i = 0; i < n; i++) {
        mt_entity_set set;
        if (mt_entities_copyable(&set, src[i], ref[i], lang) < 0) {
            mt_error_context("segment %zu", i + 1);
            strmap_free(&id_of);
            mt_ne_testset_free(ts);
            return -1;
        }
        for (size_t k = 0; k < set.n; k++) {
            int inserted;
            size_t *id = strmap_put(&id_of, set.names[k], strlen(set.names[k]), ts->n_names, &inserted);
            if (inserted) {
                if (ts->n_names == names_cap) {
                    names_cap = names_cap ? 2 * names_cap : 64;
                    ts->names = mt_xrealloc(ts->names, names_cap * sizeof *ts->names);
                    ts->train_count = mt_xrealloc(ts->train_count, names_cap * sizeof *ts->train_count);
                }
                ts->train_count[ts->n_names] =
                    stats ? mt_corpus_stats_count(stats, set.names[k], strlen(set.names[k])) : 0;
                ts->names[ts->n_names++] = set.names[k];
                set.names[k] = NULL; /* moved into the test set */
            }
            if (ts->first[i + 1] + 1 > ids_cap) {
                ids_cap = ids_cap ? 2 * ids_cap : 64;
                ts->ids = mt_xrealloc(ts->ids, ids_cap * sizeof *ts->ids);
            }
            ts->ids[ts->first[i + 1]++] = *id;
        }
        mt_entity_set_free(&set);
        if (i + 2 <= n) ts->first[i + 2] = ts->first[i + 1];
    }
    strmap_free(&id_of);
    return 0;
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
            int hit = mt_text_contains(hyps[i], ts->names[id], strlen(ts->names[id]));
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
