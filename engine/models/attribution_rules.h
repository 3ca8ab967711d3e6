/* Integrated gradients' rules (engine/models/attribution_rules.c): where along the path each
 * target row is differentiated and how its evaluations are weighted, apart from how an
 * evaluation is computed. A rule asks an evaluator (attribution_pass.c's passes, through the
 * callback) for batches of evaluations and weighs what comes back; it knows nothing of models.
 * Saliency and input x gradient are the one-node rule at alpha = 1. */
#ifndef MTLAB_MODELS_ATTRIBUTION_RULES_H
#define MTLAB_MODELS_ATTRIBUTION_RULES_H

#include "mtlab/attribution.h"

/* One gradient evaluation: row j's target differentiated at the path point alpha. */
typedef struct {
    int j;
    float alpha;
} attr_eval;

/* Where the scores of evaluations go: with weight, evaluation i's times weight[i] added to row j
 * of out (rows, cols) and, when logp is not NULL, its log-prob (the row's at its alpha, from the
 * same pass) into logp[j]; without, evaluation i's into row i of out (n, cols) (zeroed by the
 * caller) and its log-prob into logp[i]. */
typedef struct {
    const double *weight;
    double *out;
    double *logp;
} attr_sink;

/* The scores of n evaluations (in order of j) into sink: 0, or -1 with mt_error set (the
 * evaluator's own error, or a cancel). */
typedef int (*attr_evaluate_fn)(void *ctx, const attr_eval *ev, long n, const attr_sink *sink);

typedef struct {
    attr_evaluate_fn evaluate;
    void *ctx;
    int rows, cols; /* target rows; input columns (the scores of one evaluation) */
} attr_evaluator;

/* Gauss-Legendre nodes x01 and weights w01 of n points on [0, 1]. */
void attr_gauss_legendre(int n, double *x01, double *w01);

/* Saliency and input x gradient (steps 1, at the input), and integrated gradients with the
 * steps Gauss-Legendre nodes for every row: scores weighted into acc (rows, cols); the rows'
 * log-probs at their last node into logp (rows) when not NULL (saliency and input x gradient:
 * at the input). */
int attr_integrate_fixed(const attr_evaluator *ev, mt_attr_method method, int steps, double *acc,
                         double *logp);

/* Integrated gradients with the adaptive rule (docs/attribution.md §2) into acc (rows, cols);
 * logp0 (rows) the rows' log-probs at the baseline. Needs steps >= 2. */
int attr_integrate_adaptive(const attr_evaluator *ev, int steps, const double *logp0, double *acc);

#endif
