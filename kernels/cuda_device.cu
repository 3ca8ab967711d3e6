// Device discovery and the first elementwise kernel. Per-element math comes from
// engine/math/elementwise.h so the CPU tests cover the same formulas.
#include "cuda_api.h"
#include "math/elementwise.h"

#include <cuda_runtime.h>
#include <stdio.h>

static void put_why(char *why, size_t why_len, const char *what, cudaError_t e)
{
    if (why && why_len) snprintf(why, why_len, "%s: %s", what, cudaGetErrorString(e));
}

extern "C" int mt_cuda_device_count(char *why, size_t why_len)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        put_why(why, why_len, "cudaGetDeviceCount", e);
        cudaGetLastError(); // clear the sticky error so later calls start clean
        return 0;
    }
    if (n == 0 && why && why_len) snprintf(why, why_len, "no CUDA device present");
    return n;
}

extern "C" int mt_cuda_device_name(int index, char *out, size_t out_len)
{
    cudaDeviceProp p;
    cudaError_t e = cudaGetDeviceProperties(&p, index);
    if (e != cudaSuccess) {
        put_why(out, out_len, "cudaGetDeviceProperties", e);
        return -1;
    }
    snprintf(out, out_len, "%s, %.1f GiB, sm_%d%d", p.name,
             (double)p.totalGlobalMem / (1024.0 * 1024.0 * 1024.0), p.major, p.minor);
    return 0;
}

__global__ void silu_kernel(float *y, const float *x, size_t n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = mt_siluf(x[i]);
}

#define CUDA_TRY(call)                                                  \
    do {                                                                \
        cudaError_t e_ = (call);                                        \
        if (e_ != cudaSuccess) {                                        \
            put_why(why, why_len, #call, e_);                           \
            goto fail;                                                  \
        }                                                               \
    } while (0)

extern "C" int mt_cuda_silu(float *y, const float *x, size_t n, char *why, size_t why_len)
{
    float *dx = NULL, *dy = NULL;
    int rc = -1;
    unsigned blocks = (unsigned)((n + 255) / 256);
    CUDA_TRY(cudaMalloc(&dx, n * sizeof(float)));
    CUDA_TRY(cudaMalloc(&dy, n * sizeof(float)));
    CUDA_TRY(cudaMemcpy(dx, x, n * sizeof(float), cudaMemcpyHostToDevice));
    silu_kernel<<<blocks ? blocks : 1, 256>>>(dy, dx, n);
    CUDA_TRY(cudaGetLastError());
    CUDA_TRY(cudaMemcpy(y, dy, n * sizeof(float), cudaMemcpyDeviceToHost));
    rc = 0;
fail:
    cudaFree(dx);
    cudaFree(dy);
    return rc;
}
