/* Matrix products through OpenBLAS (row-major cblas_sgemm). */
#include "backend/cpu/cpu_ops.h"

#include <cblas.h>

void cpu_gemm(int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a, int lda,
              const float *b, int ldb, float beta, float *c, int ldc)
{
    if (m <= 0 || n <= 0) return;
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
