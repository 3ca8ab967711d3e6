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

struct mt_backend;

/* The CUDA backend for device `index`, bound to the calling thread: the first call on a thread
 * selects the device for that thread and creates its own stream, cuBLAS/cuBLASLt handles and
 * memory pool, so models driven from different threads (the TUI's workers) run concurrently
 * without sharing a queue or an allocator. A thread binds to one device; asking the same thread
 * for another index is an error, asking again for the same index sets the precision. bf16_gemm:
 * matrix products take bf16 copies of their inputs with fp32 accumulation and fp32 outputs (mixed
 * precision); 0 keeps them fp32 (parity tests). Returns the table (name "cuda:N"), or NULL with the
 * reason in why. */
const struct mt_backend *mt_cuda_backend(int index, int bf16_gemm, char *why, size_t why_len);

/* Bytes the calling thread's pool has handed out and reserved from the device, and the
 * device's free/total memory; 0, or -1 with why when the thread is not bound. */
int mt_cuda_memory(size_t *used, size_t *reserved, size_t *dev_free, size_t *dev_total, char *why,
                   size_t why_len);

struct mt_collective;

/* The NCCL collectives of rank host->rank of host->size on device `index`, the NCCL id sent
 * from rank 0 over host (kernels/collective_nccl.cu); NULL with the reason in why (no NCCL in
 * the toolkit, no device, NCCL's error). The result owns host: its close closes host too. */
struct mt_collective *mt_cuda_collective_nccl(struct mt_collective *host, int index, char *why,
                                              size_t why_len);

#ifdef __cplusplus
}
#endif
#endif
