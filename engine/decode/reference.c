/* Naive references for the searches: one sentence, no decoding state, every step recomputes
 * the full forward pass (mt_model_forward) over prompt + tokens so far and reads the last
 * position's logits. Beam search keeps every finished hypothesis in a plain list and ranks
 * candidates with qsort, a deliberately different bookkeeping from beam.c's, with the same
 * semantics (decode.h). Tests hold greedy.c and beam.c to these. */
#include "decode/search.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mtlab/error.h"

/* Rows of one sentence's full sequences: decoder-only `src <sep> gen`, encoder-decoder
 * `<start> gen` with the source `src <eos>` repeated on every row. */
typedef struct {
    mt_model *m;
    int encdec, prompt, V;
    int32_t *srcrow; /* (S) encoder-decoder source */
    int S;
    int32_t *seq; /* (rows, cap) each row's prompt + generated ids */
    int cap;
    float *logits; /* (rows, T, V) */
} naive_seqs;

static void seqs_init(naive_seqs *q, mt_model *m, const int32_t *src, int src_len, int rows,
                      int max_new)
{
    const mt_model_config *cfg = mt_model_get_config(m);
    memset(q, 0, sizeof *q);
    q->m = m;
    q->encdec = mt_model_is_encdec(m);
    q->V = cfg->vocab_size;
    int sep = mt_model_config_prompt_sep(cfg);
    q->prompt = q->encdec ? 1 : src_len + (sep >= 0);
    q->cap = q->prompt + max_new;
    q->seq = mt_xmalloc((size_t)rows * q->cap * sizeof *q->seq);
    q->logits = mt_xmalloc((size_t)rows * q->cap * q->V * sizeof *q->logits);
    int32_t *row = q->seq;
    if (q->encdec) {
        q->S = src_len + 1;
        q->srcrow = mt_xmalloc((size_t)rows * q->S * sizeof *q->srcrow);
        for (int r = 0; r < rows; r++) {
            if (src_len) memcpy(q->srcrow + (size_t)r * q->S, src, (size_t)src_len * sizeof *src);
            q->srcrow[(size_t)r * q->S + src_len] = cfg->eos_id;
        }
        row[0] = cfg->decoder_start_id;
    } else {
        if (src_len) memcpy(row, src, (size_t)src_len * sizeof *src);
        if (sep >= 0) row[src_len] = sep;
    }
}

static void seqs_free(naive_seqs *q)
{
    free(q->seq);
    free(q->srcrow);
    free(q->logits);
}

/* Forward rows sequences of prompt + len ids; returns the last position's logits of row r at
 * q->logits + r * V afterwards (compacted). */
static int seqs_forward(naive_seqs *q, int rows, int len)
{
    int T = q->prompt + len, V = q->V;
    int32_t *ids = mt_xmalloc((size_t)rows * T * sizeof *ids);
    for (int r = 0; r < rows; r++)
        memcpy(ids + (size_t)r * T, q->seq + (size_t)r * q->cap, (size_t)T * sizeof *ids);
    mt_batch b = {.B = rows, .T = T, .ids = ids, .S = q->S, .src = q->srcrow};
    int rc = mt_model_forward(q->m, &b, q->logits);
    free(ids);
    if (rc) return -1;
    for (int r = 0; r < rows; r++)
        memmove(q->logits + (size_t)r * V, q->logits + ((size_t)r * T + T - 1) * V,
                (size_t)V * sizeof(float));
    return 0;
}

int mt_decode_greedy_naive(mt_model *m, const int32_t *src, int src_len, int max_new,
                           float length_penalty, mt_hypothesis *out)
{
    memset(out, 0, sizeof *out);
    if (max_new < 1) return mt_error("greedy: max new tokens %d must be positive", max_new);
    int eos = mt_model_get_config(m)->eos_id;
    int pad = mt_model_config_never_generated(mt_model_get_config(m));
    naive_seqs q;
    seqs_init(&q, m, src, src_len, 1, max_new);
    int32_t *gen = q.seq + q.prompt;
    int n = 0, finished = 0, rc = 0;
    double logprob = 0.0;
    while (n < max_new) {
        if (seqs_forward(&q, 1, n)) {
            rc = -1;
            break;
        }
        const float *x = q.logits;
        int32_t tok = naive_argmax(x, q.V, pad);
        logprob += (double)x[tok] - naive_logsumexp(x, q.V, pad);
        if (tok == eos) {
            finished = 1;
            break;
        }
        gen[n++] = tok;
    }
    if (rc == 0) mt_hypothesis_set(out, gen, n, logprob, finished, length_penalty, 0.0);
    seqs_free(&q);
    return rc;
}

/* ---------------------------------------------------------------- beam search */

typedef struct {
    double score;
    long index; /* beam * V + token */
} naive_cand;

/* best score first, then the lower index */
static int cand_order(const void *pa, const void *pb)
{
    const naive_cand *a = pa, *b = pb;
    if (a->score != b->score) return a->score > b->score ? -1 : 1;
    return (a->index > b->index) - (a->index < b->index);
}

typedef struct {
    mt_hypothesis *h;
    int n, cap;
} hyp_list;

static void list_add(hyp_list *l, const int32_t *ids, int n_ids, double logprob, int finished,
                     float lp)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 16;
        l->h = mt_xrealloc(l->h, (size_t)l->cap * sizeof *l->h);
    }
    memset(&l->h[l->n], 0, sizeof l->h[l->n]);
    mt_hypothesis_set(&l->h[l->n++], ids, n_ids, logprob, finished, lp, 0.0);
}

/* The K-th best score of the list, or NAN with fewer than K entries. */
static double kth_best(const hyp_list *l, int K)
{
    if (l->n < K) return NAN;
    double *s = mt_xmalloc((size_t)l->n * sizeof *s);
    for (int i = 0; i < l->n; i++) s[i] = -l->h[i].score;
    /* partial selection by sorting a copy: fine for a reference */
    for (int i = 0; i < K; i++)
        for (int j = i + 1; j < l->n; j++)
            if (s[j] < s[i]) {
                double t = s[i];
                s[i] = s[j];
                s[j] = t;
            }
    double kth = -s[K - 1];
    free(s);
    return kth;
}

int mt_decode_beam_naive(mt_model *m, const int32_t *src, int src_len, int max_new, int beam,
                         float length_penalty, mt_hypothesis *out)
{
    memset(out, 0, sizeof *out);
    int K = beam, eos = mt_model_get_config(m)->eos_id;
    int pad = mt_model_config_never_generated(mt_model_get_config(m));
    if (max_new < 1 || K < 1)
        return mt_error("beam: max new %d and beam %d must be positive", max_new, K);
    naive_seqs q;
    seqs_init(&q, m, src, src_len, K, max_new);
    int V = q.V, cap = q.cap, P = q.prompt;
    int32_t *next = mt_xmalloc((size_t)K * cap * sizeof *next);
    double *lp = mt_xcalloc((size_t)K, sizeof *lp), *next_lp = mt_xcalloc((size_t)K, sizeof *lp);
    naive_cand *cands = mt_xmalloc((size_t)K * V * sizeof *cands);
    hyp_list done = {0};
    int live = 1, len = 0, rc = 0;
    for (;;) {
        if (seqs_forward(&q, live, len)) {
            rc = -1;
            break;
        }
        int nc = 0;
        for (int b = 0; b < live; b++) {
            const float *x = q.logits + (size_t)b * V;
            double lse = naive_logsumexp(x, V, pad);
            for (int v = 0; v < V; v++)
                if (v != pad)
                    cands[nc++] = (naive_cand){lp[b] + (double)x[v] - lse, (long)b * V + v};
        }
        qsort(cands, (size_t)nc, sizeof *cands, cand_order);
        int n_beams = 0;
        for (int rank = 0; rank < 2 * K && rank < nc && n_beams < K; rank++) {
            int b = (int)(cands[rank].index / V);
            int32_t v = (int32_t)(cands[rank].index % V);
            const int32_t *row = q.seq + (size_t)b * cap;
            if (v == eos) {
                if (rank < K) list_add(&done, row + P, len, cands[rank].score, 1, length_penalty);
                continue;
            }
            int32_t *dst = next + (size_t)n_beams * cap;
            memcpy(dst, row, (size_t)(P + len) * sizeof *dst);
            dst[P + len] = v;
            next_lp[n_beams++] = cands[rank].score;
        }
        double worst = kth_best(&done, K);
        if (done.n >= K && worst >= mt_decode_score(cands[0].score, len + 1, length_penalty)) break;
        memcpy(q.seq, next, (size_t)n_beams * cap * sizeof *next);
        memcpy(lp, next_lp, (size_t)n_beams * sizeof *lp);
        live = n_beams;
        len++;
        if (len == max_new) {
            for (int b = 0; b < live; b++)
                list_add(&done, q.seq + (size_t)b * cap + P, len, lp[b], 0, length_penalty);
            break;
        }
    }
    if (rc == 0) {
        /* stable: the first added among equal scores wins */
        int best = 0;
        for (int i = 1; i < done.n; i++)
            if (done.h[i].score > done.h[best].score) best = i;
        *out = done.h[best];
        memset(&done.h[best], 0, sizeof done.h[best]);
    }
    for (int i = 0; i < done.n; i++) mt_hypothesis_clear(&done.h[i]);
    free(done.h);
    free(next);
    free(lp);
    free(next_lp);
    free(cands);
    seqs_free(&q);
    return rc;
}
