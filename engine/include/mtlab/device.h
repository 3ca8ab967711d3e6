/* Compute devices: the CPU backend always; CUDA devices when the build has CUDA and a driver
 * and GPU are present. A machine without a GPU (or without a driver) simply has 0 CUDA
 * devices; the reason is kept for messages such as `mtlab devices`. */
#ifndef MTLAB_DEVICE_H
#define MTLAB_DEVICE_H

#include <stddef.h>

/* 1 when this binary was built with the CUDA backend. */
int mt_have_cuda_build(void);

/* Number of usable CUDA devices (0 without a build, driver or GPU; why says which). */
int mt_cuda_devices(char *why, size_t why_len);

/* "NVIDIA H100 ..., 79.1 GiB, sm_90" for device index; 0 or -1 (mt_last_error). */
int mt_cuda_describe(int index, char *out, size_t out_len);

/* y = SiLU(x) on CUDA device 0 (parity check of the shared elementwise header); 0 or -1. */
int mt_cuda_silu_check(float *y, const float *x, size_t n);

#endif
