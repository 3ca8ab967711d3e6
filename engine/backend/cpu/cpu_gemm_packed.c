/* sgemm in mtlab's own packed kernel: C (m, n) = alpha op(A) (m, k) op(B) (k, n) + beta C, all
 * row-major, for the training step's products and a prompt's x W^T on a CPU with AVX2 + FMA or
 * AVX-512 (docs/models.md §10.9 has the measurements that say where it runs instead of
 * OpenBLAS).
 *
 * The layout is the one BLIS made known (Van Zee and van de Geijn, "BLIS: A Framework for
 * Rapidly Instantiating BLAS Functionality", 2015): op(B) is copied, KC rows of k by NC columns
 * at a time, into panels of NR = 16 columns, each panel's KC x 16 floats contiguous; then a
 * 6 x 16 tile of C is the sum over the block's k of 6 values of op(A), broadcast one by one,
 * times one B panel row (two 8-float vectors): 12 accumulators, 12 multiply-adds a step on 2
 * loads and 6 broadcasts, which keeps both FMA pipes of a Zen 3 core busy. The B panel (16 KiB
 * at KC 256) stays in L1 while MC rows of op(A) stream from L2, and the packed B block from L3.
 * With AVX-512 one register holds a panel row, and a tile is 6 rows by up to four panels side by
 * side (6 x 64: 24 accumulators, 24 multiply-adds a step on 4 loads and 6 broadcasts; the last
 * tile of a row of C as many panels as the columns need, its last panel's stores masked): on a
 * Xeon with two 512-bit FMA units it runs the small presets' hidden-size products, hot, at up to
 * 90% of the core's multiply-add rate, 1.08-1.25x OpenBLAS 0.3.21's SkylakeX kernels.
 *
 * op(A) is read where it lies when its rows run along k (x W^T, the input gradients dY W: no
 * copy), six row pointers a tile, and with the AVX-512 tiles transposed too (the weight gradients
 * dY^T X) when its rows are at most TRANS_A_IN_PLACE_MAX floats apart: a step's six values then
 * lie side by side in one row of dY. A transposed op(A) of wider rows (a vocabulary's dlogits^T, a
 * step every 32 KB), or any under the AVX2 tiles, is copied into panels of MR = 6 rows, as is a
 * last panel of fewer than 6 rows (zeros below). op(B) is read as it lies either way, a
 * transposed one by 8 x 8 transposes, and columns past n are zeros; edge tiles are written
 * through a small buffer. Each tile asks for its rows of C before it sums, so that adding to a C
 * that comes from memory does not wait at every tile's end.
 *
 * Threads split C into whole tiles, by columns or by rows, and each runs the product on its part
 * with its own packing; a weight gradient over a long k is summed in two halves of k instead,
 * added last (gemm_halves), on one thread as on several. Every element of C is the sum over k in
 * the same order whoever computes it, the same KC blocks in turn, so the result is the same
 * float at any thread count. The sums run in another order than OpenBLAS's: results agree with
 * naive_gemm to float rounding (tests/unit/test_backend_gemm.c). */
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/cpu_par.h"
#include "backend/cpu/cpu_pool.h"

#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>

#define MR 6
#define NR 16
_Static_assert(NR == CPU_PANEL, "cpu_gemm_packed_panels reads cpu_panels_make's panels as B's");
/* k per block: a B panel of KC x NR floats (16 KiB) in L1, an A panel of 6 KiB beside it */
#define KC 256
/* on AVX-512: the most columns of a tile, four B panels (KC x 64 floats, 64 KiB, stream from
 * L2; k blocks of 128, which would keep them in L1, ran slower for the extra passes over C) */
#define WIDE 64
/* rows of A per block: MC x KC floats (144 KiB) in L2 */
#define MC 144
/* columns of B per block: KC x NC floats (4 MiB) in L3, and at most NC_BYTES of packed panels:
 * a vocabulary's x W^T (262 x 8000 x 192, W^T packed whole for each of the loss's row chunks)
 * ran at 157 GFLOP/s hot on blocks of 4,096 columns (3 MiB, past the 2 MiB L2 they are read back
 * from) and 168-180 on blocks of 1,024 (768 KiB) or 1,344 (docs/models.md §10.9) */
#define NC 4096
#define NC_BYTES ((size_t)1 << 20)
/* with the AVX-512 tiles, a transposed op(A) of rows at most this many floats apart is read where
 * it lies: the weight gradients of d_model 192 ran 5-17% faster than on packed panels (hot, one
 * thread, 192 x 192 x 2048 and 768 x 192 x 2048), a vocabulary's (8000 x 192 x 262, rows 8000
 * floats apart) 10-23% slower. The AVX2 tiles, 16 columns wide, would pass over dY four times as
 * often, a new line of it every step of 12 multiply-adds: 768 x 192 x 2048 ran 16% slower read
 * in place, and they keep the panels. */
#define TRANS_A_IN_PLACE_MAX 1024
/* below this many multiply-adds the product stays on one thread */
#define PARALLEL_MIN_MACS ((size_t)1 << 22)

/* op(A) rows i0 .. i0+mc, k columns p0 .. p0+kc, into panels of MR rows: panel r's step p holds
 * op(A)[i0 + r MR + 0..5][p0 + p], rows past mc zero. */
static void pack_a(int trans_a, const float *a, int lda, int i0, int mc, int p0, int kc, float *ap)
{
    int whole = mc / MR * MR;
    if (trans_a) {
        /* op(A)[i][p] = a[p lda + i]: step p of every panel comes from one row of a, read in
         * order */
        for (int p = 0; p < kc; p++) {
            const float *src = a + (size_t)(p0 + p) * lda + i0;
            for (int r = 0; r < whole; r += MR)
                memcpy(ap + (size_t)r * kc + p * MR, src + r, sizeof(float) * MR);
            if (whole < mc) {
                float *dst = ap + (size_t)whole * kc + p * MR;
                for (int q = 0; q < MR; q++) dst[q] = whole + q < mc ? src[whole + q] : 0.0f;
            }
        }
        return;
    }
    for (int r = 0; r < mc; r += MR) {
        int rows = mc - r < MR ? mc - r : MR;
        float *dst = ap + (size_t)r * kc;
        /* the rows read side by side, the panel written in order (gemm_serial reads whole
         * panels of an untransposed A where they lie and packs only a last short one) */
        const float *src[MR];
        for (int q = 0; q < MR; q++) src[q] = q < rows ? a + (size_t)(i0 + r + q) * lda + p0 : NULL;
        for (int p = 0; p < kc; p++)
            for (int q = 0; q < MR; q++) dst[p * MR + q] = q < rows ? src[q][p] : 0.0f;
    }
}

/* dst[r ldd + q] = src[q lds + r] for an 8 x 8 block */
__attribute__((target("avx2,fma"))) static void transpose8(const float *src, int lds, float *dst,
                                                           int ldd)
{
    __m256 r[8], t[8];
    for (int q = 0; q < 8; q++) r[q] = _mm256_loadu_ps(src + (size_t)q * lds);
    for (int q = 0; q < 8; q += 2) {
        t[q] = _mm256_unpacklo_ps(r[q], r[q + 1]);
        t[q + 1] = _mm256_unpackhi_ps(r[q], r[q + 1]);
    }
    for (int q = 0; q < 8; q += 4) {
        r[q] = _mm256_shuffle_ps(t[q], t[q + 2], 0x44);
        r[q + 1] = _mm256_shuffle_ps(t[q], t[q + 2], 0xEE);
        r[q + 2] = _mm256_shuffle_ps(t[q + 1], t[q + 3], 0x44);
        r[q + 3] = _mm256_shuffle_ps(t[q + 1], t[q + 3], 0xEE);
    }
    for (int q = 0; q < 4; q++) {
        _mm256_storeu_ps(dst + (size_t)q * ldd, _mm256_permute2f128_ps(r[q], r[q + 4], 0x20));
        _mm256_storeu_ps(dst + (size_t)(q + 4) * ldd, _mm256_permute2f128_ps(r[q], r[q + 4], 0x31));
    }
}

/* Panel c of op(B)'s block (rows p0 .. p0+kc, columns j0 .. j0+nc): its step p holds
 * op(B)[p0 + p][j0 + c NR + 0..15], columns past nc zero. */
static void pack_b_panel(int trans_b, const float *b, int ldb, int p0, int kc, int j0, int nc,
                         int c, float *bp)
{
    int j = c * NR, cols = nc - j < NR ? nc - j : NR;
    float *dst = bp + (size_t)c * kc * NR;
    if (trans_b) {
        /* op(B)[p][j] = b[j ldb + p]: each column of the panel is a row of b, turned by 8 x 8
         * transposes where the panel is whole */
        const float *src = b + (size_t)(j0 + j) * ldb + p0;
        int p = 0;
        if (cols == NR)
            for (; p + 8 <= kc; p += 8) {
                transpose8(src + p, ldb, dst + p * NR, NR);
                transpose8(src + (size_t)8 * ldb + p, ldb, dst + p * NR + 8, NR);
            }
        for (; p < kc; p++)
            for (int q = 0; q < NR; q++)
                dst[p * NR + q] = q < cols ? src[(size_t)q * ldb + p] : 0.0f;
    } else {
        for (int p = 0; p < kc; p++) {
            const float *src = b + (size_t)(p0 + p) * ldb + j0 + j;
            if (cols == NR) {
                memcpy(dst + p * NR, src, NR * sizeof(float));
            } else {
                int q = 0;
                for (; q < cols; q++) dst[p * NR + q] = src[q];
                for (; q < NR; q++) dst[p * NR + q] = 0.0f;
            }
        }
    }
}

/* All panels of op(B)'s block when op(B) = b untransposed: row by row of b, each row's 16
 * columns to its panel's step p. One pass down b's rows in order, which the prefetchers follow;
 * panel by panel (pack_b_panel) would read b one line a row, ldb floats apart, and wait on each. */
static void pack_b_rows(const float *b, int ldb, int p0, int kc, int j0, int nc, float *bp)
{
    int whole = nc / NR;
    for (int p = 0; p < kc; p++) {
        const float *src = b + (size_t)(p0 + p) * ldb + j0;
        for (int c = 0; c < whole; c++)
            memcpy(bp + ((size_t)c * kc + p) * NR, src + c * NR, NR * sizeof(float));
    }
    if (whole * NR < nc) pack_b_panel(0, b, ldb, p0, kc, j0, nc, whole, bp);
}

/* All panels of op(B)'s block when op(B) = b transposed, panel by panel, each by 8 x 8
 * transposes of 16 rows of b read side by side, a line of each at a time: more streams than
 * the prefetchers follow, and b (a weight, just updated by the optimizer) comes from memory.
 * The next panel's rows are asked for while this one is turned (whole one-thread training steps
 * 1.002-1.019x, docs/models.md §10.9). */
static void pack_b_transposed(const float *b, int ldb, int p0, int kc, int j0, int nc, float *bp)
{
    int panels = (nc + NR - 1) / NR;
    for (int q = 0; q < panels; q++) {
        int next = (q + 1) * NR, rows = nc - next < NR ? nc - next : NR;
        for (int r = 0; r < rows; r++) {
            const char *row = (const char *)(b + (size_t)(j0 + next + r) * ldb + p0);
            for (size_t o = 0; o < (size_t)kc * sizeof(float); o += 64)
                _mm_prefetch(row + o, _MM_HINT_T1);
        }
        pack_b_panel(1, b, ldb, p0, kc, j0, nc, q, bp);
    }
}

/* The 6 x 16 tile: c = alpha (A . bp) + beta c over kc steps, row r of A at a + r rs, step p
 * at + p cs (a packed panel: rs 1, cs MR; rows read where they lie: rs lda, cs 1); beta 0
 * never reads c. */
__attribute__((target("avx2,fma"), always_inline)) static inline void
tile_6x16(int kc, const float *a, size_t rs, size_t cs, const float *bp, float alpha, float beta,
          float *c, int ldc)
{
    __m256 c0a = _mm256_setzero_ps(), c0b = _mm256_setzero_ps();
    __m256 c1a = _mm256_setzero_ps(), c1b = _mm256_setzero_ps();
    __m256 c2a = _mm256_setzero_ps(), c2b = _mm256_setzero_ps();
    __m256 c3a = _mm256_setzero_ps(), c3b = _mm256_setzero_ps();
    __m256 c4a = _mm256_setzero_ps(), c4b = _mm256_setzero_ps();
    __m256 c5a = _mm256_setzero_ps(), c5b = _mm256_setzero_ps();
    /* the tile of C comes from memory in the time the sums take (a store misses as a load does) */
    for (int r = 0; r < MR; r++) {
        _mm_prefetch((const char *)(c + (size_t)r * ldc), _MM_HINT_T0);
        _mm_prefetch((const char *)(c + (size_t)r * ldc + NR - 1), _MM_HINT_T0);
    }
    const float *a0 = a, *a1 = a + rs, *a2 = a + 2 * rs, *a3 = a + 3 * rs, *a4 = a + 4 * rs,
                *a5 = a + 5 * rs;
#pragma GCC unroll 4
    for (int p = 0; p < kc; p++) {
        __m256 b0 = _mm256_load_ps(bp), b1 = _mm256_load_ps(bp + 8), x;
        size_t o = (size_t)p * cs;
        x = _mm256_broadcast_ss(a0 + o);
        c0a = _mm256_fmadd_ps(x, b0, c0a), c0b = _mm256_fmadd_ps(x, b1, c0b);
        x = _mm256_broadcast_ss(a1 + o);
        c1a = _mm256_fmadd_ps(x, b0, c1a), c1b = _mm256_fmadd_ps(x, b1, c1b);
        x = _mm256_broadcast_ss(a2 + o);
        c2a = _mm256_fmadd_ps(x, b0, c2a), c2b = _mm256_fmadd_ps(x, b1, c2b);
        x = _mm256_broadcast_ss(a3 + o);
        c3a = _mm256_fmadd_ps(x, b0, c3a), c3b = _mm256_fmadd_ps(x, b1, c3b);
        x = _mm256_broadcast_ss(a4 + o);
        c4a = _mm256_fmadd_ps(x, b0, c4a), c4b = _mm256_fmadd_ps(x, b1, c4b);
        x = _mm256_broadcast_ss(a5 + o);
        c5a = _mm256_fmadd_ps(x, b0, c5a), c5b = _mm256_fmadd_ps(x, b1, c5b);
        bp += NR;
    }
    __m256 acc[2 * MR] = {c0a, c0b, c1a, c1b, c2a, c2b, c3a, c3b, c4a, c4b, c5a, c5b};
    __m256 va = _mm256_set1_ps(alpha), vb = _mm256_set1_ps(beta);
    for (int r = 0; r < MR; r++) {
        float *row = c + (size_t)r * ldc;
        __m256 lo = _mm256_mul_ps(va, acc[2 * r]), hi = _mm256_mul_ps(va, acc[2 * r + 1]);
        if (beta != 0.0f) {
            lo = _mm256_fmadd_ps(vb, _mm256_loadu_ps(row), lo);
            hi = _mm256_fmadd_ps(vb, _mm256_loadu_ps(row + 8), hi);
        }
        _mm256_storeu_ps(row, lo);
        _mm256_storeu_ps(row + 8, hi);
    }
}

__attribute__((target("avx2,fma"))) static void
tile_packed(int kc, const float *ap, const float *bp, float alpha, float beta, float *c, int ldc)
{
    tile_6x16(kc, ap, 1, MR, bp, alpha, beta, c, ldc);
}

__attribute__((target("avx2,fma"))) static void tile_direct(int kc, const float *a, size_t lda,
                                                            const float *bp, float alpha,
                                                            float beta, float *c, int ldc)
{
    tile_6x16(kc, a, lda, 1, bp, alpha, beta, c, ldc);
}

/* An edge tile's rows x cols, summed into a buffer (lde floats a row), stored as alpha edge +
 * beta c (beta 0 never reads c) */
static void store_edge(float *c, int ldc, const float *edge, int lde, int rows, int cols,
                       float alpha, float beta)
{
    for (int r = 0; r < rows; r++)
        for (int q = 0; q < cols; q++) {
            float *o = c + (size_t)r * ldc + q;
            float v = alpha * edge[r * lde + q];
            *o = beta == 0.0f ? v : v + beta * *o;
        }
}

/* The 6 x (16 nq) tile on AVX-512, nq = 1 to 4 B panels side by side (panel q at bp + q
 * bstride): up to 24 accumulators of 16 floats, 6 nq multiply-adds a step on nq loads and 6
 * broadcasts. Each element of C is summed over p in the same order as tile_6x16 sums it. */
__attribute__((target("avx512f"), always_inline)) static inline void
tile_6xq(int nq, int kc, const float *a, size_t rs, size_t cs, const float *bp, size_t bstride,
         __mmask16 last, float alpha, float beta, float *c, int ldc)
{
    __m512 acc[MR][WIDE / NR];
#pragma GCC unroll 6
    for (int r = 0; r < MR; r++)
#pragma GCC unroll 4
        for (int q = 0; q < nq; q++) {
            acc[r][q] = _mm512_setzero_ps();
            _mm_prefetch((const char *)(c + (size_t)r * ldc + q * NR), _MM_HINT_T0);
        }
    const float *b0 = bp, *b2 = bp + 2 * bstride;
#pragma GCC unroll 2
    for (int p = 0; p < kc; p++) {
        __m512 w[WIDE / NR];
        w[0] = _mm512_loadu_ps(b0);
        if (nq > 1) w[1] = _mm512_loadu_ps(b0 + bstride);
        if (nq > 2) w[2] = _mm512_loadu_ps(b2);
        if (nq > 3) w[3] = _mm512_loadu_ps(b2 + bstride);
        const float *ap = a + (size_t)p * cs;
#pragma GCC unroll 6
        for (int r = 0; r < MR; r++) {
            __m512 x = _mm512_set1_ps(ap[(size_t)r * rs]);
#pragma GCC unroll 4
            for (int q = 0; q < nq; q++) acc[r][q] = _mm512_fmadd_ps(x, w[q], acc[r][q]);
        }
        b0 += NR, b2 += NR;
    }
    __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
#pragma GCC unroll 6
    for (int r = 0; r < MR; r++)
#pragma GCC unroll 4
        for (int q = 0; q < nq; q++) {
            float *o = c + (size_t)r * ldc + q * NR;
            __mmask16 m = q == nq - 1 ? last : 0xFFFF;
            __m512 v = _mm512_mul_ps(va, acc[r][q]);
            if (beta != 0.0f) v = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m, o), v);
            _mm512_mask_storeu_ps(o, m, v);
        }
}

/* one function per width, its A panel packed (rs 1, cs MR) or read where it lies (rs lda, cs 1;
 * transposed, rs 1, cs lda) */
#define TILE512(nq)                                                                            \
    __attribute__((target("avx512f"))) static void tile512_##nq(                               \
        int kc, const float *a, size_t rs, size_t cs, const float *bp, size_t bstride,         \
        __mmask16 last, float alpha, float beta, float *c, int ldc)                            \
    {                                                                                          \
        if (cs == 1) tile_6xq(nq, kc, a, rs, 1, bp, bstride, last, alpha, beta, c, ldc);       \
        else if (cs == MR) tile_6xq(nq, kc, a, 1, MR, bp, bstride, last, alpha, beta, c, ldc); \
        else tile_6xq(nq, kc, a, 1, cs, bp, bstride, last, alpha, beta, c, ldc);               \
    }
TILE512(1)
TILE512(2)
TILE512(3)
TILE512(4)
#undef TILE512

typedef void (*tile512_fn)(int, const float *, size_t, size_t, const float *, size_t, __mmask16,
                           float, float, float *, int);
static const tile512_fn tiles512[WIDE / NR + 1] = {NULL, tile512_1, tile512_2, tile512_3,
                                                   tile512_4};

/* cols <= WIDE columns of C from ceil(cols / NR) B panels in 6 x (16 nq) tiles; a tile of fewer
 * rows or columns goes through a buffer */
static void wide_columns(int mc, int cols, int kc, const float *ad, size_t ars, size_t acs,
                         const float *ap, const float *bpanel, size_t bstride, float alpha,
                         float beta, float *c, int ldc)
{
    int whole = mc / MR * MR, nq = (cols + NR - 1) / NR;
    tile512_fn tile = tiles512[nq];
    __mmask16 last = (__mmask16)((1u << (cols - (nq - 1) * NR)) - 1u);
    for (int i = 0; i < mc; i += MR) {
        int rows = mc - i < MR ? mc - i : MR;
        float *out = c + (size_t)i * ldc;
        int direct = ad && rows == MR;
        const float *apanel =
            direct ? ad + (size_t)i * ars : ap + (size_t)(ad ? i - whole : i) * kc;
        size_t rs = direct ? ars : 1, cs = direct ? acs : MR;
        if (rows == MR) {
            tile(kc, apanel, rs, cs, bpanel, bstride, last, alpha, beta, out, ldc);
            continue;
        }
        float edge[MR * WIDE];
        tile(kc, apanel, rs, cs, bpanel, bstride, 0xFFFF, 1.0f, 0.0f, edge, WIDE);
        store_edge(out, ldc, edge, WIDE, rows, cols, alpha, beta);
    }
}

/* One block of mc rows of C by nc columns from packed B (panel q at bp + q bstride): the A
 * panels packed in ap, or, with ad set, the whole panels read where they lie (row i at ad + i
 * ars, its step p at + p acs; transposed only with the AVX-512 tiles, so the AVX2 ones read rows,
 * acs 1) and only a last panel of fewer than MR rows packed (in ap). Edge tiles go through a
 * buffer. */
static void macro_block(int wide, int mc, int nc, int kc, const float *ad, size_t ars, size_t acs,
                        const float *ap, const float *bp, size_t bstride, float alpha, float beta,
                        float *c, int ldc)
{
    int whole = mc / MR * MR;
    for (int j = 0; j < nc; j += NR) {
        const float *bpanel = bp + (size_t)(j / NR) * bstride;
        if (wide) {
            int cols = nc - j < WIDE ? nc - j : WIDE;
            wide_columns(mc, cols, kc, ad, ars, acs, ap, bpanel, bstride, alpha, beta, c + j, ldc);
            j += (cols + NR - 1) / NR * NR - NR;
            continue;
        }
        int cols = nc - j < NR ? nc - j : NR;
        for (int i = 0; i < mc; i += MR) {
            int rows = mc - i < MR ? mc - i : MR;
            float *tile = c + (size_t)i * ldc + j;
            int direct = ad && rows == MR;
            /* packed panels: all of them, or with ad only the last, short one at the start */
            const float *apanel = direct ? NULL : ap + (size_t)(ad ? i - whole : i) * kc;
            if (cols == NR && rows == MR) {
                if (direct)
                    tile_direct(kc, ad + (size_t)i * ars, ars, bpanel, alpha, beta, tile, ldc);
                else tile_packed(kc, apanel, bpanel, alpha, beta, tile, ldc);
                continue;
            }
            float edge[MR * NR];
            if (direct) tile_direct(kc, ad + (size_t)i * ars, ars, bpanel, 1.0f, 0.0f, edge, NR);
            else tile_packed(kc, apanel, bpanel, 1.0f, 0.0f, edge, NR);
            store_edge(tile, ldc, edge, NR, rows, cols, alpha, beta);
        }
    }
}

int cpu_gemm_packed_supported(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

/* The whole product on this thread: for each NC block of columns and KC block of k, op(B)'s
 * block packed once, then MC blocks of rows, op(A) read where it lies (its rows contiguous in
 * k: only a last panel of fewer than MR rows is packed) or, transposed, packed. With ready set,
 * op(B) = W^T whose panels are made already (cpu_panels_make's layout, W's panel q at ready +
 * q k NR, step p of it NR floats at + p NR: a block of k is a contiguous run of each panel), and
 * nothing of B is packed. */
static void gemm_serial(int wide, int trans_a, int trans_b, int m, int n, int k, float alpha,
                        const float *a, int lda, const float *b, int ldb, const float *ready,
                        float beta, float *c, int ldc)
{
    /* k in equal blocks of at most KC (262 as 256 + 6 would pass over C again for 6 steps); with
     * the AVX-512 tiles a k up to KC + KC / 8 is one block, so that the weight gradient of a
     * vocabulary's projection from a 262-row chunk of the loss (C 8000 x d, out of L2) passes over
     * C once, not twice */
    int kblocks = wide && k <= KC + KC / 8 ? 1 : (k + KC - 1) / KC;
    int kcb = (k + kblocks - 1) / kblocks;
    int nc_max = (int)(NC_BYTES / sizeof(float) / (size_t)kcb) / WIDE * WIDE;
    if (nc_max > NC) nc_max = NC;
    if (nc_max < WIDE) nc_max = WIDE;
    int ncb = n < nc_max ? n : nc_max, mcb = m < MC ? m : MC;
    /* the thread's own buffers, kept from call to call: at these sizes a fresh allocation
     * would be a fresh mmap, with page faults, every call */
    float *bp =
        ready ? NULL : cpu_scratch(CPU_SCRATCH_PACK_B, (size_t)(ncb + NR) * kcb * sizeof(float));
    float *ap = cpu_scratch(CPU_SCRATCH_PACK_A, (size_t)(mcb + MR) * kcb * sizeof(float));
    for (int j0 = 0; j0 < n; j0 += ncb) {
        int nc = n - j0 < ncb ? n - j0 : ncb;
        for (int p0 = 0; p0 < k; p0 += kcb) {
            int kc = k - p0 < kcb ? k - p0 : kcb;
            /* the first k block applies beta; later ones add to what it left */
            float bk = p0 == 0 ? beta : 1.0f;
            const float *bb = ready ? ready + (size_t)j0 * k + (size_t)p0 * NR : bp;
            size_t bstride = ready ? (size_t)k * NR : (size_t)kc * NR;
            if (!ready && !trans_b) pack_b_rows(b, ldb, p0, kc, j0, nc, bp);
            else if (!ready) pack_b_transposed(b, ldb, p0, kc, j0, nc, bp);
            for (int i0 = 0; i0 < m; i0 += MC) {
                int rows = m - i0 < MC ? m - i0 : MC;
                const float *ad = NULL;
                size_t ars = trans_a ? 1 : (size_t)lda, acs = trans_a ? (size_t)lda : 1;
                if (trans_a && (!wide || lda > TRANS_A_IN_PLACE_MAX)) {
                    pack_a(trans_a, a, lda, i0, rows, p0, kc, ap);
                } else {
                    ad = trans_a ? a + (size_t)p0 * lda + i0 : a + (size_t)i0 * lda + p0;
                    int whole = rows / MR * MR;
                    if (whole < rows) pack_a(trans_a, a, lda, i0 + whole, rows - whole, p0, kc, ap);
                }
                macro_block(wide, rows, nc, kc, ad, ars, acs, ap, bb, bstride, alpha, bk,
                            c + (size_t)i0 * ldc + j0, ldc);
            }
        }
    }
}

/* One product split into parts of whole tiles of C, for the pool */
typedef struct {
    int wide, trans_a, trans_b, m, n, k, lda, ldb, ldc, by_cols, tiles, parts;
    float alpha, beta;
    const float *a, *b, *ready;
    float *c;
} split_job;

/* Part p: its tiles' columns (each packs its columns of op(B) and reads or packs all of op(A))
 * or rows (its rows of op(A), all of op(B)) */
static void split_part(void *ctx, int p)
{
    const split_job *j = ctx;
    size_t u0, u1;
    cpu_pool_span((size_t)j->tiles, p, j->parts, &u0, &u1);
    int t0 = (int)u0, t1 = (int)u1;
    if (j->by_cols) {
        int j0 = t0 * NR, j1 = t1 * NR < j->n ? t1 * NR : j->n;
        if (j1 > j0)
            gemm_serial(
                j->wide, j->trans_a, j->trans_b, j->m, j1 - j0, j->k, j->alpha, j->a, j->lda,
                !j->b        ? NULL
                : j->trans_b ? j->b + (size_t)j0 * j->ldb
                             : j->b + j0,
                j->ldb, j->ready ? j->ready + (size_t)j0 * j->k : NULL, j->beta, j->c + j0, j->ldc);
    } else {
        int i0 = t0 * MR, i1 = t1 * MR < j->m ? t1 * MR : j->m;
        if (i1 > i0)
            gemm_serial(j->wide, j->trans_a, j->trans_b, i1 - i0, j->n, j->k, j->alpha,
                        j->trans_a ? j->a + i0 : j->a + (size_t)i0 * j->lda, j->lda, j->b, j->ldb,
                        j->ready, j->beta, j->c + (size_t)i0 * j->ldc, j->ldc);
    }
}

/* The split of one product into `parts` parts of whole tiles of C: by columns when C is wider
 * than tall, by rows otherwise */
static split_job split_make(int wide, int trans_a, int trans_b, int m, int n, int k, float alpha,
                            const float *a, int lda, const float *b, int ldb, const float *ready,
                            float beta, float *c, int ldc, int parts)
{
    int by_cols = n > m;
    return (split_job){.wide = wide,
                       .trans_a = trans_a,
                       .trans_b = trans_b,
                       .m = m,
                       .n = n,
                       .k = k,
                       .lda = lda,
                       .ldb = ldb,
                       .ldc = ldc,
                       .by_cols = by_cols,
                       .tiles = by_cols ? (n + NR - 1) / NR : (m + MR - 1) / MR,
                       .parts = parts,
                       .alpha = alpha,
                       .beta = beta,
                       .a = a,
                       .b = b,
                       .ready = ready,
                       .c = c};
}

/* The product on the pool's threads (cpu_pool.h). Where a part packs only its own share (the
 * columns of op(B) with op(A) read in place, or rows of op(A) against panels made before), a
 * thread takes several smaller parts as it comes free; where each part would pack the other
 * operand whole again, one part a thread. */
static void gemm_split(int wide, int trans_a, int trans_b, int m, int n, int k, float alpha,
                       const float *a, int lda, const float *b, int ldb, const float *ready,
                       float beta, float *c, int ldc)
{
    int threads = cpu_fork((size_t)m * n * k, PARALLEL_MIN_MACS) ? cpu_pool_threads() : 1;
    split_job j =
        split_make(wide, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, ready, beta, c, ldc, 1);
    int own_share = j.by_cols ? !trans_a : ready != NULL;
    j.parts = threads * (own_share ? CPU_POOL_PARTS_PER_THREAD : 1);
    if (j.parts > j.tiles) j.parts = j.tiles;
    if (threads <= 1 || j.parts <= 1) {
        gemm_serial(wide, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, ready, beta, c, ldc);
        return;
    }
    cpu_pool_run(j.parts, split_part, &j);
}

/* A weight gradient dY^T X (op(A) transposed) over k of K_SPLIT_MIN rows and more, C at most
 * K_SPLIT_MAX_C floats: k in two halves whatever the thread count, the first summed into C
 * (alpha, beta) and the second into a buffer from zero (alpha, beta 0), then C += the buffer.
 * Split by rows or columns, every thread read all of one operand (each part packs all of X, or
 * re-reads all of dY) and gpt-neox-small's 168 x 672 x 4096 ran at 179 GFLOP/s in a two-thread
 * step against 245 for products that split cleanly; by halves of k each reads half of both.
 * Each half's elements are summed in the same order on any number of threads and the two added
 * last, so the bits do not depend on the thread count. */
#define K_SPLIT_MIN 2048
#define K_SPLIT_MAX_C ((size_t)1 << 20)

/* part p: half p % 2 of k, its part p / 2 of whole tiles */
static void halves_part(void *ctx, int p)
{
    split_job *half = ctx;
    split_part(&half[p % 2], p / 2);
}

static int gemm_halves(int wide, int trans_a, int trans_b, int m, int n, int k, float alpha,
                       const float *a, int lda, const float *b, int ldb, float beta, float *c,
                       int ldc)
{
    if (!trans_a || trans_b || k < K_SPLIT_MIN || (size_t)m * n > K_SPLIT_MAX_C) return 0;
    float *second = cpu_scratch(CPU_SCRATCH_K_HALF, (size_t)m * n * sizeof(float));
    int threads = cpu_fork((size_t)m * n * k, PARALLEL_MIN_MACS) ? cpu_pool_threads() : 1;
    int h = k / 2, per = threads > 2 ? (threads + 1) / 2 : 1;
    split_job half[2] = {
        split_make(wide, 1, 0, m, n, h, alpha, a, lda, b, ldb, NULL, beta, c, ldc, per),
        split_make(wide, 1, 0, m, n, k - h, alpha, a + (size_t)h * lda, lda, b + (size_t)h * ldb,
                   ldb, NULL, 0.0f, second, n, per)};
    if (per > half[0].tiles) half[0].parts = half[1].parts = per = half[0].tiles;
    if (threads <= 1)
        for (int p = 0; p < 2 * per; p++) halves_part(half, p);
    else cpu_pool_run(2 * per, halves_part, half);
    for (int i = 0; i < m; i++)
        for (int q = 0; q < n; q++) c[(size_t)i * ldc + q] += second[(size_t)i * n + q];
    return 1;
}

/* beta C, and nothing else, for an empty sum */
static void scale_only(int m, int n, float beta, float *c, int ldc)
{
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            float *o = c + (size_t)i * ldc + j;
            *o = beta == 0.0f ? 0.0f : beta * *o;
        }
}

int cpu_gemm_packed_with(cpu_rows_isa isa, int trans_a, int trans_b, int m, int n, int k,
                         float alpha, const float *a, int lda, const float *b, int ldb, float beta,
                         float *c, int ldc)
{
    if (!cpu_gemm_packed_supported() || isa == CPU_ROWS_NONE || !cpu_gemm_rows_supported(isa))
        return 0;
    if (m <= 0 || n <= 0) return 1;
    if (k <= 0 || alpha == 0.0f) {
        scale_only(m, n, beta, c, ldc);
        return 1;
    }
    if (gemm_halves(isa == CPU_ROWS_AVX512, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta,
                    c, ldc))
        return 1;
    gemm_split(isa == CPU_ROWS_AVX512, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, NULL, beta,
               c, ldc);
    return 1;
}

int cpu_gemm_packed(int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a,
                    int lda, const float *b, int ldb, float beta, float *c, int ldc)
{
    return cpu_gemm_packed_with(cpu_rows_best_isa(), trans_a, trans_b, m, n, k, alpha, a, lda, b,
                                ldb, beta, c, ldc);
}

void cpu_gemm_w_panel(const float *w, int rows, int cols, int c, float *panels)
{
    pack_b_panel(1, w, cols, 0, cols, 0, rows, c, panels);
}

int cpu_gemm_packed_panels(int m, int n, int k, const float *x, int ldx, const float *panels,
                           float *c, int ldc)
{
    if (!cpu_gemm_packed_supported()) return 0;
    if (m <= 0 || n <= 0) return 1;
    if (k <= 0) {
        scale_only(m, n, 0.0f, c, ldc);
        return 1;
    }
    gemm_split(cpu_rows_best_isa() == CPU_ROWS_AVX512, 0, 1, m, n, k, 1.0f, x, ldx, NULL, 0, panels,
               0.0f, c, ldc);
    return 1;
}

#else

int cpu_gemm_packed_supported(void) { return 0; }

int cpu_gemm_packed(int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a,
                    int lda, const float *b, int ldb, float beta, float *c, int ldc)
{
    (void)trans_a, (void)trans_b, (void)m, (void)n, (void)k, (void)alpha, (void)a, (void)lda;
    (void)b, (void)ldb, (void)beta, (void)c, (void)ldc;
    return 0;
}

int cpu_gemm_packed_with(cpu_rows_isa isa, int trans_a, int trans_b, int m, int n, int k,
                         float alpha, const float *a, int lda, const float *b, int ldb, float beta,
                         float *c, int ldc)
{
    (void)isa;
    return cpu_gemm_packed(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void cpu_gemm_w_panel(const float *w, int rows, int cols, int c, float *panels)
{
    float *dst = panels + (size_t)c * cols * CPU_PANEL;
    for (int k = 0; k < cols; k++)
        for (int q = 0; q < CPU_PANEL; q++) {
            int j = c * CPU_PANEL + q;
            dst[(size_t)k * CPU_PANEL + q] = j < rows ? w[(size_t)j * cols + k] : 0.0f;
        }
}

int cpu_gemm_packed_panels(int m, int n, int k, const float *x, int ldx, const float *panels,
                           float *c, int ldc)
{
    (void)m, (void)n, (void)k, (void)x, (void)ldx, (void)panels, (void)c, (void)ldc;
    return 0;
}

#endif
