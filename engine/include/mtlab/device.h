/* Compute devices: the CPU backend always; CUDA devices when the build has CUDA and a driver
 * and GPU are present. A machine without a GPU (or without a driver) simply has 0 CUDA
 * devices; the reason is kept for messages such as `mtlab devices`. */
#ifndef MTLAB_DEVICE_H
#define MTLAB_DEVICE_H

#include <stddef.h>

/* Number of usable CUDA devices (0 without a build, driver or GPU; why says which). */
int mt_cuda_devices(char *why, size_t why_len);

/* "NVIDIA H100 ..., 79.1 GiB, sm_90" for device index; 0 or -1 (mt_last_error). */
int mt_cuda_describe(int index, char *out, size_t out_len);

/* The OpenBLAS core whose kernels the CPU backend runs ("Haswell", "SkylakeX", ...). */
const char *mt_cpu_blas_core(void);
/* 1 and a sentence in out when the CPU could run faster BLAS kernels than the ones loaded (it
 * has AVX-512, OpenBLAS picked AVX2 ones: what OPENBLAS_CORETYPE would choose), else 0. */
int mt_cpu_blas_hint(char *out, size_t len);

struct mt_backend;

/* The backend a device name selects: "cpu", "cuda" (device 0) or "cuda:N". A CUDA backend is
 * bound to the calling thread (its own stream and memory pool: see kernels/cuda_api.h), so
 * open it on the thread that will run the model. bf16_gemm: CUDA matrix products in bf16 with
 * fp32 accumulation (mixed precision); ignored on the CPU. NULL + mt_error naming the device
 * and the reason ("no CUDA device: ...", "built without CUDA", "unknown device 'x'"). */
const struct mt_backend *mt_backend_for(const char *device, int bf16_gemm);

#endif
