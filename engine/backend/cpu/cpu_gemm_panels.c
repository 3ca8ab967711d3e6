/* fp32 linear weights kept a second time in panels, for the products of decoding steps at batch 2
 * and more (docs/decoding.md §9.3): out (M, OC) = x (M, K) w[row0 .. row0+OC)^T + bias.
 *
 * The few-row kernel (cpu_gemm_rows.c) reads w (N, K) as it is stored, so each of its
 * tiles takes dot products along K and folds them at the end; with AVX2's 16 registers its
 * 3 x 4 tile ran 16-row products at 44-62% of the core's multiply-add rate on the 2-vCPU EPYC
 * (Zen 3). With w copied once into panels of 16 output channels, k running down each panel
 * (panel p holds w[16p + j][k] at p * 16K + 16k + j, zeros past the last channel), a tile of
 * R rows of x takes one broadcast of x[i][k] per row and two loads of the panel per k, and keeps
 * 2R sums of 8 channels each: no fold, and each weight vector feeds R multiply-adds. R is 4 to 6
 * (12 accumulators at 6); 2 or 3 rows take two panels at once, so that 8 or 12 sums run. With
 * AVX-512 one vector holds a panel's 16 channels, and a tile of up to 12 rows takes two panels
 * (24 of the 32 registers; panel_tile512).
 *
 * The copy is made by mt_model_set_fp32_panels (model_precision.c), for every model a runner
 * opens, as an mt_qmatrix of kind MT_QMATRIX_F32P that keeps a pointer to w: one row of x (a
 * batch-1 step, which streams w once in row_dots or row_dots_avx2) still reads w, and so do more
 * than cpu_panels_max_m() rows (a prompt) where OpenBLAS or BLIS takes them; where the packed
 * kernel does, it reads these panels as its packed W^T. Every CPU with AVX2 and FMA makes the
 * copies (cpu_panels_cpu). The sums run in k order per output, as OpenBLAS's do, another order
 * than the few-row kernel's, so results agree to float rounding (tests/unit/test_backend_gemm.c
 * compares them with naive_gemm at every window of channels). */
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/cpu_par.h"
#include "backend/cpu/cpu_pool.h"
#include "mtlab/error.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* How far ahead the tiles ask for panels' lines. Left to the hardware prefetchers, which stop
 * at each 4 KiB page, the products of a Marian-base step (16 rows; 6 layers' 22M weights and the
 * 58101 x 512 projection, 207 MB, from memory) ran about a fifth slower on the 2-vCPU EPYC;
 * asking 1, 2 or 4 panels ahead made no difference beyond that VM's noise (docs/decoding.md
 * §9.3; `mtlab bench --only int8` times that step). 2 keeps a panel of K 2048 (128 KiB) well
 * inside the L2 cache. */
#define PANELS_AHEAD 2
/* Multiply-adds from which a product is shared among threads: the few-row kernel's threshold
 * (cpu_gemm_rows.c) */
#define PARALLEL_MIN_MACS ((size_t)1 << 15)

int cpu_panels_cpu(void) { return cpu_gemm_rows_supported(CPU_ROWS_AVX2); }

/* products the panel kernels ran, for the tests */
static atomic_long panels_products;

long cpu_panels_products(void)
{
    return atomic_load_explicit(&panels_products, memory_order_relaxed);
}

/* MTLAB_FP32_PANELS=off (or 0) declines them everywhere, to compare or to save the memory */
int cpu_panels_supported(void) { return cpu_panels_cpu() && !cpu_env_off("MTLAB_FP32_PANELS"); }

int cpu_panels_make(mt_qmatrix *q, const float *w, int rows, int cols)
{
    memset(q, 0, sizeof *q);
    int np = (rows + CPU_PANEL - 1) / CPU_PANEL;
    q->panels = cpu_alloc((size_t)np * CPU_PANEL * (size_t)cols * sizeof(float));
    if (!q->panels) return -1;
    q->kind = MT_QMATRIX_F32P;
    q->rows = rows, q->cols = cols, q->ld = cols;
    q->f32 = w;
#pragma omp parallel for schedule(static) if (cpu_fork((size_t)rows * cols, (size_t)1 << 18))
    for (int p = 0; p < np; p++) {
        /* k outer: the panel is written in order while its 16 rows are read side by side */
        float *dst = q->panels + (size_t)p * CPU_PANEL * cols;
        int n = rows - p * CPU_PANEL < CPU_PANEL ? rows - p * CPU_PANEL : CPU_PANEL;
        const float *src = w + (size_t)p * CPU_PANEL * cols;
        for (int k = 0; k < cols; k++)
            for (int j = 0; j < n; j++) dst[(size_t)k * CPU_PANEL + j] = src[(size_t)j * cols + k];
    }
    return 0;
}

void cpu_panels_free(mt_qmatrix *q)
{
    cpu_free(q->panels);
    memset(q, 0, sizeof *q);
}

/* The plain loops over the panels, for tests: the same product read from the copy the kernel
 * reads, every sum in k order. */
void naive_panels_forward(float *out, const float *x, const mt_qmatrix *w, int row0,
                          const float *bias, int M, int OC)
{
    int K = w->cols;
    for (int m = 0; m < M; m++)
        for (int o = 0; o < OC; o++) {
            int c = row0 + o;
            const float *p = w->panels + (size_t)(c / CPU_PANEL) * CPU_PANEL * K + c % CPU_PANEL;
            float s = 0.0f;
            for (int k = 0; k < K; k++) s += x[(size_t)m * K + k] * p[(size_t)k * CPU_PANEL];
            out[(size_t)m * OC + o] = bias ? s + bias[o] : s;
        }
}

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>

/* Where a tile writes: out (rows at stride ldo) holds channels row0 .. row0+OC of the matrix,
 * bias (OC) or NULL */
typedef struct {
    float *out;
    int ldo, row0, OC;
    const float *bias;
} panels_out;

/* The next panels' lines: line k of each of the NP panels at `ahead`, asked for when k is the
 * tile's turn (k = phase mod step), so that the tiles over one panel share out the next one's
 * lines and the weights stream in from memory while they compute; the tile's next turn */
__attribute__((always_inline)) static inline int ask_ahead(const float *ahead, int NP,
                                                           size_t stride, int k, int step)
{
#pragma GCC unroll 2
    for (int q = 0; q < NP; q++)
        _mm_prefetch((const char *)(ahead + q * stride + (size_t)k * CPU_PANEL), _MM_HINT_T0);
    return k + step;
}

/* R rows of x against NP panels (NP * 16 channels from channel c = 16 * first panel); sums of 8
 * channels in acc[i][v]. Inlined with constant R and NP so the accumulators stay in registers:
 * one panel loads its two vectors first and broadcasts each row in turn (2 + 1 + 2R registers);
 * two panels broadcast the R rows first and load each vector in turn (R + 1 + 4R). */
__attribute__((target("avx2,fma"), always_inline)) static inline void
panel_tile(int R, int NP, int K, const float *x, int ldx, const float *p, int c,
           const panels_out *o, const float *ahead, int phase, int step)
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
        if (ahead && k == next) next = ask_ahead(ahead, NP, stride, k, step);
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
                __m256 s = acc[i][v];
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
        for (int v = 0; v < 2 * NP; v++) _mm256_storeu_ps(t[i] + 8 * v, acc[i][v]);
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
panels_block(int M, int p0, int p1, const float *x, int K, const mt_qmatrix *w, const panels_out *o)
{
    for (int p = p0; p < p1;) {
        const float *pp = w->panels + (size_t)p * CPU_PANEL * K;
        int c = p * CPU_PANEL;
        if (M <= 3 && p + 1 < p1) {
            /* the two panels after these, asked for while they compute */
            const float *ahead = p + 3 < p1 ? pp + 2 * (size_t)CPU_PANEL * K : NULL;
            if (M == 3) panel_tile(3, 2, K, x, K, pp, c, o, ahead, 0, 1);
            else if (M == 2) panel_tile(2, 2, K, x, K, pp, c, o, ahead, 0, 1);
            else panel_tile(1, 2, K, x, K, pp, c, o, ahead, 0, 1);
            p += 2;
            continue;
        }
        /* the tiles of rows share out the lines of the panel PANELS_AHEAD on; each finds this
         * one in cache */
        const float *ahead =
            p + PANELS_AHEAD < p1 ? pp + PANELS_AHEAD * (size_t)CPU_PANEL * K : NULL;
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

__attribute__((target("avx512f"), always_inline)) static inline void
panel_tile512(int R, int NP, int K, const float *x, int ldx, const float *p, int c,
              const panels_out *o, const float *ahead, int phase, int step)
{
    __m512 acc[TILE512_ROWS][2];
#pragma GCC unroll 12
    for (int i = 0; i < R; i++)
#pragma GCC unroll 2
        for (int v = 0; v < NP; v++) acc[i][v] = _mm512_setzero_ps();
    size_t stride = (size_t)CPU_PANEL * K;
    int next = phase;
    for (int k = 0; k < K; k++) {
        const float *pk = p + (size_t)k * CPU_PANEL;
        if (ahead && k == next) next = ask_ahead(ahead, NP, stride, k, step);
        __m512 w0 = _mm512_load_ps(pk), w1 = NP == 2 ? _mm512_load_ps(pk + stride) : w0;
#pragma GCC unroll 12
        for (int i = 0; i < R; i++) {
            __m512 b = _mm512_set1_ps(x[(size_t)i * ldx + k]);
            acc[i][0] = _mm512_fmadd_ps(b, w0, acc[i][0]);
            if (NP == 2) acc[i][1] = _mm512_fmadd_ps(b, w1, acc[i][1]);
        }
    }
    int lo = c - o->row0, hi = lo + NP * CPU_PANEL;
    if (lo >= 0 && hi <= o->OC) {
#pragma GCC unroll 12
        for (int i = 0; i < R; i++)
#pragma GCC unroll 2
            for (int v = 0; v < NP; v++) {
                __m512 s = acc[i][v];
                if (o->bias) s = _mm512_add_ps(s, _mm512_loadu_ps(o->bias + lo + 16 * v));
                _mm512_storeu_ps(o->out + (size_t)i * o->ldo + lo + 16 * v, s);
            }
        return;
    }
    /* a tile at an end of the window: through a buffer, as in panel_tile */
    float t[TILE512_ROWS][2 * CPU_PANEL];
#pragma GCC unroll 12
    for (int i = 0; i < R; i++)
#pragma GCC unroll 2
        for (int v = 0; v < NP; v++) _mm512_storeu_ps(t[i] + 16 * v, acc[i][v]);
    for (int i = 0; i < R; i++)
        for (int j = lo < 0 ? -lo : 0; j < NP * CPU_PANEL && lo + j < o->OC; j++)
            o->out[(size_t)i * o->ldo + lo + j] = o->bias ? t[i][j] + o->bias[lo + j] : t[i][j];
}

/* R (1 .. TILE512_ROWS) rows against NP panels, with R a constant in each call */
__attribute__((target("avx512f"))) static void
panel_rows512(int R, int NP, int K, const float *x, const float *p, int c, const panels_out *o,
              const float *ahead, int phase, int step)
{
#define TILE512_CASE(r)                                                         \
    case r:                                                                     \
        if (NP == 2) panel_tile512(r, 2, K, x, K, p, c, o, ahead, phase, step); \
        else panel_tile512(r, 1, K, x, K, p, c, o, ahead, phase, step);         \
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

/* Panels [p0, p1) against all M rows, two panels at a time (the last alone when p1 - p0 is
 * odd), each pair passing over ceil(M / 12) balanced tiles of rows while it is in cache; the
 * tiles share out the lines of the pair after it. */
__attribute__((target("avx512f"))) static void panels_block512(int M, int p0, int p1,
                                                               const float *x, int K,
                                                               const mt_qmatrix *w,
                                                               const panels_out *o)
{
    int nt = (M + TILE512_ROWS - 1) / TILE512_ROWS, base = M / nt, big = M % nt;
    for (int p = p0; p < p1;) {
        int np = p + 1 < p1 ? 2 : 1;
        const float *pp = w->panels + (size_t)p * CPU_PANEL * K;
        const float *ahead = p + np < p1 ? pp + (size_t)np * CPU_PANEL * K : NULL;
        for (int m = 0, t = 0; t < nt; t++) {
            int r = base + (t < big);
            panels_out om = *o;
            om.out = o->out + (size_t)m * o->ldo;
            panel_rows512(r, np, K, x + (size_t)m * K, pp, p * CPU_PANEL, &om, ahead, t, nt);
            m += r;
        }
        p += np;
    }
}

/* One product's arguments, for the pool's parts */
typedef struct {
    cpu_rows_isa isa;
    int M, K, p0, p1, units, parts;
    const float *x;
    const mt_qmatrix *w;
    const panels_out *o;
} panels_job;

/* Part p: a run of units of two panels */
static void panels_span(const panels_job *j, int p0, int p1)
{
    if (j->isa == CPU_ROWS_AVX512) panels_block512(j->M, p0, p1, j->x, j->K, j->w, j->o);
    else panels_block(j->M, p0, p1, j->x, j->K, j->w, j->o);
}

static void panels_part(void *ctx, int p)
{
    const panels_job *j = ctx;
    size_t u0, u1;
    cpu_pool_span((size_t)j->units, p, j->parts, &u0, &u1);
    int a = j->p0 + 2 * (int)u0, b = j->p0 + 2 * (int)u1 < j->p1 ? j->p0 + 2 * (int)u1 : j->p1;
    panels_span(j, a, b);
}

void cpu_panels_product_with(cpu_rows_isa isa, float *out, const float *x, const mt_qmatrix *w,
                             int row0, const float *bias, int M, int OC)
{
    int K = w->cols;
    atomic_fetch_add_explicit(&panels_products, 1, memory_order_relaxed);
    panels_out o = {.out = out, .ldo = OC, .row0 = row0, .OC = OC, .bias = bias};
    int p0 = row0 / CPU_PANEL, p1 = (row0 + OC + CPU_PANEL - 1) / CPU_PANEL;
    /* pairs of panels per unit, so that every tile but a window's last keeps two panels; runs
     * of units per part */
    panels_job j = {.isa = isa,
                    .M = M,
                    .K = K,
                    .p0 = p0,
                    .p1 = p1,
                    .units = (p1 - p0 + 1) / 2,
                    .x = x,
                    .w = w,
                    .o = &o};
    if (!cpu_fork((size_t)M * OC * K, PARALLEL_MIN_MACS)) {
        panels_span(&j, p0, p1);
        return;
    }
    j.parts = cpu_pool_parts((size_t)j.units);
    cpu_pool_run(j.parts, panels_part, &j);
}

void cpu_panels_product(float *out, const float *x, const mt_qmatrix *w, int row0,
                        const float *bias, int M, int OC)
{
    cpu_rows_isa isa = cpu_rows_best_isa();
    if (isa == CPU_ROWS_NONE) naive_panels_forward(out, x, w, row0, bias, M, OC);
    else cpu_panels_product_with(isa, out, x, w, row0, bias, M, OC);
}
#else
void cpu_panels_product_with(cpu_rows_isa isa, float *out, const float *x, const mt_qmatrix *w,
                             int row0, const float *bias, int M, int OC)
{
    (void)isa;
    naive_panels_forward(out, x, w, row0, bias, M, OC);
}

void cpu_panels_product(float *out, const float *x, const mt_qmatrix *w, int row0,
                        const float *bias, int M, int OC)
{
    naive_panels_forward(out, x, w, row0, bias, M, OC);
}
#endif

/* The most rows the panel kernel takes: CPU_PANELS_MAX_M with AVX2; with AVX-512, whose tiles
 * run at 150-210 GFLOP/s from 8 rows on, CPU_PANELS_MAX_M_AVX512. Timed on a 2-vCPU Xeon
 * (Sapphire Rapids class), one thread, best of 9, panels / OpenBLAS 0.3.21 (SkylakeX kernels) /
 * the few-row kernel on w, GFLOP/s: 16 x 3072 x 768 (rows x outputs x K) 153 / 76 / 111, 33 x
 * 3072 x 768 201 / 104 / 115, 64 x 2048 x 512 202 / 145 / 112, 128 x 3072 x 768 202 / 176 /
 * 115, 128 x 1024 x 4096 164 / 146 / 79; at 528 rows, in runs of 128, no faster than OpenBLAS
 * (170-183 against 168-183), which keeps those. */
int cpu_panels_max_m(void)
{
    return cpu_rows_best_isa() == CPU_ROWS_AVX512 ? CPU_PANELS_MAX_M_AVX512 : CPU_PANELS_MAX_M;
}

void cpu_panels_forward(float *out, const float *x, const mt_qmatrix *w, int row0,
                        const float *bias, size_t BT, int OC)
{
    int K = w->cols, max_m = cpu_panels_max_m();
    if (BT >= 2 && BT <= (size_t)max_m) {
        cpu_panels_product(out, x, w, row0, bias, (int)BT, OC);
        return;
    }
    /* more rows (a prompt, beam search's batch of beams): where the packed kernel takes the
     * product, it reads these panels as its packed W^T instead of copying W into panels again at
     * every call (the same floats); one row, and the other libraries, read w */
    int ready = BT > (size_t)max_m && row0 % CPU_PANEL == 0 &&
                cpu_sgemm_pick(0, 1, (int)BT, OC, K) == CPU_SGEMM_PACKED;
    const float *from = w->panels + (size_t)(row0 / CPU_PANEL) * CPU_PANEL * K;
    if (!ready || !cpu_gemm_packed_panels((int)BT, OC, K, x, K, from, out, OC))
        cpu_gemm(0, 1, (int)BT, OC, K, 1.0f, x, K, w->f32 + (size_t)row0 * K, K, 0.0f, out, OC);
    if (bias) cpu_bias_add(out, bias, BT, OC);
}
