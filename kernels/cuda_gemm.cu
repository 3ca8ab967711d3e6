// Matrix products on cuBLAS with the row-major cblas semantics of the backend contract.
//
// Row-major C (m, n) = op(A) op(B) is column-major C^T (n, m) = op(B)^T op(A)^T, so cuBLAS gets
// the operands swapped, each with its own transpose flag and the same leading dimensions.
// fp32 mode: cublasSgemm with default math (no TF32), as the parity tests need. bf16 mode
// (mixed precision, as the paper trained): the operands are converted to bf16 copies in
// scratch memory and multiplied with fp32 accumulation into an fp32 result.
#include "cuda_ops.h"

#include <cuda_bf16.h>

// dst[r * ld + c] = bf16(src[r * ld + c]) over rows x ld elements (the whole strided matrix)
__global__ void to_bf16_kernel(__nv_bfloat16 *dst, const float *src, size_t n)
{
    CU_FOR_EACH(i, n) dst[i] = __float2bfloat16_rn(src[i]);
}

// Elements a row-major matrix of `rows` rows at stride ld spans (the last row only to cols).
static size_t span(int rows, int cols, int ld) { return rows ? (size_t)(rows - 1) * ld + cols : 0; }

static __nv_bfloat16 *bf16_copy(const float *src, size_t n)
{
    __nv_bfloat16 *d = (__nv_bfloat16 *)cu_scratch((n ? n : 1) * sizeof *d);
    if (!d) return NULL;
    to_bf16_kernel<<<cu_grid(n), CU_THREADS, 0, cu_stream()>>>(d, src, n);
    cu_check(cudaGetLastError(), "to_bf16_kernel");
    return d;
}

// c (m, n) *= beta, for k == 0 where cuBLAS would not be called
__global__ void scale_rows_kernel(float *c, int m, int n, int ldc, float beta)
{
    size_t total = (size_t)m * n;
    CU_FOR_EACH(i, total)
    {
        float *p = c + (i / n) * ldc + i % n;
        *p = beta == 0.0f ? 0.0f : beta * *p;
    }
}

static void gemm_strided(int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a,
                         int lda, size_t stride_a, const float *b, int ldb, size_t stride_b,
                         float beta, float *c, int ldc, size_t stride_c, int batch)
{
    if (m <= 0 || n <= 0 || batch <= 0) return;
    if (k <= 0) {
        for (int i = 0; i < batch; i++) {
            scale_rows_kernel<<<cu_grid((size_t)m * n), CU_THREADS, 0, cu_stream()>>>(c + i * stride_c, m, n, ldc, beta);
            cu_check(cudaGetLastError(), "scale_rows_kernel");
        }
        return;
    }
    cublasOperation_t ta = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, tb = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    if (!cu_gemm_bf16()) {
        cu_check_blas(cublasSgemmStridedBatched(cu_blas(), tb, ta, n, m, k, &alpha, b, ldb, (long long)stride_b,
                                                a, lda, (long long)stride_a, &beta, c, ldc, (long long)stride_c, batch),
                      "cublasSgemmStridedBatched");
        return;
    }
    // the bf16 copies keep the fp32 layout (same strides), so one conversion per operand
    size_t na = (size_t)(batch - 1) * stride_a + span(trans_a ? k : m, trans_a ? m : k, lda);
    size_t nb = (size_t)(batch - 1) * stride_b + span(trans_b ? n : k, trans_b ? k : n, ldb);
    __nv_bfloat16 *a16 = bf16_copy(a, na), *b16 = bf16_copy(b, nb);
    if (a16 && b16)
        cu_check_blas(cublasGemmStridedBatchedEx(cu_blas(), tb, ta, n, m, k, &alpha, b16, CUDA_R_16BF, ldb,
                                                 (long long)stride_b, a16, CUDA_R_16BF, lda, (long long)stride_a,
                                                 &beta, c, CUDA_R_32F, ldc, (long long)stride_c, batch,
                                                 CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                      "cublasGemmStridedBatchedEx (bf16)");
    cu_scratch_free(a16);
    cu_scratch_free(b16);
}

void cu_gemm(int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a, int lda,
             const float *b, int ldb, float beta, float *c, int ldc)
{
    gemm_strided(trans_a, trans_b, m, n, k, alpha, a, lda, 0, b, ldb, 0, beta, c, ldc, 0, 1);
}

void cu_gemm_batched(int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a,
                     int lda, size_t stride_a, const float *b, int ldb, size_t stride_b,
                     float beta, float *c, int ldc, size_t stride_c, int batch)
{
    gemm_strided(trans_a, trans_b, m, n, k, alpha, a, lda, stride_a, b, ldb, stride_b, beta, c, ldc,
                 stride_c, batch);
}
