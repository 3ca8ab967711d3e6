/* The CPU implementations behind mt_backend_cpu() and mt_backend_cpu_naive() (cpu_backend.c
 * fills the two tables). Operations with a fast path have a naive_ twin in naive_*.c; the rest
 * are plain OpenMP loops that serve both tables. Semantics: mtlab/backend.h. */
#ifndef MTLAB_CPU_OPS_H
#define MTLAB_CPU_OPS_H

#include "mtlab/backend.h"

/* memory (cpu_memory.c) */
void *cpu_alloc(size_t bytes);
void cpu_free(void *p);
void cpu_upload(void *dst, const void *host_src, size_t bytes);
void cpu_download(void *host_dst, const void *src, size_t bytes);
void cpu_copy(void *dst, const void *src, size_t bytes);
void cpu_memzero(void *p, size_t bytes);
void cpu_sync(void);

/* matrix products (cpu_gemm.c: OpenBLAS and cpu_gemm_rows.c; naive_gemm.c: loops) */
void cpu_gemm(int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a, int lda,
              const float *b, int ldb, float beta, float *c, int ldc);
void cpu_gemm_batched(int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a,
                      int lda, size_t stride_a, const float *b, int ldb, size_t stride_b,
                      float beta, float *c, int ldc, size_t stride_c, int batch);
/* y (M, N) = alpha x (M, K) w (N, K)^T for decoding's few rows (cpu_gemm_rows.c): 1 when done,
 * 0 when this CPU or these sizes want OpenBLAS instead (one row, more than 32, K or N below
 * 64). */
#define CPU_ROWS_MAX_M 32
int cpu_gemm_rows(int M, int N, int K, float alpha, const float *x, int ldx, const float *w,
                  int ldw, float *y, int ldy);
/* The kernels behind it, for tests: whether this CPU runs one, and the product with it (any
 * M, N, K >= 1). */
typedef enum { CPU_ROWS_NONE, CPU_ROWS_AVX2, CPU_ROWS_AVX512 } cpu_rows_isa;
int cpu_gemm_rows_supported(cpu_rows_isa isa);
int cpu_gemm_rows_with(cpu_rows_isa isa, int M, int N, int K, float alpha, const float *x,
                       int ldx, const float *w, int ldw, float *y, int ldy);
void naive_gemm(int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a,
                int lda, const float *b, int ldb, float beta, float *c, int ldc);
void naive_gemm_batched(int trans_a, int trans_b, int m, int n, int k, float alpha,
                        const float *a, int lda, size_t stride_a, const float *b, int ldb,
                        size_t stride_b, float beta, float *c, int ldc, size_t stride_c,
                        int batch);

/* int8 linear layers (cpu_int8.c: quantization, kernel choice, the tiled product;
 * naive_int8.c, cpu_int8_avx2.c, cpu_int8_avx512.c: the dot-product kernels).
 * A kernel computes, exactly in int32, for m < M and j < N:
 *   acc[m*ldc + j] = sum_{k < ld} xq[m*ld + k] * wq[j*ld + k]
 * over int8 rows in [-127, 127] padded with zeros to ld (a multiple of MT_INT8_ALIGN); wsum[j]
 * = sum_k wq[j*ld + k] is there for kernels that shift xq to unsigned (docs/quantization.md
 * §2). Every kernel gives the same int32 results. */
typedef void (*cpu_int8_dots_fn)(int32_t *acc, int ldc, const int8_t *xq, int M,
                                 const int8_t *wq, const int32_t *wsum, int N, int ld);
typedef struct {
    const char *name;        /* "ref", "avx2", "avx512-vnni" (MTLAB_INT8_KERNEL) */
    const char *cpu_feature; /* what __builtin_cpu_supports must report ("" for none) */
    cpu_int8_dots_fn dots;
} cpu_int8_kernel;
void naive_int8_dots(int32_t *acc, int ldc, const int8_t *xq, int M, const int8_t *wq,
                     const int32_t *wsum, int N, int ld);
void cpu_int8_dots_avx2(int32_t *acc, int ldc, const int8_t *xq, int M, const int8_t *wq,
                        const int32_t *wsum, int N, int ld);
void cpu_int8_dots_avx512_vnni(int32_t *acc, int ldc, const int8_t *xq, int M, const int8_t *wq,
                               const int32_t *wsum, int N, int ld);
/* The kernel of that name when this CPU runs it, else NULL. */
const cpu_int8_kernel *cpu_int8_kernel_named(const char *name);
/* MTLAB_INT8_KERNEL's kernel, or the fastest one here; NULL + mt_error for a forced kernel
 * this CPU does not run. */
const cpu_int8_kernel *cpu_int8_kernel_pick(void);
/* q (ld bytes) = x (C) quantized symmetrically, zero padded; returns the scale. */
float cpu_int8_quantize_row(int8_t *q, const float *x, int C, int ld);
/* C rounded up to MT_INT8_ALIGN. */
int cpu_int8_ld(int C);
int cpu_qmatrix_make(mt_qmatrix *q, mt_qkind kind, const float *w, int rows, int cols);
void cpu_qmatrix_free(mt_qmatrix *q);
/* qlinear_forward with a given kernel, threaded over output tiles when threaded is 1 and the
 * product is large enough. */
void cpu_qlinear_with(const cpu_int8_kernel *kern, int threaded, float *out, const float *x,
                      const mt_qmatrix *w, int row0, const float *bias, size_t BT, int OC);
void cpu_qlinear_forward(float *out, const float *x, const mt_qmatrix *w, int row0,
                         const float *bias, size_t BT, int OC);
void naive_qlinear_forward(float *out, const float *x, const mt_qmatrix *w, int row0,
                           const float *bias, size_t BT, int OC);

/* elementwise and utilities (cpu_elementwise.c, cpu_reduce.c) */
void cpu_fill(float *x, size_t n, float value);
void cpu_scale(float *x, size_t n, float s);
void cpu_axpy(float *y, const float *x, size_t n, float a);
void cpu_add(float *out, const float *a, const float *b, size_t n);
void cpu_mul(float *out, const float *a, const float *b, size_t n);
void cpu_mul_backward(float *da, float *db, const float *dout, const float *a, const float *b,
                      size_t n);
void cpu_act_forward(mt_act act, float *out, const float *x, size_t n);
void cpu_act_backward(mt_act act, float *dx, const float *dout, const float *x, size_t n);
void cpu_gate_forward(float *out, const float *value, const float *gate, size_t n);
void cpu_gate_backward(float *dvalue, float *dgate, const float *dout, const float *value,
                       const float *gate, size_t n);
void cpu_mask_rows(float *x, const uint8_t *mask, size_t rows, int cols);
void cpu_bias_add(float *out, const float *bias, size_t rows, int cols);
void cpu_bias_backward(float *dbias, const float *dout, size_t rows, int cols);
void naive_bias_backward(float *dbias, const float *dout, size_t rows, int cols);
void cpu_copy2d(float *dst, int dst_ld, const float *src, int src_ld, size_t rows, int cols);
void cpu_index_select(float *out, const float *src, size_t src_ld, const int32_t *idx, int n_idx,
                      size_t cols);
double cpu_sum(const float *x, size_t n);
double cpu_sum_squares(const float *x, size_t n);
void cpu_argmax_rows(int32_t *out, const float *x, size_t rows, int cols);
void cpu_softmax(float *out, const float *x, size_t rows, int cols);
/* one row's max, sum_j exp(x_j - shift) and sum_j x_j (vectorised; sums end in double) */
float cpu_row_max(const float *x, int n);
double cpu_row_sum_exp(const float *x, int n, float shift);
double cpu_row_sum(const float *x, int n);
void cpu_log_softmax(float *out, const float *x, size_t rows, int cols);

/* normalisation (cpu_norm.c; naive_columns.c: the weight gradients one column at a time) */
void cpu_layernorm_forward(float *out, float *mean, float *rstd, const float *x,
                           const float *weight, const float *bias, size_t BT, int C, float eps);
void cpu_layernorm_backward(float *dx, float *dweight, float *dbias, const float *dout,
                            const float *x, const float *weight, const float *mean,
                            const float *rstd, size_t BT, int C);
void cpu_rmsnorm_forward(float *out, float *rstd, const float *x, const float *weight, size_t BT,
                         int C, float eps);
void cpu_rmsnorm_backward(float *dx, float *dweight, const float *dout, const float *x,
                          const float *weight, const float *rstd, size_t BT, int C);
void naive_layernorm_backward(float *dx, float *dweight, float *dbias, const float *dout,
                              const float *x, const float *weight, const float *mean,
                              const float *rstd, size_t BT, int C);
void naive_rmsnorm_backward(float *dx, float *dweight, const float *dout, const float *x,
                            const float *weight, const float *rstd, size_t BT, int C);

/* embeddings and positions (cpu_embedding.c) */
void cpu_embedding_forward(float *out, const int32_t *ids, const float *table, size_t BT, int C,
                           float scale);
void cpu_embedding_backward(float *dtable, const float *dout, const int32_t *ids, size_t BT, int C,
                            float scale);
void cpu_sinusoid_fill(float *table, int P, int C);
void cpu_positions_add(float *out, const float *table, int B, int T, int C, int pos0);
void cpu_positions_backward(float *dtable, const float *dout, int B, int T, int C, int pos0);
void cpu_rope_forward(float *x, const int32_t *pos, int B, int T, int H, int Dh, int rot_dim,
                      int pos0, const float *inv_freq, int interleaved);
void cpu_rope_backward(float *dx, const int32_t *pos, int B, int T, int H, int Dh, int rot_dim,
                       int pos0, const float *inv_freq, int interleaved);

/* attention (cpu_attention.c: per-head sgemm; naive_attention.c: loops) */
void cpu_attention_forward(float *out, float *att, const float *q, const float *k, const float *v,
                           const mt_attn_desc *d);
void cpu_attention_backward(float *dq, float *dk, float *dv, float *datt, const float *dout,
                            const float *q, const float *k, const float *v, const float *att,
                            const mt_attn_desc *d);
void naive_attention_forward(float *out, float *att, const float *q, const float *k,
                             const float *v, const mt_attn_desc *d);
void naive_attention_backward(float *dq, float *dk, float *dv, float *datt, const float *dout,
                              const float *q, const float *k, const float *v, const float *att,
                              const mt_attn_desc *d);
/* 1 when key j is visible to query i of batch row b (shared by both attention versions) */
int cpu_attn_visible(const mt_attn_desc *d, int b, int i, int j);

/* causal depthwise conv1d (cpu_conv.c; naive_conv.c: the backward one channel at a time) */
void cpu_conv1d_forward(float *out, const float *x, const float *w, const float *bias, int B,
                        int T, int C, int K);
void cpu_conv1d_backward(float *dx, float *dw, float *dbias, const float *dout, const float *x,
                         const float *w, int B, int T, int C, int K);
void cpu_conv1d_step(float *out, float *state, const float *x, const float *w, const float *bias,
                     int B, int C, int K);
void cpu_conv1d_state_fill(float *state, const float *x, int B, int T, int C, int K);
void naive_conv1d_backward(float *dx, float *dw, float *dbias, const float *dout,
                           const float *x, const float *w, int B, int T, int C, int K);

/* selective scan (cpu_scan.c: streaming, recomputes states in backward; naive_scan.c: keeps
 * every state) */
void cpu_scan_forward(float *y, float *h_last, const mt_scan_args *a);
void cpu_scan_backward(const mt_scan_grads *g, const float *dy, const mt_scan_args *a);
void cpu_scan_step(float *y, float *h, const mt_scan_args *a);
void naive_scan_forward(float *y, float *h_last, const mt_scan_args *a);
void naive_scan_backward(const mt_scan_grads *g, const float *dy, const mt_scan_args *a);

/* multi-scale retention (cpu_retention.c: per-head sgemm, plus the recurrent state fill and
 * step shared by both tables; naive_retention.c: loops in double) */
void cpu_retention_forward(float *out, float *att, float *r, const float *q, const float *k,
                           const float *v, const mt_retention_desc *d);
void cpu_retention_backward(float *dq, float *dk, float *dv, float *datt, const float *dout,
                            const float *q, const float *k, const float *v, const float *att,
                            const float *r, const mt_retention_desc *d);
void cpu_retention_state_fill(float *kv, float *s, const float *k, const float *v,
                              const mt_retention_desc *d);
void cpu_retention_step(float *out, float *kv, float *s, const float *q, const float *k,
                        const float *v, const mt_retention_desc *d);
void naive_retention_forward(float *out, float *att, float *r, const float *q, const float *k,
                             const float *v, const mt_retention_desc *d);
void naive_retention_backward(float *dq, float *dk, float *dv, float *datt, const float *dout,
                              const float *q, const float *k, const float *v, const float *att,
                              const float *r, const mt_retention_desc *d);
/* (H, T) malloc'd table of gamma[h]^k; 1 when position m of row b is real */
double *cpu_retention_powers(const mt_retention_desc *d);
int cpu_retention_visible(const mt_retention_desc *d, int b, int m);

/* loss, dropout, optimiser (cpu_train.c) */
void cpu_cross_entropy_forward(float *losses, float *lse, const float *logits,
                               const int32_t *targets, size_t BT, int V, int ignore_index,
                               float smoothing);
void cpu_cross_entropy_backward(float *dlogits, const float *logits, const float *lse,
                                const int32_t *targets, size_t BT, int V, int ignore_index,
                                float smoothing, float scale);
void cpu_cross_entropy_fused(float *losses, float *logits, const int32_t *targets, size_t BT,
                             int V, int ignore_index, float smoothing, float scale);
void cpu_dropout_forward(float *out, const float *x, size_t n, float p, uint64_t seed,
                         uint64_t step, uint32_t site);
void cpu_dropout_backward(float *dx, const float *dout, size_t n, float p, uint64_t seed,
                          uint64_t step, uint32_t site);
void cpu_adamw_step(float *params, const float *grads, float *m, float *v,
                    const uint8_t *decay_mask, size_t n, const mt_adamw_hparams *h, int step);

#endif
