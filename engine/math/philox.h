/* Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011): a
 * counter-based generator. Output = bijection(counter) keyed by the seed, so any element's
 * random number is computed directly from (seed, counter) with no sequential state: dropout
 * recomputes its mask in backward, the CPU and CUDA backends draw identical masks, and a row's
 * mask depends on its index in the step's global batch, not on the batch a process holds.
 * Shared by both backends like elementwise.h. */
#ifndef MTLAB_PHILOX_H
#define MTLAB_PHILOX_H

#include <stdint.h>

#include "math/elementwise.h"

/* (*o0, *o1, *o2, *o3) = Philox4x32-10(counter = c, key = k): four outputs of their own, so
 * a CPU loop over blocks can store each word of every block into an array of its own (four
 * words into one small array per block kept GCC from vectorising the loop) */
MT_HD void mt_philox4x32_words(uint32_t *o0, uint32_t *o1, uint32_t *o2, uint32_t *o3, uint32_t c0,
                               uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0, uint32_t k1)
{
    const uint32_t mul0 = 0xD2511F53u, mul1 = 0xCD9E8D57u;
    const uint32_t weyl0 = 0x9E3779B9u, weyl1 = 0xBB67AE85u;
    /* unrolled, so a loop over elements around this call vectorises on the CPU (nvcc unrolls
     * a constant trip count by itself) */
#ifndef __CUDACC__
#pragma GCC unroll 10
#endif
    for (int round = 0; round < 10; round++) {
        uint64_t p0 = (uint64_t)mul0 * c0, p1 = (uint64_t)mul1 * c2;
        uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
        uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
        uint32_t n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;
        c0 = n0, c1 = lo1, c2 = n2, c3 = lo0;
        k0 += weyl0, k1 += weyl1;
    }
    *o0 = c0, *o1 = c1, *o2 = c2, *o3 = c3;
}

/* out[0..3] = Philox4x32-10(counter = c, key = k) */
MT_HD void mt_philox4x32(uint32_t out[4], uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3,
                         uint32_t k0, uint32_t k1)
{
    mt_philox4x32_words(&out[0], &out[1], &out[2], &out[3], c0, c1, c2, c3, k0, k1);
}

/* 24 random bits -> a float in [0, 1) with every value exactly representable */
MT_HD float mt_u32_to_unit_float(uint32_t x) { return (float)(x >> 8) * (1.0f / 16777216.0f); }

/* The four draws of Philox block g of one row's dropout mask: keys 4 g .. 4 g + 3 of row `row`
 * at (seed, step, site). Counter (g, site, low word of step, row), key the seed with the high
 * word of step folded into its own high word (distinct for every step below 2^32). */
MT_HD void mt_dropout_block_words(uint32_t *r0, uint32_t *r1, uint32_t *r2, uint32_t *r3,
                                  uint64_t seed, uint64_t step, uint32_t site, uint32_t row,
                                  uint32_t g)
{
    mt_philox4x32_words(r0, r1, r2, r3, g, site, (uint32_t)step, row, (uint32_t)seed,
                        (uint32_t)(seed >> 32) ^ (uint32_t)(step >> 32));
}

/* The key of element j of a row of row_len elements: j from the row's start, or with
 * align_end, j - row_len (mod 2^32) from its end, so that an element of a left-padded row keeps
 * its key when the padding in front of it changes. */
MT_HD uint32_t mt_dropout_key(size_t j, size_t row_len, int align_end)
{
    return align_end ? (uint32_t)j - (uint32_t)row_len : (uint32_t)j;
}

/* The dropout draw of key `key` of row `row` at (seed, step, site): uniform in [0, 1). Each
 * Philox block gives four 32-bit words, and keys 4 g .. 4 g + 3 take the words of block g in
 * order (docs/models.md §10.8), so a run of elements costs a quarter of a block each. */
MT_HD float mt_dropout_uniform(uint64_t seed, uint64_t step, uint32_t site, uint32_t row,
                               uint32_t key)
{
    uint32_t r[4];
    mt_dropout_block_words(&r[0], &r[1], &r[2], &r[3], seed, step, site, row, key >> 2);
    return mt_u32_to_unit_float(r[key & 3]);
}

#endif
