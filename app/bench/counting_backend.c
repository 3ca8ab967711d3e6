/* The counting backend (bench.h): the CPU backend's table with the matrix products timed and
 * tallied per shape, every other operation timed, and the parameter reads of every operation
 * that takes weights added up.
 * A wrapper rather than a switch inside engine/backend/cpu keeps the real backend free of
 * any bookkeeping; the counters are one static set because backend functions carry no
 * context. Backend calls come from one thread, so plain fields suffice. */
#include "bench/bench.h"

#include <stdlib.h>
#include <string.h>

#include "mtlab/clock.h"
#include "mtlab/error.h"

static bench_counters counters;
static mt_backend counting;
static int counting_ready;

void bench_counters_reset(const float *params, size_t n_params)
{
    bench_gemm_shape *shapes = counters.shapes;
    int cap = counters.cap;
    memset(&counters, 0, sizeof counters);
    counters.shapes = shapes;
    counters.cap = cap;
    counters.params = params;
    counters.n_params = n_params;
}

const bench_counters *bench_counters_get(void) { return &counters; }

void bench_counters_free(void)
{
    free(counters.shapes);
    counters.shapes = NULL;
    counters.cap = 0;
    counters.n_shapes = 0;
}

/* Add the time since t0 to operation name's total (name: a string literal). */
static void op_done(const char *name, double t0)
{
    double dt = mt_now_s() - t0;
    int i = 0;
    while (i < counters.n_ops && strcmp(counters.ops[i].name, name)) i++;
    if (i == BENCH_MAX_OPS) return;
    if (i == counters.n_ops) counters.ops[counters.n_ops++] = (bench_op_time){name, 0, 0.0};
    counters.ops[i].calls++;
    counters.ops[i].seconds += dt;
}

/* A wrapper that only times operation op: params is its parameter list, args the call's. */
#define TIMED(op, params, args)    \
    static void timed_##op params  \
    {                              \
        double t0 = mt_now_s();    \
        mt_backend_cpu()->op args; \
        op_done(#op, t0);          \
    }

TIMED(copy, (void *dst, const void *src, size_t bytes), (dst, src, bytes))
TIMED(memzero, (void *p, size_t bytes), (p, bytes))
TIMED(fill, (float *x, size_t n, float value), (x, n, value))
TIMED(scale, (float *x, size_t n, float s), (x, n, s))
TIMED(axpy, (float *y, const float *x, size_t n, float a), (y, x, n, a))
TIMED(add, (float *out, const float *a, const float *b, size_t n), (out, a, b, n))
TIMED(mul, (float *out, const float *a, const float *b, size_t n), (out, a, b, n))
TIMED(mul_backward,
      (float *da, float *db, const float *dout, const float *a, const float *b, size_t n),
      (da, db, dout, a, b, n))
TIMED(act_forward, (mt_act act, float *out, const float *x, size_t n), (act, out, x, n))
TIMED(act_backward, (mt_act act, float *dx, const float *dout, const float *x, size_t n),
      (act, dx, dout, x, n))
TIMED(gate_forward, (float *out, const float *value, const float *gate, size_t n),
      (out, value, gate, n))
TIMED(gate_backward,
      (float *dvalue, float *dgate, const float *dout, const float *value, const float *gate,
       size_t n),
      (dvalue, dgate, dout, value, gate, n))
TIMED(mask_rows, (float *x, const uint8_t *mask, size_t rows, int cols), (x, mask, rows, cols))
TIMED(bias_backward, (float *dbias, const float *dout, size_t rows, int cols),
      (dbias, dout, rows, cols))
TIMED(copy2d, (float *dst, int dst_ld, const float *src, int src_ld, size_t rows, int cols),
      (dst, dst_ld, src, src_ld, rows, cols))
TIMED(softmax, (float *out, const float *x, size_t rows, int cols), (out, x, rows, cols))
TIMED(log_softmax, (float *out, const float *x, size_t rows, int cols), (out, x, rows, cols))
TIMED(layernorm_backward,
      (float *dx, float *dweight, float *dbias, const float *dout, const float *x,
       const float *weight, const float *mean, const float *rstd, size_t BT, int C),
      (dx, dweight, dbias, dout, x, weight, mean, rstd, BT, C))
TIMED(rmsnorm_backward,
      (float *dx, float *dweight, const float *dout, const float *x, const float *weight,
       const float *rstd, size_t BT, int C),
      (dx, dweight, dout, x, weight, rstd, BT, C))
TIMED(embedding_backward,
      (float *dtable, const float *dout, const int32_t *ids, size_t BT, int C, float scale),
      (dtable, dout, ids, BT, C, scale))
TIMED(positions_backward, (float *dtable, const float *dout, int B, int T, int C, int pos0),
      (dtable, dout, B, T, C, pos0))
TIMED(rope_forward,
      (float *x, const int32_t *pos, int B, int T, int H, int Dh, int rot_dim, int pos0,
       const float *inv_freq, int interleaved),
      (x, pos, B, T, H, Dh, rot_dim, pos0, inv_freq, interleaved))
TIMED(rope_backward,
      (float *dx, const int32_t *pos, int B, int T, int H, int Dh, int rot_dim, int pos0,
       const float *inv_freq, int interleaved),
      (dx, pos, B, T, H, Dh, rot_dim, pos0, inv_freq, interleaved))
TIMED(attention_forward,
      (float *out, float *att, const float *q, const float *k, const float *v,
       const mt_attn_desc *d),
      (out, att, q, k, v, d))
TIMED(attention_backward,
      (float *dq, float *dk, float *dv, float *datt, const float *dout, const float *q,
       const float *k, const float *v, const float *att, const mt_attn_desc *d),
      (dq, dk, dv, datt, dout, q, k, v, att, d))
TIMED(conv1d_backward,
      (float *dx, float *dw, float *dbias, const float *dout, const float *x, const float *w, int B,
       int T, int C, int K),
      (dx, dw, dbias, dout, x, w, B, T, C, K))
TIMED(scan_backward, (const mt_scan_grads *g, const float *dy, const mt_scan_args *a), (g, dy, a))
TIMED(retention_forward,
      (float *out, float *att, float *r, const float *q, const float *k, const float *v,
       const mt_retention_desc *d),
      (out, att, r, q, k, v, d))
TIMED(retention_backward,
      (float *dq, float *dk, float *dv, float *datt, const float *dout, const float *q,
       const float *k, const float *v, const float *att, const float *r,
       const mt_retention_desc *d),
      (dq, dk, dv, datt, dout, q, k, v, att, r, d))
TIMED(cross_entropy_forward,
      (float *losses, float *lse, const float *logits, const int32_t *targets, size_t BT, int V,
       int ignore_index, float smoothing),
      (losses, lse, logits, targets, BT, V, ignore_index, smoothing))
TIMED(cross_entropy_backward,
      (float *dlogits, const float *logits, const float *lse, const int32_t *targets, size_t BT,
       int V, int ignore_index, float smoothing, float scale),
      (dlogits, logits, lse, targets, BT, V, ignore_index, smoothing, scale))
TIMED(cross_entropy_fused,
      (float *losses, float *logits, const int32_t *targets, size_t BT, int V, int ignore_index,
       float smoothing, float scale),
      (losses, logits, targets, BT, V, ignore_index, smoothing, scale))
TIMED(dropout_forward,
      (float *out, const float *x, size_t rows, size_t row_len, const mt_dropout *d),
      (out, x, rows, row_len, d))
TIMED(dropout_backward,
      (float *dx, const float *dout, size_t rows, size_t row_len, const mt_dropout *d),
      (dx, dout, rows, row_len, d))
TIMED(adamw_step,
      (float *params, const float *grads, float *m, float *v, const uint8_t *decay_mask, size_t n,
       const mt_adamw_hparams *h, int step),
      (params, grads, m, v, decay_mask, n, h, step))

static double timed_sum(const float *x, size_t n)
{
    double t0 = mt_now_s(), s = mt_backend_cpu()->sum(x, n);
    op_done("sum", t0);
    return s;
}

/* Add bytes when p points into the parameter block (activations and caches are not counted). */
static void tally(const void *p, size_t bytes)
{
    const float *f = p, *lo = counters.params;
    if (lo && f >= lo && f < lo + counters.n_params) counters.param_bytes += bytes;
}

/* Bytes of the elements of a (rows, cols) operand; op(x) and x hold the same ones, and only
 * the used columns of a strided matrix are read. */
static size_t matrix_bytes(int rows, int cols)
{
    return (size_t)rows * (size_t)cols * sizeof(float);
}

static void record_gemm(int trans_a, int trans_b, int m, int n, int k, int lda, int ldb, int ldc,
                        float beta, long calls, double seconds)
{
    bench_gemm_shape *s = NULL;
    for (int i = 0; i < counters.n_shapes && !s; i++) {
        bench_gemm_shape *t = &counters.shapes[i];
        if (t->trans_a == trans_a && t->trans_b == trans_b && t->m == m && t->n == n && t->k == k &&
            t->lda == lda && t->ldb == ldb && t->ldc == ldc && t->beta == beta)
            s = t;
    }
    if (!s) {
        if (counters.n_shapes == counters.cap) {
            counters.cap = counters.cap ? 2 * counters.cap : 32;
            counters.shapes =
                mt_xrealloc(counters.shapes, (size_t)counters.cap * sizeof *counters.shapes);
        }
        s = &counters.shapes[counters.n_shapes++];
        *s = (bench_gemm_shape){trans_a, trans_b, m, n, k, lda, ldb, ldc, beta, 0, 0.0};
    }
    s->calls += calls;
    s->seconds += seconds;
    /* c (m, n) = op(a) (m, k) op(b) (k, n): m n k multiply-adds per problem */
    counters.gemm_flops += 2.0 * m * n * (double)k * (double)calls;
    counters.gemm_seconds += seconds;
    counters.gemm_calls += calls;
}

static void counting_gemm(int trans_a, int trans_b, int m, int n, int k, float alpha,
                          const float *a, int lda, const float *b, int ldb, float beta, float *c,
                          int ldc)
{
    tally(a, matrix_bytes(m, k));
    tally(b, matrix_bytes(k, n));
    double t0 = mt_now_s();
    mt_backend_cpu()->gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    record_gemm(trans_a, trans_b, m, n, k, lda, ldb, ldc, beta, 1, mt_now_s() - t0);
}

static void counting_gemm_batched(int trans_a, int trans_b, int m, int n, int k, float alpha,
                                  const float *a, int lda, size_t stride_a, const float *b, int ldb,
                                  size_t stride_b, float beta, float *c, int ldc, size_t stride_c,
                                  int batch)
{
    tally(a, matrix_bytes(m, k) * (stride_a ? (size_t)batch : 1));
    tally(b, matrix_bytes(k, n) * (stride_b ? (size_t)batch : 1));
    double t0 = mt_now_s();
    mt_backend_cpu()->gemm_batched(trans_a, trans_b, m, n, k, alpha, a, lda, stride_a, b, ldb,
                                   stride_b, beta, c, ldc, stride_c, batch);
    record_gemm(trans_a, trans_b, m, n, k, lda, ldb, ldc, beta, batch, mt_now_s() - t0);
}

static void counting_bias_add(float *out, const float *bias, size_t rows, int cols)
{
    tally(bias, (size_t)cols * sizeof(float));
    double t0 = mt_now_s();
    mt_backend_cpu()->bias_add(out, bias, rows, cols);
    op_done("bias_add", t0);
}

static void counting_layernorm_forward(float *out, float *mean, float *rstd, const float *x,
                                       const float *weight, const float *bias, size_t N, int C,
                                       float eps)
{
    tally(weight, (size_t)C * sizeof(float));
    tally(bias, (size_t)C * sizeof(float));
    double t0 = mt_now_s();
    mt_backend_cpu()->layernorm_forward(out, mean, rstd, x, weight, bias, N, C, eps);
    op_done("layernorm_forward", t0);
}

static void counting_rmsnorm_forward(float *out, float *rstd, const float *x, const float *weight,
                                     size_t N, int C, float eps)
{
    tally(weight, (size_t)C * sizeof(float));
    double t0 = mt_now_s();
    mt_backend_cpu()->rmsnorm_forward(out, rstd, x, weight, N, C, eps);
    op_done("rmsnorm_forward", t0);
}

/* A lookup reads only the rows it gathers. */
static void counting_embedding_forward(float *out, const int32_t *ids, const float *table, size_t N,
                                       int C, float scale)
{
    tally(table, N * (size_t)C * sizeof(float));
    double t0 = mt_now_s();
    mt_backend_cpu()->embedding_forward(out, ids, table, N, C, scale);
    op_done("embedding_forward", t0);
}

static void counting_positions_add(float *out, const float *table, int B, int T, int C, int pos0)
{
    tally(table, (size_t)T * (size_t)C * sizeof(float));
    double t0 = mt_now_s();
    mt_backend_cpu()->positions_add(out, table, B, T, C, pos0);
    op_done("positions_add", t0);
}

static void counting_conv1d_forward(float *out, const float *x, const float *w, const float *bias,
                                    int B, int T, int C, int K)
{
    tally(w, (size_t)C * (size_t)K * sizeof(float));
    tally(bias, (size_t)C * sizeof(float));
    double t0 = mt_now_s();
    mt_backend_cpu()->conv1d_forward(out, x, w, bias, B, T, C, K);
    op_done("conv1d_forward", t0);
}

static void counting_conv1d_step(float *out, float *state, const float *x, const float *w,
                                 const float *bias, int B, int C, int K)
{
    tally(w, (size_t)C * (size_t)K * sizeof(float));
    tally(bias, (size_t)C * sizeof(float));
    double t0 = mt_now_s();
    mt_backend_cpu()->conv1d_step(out, state, x, w, bias, B, C, K);
    op_done("conv1d_step", t0);
}

static void tally_scan(const mt_scan_args *a)
{
    tally(a->A_log, (size_t)a->D * (size_t)a->N * sizeof(float));
    tally(a->Dskip, (size_t)a->D * sizeof(float));
    tally(a->dt_bias, (size_t)a->D * sizeof(float));
}

static void counting_scan_forward(float *y, float *h_last, const mt_scan_args *a)
{
    tally_scan(a);
    double t0 = mt_now_s();
    mt_backend_cpu()->scan_forward(y, h_last, a);
    op_done("scan_forward", t0);
}

static void counting_scan_step(float *y, float *h, const mt_scan_args *a)
{
    tally_scan(a);
    double t0 = mt_now_s();
    mt_backend_cpu()->scan_step(y, h, a);
    op_done("scan_step", t0);
}

const mt_backend *bench_counting_backend(void)
{
    if (!counting_ready) {
        counting = *mt_backend_cpu();
        counting.name = "cpu-counting";
        counting.gemm = counting_gemm;
        counting.gemm_batched = counting_gemm_batched;
        counting.bias_add = counting_bias_add;
        counting.layernorm_forward = counting_layernorm_forward;
        counting.rmsnorm_forward = counting_rmsnorm_forward;
        counting.embedding_forward = counting_embedding_forward;
        counting.positions_add = counting_positions_add;
        counting.conv1d_forward = counting_conv1d_forward;
        counting.conv1d_step = counting_conv1d_step;
        counting.scan_forward = counting_scan_forward;
        counting.scan_step = counting_scan_step;
        /* the fused Mamba step reads the weights of the operations it stands for; without it
         * the layer runs those operations, each counted and timed above */
        counting.mamba_step = NULL;
#define USE_TIMED(op) counting.op = timed_##op
        USE_TIMED(copy);
        USE_TIMED(memzero);
        USE_TIMED(fill);
        USE_TIMED(scale);
        USE_TIMED(axpy);
        USE_TIMED(add);
        USE_TIMED(mul);
        USE_TIMED(mul_backward);
        USE_TIMED(act_forward);
        USE_TIMED(act_backward);
        USE_TIMED(gate_forward);
        USE_TIMED(gate_backward);
        USE_TIMED(mask_rows);
        USE_TIMED(bias_backward);
        USE_TIMED(copy2d);
        USE_TIMED(softmax);
        USE_TIMED(log_softmax);
        USE_TIMED(layernorm_backward);
        USE_TIMED(rmsnorm_backward);
        USE_TIMED(embedding_backward);
        USE_TIMED(positions_backward);
        USE_TIMED(rope_forward);
        USE_TIMED(rope_backward);
        USE_TIMED(attention_forward);
        USE_TIMED(attention_backward);
        USE_TIMED(conv1d_backward);
        USE_TIMED(scan_backward);
        USE_TIMED(retention_forward);
        USE_TIMED(retention_backward);
        USE_TIMED(cross_entropy_forward);
        USE_TIMED(cross_entropy_backward);
        USE_TIMED(cross_entropy_fused);
        USE_TIMED(dropout_forward);
        USE_TIMED(dropout_backward);
        USE_TIMED(adamw_step);
        USE_TIMED(sum);
#undef USE_TIMED
        counting_ready = 1;
    }
    return &counting;
}
