// Block reductions and the column-sum pattern shared by the row-wise kernels (softmax, norms,
// loss) and the parameter gradients that sum over rows (bias, norm weights, positions).
#ifndef MTLAB_CUDA_ROWS_CUH
#define MTLAB_CUDA_ROWS_CUH

#include "cuda_ops.h"

#include <math.h>

// Threads of a one-block-per-row kernel (a multiple of 32, at most 1024).
#define CU_ROW_THREADS 256

// The sum / max over the whole block, returned to every thread. Every thread of the block must
// call it (it synchronises); blockDim.x a multiple of 32.
template <typename T> __device__ __forceinline__ T cu_warp_sum(T v)
{
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

template <typename T> __device__ __forceinline__ T cu_warp_max(T v)
{
    for (int o = 16; o > 0; o >>= 1) v = fmax(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

template <typename T> __device__ T cu_block_sum(T v)
{
    __shared__ T part[32];
    v = cu_warp_sum(v);
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
    __syncthreads(); // part may still be read by a previous call
    if (lane == 0) part[warp] = v;
    __syncthreads();
    v = lane < warps ? part[lane] : (T)0;
    return cu_warp_sum(v);
}

__device__ inline float cu_block_max(float v)
{
    __shared__ float part[32];
    v = cu_warp_max(v);
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
    __syncthreads();
    if (lane == 0) part[warp] = v;
    __syncthreads();
    v = lane < warps ? part[lane] : -INFINITY;
    return cu_warp_max(v);
}

// out[c] += sum_r value(r, c, cols) for c < cols, r < rows. Blocks of 32 columns x 8 row lanes;
// the grid splits the rows into chunks so long sums still spread over the GPU; each block adds
// its chunk's partial sums (in double within the block) with one atomicAdd per column.
#define CU_COLSUM_ROWS_PER_BLOCK 512

template <typename F>
__global__ void cu_column_sums_kernel(float *out, F value, size_t row0, size_t rows, int cols)
{
    __shared__ double part[8][33];
    int c = blockIdx.x * 32 + threadIdx.x;
    size_t r0 = row0 + (size_t)blockIdx.y * CU_COLSUM_ROWS_PER_BLOCK;
    size_t r1 = r0 + CU_COLSUM_ROWS_PER_BLOCK < rows ? r0 + CU_COLSUM_ROWS_PER_BLOCK : rows;
    double acc = 0.0;
    if (c < cols)
        for (size_t r = r0 + threadIdx.y; r < r1; r += 8) acc += value(r, c, cols);
    part[threadIdx.y][threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.y == 0 && c < cols) {
        for (int k = 1; k < 8; k++) acc += part[k][threadIdx.x];
        atomicAdd(out + c, (float)acc);
    }
}

template <typename F> void cu_column_sums(float *out, F value, size_t rows, int cols)
{
    if (!rows || cols <= 0 || !out) return;
    size_t chunks = (rows + CU_COLSUM_ROWS_PER_BLOCK - 1) / CU_COLSUM_ROWS_PER_BLOCK;
    // more chunks than a grid's y dimension allows: the further rows go in further launches
    for (size_t first = 0; first < chunks; first += 65535) {
        size_t n = chunks - first < 65535 ? chunks - first : 65535;
        dim3 grid((unsigned)((cols + 31) / 32), (unsigned)n);
        cu_column_sums_kernel<<<grid, dim3(32, 8), 0, cu_stream()>>>(
            out, value, first * CU_COLSUM_ROWS_PER_BLOCK, rows, cols);
        cu_check(cudaGetLastError(), "cu_column_sums_kernel");
    }
}

// The value function of a plain column sum: dout[r, c].
struct cu_plain_rows {
    const float *dout;
    __device__ double operator()(size_t r, int c, int cols) const { return dout[r * cols + c]; }
};

#endif
