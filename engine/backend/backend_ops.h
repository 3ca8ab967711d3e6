/* The operations every backend implements, each with exactly the signature of the mt_backend
 * field of the same name (mtlab/backend.h, which holds their contracts): one list, from which
 * the CPU backend declares cpu_NAME (backend/cpu/cpu_ops.h) and the CUDA backend cu_NAME
 * (kernels/cuda_ops.h), so the two sets of prototypes cannot drift apart. A backend table's
 * `.NAME = cpu_NAME` is what checks each against its field.
 *
 * MT_BACKEND_OPS(X) expands X(return type, NAME, (parameters)) once per operation; the
 * recorded steps (graph_begin ...) are not here: only CUDA has them. */
#ifndef MTLAB_BACKEND_OPS_H
#define MTLAB_BACKEND_OPS_H

#include "mtlab/backend.h"

#define MT_BACKEND_OPS(X)                                                                          \
    /* ---- memory */                                                                              \
    X(void *, alloc, (size_t bytes))                                                               \
    X(void, free, (void *p))                                                                       \
    X(void, upload, (void *dst, const void *host_src, size_t bytes))                               \
    X(void, download, (void *host_dst, const void *src, size_t bytes))                             \
    X(void, copy, (void *dst, const void *src, size_t bytes))                                      \
    X(void, memzero, (void *p, size_t bytes))                                                      \
    X(void, sync, (void))                                                                          \
    /* ---- matrix products and the quantized linear layer */                                      \
    X(void, gemm,                                                                                  \
      (int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a, int lda,        \
       const float *b, int ldb, float beta, float *c, int ldc))                                    \
    X(void, gemm_batched,                                                                          \
      (int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a, int lda,        \
       size_t stride_a, const float *b, int ldb, size_t stride_b, float beta, float *c, int ldc,   \
       size_t stride_c, int batch))                                                                \
    X(int, qmatrix_make, (mt_qmatrix * q, mt_qkind kind, const float *w, int rows, int cols))      \
    X(void, qmatrix_free, (mt_qmatrix * q))                                                        \
    X(void, qlinear_forward,                                                                       \
      (float *out, const float *x, const mt_qmatrix *w, int row0, const float *bias, size_t BT,    \
       int OC))                                                                                    \
    /* ---- reductions with a host result */                                                       \
    X(double, sum, (const float *x, size_t n))                                                     \
    X(double, sum_squares, (const float *x, size_t n))                                             \
    X(void, argmax_rows, (int32_t * out, const float *x, size_t rows, int cols))                   \
    /* ---- elementwise and small utilities */                                                     \
    X(void, fill, (float *x, size_t n, float value))                                               \
    X(void, scale, (float *x, size_t n, float s))                                                  \
    X(void, axpy, (float *y, const float *x, size_t n, float a))                                   \
    X(void, add, (float *out, const float *a, const float *b, size_t n))                           \
    X(void, mul, (float *out, const float *a, const float *b, size_t n))                           \
    X(void, mul_backward,                                                                          \
      (float *da, float *db, const float *dout, const float *a, const float *b, size_t n))         \
    X(void, act_forward, (mt_act act, float *out, const float *x, size_t n))                       \
    X(void, act_backward, (mt_act act, float *dx, const float *dout, const float *x, size_t n))    \
    X(void, gate_forward, (float *out, const float *value, const float *gate, size_t n))           \
    X(void, gate_backward,                                                                         \
      (float *dvalue, float *dgate, const float *dout, const float *value, const float *gate,      \
       size_t n))                                                                                  \
    X(void, mask_rows, (float *x, const uint8_t *mask, size_t rows, int cols))                     \
    X(void, bias_add, (float *out, const float *bias, size_t rows, int cols))                      \
    X(void, bias_backward, (float *dbias, const float *dout, size_t rows, int cols))               \
    X(void, copy2d, (float *dst, int dst_ld, const float *src, int src_ld, size_t rows, int cols)) \
    X(void, index_select,                                                                          \
      (float *out, const float *src, size_t src_ld, const int32_t *idx, int n_idx, size_t cols))   \
    X(void, softmax, (float *out, const float *x, size_t rows, int cols))                          \
    X(void, log_softmax, (float *out, const float *x, size_t rows, int cols))                      \
    /* ---- normalisation */                                                                       \
    X(void, layernorm_forward,                                                                     \
      (float *out, float *mean, float *rstd, const float *x, const float *weight,                  \
       const float *bias, size_t BT, int C, float eps))                                            \
    X(void, layernorm_backward,                                                                    \
      (float *dx, float *dweight, float *dbias, const float *dout, const float *x,                 \
       const float *weight, const float *mean, const float *rstd, size_t BT, int C))               \
    X(void, rmsnorm_forward,                                                                       \
      (float *out, float *rstd, const float *x, const float *weight, size_t BT, int C, float eps)) \
    X(void, rmsnorm_backward,                                                                      \
      (float *dx, float *dweight, const float *dout, const float *x, const float *weight,          \
       const float *rstd, size_t BT, int C))                                                       \
    /* ---- embeddings and positions */                                                            \
    X(void, embedding_forward,                                                                     \
      (float *out, const int32_t *ids, const float *table, size_t BT, int C, float scale))         \
    X(void, embedding_backward,                                                                    \
      (float *dtable, const float *dout, const int32_t *ids, size_t BT, int C, float scale))       \
    X(void, sinusoid_fill, (float *table, int P, int C))                                           \
    X(void, positions_add, (float *out, const float *table, int B, int T, int C, int pos0))        \
    X(void, positions_backward, (float *dtable, const float *dout, int B, int T, int C, int pos0)) \
    X(void, rope_forward,                                                                          \
      (float *x, const int32_t *pos, int B, int T, int H, int Dh, int rot_dim, int pos0,           \
       const float *inv_freq, int interleaved))                                                    \
    X(void, rope_backward,                                                                         \
      (float *dx, const int32_t *pos, int B, int T, int H, int Dh, int rot_dim, int pos0,          \
       const float *inv_freq, int interleaved))                                                    \
    /* ---- loss, dropout, optimiser */                                                            \
    X(void, cross_entropy_forward,                                                                 \
      (float *losses, float *lse, const float *logits, const int32_t *targets, size_t BT, int V,   \
       int ignore_index, float smoothing))                                                         \
    X(void, cross_entropy_backward,                                                                \
      (float *dlogits, const float *logits, const float *lse, const int32_t *targets, size_t BT,   \
       int V, int ignore_index, float smoothing, float scale))                                     \
    X(void, cross_entropy_fused,                                                                   \
      (float *losses, float *logits, const int32_t *targets, size_t BT, int V, int ignore_index,   \
       float smoothing, float scale))                                                              \
    X(void, dropout_forward,                                                                       \
      (float *out, const float *x, size_t rows, size_t row_len, const mt_dropout *d))              \
    X(void, dropout_backward,                                                                      \
      (float *dx, const float *dout, size_t rows, size_t row_len, const mt_dropout *d))            \
    X(void, adamw_step,                                                                            \
      (float *params, const float *grads, float *m, float *v, const uint8_t *decay_mask, size_t n, \
       const mt_adamw_hparams *h, int step))                                                       \
    /* ---- attention */                                                                           \
    X(void, attention_forward,                                                                     \
      (float *out, float *att, const float *q, const float *k, const float *v,                     \
       const mt_attn_desc *d))                                                                     \
    X(void, attention_backward,                                                                    \
      (float *dq, float *dk, float *dv, float *datt, const float *dout, const float *q,            \
       const float *k, const float *v, const float *att, const mt_attn_desc *d))                   \
    /* ---- causal depthwise conv1d */                                                             \
    X(void, conv1d_forward,                                                                        \
      (float *out, const float *x, const float *w, const float *bias, int B, int T, int C, int K)) \
    X(void, conv1d_backward,                                                                       \
      (float *dx, float *dw, float *dbias, const float *dout, const float *x, const float *w,      \
       int B, int T, int C, int K))                                                                \
    X(void, conv1d_step,                                                                           \
      (float *out, float *state, const float *x, const float *w, const float *bias, int B, int C,  \
       int K))                                                                                     \
    X(void, conv1d_state_fill, (float *state, const float *x, int B, int T, int C, int K))         \
    /* ---- selective scan */                                                                      \
    X(void, scan_forward, (float *y, float *h_last, const mt_scan_args *a))                        \
    X(void, scan_backward, (const mt_scan_grads *g, const float *dy, const mt_scan_args *a))       \
    X(void, scan_step, (float *y, float *h, const mt_scan_args *a))                                \
    /* ---- multi-scale retention */                                                               \
    X(void, retention_forward,                                                                     \
      (float *out, float *att, float *r, const float *q, const float *k, const float *v,           \
       const mt_retention_desc *d))                                                                \
    X(void, retention_backward,                                                                    \
      (float *dq, float *dk, float *dv, float *datt, const float *dout, const float *q,            \
       const float *k, const float *v, const float *att, const float *r,                           \
       const mt_retention_desc *d))                                                                \
    X(void, retention_state_fill,                                                                  \
      (float *kv, float *s, const float *k, const float *v, const mt_retention_desc *d))           \
    X(void, retention_step,                                                                        \
      (float *out, float *kv, float *s, const float *q, const float *k, const float *v,            \
       const mt_retention_desc *d))

#endif
