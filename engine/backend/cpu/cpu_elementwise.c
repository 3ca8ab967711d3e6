/* Elementwise operations and small row utilities: one loop each, on a team when it is large
 * enough (cpu_par.h). The per-element math comes from engine/math/ so the CUDA kernels compute
 * exactly the same thing. */
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/cpu_par.h"
#include "backend/cpu/cpu_simd.h"
#include "math/activation.h"

#include <string.h>

/* Loops shorter than this stay on the calling thread: waking the team costs more than the work
 * (cpu_par.h). */
#define PAR_MIN 16384

/* The loops below run in chunks of CPU_CHUNK through functions cloned per vector width
 * (cpu_simd.h): an OpenMP region's own body is compiled for the baseline x86-64 only. Outputs may
 * be one of the inputs (in place), element for element. */
MT_CPU_CLONES static void fill_chunk(float *x, size_t n, float value)
{
#pragma omp simd
    for (size_t i = 0; i < n; i++) x[i] = value;
}

MT_CPU_CLONES static void scale_chunk(float *x, size_t n, float s)
{
#pragma omp simd
    for (size_t i = 0; i < n; i++) x[i] *= s;
}

MT_CPU_CLONES static void axpy_chunk(float *y, const float *x, size_t n, float a)
{
#pragma omp simd
    for (size_t i = 0; i < n; i++) y[i] += a * x[i];
}

MT_CPU_CLONES static void add_chunk(float *out, const float *a, const float *b, size_t n)
{
#pragma omp simd
    for (size_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}

MT_CPU_CLONES static void mul_chunk(float *out, const float *a, const float *b, size_t n)
{
#pragma omp simd
    for (size_t i = 0; i < n; i++) out[i] = a[i] * b[i];
}

MT_CPU_CLONES static void mul_backward_chunk(float *da, float *db, const float *dout,
                                             const float *a, const float *b, size_t n)
{
    if (da) {
#pragma omp simd
        for (size_t i = 0; i < n; i++) da[i] += dout[i] * b[i];
    }
    if (db) {
#pragma omp simd
        for (size_t i = 0; i < n; i++) db[i] += dout[i] * a[i];
    }
}

void cpu_fill(float *x, size_t n, float value)
{
    CPU_FOR(cpu_fork(n, PAR_MIN), "omp parallel for schedule(static)",
            (size_t i0 = 0; i0 < n; i0 += CPU_CHUNK),
            fill_chunk(x + i0, cpu_chunk_len(i0, n), value));
}

void cpu_scale(float *x, size_t n, float s)
{
    CPU_FOR(cpu_fork(n, PAR_MIN), "omp parallel for schedule(static)",
            (size_t i0 = 0; i0 < n; i0 += CPU_CHUNK), scale_chunk(x + i0, cpu_chunk_len(i0, n), s));
}

void cpu_axpy(float *y, const float *x, size_t n, float a)
{
    CPU_FOR(cpu_fork(n, PAR_MIN), "omp parallel for schedule(static)",
            (size_t i0 = 0; i0 < n; i0 += CPU_CHUNK),
            axpy_chunk(y + i0, x + i0, cpu_chunk_len(i0, n), a));
}

void cpu_add(float *out, const float *a, const float *b, size_t n)
{
    CPU_FOR(cpu_fork(n, PAR_MIN), "omp parallel for schedule(static)",
            (size_t i0 = 0; i0 < n; i0 += CPU_CHUNK),
            add_chunk(out + i0, a + i0, b + i0, cpu_chunk_len(i0, n)));
}

void cpu_mul(float *out, const float *a, const float *b, size_t n)
{
    CPU_FOR(cpu_fork(n, PAR_MIN), "omp parallel for schedule(static)",
            (size_t i0 = 0; i0 < n; i0 += CPU_CHUNK),
            mul_chunk(out + i0, a + i0, b + i0, cpu_chunk_len(i0, n)));
}

void cpu_mul_backward(float *da, float *db, const float *dout, const float *a, const float *b,
                      size_t n)
{
    CPU_FOR(cpu_fork(n, PAR_MIN), "omp parallel for schedule(static)",
            (size_t i0 = 0; i0 < n; i0 += CPU_CHUNK),
            mul_backward_chunk(da ? da + i0 : NULL, db ? db + i0 : NULL, dout + i0, a + i0, b + i0,
                               cpu_chunk_len(i0, n)));
}

/* The activation loops run in chunks through cloned `omp simd` functions (cpu_simd.h), one loop
 * per activation so that each vectorises with its own libmvec calls. */
#define ACT_LOOP(stmt) _Pragma("omp simd") for (size_t i = 0; i < n; i++) stmt

/* out = act(x) over n elements */
MT_CPU_CLONES static void act_forward_chunk(mt_act act, float *restrict out,
                                            const float *restrict x, size_t n)
{
    switch (act) {
    case MT_ACT_RELU: ACT_LOOP(out[i] = mt_reluf(x[i])); break;
    case MT_ACT_SILU: ACT_LOOP(out[i] = mt_siluf(x[i])); break;
    case MT_ACT_SOFTPLUS: ACT_LOOP(out[i] = mt_softplusf(x[i])); break;
    case MT_ACT_GELU: ACT_LOOP(out[i] = mt_geluf(x[i])); break;
    case MT_ACT_TANH: ACT_LOOP(out[i] = tanhf(x[i])); break;
    }
}

/* dx += dout * act'(x) over n elements */
MT_CPU_CLONES static void act_backward_chunk(mt_act act, float *restrict dx,
                                             const float *restrict dout, const float *restrict x,
                                             size_t n)
{
    switch (act) {
    case MT_ACT_RELU: ACT_LOOP(dx[i] += dout[i] * mt_relu_gradf(x[i])); break;
    case MT_ACT_SILU: ACT_LOOP(dx[i] += dout[i] * mt_silu_gradf(x[i])); break;
    case MT_ACT_SOFTPLUS: ACT_LOOP(dx[i] += dout[i] * mt_softplus_gradf(x[i])); break;
    case MT_ACT_GELU: ACT_LOOP(dx[i] += dout[i] * mt_gelu_gradf(x[i])); break;
    case MT_ACT_TANH: ACT_LOOP(dx[i] += dout[i] * mt_tanh_gradf(x[i])); break;
    }
}

void cpu_act_forward(mt_act act, float *out, const float *x, size_t n)
{
    CPU_FOR(cpu_fork(n, PAR_MIN), "omp parallel for schedule(static)",
            (size_t i0 = 0; i0 < n; i0 += CPU_CHUNK),
            act_forward_chunk(act, out + i0, x + i0, cpu_chunk_len(i0, n)));
}

void cpu_act_backward(mt_act act, float *dx, const float *dout, const float *x, size_t n)
{
    CPU_FOR(cpu_fork(n, PAR_MIN), "omp parallel for schedule(static)",
            (size_t i0 = 0; i0 < n; i0 += CPU_CHUNK),
            act_backward_chunk(act, dx + i0, dout + i0, x + i0, cpu_chunk_len(i0, n)));
}

/* out = value * SiLU(gate) over n elements */
MT_CPU_CLONES static void gate_forward_chunk(float *restrict out, const float *restrict value,
                                             const float *restrict gate, size_t n)
{
#pragma omp simd
    for (size_t i = 0; i < n; i++) out[i] = value[i] * mt_siluf(gate[i]);
}

/* dvalue += dout * SiLU(gate); dgate += dout * value * SiLU'(gate) (either may be NULL) */
MT_CPU_CLONES static void gate_backward_chunk(float *restrict dvalue, float *restrict dgate,
                                              const float *restrict dout,
                                              const float *restrict value,
                                              const float *restrict gate, size_t n)
{
    if (dvalue) {
#pragma omp simd
        for (size_t i = 0; i < n; i++) dvalue[i] += dout[i] * mt_siluf(gate[i]);
    }
    if (dgate) {
#pragma omp simd
        for (size_t i = 0; i < n; i++) dgate[i] += dout[i] * value[i] * mt_silu_gradf(gate[i]);
    }
}

void cpu_gate_forward(float *out, const float *value, const float *gate, size_t n)
{
    CPU_FOR(cpu_fork(n, PAR_MIN), "omp parallel for schedule(static)",
            (size_t i0 = 0; i0 < n; i0 += CPU_CHUNK),
            gate_forward_chunk(out + i0, value + i0, gate + i0, cpu_chunk_len(i0, n)));
}

void cpu_gate_backward(float *dvalue, float *dgate, const float *dout, const float *value,
                       const float *gate, size_t n)
{
    CPU_FOR(cpu_fork(n, PAR_MIN), "omp parallel for schedule(static)",
            (size_t i0 = 0; i0 < n; i0 += CPU_CHUNK),
            gate_backward_chunk(dvalue ? dvalue + i0 : NULL, dgate ? dgate + i0 : NULL, dout + i0,
                                value + i0, gate + i0, cpu_chunk_len(i0, n)));
}

void cpu_mask_rows(float *x, const uint8_t *mask, size_t rows, int cols)
{
    for (size_t r = 0; r < rows; r++)
        if (!mask[r]) memset(x + r * (size_t)cols, 0, (size_t)cols * sizeof(float));
}

void cpu_bias_add(float *out, const float *bias, size_t rows, int cols)
{
    CPU_FOR(cpu_fork(rows * (size_t)cols, PAR_MIN), "omp parallel for",
            (size_t r = 0; r < rows; r++),
            add_chunk(out + r * (size_t)cols, out + r * (size_t)cols, bias, (size_t)cols));
}

/* dbias[c] += sum_r dout[r, c] for the nc <= CPU_COL_GROUP columns from c0, each summed down
 * the rows in order in double (as naive_bias_backward does), a span of a row at a time */
MT_CPU_CLONES static void bias_backward_cols(float *dbias, const float *dout, size_t rows, int cols,
                                             int c0, int nc)
{
    double acc[CPU_COL_GROUP];
    for (int j = 0; j < nc; j++) acc[j] = 0.0;
    for (size_t r = 0; r < rows; r++) {
        const float *g = dout + r * (size_t)cols + c0;
#pragma omp simd
        for (int j = 0; j < nc; j++) acc[j] += g[j];
    }
    for (int j = 0; j < nc; j++) dbias[c0 + j] += (float)acc[j];
}

/* threads own groups of columns, so nothing races and the thread count changes no bit */
void cpu_bias_backward(float *dbias, const float *dout, size_t rows, int cols)
{
    int fork = cpu_fork(rows * (size_t)cols, PAR_MIN);
    int w = cpu_col_group(cols, fork ? omp_get_max_threads() : 1), n_groups = (cols + w - 1) / w;
    CPU_FOR(fork, "omp parallel for schedule(static)", (int grp = 0; grp < n_groups; grp++),
            int c0 = grp * w;
            bias_backward_cols(dbias, dout, rows, cols, c0, cols - c0 < w ? cols - c0 : w));
}

/* Copies of more floats than this share their rows among the threads: a beam search's reorder
 * moves megabytes of cached keys and values between two steps, and on one thread that was a
 * gap long enough for the others to sleep (docs/decoding.md §9.1) */
#define COPY_PAR_MIN 65536

void cpu_copy2d(float *dst, int dst_ld, const float *src, int src_ld, size_t rows, int cols)
{
    size_t n = rows * (size_t)cols;
    /* rows may overlap (memmove): in order on one thread then, as a serial loop would take them */
    const float *dst_end = dst + (rows ? (rows - 1) * (size_t)dst_ld + (size_t)cols : 0);
    const float *src_end = src + (rows ? (rows - 1) * (size_t)src_ld + (size_t)cols : 0);
    int apart = dst_end <= src || src_end <= dst;
    CPU_FOR(
        apart && cpu_fork(n, COPY_PAR_MIN), "omp parallel for schedule(static)",
        (size_t r = 0; r < rows; r++),
        memmove(dst + r * (size_t)dst_ld, src + r * (size_t)src_ld, (size_t)cols * sizeof(float)));
}

void cpu_index_select(float *out, const float *src, size_t src_ld, const int32_t *idx, int n_idx,
                      size_t cols)
{
    CPU_FOR(cpu_fork((size_t)n_idx * cols, COPY_PAR_MIN), "omp parallel for schedule(static)",
            (int i = 0; i < n_idx; i++),
            memcpy(out + (size_t)i * cols, src + (size_t)idx[i] * src_ld, cols * sizeof(float)));
}
