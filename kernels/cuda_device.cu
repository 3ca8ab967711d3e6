// Device discovery: how many CUDA devices there are, and what each one is.
#include "cuda_api.h"

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
