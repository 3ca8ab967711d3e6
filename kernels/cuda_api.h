/* The C-callable surface of kernels/ (compiled by nvcc). Only engine/ calls these, and only in
 * builds with MTLAB_HAVE_CUDA=1; engine/core/device.c is the single place that decides. */
#ifndef MTLAB_CUDA_API_H
#define MTLAB_CUDA_API_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Number of usable CUDA devices. A missing or too-old driver is "no GPU", not an error: returns 0
 * and writes the runtime's reason into why. */
int mt_cuda_device_count(char *why, size_t why_len);

/* Describe device `index` ("NVIDIA H100 80GB HBM3, 79.1 GiB, sm_90"). Returns 0 or -1 with why. */
int mt_cuda_device_name(int index, char *out, size_t out_len);

/* y[i] = SiLU(x[i]) on the device, copying in and out; the first kernel, used by the parity test
 * of the shared elementwise header. Returns 0, or -1 with the CUDA error in why. */
int mt_cuda_silu(float *y, const float *x, size_t n, char *why, size_t why_len);

#ifdef __cplusplus
}
#endif
#endif
