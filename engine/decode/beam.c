/* Batched beam search (decode.h gives the semantics). The state holds K rows per live
 * sentence, beam-major within the sentence. After the prefill each sentence has one row; the
 * first reorder copies it into its K beams (as Hugging Face expands the prompt), and every
 * later reorder moves each surviving beam's caches (attention keys/values, Mamba conv and ssm
 * states) to the row of the beam that continues it, dropping finished sentences.
 * The naive reference is mt_decode_beam_naive (reference.c). */
#include "decode/search.h"
#include "backend/cpu/cpu_par.h"
#include "backend/cpu/cpu_pool.h"

#include <stdlib.h>
#include <string.h>

#include "mtlab/clock.h"
#include "mtlab/error.h"

typedef struct {
    int32_t *tokens; /* (K, max_new) the running beams' ids */
    int32_t *scratch; /* (K, max_new) */
    double *logprob; /* (K) the running beams' summed log-probabilities */
    int len; /* ids each running beam holds */
    mt_beam_hyps hyps;
} beam_sentence;

static void finalize(mt_decode_ctx *c, beam_sentence *bs, int s, int add_running)
{
    float lp = c->o->length_penalty;
    int K = c->K, stride = c->max_new[s];
    /* at the length limit generate() forces <eos> with log p 0 (decode.h); a cancel does not */
    int forced_eos = c->forced_eos && !c->res->cancelled;
    if (add_running)
        for (int b = 0; b < K; b++)
            mt_beam_hyps_add(&bs->hyps, bs->tokens + (size_t)b * stride, bs->len, bs->logprob[b],
                             forced_eos, lp);
    const mt_hypothesis *best = &bs->hyps.h[mt_beam_hyps_best(&bs->hyps)];
    mt_hypothesis_set(&c->res->hyps[s], best->ids, best->n_ids, best->logprob, best->finished, lp,
                      mt_now_s() - c->t0);
    mt_decode_emit(c, s, best->ids, best->n_ids, 1);
}

/* The 2K best (beam, token) continuations of one sentence whose beams sit in rows
 * row0 .. row0 + live - 1 of the logits. */
static int candidates(const mt_decode_ctx *c, const beam_sentence *bs, int row0, int live,
                      mt_scored *top)
{
    int V = c->V, n_top = 0, pad = mt_model_config_never_generated(mt_model_get_config(c->m));
    for (int b = 0; b < live; b++) {
        const float *x = c->logits + (size_t)(row0 + b) * V;
        /* generate() masks <pad> after the log-softmax over every id, mtlab before it and
         * over the ids it may generate (decode.h) */
        double lse = c->hf ? mt_logsumexp(x, c->V, -1) : mt_logsumexp(x, c->n_gen, pad);
        /* score of beam b extended by v = its log-probability + log p(v) */
        for (int v = 0; v < c->n_gen; v++) {
            if (v == pad) continue;
            mt_topk_push(top, &n_top, 2 * c->K, bs->logprob[b] + ((double)x[v] - lse),
                         (long)b * V + v);
        }
    }
    return n_top;
}

/* The beams a sentence's step chooses, K each: new beam b continues old beam src[b] with
 * token tok[b], its score logprob[b]. */
typedef struct {
    int32_t *src, *tok;
    double *logprob;
} beam_next;

/* The candidates of every live sentence act[0..n_act) (live rows each), sentence a's n_top[a]
 * of them at top + 2Ka: the sentences shared among the CPU's threads when there is enough to
 * share (each reads its own rows and beams and writes its own list) */
typedef struct {
    const mt_decode_ctx *c;
    const beam_sentence *sent;
    const int *act;
    int live;
    mt_scored *top;
    int *n_top;
} candidates_job;

/* Part a: sentence act[a]'s candidates */
static void sentence_candidates(void *ctx, int a)
{
    const candidates_job *j = ctx;
    size_t per = 2 * (size_t)j->c->K;
    j->n_top[a] =
        candidates(j->c, &j->sent[j->act[a]], a * j->live, j->live, j->top + (size_t)a * per);
}

static void all_candidates(const mt_decode_ctx *c, const beam_sentence *sent, const int *act,
                           int n_act, int live, mt_scored *top, int *n_top)
{
    candidates_job j = {.c = c, .sent = sent, .act = act, .live = live, .top = top, .n_top = n_top};
    int share = cpu_fork((size_t)n_act * live * c->V, MT_DECODE_PARALLEL_LOGITS);
    cpu_pool_run_if(share, n_act, sentence_candidates, &j);
}

/* Process one sentence's step: finished candidates go to its hypotheses, the K best others
 * become its beams (next). top: its n_top candidates, best first (candidates).
 * Returns 1 when the sentence is done. */
static int advance(mt_decode_ctx *c, beam_sentence *bs, int s, const mt_scored *top, int n_top,
                   const beam_next *next)
{
    int32_t *src = next->src, *tok = next->tok;
    double *new_logprob = next->logprob;
    int K = c->K, V = c->V, stride = c->max_new[s];
    int eos = mt_model_get_config(c->m)->eos_id;
    float lp = c->o->length_penalty;
    int n_beams = 0;
    for (int rank = 0; rank < n_top && n_beams < K; rank++) {
        int b = (int)(top[rank].index / V);
        int32_t v = (int32_t)(top[rank].index % V);
        if (v == eos) {
            /* only an <eos> among the K best candidates ends a hypothesis */
            if (rank < K)
                mt_beam_hyps_add(&bs->hyps, bs->tokens + (size_t)b * stride, bs->len,
                                 top[rank].score, 1, lp);
            continue;
        }
        src[n_beams] = b;
        tok[n_beams] = v;
        new_logprob[n_beams] = top[rank].score;
        n_beams++;
    }
    /* the best running beam (generate()) or the best candidate of the step, which may have
     * just ended (BeamSearchScorer) */
    double best = c->hf && n_beams ? new_logprob[0] : top[0].score;
    if (mt_beam_hyps_done(&bs->hyps, best, bs->len + 1, lp)) {
        finalize(c, bs, s, 0);
        return 1;
    }
    /* new beam b = old beam src[b] + tok[b] */
    for (int b = 0; b < n_beams; b++) {
        int32_t *dst = bs->scratch + (size_t)b * stride;
        memcpy(dst, bs->tokens + (size_t)src[b] * stride, (size_t)bs->len * sizeof *dst);
        dst[bs->len] = tok[b];
        bs->logprob[b] = new_logprob[b];
    }
    int32_t *t = bs->tokens;
    bs->tokens = bs->scratch;
    bs->scratch = t;
    bs->len++;
    if (bs->len == c->max_new[s]) {
        finalize(c, bs, s, 1);
        return 1;
    }
    mt_decode_emit(c, s, bs->tokens, bs->len, 0);
    return 0;
}

int mt_decode_beam_run(mt_decode_ctx *c)
{
    int n = c->n, K = c->K;
    beam_sentence *sent = mt_xcalloc((size_t)n, sizeof *sent);
    for (int s = 0; s < n; s++) {
        size_t cap = (size_t)K * c->max_new[s];
        sent[s].tokens = mt_xmalloc(cap * sizeof(int32_t));
        sent[s].scratch = mt_xmalloc(cap * sizeof(int32_t));
        sent[s].logprob = mt_xcalloc((size_t)K, sizeof(double));
        mt_beam_hyps_init(&sent[s].hyps, K);
    }
    mt_scored *top = mt_xmalloc(2 * (size_t)K * n * sizeof *top); /* 2K per live sentence */
    int *n_top = mt_xmalloc((size_t)n * sizeof *n_top);
    int *act = mt_xmalloc((size_t)n * sizeof *act); /* live sentences, row order */
    int32_t *rows = mt_xmalloc((size_t)n * K * sizeof *rows); /* reorder: new row <- old row */
    int32_t *next = mt_xmalloc((size_t)n * K * sizeof *next); /* the new rows' inputs */
    int32_t *src = mt_xmalloc((size_t)K * sizeof *src);
    double *new_logprob = mt_xmalloc((size_t)K * sizeof *new_logprob);
    for (int s = 0; s < n; s++) act[s] = s;
    /* rows per live sentence: 1 after the prefill, K once expanded */
    int n_act = n, live = 1, rc = 0;

    for (;;) {
        int n_next = 0;
        all_candidates(c, sent, act, n_act, live, top, n_top);
        for (int a = 0; a < n_act; a++) {
            int s = act[a], row0 = a * live;
            beam_next chosen = {src, next + (size_t)n_next * K, new_logprob};
            if (advance(c, &sent[s], s, top + 2 * (size_t)K * a, n_top[a], &chosen)) continue;
            for (int b = 0; b < K; b++) rows[(size_t)n_next * K + b] = row0 + src[b];
            act[n_next++] = s; /* n_next <= a: sentences not yet read are untouched */
        }
        if (n_next == 0) break;
        if (mt_decode_cancelled(c)) {
            c->res->cancelled = 1;
            for (int a = 0; a < n_next; a++) finalize(c, &sent[act[a]], act[a], 1);
            break;
        }
        n_act = n_next;
        live = K;
        if (mt_decode_state_reorder(c->st, rows, n_act * K) ||
            mt_model_step(c->m, c->st, next, c->logits)) {
            rc = -1;
            break;
        }
        c->res->steps++;
    }
    for (int s = 0; s < n; s++) {
        free(sent[s].tokens);
        free(sent[s].scratch);
        free(sent[s].logprob);
        mt_beam_hyps_free(&sent[s].hyps);
    }
    free(sent);
    free(top);
    free(n_top);
    free(act);
    free(rows);
    free(next);
    free(src);
    free(new_logprob);
    return rc;
}
