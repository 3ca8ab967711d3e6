/* One forward for identical copies (engine/models/attribution_copies.c): attribution's copies of
 * a chunk are one sequence at a few path points (saliency and input x gradient: one, at the
 * input; integrated gradients: a chunk's distinct alphas), so their forward is the same many
 * times over. The forward runs once per point, at batch K (the points) into the first K copies'
 * slots of the B copies' activations, and every saved activation is then copied into the slots
 * of the copies at that point, for the backward to run over the B copies as if each had made
 * its own. */
#ifndef MTLAB_MODELS_ATTRIBUTION_COPIES_H
#define MTLAB_MODELS_ATTRIBUTION_COPIES_H

#include "models/model_internal.h"

/* 1 when every unit of s has its activations listed here (else its copies each run their own
 * forward). */
int attr_copies_supported(const mt_stack *s);

/* sa laid out for B copies of T positions and its first K copies' slots filled by a forward at
 * batch K: copy k's activations into the slots of copies first[k] .. first[k + 1] - 1
 * (first (K + 1): 0, ..., B, rising). */
void attr_copies_expand(const mt_backend *be, const mt_stack *s, mt_stack_acts *sa,
                        const int *first, int K, int B, int T);

#endif
