/* Gradient attribution: which input tokens made the model write each target token, for every
 * architecture alike, from the engine's own backward pass (docs/attribution.md).
 *
 * For a source and a target (a forced one, or the model's greedy translation), every target
 * token's log-prob log p(y_j | inputs) is differentiated with respect to the token embedding
 * e_i = table[id_i] of every input position i: the source side (encoder-decoder: `src <eos>`;
 * decoder-only: `src <sep>`, the prompt) and the target side before it (encoder-decoder:
 * `<bos> hyp`; decoder-only: `hyp`). Positions are added after e, so they are not attributed;
 * the embedding scale (sqrt(C) for Marian and RetNet) is inside: g_i = d log p / d e_i.
 *   saliency                 ||g_i||_2                            (inseq: Saliency, vnorm)
 *   input x gradient         sum_c e_i,c g_i,c                    (signed; see below)
 *   integrated gradients     sum_c (e_i,c - b_i,c) * sum over k of w_k g_i,c(b + a_k (e - b)),
 *                            steps nodes a_k of [0, 1] with weights w_k (the rule below); b the
 *                            baseline (the <pad> embedding at every position, or zero)
 * inseq 0.7 reports these per hidden dimension and aggregates them to one score per token by
 * the L2 norm (and normalises each row); mtlab sums input x gradient and integrated gradients
 * over the dimension instead, keeping their sign, so that a row adds up: integrated gradients
 * satisfy completeness, sum_i IG_i = log p(input) - log p(baseline), which mtlab reports.
 * The log-prob is the full log-softmax over the vocabulary (as the training loss and
 * transformers compute it). A contrast token b makes every row attribute
 * log p(y_j) - log p(b) at that position (the difference of two attributions, "why this name
 * rather than that one"). No dropout; the per-target backward passes run in batches of rows
 * whose activations stay bounded (about MT_ATTR_CHUNK_POSITIONS positions at once). */
#ifndef MTLAB_ATTRIBUTION_H
#define MTLAB_ATTRIBUTION_H

#include <stdatomic.h>
#include <stdint.h>

#include "mtlab/model.h"

typedef enum {
    MT_ATTR_SALIENCY,
    MT_ATTR_INPUT_X_GRADIENT,
    MT_ATTR_INTEGRATED_GRADIENTS,
    MT_ATTR_METHODS
} mt_attr_method;

typedef enum { MT_ATTR_BASELINE_ZERO, MT_ATTR_BASELINE_PAD } mt_attr_baseline;

/* Integrated gradients' nodes, steps gradient evaluations per row either way:
 *   adaptive        composite Simpson on a partition of [0, 1] that each row refines where its
 *                   pieces' sums miss the log-prob's change over them (known from the passes:
 *                   completeness holds on every piece), docs/attribution.md §2; below 3 steps
 *                   Gauss-Legendre
 *   gauss-legendre  the steps Gauss-Legendre nodes of [0, 1] (captum's default), every row alike */
typedef enum { MT_ATTR_RULE_ADAPTIVE, MT_ATTR_RULE_GAUSS_LEGENDRE, MT_ATTR_RULES } mt_attr_rule;

#define MT_ATTR_DEFAULT_STEPS 64
#define MT_ATTR_MAX_STEPS 4096
#define MT_ATTR_CHUNK_POSITIONS 4096

typedef struct {
    mt_attr_method method;
    int steps; /* integrated gradients: 0 means MT_ATTR_DEFAULT_STEPS */
    mt_attr_baseline baseline; /* integrated gradients (<pad>: the zero path crosses the norms'
                                * singularity at 0, docs/attribution.md) */
    mt_attr_rule rule; /* integrated gradients' nodes */
    int32_t contrast; /* < 0: none; else rows attribute log p(y_j) - log p(contrast) */
    int vocab_limit; /* greedy decode (no hyp): only ids below it (0: all) */
    int max_new_tokens; /* greedy decode: 0 as mt_decode_opts */
    const atomic_int *cancel; /* checked before every pass (a chunk of rows and steps) and
                               * by the greedy decode; non-zero stops the attribution:
                               * -1, "attribution cancelled" (NULL: none) */
} mt_attr_opts;

/* method saliency, steps 0, <pad> baseline, the adaptive rule, no contrast, no cancel flag. */
void mt_attr_opts_init(mt_attr_opts *o);

typedef struct {
    mt_attr_method method;
    int rows; /* target tokens: the hypothesis, then <eos> */
    int cols; /* input positions: n_src of the source side, then the target side */
    int n_src;
    int32_t *row_ids; /* (rows) */
    int32_t *col_ids; /* (cols) */
    float *values; /* (rows, cols); a target-side column after the position its row is
                    * predicted from is 0 (causal) */
    float *inputs; /* (cols, C) the token embeddings e attributed */
    double *logp; /* (rows) the row's log-prob (minus the contrast's) at the input */
    double *logp_baseline; /* (rows) integrated gradients: the same at the baseline; else NULL */
    int steps; /* integrated gradients: the steps taken (gradient evaluations per row) */
    mt_attr_rule rule; /* integrated gradients: the rule that placed them */
} mt_attribution;

/* Attribute hyp (hyp_len ids without <eos>) given src (src_len ids, no special tokens); hyp
 * NULL: the model's greedy translation of src. The model must hold fp32 weights. 0, or -1
 * (mt_last_error) with *out empty. */
int mt_attribute(mt_model *m, const int32_t *src, int src_len, const int32_t *hyp, int hyp_len,
                 const mt_attr_opts *o, mt_attribution *out);
/* A point near the attribution's path: every input's token embedding at b + alpha (e - b)
 * (o's baseline) and, when delta is not NULL, delta (C floats) added to the embedding of
 * column col. */
typedef struct {
    float alpha;
    int col;
    const float *delta;
} mt_attr_point;
/* The row log-probs the attribution differentiates (logp (rows), contrast as in o) at point:
 * the function whose gradient mt_attribute takes, for finite-difference checks and
 * completeness. */
int mt_attribution_logprobs(mt_model *m, const int32_t *src, int src_len, const int32_t *hyp,
                            int hyp_len, const mt_attr_opts *o, const mt_attr_point *point,
                            double *logp);
void mt_attribution_free(mt_attribution *a);
/* Per row: the sum of its values (the completeness check of integrated gradients compares it
 * with logp - logp_baseline). */
double mt_attribution_row_sum(const mt_attribution *a, int row);

/* "saliency", "input_x_gradient", "integrated_gradients" */
const char *mt_attr_method_name(mt_attr_method method);
/* The method of a name above; -1 + mt_error naming them otherwise. */
int mt_attr_method_parse(const char *name, mt_attr_method *out);
/* "adaptive", "gauss-legendre" */
const char *mt_attr_rule_name(mt_attr_rule rule);
/* The rule of a name above; -1 + mt_error naming them otherwise. */
int mt_attr_rule_parse(const char *name, mt_attr_rule *out);

#endif
