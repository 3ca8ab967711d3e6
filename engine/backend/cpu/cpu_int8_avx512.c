/* The AVX-512 VNNI int8 kernel (cpu_ops.h states what it computes). vpdpbusd multiplies
 * unsigned by signed bytes and adds each group of four into an int32 lane without
 * saturation. Activations are signed, so the kernel flips their sign bit (x ^ 0x80 read as
 * u8 is x + 128) and takes the shift back out per channel with the weight row sums:
 *   sum_k (x_k + 128) w_k - 128 * sum_k w_k = sum_k x_k w_k      (docs/quantization.md §2)
 * Compiled for AVX-512 by function attribute; cpu_int8.c calls it only when the CPU has
 * AVX-512 F, BW and VNNI. */
#include "backend/cpu/cpu_ops.h"

#include <immintrin.h>
#include <stdint.h>

#define VNNI __attribute__((target("avx512f,avx512bw,avx512vnni")))

/* Four accumulators into one vector whose 128-bit lane l holds, in order, the sums of lane l
 * of a[0], a[1], a[2], a[3]. */
VNNI static inline __m512i sum4_lanes(const __m512i *a)
{
    __m512i t0 =
        _mm512_add_epi32(_mm512_unpacklo_epi32(a[0], a[1]), _mm512_unpackhi_epi32(a[0], a[1]));
    __m512i t1 =
        _mm512_add_epi32(_mm512_unpacklo_epi32(a[2], a[3]), _mm512_unpackhi_epi32(a[2], a[3]));
    return _mm512_add_epi32(_mm512_unpacklo_epi64(t0, t1), _mm512_unpackhi_epi64(t0, t1));
}

/* The 16 sums of a[0..16) as one vector: lane i = sum of a[i]. */
VNNI static inline __m512i sum16(const __m512i a[16])
{
    __m512i v0 = sum4_lanes(a), v1 = sum4_lanes(a + 4);
    __m512i v2 = sum4_lanes(a + 8), v3 = sum4_lanes(a + 12);
    /* transpose the 128-bit lanes of v0..v3 and add, so lane g sums v_g's four lanes */
    __m512i s0 =
        _mm512_add_epi32(_mm512_shuffle_i32x4(v0, v1, 0x44), _mm512_shuffle_i32x4(v0, v1, 0xee));
    __m512i s1 =
        _mm512_add_epi32(_mm512_shuffle_i32x4(v2, v3, 0x44), _mm512_shuffle_i32x4(v2, v3, 0xee));
    return _mm512_add_epi32(_mm512_shuffle_i32x4(s0, s1, 0x88), _mm512_shuffle_i32x4(s0, s1, 0xdd));
}

/* Rows ahead whose cache lines a block of 16 channels asks for while it computes: the block
 * two on (the last blocks name addresses past the matrix's end: a prefetch never faults) */
#define PREFETCH_ROWS 32

VNNI void cpu_int8_dots_avx512_vnni(int32_t *acc, int ldc, const int8_t *xq, int M,
                                    const int8_t *wq, const int32_t *wsum, int N, int ld)
{
    const __m512i flip = _mm512_set1_epi8((char)0x80);
    int j = 0;
    for (; j + 16 <= N; j += 16) {
        const int8_t *w = wq + (size_t)j * ld;
        __m512i shift = _mm512_slli_epi32(_mm512_loadu_si512(wsum + j), 7);
        /* the block's 16 * ld / 64 lines spread over its M * ld / 64 k-steps, so that the
         * loads reach memory a few at a time while the products run (asked for all at once,
         * most were dropped; left to the hardware, the block's first row waited for each) */
        uintptr_t pf = (uintptr_t)w + (uintptr_t)PREFETCH_ROWS * ld,
                  pf_end = pf + 16 * (uintptr_t)ld;
        int per = (16 + M - 1) / M;
        for (int m = 0; m < M; m++) {
            const int8_t *x = xq + (size_t)m * ld;
            __m512i a[16];
#pragma GCC unroll 16
            for (int i = 0; i < 16; i++) a[i] = _mm512_setzero_si512();
            for (int k = 0; k < ld; k += 64) {
                for (int c = 0; c < per && pf < pf_end; c++, pf += 64)
                    _mm_prefetch((const char *)pf, _MM_HINT_T0);
                __m512i xu = _mm512_xor_si512(_mm512_loadu_si512(x + k), flip);
#pragma GCC unroll 16
                for (int i = 0; i < 16; i++)
                    a[i] =
                        _mm512_dpbusd_epi32(a[i], xu, _mm512_loadu_si512(w + (size_t)i * ld + k));
            }
            _mm512_storeu_si512(acc + (size_t)m * ldc + j, _mm512_sub_epi32(sum16(a), shift));
        }
    }
    for (; j < N; j++) {
        const int8_t *w = wq + (size_t)j * ld;
        for (int m = 0; m < M; m++) {
            const int8_t *x = xq + (size_t)m * ld;
            __m512i a = _mm512_setzero_si512();
            for (int k = 0; k < ld; k += 64)
                a = _mm512_dpbusd_epi32(a, _mm512_xor_si512(_mm512_loadu_si512(x + k), flip),
                                        _mm512_loadu_si512(w + k));
            acc[(size_t)m * ldc + j] = _mm512_reduce_add_epi32(a) - 128 * wsum[j];
        }
    }
}
