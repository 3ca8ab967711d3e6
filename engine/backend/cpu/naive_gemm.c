/* Reference matrix products: the textbook triple loop, accumulated in double.
 *   c[i][j] = alpha * sum_p op(a)[i][p] * op(b)[p][j] + beta * c[i][j] */
#include "backend/cpu/cpu_ops.h"

void naive_gemm(int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a, int lda,
                const float *b, int ldb, float beta, float *c, int ldc)
{
    for (int i = 0; i < m; i++) {
        for (int j = 0; j < n; j++) {
            double acc = 0.0;
            for (int p = 0; p < k; p++) {
                float av = trans_a ? a[(size_t)p * lda + i] : a[(size_t)i * lda + p];
                float bv = trans_b ? b[(size_t)j * ldb + p] : b[(size_t)p * ldb + j];
                acc += (double)av * bv;
            }
            float *cij = &c[(size_t)i * ldc + j];
            /* beta = 0 must ignore c entirely (it may hold garbage or NaN), as BLAS does */
            *cij = (float)(alpha * acc + (beta == 0.0f ? 0.0 : (double)beta * *cij));
        }
    }
}

void naive_gemm_batched(int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a,
                        int lda, size_t stride_a, const float *b, int ldb, size_t stride_b,
                        float beta, float *c, int ldc, size_t stride_c, int batch)
{
    for (int i = 0; i < batch; i++)
        naive_gemm(trans_a, trans_b, m, n, k, alpha, a + (size_t)i * stride_a, lda,
                   b + (size_t)i * stride_b, ldb, beta, c + (size_t)i * stride_c, ldc);
}
