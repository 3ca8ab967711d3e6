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

/* What the CPU can run, from cpuid. */
typedef struct {
    int avx2_fma; /* AVX2 and FMA */
    int avx512; /* AVX-512 F, DQ, BW and VL */
    int avx512_bf16; /* and AVX512-BF16 */
} mt_cpu_features;
mt_cpu_features mt_cpu_features_now(void);
/* The OpenBLAS core (OPENBLAS_CORETYPE) whose kernels are the widest a CPU with features f
 * runs, when the loaded core's are narrower: "Cooperlake", "SkylakeX" or "Haswell"; NULL when
 * `loaded` is already as wide. mt_cpu_blas_best_core: for this CPU and the loaded library. */
const char *mt_blas_core_for(mt_cpu_features f, const char *loaded);
const char *mt_cpu_blas_best_core(void);
/* 1 and a sentence in out when the CPU could run wider BLAS kernels than the ones loaded
 * (OPENBLAS_CORETYPE pinned by the user, or mtlab not started through its own main), else 0. */
int mt_cpu_blas_hint(char *out, size_t len);

/* Which BLAS runs which matrix products on the CPU, as one line in out: OpenBLAS (the x W^T of
 * the forward pass, k < 32, small products) and BLIS (the weight gradients, outputs of at most
 * 32 columns, input gradients through k >= 4096), or every product on one of them when MTLAB_SGEMM
 * says so (openblas, blis; auto or unset: by shape; another value is named as ignored). Returns
 * out. */
const char *mt_cpu_products(char *out, size_t len);

/* mtlab's own CPU kernels, those this CPU runs: the few-row products of decoding and short
 * prompts (cpu_gemm_rows.c: "avx512", "avx2" or none, and how many rows of x it takes) and the
 * int8 products (MTLAB_INT8_KERNEL's pick, or the fastest: "avx512-vnni", "avx2", "ref"), as
 * one line in out ("few-row products avx512 (1 to 128 rows; from 8, panels made as w is read),
 * int8 avx512-vnni").
 * Returns out. */
const char *mt_cpu_own_kernels(char *out, size_t len);

struct mt_backend;

/* The backend a device name selects: "cpu", "cuda" (device 0) or "cuda:N". A CUDA backend is
 * bound to the calling thread (its own stream and memory pool: see kernels/cuda_api.h), so
 * open it on the thread that will run the model. bf16_gemm: CUDA matrix products in bf16 with
 * fp32 accumulation (mixed precision); ignored on the CPU. NULL + mt_error naming the device
 * and the reason ("no CUDA device: ...", "built without CUDA", "unknown device 'x'"). */
const struct mt_backend *mt_backend_for(const char *device, int bf16_gemm);

#endif
