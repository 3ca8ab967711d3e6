/* Matrix products through OpenBLAS (row-major cblas_sgemm, cblas_sgemv for one row or one
 * column), except a decoding step's x W^T for few rows, which cpu_gemm_rows.c takes. */
#include "backend/cpu/cpu_ops.h"

#include <cblas.h>
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
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
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
