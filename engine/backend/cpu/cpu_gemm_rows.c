/* y (M, N) = x (M, K) w (N, K)^T for the few rows a decoding step or a short prompt has (up
 * to 128 rows with AVX-512, 39 with AVX2: rows_max_m): every linear layer's x W^T at batch 1
 * to 16 and a sentence's prefill (docs/decoding.md §9).
 *
 * OpenBLAS's sgemm first copies w into its packed layout, so for few rows it reads the weights
 * twice and spends most of a step packing them; its sgemv reads them once but one output at a
 * time. Here each weight row is read once, straight from w, by one of two kernels picked at
 * run time:
 *   AVX-512: one row of x reads the weight rows one after the other, in memory order; more rows
 *     take a tile of rows of x by rows of w (2 x 8 or 4 x 4) that keeps 16 dot products running
 *     in 16 registers along K, and the 16 sums are folded into one register at the
 * end (4 shuffle-and-add rounds instead of 16 horizontal sums); AVX2 + FMA: one row of x streams
 * the weight rows as with AVX-512, and more take a tile of 2 or 3 rows of x by 4 rows of w that
 * keeps up to 12 dot products in 12 of the 16 registers, each weight vector feeding 3
 * multiply-adds; each x row's 4 sums are folded by two horizontal-add rounds. The tiles ask for the
 * weight rows PREFETCH_ROWS ahead a cache line at a time while they compute, so that a matrix that
 * comes from memory (the vocabulary projection) streams in while the products run. Threads split
 * the rows of w, in runs of whole blocks taken from the pool (cpu_pool.h), when the product is big
 * enough to pay for it (cpu_par.h); a smaller one runs on the calling thread. The sums run in
 * another order than OpenBLAS's, so results agree to float rounding (tests/unit/test_backend_gemm.c
 * compares every kernel this CPU runs with naive_gemm). */
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/cpu_par.h"
#include "backend/cpu/cpu_pool.h"

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>

/* w rows per unit of work handed to a thread (a multiple of every tile height) */
#define BLOCK_N 16
/* Where the tiles are the faster ones (timed against OpenBLAS 0.3.21 on a Sapphire Rapids core):
 * with fewer than 64 columns of K or rows of w, OpenBLAS's packing costs little and the
 * kernel's fold and tails weigh more. One row takes the kernel at every size (row_dots has no
 * fold): a Mamba step's x_proj parts (48 and 16 rows) and dt_proj (K 48) then read their
 * weights there too, and the fused step can share them out by rows (cpu_mamba_step.c). */
#define MIN_K 64
#define MIN_N 64
/* From this many rows on, the AVX-512 kernel copies each 32 weight rows into two panels as it
 * reads them and runs the panel kernel's tiles on them (cpu_panels_stream; docs/decoding.md §9.5).
 * A 4 x 4 tile loads 8 vectors for 16 multiply-adds and reloads its x rows from the L2 cache for
 * every 4 weight rows; a panel tile of 11 rows loads 2 vectors and broadcasts 11 floats for 22.
 * One thread, GFLOP/s, weights from memory (16 copies, best of 5), 4 x 4 tiles / panels made as
 * they stream (the panels forced at every row count, before their blocks of k: cpu_panel_tiles.c
 * STREAM_KC) / OpenBLAS: 4 x 3072 x 768 22.8 / 18.3, 8 rows 33.4 / 35.0, 12 rows 42.1 / 50.2,
 * 32 rows 65.0 / 77.4, 48 rows - / 110 / 68, 128 rows - / 123 / 106; 32 x 768 x 1536 62 / 81;
 * in cache, 32 x 256 x 768 87-90 / 122-126. */
#define STREAM_MIN_M 8
/* One row of x takes the AVX-512 kernel (row_dots) at every size: it streams a matrix from
 * memory as fast as OpenBLAS's sgemv and runs faster in cache (below), and it keeps a step's
 * small products off OpenBLAS's threads, which fork a team for every product from 9,216
 * weights on (cpu_par.h). With AVX2 only, one row streams the weights the same way
 * (row_dots_avx2; the AVX2 tile's 4 w rows for it had been slower than sgemv: 244 against 216 us
 * a transformer-small step's products). */
/* below this many multiply-adds one thread is faster than a fork/join. 2^15: at two threads
 * every product of a batch-1 transformer-small step forks (192 x 192 and up), as OpenBLAS's
 * sgemv did; a team forked again within libgomp's spin (GOMP_SPINCOUNT, docs/decoding.md §9.1)
 * finds its threads awake, and the step's 19 products took 99-103 us at 2^15 and 2^16, 117 at
 * 2^17 and 129-249 at 2^18 (only the 8000 x 192 projection forking), against 197 at one thread
 * (quietest of 400 runs each, 2-vCPU EPYC). */
#define PARALLEL_MIN_MACS ((size_t)1 << 15)
/* w rows ahead whose cache lines a block asks for while it computes, spread over its x tiles
 * and k-steps (left to the hardware prefetchers, a matrix larger than the caches ran at about
 * two thirds of the speed; asked for all at once, most requests were dropped) */
#define PREFETCH_ROWS 16

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

/* One k-step of a tile: 16 k (those `keep` selects) of MT x rows by NT w rows into acc */
__attribute__((target("avx512f"), always_inline)) static inline void
rows_step(int MT, int NT, __m512 *acc, const float *const *xr, const float *const *wr, int k,
          __mmask16 keep)
{
    __m512 xv[4], wv[16];
    if (keep == 0xFFFF) {
#pragma GCC unroll 4
        for (int i = 0; i < MT; i++) xv[i] = _mm512_loadu_ps(xr[i] + k);
#pragma GCC unroll 16
        for (int j = 0; j < NT; j++) wv[j] = _mm512_loadu_ps(wr[j] + k);
    } else {
#pragma GCC unroll 4
        for (int i = 0; i < MT; i++) xv[i] = _mm512_maskz_loadu_ps(keep, xr[i] + k);
#pragma GCC unroll 16
        for (int j = 0; j < NT; j++) wv[j] = _mm512_maskz_loadu_ps(keep, wr[j] + k);
    }
#pragma GCC unroll 4
    for (int i = 0; i < MT; i++)
#pragma GCC unroll 16
        for (int j = 0; j < NT; j++)
            acc[i * NT + j] = _mm512_fmadd_ps(xv[i], wv[j], acc[i * NT + j]);
}

/* Rows n0..n1-1 of y^T in tiles of MT x rows by NT w rows (MT * NT = 16); a short last tile
 * repeats its last row and drops what it computed twice. Inlined with constant MT and NT, so
 * the tile's loops unroll and its 16 accumulators live in registers. */
__attribute__((target("avx512f"), always_inline)) static inline void
rows_tiles(int MT, int NT, int M, int n0, int n1, int N, int K, float alpha, const float *x,
           int ldx, const float *w, int ldw, float *y, int ldy)
{
    __mmask16 tail = (__mmask16)((1u << (K % 16)) - 1);
    int Kv = K - K % 16;
    for (int n = n0; n < n1; n += NT) {
        const float *wr[16], *pf[16];
#pragma GCC unroll 16
        for (int j = 0; j < NT; j++) {
            wr[j] = w + (size_t)(n + j < n1 ? n + j : n1 - 1) * ldw;
            int ahead = n + PREFETCH_ROWS + j;
            pf[j] = w + (size_t)(ahead < N ? ahead : N - 1) * ldw;
        }
        int tiles = (M + MT - 1) / MT, per = (NT + tiles - 1) / tiles;
        for (int m = 0; m < M; m += MT) {
            int pf0 = m / MT * per, pf1 = pf0 + per < NT ? pf0 + per : NT;
            const float *xr[4];
#pragma GCC unroll 4
            for (int i = 0; i < MT; i++) xr[i] = x + (size_t)(m + i < M ? m + i : M - 1) * ldx;
            __m512 acc[16];
#pragma GCC unroll 16
            for (int i = 0; i < 16; i++) acc[i] = _mm512_setzero_ps();
            /* whole k-steps unmasked (with a mask on every step, a masked load each and the
             * mask worked out each step, the 4 x 4 tile ran 32 x 256 x 768 at 70 GFLOP/s
             * instead of 83), then the tail */
            for (int k = 0; k < Kv; k += 16) {
                /* x tile t asks for this k-step's cache line of rows t * per .. of the block
                 * PREFETCH_ROWS on */
                for (int j = pf0; j < pf1; j++)
                    _mm_prefetch((const char *)(pf[j] + k), _MM_HINT_T0);
                rows_step(MT, NT, acc, xr, wr, k, 0xFFFF);
            }
            if (Kv < K) rows_step(MT, NT, acc, xr, wr, Kv, tail);
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

/* floats ahead that each stream of the one-row kernel asks for (row_dots) */
#define ROW_AHEAD 256

/* Row n of w against x into *y, its sums in a fixed order: 4 accumulators of 16 k, 64 k a
 * step, a masked tail into the first, one horizontal sum. ROWS (1 or 2) rows at once, the
 * second `apart` rows on, each summed exactly as alone. */
__attribute__((target("avx512f"), always_inline)) static inline void
row_dot(int ROWS, int K, float alpha, const float *x, const float *w, size_t apart, float *y,
        size_t y_apart)
{
    int K64 = K - K % 64;
    __m512 a[2][4];
#pragma GCC unroll 2
    for (int r = 0; r < ROWS; r++)
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++) a[r][j] = _mm512_setzero_ps();
    for (int k = 0; k < K64; k += 64) {
#pragma GCC unroll 2
        for (int r = 0; r < ROWS; r++) {
            const char *ahead = (const char *)(w + r * apart + k + ROW_AHEAD);
            _mm_prefetch(ahead, _MM_HINT_T0);
            _mm_prefetch(ahead + 64, _MM_HINT_T0);
            _mm_prefetch(ahead + 128, _MM_HINT_T0);
            _mm_prefetch(ahead + 192, _MM_HINT_T0);
        }
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++) {
            __m512 xv = _mm512_loadu_ps(x + k + 16 * j);
#pragma GCC unroll 2
            for (int r = 0; r < ROWS; r++)
                a[r][j] = _mm512_fmadd_ps(xv, _mm512_loadu_ps(w + r * apart + k + 16 * j), a[r][j]);
        }
    }
    for (int k = K64; k < K; k += 16) {
        __mmask16 keep = K - k >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (K - k)) - 1);
        __m512 xv = _mm512_maskz_loadu_ps(keep, x + k);
#pragma GCC unroll 2
        for (int r = 0; r < ROWS; r++)
            a[r][0] = _mm512_fmadd_ps(xv, _mm512_maskz_loadu_ps(keep, w + r * apart + k), a[r][0]);
    }
#pragma GCC unroll 2
    for (int r = 0; r < ROWS; r++) {
        __m512 sum =
            _mm512_add_ps(_mm512_add_ps(a[r][0], a[r][1]), _mm512_add_ps(a[r][2], a[r][3]));
        y[r * y_apart] = alpha * _mm512_reduce_add_ps(sum);
    }
}

/* One row of x: rows n0..n1-1 of w, each whole in memory order, as two streams: the first half
 * of the rows beside the second (row n with row n + half), an odd last row alone. Every row's
 * sums are those of row_dot alone, so the pairing changes no float.
 * One stream had been the fastest on the 2-vCPU EPYC (Zen 4), whose prefetchers follow one
 * stream best: against the 1 x 8 tile that rows_tiles ran (8 streams, lines requested
 * PREFETCH_ROWS ahead), one thread, best of 7, the matrix from memory (copies beyond the L3
 * cache) 50280 x 768 9.4 -> 6.9 ms (16.4 -> 22.3 GB/s), 58101 x 512 8.3 -> 5.2 ms, 8000 x 192
 * 0.60 -> 0.24 ms, and in cache 8000 x 192 0.127 -> 0.064 ms, 3072 x 768 0.228 -> 0.103 ms; as
 * fast as OpenBLAS's sgemv (Cooperlake kernels), 6.3-6.4 ms at 50280 x 768, and a plain read of
 * memory, 21-22 GB/s; two adjacent rows at once halved the speed again. On the 2-vCPU Xeon
 * (Sapphire Rapids class; weights on huge pages, cpu_memory.c) two streams far apart are the
 * faster (`make bench-rows`, one row, GFLOP/s one stream / two: 50280 x 768 from memory 6.9-7.1 /
 * 8.1-8.3 at one thread and 13.4-14.2 / 15.6-16.1 at two, 58101 x 512 6.9 / 8.5, 3072 x 768 over
 * 40 copies 7.0 / 8.1, in cache 192 x 192 46.7 / 60.8), as fast as the panel kernel reading its
 * own copy (7.7-8.0); two adjacent rows gained nothing there, three streams as much as two, four
 * less.
 * Each step asks for each stream's lines ROW_AHEAD floats (1 KiB) on, into the next row at a
 * row's end: on that Xeon, one thread, `mtlab bench --peer-inputs` three interleaved rounds,
 * Marian base at batch 1 went from 65.8 to 72.2 tokens/s and mamba-130m from 24.0 to 26.7 (with
 * the huge pages); 2 KiB ahead ran as fast, 512 B and 4 KiB slower, and asking for L2 only (T1)
 * or non-temporally (NTA) lost 5% and 45%. */
__attribute__((target("avx512f"))) static void
row_dots(int n0, int n1, int K, float alpha, const float *x, const float *w, int ldw, float *y)
{
    int half = (n1 - n0) / 2;
    for (int n = n0; n < n0 + half; n++)
        row_dot(2, K, alpha, x, w + (size_t)n * ldw, (size_t)half * ldw, y + n, (size_t)half);
    if ((n1 - n0) % 2) row_dot(1, K, alpha, x, w + (size_t)(n1 - 1) * ldw, 0, y + n1 - 1, 0);
}

/* The kernel for M rows: one row of x streams the weights in memory order (row_dots); 2-3
 * rows take tiles of 2 x rows by 8 w rows, 4 to 7 4 by 4 (each weight load then feeds 4
 * multiply-adds), asking for the rows' lines PREFETCH_ROWS ahead (a line requested for each
 * line read): left to the streams and the hardware prefetchers, a step's products over more
 * weights than the L3 cache keeps (mamba-small's 12 layers and 8000 x 192 projection, 17.7
 * MB, on the 2-vCPU EPYC) ran at about 1.4 times the time. */
__attribute__((target("avx512f"))) static void rows_block(int M, int n0, int n1, int N, int K,
                                                          float alpha, const float *x, int ldx,
                                                          const float *w, int ldw, float *y,
                                                          int ldy)
{
    if (M == 1) {
        row_dots(n0, n1, K, alpha, x, w, ldw, y);
        return;
    }
    if (M >= STREAM_MIN_M) {
        cpu_panels_stream(M, n0, n1, K, alpha, x, ldx, w, ldw, y, ldy);
        return;
    }
    /* whole tiles of 4 rows, then the last 1 to 3 rows by 2 x 8 tiles, whose sums run in the
     * same order (k-steps of 16, fold16), so every output is the float a 4 x 4 tile gives (a
     * 4 x 4 tile for them repeated a row up to 3 times: 33 rows cost 36). Both passes take
     * BLOCK_N w rows at a time, so the second finds them in cache. */
    int M4 = M < 4 ? 0 : M - M % 4;
    if (M4 == M) {
        rows_tiles(4, 4, M, n0, n1, N, K, alpha, x, ldx, w, ldw, y, ldy);
        return;
    }
    for (int b0 = n0; b0 < n1; b0 += BLOCK_N) {
        int b1 = b0 + BLOCK_N < n1 ? b0 + BLOCK_N : n1;
        if (M4) rows_tiles(4, 4, M4, b0, b1, N, K, alpha, x, ldx, w, ldw, y, ldy);
        rows_tiles(2, 8, M - M4, b0, b1, N, K, alpha, x + (size_t)M4 * ldx, ldx, w, ldw,
                   y + (size_t)M4 * ldy, ldy);
    }
}

/* ---- AVX2 + FMA */
#define AVX2 __attribute__((target("avx2,fma")))

/* The 4 lane sums of a[0..4) as one 128-bit vector: lane j = sum of a[j]. */
AVX2 static inline __m128 fold4(__m256 a0, __m256 a1, __m256 a2, __m256 a3)
{
    __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));
    return _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
}

/* MT (2 or 3) rows of x from m against w rows n .. n + 3 (a short tile repeats row n1 - 1 and
 * drops what it computed twice). Inlined with constant MT so the 4 * MT accumulators live in
 * registers. */
__attribute__((target("avx2,fma"), always_inline)) static inline void
rows_tile8(int MT, int m, int n, int n1, int K, float alpha, const float *x, int ldx,
           const float *w, int ldw, float *y, int ldy, const float *const *pf, int npf)
{
    const float *wr[4], *xr[3];
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++) wr[j] = w + (size_t)(n + j < n1 ? n + j : n1 - 1) * ldw;
#pragma GCC unroll 3
    for (int i = 0; i < MT; i++) xr[i] = x + (size_t)(m + i) * ldx;
    __m256 acc[3][4];
#pragma GCC unroll 3
    for (int i = 0; i < MT; i++)
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++) acc[i][j] = _mm256_setzero_ps();
    int Kv = K - K % 8;
    for (int k = 0; k < Kv; k += 8) {
        /* this tile's share of the rows ahead, a 64-byte line every other step */
        if (!(k & 15))
            for (int j = 0; j < npf; j++) _mm_prefetch((const char *)(pf[j] + k), _MM_HINT_T0);
        __m256 xv[3];
#pragma GCC unroll 3
        for (int i = 0; i < MT; i++) xv[i] = _mm256_loadu_ps(xr[i] + k);
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++) {
            __m256 wv = _mm256_loadu_ps(wr[j] + k);
#pragma GCC unroll 3
            for (int i = 0; i < MT; i++) acc[i][j] = _mm256_fmadd_ps(xv[i], wv, acc[i][j]);
        }
    }
    if (Kv < K) {
        /* lanes below K % 8 load, the rest read as 0 */
        __m256i keep = _mm256_cmpgt_epi32(_mm256_set1_epi32(K - Kv),
                                          _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
        __m256 xv[3];
#pragma GCC unroll 3
        for (int i = 0; i < MT; i++) xv[i] = _mm256_maskload_ps(xr[i] + Kv, keep);
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++) {
            __m256 wv = _mm256_maskload_ps(wr[j] + Kv, keep);
#pragma GCC unroll 3
            for (int i = 0; i < MT; i++) acc[i][j] = _mm256_fmadd_ps(xv[i], wv, acc[i][j]);
        }
    }
#pragma GCC unroll 3
    for (int i = 0; i < MT; i++) {
        float sums[4];
        _mm_storeu_ps(sums, _mm_mul_ps(fold4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]),
                                       _mm_set1_ps(alpha)));
        for (int j = 0; j < 4 && n + j < n1; j++) y[(size_t)(m + i) * ldy + n + j] = sums[j];
    }
}

/* One row of x, as row_dots: rows n0..n1-1 of w in memory order, each whole before the next, 8
 * accumulators of 8 k (64 k a step), a masked tail and one horizontal sum a row. On the AVX2
 * EPYC (Zen 3, 2 vCPUs), whole greedy decodes at batch 1 (20 sources x 64 tokens, median of 5
 * interleaved runs) against OpenBLAS's sgemv (Zen kernels), which took one row before: mamba-small
 * 1.22x the tokens/s at one thread and 1.42x at two, transformer-small 1.30x and 1.15x; weight
 * rows two or four at a time (sharing each x load, 8 accumulators) gained less at every point
 * (0.97-1.30x and 1.09-1.23x). */
AVX2 static void row_dots_avx2(int n0, int n1, int K, float alpha, const float *x, const float *w,
                               int ldw, float *y)
{
    int K64 = K - K % 64, Kv = K - K % 8;
    __m256i keep =
        _mm256_cmpgt_epi32(_mm256_set1_epi32(K - Kv), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    for (int n = n0; n < n1; n++) {
        const float *wr = w + (size_t)n * ldw;
        __m256 acc[8];
#pragma GCC unroll 8
        for (int j = 0; j < 8; j++) acc[j] = _mm256_setzero_ps();
        for (int k = 0; k < K64; k += 64)
#pragma GCC unroll 8
            for (int j = 0; j < 8; j++)
                acc[j] = _mm256_fmadd_ps(_mm256_loadu_ps(x + k + 8 * j),
                                         _mm256_loadu_ps(wr + k + 8 * j), acc[j]);
        for (int k = K64; k < Kv; k += 8)
            acc[0] = _mm256_fmadd_ps(_mm256_loadu_ps(x + k), _mm256_loadu_ps(wr + k), acc[0]);
        if (Kv < K)
            acc[1] = _mm256_fmadd_ps(_mm256_maskload_ps(x + Kv, keep),
                                     _mm256_maskload_ps(wr + Kv, keep), acc[1]);
        __m256 s0 = _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3]));
        __m256 s1 = _mm256_add_ps(_mm256_add_ps(acc[4], acc[5]), _mm256_add_ps(acc[6], acc[7]));
        __m256 sum = _mm256_add_ps(s0, s1);
        __m128 h = _mm_add_ps(_mm256_castps256_ps128(sum), _mm256_extractf128_ps(sum, 1));
        h = _mm_add_ps(h, _mm_movehl_ps(h, h));
        h = _mm_add_ss(h, _mm_movehdup_ps(h));
        y[n] = alpha * _mm_cvtss_f32(h);
    }
}

/* x rows of the next tile with `left` rows (2 or more) to go: 3 at a time, the last 2 to 4 as 2
 * or 2 + 2 */
static inline int avx2_tile_rows(int left) { return left > 4 || left == 3 ? 3 : 2; }

/* Rows n0..n1-1 of y^T by avx2_tile_rows tiles. The tiles of one block of 4 w rows share out
 * the prefetches of the block PREFETCH_ROWS on. */
AVX2 static void rows_block_avx2(int M, int n0, int n1, int N, int K, float alpha, const float *x,
                                 int ldx, const float *w, int ldw, float *y, int ldy)
{
    if (M == 1) {
        row_dots_avx2(n0, n1, K, alpha, x, w, ldw, y);
        return;
    }
    int tiles = 0;
    for (int m = 0; m < M; m += avx2_tile_rows(M - m)) tiles++;
    int per = (4 + tiles - 1) / tiles;
    for (int n = n0; n < n1; n += 4) {
        const float *pf[4];
        for (int j = 0; j < 4; j++) {
            int ahead = n + PREFETCH_ROWS + j;
            pf[j] = w + (size_t)(ahead < N ? ahead : N - 1) * ldw;
        }
        for (int m = 0, t = 0; m < M; t++) {
            int mt = avx2_tile_rows(M - m);
            int a = t * per < 4 ? t * per : 4, b = a + per < 4 ? a + per : 4;
            if (mt == 3) rows_tile8(3, m, n, n1, K, alpha, x, ldx, w, ldw, y, ldy, pf + a, b - a);
            else rows_tile8(2, m, n, n1, K, alpha, x, ldx, w, ldw, y, ldy, pf + a, b - a);
            m += mt;
        }
    }
}

/* ---- choice and threading */

int cpu_gemm_rows_supported(cpu_rows_isa isa)
{
    __builtin_cpu_init();
    if (isa == CPU_ROWS_AVX512) return __builtin_cpu_supports("avx512f");
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

/* One product's arguments, for the pool's parts */
typedef struct {
    cpu_rows_isa isa;
    int M, N, K, ldx, ldw, ldy, blocks, parts;
    float alpha;
    const float *x, *w;
    float *y;
} rows_job;

static void rows_span(const rows_job *j, int n0, int n1)
{
    if (j->isa == CPU_ROWS_AVX512)
        rows_block(j->M, n0, n1, j->N, j->K, j->alpha, j->x, j->ldx, j->w, j->ldw, j->y, j->ldy);
    else
        rows_block_avx2(j->M, n0, n1, j->N, j->K, j->alpha, j->x, j->ldx, j->w, j->ldw, j->y,
                        j->ldy);
}

/* Part p of the job: a run of whole blocks of BLOCK_N w rows */
static void rows_part(void *ctx, int p)
{
    const rows_job *j = ctx;
    size_t b0, b1;
    cpu_pool_span((size_t)j->blocks, p, j->parts, &b0, &b1);
    int n1 = (int)b1 * BLOCK_N < j->N ? (int)b1 * BLOCK_N : j->N;
    rows_span(j, (int)b0 * BLOCK_N, n1);
}

int cpu_gemm_rows_with(cpu_rows_isa isa, int M, int N, int K, float alpha, const float *x, int ldx,
                       const float *w, int ldw, float *y, int ldy)
{
    rows_job j = {.isa = isa,
                  .M = M,
                  .N = N,
                  .K = K,
                  .ldx = ldx,
                  .ldw = ldw,
                  .ldy = ldy,
                  .alpha = alpha,
                  .x = x,
                  .w = w,
                  .y = y};
    if (!cpu_fork((size_t)M * N * K, PARALLEL_MIN_MACS)) {
        rows_span(&j, 0, N);
        return 1;
    }
    j.blocks = (N + BLOCK_N - 1) / BLOCK_N;
    j.parts = cpu_pool_parts((size_t)j.blocks);
    cpu_pool_run(j.parts, rows_part, &j);
    return 1;
}

/* The most rows of x the kernel takes. AVX-512: CPU_ROWS_MAX_M (128) at every K, from 8 rows on
 * with panels made as w streams in (STREAM_MIN_M), which beat OpenBLAS's SkylakeX kernels up to
 * there (one thread, weights from memory, GFLOP/s panels / OpenBLAS: 64 x 768 x 192 140 / 104,
 * 128 x 768 x 192 133 / 120, 64 x 2048 x 512 101 / 83, 128 x 512 x 2048 120 / 108, 100 x 8000 x 192
 * 128 / 97, 64 x 50280 x 768 113 / 83); the panel kernel with a model's own panels stops at the
 * same bound (CPU_PANELS_MAX_M_AVX512). The 4 x 4 tiles alone had taken up to K / 16 rows.
 * The AVX2 kernel takes up to CPU_ROWS_MAX_M_AVX2 (39) rows at every K. On the 2-vCPU EPYC
 * (Zen 3, AVX2 only; OpenBLAS's Zen kernels), the same timing over 14 shapes (K 192 to 2048, N
 * 80 to 50280), two runs: OpenBLAS is at its best on a multiple of 4 rows and the kernel's tiles
 * are 3 rows, so at one thread the kernel's time is 0.57-0.92 of OpenBLAS's at 33 rows and
 * 0.56-1.16 at 28-39 (above 1.05 only at 28, 32 and 36 rows: the old bound of 32 had the same
 * losses), and from 40 rows on it loses at several shapes of K 192-512 (up to 1.27 at 40) while
 * it still wins at K 768; at two threads it wins at every shape up to 40 rows (0.51-0.87 at
 * 33-40). One bound for every K keeps the rule simple; a prompt of 33-39 tokens no longer
 * pays OpenBLAS's packing. */
static int rows_max_m(cpu_rows_isa isa)
{
    return isa == CPU_ROWS_AVX512 ? CPU_ROWS_MAX_M : CPU_ROWS_MAX_M_AVX2;
}

/* The kernel cpu_gemm_rows takes an M x N x K product with, or none */
cpu_rows_isa cpu_rows_best_isa(void)
{
    static int isa = -1; /* checked once */
    if (isa < 0)
        isa = cpu_gemm_rows_supported(CPU_ROWS_AVX512) ? CPU_ROWS_AVX512
              : cpu_gemm_rows_supported(CPU_ROWS_AVX2) ? CPU_ROWS_AVX2
                                                       : CPU_ROWS_NONE;
    return (cpu_rows_isa)isa;
}

static cpu_rows_isa rows_isa(int M, int N, int K)
{
    if (M < 1 || N < 1 || K < 1 || (M > 1 && (N < MIN_N || K < MIN_K))) return CPU_ROWS_NONE;
    cpu_rows_isa isa = cpu_rows_best_isa();
    if (M > rows_max_m(isa)) return CPU_ROWS_NONE;
    return isa;
}

int cpu_gemm_rows(int M, int N, int K, float alpha, const float *x, int ldx, const float *w,
                  int ldw, float *y, int ldy)
{
    cpu_rows_isa isa = rows_isa(M, N, K);
    if (isa == CPU_ROWS_NONE) return 0;
    return cpu_gemm_rows_with(isa, M, N, K, alpha, x, ldx, w, ldw, y, ldy);
}

int cpu_gemm_rows_part(int M, int n0, int n1, int N, int K, float alpha, const float *x, int ldx,
                       const float *w, int ldw, float *y, int ldy)
{
    cpu_rows_isa isa = rows_isa(M, N, K);
    if (isa == CPU_ROWS_NONE) return 0;
    if (n0 >= n1) return 1;
    if (isa == CPU_ROWS_AVX512) rows_block(M, n0, n1, N, K, alpha, x, ldx, w, ldw, y, ldy);
    else rows_block_avx2(M, n0, n1, N, K, alpha, x, ldx, w, ldw, y, ldy);
    return 1;
}
#else
int cpu_gemm_rows_supported(cpu_rows_isa isa)
{
    (void)isa;
    return 0;
}

cpu_rows_isa cpu_rows_best_isa(void) { return CPU_ROWS_NONE; }

int cpu_gemm_rows_with(cpu_rows_isa isa, int M, int N, int K, float alpha, const float *x, int ldx,
                       const float *w, int ldw, float *y, int ldy)
{
    (void)isa, (void)M, (void)N, (void)K, (void)alpha, (void)x, (void)ldx, (void)w, (void)ldw;
    (void)y, (void)ldy;
    return 0;
}

int cpu_gemm_rows(int M, int N, int K, float alpha, const float *x, int ldx, const float *w,
                  int ldw, float *y, int ldy)
{
    return cpu_gemm_rows_with(CPU_ROWS_NONE, M, N, K, alpha, x, ldx, w, ldw, y, ldy);
}

int cpu_gemm_rows_part(int M, int n0, int n1, int N, int K, float alpha, const float *x, int ldx,
                       const float *w, int ldw, float *y, int ldy)
{
    (void)n0, (void)n1;
    return cpu_gemm_rows(M, N, K, alpha, x, ldx, w, ldw, y, ldy);
}
#endif
