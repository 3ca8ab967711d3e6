/* The CPU implementations behind mt_backend_cpu() and mt_backend_cpu_naive() (cpu_backend.c
 * fills the two tables). Operations with a fast path have a naive_ twin in naive_*.c; the rest
 * are plain OpenMP loops that serve both tables. Semantics: mtlab/backend.h. */
#ifndef MTLAB_CPU_OPS_H
#define MTLAB_CPU_OPS_H

#include "backend/backend_ops.h"

/* cpu_NAME for every operation of backend/backend_ops.h: memory (cpu_memory.c), matrix
 * products (cpu_gemm.c: OpenBLAS), the int8 linear layer (cpu_int8.c), reductions and
 * elementwise (cpu_reduce.c, cpu_elementwise.c), norms (cpu_norm.c), embeddings and positions
 * (cpu_embedding.c), loss, dropout and AdamW (cpu_train.c), attention, conv1d, scan and
 * retention (cpu_attention.c, cpu_conv.c, cpu_scan.c, cpu_retention.c). Below them, what the
 * CPU backend has besides: the naive_ twins and the helpers of the fast paths. */
#define CPU_DECLARE(ret, name, params) ret cpu_##name params;
MT_BACKEND_OPS(CPU_DECLARE)
#undef CPU_DECLARE

/* matrix products (cpu_gemm_rows.c; naive_gemm.c: loops) */
/* y (M, N) = alpha x (M, K) w (N, K)^T for decoding's few rows (cpu_gemm_rows.c): 1 when done,
 * 0 when this CPU or these sizes want OpenBLAS instead (one row, but for a matrix of 2^22
 * floats or more on an AVX-512 CPU; more than 32 rows; K or N below 64). */
#define CPU_ROWS_MAX_M 32
int cpu_gemm_rows(int M, int N, int K, float alpha, const float *x, int ldx, const float *w,
                  int ldw, float *y, int ldy);
/* The kernels behind it, for tests: whether this CPU runs one, and the product with it (any
 * M, N, K >= 1). */
typedef enum { CPU_ROWS_NONE, CPU_ROWS_AVX2, CPU_ROWS_AVX512 } cpu_rows_isa;
int cpu_gemm_rows_supported(cpu_rows_isa isa);
int cpu_gemm_rows_with(cpu_rows_isa isa, int M, int N, int K, float alpha, const float *x, int ldx,
                       const float *w, int ldw, float *y, int ldy);
void naive_gemm(int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a, int lda,
                const float *b, int ldb, float beta, float *c, int ldc);
void naive_gemm_batched(int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a,
                        int lda, size_t stride_a, const float *b, int ldb, size_t stride_b,
                        float beta, float *c, int ldc, size_t stride_c, int batch);

/* int8 linear layers (cpu_int8.c: quantization, kernel choice, the tiled product;
 * naive_int8.c, cpu_int8_avx2.c, cpu_int8_avx512.c: the dot-product kernels).
 * A kernel computes, exactly in int32, for m < M and j < N:
 *   acc[m*ldc + j] = sum_{k < ld} xq[m*ld + k] * wq[j*ld + k]
 * over int8 rows in [-127, 127] padded with zeros to ld (a multiple of MT_INT8_ALIGN); wsum[j]
 * = sum_k wq[j*ld + k] is there for kernels that shift xq to unsigned (docs/quantization.md
 * §2). Every kernel gives the same int32 results. */
typedef void (*cpu_int8_dots_fn)(int32_t *acc, int ldc, const int8_t *xq, int M, const int8_t *wq,
                                 const int32_t *wsum, int N, int ld);
typedef struct {
    const char *name; /* "ref", "avx2", "avx512-vnni" (MTLAB_INT8_KERNEL) */
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
/* qlinear_forward with a given kernel, threaded over output tiles when threaded is 1 and the
 * product is large enough. */
void cpu_qlinear_with(const cpu_int8_kernel *kern, int threaded, float *out, const float *x,
                      const mt_qmatrix *w, int row0, const float *bias, size_t BT, int OC);
void naive_qlinear_forward(float *out, const float *x, const mt_qmatrix *w, int row0,
                           const float *bias, size_t BT, int OC);

/* elementwise and utilities (cpu_elementwise.c, cpu_reduce.c) */
void naive_bias_backward(float *dbias, const float *dout, size_t rows, int cols);
/* one row's max, sum_j exp(x_j - shift) and sum_j x_j (vectorised; sums end in double) */
float cpu_row_max(const float *x, int n);
double cpu_row_sum_exp(const float *x, int n, float shift);
double cpu_row_sum(const float *x, int n);

/* normalisation (cpu_norm.c; naive_columns.c: the weight gradients one column at a time) */
void naive_layernorm_backward(float *dx, float *dweight, float *dbias, const float *dout,
                              const float *x, const float *weight, const float *mean,
                              const float *rstd, size_t BT, int C);
void naive_rmsnorm_backward(float *dx, float *dweight, const float *dout, const float *x,
                            const float *weight, const float *rstd, size_t BT, int C);

/* attention (cpu_attention.c: per-head sgemm; naive_attention.c: loops) */
void naive_attention_forward(float *out, float *att, const float *q, const float *k, const float *v,
                             const mt_attn_desc *d);
void naive_attention_backward(float *dq, float *dk, float *dv, float *datt, const float *dout,
                              const float *q, const float *k, const float *v, const float *att,
                              const mt_attn_desc *d);
/* 1 when key j is visible to query i of batch row b (shared by both attention versions) */
int cpu_attn_visible(const mt_attn_desc *d, int b, int i, int j);

/* causal depthwise conv1d (cpu_conv.c; naive_conv.c: the backward one channel at a time) */
void naive_conv1d_backward(float *dx, float *dw, float *dbias, const float *dout, const float *x,
                           const float *w, int B, int T, int C, int K);

/* selective scan (cpu_scan.c: streaming, recomputes states in backward; naive_scan.c: keeps
 * every state) */
void naive_scan_forward(float *y, float *h_last, const mt_scan_args *a);
void naive_scan_backward(const mt_scan_grads *g, const float *dy, const mt_scan_args *a);

/* multi-scale retention (cpu_retention.c: per-head sgemm, plus the recurrent state fill and
 * step shared by both tables; naive_retention.c: loops in double) */
void naive_retention_forward(float *out, float *att, float *r, const float *q, const float *k,
                             const float *v, const mt_retention_desc *d);
void naive_retention_backward(float *dq, float *dk, float *dv, float *datt, const float *dout,
                              const float *q, const float *k, const float *v, const float *att,
                              const float *r, const mt_retention_desc *d);
/* (H, T) malloc'd table of gamma[h]^k; 1 when position m of row b is real */
double *cpu_retention_powers(const mt_retention_desc *d);
int cpu_retention_visible(const mt_retention_desc *d, int b, int m);

#endif
