/* The AVX2 int8 kernel (cpu_ops.h states what it computes). AVX2 multiplies bytes only as
 * u8 x s8 with 16-bit saturating pair sums (vpmaddubsw), so each product is taken as
 * |x| * (w * sign x): with both in [-127, 127] a pair sums to at most 2 * 127 * 127 = 32258,
 * which never saturates, and the int32 result is exact (docs/quantization.md §2).
 * Compiled for AVX2 by function attribute; cpu_int8.c calls it only when the CPU has AVX2. */
#include "backend/cpu/cpu_ops.h"

#include <immintrin.h>
#include <stdint.h>

#define AVX2 __attribute__((target("avx2")))

/* one 32-byte step of a row against a channel: acc += pair sums of x * w */
AVX2 static inline __m256i dot_step(__m256i acc, __m256i ax, __m256i x, __m256i w)
{
    __m256i p16 = _mm256_maddubs_epi16(ax, _mm256_sign_epi8(w, x));
    return _mm256_add_epi32(acc, _mm256_madd_epi16(p16, _mm256_set1_epi16(1)));
}

/* The 8 lane sums of each of a[0..8) as one vector: lane i = sum of a[i]. */
AVX2 static inline __m256i sum8(const __m256i a[8])
{
    __m256i t0 = _mm256_hadd_epi32(a[0], a[1]), t1 = _mm256_hadd_epi32(a[2], a[3]);
    __m256i t2 = _mm256_hadd_epi32(a[4], a[5]), t3 = _mm256_hadd_epi32(a[6], a[7]);
    t0 = _mm256_hadd_epi32(t0, t1);
    t2 = _mm256_hadd_epi32(t2, t3);
    return _mm256_add_epi32(_mm256_permute2x128_si256(t0, t2, 0x20),
                            _mm256_permute2x128_si256(t0, t2, 0x31));
}

/* Rows ahead whose cache lines a block of 8 channels asks for while it computes (as
 * cpu_int8_avx512.c: two blocks on, spread over the block's k-steps) */
#define PREFETCH_ROWS 16

AVX2 void cpu_int8_dots_avx2(int32_t *acc, int ldc, const int8_t *xq, int M, const int8_t *wq,
                             const int32_t *wsum, int N, int ld)
{
    (void)wsum;
    int j = 0;
    for (; j + 8 <= N; j += 8) {
        const int8_t *w = wq + (size_t)j * ld;
        /* 8 * ld / 64 lines over M * ld / 32 k-steps */
        uintptr_t pf = (uintptr_t)w + (uintptr_t)PREFETCH_ROWS * ld,
                  pf_end = pf + 8 * (uintptr_t)ld;
        int per = (4 + M - 1) / M;
        for (int m = 0; m < M; m++) {
            const int8_t *x = xq + (size_t)m * ld;
            __m256i a[8];
#pragma GCC unroll 8
            for (int i = 0; i < 8; i++) a[i] = _mm256_setzero_si256();
            for (int k = 0; k < ld; k += 32) {
                for (int c = 0; c < per && pf < pf_end; c++, pf += 64)
                    _mm_prefetch((const char *)pf, _MM_HINT_T0);
                __m256i xv = _mm256_loadu_si256((const __m256i *)(x + k));
                __m256i ax = _mm256_abs_epi8(xv);
#pragma GCC unroll 8
                for (int i = 0; i < 8; i++)
                    a[i] = dot_step(a[i], ax, xv,
                                    _mm256_loadu_si256((const __m256i *)(w + (size_t)i * ld + k)));
            }
            _mm256_storeu_si256((__m256i *)(acc + (size_t)m * ldc + j), sum8(a));
        }
    }
    for (; j < N; j++) {
        const int8_t *w = wq + (size_t)j * ld;
        for (int m = 0; m < M; m++) {
            const int8_t *x = xq + (size_t)m * ld;
            __m256i a = _mm256_setzero_si256();
            for (int k = 0; k < ld; k += 32) {
                __m256i xv = _mm256_loadu_si256((const __m256i *)(x + k));
                a = dot_step(a, _mm256_abs_epi8(xv), xv,
                             _mm256_loadu_si256((const __m256i *)(w + k)));
            }
            __m128i s = _mm_add_epi32(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1));
            s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
            s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
            acc[(size_t)m * ldc + j] = _mm_cvtsi128_si32(s);
        }
    }
}
