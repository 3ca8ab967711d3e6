/* NumPy's default generator, bit for bit, for sacreBLEU's significance tests: its paired
 * bootstrap and approximate randomization draw their samples from
 * numpy.random.default_rng(SEED), so the same p-values and intervals need the same draws.
 *
 *   seeding   SeedSequence(seed): the seed's 32-bit words hashed into a pool of four words
 *             (hashmix / mix), then expanded into the 256 bits PCG64 starts from;
 *   PCG64     a 128-bit LCG, state = state * M + inc, output XSL-RR: the two halves xored,
 *             rotated right by the top six bits; 32-bit draws split one 64-bit output, low half
 *             first (numpy keeps the high half for the next call);
 *   choice    Generator.choice(n, size, replace=True) = integers(0, n): Lemire's multiply-shift
 *             on 32-bit draws, rejecting the low products below (2^32 - n) mod n;
 *   booleans  integers(2, dtype=bool): one 32-bit draw gives 32 booleans, lowest bit first;
 *   sum       np.sum of a contiguous float64 or float32 array: pairwise, blocks of 8
 *             accumulators of the array's own type.
 * tests/unit/test_significance.c holds each to numpy's own output. */
#ifndef MTLAB_EVAL_NP_RANDOM_H
#define MTLAB_EVAL_NP_RANDOM_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    unsigned __int128 state, inc;
    int has_u32; /* a buffered high half */
    uint32_t u32;
} mt_np_rng;

/* numpy.random.default_rng(seed) */
void mt_np_rng_seed(mt_np_rng *g, uint64_t seed);
uint64_t mt_np_next_u64(mt_np_rng *g);
uint32_t mt_np_next_u32(mt_np_rng *g);
/* rng.choice(n, size=cnt, replace=True) into out; 0 < n <= 2^32 - 1 */
void mt_np_choice(mt_np_rng *g, uint32_t n, uint32_t *out, size_t cnt);
/* rng.integers(2, size=cnt, dtype=bool) into out (0 or 1) */
void mt_np_booleans(mt_np_rng *g, unsigned char *out, size_t cnt);
/* np.sum(a[:n]) of float64, and of float32 (accumulated in float32, as numpy does) */
double mt_np_sum(const double *a, size_t n);
float mt_np_sum_f32(const float *a, size_t n);

#endif
