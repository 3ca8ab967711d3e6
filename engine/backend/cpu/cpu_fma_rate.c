/* cpu_fma512_gain (cpu_ops.h): a leaf of the backend, which the shape rule of cpu_gemm.c and
 * the kernel report of cpu_blas_info.c both read. */
#include "backend/cpu/cpu_ops.h"

#include <pthread.h>
#include <time.h>

/* How much faster this core multiplies-and-adds on 512-bit vectors than on 256-bit ones:
 * about 2 on a Xeon with two 512-bit units, about 1 on a Zen 4 (which splits a 512-bit
 * operation in two halves) and on a Xeon with one. No cpuid bit says which (BLIS 0.9.0 guesses
 * from a table of model numbers, and takes its 256-bit "haswell" kernels for a model it does not
 * know), so the rates are timed, once a process: 12 independent chains of 2,000 multiply-adds on
 * each width (a few microseconds), the two widths alternating, the fastest of 100 runs each; the
 * gain is the median of three such timings, after one of 20 runs that warms the 512-bit units up
 * (about 2 ms in all). Every process on a machine must reach the same answer, busy or not: the
 * answer picks the product kernels, and so the roundings of a training run. The single timing
 * this replaces (5 runs of 20,000) read 1.1-1.5 instead of 2 about once in 150 processes while
 * other processes multiplied beside it, and a rank of a two-rank run then took other kernels;
 * test_backend_gemm times it again under such a load. 1 without AVX-512. */
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

static double seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

enum { FMA_CHAINS = 12, FMA_ROUNDS = 2000 }; /* 12 chains: 14 of the 16 ymm registers */

/* fma_seconds512 and fma_seconds256: the seconds the chains take on one width (its vector type,
 * intrinsics and target), their first lanes added to *sink so that none is dropped */
#define FMA_SECONDS(name, isa, vec, set1, fmadd, storeu, lanes)                  \
    __attribute__((target(isa))) static double name(volatile float *sink)        \
    {                                                                            \
        vec a[FMA_CHAINS], b = set1(0.999999f), c = set1(1e-6f);                 \
        for (int i = 0; i < FMA_CHAINS; i++) a[i] = set1((float)i);              \
        double t = seconds();                                                    \
        for (int r = 0; r < FMA_ROUNDS; r++)                                     \
            _Pragma("GCC unroll 16") for (int i = 0; i < FMA_CHAINS; i++) a[i] = \
                fmadd(a[i], b, c);                                               \
        t = seconds() - t;                                                       \
        float out[lanes];                                                        \
        for (int i = 0; i < FMA_CHAINS; i++) {                                   \
            storeu(out, a[i]);                                                   \
            *sink += out[0];                                                     \
        }                                                                        \
        return t;                                                                \
    }
FMA_SECONDS(fma_seconds512, "avx512f", __m512, _mm512_set1_ps, _mm512_fmadd_ps, _mm512_storeu_ps,
            16)
FMA_SECONDS(fma_seconds256, "avx2,fma", __m256, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_storeu_ps,
            8)
#undef FMA_SECONDS
#endif

/* the fastest of `runs` timings of each width, alternating; twice the lanes in the time each
 * width took */
#if defined(__x86_64__) && defined(__GNUC__)
static double fma512_gain_once(int runs)
{
    volatile float sink = 0.0f;
    double t512 = 1e9, t256 = 1e9;
    for (int r = 0; r < runs; r++) {
        double a = fma_seconds512(&sink), b = fma_seconds256(&sink);
        t512 = a < t512 ? a : t512;
        t256 = b < t256 ? b : t256;
    }
    return t512 > 0.0 ? 2.0 * t256 / t512 : 1.0;
}
#endif

double cpu_fma512_gain_measure(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx2") ||
        !__builtin_cpu_supports("fma"))
        return 1.0;
    (void)fma512_gain_once(20); /* warm-up: a core's first 512-bit operations run slower */
    double g0 = fma512_gain_once(100), g1 = fma512_gain_once(100), g2 = fma512_gain_once(100);
    double lo = g0 < g1 ? g0 : g1, hi = g0 < g1 ? g1 : g0;
    return g2 < lo ? lo : g2 > hi ? hi : g2;
#else
    return 1.0;
#endif
}

static double fma512_gain = 1.0;
static pthread_once_t fma512_once = PTHREAD_ONCE_INIT;

static void time_fma512(void) { fma512_gain = cpu_fma512_gain_measure(); }

double cpu_fma512_gain(void)
{
    pthread_once(&fma512_once, time_fma512);
    return fma512_gain;
}
