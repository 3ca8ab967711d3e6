/* The counting backend (bench.h): the CPU backend's table with the matrix products timed and
 * tallied per shape, and the parameter reads of every operation that takes weights added up.
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
        if (t->trans_a == trans_a && t->trans_b == trans_b && t->m == m && t->n == n &&
            t->k == k && t->lda == lda && t->ldb == ldb && t->ldc == ldc && t->beta == beta)
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
                                  const float *a, int lda, size_t stride_a, const float *b,
                                  int ldb, size_t stride_b, float beta, float *c, int ldc,
                                  size_t stride_c, int batch)
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
    mt_backend_cpu()->bias_add(out, bias, rows, cols);
}

static void counting_layernorm_forward(float *out, float *mean, float *rstd, const float *x,
                                       const float *weight, const float *bias, size_t N, int C,
                                       float eps)
{
    tally(weight, (size_t)C * sizeof(float));
    tally(bias, (size_t)C * sizeof(float));
    mt_backend_cpu()->layernorm_forward(out, mean, rstd, x, weight, bias, N, C, eps);
}

static void counting_rmsnorm_forward(float *out, float *rstd, const float *x, const float *weight,
                                     size_t N, int C, float eps)
{
    tally(weight, (size_t)C * sizeof(float));
    mt_backend_cpu()->rmsnorm_forward(out, rstd, x, weight, N, C, eps);
}

/* A lookup reads only the rows it gathers. */
static void counting_embedding_forward(float *out, const int32_t *ids, const float *table,
                                       size_t N, int C, float scale)
{
    tally(table, N * (size_t)C * sizeof(float));
    mt_backend_cpu()->embedding_forward(out, ids, table, N, C, scale);
}

static void counting_positions_add(float *out, const float *table, int B, int T, int C, int pos0)
{
    tally(table, (size_t)T * (size_t)C * sizeof(float));
    mt_backend_cpu()->positions_add(out, table, B, T, C, pos0);
}

static void counting_conv1d_forward(float *out, const float *x, const float *w,
                                    const float *bias, int B, int T, int C, int K)
{
    tally(w, (size_t)C * (size_t)K * sizeof(float));
    tally(bias, (size_t)C * sizeof(float));
    mt_backend_cpu()->conv1d_forward(out, x, w, bias, B, T, C, K);
}

static void counting_conv1d_step(float *out, float *state, const float *x, const float *w,
                                 const float *bias, int B, int C, int K)
{
    tally(w, (size_t)C * (size_t)K * sizeof(float));
    tally(bias, (size_t)C * sizeof(float));
    mt_backend_cpu()->conv1d_step(out, state, x, w, bias, B, C, K);
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
    mt_backend_cpu()->scan_forward(y, h_last, a);
}

static void counting_scan_step(float *y, float *h, const mt_scan_args *a)
{
    tally_scan(a);
    mt_backend_cpu()->scan_step(y, h, a);
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
        counting_ready = 1;
    }
    return &counting;
}
