/* What lets the CPU backend's hot loops run on the widest vectors the machine has.
 *
 * glibc's libmvec holds vector versions of expf and log1pf, but math.h announces them only under
 * -ffast-math; announcing them here lets `omp simd` loops call them on a whole vector of elements
 * (the build's -fno-math-errno lets the loops that use them vectorise at all).
 *
 * MT_CPU_CLONES compiles a function once per x86-64 level (AVX-512, AVX2, baseline) and picks
 * one when the program starts, so the binary still runs everywhere. It goes on a plain function
 * called from inside an OpenMP region, not on the function holding the region: GCC outlines the
 * region's body before it clones, so the body itself would stay baseline. */
#ifndef MTLAB_CPU_SIMD_H
#define MTLAB_CPU_SIMD_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
__attribute__((simd("notinbranch"))) float expf(float);
__attribute__((simd("notinbranch"))) float log1pf(float);
#define MT_CPU_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define MT_CPU_CLONES
#endif

/* e^x for the inner loops that take one exp per element of a large array (the scan's decays),
 * as plain arithmetic the vectorizer inlines: libmvec's vector expf is a call, and around a
 * call every live vector register is saved and restored, which cost more than the exp itself.
 * x = k ln2 + r with k = round(x / ln2) and |r| <= ln2 / 2 (ln2 in two parts, the first exact
 * in k * ln2_hi for |k| < 2^8), e^r by its Taylor series to r^7 / 7! (what is left out is below
 * 0.35^8 / 8!, 6e-9 of the result) and 2^k put straight into the exponent bits. x is clamped
 * to [-87, 88], where 2^k stays a normal float: below it the result is e^-87 (1.6e-38) where
 * expf would give a subnormal or 0. Within 2 float roundings of e^x elsewhere
 * (tests/unit/test_backend.c). */
static inline float cpu_expf_poly(float x)
{
    x = x < -87.0f ? -87.0f : x > 88.0f ? 88.0f : x;
    /* round to nearest by adding and taking away 1.5 * 2^23 (nearbyintf does not vectorize) */
    float k = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
    float r = (x - k * 0.693145751953125f) - k * 1.428606765330187e-06f;
    float p = 1.0f / 5040.0f;
    p = p * r + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    int32_t bits = ((int32_t)k + 127) << 23;
    float two_k;
    memcpy(&two_k, &bits, sizeof two_k);
    return p * two_k;
}

/* Phi(x) = (1 + erf(x / sqrt 2)) / 2, the normal distribution's CDF that exact GELU multiplies
 * by (gpt-neox's MLP), with *gauss = e^(-x^2 / 2) beside it for the derivative, as plain
 * arithmetic the vectorizer inlines. The tail Phi(-|x|) = erfc(|x| / sqrt 2) / 2 is Abramowitz
 * and Stegun's 7.1.26, erfc(z) = t (a1 + t (a2 + t (a3 + t (a4 + t a5)))) e^(-z^2) with
 * t = 1 / (1 + p z), within 1.5e-7 of erfc for every z >= 0 (the form PyTorch's vectorised erf
 * takes too); Phi(x) = 1 - tail above 0, so the tail is never taken away from 1 below it. libmvec's
 * erff and expf, two calls around which every live vector register is saved, were 2.5% and 1% of
 * a one-thread gpt-neox-small training step. Within 3e-7 of Phi with float rounding (2.8e-7 the
 * most over [-12, 12]), GELU and its derivative within 5e-7 (1 + |value|) (tests/unit/
 * test_backend.c); libm's erff is within a float rounding of erf. */
static inline float cpu_phi_poly(float x, float *gauss)
{
    float z = fabsf(x) * 0.70710678118654752f;
    float t = 1.0f / (1.0f + 0.3275911f * z);
    float p = 1.061405429f;
    p = p * t - 1.453152027f;
    p = p * t + 1.421413741f;
    p = p * t - 0.284496736f;
    p = p * t + 0.254829592f;
    float e = cpu_expf_poly(-0.5f * x * x);
    float tail = 0.5f * (p * t) * e;
    *gauss = e;
    return x < 0.0f ? tail : 1.0f - tail;
}

/* Elementwise operations hand each thread whole chunks of CPU_CHUNK elements and run every
 * chunk through a cloned `omp simd` function. */
#define CPU_CHUNK ((size_t)4096)

/* the length of the chunk that starts at i0 of n elements */
static inline size_t cpu_chunk_len(size_t i0, size_t n)
{
    return n - i0 < CPU_CHUNK ? n - i0 : CPU_CHUNK;
}

/* Blocked loops keep CPU_LANES channels of a row in a small array. Moving n <= CPU_LANES
 * floats between a row and such an array: a whole block is a copy of fixed size, which the
 * compiler turns into a few vector moves; a copy of variable size is a library call, and at
 * one call per row and block the calls cost more than the work. */
#define CPU_LANES 16

/* lanes[0, n) = src[0, n), lanes[n, CPU_LANES) = 0 */
static inline void cpu_load_lanes(float *restrict lanes, const float *restrict src, int n)
{
    if (n == CPU_LANES) {
        memcpy(lanes, src, CPU_LANES * sizeof *lanes);
    } else {
        memset(lanes, 0, CPU_LANES * sizeof *lanes);
        memcpy(lanes, src, (size_t)n * sizeof *lanes);
    }
}

/* Column sums down the rows (bias and norm weight gradients) take groups of up to
 * CPU_COL_GROUP adjacent columns, one running sum each, and add a whole span of every row
 * (consecutive cache lines the prefetchers stream) where blocks of CPU_LANES walked the rows
 * once per block, each row's one line at a stride, and copied a short last block through
 * library calls. Where threads share the columns the groups come in a multiple of the thread
 * count, as equal as whole vectors allow (768 columns on two threads: four of 192, where three
 * of 256 left one thread twice the other's work). Each column's sum is the same whatever its
 * group. */
enum { CPU_COL_GROUP = 256 };
static inline int cpu_col_group(int cols, int threads)
{
    int per_thread = (cols + threads * CPU_COL_GROUP - 1) / (threads * CPU_COL_GROUP);
    int groups = threads * per_thread, w = (cols + groups - 1) / groups;
    w = (w + CPU_LANES - 1) / CPU_LANES * CPU_LANES;
    return w < CPU_COL_GROUP ? w : CPU_COL_GROUP;
}

/* A sum over c in [0, n) in eight running sums acc[0..8), added pairwise at the end
 * (CPU_LANES8_FOLD): block_add adds element c + l into acc[l], tail_add element c into
 * acc[c % 8]. The loops vectorise, where one running sum is a chain of dependent adds; every
 * user of the pattern sums in this one order. */
#define CPU_LANES8_SUM(n, block_add, tail_add)     \
    do {                                           \
        int c = 0;                                 \
        for (; c + 8 <= (n); c += 8)               \
            for (int l = 0; l < 8; l++) block_add; \
        for (; c < (n); c++) tail_add;             \
    } while (0)
#define CPU_LANES8_FOLD(acc)                          \
    (((acc)[0] + (acc)[4]) + ((acc)[1] + (acc)[5])) + \
        (((acc)[2] + (acc)[6]) + ((acc)[3] + (acc)[7]))

/* dst[0, n) = lanes[0, n) */
static inline void cpu_store_lanes(float *restrict dst, const float *restrict lanes, int n)
{
    if (n == CPU_LANES) memcpy(dst, lanes, CPU_LANES * sizeof *lanes);
    else memcpy(dst, lanes, (size_t)n * sizeof *lanes);
}

/* dst[c * ld_dst + r] = src[r * ld_src + c] for r, c < 8: an 8 x 8 block transposed through
 * vector shuffles (GCC's vector extension, so each clone gets its own widest), where element by
 * element it is 64 scalar loads and 64 scalar stores at a stride. */
#if defined(__GNUC__) && !defined(__clang__)
typedef float cpu_v8f __attribute__((vector_size(32)));
typedef int32_t cpu_v8i __attribute__((vector_size(32)));
__attribute__((always_inline)) static inline void
cpu_transpose8(float *restrict dst, size_t ld_dst, const float *restrict src, size_t ld_src)
{
    cpu_v8f r[8], t[8], u[8];
    for (int i = 0; i < 8; i++) memcpy(&r[i], src + i * ld_src, sizeof r[i]);
    for (int i = 0; i < 8; i += 2) { /* within each 128-bit half: rows i, i+1 interleaved */
        t[i] = __builtin_shuffle(r[i], r[i + 1], (cpu_v8i){0, 8, 1, 9, 4, 12, 5, 13});
        t[i + 1] = __builtin_shuffle(r[i], r[i + 1], (cpu_v8i){2, 10, 3, 11, 6, 14, 7, 15});
    }
    for (int i = 0; i < 8; i += 4) { /* four rows of columns c and c + 4 */
        u[i] = __builtin_shuffle(t[i], t[i + 2], (cpu_v8i){0, 1, 8, 9, 4, 5, 12, 13});
        u[i + 1] = __builtin_shuffle(t[i], t[i + 2], (cpu_v8i){2, 3, 10, 11, 6, 7, 14, 15});
        u[i + 2] = __builtin_shuffle(t[i + 1], t[i + 3], (cpu_v8i){0, 1, 8, 9, 4, 5, 12, 13});
        u[i + 3] = __builtin_shuffle(t[i + 1], t[i + 3], (cpu_v8i){2, 3, 10, 11, 6, 7, 14, 15});
    }
    for (int c = 0; c < 4; c++) { /* the 128-bit halves of rows 0-3 and 4-7 joined */
        cpu_v8f lo = __builtin_shuffle(u[c], u[c + 4], (cpu_v8i){0, 1, 2, 3, 8, 9, 10, 11});
        cpu_v8f hi = __builtin_shuffle(u[c], u[c + 4], (cpu_v8i){4, 5, 6, 7, 12, 13, 14, 15});
        memcpy(dst + c * ld_dst, &lo, sizeof lo);
        memcpy(dst + (c + 4) * ld_dst, &hi, sizeof hi);
    }
}
#else
static inline void cpu_transpose8(float *restrict dst, size_t ld_dst, const float *restrict src,
                                  size_t ld_src)
{
    for (int r = 0; r < 8; r++)
        for (int c = 0; c < 8; c++) dst[c * ld_dst + r] = src[r * ld_src + c];
}
#endif

#endif
