/* One model on another backend against the same model on the CPU backend, through the public
 * model API only: logits of a padded batch, a training step (loss, every gradient, the
 * parameters after AdamW), prefill and single decoding steps with a beam reorder, the probe
 * maps of one translation, its attributions (mtlab/attribution.h), and greedy and beam
 * decoding. Used with the fenced backend
 * (bit-identical, runs everywhere) and with CUDA (within tolerances, on a GPU machine). */
#ifndef MTLAB_TEST_MODEL_PARITY_H
#define MTLAB_TEST_MODEL_PARITY_H

#include "mtlab/backend.h"
#include "mtlab/model.h"

typedef struct {
    double logits; /* max |a - b| / max(max |b|, 1) over forward and decoding logits */
    double grads; /* the same over the gradient block */
    double params; /* the same over the parameters after one AdamW step */
    double loss; /* |loss_a - loss_b| / |loss_b| */
    double probes; /* as logits, over every probe map of one translation */
    double attr; /* as logits, over the values and row log-probs of one translation's
                  * attributions: saliency, input x gradient, integrated gradients (both rules,
                  * a contrast token) */
} parity_report;

#define TINY_MODEL_VOCAB 40

/* Tiny sizes of any preset (V = TINY_MODEL_VOCAB, C = 16, 3 layers, 2 heads, attention at
 * layers 0 and 2 of the hybrids, window 3), dropout as given. */
void tiny_model_config(mt_model_config *c, const char *preset, float dropout);

/* Move each of n host floats by U(-0.1, 0.1), a fixed stream per seed: fresh models have
 * logits of a few hundredths, too small for a tolerance to mean much; moved ones have logits
 * of order 1 and exercise every tensor. */
void tiny_model_perturb(float *p, size_t n, uint64_t seed);

/* Run every phase on `preset` (tiny) with backend `be` and the CPU; exact = 1 also requires
 * identical greedy and beam tokens (a backend with other rounding may break near-ties).
 * Fails the cmocka test on any API error. */
parity_report model_parity(const mt_backend *be, const char *preset, int exact);

/* The same model at precision p on `be` against fp32 on the CPU: the largest relative
 * difference of the logits of a padded batch, a prefill and decoding steps (as above). */
double model_precision_parity(const mt_backend *be, const char *preset, mt_precision p);

#endif
