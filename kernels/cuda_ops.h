// Internal declarations shared by the CUDA kernel files (nvcc only; never included from C).
// The backend table (cuda_backend.cu) points at these cu_* functions; each has exactly the
// signature and semantics of the mt_backend field of the same name (mtlab/backend.h), runs on
// the calling thread's stream of the current device, and never synchronises unless the
// contract says it returns a host result.
#ifndef MTLAB_CUDA_OPS_H
#define MTLAB_CUDA_OPS_H

#include "mtlab/backend.h"

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
#define CU_FOR_EACH(i, n) \
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (size_t)gridDim.x * blockDim.x)

// Stream-ordered scratch from the calling thread's memory pool (for ops that need temporary
// buffers, e.g. scan checkpoints); free it with cu_scratch_free on the same thread. Returns NULL
// (and records the error through cu_check) when the pool cannot grow.
void *cu_scratch(size_t bytes);
void cu_scratch_free(void *p);

// 1 when the calling thread's backend runs matrix products with bf16 inputs (fp32 accumulate).
int cu_gemm_bf16(void);

// The calling thread's cuBLAS handle (bound to cu_stream()) and the status check that records
// a failure the way cu_check does.
#include <cublas_v2.h>
cublasHandle_t cu_blas(void);
void cu_check_blas(cublasStatus_t s, const char *what);

// ---- part A1: memory, matrix products, host-result reductions (cuda_backend.cu, cuda_gemm.cu)
void *cu_alloc(size_t bytes);
void cu_free(void *p);
void cu_upload(void *dst, const void *host_src, size_t bytes);
void cu_download(void *host_dst, const void *src, size_t bytes);
void cu_copy(void *dst, const void *src, size_t bytes);
void cu_memzero(void *p, size_t bytes);
void cu_sync(void);
// recorded steps (CUDA graphs of the thread's stream; mtlab/backend.h graph_begin ...)
int cu_graph_begin(void);
void *cu_graph_end(void);
void cu_graph_run(void *graph);
void cu_graph_free(void *graph);
void cu_gemm(int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a, int lda,
             const float *b, int ldb, float beta, float *c, int ldc);
void cu_gemm_batched(int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a,
                     int lda, size_t stride_a, const float *b, int ldb, size_t stride_b,
                     float beta, float *c, int ldc, size_t stride_c, int batch);
// One product per cell (b, h) of a B x H grid, C_bh = alpha op(A_bh) op(B_bh) + beta C_bh, where
// each operand steps by its own stride over b and another over h (X_bh = X + b * x_bs + h * x_hs:
// attention's heads inside token-major rows). A strided batch when the strides are uniform, else
// one cuBLAS pointer-array batch over all B * H products (the pointers made on the device).
void cu_gemm_bh(int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a, int lda,
                size_t a_bs, size_t a_hs, const float *b, int ldb, size_t b_bs, size_t b_hs,
                float beta, float *c, int ldc, size_t c_bs, size_t c_hs, int B, int H);
// bf16 linear layers (precision bf16): the kind of mt_qmatrix the CUDA backend makes
int cu_qmatrix_make(mt_qmatrix *q, mt_qkind kind, const float *w, int rows, int cols);
void cu_qmatrix_free(mt_qmatrix *q);
void cu_qlinear_forward(float *out, const float *x, const mt_qmatrix *w, int row0, const float *bias, size_t BT,
                        int OC);
double cu_sum(const float *x, size_t n);
double cu_sum_squares(const float *x, size_t n);
void cu_argmax_rows(int32_t *out, const float *x, size_t rows, int cols);

// ---- part A2: elementwise, norms, embeddings, positions, loss, dropout, AdamW
// (cuda_elementwise.cu, cuda_norm.cu, cuda_embedding.cu, cuda_train.cu)
void cu_fill(float *x, size_t n, float value);
void cu_scale(float *x, size_t n, float s);
void cu_axpy(float *y, const float *x, size_t n, float a);
void cu_add(float *out, const float *a, const float *b, size_t n);
void cu_mul(float *out, const float *a, const float *b, size_t n);
void cu_mul_backward(float *da, float *db, const float *dout, const float *a, const float *b,
                     size_t n);
void cu_act_forward(mt_act act, float *out, const float *x, size_t n);
void cu_act_backward(mt_act act, float *dx, const float *dout, const float *x, size_t n);
void cu_gate_forward(float *out, const float *value, const float *gate, size_t n);
void cu_gate_backward(float *dvalue, float *dgate, const float *dout, const float *value,
                      const float *gate, size_t n);
void cu_mask_rows(float *x, const uint8_t *mask, size_t rows, int cols);
void cu_bias_add(float *out, const float *bias, size_t rows, int cols);
void cu_bias_backward(float *dbias, const float *dout, size_t rows, int cols);
void cu_copy2d(float *dst, int dst_ld, const float *src, int src_ld, size_t rows, int cols);
void cu_index_select(float *out, const float *src, size_t src_ld, const int32_t *idx, int n_idx,
                     size_t cols);
void cu_softmax(float *out, const float *x, size_t rows, int cols);
void cu_log_softmax(float *out, const float *x, size_t rows, int cols);
void cu_layernorm_forward(float *out, float *mean, float *rstd, const float *x,
                          const float *weight, const float *bias, size_t BT, int C, float eps);
void cu_layernorm_backward(float *dx, float *dweight, float *dbias, const float *dout,
                           const float *x, const float *weight, const float *mean,
                           const float *rstd, size_t BT, int C);
void cu_rmsnorm_forward(float *out, float *rstd, const float *x, const float *weight, size_t BT,
                        int C, float eps);
void cu_rmsnorm_backward(float *dx, float *dweight, const float *dout, const float *x,
                         const float *weight, const float *rstd, size_t BT, int C);
void cu_embedding_forward(float *out, const int32_t *ids, const float *table, size_t BT, int C,
                          float scale);
void cu_embedding_backward(float *dtable, const float *dout, const int32_t *ids, size_t BT, int C,
                           float scale);
void cu_sinusoid_fill(float *table, int P, int C);
void cu_positions_add(float *out, const float *table, int B, int T, int C, int pos0);
void cu_positions_backward(float *dtable, const float *dout, int B, int T, int C, int pos0);
void cu_rope_forward(float *x, const int32_t *pos, int B, int T, int H, int Dh, int rot_dim,
                     int pos0, const float *inv_freq, int interleaved);
void cu_rope_backward(float *dx, const int32_t *pos, int B, int T, int H, int Dh, int rot_dim,
                      int pos0, const float *inv_freq, int interleaved);
void cu_cross_entropy_forward(float *losses, float *lse, const float *logits,
                              const int32_t *targets, size_t BT, int V, int ignore_index,
                              float smoothing);
void cu_cross_entropy_backward(float *dlogits, const float *logits, const float *lse,
                               const int32_t *targets, size_t BT, int V, int ignore_index,
                               float smoothing, float scale);
void cu_cross_entropy_fused(float *losses, float *logits, const int32_t *targets, size_t BT,
                            int V, int ignore_index, float smoothing, float scale);
void cu_dropout_forward(float *out, const float *x, size_t n, float p, uint64_t seed,
                        uint64_t step, uint32_t site);
void cu_dropout_backward(float *dx, const float *dout, size_t n, float p, uint64_t seed,
                         uint64_t step, uint32_t site);
void cu_adamw_step(float *params, const float *grads, float *m, float *v,
                   const uint8_t *decay_mask, size_t n, const mt_adamw_hparams *h, int step);

// ---- part B: attention, conv1d, selective scan, retention (cuda_attention.cu, cuda_conv.cu,
// cuda_scan.cu, cuda_retention.cu)
void cu_attention_forward(float *out, float *att, const float *q, const float *k, const float *v,
                          const mt_attn_desc *d);
void cu_attention_backward(float *dq, float *dk, float *dv, float *datt, const float *dout,
                           const float *q, const float *k, const float *v, const float *att,
                           const mt_attn_desc *d);

void cu_conv1d_forward(float *out, const float *x, const float *w, const float *bias, int B, int T,
                       int C, int K);
void cu_conv1d_backward(float *dx, float *dw, float *dbias, const float *dout, const float *x,
                        const float *w, int B, int T, int C, int K);
void cu_conv1d_step(float *out, float *state, const float *x, const float *w, const float *bias,
                    int B, int C, int K);
void cu_conv1d_state_fill(float *state, const float *x, int B, int T, int C, int K);

void cu_scan_forward(float *y, float *h_last, const mt_scan_args *a);
void cu_scan_backward(const mt_scan_grads *g, const float *dy, const mt_scan_args *a);
void cu_scan_step(float *y, float *h, const mt_scan_args *a);

void cu_retention_forward(float *out, float *att, float *r, const float *q, const float *k,
                          const float *v, const mt_retention_desc *d);
void cu_retention_backward(float *dq, float *dk, float *dv, float *datt, const float *dout,
                           const float *q, const float *k, const float *v, const float *att,
                           const float *r, const mt_retention_desc *d);
void cu_retention_state_fill(float *kv, float *s, const float *k, const float *v,
                             const mt_retention_desc *d);
void cu_retention_step(float *out, float *kv, float *s, const float *q, const float *k,
                       const float *v, const mt_retention_desc *d);

#endif
