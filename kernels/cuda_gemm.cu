// Matrix products on cuBLAS with the row-major cblas semantics of the backend contract.
//
// Row-major C (m, n) = op(A) op(B) is column-major C^T (n, m) = op(B)^T op(A)^T, so cuBLAS gets
// the operands swapped, each with its own transpose flag and the same leading dimensions.
// fp32 mode: cublasSgemm with default math (no TF32), as the parity tests need. bf16 mode
// (mixed precision, as the paper trained): the operands are converted to bf16 copies in
// scratch memory and multiplied with fp32 accumulation into an fp32 result. x W^T with at most
// 16 rows of x (decoding) takes our own kernel instead, in fp32 in both modes (below), and
// against precision bf16's weight copies another, on the tensor cores (qrows_kernel).
#include "cuda_ops.h"
#include "cuda_rows.cuh"

#include <cuda_bf16.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "mtlab/error.h"
}

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

// The bf16 copy of a product's operand op(X) (rows, cols), stored at ld, in the fp32 layout (same
// strides): everything from x to `last` elements past it (where its last batch entry starts)
// plus that entry's span.
static __nv_bfloat16 *bf16_operand(const float *x, size_t last, int trans, int rows, int cols,
                                   int ld)
{
    return bf16_copy(x, last + span(trans ? cols : rows, trans ? rows : cols, ld));
}

// ---------------------------------------------------------------- few rows: x W^T
// Decoding multiplies a handful of rows (one per sentence of the batch) by each weight matrix:
// C (m, n) = alpha x (m, k) W^T + beta C with W (n, k) row-major, m <= ROWS_MAX. The work is
// reading W once; cuBLAS's fp32 kernels at m = 16 reached 15% of the copy bandwidth on an H100
// (bench-cuda), and its bf16 path would convert all of W per call. Here a block takes RW
// consecutive weight rows; its WARPS warps split k, the block reading each of those rows as one
// contiguous run (16-byte loads where rows and strides allow), every lane keeping RW x MR
// partial dots; warp shuffles, then shared memory across the warps, finish the sums. fp32
// arithmetic in both precision modes (the bf16 mode would only lose accuracy here).
#define ROWS_MAX 16
#define RW 4
#define WARPS 8

template <int MR, bool VEC>
__global__ void __launch_bounds__(WARPS * 32)
    gemm_rows_kernel(int m, int n, int k, float alpha, const float *x, int ldx, size_t sx,
                     const float *w, int ldw, size_t sw, float beta, float *c, int ldc, size_t sc)
{
    __shared__ float part[WARPS][MR * RW];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, n0 = blockIdx.x * RW;
    x += blockIdx.y * sx, w += blockIdx.y * sw, c += blockIdx.y * sc;
    const int rows = n - n0 < RW ? n - n0 : RW;
    const float *wr[RW];
#pragma unroll
    for (int r = 0; r < RW; r++)
        wr[r] = w + (size_t)(n0 + (r < rows ? r : 0)) * ldw; // past n: a real row, unused
    float acc[MR][RW];
#pragma unroll
    for (int i = 0; i < MR; i++)
#pragma unroll
        for (int r = 0; r < RW; r++) acc[i][r] = 0.0f;
    if (VEC) {
        const int k4 =
            k / 4; // k, ldx, ldw multiples of 4 and x, w 16-byte aligned (the caller checks)
        for (int q = threadIdx.x; q < k4; q += WARPS * 32) {
            float4 wv[RW];
#pragma unroll
            for (int r = 0; r < RW; r++) wv[r] = __ldg((const float4 *)wr[r] + q);
#pragma unroll
            for (int i = 0; i < MR; i++) {
                if (i >= m) break;
                float4 xv = __ldg((const float4 *)(x + (size_t)i * ldx) + q);
#pragma unroll
                for (int r = 0; r < RW; r++)
                    acc[i][r] += xv.x * wv[r].x + xv.y * wv[r].y + xv.z * wv[r].z + xv.w * wv[r].w;
            }
        }
    } else {
        for (int q = threadIdx.x; q < k; q += WARPS * 32) {
            float wv[RW];
#pragma unroll
            for (int r = 0; r < RW; r++) wv[r] = __ldg(wr[r] + q);
#pragma unroll
            for (int i = 0; i < MR; i++) {
                if (i >= m) break;
                float xv = __ldg(x + (size_t)i * ldx + q);
#pragma unroll
                for (int r = 0; r < RW; r++) acc[i][r] += xv * wv[r];
            }
        }
    }
#pragma unroll
    for (int i = 0; i < MR; i++)
#pragma unroll
        for (int r = 0; r < RW; r++) {
            float v = cu_warp_sum(acc[i][r]);
            if (lane == 0) part[warp][i * RW + r] = v;
        }
    __syncthreads();
    for (int t = threadIdx.x; t < MR * RW; t += WARPS * 32) {
        int i = t / RW, r = t % RW;
        if (i >= m || r >= rows) continue;
        float sum = 0.0f;
        for (int v = 0; v < WARPS; v++) sum += part[v][t];
        float *out = c + (size_t)i * ldc + n0 + r;
        *out = beta == 0.0f ? alpha * sum : alpha * sum + beta * *out;
    }
}

template <int MR>
static void gemm_rows_launch(int m, int n, int k, float alpha, const float *x, int ldx, size_t sx,
                             const float *w, int ldw, size_t sw, float beta, float *c, int ldc,
                             size_t sc, int batch)
{
    dim3 grid((unsigned)((n + RW - 1) / RW), (unsigned)batch);
    bool vec = k % 4 == 0 && ldx % 4 == 0 && ldw % 4 == 0 && sx % 4 == 0 && sw % 4 == 0 &&
               (((uintptr_t)x | (uintptr_t)w) & 15) == 0;
    if (vec)
        gemm_rows_kernel<MR, true><<<grid, WARPS * 32, 0, cu_stream()>>>(
            m, n, k, alpha, x, ldx, sx, w, ldw, sw, beta, c, ldc, sc);
    else
        gemm_rows_kernel<MR, false><<<grid, WARPS * 32, 0, cu_stream()>>>(
            m, n, k, alpha, x, ldx, sx, w, ldw, sw, beta, c, ldc, sc);
    cu_check(cudaGetLastError(), "gemm_rows_kernel");
}

// m rows (1..ROWS_MAX) of x times W^T: the accumulator count MR is the next power of two
static void gemm_rows(int m, int n, int k, float alpha, const float *x, int ldx, size_t sx,
                      const float *w, int ldw, size_t sw, float beta, float *c, int ldc, size_t sc,
                      int batch)
{
    if (m <= 1)
        gemm_rows_launch<1>(m, n, k, alpha, x, ldx, sx, w, ldw, sw, beta, c, ldc, sc, batch);
    else if (m <= 2)
        gemm_rows_launch<2>(m, n, k, alpha, x, ldx, sx, w, ldw, sw, beta, c, ldc, sc, batch);
    else if (m <= 4)
        gemm_rows_launch<4>(m, n, k, alpha, x, ldx, sx, w, ldw, sw, beta, c, ldc, sc, batch);
    else if (m <= 8)
        gemm_rows_launch<8>(m, n, k, alpha, x, ldx, sx, w, ldw, sw, beta, c, ldc, sc, batch);
    else gemm_rows_launch<16>(m, n, k, alpha, x, ldx, sx, w, ldw, sw, beta, c, ldc, sc, batch);
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
            scale_rows_kernel<<<cu_grid((size_t)m * n), CU_THREADS, 0, cu_stream()>>>(
                c + i * stride_c, m, n, ldc, beta);
            cu_check(cudaGetLastError(), "scale_rows_kernel");
        }
        return;
    }
    if (!trans_a && trans_b && m <= ROWS_MAX && batch <= 65535) {
        gemm_rows(m, n, k, alpha, a, lda, stride_a, b, ldb, stride_b, beta, c, ldc, stride_c,
                  batch);
        return;
    }
    cublasOperation_t ta = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                      tb = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    if (!cu_gemm_bf16()) {
        cu_check_blas(cublasSgemmStridedBatched(cu_blas(), tb, ta, n, m, k, &alpha, b, ldb,
                                                (long long)stride_b, a, lda, (long long)stride_a,
                                                &beta, c, ldc, (long long)stride_c, batch),
                      "cublasSgemmStridedBatched");
        return;
    }
    // the bf16 copies keep the fp32 layout (same strides), so one conversion per operand
    __nv_bfloat16 *a16 = bf16_operand(a, (size_t)(batch - 1) * stride_a, trans_a, m, k, lda);
    __nv_bfloat16 *b16 = bf16_operand(b, (size_t)(batch - 1) * stride_b, trans_b, k, n, ldb);
    if (a16 && b16)
        cu_check_blas(cublasGemmStridedBatchedEx(cu_blas(), tb, ta, n, m, k, &alpha, b16,
                                                 CUDA_R_16BF, ldb, (long long)stride_b, a16,
                                                 CUDA_R_16BF, lda, (long long)stride_a, &beta, c,
                                                 CUDA_R_32F, ldc, (long long)stride_c, batch,
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
                     int lda, size_t stride_a, const float *b, int ldb, size_t stride_b, float beta,
                     float *c, int ldc, size_t stride_c, int batch)
{
    gemm_strided(trans_a, trans_b, m, n, k, alpha, a, lda, stride_a, b, ldb, stride_b, beta, c, ldc,
                 stride_c, batch);
}

// ---------------------------------------------------------------- a B x H grid of products
// ptr[i], ptr[n + i], ptr[2n + i]: the operands of cell i = b * H + h (bytes per element ea for A
// and B, which are bf16 copies in the bf16 mode, ec for C)
__global__ void bh_pointers_kernel(const void **ptr, const char *a, size_t a_bs, size_t a_hs,
                                   const char *b, size_t b_bs, size_t b_hs, const char *c,
                                   size_t c_bs, size_t c_hs, int H, size_t n, size_t ea, size_t ec)
{
    CU_FOR_EACH(i, n)
    {
        size_t bi = i / H, hi = i % H;
        ptr[i] = a + (bi * a_bs + hi * a_hs) * ea;
        ptr[n + i] = b + (bi * b_bs + hi * b_hs) * ea;
        ptr[2 * n + i] = c + (bi * c_bs + hi * c_hs) * ec;
    }
}

void cu_gemm_bh(int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a, int lda,
                size_t a_bs, size_t a_hs, const float *b, int ldb, size_t b_bs, size_t b_hs,
                float beta, float *c, int ldc, size_t c_bs, size_t c_hs, int B, int H)
{
    if (m <= 0 || n <= 0 || B <= 0 || H <= 0) return;
    // a one-row or one-column grid has only one stride that matters
    if (H == 1) a_hs = a_bs, b_hs = b_bs, c_hs = c_bs;
    if (B == 1) a_bs = H * a_hs, b_bs = H * b_hs, c_bs = H * c_hs;
    if (a_bs == H * a_hs && b_bs == H * b_hs && c_bs == H * c_hs) {
        gemm_strided(trans_a, trans_b, m, n, k, alpha, a, lda, a_hs, b, ldb, b_hs, beta, c, ldc,
                     c_hs, B * H);
        return;
    }
    if (k <= 0) { // only C scales: per grid row
        for (int i = 0; i < B; i++)
            gemm_strided(0, 0, m, n, 0, alpha, a, lda, 0, b, ldb, 0, beta, c + i * c_bs, ldc, c_hs,
                         H);
        return;
    }
    size_t cells = (size_t)B * H;
    const void **ptr = (const void **)cu_scratch(3 * cells * sizeof(void *));
    if (!ptr) return;
    cublasOperation_t ta = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                      tb = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    if (!cu_gemm_bf16()) {
        bh_pointers_kernel<<<cu_grid(cells), CU_THREADS, 0, cu_stream()>>>(
            ptr, (const char *)a, a_bs, a_hs, (const char *)b, b_bs, b_hs, (const char *)c, c_bs,
            c_hs, H, cells, sizeof(float), sizeof(float));
        cu_check(cudaGetLastError(), "bh_pointers_kernel");
        // swapped operands (row-major C is column-major C^T): cuBLAS's A is our B
        cu_check_blas(cublasSgemmBatched(cu_blas(), tb, ta, n, m, k, &alpha,
                                         (const float *const *)(ptr + cells), ldb,
                                         (const float *const *)ptr, lda, &beta,
                                         (float *const *)(ptr + 2 * cells), ldc, (int)cells),
                      "cublasSgemmBatched");
    } else {
        // bf16 copies of the whole strided operands, in the fp32 layout
        __nv_bfloat16 *a16 =
            bf16_operand(a, (size_t)(B - 1) * a_bs + (size_t)(H - 1) * a_hs, trans_a, m, k, lda);
        __nv_bfloat16 *b16 =
            bf16_operand(b, (size_t)(B - 1) * b_bs + (size_t)(H - 1) * b_hs, trans_b, k, n, ldb);
        if (a16 && b16) {
            bh_pointers_kernel<<<cu_grid(cells), CU_THREADS, 0, cu_stream()>>>(
                ptr, (const char *)a16, a_bs, a_hs, (const char *)b16, b_bs, b_hs, (const char *)c,
                c_bs, c_hs, H, cells, sizeof(__nv_bfloat16), sizeof(float));
            cu_check(cudaGetLastError(), "bh_pointers_kernel");
            cu_check_blas(cublasGemmBatchedEx(cu_blas(), tb, ta, n, m, k, &alpha, ptr + cells,
                                              CUDA_R_16BF, ldb, ptr, CUDA_R_16BF, lda, &beta,
                                              (void *const *)(ptr + 2 * cells), CUDA_R_32F, ldc,
                                              (int)cells, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                          "cublasGemmBatchedEx (bf16)");
        }
        cu_scratch_free(a16);
        cu_scratch_free(b16);
    }
    cu_scratch_free(ptr);
}

// ---------------------------------------------------------------- bf16 weights (precision bf16)
// A model in precision bf16 keeps a bf16 copy of each linear weight, rounded once
// (mt_model_set_precision), so a product reads half the bytes of fp32 and no copy of W is made
// per call: only x is rounded. cuBLAS then multiplies on the tensor cores with fp32 sums.
int cu_qmatrix_make(mt_qmatrix *q, mt_qkind kind, const float *w, int rows, int cols)
{
    memset(q, 0, sizeof *q);
    if (kind == MT_QMATRIX_F32P) return 1; // fp32 panels: nothing to gain on the GPU
    if (kind != MT_QMATRIX_BF16)
        return mt_error(
            "the CUDA backend has no int8 linear layers (on a CUDA device use fp32 or bf16)");
    size_t n = (size_t)rows * cols;
    q->bf16 = (uint16_t *)cu_alloc((n ? n : 1) * sizeof(uint16_t));
    if (!q->bf16) return -1;
    q->kind = kind, q->rows = rows, q->cols = cols, q->ld = cols;
    if (n) {
        to_bf16_kernel<<<cu_grid(n), CU_THREADS, 0, cu_stream()>>>((__nv_bfloat16 *)q->bf16, w, n);
        cu_check(cudaGetLastError(), "to_bf16_kernel");
    }
    return 0;
}

void cu_qmatrix_free(mt_qmatrix *q)
{
    cu_free(q->bf16);
    memset(q, 0, sizeof *q);
}

// ---------------------------------------------------------------- few rows: x W^T, bf16 W
// A decoding step in precision bf16: m <= ROWS_MAX rows of x (bf16) against a bf16 weight copy.
// The work is reading W once, and at 16 rows each weight takes 16 multiply-adds: on the CUDA
// cores that would be about three quarters of an H100's fp32 rate at its copy bandwidth, so the
// products go to the tensor cores (mma.sync m16n8k16, fp32 sums), the rows of x being the
// instruction's 16 rows (zeros past m) and eight weight rows its 8 columns.
//
// Loads: lane (g, t) = (lane / 4, lane % 4) reads 8 consecutive k of weight row g of each tile
// as one 16-byte load, a tile's 8 rows x 32 k as 512 contiguous-per-row bytes. The instruction
// wants lane (g, t) to hold k 2t, 2t+1 and 2t+8, 2t+9 of a 16-wide step instead; since a dot
// product does not depend on the order of its k, each 32-wide chunk is fed to two instructions
// with its k permuted so that the 16 loaded bytes are exactly what the lane holds: instruction j
// (0, 1) takes k 8t+4j, 8t+4j+1 where it expects 2t, 2t+1 and 8t+4j+2, 8t+4j+3 where it expects
// 2t+8, 2t+9, in A (x) and B (W) alike, so the lane's x load is the same 16 bytes of rows g and
// g+8.
//
// Work: a block's QWARPS warps form `groups` groups; each group takes NT tiles (8 NT weight
// rows) and its warps split the block's range of chunks of k, QROWS_U chunks in flight per warp
// (all loads first, then the products: NT x QROWS_U x 512 bytes of weights per warp). Several
// groups give a short k's idle warps other tiles instead of chunks. Shared memory sums each
// group's warps in warp order. The chunks of k are cut into `splits` ranges (grid.y) when the
// weight's rows give too few blocks: each range's block writes its partial sums to the
// thread's buffer for them (cu_partials), and the last of a tile's blocks to finish (a ticket
// counter per tile, cu_tickets) adds the ranges in range order and adds the bias, so the
// result does not depend on which block finishes first; qrows_combine_kernel, the reference,
// does the same adding as a second launch
// (MTLAB_CUDA_QROWS_COMBINE=kernel, or more tiles than counters). x is bf16, or fp32 rounded to
// bf16 as it is loaded (two 16-byte loads for the lane's 8 k, the same rounding as to_bf16_kernel),
// which spares a decoding step's linear layer the conversion kernel and its scratch. Needs k and
// the weight stride multiples of 8 and 16-byte aligned rows of W and x (the caller checks).
#define QWARPS 8
#define QROWS_U 4
#define QROWS_SPLITS_MAX 32
// qrows_plan_for splits k only where the weight has fewer tiles (8 rows) than there are
// multiprocessors, so the thread's partials buffer holds every split it plans
static_assert(QROWS_SPLITS_MAX * ROWS_MAX * 8 <= CU_PARTIALS_PER_SM, "cu_partials' size");

__device__ __forceinline__ void mma_bf16_m16n8k16(float c[4], const uint32_t a[4], uint32_t b0,
                                                  uint32_t b1)
{
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// The 8 values of x at k 8q .. 8q+7 of a row, as 8 bf16 in k order (the low half of each word
// first, as they lie in memory)
__device__ __forceinline__ uint4 x8_bf16(const __nv_bfloat16 *row, int q)
{
    return __ldg((const uint4 *)row + q);
}
__device__ __forceinline__ uint32_t bf16_pair(float lo, float hi)
{
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *(const uint32_t *)&v;
}
__device__ __forceinline__ uint4 x8_bf16(const float *row, int q)
{
    const float4 a = __ldg((const float4 *)row + 2 * q), b = __ldg((const float4 *)row + 2 * q + 1);
    return make_uint4(bf16_pair(a.x, a.y), bf16_pair(a.z, a.w), bf16_pair(b.x, b.y),
                      bf16_pair(b.z, b.w));
}

// Where a product's outputs go: columns [0, end[0]) to p[0] at row stride ld[0], [end[0],
// end[1]) to p[1], ... (one part: end[0] = n; several: qlinear_forward_parts)
struct qrows_dest {
    float *p[MT_OUT_PARTS_MAX];
    int ld[MT_OUT_PARTS_MAX], end[MT_OUT_PARTS_MAX];
};
__device__ __forceinline__ float *qrows_at(const qrows_dest &d, int i, int col)
{
    float *p = d.p[0];
    int ld = d.ld[0], c0 = 0;
#pragma unroll
    for (int q = 1; q < MT_OUT_PARTS_MAX; q++) // selects, no indexing of the parameters
        if (col >= d.end[q - 1]) p = d.p[q], ld = d.ld[q], c0 = d.end[q - 1];
    return p + (size_t)i * ld + (col - c0);
}

// Everything one qrows_kernel launch reads (XT: bf16 or float)
template <typename XT> struct qrows_args {
    int m, n, k; // x (m, k), W (n, k), out (m, n)
    const XT *x; // (m, k), rows at stride k
    const __nv_bfloat16 *w; // (n, k), rows at stride ldw
    int ldw;
    const float *bias; // (n), or NULL: added once, by the kernel or by the split's closing
    qrows_dest out; // the result
    float *part; // split k (grid.y ranges): range s's partial sums (m, n) at part + s m n; or NULL
    int groups; // warp groups per block (1, 2, 4, 8), each of QWARPS / groups warps and NT tiles
    int span; // chunks of 32 k per range of k (grid.y ranges)
    // split k closed in the kernel: a counter per tile (blockIdx.x); NULL: by qrows_combine_kernel
    unsigned *tickets;
};

// One output of a split k: its `splits` ranges' partial sums (p, p + stride, ...) added in range
// order, then *bias (none when NULL), read from L2, where other blocks' stores are visible. Both
// ways of closing a split take it (the kernel's last block, qrows_combine_kernel): the same bits.
__device__ __forceinline__ float ranges_sum(const float *p, unsigned splits, size_t stride,
                                            const float *bias)
{
    float sum = 0.0f;
    for (unsigned s = 0; s < splits; s++) sum += __ldcg(p + s * stride);
    return bias ? sum + *bias : sum;
}

template <int NT, bool HI, typename XT> // HI: m > 8, rows g + 8 of x are used
__global__ void __launch_bounds__(QWARPS * 32, 2) qrows_kernel(const qrows_args<XT> a)
{
    __shared__ float part[QWARPS][16][NT * 8 + 1];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const int wg = QWARPS / a.groups, grp = warp / wg, wi = warp % wg; // group size, group, rank
    const int n0 = (blockIdx.x * a.groups + grp) * NT * 8, k8 = a.k / 8;
    const int chunks = (a.k + 31) / 32, c0 = blockIdx.y * a.span,
              c1 = c0 + a.span < chunks ? c0 + a.span : chunks;
    const uint4 zero = make_uint4(0, 0, 0, 0);
    const uint4 *wr[NT];
#pragma unroll
    for (int j = 0; j < NT; j++) {
        const int row = n0 + j * 8 + g;
        wr[j] = (const uint4 *)(a.w + (size_t)(row < a.n ? row : a.n - 1) *
                                          a.ldw); // past n: a real row, unused
    }
    const XT *x0 = a.x + (size_t)g * a.k, *x1 = a.x + (size_t)(g + 8) * a.k;
    const bool has0 = g < a.m, has1 = HI && g + 8 < a.m;
    float acc[NT][4];
#pragma unroll
    for (int j = 0; j < NT; j++) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.0f;
    for (int c = n0 < a.n ? c0 + wi : c1; c < c1; c += QROWS_U * wg) {
        uint4 xa[QROWS_U], xb[QROWS_U], wv[QROWS_U][NT];
#pragma unroll
        for (int u = 0; u < QROWS_U; u++) { // every chunk's loads first, then the products
            const int q = (c + u * wg) * 4 + t; // this lane's 16 bytes, in units of 8 k
            const bool in = c + u * wg < c1 && q < k8;
            xa[u] = in && has0 ? x8_bf16(x0, q) : zero;
            xb[u] = in && has1 ? x8_bf16(x1, q) : zero;
#pragma unroll
            for (int j = 0; j < NT; j++) wv[u][j] = in ? __ldg(wr[j] + q) : zero;
        }
#pragma unroll
        for (int u = 0; u < QROWS_U; u++) {
            const uint32_t a0[4] = {xa[u].x, xb[u].x, xa[u].y, xb[u].y},
                           a1[4] = {xa[u].z, xb[u].z, xa[u].w, xb[u].w};
#pragma unroll
            for (int j = 0; j < NT; j++) {
                mma_bf16_m16n8k16(acc[j], a0, wv[u][j].x, wv[u][j].y);
                mma_bf16_m16n8k16(acc[j], a1, wv[u][j].z, wv[u][j].w);
            }
        }
    }
    // the accumulator: (row g, columns 2t, 2t+1) and (row g+8, the same columns) of each tile
#pragma unroll
    for (int j = 0; j < NT; j++) {
        part[warp][g][j * 8 + 2 * t] = acc[j][0], part[warp][g][j * 8 + 2 * t + 1] = acc[j][1];
        part[warp][g + 8][j * 8 + 2 * t] = acc[j][2],
                                      part[warp][g + 8][j * 8 + 2 * t + 1] = acc[j][3];
    }
    __syncthreads();
    const int cols = a.groups * NT * 8, nb = blockIdx.x * cols; // the block's output columns
    const size_t mn = (size_t)a.m * a.n;
    float *range = a.part ? a.part + blockIdx.y * mn : NULL;
    for (int e = threadIdx.x; e < 16 * cols; e += QWARPS * 32) {
        const int i = e / cols, col = e % cols, v0 = col / (NT * 8) * wg;
        if (i >= a.m || nb + col >= a.n) continue;
        float sum = 0.0f;
        for (int v = v0; v < v0 + wg; v++) sum += part[v][i][col % (NT * 8)];
        if (range) range[(size_t)i * a.n + nb + col] = sum;
        else *qrows_at(a.out, i, nb + col) = a.bias ? sum + a.bias[nb + col] : sum;
    }
    if (!a.tickets) return;
    // The tile's last block to finish adds its ranges (threadFenceReduction's pattern): every
    // thread's partial sums are visible device-wide before the block takes its ticket, and the
    // block holding the last ticket reads the others' from L2 (__ldcg), in range order, as
    // qrows_combine_kernel does, then leaves the counter at zero for the next launch.
    __shared__ bool last;
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) last = atomicAdd(a.tickets + blockIdx.x, 1u) == gridDim.y - 1;
    __syncthreads();
    if (!last) return;
    for (int e = threadIdx.x; e < 16 * cols; e += QWARPS * 32) {
        const int i = e / cols, col = e % cols;
        if (i >= a.m || nb + col >= a.n) continue;
        *qrows_at(a.out, i, nb + col) = ranges_sum(a.part + (size_t)i * a.n + nb + col, gridDim.y,
                                                   mn, a.bias ? a.bias + nb + col : NULL);
    }
    if (threadIdx.x == 0) a.tickets[blockIdx.x] = 0;
}

// out (m, n) = the k ranges' partial sums part (splits, m, n) added in range order, + bias
__global__ void qrows_combine_kernel(qrows_dest out, const float *part, int splits, int m, int n,
                                     const float *bias)
{
    const size_t mn = (size_t)m * n;
    CU_FOR_EACH(e, mn)
    {
        const int col = (int)(e % n);
        *qrows_at(out, (int)(e / n), col) =
            ranges_sum(part + e, (unsigned)splits, mn, bias ? bias + col : NULL);
    }
}

// The multiprocessor count of the current device (asked once per device)
static int sm_count(void)
{
    static int count[64];
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64) return 1;
    if (!count[dev]) {
        int v = 0;
        cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, dev);
        count[dev] = v > 0 ? v : 1;
    }
    return count[dev];
}

// How a qrows launch covers W (n, k): blocks of `groups` x nt tiles, k in `splits` ranges of
// `span` chunks
struct qrows_plan {
    int nt, groups, splits, span;
};

static int ceil_div(int a, int b) { return (a + b - 1) / b; }

// The plan for W (n, k) on `sms` multiprocessors, by the weight's shape (k a multiple of 8; a
// chunk is 32 k, a tile 8 weight rows):
// - a short k (fewer chunks than warps) puts the next power of two >= its chunks of warps in a
//   group, one chunk each, and the block's other warps in groups of their own on other tiles
//   (dt_proj's k 128: 4 chunks, 2 groups of 4 warps) instead of leaving them idle;
// - the widest tiles (4, 2, 1 a group) that still give every multiprocessor a block, k whole:
//   x is read once per 8 NT weight rows (at 16 fp32 rows of x, 1 tile per group reads 4 bytes of
//   x from L2 per weight byte from memory), but a block for each multiprocessor counted more in
//   the sweep of every plan on an H200 (docs/cuda.md §4.2, MTLAB_CUDA_QROWS_PLAN), 16 rows in a
//   graph: the output layer and in_proj as one product 4 tiles (0.072, 0.015 ms; 1 tile 0.111,
//   0.020), 4096 x 2048 2 tiles (0.009; 4 tiles and 2 ranges 0.011), out_proj's 2048 x 4096 and
//   2048 x 2048 1 tile (0.010, 0.006; 4 tiles and 3 ranges 0.012, 0.009), dt_proj's 4096 x 128 1
//   tile (0.003; 2 tiles 0.004);
// - where not even 1 tile a group gives every multiprocessor a block and k has at least 2
//   QWARPS chunks: 4 tiles (fewer when W has fewer), and k split into ranges of at least QWARPS
//   chunks, the fewest that give every multiprocessor a block (x_proj's 160 x 4096: 5 x 16;
//   16 x 4096: 1 x 16), at most QROWS_SPLITS_MAX;
// - else 2 tiles where half the multiprocessors get a block, or 1 tile.
static qrows_plan qrows_plan_for(int n, int k, int sms)
{
    const int chunks = (k + 31) / 32, tiles = (n + 7) / 8;
    int wg = 1;
    while (wg < QWARPS && wg < chunks) wg *= 2;
    qrows_plan p = {4, QWARPS / wg, 1, chunks};
    for (p.nt = 4; p.nt >= 1; p.nt /= 2)
        if (ceil_div(tiles, p.nt * p.groups) >= sms) return p;
    const int most = chunks / QWARPS < QROWS_SPLITS_MAX ? chunks / QWARPS : QROWS_SPLITS_MAX;
    if (most >= 2) { // here wg == QWARPS: one group
        p.nt = tiles >= 4 ? 4 : tiles >= 2 ? 2 : 1;
        const int want = ceil_div(sms, ceil_div(tiles, p.nt));
        p.span = ceil_div(chunks, want < most ? want : most);
        p.splits = ceil_div(chunks, p.span);
        return p;
    }
    p.nt = ceil_div(tiles, 2 * p.groups) >= sms / 2 ? 2 : 1;
    return p;
}

// MTLAB_CUDA_QROWS_PLAN=NT:SPLITS (NT 1, 2 or 4 tiles a group, k in SPLITS ranges, at most
// QROWS_SPLITS_MAX and one chunk a range) replaces the plan of every call, for timing the plans
// against each other at one shape (docs/cuda.md §4.2): the same product, its sums in another
// order
static qrows_plan qrows_plan_forced(qrows_plan p, int k)
{
    const char *v = getenv("MTLAB_CUDA_QROWS_PLAN");
    int nt = 0, splits = 0;
    if (!v || sscanf(v, "%d:%d", &nt, &splits) != 2 || (nt != 1 && nt != 2 && nt != 4)) return p;
    const int chunks = (k + 31) / 32;
    if (splits < 1) splits = 1;
    if (splits > QROWS_SPLITS_MAX) splits = QROWS_SPLITS_MAX;
    if (splits > chunks) splits = chunks;
    p.nt = nt, p.span = ceil_div(chunks, splits), p.splits = ceil_div(chunks, p.span);
    return p;
}

template <int NT, typename XT> static void qrows_launch(const qrows_args<XT> &a, dim3 grid)
{
    if (a.m > 8) qrows_kernel<NT, true, XT><<<grid, QWARPS * 32, 0, cu_stream()>>>(a);
    else qrows_kernel<NT, false, XT><<<grid, QWARPS * 32, 0, cu_stream()>>>(a);
    cu_check(cudaGetLastError(), "qrows_kernel");
}

// out (m, n) = x (m, k) W^T + bias, m <= ROWS_MAX, launched as qrows_plan_for says
template <typename XT>
static void qrows(int m, int n, int k, const XT *x, const __nv_bfloat16 *w, int ldw,
                  const float *bias, const qrows_dest &out)
{
    const qrows_plan p = qrows_plan_forced(qrows_plan_for(n, k, sm_count()), k);
    qrows_args<XT> a = {m, n, k, x, w, ldw, bias, out, NULL, p.groups, p.span, NULL};
    const dim3 grid((unsigned)ceil_div(n, p.groups * p.nt * 8), (unsigned)p.splits);
    bool closed = false; // the ranges added by the kernel's last block per tile
    float *kept = NULL; // the thread's buffer for them, where they fit (no scratch to take)
    if (p.splits > 1) { // partial sums (splits, m, n)
        const size_t floats = (size_t)p.splits * m * n;
        kept = cu_partials(floats);
        a.part = kept ? kept : (float *)cu_scratch(floats * sizeof *a.part);
        if (!a.part) return;
        closed = grid.x <= CU_TICKETS && !cu_env_is("MTLAB_CUDA_QROWS_COMBINE", "kernel");
        if (closed) a.tickets = cu_tickets();
    }
    if (p.nt == 4) qrows_launch<4, XT>(a, grid);
    else if (p.nt == 2) qrows_launch<2, XT>(a, grid);
    else qrows_launch<1, XT>(a, grid);
    if (!a.part) return;
    if (!closed) {
        const size_t mn = (size_t)m * n;
        qrows_combine_kernel<<<cu_grid(mn), CU_THREADS, 0, cu_stream()>>>(out, a.part, p.splits, m,
                                                                          n, bias);
        cu_check(cudaGetLastError(), "qrows_combine_kernel");
    }
    if (!kept) cu_scratch_free(a.part);
}

// out = x (BT, C) w[row0 .. row0 + OC)^T + bias, the columns where `out` says
static void qlinear(const qrows_dest &out, const float *x, const mt_qmatrix *w, int row0,
                    const float *bias, size_t BT, int OC)
{
    if (BT == 0 || OC <= 0) return;
    const int C = w->cols;
    const __nv_bfloat16 *w16 = (const __nv_bfloat16 *)w->bf16 + (size_t)row0 * w->ld;
    const bool few = BT <= ROWS_MAX && C % 8 == 0 && w->ld % 8 == 0 && ((uintptr_t)w16 & 15) == 0;
    if (few && ((uintptr_t)x & 15) == 0) { // x rounded as the kernel loads it
        qrows((int)BT, OC, C, x, w16, w->ld, bias, out);
        return;
    }
    __nv_bfloat16 *x16 = bf16_copy(x, BT * (size_t)C);
    if (!x16) return;
    if (few) {
        qrows((int)BT, OC, C, (const __nv_bfloat16 *)x16, w16, w->ld, bias, out);
        cu_scratch_free(x16);
        return;
    }
    // cuBLAS writes (BT, OC) at row stride OC: into the one part, or into scratch then the parts
    const bool one = out.end[0] == OC && out.ld[0] == OC;
    float *y = one ? out.p[0] : (float *)cu_scratch(BT * (size_t)OC * sizeof(float));
    if (!y) {
        cu_scratch_free(x16);
        return;
    }
    const float one_f = 1.0f, zero = 0.0f;
    // row-major y = x W^T is column-major y^T (OC, BT) = W x^T, W (OC, C) row-major = (C, OC)
    // column-major, hence W transposed
    cu_check_blas(cublasGemmEx(cu_blas(), CUBLAS_OP_T, CUBLAS_OP_N, OC, (int)BT, C, &one_f, w16,
                               CUDA_R_16BF, w->ld, x16, CUDA_R_16BF, C, &zero, y, CUDA_R_32F, OC,
                               CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                  "cublasGemmEx (bf16 weights)");
    cu_scratch_free(x16);
    if (bias) cu_bias_add(y, bias, BT, OC);
    if (one) return;
    for (int q = 0, c0 = 0; q < MT_OUT_PARTS_MAX && c0 < OC; c0 = out.end[q++])
        cu_check(cudaMemcpy2DAsync(out.p[q], out.ld[q] * sizeof(float), y + c0, OC * sizeof(float),
                                   (out.end[q] - c0) * sizeof(float), BT, cudaMemcpyDeviceToDevice,
                                   cu_stream()),
                 "cudaMemcpy2DAsync (a product's parts)");
    cu_scratch_free(y);
}

// out (BT, OC) = x (BT, C) w[row0 .. row0 + OC)^T + bias
void cu_qlinear_forward(float *out, const float *x, const mt_qmatrix *w, int row0,
                        const float *bias, size_t BT, int OC)
{
    qrows_dest d = {};
    d.p[0] = out, d.ld[0] = OC;
    for (int q = 0; q < MT_OUT_PARTS_MAX; q++) d.end[q] = OC;
    qlinear(d, x, w, row0, bias, BT, OC);
}

// The same product over the parts' columns, each part's into its own buffer
void cu_qlinear_forward_parts(const mt_out_parts *parts, const float *x, const mt_qmatrix *w,
                              int row0, const float *bias, size_t BT)
{
    qrows_dest d = {};
    int OC = 0;
    for (int q = 0; q < parts->n && q < MT_OUT_PARTS_MAX; q++) {
        d.p[q] = parts->out[q], d.ld[q] = parts->cols[q];
        OC += parts->cols[q];
        d.end[q] = OC;
    }
    for (int q = parts->n; q < MT_OUT_PARTS_MAX; q++) d.end[q] = OC;
    qlinear(d, x, w, row0, bias, BT, OC);
}
