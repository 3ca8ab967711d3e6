/* The compute backend contract: one table of function pointers that every backend fills (the
 * CPU backend in engine/backend/cpu/, the CUDA backend in kernels/), so the model and layer code
 * above it never knows where its numbers live.
 *
 * Conventions for every operation:
 * - fp32 data, int32 token ids, uint8 masks (1 = real token, 0 = padding); every pointer an
 *   operation receives is backend memory (from be->alloc), never a host pointer, unless the
 *   argument is documented as host data.
 * - Row-major. Sizes are ints (one dimension), element counts are size_t.
 * - Forward operations overwrite their outputs. Backward operations ACCUMULATE (+=) into every
 *   gradient they produce, so residual branches and shared weights need no extra adds; the
 *   caller zeroes gradient buffers once per step. Gradient pointers documented "or NULL" may be
 *   skipped by passing NULL.
 * - Preconditions (ids in range, sizes > 0, non-overlapping buffers unless "may alias") are the
 *   caller's: the models validate host data before it reaches a backend. Operations do not fail;
 *   only alloc reports errors.
 * - Operations may run asynchronously; be->sync() waits, and download() implies it.
 *
 * The letters of shapes and size parameters, for all of engine/ and kernels/ (other files point
 * here rather than keep their own):
 *   B   batch rows: sentences, or sentences x beams while decoding
 *   T   sequence length (the decoder's, or a decoder-only model's); Tq, Tk query / key lengths
 *   S   source length (encoder positions: the keys of cross-attention)
 *   BT  B*T rows of a flattened (B, T, ...) tensor, or any number of independent rows
 *   C   channels (d_model); F hidden width of an FFN or gated MLP
 *   H   heads; Dh head width (C = H*Dh); Dk / Dv retention key / value width per head
 *   V   vocabulary (retention's config field V is its total value width, H*Dv)
 *   D   Mamba d_inner (the mixer's channels); N Mamba d_state; R Mamba dt_rank
 *   K   convolution kernel width (d_conv); decode/ uses K for the beam width, with no
 *       convolution in sight
 *   P   positions in a table; W sliding-window width; Tr ring slots of a window (W + 1)
 * A layer's input is x (inp where x is taken, as in the Mamba mixer); h is the SSM state
 * of the scan (or a head index in loops), never an input. */
#ifndef MTLAB_BACKEND_H
#define MTLAB_BACKEND_H

#include <stddef.h>
#include <stdint.h>

/* Pointwise activations; their per-element math is engine/math/activation.h. */
typedef enum {
    MT_ACT_RELU, /* max(x, 0) */
    MT_ACT_SILU, /* x * sigmoid(x) ("swish") */
    MT_ACT_SOFTPLUS, /* log(1 + e^x), linear above 20 */
    MT_ACT_GELU, /* x * Phi(x), the exact erf form (GPT-NeoX / Pythia) */
    MT_ACT_TANH, /* tanh(x) (COMET's estimator) */
} mt_act;

/* One attention problem: out = softmax(scale * q k^T + mask) v, per batch row and head.
 *   q, out : (B, Tq, C) contiguous, head h in columns [h*Dh, (h+1)*Dh)
 *   k, v   : (B, Tk, C) rows of C floats; batch b starts at b*kv_bstride (a KV cache of
 *            capacity Tmax has kv_bstride = Tmax*C; 0 means Tk*C)
 *   att    : (B, H, Tq, Tk) the softmax probabilities (what probes show and backward reads);
 *            forward accepts NULL when neither needs them (decoding without probes)
 * Visibility of key j to query i, whose position is q_pos0 + i on the key axis:
 *   key_mask[b*mask_bstride + j] != 0 (no mask when key_mask is NULL; mask_bstride 0 means Tk),
 *   and if causal: j <= q_pos0 + i, and if window > 0 as well: j >= q_pos0 + i - window
 *   (a query sees itself and the `window` keys before it).
 * A query with no visible key gets an all-zero probability row and a zero output. */
typedef struct {
    int B, H, Tq, Tk, Dh;
    size_t kv_bstride;
    int causal;
    int q_pos0; /* 0 in training; Tk - Tq when new queries follow a KV cache */
    int window; /* 0: unlimited; only meaningful with causal */
    const uint8_t *key_mask;
    size_t mask_bstride;
    float scale; /* usually 1/sqrt(Dh) */
} mt_attn_desc;

/* The Mamba v1 selective scan (docs/models.md §3.4 steps 6-10), for every (b, t, d, n):
 *   delta = softplus(dt[b,t,d] + dt_bias[d]);  A = -exp(A_log[d,n])
 *   h[t]  = exp(delta*A) * h[t-1] + delta * Bm[b,t,n] * u[b,t,d]      (h[-1] = h0, or 0)
 *   y[b,t,d] = sum_n h[t][n] * Cm[b,t,n] + Dskip[d] * u[b,t,d]
 * Shapes: u, dt, y (B, T, D); Bm, Cm (B, T, N); A_log (D, N); Dskip, dt_bias (D);
 * states (B, D, N); N <= MT_SCAN_MAX_STATE. The single-step form uses T = 1 and carries h
 * between calls. */
#define MT_SCAN_MAX_STATE 256
typedef struct {
    const float *u; /* (B, T, D) input (conv + SiLU output) */
    const float *dt; /* (B, T, D) dt_proj output, before bias and softplus */
    const float *A_log; /* (D, N) */
    const float *Bm; /* (B, T, N) */
    const float *Cm; /* (B, T, N) */
    const float *Dskip; /* (D) */
    const float *dt_bias; /* (D) */
    int B, T, D, N;
    /* (B, D, N) the state before t = 0, or NULL for zeros: a prefill in chunks continues
     * from the last chunk's state (scan_forward only; may be its h_last) */
    const float *h0;
    /* scan_step only: A = -exp(A_log) as the backend's scan_step_A wrote it, or NULL to take it
     * from A_log at every step */
    const float *A_step;
} mt_scan_args;
/* floats of scan_step_A's output: D rounded up to 16 channels, times N */
#define MT_SCAN_STEP_A_COUNT(D, N) ((size_t)((D) + 15) / 16 * 16 * (size_t)(N))

/* One decoding step of the Mamba v1 mixer, in_proj to out_proj (mt_mamba_step; docs/models.md
 * §3.6), for the optional mamba_step: C d_model, D d_inner, N d_state, R dt_rank, K d_conv.
 *   x, z = inp in_proj^T (+ b) ; conv state <- x ; xc = conv step ; u = SiLU(xc)
 *   dt_low, Bm, Cm = u x_proj^T ; dt = dt_low dt_proj^T ; y = scan step (scan, h) ;
 *   yg = y * SiLU(z) ; out = yg out_proj^T (+ b)
 * Every working row is written as the separate operations write it. */
typedef struct {
    int B, C, D, N, R, K;
    const float *inp; /* (B, C) */
    float *out; /* (B, C) */
    const float *in_proj_w, *in_proj_b; /* (2D, C), (2D) or NULL */
    const float *conv_w, *conv_b; /* (D, K), (D) or NULL */
    const float *x_proj_w; /* (R + 2N, D) */
    const float *dt_proj_w; /* (D, R) */
    const float *out_proj_w, *out_proj_b; /* (C, D), (C) or NULL */
    float *conv_state; /* (B, D, K) */
    float *h; /* (B, D, N) scan states */
    /* the working rows: x, z, xc, u, dt, y, yg (B, D); dt_low (B, R); Bm, Cm (B, N) */
    float *x, *z, *xc, *u, *dt_low, *Bm, *Cm, *dt, *y, *yg;
    const float *A_log, *A_step, *Dskip, *dt_bias; /* as in mt_scan_args */
} mt_mamba_step_args;

/* Gradients of the scan inputs; all accumulate, any may be NULL except du and ddt. */
typedef struct {
    float *du; /* (B, T, D) */
    float *ddt; /* (B, T, D) */
    float *dA_log; /* (D, N) */
    float *dBm; /* (B, T, N) */
    float *dCm; /* (B, T, N) */
    float *dDskip; /* (D) */
    float *ddt_bias; /* (D) */
} mt_scan_grads;

/* Multi-scale retention (RetNet, docs/models.md §4) for every batch row b and head h, gamma =
 * gamma[h]:
 *   w[n,m]   = gamma^(n-m) for keys m <= n with key_mask[b,m] != 0, else 0
 *   D[n,m]   = w[n,m] / sqrt(sum_m' w[n,m'])             (a row without keys is all 0)
 *   S[n,m]   = (q_n . k_m) D[n,m]
 *   r[n]     = clamp(sum_m |S[n,m]|, 1, 5e4)
 *   att[n,m] = S[n,m] / r[n] ;  out_n = sum_m att[n,m] v_m
 * q, k (B, T, H*Dk) already rotated (k already scaled); v, out (B, T, H*Dv); head h owns the
 * columns [h*Dk, (h+1)*Dk) of q, k and [h*Dv, (h+1)*Dv) of v, out. att (B, H, T, T) and
 * r (B, H, T) are saved for backward, which treats r as a constant (torchscale detaches it):
 * exact where r = 1; elsewhere the normaliser's own derivative is left out, as in RetNet.
 * The recurrent form carries, per row and head, after position n:
 *   s = sum_{m real} gamma^(n-m)   and   KV = sum_{m real} gamma^(n-m) k_m^T v_m / sqrt(s)
 * (KV (Dk, Dv)); a step with a new real token: s' = gamma s + 1,
 *   KV' = KV gamma sqrt(s / s') + k^T v / sqrt(s') ;  out = q KV'
 * which is r[n] times the parallel out_n: RetNet's per-head group norm after the retention
 * makes the two forms agree up to its epsilon. A fresh state (s = 0, KV = 0) gives s' = 1. */
#define MT_RETENTION_MAX_HEADS 64
typedef struct {
    int B, H, T, Dk, Dv;
    const float *gamma; /* (H) host: the decay of each head */
    const uint8_t *key_mask; /* (B, T) or NULL (every position real) */
} mt_retention_desc;

/* torch.optim.AdamW semantics (decoupled weight decay, bias-corrected moments). */
typedef struct {
    float lr, beta1, beta2, eps, weight_decay;
} mt_adamw_hparams;

/* A weight matrix (rows, cols) in int8, one scale per row (per output channel of a linear
 * layer; docs/quantization.md §1):
 *   scale[r] = max_k |w[r,k]| / 127 (1 for an all-zero row);  q[r,k] = round(w[r,k] / scale[r])
 * in [-127, 127], so w[r,k] ~ scale[r] * q[r,k]. Rows are ld bytes, cols rounded up to
 * MT_INT8_ALIGN, zero past cols, in the backend's layout (the CPU's packs 16 rows together for
 * its dot-product instructions); sum[r] = sum_k q[r,k] (what the u8 x s8 instructions need,
 * §2). qlinear_forward takes any row range of a quantized matrix (row0, OC). */
#define MT_INT8_ALIGN 64
/* The other kind, bf16 (a CUDA backend's; docs/cuda.md §7): the weights rounded to bf16 once,
 * (rows, ld = cols), multiplied in bf16 with fp32 accumulation, so that decoding reads half the
 * bytes and runs on the tensor cores. Any row range is itself one, at bf16 + row0 * ld. */
/* The third, f32p (the CPU's on AVX2; docs/decoding.md §9.3): the fp32 weights themselves,
 * copied once into a layout the backend's decoding kernels read faster (the CPU's: panels of 16
 * output channels, k running down each), with a pointer to the fp32 matrix for the products the
 * copy does not serve. The same precision: a model keeps it under mt_precision fp32. */
typedef enum { MT_QMATRIX_INT8, MT_QMATRIX_BF16, MT_QMATRIX_F32P } mt_qkind;
typedef struct {
    mt_qkind kind;
    int rows, cols, ld;
    int8_t *q; /* (rows, ld) backend memory (int8) */
    float *scale; /* (rows) (int8) */
    int32_t *sum; /* (rows) (int8) */
    uint16_t *bf16; /* (rows, ld) backend memory (bf16: the upper 16 bits of fp32, rounded) */
    float *panels; /* backend memory (f32p), in the backend's layout */
    const float *f32; /* (rows, cols) the fp32 matrix the copy was made from (f32p) */
} mt_qmatrix;

/* One product's output columns split into consecutive parts, each its own contiguous buffer
 * (out[p] (rows, cols[p])): mt_linear_forward_parts, qlinear_forward_parts */
#define MT_OUT_PARTS_MAX 4
typedef struct {
    int n;
    float *out[MT_OUT_PARTS_MAX];
    int cols[MT_OUT_PARTS_MAX];
} mt_out_parts;

/* A model's int8 weights, found by the address of the fp32 matrices they replace
 * (engine/layers/qweights.c). */
struct mt_qweights;

/* Dropout at one site of one training step. Each row of a batch draws its mask from its index
 * in the step's global batch (row0 + b), so a row gets the same mask whichever micro-batch or
 * rank holds it; a left-padded batch (align_end) keys each row's elements from its end, so
 * padding does not move them. p = 0 (or a NULL pointer) is the identity, as at evaluation. */
typedef struct {
    float p;
    uint64_t seed, step; /* step: the optimiser step, so every step draws a new mask */
    uint32_t site; /* distinct per dropout site within a step (layer index * 8 + k ...) */
    uint32_t row0; /* index of the batch's first row in the step's global batch */
    int align_end; /* 1: rows are left padded; keys count back from each row's end */
} mt_dropout;

typedef struct mt_backend {
    const char *name; /* "cpu", "cpu-naive", "cuda:0" */
    int host_memory; /* 1 when backend pointers are ordinary host pointers */

    /* ---- memory (bytes) */
    void *(*alloc)(size_t bytes); /* zero-filled; NULL + mt_error on failure */
    void (*free)(void *p); /* NULL is a no-op */
    void (*upload)(void *dst, const void *host_src, size_t bytes);
    void (*download)(void *host_dst, const void *src, size_t bytes);
    void (*copy)(void *dst, const void *src, size_t bytes);
    void (*memzero)(void *p, size_t bytes);
    void (*sync)(void);

    /* ---- matrix products (row-major, as cblas_sgemm with CblasRowMajor)
     * c (m, n) = alpha * op(a) op(b) + beta * c, op(a) (m, k), op(b) (k, n); op = transpose
     * when trans_* is 1. beta 1 accumulates. lda/ldb/ldc are the row strides of the stored
     * matrices, so column blocks of wider matrices can be used directly. */
    void (*gemm)(int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a,
                 int lda, const float *b, int ldb, float beta, float *c, int ldc);
    /* The same for batch independent problems at element strides stride_a/b/c. */
    void (*gemm_batched)(int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a,
                         int lda, size_t stride_a, const float *b, int ldb, size_t stride_b,
                         float beta, float *c, int ldc, size_t stride_c, int batch);

    /* ---- elementwise and small utilities (n elements) */
    void (*fill)(float *x, size_t n, float value);
    void (*scale)(float *x, size_t n, float s); /* x *= s */
    void (*axpy)(float *y, const float *x, size_t n, float a); /* y += a * x */
    void (*add)(float *out, const float *a, const float *b, size_t n); /* may alias */
    void (*mul)(float *out, const float *a, const float *b, size_t n); /* may alias */
    /* da += dout * b; db += dout * a (either may be NULL) */
    void (*mul_backward)(float *da, float *db, const float *dout, const float *a, const float *b,
                         size_t n);
    void (*act_forward)(mt_act act, float *out, const float *x, size_t n); /* may alias */
    /* dx = dout * act'(x): written, not added to (its callers' buffers have no other
     * contributor), as gate_backward's are */
    void (*act_backward)(mt_act act, float *dx, const float *dout, const float *x, size_t n);
    /* out = value * SiLU(gate): Mamba's y * SiLU(z), SwiGLU's up * SiLU(gate) */
    void (*gate_forward)(float *out, const float *value, const float *gate, size_t n);
    /* dvalue = dout * SiLU(gate); dgate = dout * value * SiLU'(gate): written, not added to
     * (each caller's buffers have no other contributor, so none needs zeroing first); either
     * may be NULL */
    void (*gate_backward)(float *dvalue, float *dgate, const float *dout, const float *value,
                          const float *gate, size_t n);
    /* x (rows, cols): rows whose mask is 0 become 0 (forward and backward alike) */
    void (*mask_rows)(float *x, const uint8_t *mask, size_t rows, int cols);
    /* out (rows, cols) += bias (cols) broadcast over rows; dbias += column sums of dout */
    void (*bias_add)(float *out, const float *bias, size_t rows, int cols);
    void (*bias_backward)(float *dbias, const float *dout, size_t rows, int cols);
    /* dst[r*dst_ld + c] = src[r*src_ld + c] for r < rows, c < cols */
    void (*copy2d)(float *dst, int dst_ld, const float *src, int src_ld, size_t rows, int cols);
    /* out[i*cols + c] = src[idx[i]*src_ld + c] for i < n_idx, c < cols: rows picked from src
     * (src_ld floats apart; their first cols taken) into packed rows of out (beam search's
     * reorder of decoding caches, which takes only the filled part of a KV cache's rows);
     * idx is backend memory, out must not alias src */
    void (*index_select)(float *out, const float *src, size_t src_ld, const int32_t *idx, int n_idx,
                         size_t cols);
    /* host results; these wait for the device */
    double (*sum)(const float *x, size_t n);
    double (*sum_squares)(const float *x, size_t n);
    /* out[r] = first index of the maximum of row r of x (rows, cols) */
    void (*argmax_rows)(int32_t *out, const float *x, size_t rows, int cols);
    /* row-wise softmax / log-softmax over the last dimension; out may alias x */
    void (*softmax)(float *out, const float *x, size_t rows, int cols);
    void (*log_softmax)(float *out, const float *x, size_t rows, int cols);

    /* ---- normalisation over the last dimension of (BT, C)
     * LayerNorm: out = (x - mean) * rstd * weight + bias, rstd = 1/sqrt(var + eps) (biased var)
     * RMSNorm:   out = x * rstd * weight, rstd = 1/sqrt(mean(x^2) + eps); weight NULL = 1
     * mean, rstd (BT) are saved for backward. */
    void (*layernorm_forward)(float *out, float *mean, float *rstd, const float *x,
                              const float *weight, const float *bias, size_t BT, int C, float eps);
    void (*layernorm_backward)(float *dx, float *dweight, float *dbias, const float *dout,
                               const float *x, const float *weight, const float *mean,
                               const float *rstd, size_t BT, int C);
    void (*rmsnorm_forward)(float *out, float *rstd, const float *x, const float *weight, size_t BT,
                            int C, float eps);
    void (*rmsnorm_backward)(float *dx, float *dweight, const float *dout, const float *x,
                             const float *weight, const float *rstd, size_t BT, int C);

    /* ---- embeddings and positions
     * out (BT, C) = scale * table[ids[i]], table (V, C); dtable[ids[i]] += scale * dout[i] */
    void (*embedding_forward)(float *out, const int32_t *ids, const float *table, size_t BT, int C,
                              float scale);
    void (*embedding_backward)(float *dtable, const float *dout, const int32_t *ids, size_t BT,
                               int C, float scale);
    /* table (P, C), Marian layout: angle(p, j) = p / 10000^(2*floor(j/2)/C);
     * columns [0, C/2) = sin of the even-j angles, [C/2, C) = cos of the odd-j angles */
    void (*sinusoid_fill)(float *table, int P, int C);
    /* out (B, T, C) += table[pos0 + t] ; dtable[pos0 + t] += sum_b dout[b, t] */
    void (*positions_add)(float *out, const float *table, int B, int T, int C, int pos0);
    void (*positions_backward)(float *dtable, const float *dout, int B, int T, int C, int pos0);
    /* Rotary embedding applied in place to x (B, T, H*Dh) on the first rot_dim dims of each
     * head (rot_dim even, <= Dh; GPT-NeoX rotates a fraction). Position of (b, t) is
     * pos[b*T + t] when pos (B, T) is given, else pos0 + t. inv_freq (rot_dim/2) holds the
     * angle per position of each pair.
     *   rotate-half (LLaMA, interleaved 0): pair (i, i + rot_dim/2), angle pos * inv_freq[i]
     *   interleaved (RetNet, 1):           pair (2i, 2i + 1),       angle pos * inv_freq[i]
     *   (x_a, x_b) <- (x_a cos - x_b sin, x_b cos + x_a sin)
     * rope_backward applies the inverse rotation to a gradient in place (the rotation is
     * orthogonal), so it overwrites rather than accumulates. */
    void (*rope_forward)(float *x, const int32_t *pos, int B, int T, int H, int Dh, int rot_dim,
                         int pos0, const float *inv_freq, int interleaved);
    void (*rope_backward)(float *dx, const int32_t *pos, int B, int T, int H, int Dh, int rot_dim,
                          int pos0, const float *inv_freq, int interleaved);

    /* ---- attention (see mt_attn_desc); datt is caller scratch of att's size */
    void (*attention_forward)(float *out, float *att, const float *q, const float *k,
                              const float *v, const mt_attn_desc *d);
    void (*attention_backward)(float *dq, float *dk, float *dv, float *datt, const float *dout,
                               const float *q, const float *k, const float *v, const float *att,
                               const mt_attn_desc *d);

    /* ---- causal depthwise conv1d, channels last
     * out[b,t,c] = bias[c] + sum_{k<K} w[c,k] * x[b, t-K+1+k, c]   (x before t = 0 is 0)
     * x, out (B, T, C); w (C, K) (HF conv1d.weight (C, 1, K)), K <= 64; bias (C) or NULL.
     * state (B, C, K): the last K inputs, oldest first. conv1d_step shifts x (B, C) into the
     * state and writes out (B, C); conv1d_state_fill sets the state after a prefill from the
     * last K rows of x (zeros in front when T < K). */
    void (*conv1d_forward)(float *out, const float *x, const float *w, const float *bias, int B,
                           int T, int C, int K);
    void (*conv1d_backward)(float *dx, float *dw, float *dbias, const float *dout, const float *x,
                            const float *w, int B, int T, int C, int K);
    void (*conv1d_step)(float *out, float *state, const float *x, const float *w, const float *bias,
                        int B, int C, int K);
    /* optional (NULL: conv1d_step, then act_forward): conv1d_step and u (B, C) = SiLU(out), one
     * pass, the same floats as the two operations (a Mamba decoding step's conv) */
    void (*conv1d_step_silu)(float *out, float *u, float *state, const float *x, const float *w,
                             const float *bias, int B, int C, int K);
    void (*conv1d_state_fill)(float *state, const float *x, int B, int T, int C, int K);

    /* ---- selective scan (see mt_scan_args). h_last (B, D, N) or NULL receives h[T-1].
     * scan_step: T = 1, h (B, D, N) is read and updated in place. */
    void (*scan_forward)(float *y, float *h_last, const mt_scan_args *a);
    void (*scan_backward)(const mt_scan_grads *g, const float *dy, const mt_scan_args *a);
    void (*scan_step)(float *y, float *h, const mt_scan_args *a);
    /* optional (NULL: scan_step takes A from A_log): A (MT_SCAN_STEP_A_COUNT(D, N) floats)
     * receives -exp(A_log) laid out for scan_step's a->A_step, the same floats it computes */
    void (*scan_step_A)(float *A, const mt_scan_args *a);
    /* optional (NULL: scan_step, then gate_forward): scan_step and yg (B, D) = y * SiLU(z), one
     * pass, the same floats as the two operations (a Mamba decoding step's scan and gate) */
    void (*scan_step_gate)(float *y, float *yg, float *h, const float *z, const mt_scan_args *a);
    /* optional (NULL: mt_mamba_step runs the operations one by one): the whole step in one pass
     * over the channels, the same floats as the operations; 0 when it does not take the step
     * (the caller then runs the operations) */
    int (*mamba_step)(const mt_mamba_step_args *m);

    /* ---- multi-scale retention (see mt_retention_desc); datt is caller scratch of att's
     * size. retention_state_fill: the recurrent state kv (B, H, Dk, Dv), s (B, H) after the
     * T positions of k, v (pads skipped, decay counted by position). retention_step: one
     * position, q, k (B, H*Dk), v, out (B, H*Dv), kv and s read and updated in place; a row
     * whose key_mask[b*T] is 0 is a left pad and keeps its (zero) state, out 0 (T is only the
     * mask's row stride here, so a step can read one column of a prefill chunk's mask). */
    void (*retention_forward)(float *out, float *att, float *r, const float *q, const float *k,
                              const float *v, const mt_retention_desc *d);
    void (*retention_backward)(float *dq, float *dk, float *dv, float *datt, const float *dout,
                               const float *q, const float *k, const float *v, const float *att,
                               const float *r, const mt_retention_desc *d);
    void (*retention_state_fill)(float *kv, float *s, const float *k, const float *v,
                                 const mt_retention_desc *d);
    void (*retention_step)(float *out, float *kv, float *s, const float *q, const float *k,
                           const float *v, const mt_retention_desc *d);

    /* ---- loss: cross-entropy fused with softmax, rows (BT, V)
     * q = (1 - smoothing) * onehot(target) + smoothing / V   (torch label_smoothing)
     * losses[i] = -sum_j q_j log p_j (0 where target == ignore_index); lse[i] = logsumexp row
     * backward: dlogits[i] += scale * (p - q) for non-ignored rows (scale usually 1/count) */
    void (*cross_entropy_forward)(float *losses, float *lse, const float *logits,
                                  const int32_t *targets, size_t BT, int V, int ignore_index,
                                  float smoothing);
    void (*cross_entropy_backward)(float *dlogits, const float *logits, const float *lse,
                                   const int32_t *targets, size_t BT, int V, int ignore_index,
                                   float smoothing, float scale);
    /* the two fused for training, in place, one row at a time while it is in cache: losses as
     * forward computes them, then logits (BT, V) become scale * (p - q), all 0 on ignored rows
     * (what backward would add to a zeroed dlogits, with lse rounded to float the same way) */
    void (*cross_entropy_fused)(float *losses, float *logits, const int32_t *targets, size_t BT,
                                int V, int ignore_index, float smoothing, float scale);

    /* ---- dropout with a counter-based mask over `rows` rows of row_len floats (a (B, T, C)
     * batch: B rows of T C), row b keyed as row d->row0 + b of the step's global batch:
     * element j of row b is kept when
     *   mt_dropout_uniform(seed, step, site, row0 + b, mt_dropout_key(j, row_len, align_end)) >= p
     * (engine/math/philox.h), so the mask depends only on (seed, step, site, row, key) and
     * backward recomputes it instead of storing it. out = keep ? x / (1 - p) : 0 (may alias);
     * dx += keep ? dout / (1 - p) : 0. row_len < 2^32. */
    void (*dropout_forward)(float *out, const float *x, size_t rows, size_t row_len,
                            const mt_dropout *d);
    void (*dropout_backward)(float *dx, const float *dout, size_t rows, size_t row_len,
                             const mt_dropout *d);

    /* ---- optimiser: one AdamW step (step counts from 1) over a contiguous block of n
     * parameters with their gradients and moments; decay_mask (n) or NULL (all decay):
     *   p *= 1 - lr * wd           (only where decay_mask[i] != 0)
     *   m = b1 m + (1 - b1) g ;  v = b2 v + (1 - b2) g^2
     *   p -= lr * (m / (1 - b1^step)) / (sqrt(v / (1 - b2^step)) + eps) */
    void (*adamw_step)(float *params, const float *grads, float *m, float *v,
                       const uint8_t *decay_mask, size_t n, const mt_adamw_hparams *h, int step);

    /* ---- int8 / bf16 linear layers (docs/quantization.md); all NULL on a backend without
     * either. qmatrix_make makes the `kind` copy of w (rows, cols), backend memory, in q (its
     * buffers are freed by qmatrix_free); -1 + mt_error when out of memory or when the
     * backend has no kernels of that kind (the CPU's are int8, CUDA's bf16); for f32p, which
     * only makes fp32 faster, 1 (no error, nothing made) where the backend or this CPU has no
     * use for it (CUDA, the naive CPU table, CPUs with AVX-512 or without AVX2).
     * qlinear_forward: out (BT, OC) = x w[row0 .. row0+OC)^T + bias in w's kind: int8 with
     * x (BT, w->cols) quantized per row on the fly (§1) and int32 accumulation; bf16 with x
     * rounded to bf16 and fp32 accumulation; fp32 out; bias (OC) or NULL. */
    int (*qmatrix_make)(mt_qmatrix *q, mt_qkind kind, const float *w, int rows, int cols);
    void (*qmatrix_free)(mt_qmatrix *q);
    void (*qlinear_forward)(float *out, const float *x, const mt_qmatrix *w, int row0,
                            const float *bias, size_t BT, int OC);
    /* optional (NULL: one qlinear_forward a part): qlinear_forward of the rows row0 .. row0 +
     * the parts' columns as one product whose output columns land part by part in their own
     * buffers (parts->out[p] (BT, parts->cols[p]), contiguous), bias (the whole range) or NULL;
     * the same floats as qlinear_forward of the whole range into one buffer. A Mamba decoding
     * step's in_proj (x, z) and x_proj (dt, B, C) each become one launch. */
    void (*qlinear_forward_parts)(const mt_out_parts *parts, const float *x, const mt_qmatrix *w,
                                  int row0, const float *bias, size_t BT);

    /* ---- recorded steps (all NULL on a backend without them, as the CPU's): the operations
     * queued between graph_begin and graph_end are recorded instead of run; graph_end returns
     * a handle that graph_run replays as often as wanted, on the same buffers with the same
     * sizes (the arguments are frozen, the data they point to is read afresh). graph_begin
     * returns -1 when it will not record (nothing to undo); graph_end returns NULL when the
     * recording failed, and then NONE of the recorded operations ran: the caller runs them
     * itself. While recording, no alloc, free, upload, download, sync or host result (sum,
     * sum_squares) may be called. Used for decoding steps whose arguments do not change from
     * one step to the next (engine/models/decode_state.c); the fenced test backend records
     * them on the CPU (tests/unit/fenced_backend.c). */
    int (*graph_begin)(void);
    void *(*graph_end)(void);
    void (*graph_run)(void *graph);
    void (*graph_free)(void *graph);

    /* The int8 or bf16 weights that linear layers (mt_linear_forward) use in place of the
     * fp32 ones they are passed; NULL everywhere but in the copy of its backend an int8 or
     * bf16 model runs on (mt_model_set_precision). */
    const struct mt_qweights *qweights;
} mt_backend;

/* The CPU backend: OpenBLAS sgemm and OpenMP loops. */
const mt_backend *mt_backend_cpu(void);
/* The naive reference backend: plain loops in the order the formulas are written (triple-loop
 * matmul, O(T*D*N) scan with every state kept, explicit attention). Slow; tests compare every
 * fast operation with it. Shares memory functions with mt_backend_cpu. */
const mt_backend *mt_backend_cpu_naive(void);

#endif
