/* The CPU implementations behind mt_backend_cpu() and mt_backend_cpu_naive() (cpu_backend.c
 * fills the two tables). Operations with a fast path have a naive_ twin in naive_*.c; the rest
 * are plain OpenMP loops that serve both tables. Semantics: mtlab/backend.h. */
#ifndef MTLAB_CPU_OPS_H
#define MTLAB_CPU_OPS_H

#include "backend/backend_ops.h"

#include <stdlib.h>
#include <string.h>

/* cpu_NAME for every operation of backend/backend_ops.h: memory (cpu_memory.c), matrix
 * products (cpu_gemm.c: OpenBLAS, BLIS), the int8 linear layer (cpu_int8.c), reductions and
 * elementwise (cpu_reduce.c, cpu_elementwise.c), norms (cpu_norm.c), embeddings and positions
 * (cpu_embedding.c), loss, dropout and AdamW (cpu_train.c), attention, conv1d, scan and
 * retention (cpu_attention.c, cpu_conv.c, cpu_scan.c, cpu_retention.c). Below them, what the
 * CPU backend has besides: the naive_ twins and the helpers of the fast paths. */
#define CPU_DECLARE(ret, name, params) ret cpu_##name params;
MT_BACKEND_OPS(CPU_DECLARE)
#undef CPU_DECLARE

/* 1 when the environment variable `name` is "off" or "0" (MTLAB_FP32_PANELS, MTLAB_HUGE_PAGES) */
static inline int cpu_env_off(const char *name)
{
    const char *v = getenv(name);
    return v && (!strcmp(v, "off") || !strcmp(v, "0"));
}

/* The calling thread's scratch buffer for one use (cpu_scratch.c): at least `bytes`, 64-byte
 * aligned, kept for the thread's next call (grown when a call needs more, never shrunk), so an
 * operation called every decoding step allocates nothing after its first call. What a use held
 * before is gone after a call for that use that grows it. cpu_scratch_bytes: the size it has
 * now (0 before its first call), for the tests. */
typedef enum {
    CPU_SCRATCH_PACK_A, /* cpu_gemm_packed.c: op(A)'s panels */
    CPU_SCRATCH_PACK_B, /* and op(B)'s */
    CPU_SCRATCH_INT8_X, /* cpu_int8.c: a product's quantized rows of x */
    CPU_SCRATCH_INT8_SCALES, /* and their scales */
    CPU_SCRATCH_HEAD, /* cpu_heads.c: a head's operands packed for the tile product */
    CPU_SCRATCH_PANELS, /* cpu_panel_tiles.c: panels made from w as a product reads it */
    CPU_SCRATCH_K_HALF, /* cpu_gemm_packed.c: a weight gradient's second half of k */
    CPU_SCRATCH_USES
} cpu_scratch_use;
void *cpu_scratch(cpu_scratch_use use, size_t bytes);
size_t cpu_scratch_bytes(cpu_scratch_use use);

/* matrix products (cpu_gemm_rows.c; naive_gemm.c: loops) */
/* y (M, N) = alpha x (M, K) w (N, K)^T for decoding's few rows (cpu_gemm_rows.c): 1 when done,
 * 0 when this CPU or these sizes want OpenBLAS instead (a CPU without AVX2 + FMA; more rows than
 * the kernel takes, CPU_ROWS_MAX_M with AVX-512, CPU_ROWS_MAX_M_AVX2 with AVX2; at 2 rows and
 * more, K or N below 64). */
#define CPU_ROWS_MAX_M 128
#define CPU_ROWS_MAX_M_AVX2 39
int cpu_gemm_rows(int M, int N, int K, float alpha, const float *x, int ldx, const float *w,
                  int ldw, float *y, int ldy);
/* Rows n0..n1-1 of that product (y (M, N) at its columns n0..n1-1) on the calling thread, with
 * the kernel cpu_gemm_rows picks: each output is the same float as there (a row's sums do not
 * depend on the rows beside it), so threads can share a product inside one OpenMP region. 1
 * when done, 0 where cpu_gemm_rows would not take the M x N x K product. */
int cpu_gemm_rows_part(int M, int n0, int n1, int N, int K, float alpha, const float *x, int ldx,
                       const float *w, int ldw, float *y, int ldy);
/* The kernels behind it, for tests: whether this CPU runs one, and the product with it (any
 * M, N, K >= 1). */
typedef enum { CPU_ROWS_NONE, CPU_ROWS_AVX2, CPU_ROWS_AVX512 } cpu_rows_isa;
int cpu_gemm_rows_supported(cpu_rows_isa isa);
/* the widest few-row and panel kernels this CPU runs (AVX-512, AVX2 or none), checked once */
cpu_rows_isa cpu_rows_best_isa(void);
int cpu_gemm_rows_with(cpu_rows_isa isa, int M, int N, int K, float alpha, const float *x, int ldx,
                       const float *w, int ldw, float *y, int ldy);
/* Small products in the caches (cpu_gemm_tiles.c; attention's per-head products):
 *   C (M, N) = alpha * sum over k of A(r, k) B[k][c]  (+ C when beta is 1)
 * A(r, k) = a[r a_row + k a_k] (a_row = lda, a_k = 1 by rows; 1 and lda transposed); B is K rows
 * of ldb floats, of which only the first N are read.
 * limit skips what a causal mask makes 0, with off the mask's offset (key j visible to query i
 * while j <= off + i):
 *   CPU_TILE_COLS_TO  C's columns are keys, rows queries: row r's columns past off + r may hold
 *                     0 or the product (the caller discards them);
 *   CPU_TILE_K_TO     k runs over keys, rows are queries: A(r, k) is 0 for k > off + r;
 *   CPU_TILE_K_FROM   k runs over queries, rows are keys: A(r, k) is 0 for k < r - off.
 * cpu_gemm_tiles: 1 when done with that kernel (AVX-512 or AVX2 + FMA), 0 on a CPU without it;
 * naive_gemm_tiles: the same sums in double, in plain loops (tests). */
typedef enum { CPU_TILE_ALL, CPU_TILE_COLS_TO, CPU_TILE_K_TO, CPU_TILE_K_FROM } cpu_tile_limit;
typedef struct {
    int M, N, K;
    float alpha;
    const float *a;
    size_t a_row, a_k;
    const float *b;
    int ldb;
    float *c;
    int ldc, beta;
    cpu_tile_limit limit;
    int off;
} cpu_tile_args;
int cpu_gemm_tiles(cpu_rows_isa isa, const cpu_tile_args *t);
void naive_gemm_tiles(const cpu_tile_args *t);
/* B for it from rows of src (rows, cols; rows lds apart) transposed: dst (cols, ld), ld a
 * multiple of 16, zero from rows to ld; only where cpu_gemm_tiles runs */
void cpu_tiles_pack_transposed(float *dst, int ld, const float *src, size_t lds, int rows,
                               int cols);
/* Attention's softmax rows in the same vectors: s[0, n) = softmax over the keys in [lo, hi)
 * whose byte of km (NULL: all) is not 0, every other key 0 (a row with none all 0); ds[0, n) =
 * p * (ds - sum(p * ds)). 1 when done, 0 where cpu_gemm_tiles would not run. */
int cpu_tiles_softmax_row(cpu_rows_isa isa, float *s, int n, int lo, int hi, const uint8_t *km);
int cpu_tiles_softmax_backward_row(cpu_rows_isa isa, float *ds, const float *p, int n);
/* One (batch row, head) problem of attention or retention in parallel form (cpu_heads.c):
 *   forward   p (Tq, Tk) = scale q k^T ; rows(ctx, p) ; o = p v
 *   backward  dv += p^T dout ; ds (Tq, Tk) = dout v^T ; rows_back(ctx, ds, p) ;
 *             dq += scale ds k ; dk += scale ds^T q      (a NULL gradient is skipped)
 * ds is the caller's scratch of Tq Tk floats (the tile path keeps its own, in the caches).
 * q, dq (Tq, Dk) rows ldq apart; k, dk (Tk, Dk) ldk apart; v, dv (Tk, Dv), o, dout (Tq, Dv) ldv
 * apart. causal: the rows pass leaves p[i][j] = 0 and ds[i][j] = 0 for j > off + i, and the
 * products skip those keys (p and ds there may hold anything finite before the pass). */
typedef struct {
    int Tq, Tk, Dk, Dv;
    size_t ldq, ldk, ldv;
    float scale;
    int causal, off;
} cpu_head;
void cpu_head_forward(const cpu_head *h, float *o, float *p, const float *q, const float *k,
                      const float *v, void (*rows)(void *ctx, float *p), void *ctx);
void cpu_head_backward(const cpu_head *h, float *dq, float *dk, float *dv, float *ds,
                       const float *dout, const float *q, const float *k, const float *v,
                       const float *p, void (*rows_back)(void *ctx, float *ds, const float *p),
                       void *ctx);
/* fp32 weights copied into panels of CPU_PANEL output channels, k running down each
 * (cpu_gemm_panels.c; docs/decoding.md §9.3), for products of 2 to cpu_panels_max_m() rows
 * (CPU_PANELS_MAX_M with AVX2, CPU_PANELS_MAX_M_AVX512 with AVX-512).
 * cpu_panels_cpu: 1 on a CPU they are made for (AVX2 + FMA); cpu_panels_supported:
 * 1 where the CPU backend makes them (such a CPU, and MTLAB_FP32_PANELS not off).
 * cpu_panels_make: the copy of w (rows, cols), q->f32 = w; -1 + mt_error out of memory.
 * cpu_panels_forward: qlinear_forward for the kind (out (BT, OC) = x w[row0 ..)^T + bias): the
 * panel kernel for 2 .. cpu_panels_max_m() rows, cpu_gemm on q->f32 for the others.
 * cpu_panels_product_with: the AVX2 or AVX-512 panel kernel for any M >= 1; cpu_panels_product:
 * the widest this CPU runs; naive_panels_forward: plain loops over the panels (tests). */
#define CPU_PANEL 16
#define CPU_PANELS_MAX_M 39
#define CPU_PANELS_MAX_M_AVX512 128
int cpu_panels_cpu(void);
int cpu_panels_max_m(void);
long cpu_panels_products(void); /* products the panel kernels ran (tests) */
int cpu_panels_supported(void);
int cpu_panels_make(mt_qmatrix *q, const float *w, int rows, int cols);
void cpu_panels_free(mt_qmatrix *q);
void cpu_panels_forward(float *out, const float *x, const mt_qmatrix *w, int row0,
                        const float *bias, size_t BT, int OC);
void cpu_panels_product_with(cpu_rows_isa isa, float *out, const float *x, const mt_qmatrix *w,
                             int row0, const float *bias, int M, int OC);
void cpu_panels_product(float *out, const float *x, const mt_qmatrix *w, int row0,
                        const float *bias, int M, int OC);
void naive_panels_forward(float *out, const float *x, const mt_qmatrix *w, int row0,
                          const float *bias, int M, int OC);
/* The panel kernel's tiles (cpu_panel_tiles.c): out holds rows of ldo floats, channels row0 ..
 * row0 + OC of the matrix (the tiles write no other), each the sum times alpha, plus bias[c -
 * row0] (bias NULL: none). cpu_panel_tiles: panels [p0, p1) (at panels + p K CPU_PANEL) against
 * M rows of x (K floats each), with the AVX2 or the AVX-512 tiles. */
typedef struct {
    float *out;
    int ldo, row0, OC;
    const float *bias;
    float alpha;
    /* the AVX-512 tiles only: resume, the sums go on from those out holds; partial, more of k
     * follows, so they are stored as they are (no alpha, no bias) */
    int resume, partial;
} cpu_panels_out;
void cpu_panel_tiles(cpu_rows_isa isa, int M, int p0, int p1, const float *x, int K,
                     const float *panels, const cpu_panels_out *o);
/* Columns n0..n1-1 of y (M, N) = alpha x (M, K) w (N, K)^T with the AVX-512 panel tiles on
 * panels made from w as it is read, two at a time in the thread's scratch (CPU_SCRATCH_PANELS;
 * cpu_panel_tiles.c):
 * what cpu_gemm_rows_with runs for many rows on a CPU with AVX-512 (call it only there).
 * Every sum in k order, as the panel kernel's, whichever columns a call takes. */
void cpu_panels_stream(int M, int n0, int n1, int K, float alpha, const float *x, int ldx,
                       const float *w, int ldw, float *y, int ldy);
/* C (m, n) = alpha op(A) op(B) + beta C in mtlab's own packed kernel (cpu_gemm_packed.c; AVX-512
 * tiles where the CPU has AVX-512, else AVX2 ones), the same float at any thread count on one
 * CPU: 1 when done, 0 on a CPU without AVX2 + FMA. */
int cpu_gemm_packed_supported(void);
int cpu_gemm_packed(int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a,
                    int lda, const float *b, int ldb, float beta, float *c, int ldc);
/* the same with the tiles of one instruction set (CPU_ROWS_AVX2: 6 x 16; CPU_ROWS_AVX512: 6 x 16
 * to 6 x 64), for the tests: 0 where this CPU does not run them */
int cpu_gemm_packed_with(cpu_rows_isa isa, int trans_a, int trans_b, int m, int n, int k,
                         float alpha, const float *a, int lda, const float *b, int ldb, float beta,
                         float *c, int ldc);
/* C (m, n) = x (m, k) W^T where W (n, k) is copied into panels already (cpu_panels_make; panel
 * q of NR = CPU_PANEL output channels at panels + q k CPU_PANEL): the packed kernel with none of
 * W packed, the same floats as cpu_gemm_packed(0, 1, ...) on W. 0 where that kernel does not run.
 */
int cpu_gemm_packed_panels(int m, int n, int k, const float *x, int ldx, const float *panels,
                           float *c, int ldc);
/* panel c of W (rows, cols)'s panels in that layout (step k of the panel: W[c CPU_PANEL +
 * 0..15][k], rows past `rows` 0), the packed kernel's own copy of a transposed op(B):
 * cpu_panels_make's */
void cpu_gemm_w_panel(const float *w, int rows, int cols, int c, float *panels);
/* sgemm by OpenBLAS, BLIS (cpu_blis.c) or the packed kernel, by shape, CPU and thread count
 * (cpu_gemm.c has the rule and its measurements; cpu_sgemm_pick_shape's `packed`: which of the
 * packed kernel's tiles join the rule, cpu_sgemm_packed_cpu's answer for this CPU;
 * `blis`: BLIS may take products (cpu_blis_full_rate);
 * `threads`: the OpenMP threads the product runs on); MTLAB_SGEMM=openblas|blis|mtlab sends
 * every product to one (cpu_sgemm_forced: that library; -1 unset or "auto", -2 another value,
 * which leaves the rule deciding). cpu_sgemm_with runs one product on the library named. */
typedef enum { CPU_SGEMM_OPENBLAS, CPU_SGEMM_BLIS, CPU_SGEMM_PACKED } cpu_sgemm_lib;
typedef enum { CPU_PACKED_NONE, CPU_PACKED_AVX2, CPU_PACKED_AVX512 } cpu_packed_level;
cpu_sgemm_lib cpu_sgemm_pick_shape(int packed, int blis, int threads, int trans_a, int trans_b,
                                   int m, int n, int k);
/* cpu_sgemm_pick_shape's `blis`: 1 where BLIS's kernels run this CPU's multiply-adds at their full
 * rate (cpu_gemm.c); cpu_blis_width: the bits of the vectors BLIS's kernels use (cpu_blis.c);
 * cpu_fma512_gain: 512-bit multiply-adds a second over 256-bit ones on this core, timed once
 * (cpu_fma_rate.c; 1 without AVX-512); cpu_fma512_gain_measure times it again */
int cpu_blis_full_rate(void);
int cpu_blis_width(void);
double cpu_fma512_gain(void);
double cpu_fma512_gain_measure(void);
int cpu_sgemm_packed_cpu(void);
cpu_sgemm_lib cpu_sgemm_pick(int trans_a, int trans_b, int m, int n, int k);
int cpu_sgemm_forced(void);
void cpu_sgemm_with(cpu_sgemm_lib lib, int trans_a, int trans_b, int m, int n, int k, float alpha,
                    const float *a, int lda, const float *b, int ldb, float beta, float *c,
                    int ldc);
void cpu_blis_sgemm(int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a,
                    int lda, const float *b, int ldb, float beta, float *c, int ldc);
/* BLIS's version ("0.9.0") and the kernels it picked for this CPU ("zen3", "skx", ...) */
void cpu_blis_info(const char **version, const char **kernels);
void naive_gemm(int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a, int lda,
                const float *b, int ldb, float beta, float *c, int ldc);
void naive_gemm_batched(int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a,
                        int lda, size_t stride_a, const float *b, int ldb, size_t stride_b,
                        float beta, float *c, int ldc, size_t stride_c, int batch);

/* int8 linear layers (cpu_int8.c: quantization, the packed weight layout, kernel choice, the
 * threaded product; naive_int8.c, cpu_int8_avx2.c, cpu_int8_avx512.c: the kernels).
 *
 * Weights are packed for the 4-byte dot-product instructions (docs/quantization.md §1):
 * output channels in blocks of CPU_INT8_BLOCK, and inside block b, for every 4 consecutive
 * k, one 64-byte group holding those 4 bytes of each of the block's 16 channels in turn, so
 * one vector load gives 16 channels' next 4 weights. A matrix's rows are padded with zero
 * rows to whole blocks (scale 1, sum 0). */
#define CPU_INT8_BLOCK 16
/* byte offset of weight (channel j, input k) in a packed matrix of row width ld */
static inline size_t cpu_int8_at(int ld, int j, int k)
{
    return (size_t)(j / CPU_INT8_BLOCK) * CPU_INT8_BLOCK * (size_t)ld + (size_t)(k / 4) * 64 +
           (size_t)(j % CPU_INT8_BLOCK) * 4 + (size_t)(k % 4);
}
/* One product for a kernel: channels j0 .. j0+N of w against M quantized rows, dequantized:
 *   out[m*ldo + j] = (float)(sum_{k < ld} xq[m*ld + k] wq(j0+j, k)) * (xs[m] * w->scale[j0+j])
 *                    + bias[j]        (bias NULL: no term; a multiply then an add, never fused)
 * exactly in int32 then in that fp32 order, so every kernel gives the same floats. Rows are in
 * [-127, 127] padded with zeros to ld; a kernel with x_unsigned reads them shifted to u8
 * (xq + 128, which cpu_int8.c stores for it) and takes 128 * w->sum[j] back out (§2). */
typedef struct {
    float *out; /* (M, ldo) */
    size_t ldo;
    const int8_t *xq; /* (M, ld) */
    const float *xs; /* (M) */
    int M;
    const mt_qmatrix *w; /* packed (ld = w->ld) */
    int j0, N;
    const float *bias; /* (N) or NULL */
} cpu_int8_call;
typedef void (*cpu_int8_product_fn)(const cpu_int8_call *c);
typedef struct {
    const char *name; /* "ref", "avx2", "avx512-vnni" (MTLAB_INT8_KERNEL) */
    const char *cpu_feature; /* what __builtin_cpu_supports must report ("" for none) */
    int x_unsigned; /* reads xq + 128 as u8 */
    /* cpu_int8_quantize_row's row in this kernel's form (+ 128 where x_unsigned) */
    float (*quantize_row)(int8_t *q, const float *x, int C, int ld);
    cpu_int8_product_fn product;
} cpu_int8_kernel;
void naive_int8_product(const cpu_int8_call *c);
void cpu_int8_product_avx2(const cpu_int8_call *c);
void cpu_int8_product_avx512_vnni(const cpu_int8_call *c);
float cpu_int8_quantize_row_avx512_vnni(int8_t *q, const float *x, int C, int ld);
float cpu_int8_quantize_row_avx2(int8_t *q, const float *x, int C, int ld);
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
/* the naive table's qmatrix_make: cpu_qmatrix_make's int8, no f32p (1) */
int naive_qmatrix_make(mt_qmatrix *q, mt_qkind kind, const float *w, int rows, int cols);
void naive_qlinear_forward(float *out, const float *x, const mt_qmatrix *w, int row0,
                           const float *bias, size_t BT, int OC);

/* elementwise and utilities (cpu_elementwise.c, cpu_reduce.c) */
void naive_bias_backward(float *dbias, const float *dout, size_t rows, int cols);
/* one row's max, sum_j exp(x_j - shift) and sum_j x_j (vectorised; sums end in double) */
float cpu_row_max(const float *x, int n);
double cpu_row_sum_exp(const float *x, int n, float shift);
double cpu_row_sum(const float *x, int n);
/* the first index of a row's maximum in one vectorised pass (NaN never chosen), its value in
 * *max; -1 and -inf when no element is above -inf */
int cpu_row_argmax(const float *x, int n, float *max);

/* normalisation (cpu_norm.c; naive_columns.c: the weight gradients one column at a time;
 * naive_norm.c: the rows with their sums in column order) */
void naive_layernorm_forward(float *out, float *mean, float *rstd, const float *x,
                             const float *weight, const float *bias, size_t BT, int C, float eps);
void naive_rmsnorm_forward(float *out, float *rstd, const float *x, const float *weight, size_t BT,
                           int C, float eps);
void naive_layernorm_dx(float *dx, const float *dout, const float *x, const float *weight,
                        const float *mean, const float *rstd, size_t BT, int C);
void naive_rmsnorm_dx(float *dx, const float *dout, const float *x, const float *weight,
                      const float *rstd, size_t BT, int C);
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
/* the optional scan_step_A (mtlab/backend.h): A in 16-channel blocks, AT[n][j] per block */
void cpu_scan_step_A(float *A, const mt_scan_args *a);
/* the optional mamba_step (cpu_mamba_step.c), and the conv and scan steps of channels [c0, c1)
 * of every row it shares among threads (cpu_conv.c, cpu_scan.c; c0 a multiple of 16) */
int cpu_mamba_step(const mt_mamba_step_args *m);
/* below this many multiply-adds in in_proj (B x 2D x C) the step stays on one thread: the few-row
 * kernel's own threshold for a product (cpu_gemm_rows.c); above it, the step declines where that
 * kernel does not take both products (the operations' own forks are then the faster) */
#define CPU_MAMBA_STEP_MIN_MACS ((size_t)1 << 15)
void cpu_conv1d_step_part(float *out, float *state, const float *x, const float *w,
                          const float *bias, int B, int C, int K, int c0, int c1);
void cpu_scan_step_part(float *y, float *h, const mt_scan_args *a, int c0, int c1);

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
