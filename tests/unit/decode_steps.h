/* Incremental decoding checked against the parallel forward, shared by the decoding tests of
 * the fixture models (test_models_decode.c) and of the tiny random ones
 * (test_models_arch_decode.c). */
#ifndef MTLAB_TEST_DECODE_STEPS_H
#define MTLAB_TEST_DECODE_STEPS_H

#include <stdint.h>

#include "mtlab/model.h"

/* Prefill rows ids (B, T) with their first P positions, then feed the rest one step at a time,
 * and compare every step's logits with full (B, T, V), the parallel forward's logits, at
 * positions P-1 .. T-1 (the step that feeds ids[:, t] predicts position t). src (B, S): the
 * source of an encoder-decoder, NULL and 0 otherwise. B <= 8. Returns the largest difference;
 * an API error fails the test. */
float decode_vs_parallel(mt_model *m, const int32_t *ids, int B, int T, int P, const int32_t *src,
                         int S, const float *full);

/* The prefill in chunks of `chunk` positions (docs/decoding.md §1.1) against the prefill in
 * one pass: rows ids (B, T) prefilled with their first P positions both ways, then stepped
 * on to T alike; returns the largest difference between the two states' logits, at the
 * prefill and at every step. src (B, S) as above (the encoder runs in chunks too). B <= 8. */
float chunked_vs_whole(mt_model *m, const int32_t *ids, int B, int T, int P, const int32_t *src,
                       int S, int chunk);

/* Two rows ids (2, T) prefilled with their first P positions and stepped once, then reordered
 * into three beams [1, 0, 1] and stepped on to T: returns the largest difference between the
 * beams' logits and the parallel forward of the reordered rows (src (2, S) reordered alike).
 * Also checks that a row index past the three beams is refused. T, S <= 16, P <= T - 2. */
float reorder_vs_parallel(mt_model *m, const int32_t *ids, int T, int P, const int32_t *src, int S);

#endif
