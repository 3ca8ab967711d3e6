/* cpu_fma512_gain (cpu_ops.h): a leaf of the backend, which the shape rule of cpu_gemm.c and
 * the kernel report of cpu_blas_info.c both read. */
#include "backend/cpu/cpu_ops.h"

#include <pthread.h>
#include <time.h>

/* How much faster this core multiplies-and-adds on 512-bit vectors than on 256-bit ones:
 * about 2 on a Xeon with two 512-bit units, about 1 on a Zen 4 (which splits a 512-bit
 * operation in two halves) and on a Xeon with one. No cpuid bit says which (BLIS 0.9.0 guesses
 * from a table of model numbers, and takes its 256-bit "haswell" kernels for a model it does not
 * know), so the rates are timed, once: 12 independent chains of 20,000 multiply-adds on each
 * width, best of 5 runs each, interleaved (about 0.5 ms in all). 1 without AVX-512. */
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

static double seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

enum { FMA_CHAINS = 12, FMA_ROUNDS = 20000 }; /* 12 chains: 14 of the 16 ymm registers */

__attribute__((target("avx512f"))) static double fma_seconds512(volatile float *sink)
{
    __m512 a[FMA_CHAINS], b = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-6f);
    for (int i = 0; i < FMA_CHAINS; i++) a[i] = _mm512_set1_ps((float)i);
    double t = seconds();
    for (int r = 0; r < FMA_ROUNDS; r++)
#pragma GCC unroll 16
        for (int i = 0; i < FMA_CHAINS; i++) a[i] = _mm512_fmadd_ps(a[i], b, c);
    t = seconds() - t;
    for (int i = 0; i < FMA_CHAINS; i++) *sink += _mm512_reduce_add_ps(a[i]);
    return t;
}

__attribute__((target("avx2,fma"))) static double fma_seconds256(volatile float *sink)
{
    __m256 a[FMA_CHAINS], b = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-6f);
    for (int i = 0; i < FMA_CHAINS; i++) a[i] = _mm256_set1_ps((float)i);
    double t = seconds();
    for (int r = 0; r < FMA_ROUNDS; r++)
#pragma GCC unroll 16
        for (int i = 0; i < FMA_CHAINS; i++) a[i] = _mm256_fmadd_ps(a[i], b, c);
    t = seconds() - t;
    float lanes[8];
    for (int i = 0; i < FMA_CHAINS; i++) {
        _mm256_storeu_ps(lanes, a[i]);
        *sink += lanes[0];
    }
    return t;
}
#endif

static double fma512_gain = 1.0;
static pthread_once_t fma512_once = PTHREAD_ONCE_INIT;

static void time_fma512(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx2") ||
        !__builtin_cpu_supports("fma"))
        return;
    volatile float sink = 0.0f;
    double t512 = 1e9, t256 = 1e9;
    for (int r = 0; r < 5; r++) {
        double a = fma_seconds512(&sink), b = fma_seconds256(&sink);
        t512 = a < t512 ? a : t512;
        t256 = b < t256 ? b : t256;
    }
    /* twice the lanes in the time each width took */
    if (t512 > 0.0) fma512_gain = 2.0 * t256 / t512;
#endif
}

double cpu_fma512_gain(void)
{
    pthread_once(&fma512_once, time_fma512);
    return fma512_gain;
}
