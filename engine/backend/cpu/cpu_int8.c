/* int8 linear layers on the CPU (docs/quantization.md): quantizing weights into the packed
 * layout and activations per row, the choice of kernel, and the driver that spreads a
 * product's channel blocks over the threads (cpu_pool.h); the kernels dequantize as they store.
 *
 * Letters: M rows of activations (BT), N output channels (OC), ld the padded row width in
 * bytes (the input width C rounded up to MT_INT8_ALIGN). */
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/cpu_par.h"
#include "backend/cpu/cpu_pool.h"
#include "backend/cpu/cpu_simd.h"
#include "mtlab/error.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Blocks of channels one of several threads takes at a time: 128 channels, a kernel's widest
 * register tile (one thread takes them all in one call) */
enum { CHUNK_BLOCKS = 8 };
/* Rows one kernel call takes: a prefill's quantized rows (ROWS x ld bytes) stay in L2 while
 * every block of weights passes over them */
enum { ROWS = 256 };
/* Rows of activations from which their quantization is shared among the threads */
enum { QUANTIZE_PARALLEL_ROWS = 64 };
/* Multiply-adds from which a product is shared among the threads. 2^16: at batch 1 a small
 * model's d_model x d_model projections (transformer-small's 192 x 192, 37K) stay on one
 * thread and its FFN projections (147K) spread: enough forks a step that the other thread is
 * still spinning (docs/decoding.md §9.1) when the vocabulary projection comes. At 2^18 only
 * that projection forked, once a step, and found the thread asleep: two threads decoded
 * transformer-small in int8 at batch 1 at 0.75x of one (0.95x at 2^16; docs/decoding.md §9.1
 * has the figures). 2^15 forks the 37K products too, for less. */
#define CPU_INT8_PARALLEL_MACS (1u << 16)

/* q (ld) = round(x / scale) with scale = max|x| / 127 (docs/quantization.md §1); bytes past C
 * are 0. Returns the scale. Compiled per x86-64 level: below SSE4.1 nearbyintf is a call per
 * element. */
MT_CPU_CLONES float cpu_int8_quantize_row(int8_t *q, const float *x, int C, int ld)
{
    float amax = 0.0f;
#pragma omp simd reduction(max : amax)
    for (int k = 0; k < C; k++) {
        float a = fabsf(x[k]);
        amax = a > amax ? a : amax;
    }
    float scale = amax > 0.0f ? amax / 127.0f : 1.0f;
    float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
    /* nearbyintf rounds ties to even as lrintf does, and vectorizes; a NaN (from a NaN or
     * infinite input) becomes 0 rather than an undefined conversion */
#pragma omp simd
    for (int k = 0; k < C; k++) {
        float v = nearbyintf(x[k] * inv);
        v = v > 127.0f ? 127.0f : v < -127.0f ? -127.0f : v == v ? v : 0.0f;
        q[k] = (int8_t)v;
    }
    memset(q + C, 0, (size_t)(ld - C));
    return scale;
}

int cpu_int8_ld(int C) { return (C + MT_INT8_ALIGN - 1) / MT_INT8_ALIGN * MT_INT8_ALIGN; }

/* ---- kernels */

static const cpu_int8_kernel kernels[] = {
    {"ref", "", 0, cpu_int8_quantize_row, naive_int8_product},
    {"avx2", "avx2", 0, cpu_int8_quantize_row_avx2, cpu_int8_product_avx2},
    {"avx512-vnni", "avx512vnni", 1, cpu_int8_quantize_row_avx512_vnni,
     cpu_int8_product_avx512_vnni},
};
enum { N_KERNELS = sizeof kernels / sizeof kernels[0] };

static int kernel_supported(const cpu_int8_kernel *k)
{
    __builtin_cpu_init();
    if (!strcmp(k->cpu_feature, "")) return 1;
    if (!strcmp(k->cpu_feature, "avx2")) return __builtin_cpu_supports("avx2");
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vnni");
}

const cpu_int8_kernel *cpu_int8_kernel_named(const char *name)
{
    for (int i = 0; i < N_KERNELS; i++)
        if (!strcmp(kernels[i].name, name))
            return kernel_supported(&kernels[i]) ? &kernels[i] : NULL;
    return NULL;
}

/* MTLAB_INT8_KERNEL=ref|avx2|avx512-vnni forces a kernel (tests run each one the machine has
 * against the reference); otherwise the fastest this CPU runs. */
const cpu_int8_kernel *cpu_int8_kernel_pick(void)
{
    const char *forced = getenv("MTLAB_INT8_KERNEL");
    if (forced && *forced) {
        const cpu_int8_kernel *k = cpu_int8_kernel_named(forced);
        if (!k) {
            char have[64] = "";
            for (int i = 0; i < N_KERNELS; i++)
                if (kernel_supported(&kernels[i]))
                    snprintf(have + strlen(have), sizeof have - strlen(have), "%s%s",
                             *have ? ", " : "", kernels[i].name);
            mt_error("MTLAB_INT8_KERNEL=%s: not a kernel this CPU runs (it runs: %s)", forced,
                     have);
        }
        return k;
    }
    for (int i = N_KERNELS - 1; i > 0; i--)
        if (kernel_supported(&kernels[i])) return &kernels[i];
    return &kernels[0];
}

/* ---- weights */

int cpu_qmatrix_make(mt_qmatrix *q, mt_qkind kind, const float *w, int rows, int cols)
{
    memset(q, 0, sizeof *q);
    if (kind == MT_QMATRIX_F32P)
        return cpu_panels_supported() ? cpu_panels_make(q, w, rows, cols) : 1;
    if (kind != MT_QMATRIX_INT8)
        return mt_error("the CPU backend has no bf16 linear layers (bf16 runs on a CUDA device; "
                        "on the CPU use fp32 or int8)");
    if (!cpu_int8_kernel_pick()) return -1;
    int padded = (rows + CPU_INT8_BLOCK - 1) / CPU_INT8_BLOCK * CPU_INT8_BLOCK;
    q->rows = rows;
    q->cols = cols;
    q->ld = cpu_int8_ld(cols);
    q->q = cpu_alloc((size_t)padded * (size_t)q->ld); /* zero: padding rows and columns */
    q->scale = cpu_alloc((size_t)padded * sizeof *q->scale);
    q->sum = cpu_alloc((size_t)padded * sizeof *q->sum);
    if (!q->q || !q->scale || !q->sum) {
        cpu_qmatrix_free(q);
        return -1;
    }
    int ld = q->ld;
#pragma omp parallel
    {
        int8_t *row = mt_xmalloc((size_t)ld);
#pragma omp for schedule(static)
        for (int r = 0; r < padded; r++) {
            if (r >= rows) {
                q->scale[r] = 1.0f;
                continue;
            }
            q->scale[r] = cpu_int8_quantize_row(row, w + (size_t)r * cols, cols, ld);
            int32_t sum = 0;
            for (int k = 0; k < ld; k++) {
                q->q[cpu_int8_at(ld, r, k)] = row[k];
                sum += row[k];
            }
            q->sum[r] = sum;
        }
        free(row);
    }
    return 0;
}

/* The naive table's: int8 (its reference kernel) and no fp32 panels */
int naive_qmatrix_make(mt_qmatrix *q, mt_qkind kind, const float *w, int rows, int cols)
{
    if (kind == MT_QMATRIX_F32P) {
        memset(q, 0, sizeof *q);
        return 1;
    }
    return cpu_qmatrix_make(q, kind, w, rows, cols);
}

void cpu_qmatrix_free(mt_qmatrix *q)
{
    if (q->kind == MT_QMATRIX_F32P) {
        cpu_panels_free(q);
        return;
    }
    cpu_free(q->q);
    cpu_free(q->scale);
    cpu_free(q->sum);
    memset(q, 0, sizeof *q);
}

/* ---- the product */

/* One product's work: its activations quantized, then its chunks of channel blocks, shared by
 * the pool's threads (cpu_pool.h) or all run on the calling thread. */
typedef struct {
    const cpu_int8_kernel *kern;
    float *out;
    const float *x;
    const mt_qmatrix *w;
    int row0, OC;
    const float *bias;
    size_t BT;
    int8_t *xq; /* (BT, ld) */
    float *xs; /* (BT) */
    int b0, cb, n_chunks; /* first block, blocks per chunk, chunks */
    int quant_parts; /* parts of the rows' quantization on the pool */
} product;

static void quantize_rows(const product *p, size_t m0, size_t m1)
{
    int C = p->w->cols, ld = p->w->ld;
    for (size_t m = m0; m < m1; m++)
        p->xs[m] = p->kern->quantize_row(p->xq + m * ld, p->x + m * C, C, ld);
}

static void quantize_part(void *ctx, int t)
{
    const product *p = ctx;
    size_t m0, m1;
    cpu_pool_span(p->BT, t, p->quant_parts, &m0, &m1);
    quantize_rows(p, m0, m1);
}

/* Chunk t: its channels (clipped to row0 .. row0+OC) against every row */
static void chunk_part(void *ctx, int t)
{
    const product *p = ctx;
    const mt_qmatrix *w = p->w;
    int ld = w->ld, row0 = p->row0, OC = p->OC;
    size_t BT = p->BT;
    int lo = (p->b0 + t * p->cb) * CPU_INT8_BLOCK, hi = lo + p->cb * CPU_INT8_BLOCK;
    lo = lo > row0 ? lo : row0;
    hi = hi < row0 + OC ? hi : row0 + OC;
    for (size_t m0 = 0; m0 < BT; m0 += ROWS) {
        cpu_int8_call c = {
            .out = p->out + m0 * OC + (lo - row0),
            .ldo = (size_t)OC,
            .xq = p->xq + m0 * ld,
            .xs = p->xs + m0,
            .M = BT - m0 < ROWS ? (int)(BT - m0) : ROWS,
            .w = w,
            .j0 = lo,
            .N = hi - lo,
            .bias = p->bias ? p->bias + (lo - row0) : NULL,
        };
        p->kern->product(&c);
    }
}

void cpu_qlinear_with(const cpu_int8_kernel *kern, int threaded, float *out, const float *x,
                      const mt_qmatrix *w, int row0, const float *bias, size_t BT, int OC)
{
    size_t macs = BT * (size_t)OC * (size_t)w->ld;
    /* threads only with threads to share it and enough work (backend/cpu/cpu_par.h) */
    int par = threaded && cpu_fork(macs, CPU_INT8_PARALLEL_MACS - 1);
    /* the blocks holding channels row0 .. row0+OC, in chunks; with several threads, chunks
     * narrow (down to one block) until each thread has two: a batch-16 step's d_model-wide
     * projections are 12 blocks, 2 chunks of 8 would leave one thread idle */
    int b0 = row0 / CPU_INT8_BLOCK, b1 = (row0 + OC + CPU_INT8_BLOCK - 1) / CPU_INT8_BLOCK;
    int threads = par ? cpu_pool_threads() : 1, cb = threads > 1 ? CHUNK_BLOCKS : b1 - b0;
    while (threads > 1 && cb > 1 && (b1 - b0 + cb - 1) / cb < 2 * threads) cb /= 2;
    product p = {.kern = kern,
                 .out = out,
                 .x = x,
                 .w = w,
                 .row0 = row0,
                 .OC = OC,
                 .bias = bias,
                 .BT = BT,
                 .xq = cpu_scratch(CPU_SCRATCH_INT8_X, BT * (size_t)w->ld),
                 .xs = cpu_scratch(CPU_SCRATCH_INT8_SCALES, BT * sizeof(float)),
                 .b0 = b0,
                 .cb = cb,
                 .n_chunks = (b1 - b0 + cb - 1) / cb};
    /* a step's few rows quantize faster here than a job takes to hand out */
    if (par && BT >= QUANTIZE_PARALLEL_ROWS) {
        p.quant_parts = threads;
        cpu_pool_run(p.quant_parts, quantize_part, &p);
    } else {
        quantize_rows(&p, 0, BT);
    }
    cpu_pool_run_if(par, p.n_chunks, chunk_part, &p);
}

void cpu_qlinear_forward(float *out, const float *x, const mt_qmatrix *w, int row0,
                         const float *bias, size_t BT, int OC)
{
    if (w->kind == MT_QMATRIX_F32P) {
        cpu_panels_forward(out, x, w, row0, bias, BT, OC);
        return;
    }
    cpu_qlinear_with(cpu_int8_kernel_pick(), 1, out, x, w, row0, bias, BT, OC);
}

void naive_qlinear_forward(float *out, const float *x, const mt_qmatrix *w, int row0,
                           const float *bias, size_t BT, int OC)
{
    cpu_qlinear_with(cpu_int8_kernel_named("ref"), 0, out, x, w, row0, bias, BT, OC);
}
