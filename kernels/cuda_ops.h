// Internal declarations shared by the CUDA kernel files (nvcc only; never included from C).
// The backend table (cuda_backend.cu) points at these cu_* functions; each has exactly the
// signature and semantics of the mt_backend field of the same name (mtlab/backend.h), runs on
// the calling thread's stream of the current device, and never synchronises unless the
// contract says it returns a host result.
#ifndef MTLAB_CUDA_OPS_H
#define MTLAB_CUDA_OPS_H

#include "backend/backend_ops.h"

#include <cuda_runtime.h>
#include <stdint.h>

// Bind the calling thread to device index (< max_devices): its stream, memory pool and cuBLAS
// handles (cuda_thread.cu). 0 when it was bound now, 1 when it already was (bf16_gemm is
// updated), -1 with the reason in why (another device already bound, no such device, a
// failed setup step).
int cu_bind_thread(int index, int max_devices, int bf16_gemm, char *why, size_t why_len);

// The calling thread's stream on the current device (created on first use).
cudaStream_t cu_stream(void);

// Report a failed CUDA call made by an operation (operations cannot return errors, see the
// contract): records "cuda:N: <what>: <cudaGetErrorString>" so the next fallible call (alloc,
// download, sync) reports it, and keeps the first error until then.
void cu_check(cudaError_t e, const char *what);

// Blocks of `threads` covering n items (at least one block).
static inline unsigned cu_blocks(size_t n, unsigned threads)
{
    size_t b = (n + threads - 1) / threads;
    return b ? (unsigned)b : 1u;
}

// Element-wise kernels: CU_THREADS per block, at most 65535 blocks, each thread striding over
// the grid (n is size_t and may pass 2^31).
#define CU_THREADS 256
static inline unsigned cu_grid(size_t n)
{
    unsigned b = cu_blocks(n, CU_THREADS);
    return b > 65535u ? 65535u : b;
}
#define CU_FOR_EACH(i, n)                                                   \
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
         i += (size_t)gridDim.x * blockDim.x)

// Stream-ordered scratch from the calling thread's memory pool (for ops that need temporary
// buffers, e.g. scan checkpoints); free it with cu_scratch_free on the same thread. Returns NULL
// (and records the error through cu_check) when the pool cannot grow.
void *cu_scratch(size_t bytes);
void cu_scratch_free(void *p);

// 1 when the calling thread's backend runs matrix products with bf16 inputs (fp32 accumulate).
int cu_gemm_bf16(void);

// 1 when environment variable `name` is set to `value`: the switches that select a kernel's
// reference path or turn a mechanism off (MTLAB_CUDA_SCAN=sequential,
// MTLAB_CUDA_QROWS_COMBINE=kernel, MTLAB_CUDA_GRAPHS=0), read at every call so that one process
// can time both ways.
int cu_env_is(const char *name, const char *value);

// The calling thread's CU_TICKETS counters on the device, zero between launches: a kernel whose
// blocks meet (the last of a group to finish does the group's closing work) counts arrivals in
// them and sets its counters back to zero before it ends (qrows_kernel's split k). One launch at
// a time uses them: the thread's stream runs its kernels in order.
#define CU_TICKETS 4096
unsigned *cu_tickets(void);

// The calling thread's buffer for a split k's partial sums, made when the thread binds:
// CU_PARTIALS_PER_SM floats a multiprocessor, what qrows_kernel's widest split needs (32 ranges
// of 16 rows of x against fewer than 8 weight rows a multiprocessor: cuda_gemm.cu checks it).
// The thread's products run one after another on its stream, so one buffer serves them all and
// a recorded step takes and returns no memory for them. NULL when more floats are asked.
#define CU_PARTIALS_PER_SM (32 * 16 * 8)
float *cu_partials(size_t floats);

// The calling thread's cuBLAS handle (bound to cu_stream()) and the status check that records
// a failure the way cu_check does.
#include <cublas_v2.h>
cublasHandle_t cu_blas(void);
void cu_check_blas(cublasStatus_t s, const char *what);

// cu_NAME for every operation of backend/backend_ops.h: memory, matrix products, host-result
// reductions (cuda_backend.cu, cuda_gemm.cu; the bf16 linear layers of precision bf16 are the
// kind of mt_qmatrix this backend makes); elementwise, norms, embeddings, positions, loss,
// dropout, AdamW (cuda_elementwise.cu, cuda_norm.cu, cuda_embedding.cu, cuda_train.cu);
// attention, conv1d, selective scan, retention (cuda_attention.cu, cuda_conv.cu, cuda_scan.cu,
// cuda_retention.cu).
#define CU_DECLARE(ret, name, params) ret cu_##name params;
MT_BACKEND_OPS(CU_DECLARE)
#undef CU_DECLARE

// the optional fused steps of a Mamba decoding step (mtlab/backend.h conv1d_step_silu,
// scan_step_gate; cuda_conv.cu, cuda_scan.cu): conv1d_step and scan_step with u = NULL, z = NULL
void cu_conv1d_step_silu(float *out, float *u, float *state, const float *x, const float *w,
                         const float *bias, int B, int C, int K);
void cu_scan_step_gate(float *y, float *yg, float *h, const float *z, const mt_scan_args *a);
void cu_qlinear_forward_parts(const mt_out_parts *parts, const float *x, const mt_qmatrix *w,
                              int row0, const float *bias, size_t BT);

// recorded steps (CUDA graphs of the thread's stream; mtlab/backend.h graph_begin ...)
int cu_graph_begin(void);
void *cu_graph_end(void);
void cu_graph_run(void *graph);
void cu_graph_free(void *graph);
// One product per cell (b, h) of a B x H grid, C_bh = alpha op(A_bh) op(B_bh) + beta C_bh, where
// each operand steps by its own stride over b and another over h (X_bh = X + b * x_bs + h * x_hs:
// attention's heads inside token-major rows). A strided batch when the strides are uniform, else
// one cuBLAS pointer-array batch over all B * H products (the pointers made on the device).
void cu_gemm_bh(int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a, int lda,
                size_t a_bs, size_t a_hs, const float *b, int ldb, size_t b_bs, size_t b_hs,
                float beta, float *c, int ldc, size_t c_bs, size_t c_hs, int B, int H);

#endif
