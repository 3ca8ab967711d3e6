/* y (M, N) = x (M, K) w (N, K)^T for the few rows a decoding step has (M <= CPU_ROWS_MAX_M):
 * every linear layer's x W^T at batch 1 to 16 (docs/decoding.md §9).
 *
 * OpenBLAS's sgemm first copies w into its packed layout, so for few rows it reads the weights
 * twice and spends most of a step packing them; its sgemv reads them once but one output at a
 * time. Here each weight row is read once, straight from w: a tile of rows of x by rows of w
 * (2 x 8 or 4 x 4) keeps 16 dot products running in 16 AVX-512 registers along K,
 * and the 16 sums are folded into one register at the end (4 shuffle-and-add rounds instead of
 * 16 horizontal sums).
 * Threads split the rows of w when the product is big enough to pay for a fork. The sums run
 * in another order than OpenBLAS's, so results agree to float rounding (tests/unit/
 * test_backend.c compares both with naive_gemm). */
#include "backend/cpu/cpu_ops.h"

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>

/* w rows per unit of work handed to a thread (a multiple of every tile height) */
#define BLOCK_N 16
/* Where the kernel is the faster one (timed against OpenBLAS 0.3.21 on a Sapphire Rapids core):
 * with fewer than 64 columns of K or rows of w, OpenBLAS's packing costs little and the
 * kernel's fold and tails weigh more; for one row of x, OpenBLAS's sgemv reads the weights
 * once too, and keeps up with it. */
#define MIN_K 64
#define MIN_N 64
/* below this many multiply-adds one thread is faster than a fork/join */
#define PARALLEL_MIN_MACS ((size_t)1 << 18)

/* The 16 lanes of r: the 16 accumulators' sums, lane n*4+m for x row m and w row n. */
__attribute__((target("avx512f"))) static inline __m512 fold16(const __m512 *acc)
{
    __m512 r1[8], r2[4], r3[2];
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++)
        r1[i] = _mm512_add_ps(_mm512_shuffle_f32x4(acc[2 * i], acc[2 * i + 1], 0x44),
                              _mm512_shuffle_f32x4(acc[2 * i], acc[2 * i + 1], 0xEE));
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++)
        r2[i] = _mm512_add_ps(_mm512_shuffle_f32x4(r1[2 * i], r1[2 * i + 1], 0x88),
                              _mm512_shuffle_f32x4(r1[2 * i], r1[2 * i + 1], 0xDD));
#pragma GCC unroll 2
    for (int i = 0; i < 2; i++)
        r3[i] = _mm512_add_ps(_mm512_shuffle_ps(r2[2 * i], r2[2 * i + 1], 0x44),
                              _mm512_shuffle_ps(r2[2 * i], r2[2 * i + 1], 0xEE));
    return _mm512_add_ps(_mm512_shuffle_ps(r3[0], r3[1], 0x88),
                         _mm512_shuffle_ps(r3[0], r3[1], 0xDD));
}

/* Rows n0..n1-1 of y^T in tiles of MT x rows by NT w rows (MT * NT = 16); a short last tile
 * repeats its last row and drops what it computed twice. Inlined with constant MT and NT, so
 * the tile's loops unroll and its 16 accumulators live in registers. */
__attribute__((target("avx512f"), always_inline)) static inline void
rows_tiles(int MT, int NT, int M, int n0, int n1, int K, float alpha, const float *x, int ldx,
           const float *w, int ldw, float *y, int ldy)
{
    __mmask16 tail = (__mmask16)((1u << (K % 16)) - 1);
    int Kv = K - K % 16;
    for (int n = n0; n < n1; n += NT) {
        const float *wr[16];
#pragma GCC unroll 16
        for (int j = 0; j < NT; j++) wr[j] = w + (size_t)(n + j < n1 ? n + j : n1 - 1) * ldw;
        for (int m = 0; m < M; m += MT) {
            const float *xr[4];
#pragma GCC unroll 4
            for (int i = 0; i < MT; i++) xr[i] = x + (size_t)(m + i < M ? m + i : M - 1) * ldx;
            __m512 acc[16];
#pragma GCC unroll 16
            for (int i = 0; i < 16; i++) acc[i] = _mm512_setzero_ps();
            for (int k = 0; k < K; k += 16) {
                __mmask16 keep = k < Kv ? (__mmask16)0xFFFF : tail;
                __m512 xv[4], wv[16];
#pragma GCC unroll 4
                for (int i = 0; i < MT; i++) xv[i] = _mm512_maskz_loadu_ps(keep, xr[i] + k);
#pragma GCC unroll 16
                for (int j = 0; j < NT; j++) wv[j] = _mm512_maskz_loadu_ps(keep, wr[j] + k);
#pragma GCC unroll 4
                for (int i = 0; i < MT; i++)
#pragma GCC unroll 16
                    for (int j = 0; j < NT; j++)
                        acc[i * NT + j] = _mm512_fmadd_ps(xv[i], wv[j], acc[i * NT + j]);
            }
            /* fold16 leaves accumulator a in lane (a % 4) * 4 + a / 4 */
            float sums[16];
            _mm512_storeu_ps(sums, _mm512_mul_ps(fold16(acc), _mm512_set1_ps(alpha)));
            for (int i = 0; i < MT && m + i < M; i++)
                for (int j = 0; j < NT && n + j < n1; j++) {
                    int a = i * NT + j;
                    y[(size_t)(m + i) * ldy + n + j] = sums[(a % 4) * 4 + a / 4];
                }
        }
    }
}

/* The tile for M rows: 2 x rows by 8 w rows, or 4 by 4 (each weight load then feeds 4
 * multiply-adds). */
__attribute__((target("avx512f"))) static void rows_block(int M, int n0, int n1, int K,
                                                         float alpha, const float *x, int ldx,
                                                         const float *w, int ldw, float *y,
                                                         int ldy)
{
    if (M < 4) rows_tiles(2, 8, M, n0, n1, K, alpha, x, ldx, w, ldw, y, ldy);
    else rows_tiles(4, 4, M, n0, n1, K, alpha, x, ldx, w, ldw, y, ldy);
}

int cpu_gemm_rows(int M, int N, int K, float alpha, const float *x, int ldx, const float *w,
                  int ldw, float *y, int ldy)
{
    if (M < 2 || M > CPU_ROWS_MAX_M || N < MIN_N || K < MIN_K || !__builtin_cpu_supports("avx512f"))
        return 0;
    int blocks = (N + BLOCK_N - 1) / BLOCK_N;
    int parallel = (size_t)M * N * K >= PARALLEL_MIN_MACS;
#pragma omp parallel for schedule(static) if (parallel)
    for (int t = 0; t < blocks; t++) {
        int n0 = t * BLOCK_N, n1 = n0 + BLOCK_N < N ? n0 + BLOCK_N : N;
        rows_block(M, n0, n1, K, alpha, x, ldx, w, ldw, y, ldy);
    }
    return 1;
}
#else
int cpu_gemm_rows(int M, int N, int K, float alpha, const float *x, int ldx, const float *w,
                  int ldw, float *y, int ldy)
{
    (void)M, (void)N, (void)K, (void)alpha, (void)x, (void)ldx, (void)w, (void)ldw, (void)y;
    (void)ldy;
    return 0;
}
#endif
