/* Attribution's passes (engine/models/attribution_pass.c): the forward and backward over copies
 * of one sequence that give target rows' log-probs and the gradients of their inputs' token
 * embeddings, scored per method. attribution.c drives them; attribution_rules.c asks for
 * evaluations through attr_gradient_passes (as its evaluator). */
#ifndef MTLAB_MODELS_ATTRIBUTION_PASS_H
#define MTLAB_MODELS_ATTRIBUTION_PASS_H

#include "models/attribution_rules.h"
#include "models/model_internal.h"

/* One sequence to attribute: its inputs, its targets and the host copies of the token
 * embeddings (and of the baseline) at every input position. */
typedef struct {
    mt_model *m;
    int encdec;
    int T, S; /* decoder positions; source positions (0: decoder-only) */
    int n_prompt; /* decoder positions before the hypothesis */
    int32_t *ids; /* (T) decoder input */
    int32_t *src; /* (S) encoder input */
    int rows; /* targets: the hypothesis and <eos> */
    int32_t *targets; /* (rows) */
    int32_t contrast; /* < 0: none */
    float *e_dec, *b_dec; /* (T, C) token embeddings, baseline */
    float *e_enc, *b_enc; /* (S, C) */
    /* kept from pass to pass, grown as needed (a fresh allocation per pass cost its pages'
     * faults and zeroing every time): the device scratch, the host copy of the logits, and
     * the host copies of the embedding output's gradients, gdec (copies, T, C), genc (copies,
     * S, C) */
    float *scratch, *logits, *gdec, *genc;
    size_t scratch_cap, logits_cap; /* floats */
    int grads_copies;
    int shared_forward; /* 1: copies at one path point share one forward (attribution_copies.h);
                         * 0: each copy runs its own, the reference the tests hold it to */
} attr_seq;

/* decoder-only: `src <sep> hyp` (a text template holds its separator in src, as the probes and
 * decoding take it); encoder-decoder: source `src <eos>`, decoder `<bos> hyp`; the host
 * embeddings and o's baseline. 0, or -1 (mt_error). */
int attr_seq_init(attr_seq *q, mt_model *m, const int32_t *src, int src_len, const int32_t *hyp,
                  int hyp_len, const mt_attr_opts *o);
void attr_seq_free(attr_seq *q);

/* Every target's log-prob (logp, rows) at point, from one copy's forward. */
int attr_all_logprobs(attr_seq *q, const mt_attr_point *point, double *logp);

/* The backward passes of n evaluations (in order of j) by method into sink; cancel is checked
 * before every pass. */
int attr_gradient_passes(attr_seq *q, mt_attr_method method, const attr_eval *ev, long n,
                         const attr_sink *sink, const atomic_int *cancel);

/* -1 and "attribution cancelled" once the caller's cancel flag is set, else 0. */
int attr_check_cancel(const atomic_int *cancel);

#endif
