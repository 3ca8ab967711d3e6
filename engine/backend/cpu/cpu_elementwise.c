/* Elementwise operations and small row utilities: one loop each, shared among the threads when
 * it is large enough (cpu_par.h; the elementwise loops on the pool of cpu_pool.h). The per-element
 * math comes from engine/math/ so the CUDA kernels compute exactly the same thing. */
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/cpu_par.h"
#include "backend/cpu/cpu_pool.h"
#include "backend/cpu/cpu_simd.h"
#include "math/activation.h"

#include <string.h>

/* Loops shorter than this stay on the calling thread: waking the team costs more than the work
 * (cpu_par.h). */
#define PAR_MIN 16384

/* One operation's loop for the pool (cpu_pool.h): units [u0, u1) of `units`, each a chunk of
 * CPU_CHUNK floats (or a row, for bias_add), the same units in the same way whoever runs them */
typedef struct ew_job {
    void (*run)(const struct ew_job *j, size_t u0, size_t u1);
    float *out, *out2;
    const float *a, *b, *c;
    float s;
    mt_act act;
    size_t n, units;
    int cols;
} ew_job;

static void ew_span(void *ctx, size_t u0, size_t u1)
{
    const ew_job *j = ctx;
    j->run(j, u0, u1);
}

/* The job's units on this thread, or in parts on the pool's threads from PAR_MIN floats on */
static void ew_run(ew_job *j, size_t floats)
{
    cpu_pool_for(cpu_fork(floats, PAR_MIN), j->units, ew_span, j);
}

/* A loop over n floats in chunks of CPU_CHUNK */
static void ew_flat(ew_job j)
{
    j.units = (j.n + CPU_CHUNK - 1) / CPU_CHUNK;
    ew_run(&j, j.n);
}

/* `call` for each chunk [i0, i0 + len) of units [u0, u1) */
#define EW_CHUNKS(j, u0, u1, call)                                   \
    for (size_t c_ = (u0); c_ < (u1); c_++) {                        \
        size_t i0 = c_ * CPU_CHUNK, len = cpu_chunk_len(i0, (j)->n); \
        call;                                                        \
    }

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

static void fill_run(const ew_job *j, size_t u0, size_t u1)
{
    EW_CHUNKS(j, u0, u1, fill_chunk(j->out + i0, len, j->s));
}

void cpu_fill(float *x, size_t n, float value)
{
    ew_flat((ew_job){.run = fill_run, .out = x, .n = n, .s = value});
}

static void scale_run(const ew_job *j, size_t u0, size_t u1)
{
    EW_CHUNKS(j, u0, u1, scale_chunk(j->out + i0, len, j->s));
}

void cpu_scale(float *x, size_t n, float s)
{
    ew_flat((ew_job){.run = scale_run, .out = x, .n = n, .s = s});
}

static void axpy_run(const ew_job *j, size_t u0, size_t u1)
{
    EW_CHUNKS(j, u0, u1, axpy_chunk(j->out + i0, j->a + i0, len, j->s));
}

void cpu_axpy(float *y, const float *x, size_t n, float a)
{
    ew_flat((ew_job){.run = axpy_run, .out = y, .a = x, .n = n, .s = a});
}

static void add_run(const ew_job *j, size_t u0, size_t u1)
{
    EW_CHUNKS(j, u0, u1, add_chunk(j->out + i0, j->a + i0, j->b + i0, len));
}

void cpu_add(float *out, const float *a, const float *b, size_t n)
{
    ew_flat((ew_job){.run = add_run, .out = out, .a = a, .b = b, .n = n});
}

static void mul_run(const ew_job *j, size_t u0, size_t u1)
{
    EW_CHUNKS(j, u0, u1, mul_chunk(j->out + i0, j->a + i0, j->b + i0, len));
}

void cpu_mul(float *out, const float *a, const float *b, size_t n)
{
    ew_flat((ew_job){.run = mul_run, .out = out, .a = a, .b = b, .n = n});
}

static void mul_backward_run(const ew_job *j, size_t u0, size_t u1)
{
    EW_CHUNKS(j, u0, u1,
              mul_backward_chunk(j->out ? j->out + i0 : NULL, j->out2 ? j->out2 + i0 : NULL,
                                 j->c + i0, j->a + i0, j->b + i0, len));
}

void cpu_mul_backward(float *da, float *db, const float *dout, const float *a, const float *b,
                      size_t n)
{
    ew_flat((ew_job){
        .run = mul_backward_run, .out = da, .out2 = db, .c = dout, .a = a, .b = b, .n = n});
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
    case MT_ACT_GELU:
        ACT_LOOP({
            float e; /* each element's own, written before it is read */
            out[i] = x[i] * cpu_phi_poly(x[i], &e);
        });
        break;
    case MT_ACT_TANH: ACT_LOOP(out[i] = tanhf(x[i])); break;
    }
}

/* dx = dout * act'(x) over n elements (written, not added to: mtlab/backend.h) */
MT_CPU_CLONES static void act_backward_chunk(mt_act act, float *restrict dx,
                                             const float *restrict dout, const float *restrict x,
                                             size_t n)
{
    switch (act) {
    case MT_ACT_RELU: ACT_LOOP(dx[i] = dout[i] * mt_relu_gradf(x[i])); break;
    case MT_ACT_SILU: ACT_LOOP(dx[i] = dout[i] * mt_silu_gradf(x[i])); break;
    case MT_ACT_SOFTPLUS: ACT_LOOP(dx[i] = dout[i] * mt_softplus_gradf(x[i])); break;
    case MT_ACT_GELU: /* Phi(x) + x phi(x), phi(x) = e^(-x^2 / 2) / sqrt(2 pi) */
        ACT_LOOP({
            float e;
            float phi = cpu_phi_poly(x[i], &e); /* e is written before the sum reads it */
            dx[i] = dout[i] * (phi + x[i] * 0.39894228040143268f * e);
        });
        break;
    case MT_ACT_TANH: ACT_LOOP(dx[i] = dout[i] * mt_tanh_gradf(x[i])); break;
    }
}

static void act_forward_run(const ew_job *j, size_t u0, size_t u1)
{
    EW_CHUNKS(j, u0, u1, act_forward_chunk(j->act, j->out + i0, j->a + i0, len));
}

void cpu_act_forward(mt_act act, float *out, const float *x, size_t n)
{
    ew_flat((ew_job){.run = act_forward_run, .act = act, .out = out, .a = x, .n = n});
}

static void act_backward_run(const ew_job *j, size_t u0, size_t u1)
{
    EW_CHUNKS(j, u0, u1, act_backward_chunk(j->act, j->out + i0, j->c + i0, j->a + i0, len));
}

void cpu_act_backward(mt_act act, float *dx, const float *dout, const float *x, size_t n)
{
    ew_flat((ew_job){.run = act_backward_run, .act = act, .out = dx, .c = dout, .a = x, .n = n});
}

/* out = value * SiLU(gate) over n elements */
MT_CPU_CLONES static void gate_forward_chunk(float *restrict out, const float *restrict value,
                                             const float *restrict gate, size_t n)
{
#pragma omp simd
    for (size_t i = 0; i < n; i++) out[i] = value[i] * mt_siluf(gate[i]);
}

/* dvalue = dout * SiLU(gate); dgate = dout * value * SiLU'(gate) (either may be NULL; written,
 * mtlab/backend.h). With both, one loop takes the sigmoid once for the two (mt_siluf's and
 * mt_silu_gradf's steps, so the same floats); two loops took it twice, a libmvec call each. */
MT_CPU_CLONES static void gate_backward_chunk(float *restrict dvalue, float *restrict dgate,
                                              const float *restrict dout,
                                              const float *restrict value,
                                              const float *restrict gate, size_t n)
{
    if (dvalue && dgate) {
#pragma omp simd
        for (size_t i = 0; i < n; i++) {
            float g = gate[i], s = mt_sigmoidf(g);
            dvalue[i] = dout[i] * (g * s);
            dgate[i] = dout[i] * value[i] * (s * (1.0f + g * (1.0f - s)));
        }
        return;
    }
    if (dvalue) {
#pragma omp simd
        for (size_t i = 0; i < n; i++) dvalue[i] = dout[i] * mt_siluf(gate[i]);
    }
    if (dgate) {
#pragma omp simd
        for (size_t i = 0; i < n; i++) dgate[i] = dout[i] * value[i] * mt_silu_gradf(gate[i]);
    }
}

static void gate_forward_run(const ew_job *j, size_t u0, size_t u1)
{
    EW_CHUNKS(j, u0, u1, gate_forward_chunk(j->out + i0, j->a + i0, j->b + i0, len));
}

void cpu_gate_forward(float *out, const float *value, const float *gate, size_t n)
{
    ew_flat((ew_job){.run = gate_forward_run, .out = out, .a = value, .b = gate, .n = n});
}

static void gate_backward_run(const ew_job *j, size_t u0, size_t u1)
{
    EW_CHUNKS(j, u0, u1,
              gate_backward_chunk(j->out ? j->out + i0 : NULL, j->out2 ? j->out2 + i0 : NULL,
                                  j->c + i0, j->a + i0, j->b + i0, len));
}

void cpu_gate_backward(float *dvalue, float *dgate, const float *dout, const float *value,
                       const float *gate, size_t n)
{
    ew_flat((ew_job){.run = gate_backward_run,
                     .out = dvalue,
                     .out2 = dgate,
                     .c = dout,
                     .a = value,
                     .b = gate,
                     .n = n});
}

void cpu_mask_rows(float *x, const uint8_t *mask, size_t rows, int cols)
{
    for (size_t r = 0; r < rows; r++)
        if (!mask[r]) memset(x + r * (size_t)cols, 0, (size_t)cols * sizeof(float));
}

/* units are rows; one row of more than PAR_MIN floats (a batch-1 vocabulary's logits) is cut
 * into chunks instead */
static void bias_rows_run(const ew_job *j, size_t u0, size_t u1)
{
    for (size_t r = u0; r < u1; r++) {
        float *o = j->out + r * (size_t)j->cols;
        add_chunk(o, o, j->a, (size_t)j->cols);
    }
}

static void bias_chunks_run(const ew_job *j, size_t u0, size_t u1)
{
    EW_CHUNKS(j, u0, u1, add_chunk(j->out + i0, j->out + i0, j->a + i0, len));
}

void cpu_bias_add(float *out, const float *bias, size_t rows, int cols)
{
    if (rows == 1) {
        ew_flat((ew_job){.run = bias_chunks_run, .out = out, .a = bias, .n = (size_t)cols});
        return;
    }
    ew_job j = {.run = bias_rows_run, .out = out, .a = bias, .cols = cols, .units = rows};
    ew_run(&j, rows * (size_t)cols);
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

/* The bias gradient's groups of w columns for the pool (cpu_pool_for), each summed down all
 * rows of dout */
typedef struct {
    float *dbias;
    const float *dout;
    size_t rows;
    int cols, w;
} bias_grad_job;

static void bias_backward_groups(void *ctx, size_t g0, size_t g1)
{
    const bias_grad_job *j = ctx;
    for (size_t g = g0; g < g1; g++) {
        int c0 = (int)g * j->w;
        bias_backward_cols(j->dbias, j->dout, j->rows, j->cols, c0,
                           j->cols - c0 < j->w ? j->cols - c0 : j->w);
    }
}

/* threads own groups of columns, so nothing races and the thread count changes no bit */
void cpu_bias_backward(float *dbias, const float *dout, size_t rows, int cols)
{
    int fork = cpu_fork(rows * (size_t)cols, PAR_MIN);
    bias_grad_job j = {.dbias = dbias,
                       .dout = dout,
                       .rows = rows,
                       .cols = cols,
                       .w = cpu_col_group(cols, fork ? cpu_pool_threads() : 1)};
    cpu_pool_for(fork, (size_t)((cols + j.w - 1) / j.w), bias_backward_groups, &j);
}

/* Copies of more floats than this share their rows among the threads: a beam search's reorder
 * moves megabytes of cached keys and values between two steps, and on one thread that was a
 * gap long enough for the others to sleep (docs/decoding.md §9.1) */
#define COPY_PAR_MIN 65536

/* Rows of fewer floats than this are copied in blocks of 8 of fixed size (vector moves once
 * inlined), the last block overlapping the one before, rather than by a memmove call per row:
 * gpt-neox's fused projection splits into q, k, v as rows of one head's 24 floats, 28,672 a
 * layer, and the calls were most of the copy's time (4% of that preset's training step). */
#define COPY_NARROW 64

static void copy_rows_narrow(float *dst, int dst_ld, const float *src, int src_ld, size_t r0,
                             size_t r1, int cols)
{
    for (size_t r = r0; r < r1; r++) {
        float *d = dst + r * (size_t)dst_ld;
        const float *s = src + r * (size_t)src_ld;
        if (cols < 8) {
            for (int c = 0; c < cols; c++) d[c] = s[c];
            continue;
        }
        int c = 0;
        for (; c + 8 <= cols; c += 8) memcpy(d + c, s + c, 8 * sizeof(float));
        if (c < cols) memcpy(d + cols - 8, s + cols - 8, 8 * sizeof(float));
    }
}

typedef struct {
    float *dst;
    const float *src;
    int dst_ld, src_ld, cols;
} copy_job;

static void copy_narrow_rows(void *ctx, size_t r0, size_t r1)
{
    const copy_job *j = ctx;
    copy_rows_narrow(j->dst, j->dst_ld, j->src, j->src_ld, r0, r1, j->cols);
}

static void copy_rows(void *ctx, size_t r0, size_t r1)
{
    const copy_job *j = ctx;
    for (size_t r = r0; r < r1; r++)
        memmove(j->dst + r * (size_t)j->dst_ld, j->src + r * (size_t)j->src_ld,
                (size_t)j->cols * sizeof(float));
}

void cpu_copy2d(float *dst, int dst_ld, const float *src, int src_ld, size_t rows, int cols)
{
    size_t n = rows * (size_t)cols;
    /* rows may overlap (memmove): in order on one thread then, as a serial loop would take them */
    const float *dst_end = dst + (rows ? (rows - 1) * (size_t)dst_ld + (size_t)cols : 0);
    const float *src_end = src + (rows ? (rows - 1) * (size_t)src_ld + (size_t)cols : 0);
    int apart = dst_end <= src || src_end <= dst;
    copy_job j = {dst, src, dst_ld, src_ld, cols};
    cpu_pool_for(apart && cpu_fork(n, COPY_PAR_MIN), rows,
                 apart && cols < COPY_NARROW ? copy_narrow_rows : copy_rows, &j);
}

void cpu_index_select(float *out, const float *src, size_t src_ld, const int32_t *idx, int n_idx,
                      size_t cols)
{
    CPU_FOR(cpu_fork((size_t)n_idx * cols, COPY_PAR_MIN), "omp parallel for schedule(static)",
            (int i = 0; i < n_idx; i++),
            memcpy(out + (size_t)i * cols, src + (size_t)idx[i] * src_ld, cols * sizeof(float)));
}
