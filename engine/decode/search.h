/* Decoding's inside: one decoding call's context, the scoring, streaming and finished-hypothesis
 * list the searches share (search.c, beam_hyps.c), and the two searches (greedy.c, beam.c).
 * Letters (mtlab/backend.h): n sentences, K beams, V vocabulary, rows = live rows of the
 * decoding state. */
#ifndef MTLAB_DECODE_SEARCH_H
#define MTLAB_DECODE_SEARCH_H

#include "mtlab/decode.h"

/* One mt_decode call. */
typedef struct {
    mt_model *m;
    const mt_decode_opts *o;
    int n, K, V;
    int n_gen; /* ids 0 .. n_gen-1 may be generated (<= V) */
    int *max_new; /* (n) the length limit of each sentence */
    int max_new_all; /* their maximum */
    mt_decode_state *st; /* n * K rows */
    float *logits; /* host (n * K, V): the next-token logits of the live rows (the decode
                    * state's, mt_decode_state_logits) */
    double t0; /* start time (seconds, monotonic clock) */
    int hf; /* 1: transformers' generate() semantics (decode.h, MT_SEARCH_HF) */
    int forced_eos; /* hf with a config whose forced_eos_token_id is eos: every line ends with
                     * <eos>, forced at the length limit (decode.h) */
    mt_decode_result *res;
} mt_decode_ctx;

int mt_decode_cancelled(const mt_decode_ctx *c);
/* Stream one event (no-op without a callback). */
void mt_decode_emit(const mt_decode_ctx *c, int sentence, const int32_t *tokens, int n_tokens,
                    int final);

/* log(sum_v exp(x[v])) of one logits row over v < V except v = skip (skip outside [0, V):
 * none), in double; within a few float roundings of naive_logsumexp, the plain double loop. */
double mt_logsumexp(const float *x, int V, int skip);
double naive_logsumexp(const float *x, int V, int skip);
/* The searches' work between two steps (each row's log-sum-exp and best tokens) runs on the
 * CPU's threads from this many logits on: on one thread it was a gap long enough for the other
 * threads to fall asleep before the next step's first product (docs/decoding.md §9.1). */
enum { MT_DECODE_PARALLEL_LOGITS = 1 << 16 };
/* Rows 0..rows-1 of c->logits: each one's most probable token among those generated (mt_argmax)
 * and its log-probability, the rows shared among the CPU's threads when there is enough to share
 * (a row's figures are the same whichever thread takes it). */
void mt_decode_pick_rows(const mt_decode_ctx *c, int rows, int32_t *tok, double *logprob);
/* mt_argmax's plain scan (mtlab/decode.h). */
int32_t naive_argmax(const float *x, int V, int skip);
/* logprob / gen_len ^ length_penalty; 0 for an empty generation. */
double mt_decode_score(double logprob, int gen_len, float length_penalty);
/* Fill h with a copy of ids and its scores. */
void mt_hypothesis_set(mt_hypothesis *h, const int32_t *ids, int n_ids, double logprob,
                       int finished, float length_penalty, double seconds);

/* The (at most K) best finished hypotheses of one sentence, BeamHypotheses-style. */
typedef struct {
    int K, n;
    double worst; /* lowest score kept (meaningful when n > 0) */
    mt_hypothesis *h; /* (K + 1) slots, n used */
} mt_beam_hyps;

void mt_beam_hyps_init(mt_beam_hyps *bh, int K);
void mt_beam_hyps_free(mt_beam_hyps *bh);
/* Keep the hypothesis when fewer than K are kept or it beats the worst (then the worst goes). */
void mt_beam_hyps_add(mt_beam_hyps *bh, const int32_t *ids, int n_ids, double logprob, int finished,
                      float length_penalty);
/* early_stopping = False: K kept and the worst of them >= best_logprob / cur_len ^ lp. */
int mt_beam_hyps_done(const mt_beam_hyps *bh, double best_logprob, int cur_len,
                      float length_penalty);
/* Index of the best kept hypothesis (the first of equal scores), -1 when none. */
int mt_beam_hyps_best(const mt_beam_hyps *bh);

/* Top-k selection of (score, index) pairs: best first, ties by lower index. */
typedef struct {
    double score;
    long index;
} mt_scored;
/* Insert (score, index) into top (n kept, at most k), keeping it sorted. */
void mt_topk_push(mt_scored *top, int *n, int k, double score, long index);

/* ---- the two searches mt_decode (decode.c) picks between: greedy.c for one beam, beam.c for
 * more. Each runs a prefilled context to the end, filling c->res. 0 or -1. */
int mt_decode_greedy_run(mt_decode_ctx *c);
int mt_decode_beam_run(mt_decode_ctx *c);

#endif
