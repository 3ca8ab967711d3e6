/* fp32 linear weights kept a second time in panels, for the products of decoding steps at batch 2
 * and more (docs/decoding.md §9.3): out (M, OC) = x (M, K) w[row0 .. row0+OC)^T + bias, on the
 * panel kernel's tiles (cpu_panel_tiles.c), which with w copied once into panels of 16 output
 * channels need no fold at the end and feed each weight vector to every row of a tile.
 *
 * The copy is made by mt_model_set_fp32_panels (model_precision.c), for every model a runner
 * opens, as an mt_qmatrix of kind MT_QMATRIX_F32P that keeps a pointer to w: one row of x (a
 * batch-1 step, which streams w once in row_dots or row_dots_avx2) still reads w, and so do more
 * than cpu_panels_max_m() rows (a prompt) where OpenBLAS or BLIS takes them; where the packed
 * kernel does, it reads these panels as its packed W^T. Every CPU with AVX2 and FMA makes the
 * copies (cpu_panels_cpu). */
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/cpu_par.h"
#include "backend/cpu/cpu_pool.h"
#include "mtlab/error.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

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
    for (int p = 0; p < np; p++) cpu_gemm_w_panel(w, rows, cols, p, q->panels);
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
/* One product's arguments, for the pool's parts */
typedef struct {
    cpu_rows_isa isa;
    int M, K, p0, p1, units, parts;
    const float *x;
    const mt_qmatrix *w;
    const cpu_panels_out *o;
} panels_job;

/* Part p: a run of units of two panels */
static void panels_span(const panels_job *j, int p0, int p1)
{
    cpu_panel_tiles(j->isa, j->M, p0, p1, j->x, j->K, j->w->panels, j->o);
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
    cpu_panels_out o = {.out = out, .ldo = OC, .row0 = row0, .OC = OC, .bias = bias, .alpha = 1.0f};
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
