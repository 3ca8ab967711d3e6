/* CAT-N examples, token-budget batch plans and the learning-rate schedule. */
#include "mtlab/error.h"
#include "mtlab/rng.h"
#include "mtlab/traindata.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* RNG streams of the data pipeline (other streams belong to initialisation and dropout). */
enum { STREAM_CATN = 0x10000, STREAM_SORT = 0x20000, STREAM_SHUFFLE = 0x30000 };

int mt_cat_fewest(int cat_n, int cat_min)
{
    return cat_min >= 2 && cat_min < cat_n ? cat_min : cat_n;
}

void mt_examples_build(mt_examples *e, const mt_corpus *c, int cat_n, int cat_min, double keep_p,
                       int max_len, uint64_t seed, uint64_t epoch)
{
    int parts_per = cat_n > 1 ? (cat_n < 64 ? cat_n : 64) : 1;
    int fewest = mt_cat_fewest(parts_per, cat_min);
    memset(e, 0, sizeof *e);
    e->n = c->n;
    e->parts = mt_xmalloc(c->n * (size_t)parts_per * sizeof *e->parts);
    e->start = mt_xmalloc(c->n * sizeof *e->start);
    e->n_parts = mt_xmalloc(c->n * sizeof *e->n_parts);
    e->src_len = mt_xmalloc(c->n * sizeof *e->src_len);
    e->tgt_len = mt_xmalloc(c->n * sizeof *e->tgt_len);
    mt_rng rng;
    mt_rng_init(&rng, seed, STREAM_CATN + epoch);
    size_t used = 0;
    for (size_t i = 0; i < c->n; i++) {
        e->start[i] = used;
        e->parts[used] = (uint32_t)i;
        int k = 1, sl = c->src_len[i], tl = c->tgt_len[i];
        /* cat_n <= 1 draws nothing, so plain epochs do not depend on the RNG at all. */
        if (parts_per > 1 && mt_rng_uniform_double(&rng) >= keep_p) {
            uint32_t partner[64];
            /* a range draws the join's size; exactly cat_n draws nothing more */
            int size = parts_per;
            if (fewest < parts_per)
                size = fewest + (int)mt_rng_below(&rng, (uint64_t)(parts_per - fewest + 1));
            int want = size - 1;
            int s2 = sl, t2 = tl;
            for (int j = 0; j < want; j++) {
                partner[j] = (uint32_t)mt_rng_below(&rng, c->n);
                s2 += c->src_len[partner[j]];
                t2 += c->tgt_len[partner[j]];
            }
            if (max_len <= 0 || (s2 <= max_len && t2 <= max_len)) {
                for (int j = 0; j < want; j++) e->parts[used + 1 + j] = partner[j];
                k += want;
                sl = s2;
                tl = t2;
            }
        }
        e->n_parts[i] = k;
        e->src_len[i] = sl;
        e->tgt_len[i] = tl;
        used += (size_t)k;
    }
}

void mt_examples_free(mt_examples *e)
{
    free(e->parts);
    free(e->start);
    free(e->n_parts);
    free(e->src_len);
    free(e->tgt_len);
    memset(e, 0, sizeof *e);
}

typedef struct {
    int len;
    uint32_t key; /* random tie-breaker, so equal lengths are not batched in corpus order */
    uint32_t idx;
} sort_item;

static int by_len_then_key(const void *pa, const void *pb)
{
    const sort_item *a = pa, *b = pb;
    if (a->len != b->len) return a->len < b->len ? -1 : 1;
    if (a->key != b->key) return a->key < b->key ? -1 : 1;
    return a->idx < b->idx ? -1 : a->idx > b->idx;
}

size_t mt_batch_budget(size_t max_tokens, int encdec)
{
    return encdec ? max_tokens : 2 * max_tokens;
}

void mt_batch_plan_build(mt_batch_plan *p, const int *len, size_t n, size_t max_tokens,
                         uint64_t seed, uint64_t epoch)
{
    memset(p, 0, sizeof *p);
    sort_item *items = mt_xmalloc(n * sizeof *items);
    mt_rng rng;
    mt_rng_init(&rng, seed, STREAM_SORT + epoch);
    for (size_t i = 0; i < n; i++) items[i] = (sort_item){len[i], mt_rng_u32(&rng), (uint32_t)i};
    qsort(items, n, sizeof *items, by_len_then_key);

    /* Greedy cut in sorted order: a batch grows while rows * longest stays within budget. */
    size_t *bstart = mt_xmalloc((n + 1) * sizeof *bstart);
    int *brows = mt_xmalloc((n + 1) * sizeof *brows);
    int *blong = mt_xmalloc((n + 1) * sizeof *blong);
    size_t nb = 0, i = 0;
    while (i < n) {
        size_t j = i;
        int longest = 0;
        while (j < n) {
            int l = items[j].len > longest ? items[j].len : longest;
            if (j > i && (size_t)l * (j - i + 1) > max_tokens) break;
            longest = l;
            j++;
        }
        bstart[nb] = i;
        brows[nb] = (int)(j - i);
        blong[nb] = longest;
        nb++;
        i = j;
    }

    /* Shuffle the batch order (Fisher-Yates), then lay the examples out in that order. */
    size_t *perm = mt_xmalloc((nb ? nb : 1) * sizeof *perm);
    for (size_t b = 0; b < nb; b++) perm[b] = b;
    mt_rng_init(&rng, seed, STREAM_SHUFFLE + epoch);
    for (size_t b = nb; b > 1; b--) {
        size_t r = (size_t)mt_rng_below(&rng, b);
        size_t t = perm[b - 1];
        perm[b - 1] = perm[r];
        perm[r] = t;
    }
    p->n_batches = nb;
    p->order = mt_xmalloc((n ? n : 1) * sizeof *p->order);
    p->start = mt_xmalloc((nb ? nb : 1) * sizeof *p->start);
    p->rows = mt_xmalloc((nb ? nb : 1) * sizeof *p->rows);
    p->longest = mt_xmalloc((nb ? nb : 1) * sizeof *p->longest);
    size_t at = 0;
    for (size_t b = 0; b < nb; b++) {
        size_t src = perm[b];
        p->start[b] = at;
        p->rows[b] = brows[src];
        p->longest[b] = blong[src];
        for (int r = 0; r < brows[src]; r++) p->order[at++] = items[bstart[src] + (size_t)r].idx;
    }
    free(perm);
    free(bstart);
    free(brows);
    free(blong);
    free(items);
}

void mt_batch_plan_free(mt_batch_plan *p)
{
    free(p->order);
    free(p->start);
    free(p->rows);
    free(p->longest);
    memset(p, 0, sizeof *p);
}

/* warmup > 0:  lr = base * min(step / warmup, sqrt(warmup / step))
 * warmup == 0: lr = base / sqrt((step + T) / T), T = 10000 (HF inverse-sqrt "timescale") */
double mt_lr_inverse_sqrt(double base, long step, long warmup)
{
    if (step < 1) step = 1;
    if (warmup > 0) {
        if (step < warmup) return base * (double)step / (double)warmup;
        return base * sqrt((double)warmup / (double)step);
    }
    const double timescale = 10000.0;
    return base / sqrt(((double)step + timescale) / timescale);
}
