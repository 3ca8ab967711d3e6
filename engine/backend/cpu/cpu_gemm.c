/* Matrix products: a decoding step's x W^T for few rows in mtlab's own kernel (cpu_gemm_rows.c),
 * one row or one column as a matrix-vector product (cblas_sgemv), and the rest as sgemm by
 * OpenBLAS or BLIS (cpu_blis.c), whichever cpu_sgemm_pick says is faster for the shape. */
#include "backend/cpu/cpu_ops.h"

#include <cblas.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* A product with one output row (batch-1 decoding: every layer's x W^T) or one output column
 * as a matrix-vector product: sgemm would first copy the whole weight matrix into its packed
 * layout, reading it twice, where sgemv streams it once. y gets n_out values at stride incy;
 * with beta 0 it is cleared first, so NaN already there cannot leak through sgemv's scaling. */
static void gemv(int trans_w, int rows, int cols, float alpha, const float *w, int ldw,
                 const float *x, int incx, float beta, float *y, int incy, int n_out)
{
    if (beta == 0.0f)
        for (int i = 0; i < n_out; i++) y[(size_t)i * incy] = 0.0f;
    cblas_sgemv(CblasRowMajor, trans_w ? CblasTrans : CblasNoTrans, rows, cols, alpha, w, ldw, x,
                incx, beta, y, incy);
}

/* The shape rule, from both libraries timed inside the small presets' training steps at one
 * and two threads on an AVX-512 Zen 4 (docs/models.md §10.9 gives each class's figures: how
 * much faster BLIS is than OpenBLAS, one thread and two):
 * - k < 32: OpenBLAS. BLIS packs a thin panel at a loss (Mamba's dt back-projection x W^T at
 *   k = 12: 2-3.5x slower in BLIS).
 * - small products (m n k < 2^21): OpenBLAS, whose call costs less (64 x 64 x 42: 2x slower in
 *   BLIS).
 * - the weight gradients dY^T X (trans_a): BLIS, 1.10-1.12x faster over the class.
 * - outputs of at most 32 columns (Mamba's x_proj to dt, B and C, and their input gradients):
 *   BLIS, 1.7-2.3x.
 * - input gradients dY W with k >= 4096 (through the vocabulary's projection): BLIS, 1.0-1.4x;
 *   at smaller k the two are even (0.88-1.22x shape by shape), and OpenBLAS keeps them.
 * - x W^T, the forward products: OpenBLAS (BLIS 0.93-1.00x over the class). */
cpu_sgemm_lib cpu_sgemm_pick_shape(int trans_a, int trans_b, int m, int n, int k)
{
    if (k < 32 || (double)m * n * k < (double)(1 << 21)) return CPU_SGEMM_OPENBLAS;
    if (trans_a || n <= 32 || (!trans_b && k >= 4096)) return CPU_SGEMM_BLIS;
    return CPU_SGEMM_OPENBLAS;
}

/* MTLAB_SGEMM=openblas or blis runs every product on one library (to compare them); unset or
 * "auto", the shape rule; any other value is reported (cpu_sgemm_forced: -2) and the rule
 * decides. Read once. */
static int sgemm_forced = -1;
static pthread_once_t sgemm_once = PTHREAD_ONCE_INIT;

static void read_sgemm_env(void)
{
    const char *v = getenv("MTLAB_SGEMM");
    sgemm_forced = !v || !*v || !strcmp(v, "auto") ? -1
                   : !strcmp(v, "openblas")        ? CPU_SGEMM_OPENBLAS
                   : !strcmp(v, "blis")            ? CPU_SGEMM_BLIS
                                                   : -2;
}

int cpu_sgemm_forced(void)
{
    pthread_once(&sgemm_once, read_sgemm_env);
    return sgemm_forced;
}

cpu_sgemm_lib cpu_sgemm_pick(int trans_a, int trans_b, int m, int n, int k)
{
    int forced = cpu_sgemm_forced();
    return forced >= 0 ? (cpu_sgemm_lib)forced : cpu_sgemm_pick_shape(trans_a, trans_b, m, n, k);
}

void cpu_sgemm_with(cpu_sgemm_lib lib, int trans_a, int trans_b, int m, int n, int k, float alpha,
                    const float *a, int lda, const float *b, int ldb, float beta, float *c, int ldc)
{
    if (lib == CPU_SGEMM_BLIS) {
        cpu_blis_sgemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
        return;
    }
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void cpu_gemm(int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a, int lda,
              const float *b, int ldb, float beta, float *c, int ldc)
{
    if (m <= 0 || n <= 0) return;
    if (!trans_a && trans_b && beta == 0.0f &&
        cpu_gemm_rows(m, n, k, alpha, a, lda, b, ldb, c, ldc))
        return;
    if (m == 1 && k > 0) {
        /* c (1, n) = alpha op(a) (1, k) op(b) (k, n): op(b) is b^T when b is stored (n, k) */
        int incx = trans_a ? lda : 1;
        if (trans_b) gemv(0, n, k, alpha, b, ldb, a, incx, beta, c, 1, n);
        else gemv(1, k, n, alpha, b, ldb, a, incx, beta, c, 1, n);
        return;
    }
    if (n == 1 && k > 0) {
        /* c (m, 1) = alpha op(a) (m, k) op(b) (k, 1) */
        int incx = trans_b ? 1 : ldb;
        if (trans_a) gemv(1, k, m, alpha, a, lda, b, incx, beta, c, ldc, m);
        else gemv(0, m, k, alpha, a, lda, b, incx, beta, c, ldc, m);
        return;
    }
    cpu_sgemm_with(cpu_sgemm_pick(trans_a, trans_b, m, n, k), trans_a, trans_b, m, n, k, alpha, a,
                   lda, b, ldb, beta, c, ldc);
}

/* One sgemm per problem: OpenBLAS threads each product, which beats threading over a batch
 * that is usually small (heads x batch rows) at the sizes mtlab trains on CPU. */
void cpu_gemm_batched(int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a,
                      int lda, size_t stride_a, const float *b, int ldb, size_t stride_b,
                      float beta, float *c, int ldc, size_t stride_c, int batch)
{
    for (int i = 0; i < batch; i++)
        cpu_gemm(trans_a, trans_b, m, n, k, alpha, a + (size_t)i * stride_a, lda,
                 b + (size_t)i * stride_b, ldb, beta, c + (size_t)i * stride_c, ldc);
}
