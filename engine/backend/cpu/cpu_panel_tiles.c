/* The panel kernel's tiles (docs/decoding.md §9.3, §9.5): out (M, channels) = x (M, K) times
 * output channels of a matrix kept in panels of CPU_PANEL channels, k running down each panel
 * (panel p holds w[16p + j][k] at p * 16K + 16k + j, zeros past the last channel), as
 * cpu_panels_make lays a model's copy out (cpu_gemm_panels.c) and as cpu_panels_stream makes
 * panels of w as it reads it (for cpu_gemm_rows.c's products of many rows).
 *
 * The few-row kernel (cpu_gemm_rows.c) reads w (N, K) as it is stored, so each of its
 * tiles takes dot products along K and folds them at the end; with AVX2's 16 registers its
 * 3 x 4 tile ran 16-row products at 44-62% of the core's multiply-add rate on the 2-vCPU EPYC
 * (Zen 3). On panels a tile of R rows of x takes one broadcast of x[i][k] per row and two loads
 * of the panel per k, and keeps 2R sums of 8 channels each: no fold, and each weight vector feeds
 * R multiply-adds. R is 4 to 6 (12 accumulators at 6); 2 or 3 rows take two panels at once, so
 * that 8 or 12 sums run. With AVX-512 one vector holds a panel's 16 channels, and a tile of up to
 * 12 rows takes two panels (24 of the 32 registers; panel_tile512). The sums run in k order per
 * output, as OpenBLAS's do, another order than the few-row tiles', so results agree to float
 * rounding (tests/unit/test_backend_gemm.c compares them with naive_gemm at every window of
 * channels). This file needs nothing of the products above it (cpu_gemm_rows.c and
 * cpu_gemm_panels.c call it). */
#include "backend/cpu/cpu_ops.h"

/* How far ahead the tiles ask for panels' lines. Left to the hardware prefetchers, which stop
 * at each 4 KiB page, the products of a Marian-base step (16 rows; 6 layers' 22M weights and the
 * 58101 x 512 projection, 207 MB, from memory) ran about a fifth slower on the 2-vCPU EPYC;
 * asking 1, 2 or 4 panels ahead made no difference beyond that VM's noise (docs/decoding.md
 * §9.3; `mtlab bench --only int8` times that step). 2 keeps a panel of K 2048 (128 KiB) well
 * inside the L2 cache. */
#define PANELS_AHEAD 2
/* k per block of the panels made as w is read (cpu_panels_stream): two panels of 128 k (16 KiB)
 * and the rows of x over those k (33 rows: 17 KiB) stay in the L1 cache while the tiles pass
 * over them, where whole panels (96 KiB at K 768) came from L2 for each tile of rows. A tile's
 * sums go on from block to block through out (resume, partial), exactly: every output is still
 * one chain of multiply-adds in k order. `make bench-rows`, one thread, from memory, GFLOP/s
 * whole K / blocks of 128 / 256: 32 x 3072 x 768 97.5 / 106.7 / 99.1, 32 x 768 x 1536 98.4 /
 * 113.0 / 107.8, 16 x 3072 x 768 79.7 / 80.4 / 79.8, 128 x 3072 x 768 143.9 / 140.2 / 142.8. */
#define STREAM_KC 128

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>

typedef cpu_panels_out panels_out;

/* The lines a tile asks for while it computes, so that the weights stream in from memory
 * meanwhile: for each k, one line of each of its NP panels-to-be, at
 * at + q q_stride + (k % 16) lo + (k / 16) hi floats. The next panels of a model's copy
 * (q_stride 16 K, lo 16, hi 256: line k of panel q), or the next 16 NP weight rows as stored
 * for panels made as they come in (q_stride 16 ldw, lo ldw, hi 16: row k % 16 of panel q, its
 * line k / 16): every line once either way. */
typedef struct {
    const float *at;
    size_t q_stride, lo, hi;
} lines_ahead;

static lines_ahead panels_ahead(const float *next_panel, int K)
{
    return (lines_ahead){.at = next_panel,
                         .q_stride = (size_t)CPU_PANEL * K,
                         .lo = CPU_PANEL,
                         .hi = (size_t)CPU_PANEL * CPU_PANEL};
}

/* Line k of each of the NP panels-to-be, asked for when k is the tile's turn (k = phase mod
 * step), so that the tiles over one panel share out the next one's lines; the tile's next turn */
__attribute__((always_inline)) static inline int ask_ahead(const lines_ahead *a, int NP, int k,
                                                           int step)
{
    const float *line = a->at + (size_t)(k % 16) * a->lo + (size_t)(k / 16) * a->hi;
#pragma GCC unroll 2
    for (int q = 0; q < NP; q++) _mm_prefetch((const char *)(line + q * a->q_stride), _MM_HINT_T0);
    return k + step;
}

/* R rows of x against NP panels (NP * 16 channels from channel c = 16 * first panel); sums of 8
 * channels in acc[i][v]. Inlined with constant R and NP so the accumulators stay in registers:
 * one panel loads its two vectors first and broadcasts each row in turn (2 + 1 + 2R registers);
 * two panels broadcast the R rows first and load each vector in turn (R + 1 + 4R). */
__attribute__((target("avx2,fma"), always_inline)) static inline void
panel_tile(int R, int NP, int K, const float *x, int ldx, const float *p, int c,
           const panels_out *o, const lines_ahead *ahead, int phase, int step)
{
    __m256 acc[6][4];
#pragma GCC unroll 6
    for (int i = 0; i < R; i++)
#pragma GCC unroll 4
        for (int v = 0; v < 2 * NP; v++) acc[i][v] = _mm256_setzero_ps();
    size_t stride = (size_t)CPU_PANEL * K;
    int next = phase;
    for (int k = 0; k < K; k++) {
        const float *pk = p + (size_t)k * CPU_PANEL;
        if (ahead && k == next) next = ask_ahead(ahead, NP, k, step);
        if (NP == 1) {
            __m256 w0 = _mm256_load_ps(pk), w1 = _mm256_load_ps(pk + 8);
#pragma GCC unroll 6
            for (int i = 0; i < R; i++) {
                __m256 b = _mm256_broadcast_ss(x + (size_t)i * ldx + k);
                acc[i][0] = _mm256_fmadd_ps(b, w0, acc[i][0]);
                acc[i][1] = _mm256_fmadd_ps(b, w1, acc[i][1]);
            }
        } else {
            __m256 b[6];
#pragma GCC unroll 6
            for (int i = 0; i < R; i++) b[i] = _mm256_broadcast_ss(x + (size_t)i * ldx + k);
#pragma GCC unroll 4
            for (int v = 0; v < 4; v++) {
                __m256 wv = _mm256_load_ps(pk + (v >> 1) * stride + 8 * (v & 1));
#pragma GCC unroll 6
                for (int i = 0; i < R; i++) acc[i][v] = _mm256_fmadd_ps(b[i], wv, acc[i][v]);
            }
        }
    }
    /* the window's columns of these channels: c - row0 .. */
    int lo = c - o->row0, hi = lo + NP * CPU_PANEL;
    if (lo >= 0 && hi <= o->OC) {
#pragma GCC unroll 6
        for (int i = 0; i < R; i++)
#pragma GCC unroll 4
            for (int v = 0; v < 2 * NP; v++) {
                float *y = o->out + (size_t)i * o->ldo + lo + 8 * v;
                __m256 s = _mm256_mul_ps(acc[i][v], _mm256_set1_ps(o->alpha));
                if (o->bias) s = _mm256_add_ps(s, _mm256_loadu_ps(o->bias + lo + 8 * v));
                _mm256_storeu_ps(y, s);
            }
        return;
    }
    /* a tile at an end of the window: through a buffer (every index constant, so that the
     * accumulators never need an address in the loop above) */
    float t[6][4 * 8];
#pragma GCC unroll 6
    for (int i = 0; i < R; i++)
#pragma GCC unroll 4
        for (int v = 0; v < 2 * NP; v++)
            _mm256_storeu_ps(t[i] + 8 * v, _mm256_mul_ps(acc[i][v], _mm256_set1_ps(o->alpha)));
    for (int i = 0; i < R; i++)
        for (int j = lo < 0 ? -lo : 0; j < NP * CPU_PANEL && lo + j < o->OC; j++)
            o->out[(size_t)i * o->ldo + lo + j] = o->bias ? t[i][j] + o->bias[lo + j] : t[i][j];
}

/* Tiles of rows for M rows: one for up to 6 (2 or 3 rows take two panels at once), else
 * ceil(M / 6) of 4 to 6 rows, balanced */
static int tile_count(int M) { return M <= 6 ? 1 : (M + 5) / 6; }

/* Rows of the tile starting at row m: the first M % tiles tiles take one row more */
static int tile_rows(int M, int m)
{
    int tiles = tile_count(M), base = M / tiles, big = M % tiles;
    return m / (base + 1) < big ? base + 1 : base;
}

/* Panels [p0, p1) against all M rows: each panel (or pair, for 2-3 rows) passes over every
 * tile of rows while it is in the L1/L2 cache. */
__attribute__((target("avx2,fma"))) static void
panels_block(int M, int p0, int p1, const float *x, int K, const float *panels, const panels_out *o)
{
    for (int p = p0; p < p1;) {
        const float *pp = panels + (size_t)p * CPU_PANEL * K;
        int c = p * CPU_PANEL;
        if (M <= 3 && p + 1 < p1) {
            /* the two panels after these, asked for while they compute */
            lines_ahead la = panels_ahead(pp + 2 * (size_t)CPU_PANEL * K, K);
            const lines_ahead *ahead = p + 3 < p1 ? &la : NULL;
            if (M == 3) panel_tile(3, 2, K, x, K, pp, c, o, ahead, 0, 1);
            else if (M == 2) panel_tile(2, 2, K, x, K, pp, c, o, ahead, 0, 1);
            else panel_tile(1, 2, K, x, K, pp, c, o, ahead, 0, 1);
            p += 2;
            continue;
        }
        /* the tiles of rows share out the lines of the panel PANELS_AHEAD on; each finds this
         * one in cache */
        lines_ahead la = panels_ahead(pp + PANELS_AHEAD * (size_t)CPU_PANEL * K, K);
        const lines_ahead *ahead = p + PANELS_AHEAD < p1 ? &la : NULL;
        int nt = tile_count(M);
        for (int m = 0, t = 0; m < M; t++) {
            int r = tile_rows(M, m);
            const float *xm = x + (size_t)m * K;
            panels_out om = *o;
            om.out = o->out + (size_t)m * o->ldo;
            switch (r) {
            case 6: panel_tile(6, 1, K, xm, K, pp, c, &om, ahead, t, nt); break;
            case 5: panel_tile(5, 1, K, xm, K, pp, c, &om, ahead, t, nt); break;
            case 4: panel_tile(4, 1, K, xm, K, pp, c, &om, ahead, t, nt); break;
            case 3: panel_tile(3, 1, K, xm, K, pp, c, &om, ahead, t, nt); break;
            case 2: panel_tile(2, 1, K, xm, K, pp, c, &om, ahead, t, nt); break;
            default: panel_tile(1, 1, K, xm, K, pp, c, &om, ahead, t, nt); break;
            }
            m += r;
        }
        p++;
    }
}

/* ---- AVX-512: one vector holds a panel's 16 channels, so R rows of x against NP panels keep
 * R * NP sums in registers (up to 12 x 2 = 24 of the 32), each x[i][k] broadcast once and each
 * panel vector feeding R multiply-adds: per k, NP loads and R broadcasts for R * NP
 * multiply-adds, where the few-row kernel's 4 x 4 tile loads 8 vectors for 16 and reloads its
 * x rows from the L2 cache for every 4 weight rows. */
#define TILE512_ROWS 12

/* How a tile's sums meet o->out (R rows by NP panels, window columns from lo), in the lanes that
 * lie in the window [0, OC): TILE_RESUME loads them (sums that go on from a block of k before),
 * TILE_CARRY stores them as they are (more of k to come), TILE_FINISH stores alpha times them plus
 * the bias */
enum { TILE_RESUME, TILE_CARRY, TILE_FINISH };
__attribute__((target("avx512f"), always_inline)) static inline void
tile_sums(int R, int NP, __m512 acc[][2], const panels_out *o, int lo, int how)
{
#pragma GCC unroll 12
    for (int i = 0; i < R; i++)
#pragma GCC unroll 2
        for (int v = 0; v < NP; v++) {
            /* lanes first .. end of the vector at window column c0 */
            int c0 = lo + 16 * v, first = c0 < 0 ? -c0 : 0, end = o->OC - c0;
            end = end < 16 ? end : 16;
            __mmask16 m =
                end <= first ? (__mmask16)0 : (__mmask16)(((1u << end) - 1) & ~((1u << first) - 1));
            float *at = o->out + (size_t)i * o->ldo + c0;
            if (how == TILE_RESUME) {
                acc[i][v] = _mm512_maskz_loadu_ps(m, at);
                continue;
            }
            __m512 s = acc[i][v];
            if (how == TILE_FINISH) {
                s = _mm512_mul_ps(s, _mm512_set1_ps(o->alpha));
                if (o->bias) s = _mm512_add_ps(s, _mm512_maskz_loadu_ps(m, o->bias + c0));
            }
            _mm512_mask_storeu_ps(at, m, s);
        }
}

__attribute__((target("avx512f"), always_inline)) static inline void
panel_tile512(int R, int NP, int K, const float *x, int ldx, const float *p, int c,
              const panels_out *o, const lines_ahead *ahead, int phase, int step)
{
    __m512 acc[TILE512_ROWS][2];
    int lo = c - o->row0; /* the window's column of channel c */
#pragma GCC unroll 12
    for (int i = 0; i < R; i++)
#pragma GCC unroll 2
        for (int v = 0; v < NP; v++) acc[i][v] = _mm512_setzero_ps();
    /* the sums go on from those out holds (exact: stored as they were) */
    if (o->resume) tile_sums(R, NP, acc, o, lo, TILE_RESUME);
    size_t stride = (size_t)CPU_PANEL * K;
    int next = phase;
    for (int k = 0; k < K; k++) {
        const float *pk = p + (size_t)k * CPU_PANEL;
        if (ahead && k == next) next = ask_ahead(ahead, NP, k, step);
        __m512 w0 = _mm512_load_ps(pk), w1 = NP == 2 ? _mm512_load_ps(pk + stride) : w0;
#pragma GCC unroll 12
        for (int i = 0; i < R; i++) {
            __m512 b = _mm512_set1_ps(x[(size_t)i * ldx + k]);
            acc[i][0] = _mm512_fmadd_ps(b, w0, acc[i][0]);
            if (NP == 2) acc[i][1] = _mm512_fmadd_ps(b, w1, acc[i][1]);
        }
    }
    /* more of k to come: the sums as they are; else alpha times them plus the bias */
    tile_sums(R, NP, acc, o, lo, o->partial ? TILE_CARRY : TILE_FINISH);
}

/* R (1 .. TILE512_ROWS) rows against NP panels, with R a constant in each call */
__attribute__((target("avx512f"))) static void
panel_rows512(int R, int NP, int K, const float *x, int ldx, const float *p, int c,
              const panels_out *o, const lines_ahead *ahead, int phase, int step)
{
#define TILE512_CASE(r)                                                           \
    case r:                                                                       \
        if (NP == 2) panel_tile512(r, 2, K, x, ldx, p, c, o, ahead, phase, step); \
        else panel_tile512(r, 1, K, x, ldx, p, c, o, ahead, phase, step);         \
        break;
    switch (R) {
        TILE512_CASE(12)
        TILE512_CASE(11)
        TILE512_CASE(10)
        TILE512_CASE(9)
        TILE512_CASE(8)
        TILE512_CASE(7)
        TILE512_CASE(6)
        TILE512_CASE(5)
        TILE512_CASE(4)
        TILE512_CASE(3)
        TILE512_CASE(2)
    default: TILE512_CASE(1)
    }
#undef TILE512_CASE
}

/* One or two panels at pp (the first channel c) against all M rows of x, in ceil(M / 12)
 * balanced tiles while they are in cache; the tiles share out the lines `ahead` names (or
 * none: NULL). */
__attribute__((target("avx512f"))) static void panels_tiles512(int M, int np, int K, const float *x,
                                                               int ldx, const float *pp, int c,
                                                               const panels_out *o,
                                                               const lines_ahead *ahead)
{
    int nt = (M + TILE512_ROWS - 1) / TILE512_ROWS, base = M / nt, big = M % nt;
    for (int m = 0, t = 0; t < nt; t++) {
        int r = base + (t < big);
        panels_out om = *o;
        om.out = o->out + (size_t)m * o->ldo;
        panel_rows512(r, np, K, x + (size_t)m * ldx, ldx, pp, c, &om, ahead, t, nt);
        m += r;
    }
}

/* Panels [p0, p1) against all M rows, two panels at a time (the last alone when p1 - p0 is
 * odd); the tiles over a pair ask for the lines of the pair after it. */
__attribute__((target("avx512f"))) static void panels_block512(int M, int p0, int p1,
                                                               const float *x, int K,
                                                               const float *panels,
                                                               const panels_out *o)
{
    for (int p = p0; p < p1;) {
        int np = p + 1 < p1 ? 2 : 1;
        const float *pp = panels + (size_t)p * CPU_PANEL * K;
        lines_ahead la = panels_ahead(pp + (size_t)np * CPU_PANEL * K, K);
        panels_tiles512(M, np, K, x, K, pp, p * CPU_PANEL, o, p + np < p1 ? &la : NULL);
        p += np;
    }
}

/* ---- Panels made as the weights come in, for a product of many rows (a prompt) on a matrix
 * that has none (cpu_gemm_rows.c hands these over; docs/decoding.md §9.4). The few-row kernel's
 * 4 x 4 tile reloads its x rows from the L2 cache for every 4 weight rows: 8 loads for 16
 * multiply-adds, and 32 x 3072 x 768 ran at 62-75 GFLOP/s on a Sapphire Rapids core. Here
 * each 32 weight rows are copied into two panels (16 x 16 blocks turned in registers) in the
 * thread's scratch, which the tiles above then read as they read a model's panels. */

/* r[i] lane j becomes r[j] lane i: pairs of rows interleaved by floats, then by pairs of
 * floats, which leaves lane l of row group q (rows 4q .. 4q+3) holding their column 4l + c in
 * v[c][q]; then the 128-bit lanes turned across the four groups. */
__attribute__((target("avx512f"), always_inline)) static inline void transpose16(__m512 r[16])
{
    __m512 t[16], v[4][4];
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
#pragma GCC unroll 4
    for (int q = 0; q < 4; q++) {
        __m512d a = _mm512_castps_pd(t[4 * q]), b = _mm512_castps_pd(t[4 * q + 2]);
        __m512d c = _mm512_castps_pd(t[4 * q + 1]), d = _mm512_castps_pd(t[4 * q + 3]);
        v[0][q] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, b));
        v[1][q] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, b));
        v[2][q] = _mm512_castpd_ps(_mm512_unpacklo_pd(c, d));
        v[3][q] = _mm512_castpd_ps(_mm512_unpackhi_pd(c, d));
    }
#pragma GCC unroll 4
    for (int c = 0; c < 4; c++) {
        __m512 a0 = _mm512_shuffle_f32x4(v[c][0], v[c][1], 0x44);
        __m512 a1 = _mm512_shuffle_f32x4(v[c][0], v[c][1], 0xEE);
        __m512 a2 = _mm512_shuffle_f32x4(v[c][2], v[c][3], 0x44);
        __m512 a3 = _mm512_shuffle_f32x4(v[c][2], v[c][3], 0xEE);
        r[c] = _mm512_shuffle_f32x4(a0, a2, 0x88);
        r[4 + c] = _mm512_shuffle_f32x4(a0, a2, 0xDD);
        r[8 + c] = _mm512_shuffle_f32x4(a1, a3, 0x88);
        r[12 + c] = _mm512_shuffle_f32x4(a1, a3, 0xDD);
    }
}

/* w's rows 0 .. n (n <= 16; zeros past n) as one panel of depth K at dst, laid out as
 * cpu_panels_make lays it out; a K that is not a multiple of 16 writes up to 15 lines past the
 * panel (zeros), which the caller has room for */
__attribute__((target("avx512f"))) static void panel_pack512(float *dst, const float *w, int ldw,
                                                             int n, int K)
{
    for (int k = 0; k < K; k += 16) {
        __mmask16 keep = K - k < 16 ? (__mmask16)((1u << (K - k)) - 1) : (__mmask16)0xFFFF;
        __m512 r[16];
#pragma GCC unroll 16
        for (int j = 0; j < 16; j++)
            r[j] =
                j < n ? _mm512_maskz_loadu_ps(keep, w + (size_t)j * ldw + k) : _mm512_setzero_ps();
        transpose16(r);
#pragma GCC unroll 16
        for (int i = 0; i < 16; i++) _mm512_store_ps(dst + (size_t)(k + i) * CPU_PANEL, r[i]);
    }
}

void cpu_panels_stream(int M, int n0, int n1, int K, float alpha, const float *x, int ldx,
                       const float *w, int ldw, float *y, int ldy)
{
    int KC = STREAM_KC;
    size_t depth = (size_t)CPU_PANEL * (K < KC ? K : KC);
    /* two panels, the second's last 16 lines past its end */
    float *buf = cpu_scratch(CPU_SCRATCH_PANELS, (2 * depth + 16 * CPU_PANEL) * sizeof(float));
    for (int c = n0; c < n1; c += 2 * CPU_PANEL) {
        int n = n1 - c < 2 * CPU_PANEL ? n1 - c : 2 * CPU_PANEL, np = n > CPU_PANEL ? 2 : 1;
        for (int k0 = 0; k0 < K; k0 += KC) {
            int kc = K - k0 < KC ? K - k0 : KC;
            for (int q = 0; q < np; q++) {
                int rows = n - q * CPU_PANEL;
                panel_pack512(buf + q * (size_t)CPU_PANEL * kc,
                              w + (size_t)(c + q * CPU_PANEL) * ldw + k0, ldw,
                              rows < CPU_PANEL ? rows : CPU_PANEL, kc);
            }
            /* while the tiles compute, the next block comes in: these rows' next k, or the
             * next 32 rows' first */
            const float *next = k0 + kc < K              ? w + (size_t)c * ldw + k0 + kc
                                : c + 2 * CPU_PANEL < n1 ? w + (size_t)(c + 2 * CPU_PANEL) * ldw
                                                         : NULL;
            lines_ahead la = {
                .at = next, .q_stride = (size_t)CPU_PANEL * ldw, .lo = (size_t)ldw, .hi = 16};
            /* the window is the columns up to n1, so that a part writes none of the next part's */
            panels_out o = {.out = y,
                            .ldo = ldy,
                            .row0 = 0,
                            .OC = n1,
                            .alpha = alpha,
                            .resume = k0 > 0,
                            .partial = k0 + kc < K};
            panels_tiles512(M, np, kc, x + k0, ldx, buf, c, &o, next ? &la : NULL);
        }
    }
}

void cpu_panel_tiles(cpu_rows_isa isa, int M, int p0, int p1, const float *x, int K,
                     const float *panels, const cpu_panels_out *o)
{
    if (isa == CPU_ROWS_AVX512) panels_block512(M, p0, p1, x, K, panels, o);
    else panels_block(M, p0, p1, x, K, panels, o);
}
#endif
