/* One forward for identical copies (engine/models/attribution_copies.c): attribution's copies of
 * a chunk are one sequence at one path point (saliency, input x gradient; integrated gradients
 * where a chunk's copies share alpha), so their forward is the same B times over. The forward
 * runs at batch 1 into the first copy's slots of the B copies' activations, and every saved
 * activation is then copied into the other copies' slots, for the backward to run over the B
 * copies as if each had made its own. */
#ifndef MTLAB_MODELS_ATTRIBUTION_COPIES_H
#define MTLAB_MODELS_ATTRIBUTION_COPIES_H

#include "models/model_internal.h"

/* 1 when every unit of s has its activations listed here (else its copies each run their own
 * forward). */
int attr_copies_supported(const mt_stack *s);

/* sa laid out for B copies of T positions (S source positions for cross-attention) and its
 * first copy's slots filled by a forward at batch 1: the first copy's activations into the
 * others' slots. */
void attr_copies_broadcast(const mt_backend *be, const mt_stack *s, mt_stack_acts *sa, int B,
                           int T);

#endif
