/* Pieces of engine/eval/comet.c that tests reach directly. */
#ifndef MTLAB_EVAL_COMET_INTERNAL_H
#define MTLAB_EVAL_COMET_INTERNAL_H

#include "mtlab/comet.h"

/* The hyper-parameters of hparams.yaml into cfg's sentence-embedding and estimator fields
 * (the encoder's come from the weights); 0 or -1 naming the file, line and key. */
int comet_hparams_read(const char *path, mt_comet_config *cfg);
/* "Tanh", "ReLU", ... (any case) -> mt_act; -1 when not one mtlab computes. */
int comet_activation_from_name(const char *name, mt_act *out);
/* p (n) = sparsemax(z) (Martins & Astudillo 2016): the Euclidean projection of z onto the
 * probability simplex. */
void comet_sparsemax(float *p, const float *z, int n);

#endif
