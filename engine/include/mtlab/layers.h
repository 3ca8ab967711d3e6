/* Layers of the seven models, each a forward and a backward function over backend memory,
 * written only in terms of mt_backend operations (mtlab/backend.h), so they run unchanged on
 * the CPU and CUDA backends.
 *
 * Conventions (llm.c style):
 * - Arguments: backend, outputs, what backward needs (acts), inputs, parameters, and the
 *   sizes: loose for the simple layers, else in one descriptor per layer kind (mt_attn_call,
 *   mt_mamba_call, mt_retention_call, mt_norm_call, mt_loss_call: config, shape, masks,
 *   dropout, decoding state), so a new option is one field, not a change to every signature.
 *   What a backward accumulates comes in one struct (mt_weight_grads, mt_attn_grads, ...; as
 *   the backend's mt_scan_grads): the input gradient, the parameter gradients, the scratch.
 * - Backward mirrors forward and ACCUMULATES (+=) into parameter gradients and into the input
 *   gradient; an input gradient pointer may be NULL when nobody needs it (e.g. token ids).
 * - Parameters, gradients, optimiser state and activations are each ONE allocation per model.
 *   For every layer with weights:
 *     mt_X_tensors(cfg, specs)   the tensor table (HF local names, shapes, weight decay), in
 *                                memory order; returns the number of tensors
 *     mt_X_params_count(cfg)     floats of one layer (= the table's total)
 *     mt_X_params_point(p, base, cfg)  points p's fields at consecutive slices of base in the
 *                                table's order; returns base + mt_X_params_count(cfg)
 *   The gradient block uses the same point function on a second allocation. Activations work
 *   the same way with mt_X_acts_count / mt_X_acts_point; the activation-gradient scratch of
 *   backward ("da") must be pointed by the same mt_X_acts_point (backward zeroes it before
 *   accumulating).
 *
 * Letters (B, T, S, BT = B*T rows, C, F, H, Dh, V, D, N, K, R, W, Tr): the legend at the top
 * of mtlab/backend.h, the one for all of engine/ and kernels/. */
#ifndef MTLAB_LAYERS_H
#define MTLAB_LAYERS_H

#include <stddef.h>
#include <stdint.h>

#include "mtlab/backend.h"
#include "mtlab/rng.h"

/* ---------------------------------------------------------------- tensor tables */
#define MT_TENSOR_NAME_MAX 48
typedef struct {
    char name[MT_TENSOR_NAME_MAX]; /* HF local name, e.g. "in_proj.weight" */
    int ndim;
    int shape[3]; /* as HF stores it (conv1d.weight is (Di, 1, K)) */
    int decay; /* 1: AdamW weight decay applies */
} mt_tensor_spec;

size_t mt_tensor_numel(const mt_tensor_spec *t);
/* Sum of numels of a table. */
size_t mt_tensors_numel(const mt_tensor_spec *specs, int n);
/* mask[i] = specs' decay flag for every float of the table laid out consecutively (host). */
void mt_tensors_decay_mask(uint8_t *mask, const mt_tensor_spec *specs, int n);

/* ---------------------------------------------------------------- linear
 * out (BT, OC) = x (BT, C) weight^T + bias; weight (OC, C) (PyTorch layout), bias (OC) or NULL.
 * On a backend with int8 or bf16 weights (be->qweights) a weight found there runs in that
 * precision (be->qlinear_forward); training (backward) is always fp32. */
void mt_linear_forward(const mt_backend *be, float *out, const float *x, const float *weight,
                       const float *bias, size_t BT, int C, int OC);
/* mt_linear_forward of weight's first sum(parts->cols) rows with each part's columns in its
 * own buffer: one product where the backend has qlinear_forward_parts for the weight's copy,
 * else one mt_linear_forward a part (rows and bias from the part's first column on) */
void mt_linear_forward_parts(const mt_backend *be, const mt_out_parts *parts, const float *x,
                             const float *weight, const float *bias, size_t BT, int C);
/* What the backward of a layer with one weight (linear, tied logits, norms) accumulates: dx,
 * dweight, dbias; any may be NULL when nobody needs it (no bias, a frozen weight). */
typedef struct {
    float *dx, *dweight, *dbias;
} mt_weight_grads;
void mt_linear_backward(const mt_backend *be, const mt_weight_grads *grads, const float *dout,
                        const float *x, const float *weight, size_t BT, int C, int OC);
/* The same with dx written rather than added to, for a dx this backward is the only contributor
 * to (an activation's gradient inside a block): it need not be zeroed first, and the product
 * does not read it (dweight and dbias still accumulate). */
void mt_linear_backward_first(const mt_backend *be, const mt_weight_grads *grads, const float *dout,
                              const float *x, const float *weight, size_t BT, int C, int OC);

/* ---------------------------------------------------------------- int8 / bf16 weights
 * The int8 (or bf16) copies of a model's linear weights (docs/quantization.md §3), each registered
 * by the address of its fp32 matrix (rows, cols) in the parameter block. A layer may pass a pointer
 * to a row range of a registered matrix (Mamba splits in_proj and x_proj by rows): mt_qweights_find
 * returns the matrix and the first row. */
typedef struct mt_qweights mt_qweights;
mt_qweights *mt_qweights_new(const mt_backend *be);
/* The `kind` copy of w (rows, cols), backend memory, by be->qmatrix_make; -1 + mt_error on
 * failure; 1 (nothing added, no error) where the backend declines an f32p copy. */
int mt_qweights_add(mt_qweights *qw, mt_qkind kind, const float *w, int rows, int cols);
/* The matrix holding the rows that start at w with cols columns (*row0 its first row), or
 * NULL when w is not inside a registered matrix of that width. */
const mt_qmatrix *mt_qweights_find(const mt_qweights *qw, const float *w, int cols, int *row0);
/* Bytes of the copies held: int8 weights with their scales and row sums, bf16, f32p panels. */
size_t mt_qweights_bytes(const mt_qweights *qw);
int mt_qweights_count(const mt_qweights *qw);
void mt_qweights_free(mt_qweights *qw);

/* ---------------------------------------------------------------- embedding
 * out (BT, C) = scale * table[ids]; table (V, C); scale is sqrt(C) for Marian/RetNet, else 1 */
void mt_embedding_forward(const mt_backend *be, float *out, const int32_t *ids, const float *table,
                          size_t BT, int C, float scale);
void mt_embedding_backward(const mt_backend *be, float *dtable, const float *dout,
                           const int32_t *ids, size_t BT, int C, float scale);
/* Tied output projection: logits (BT, V) = x (BT, C) table^T (+ bias (V) or NULL, Marian's
 * final_logits_bias). */
void mt_tied_logits_forward(const mt_backend *be, float *logits, const float *x, const float *table,
                            const float *bias, size_t BT, int C, int V);
/* grads->dweight is the table's gradient */
void mt_tied_logits_backward(const mt_backend *be, const mt_weight_grads *grads,
                             const float *dlogits, const float *x, const float *table, size_t BT,
                             int C, int V);

/* ---------------------------------------------------------------- normalisation, dropout
 * mean, rstd (BT) are saved for backward; RMSNorm weight NULL = no affine (RetNet group norm) */
typedef struct {
    size_t BT;
    int C;
    float eps; /* forward only */
} mt_norm_call;
void mt_layernorm_forward(const mt_backend *be, float *out, float *mean, float *rstd,
                          const float *x, const float *weight, const float *bias,
                          const mt_norm_call *call);
void mt_layernorm_backward(const mt_backend *be, const mt_weight_grads *grads, const float *dout,
                           const float *x, const float *weight, const float *mean,
                           const float *rstd, const mt_norm_call *call);
void mt_rmsnorm_forward(const mt_backend *be, float *out, float *rstd, const float *x,
                        const float *weight, const mt_norm_call *call);
/* grads->dbias is unused (RMSNorm has no bias) */
void mt_rmsnorm_backward(const mt_backend *be, const mt_weight_grads *grads, const float *dout,
                         const float *x, const float *weight, const float *rstd,
                         const mt_norm_call *call);
/* out (rows, row_len) = dropout(x), row b keyed as row drop->row0 + b of the step (mt_dropout,
 * backend.h); out may alias x. backward: dx += dropout'(dout). */
void mt_dropout_forward(const mt_backend *be, float *out, const float *x, size_t rows,
                        size_t row_len, const mt_dropout *drop);
void mt_dropout_backward(const mt_backend *be, float *dx, const float *dout, size_t rows,
                         size_t row_len, const mt_dropout *drop);

/* ---------------------------------------------------------------- positions
 * Marian sinusoids: table (P, C) filled by the backend (mtlab/backend.h sinusoid_fill);
 * out (B, T, C) += table[pos0 + t]. Fixed, so there is no backward. */
void mt_sinusoid_table(const mt_backend *be, float *table, int P, int C);
void mt_positions_add(const mt_backend *be, float *out, const float *table, int B, int T, int C,
                      int pos0);
/* Rotary angles per position, host array inv_freq (rot_dim/2):
 *   MT_ROPE_LLAMA:  base^(-2i/rot_dim)                 (HF LLaMA / GPT-NeoX, base 10000)
 *   MT_ROPE_RETNET: base^(-i/(rot_dim/2 - 1))         (torchscale linspace(0, 1) exponent) */
typedef enum { MT_ROPE_LLAMA, MT_ROPE_RETNET } mt_rope_freqs;
void mt_rope_inv_freq(float *inv_freq, int rot_dim, float base, mt_rope_freqs kind);

/* ---------------------------------------------------------------- feed-forward blocks
 * FFN:       out = fc2(act(fc1 x))                        (Marian; act ReLU or SiLU)
 * gated MLP: out = down(value(x) * SiLU(gate(x)))          (LLaMA up/gate/down, RetNet GLU
 *            fc1/gate/fc2, mamba_ssm GatedMlp fc1 = [value; gate] rows: value_w and gate_w
 *            are adjacent in memory, so fc1 (2F, C) is value_w read as one block) */
typedef struct {
    int C, F;
    mt_act act;
    int bias; /* 1: fc1/fc2 have biases */
    const char *in_name, *out_name; /* tensor names of fc1 and fc2; NULL = "fc1", "fc2"
                                     * (GPT-NeoX: dense_h_to_4h, dense_4h_to_h) */
} mt_ffn_config;
typedef struct {
    float *fc1_w; /* (F, C) */
    float *fc1_b; /* (F) or NULL */
    float *fc2_w; /* (C, F) */
    float *fc2_b; /* (C) or NULL */
} mt_ffn_params;
typedef struct {
    float *pre; /* (BT, F) fc1 output */
    float *act; /* (BT, F) act(pre) */
} mt_ffn_acts;
int mt_ffn_tensors(const mt_ffn_config *cfg, mt_tensor_spec *specs); /* 2 or 4 tensors */
size_t mt_ffn_params_count(const mt_ffn_config *cfg);
float *mt_ffn_params_point(mt_ffn_params *p, float *base, const mt_ffn_config *cfg);
size_t mt_ffn_acts_count(const mt_ffn_config *cfg, size_t BT);
float *mt_ffn_acts_point(mt_ffn_acts *a, float *base, const mt_ffn_config *cfg, size_t BT);
/* x, out (BT, C) */
void mt_ffn_forward(const mt_backend *be, float *out, mt_ffn_acts *a, const float *x,
                    const mt_ffn_params *p, const mt_ffn_config *cfg, size_t BT);
/* What backward accumulates: dx (BT, C), the parameter gradients g; da is scratch with the
 * layout of the acts. */
typedef struct {
    float *dx;
    mt_ffn_params *g;
    mt_ffn_acts *da;
} mt_ffn_grads;
void mt_ffn_backward(const mt_backend *be, const mt_ffn_grads *grads, const float *dout,
                     const mt_ffn_acts *a, const float *x, const mt_ffn_params *p,
                     const mt_ffn_config *cfg, size_t BT);

typedef enum {
    MT_GATED_LLAMA, /* tensors up_proj, gate_proj, down_proj (value = up) */
    MT_GATED_RETNET, /* tensors fc1, gate, fc2 (value = gate, SiLU on fc1) */
    MT_GATED_FC1, /* tensors fc1 (2F, C) = [value; gate], fc2 (mamba_ssm GatedMlp) */
} mt_gated_layout;
typedef struct {
    int C, F;
    int bias;
    mt_gated_layout layout;
} mt_gated_mlp_config;
typedef struct {
    float *value_w; /* (F, C) */
    float *value_b; /* (F) or NULL */
    float *gate_w; /* (F, C) */
    float *gate_b; /* (F) or NULL */
    float *down_w; /* (C, F) */
    float *down_b; /* (C) or NULL */
} mt_gated_mlp_params;
typedef struct {
    float *value; /* (BT, F) */
    float *gate; /* (BT, F) pre-SiLU */
    float *hidden; /* (BT, F) value * SiLU(gate) */
} mt_gated_mlp_acts;
int mt_gated_mlp_tensors(const mt_gated_mlp_config *cfg, mt_tensor_spec *specs);
size_t mt_gated_mlp_params_count(const mt_gated_mlp_config *cfg);
float *mt_gated_mlp_params_point(mt_gated_mlp_params *p, float *base,
                                 const mt_gated_mlp_config *cfg);
size_t mt_gated_mlp_acts_count(const mt_gated_mlp_config *cfg, size_t BT);
float *mt_gated_mlp_acts_point(mt_gated_mlp_acts *a, float *base, const mt_gated_mlp_config *cfg,
                               size_t BT);
void mt_gated_mlp_forward(const mt_backend *be, float *out, mt_gated_mlp_acts *a, const float *x,
                          const mt_gated_mlp_params *p, const mt_gated_mlp_config *cfg, size_t BT);
/* as mt_ffn_grads */
typedef struct {
    float *dx;
    mt_gated_mlp_params *g;
    mt_gated_mlp_acts *da;
} mt_gated_mlp_grads;
void mt_gated_mlp_backward(const mt_backend *be, const mt_gated_mlp_grads *grads, const float *dout,
                           const mt_gated_mlp_acts *a, const float *x, const mt_gated_mlp_params *p,
                           const mt_gated_mlp_config *cfg, size_t BT);

/* ---------------------------------------------------------------- multi-head attention
 * Self attention: xkv = xq, Tk = Tq. Cross attention: xkv is the encoder output (B, Tk, kv_C)
 * with key_mask its padding mask (B, Tk). Projections q/k/v/out, optional biases and rotary on
 * q and k. The padding mask hides keys; queries at padded positions still produce an output
 * (over their visible keys) that callers ignore. */
typedef struct {
    int C, H; /* d_model, heads; Dh = C / H */
    int kv_C; /* width of xkv; 0 means C */
    int bias; /* 1: q/k/v/out projections have biases (Marian) */
    int causal;
    int window; /* sliding window (Mamba-Local: 64); 0 = full; needs causal */
    int rope_dim; /* rotated dims per head; 0 = no rotary */
    int rope_interleaved; /* 1: RetNet pairs (2i, 2i+1); 0: rotate-half */
    const float *rope_inv_freq; /* (rope_dim/2) backend memory, from mt_rope_inv_freq */
    const char *out_name; /* tensor name of the output projection; NULL = "out_proj" */
    const char *qkv_name; /* NULL: q_proj, k_proj, v_proj; else one fused projection of this
                           * name (self-attention), (3C, C) with GPT-NeoX's layout per head:
                           * rows [q_h; k_h; v_h] of Dh each for head h, bias (3C) alike */
} mt_attn_config;
typedef struct {
    float *q_w, *q_b; /* (C, C), (C); fused (qkv_name): (3C, C), (3C), k and v NULL */
    float *k_w, *k_b; /* (C, kv_C), (C) */
    float *v_w, *v_b; /* (C, kv_C), (C) */
    float *o_w, *o_b; /* (C, C), (C); biases NULL when cfg.bias = 0 */
} mt_attn_params;
typedef struct {
    float *q; /* (B, Tq, C) after rotary */
    float *k; /* (B, Tk, C) after rotary */
    float *v; /* (B, Tk, C) */
    float *att; /* (B, H, Tq, Tk) softmax probabilities (the probe's attention map) */
    float *ctx; /* (B, Tq, C) attention output before the out projection */
    float *qkv; /* (B, Tq, 3C) the fused projection before the split (qkv_name), or NULL */
} mt_attn_acts;
int mt_attention_tensors(const mt_attn_config *cfg, mt_tensor_spec *specs); /* 4 or 8 */
size_t mt_attention_params_count(const mt_attn_config *cfg);
float *mt_attention_params_point(mt_attn_params *p, float *base, const mt_attn_config *cfg);
size_t mt_attention_acts_count(const mt_attn_config *cfg, int B, int Tq, int Tk);
float *mt_attention_acts_point(mt_attn_acts *a, float *base, const mt_attn_config *cfg, int B,
                               int Tq, int Tk);
/* One call of an attention layer: its config, the shape and the masks (as the backend's
 * mt_attn_desc carries a kernel's); the arrays are the functions' own arguments. */
typedef struct {
    const mt_attn_config *cfg;
    int B, Tq, Tk; /* Tk: keys of forward/backward; a decode reads it from the cache */
    /* forward/backward: (B, Tk) the keys' padding; decode: (B, Tmax) over cached and new
     * positions; cross decode: the memory's (B, S); ring decode: (B, key_ld) positional; NULL
     * when every key is real */
    const uint8_t *key_mask;
    int key_ld; /* ring decode: key_mask's row stride */
    const uint8_t *slot_mask; /* ring decode: (B, Tr) for a step, NULL for a prefill */
} mt_attn_call;
/* What backward accumulates: dxq, dxkv (may be the same buffer for self attention; either
 * may be NULL), the parameter gradients g; da is scratch with the layout of the acts. */
typedef struct {
    float *dxq, *dxkv;
    mt_attn_params *g;
    mt_attn_acts *da;
} mt_attn_grads;
/* out (B, Tq, C); xq (B, Tq, C); xkv (B, Tk, kv_C) */
void mt_attention_forward(const mt_backend *be, float *out, mt_attn_acts *a, const float *xq,
                          const float *xkv, const mt_attn_params *p, const mt_attn_call *call);
void mt_attention_backward(const mt_backend *be, const mt_attn_grads *grads, const float *dout,
                           const mt_attn_acts *a, const float *xq, const float *xkv,
                           const mt_attn_params *p, const mt_attn_call *call);

/* KV cache for decoding: k, v (B, Tmax, C), rows [0, len) filled. Self attention appends the
 * new tokens' keys/values; cross attention fills it once from the encoder output. */
typedef struct {
    float *k, *v;
    int Tmax, len;
} mt_kv_cache;
size_t mt_kv_cache_count(const mt_attn_config *cfg, int B, int Tmax);
float *mt_kv_cache_point(mt_kv_cache *c, float *base, const mt_attn_config *cfg, int B, int Tmax);
/* Self attention over the cache plus Tq new tokens x (B, Tq, C) at positions len.. (prefill:
 * len = 0, Tq = prompt length; decode: Tq = 1). key_mask (B, Tmax) covers all cached and new
 * positions (0 at left pads) or is NULL. a: acts for (B, Tq, Tmax). -1 when the cache is full. */
int mt_attention_decode(const mt_backend *be, float *out, mt_attn_acts *a, const float *x,
                        mt_kv_cache *cache, const mt_attn_params *p, const mt_attn_call *call);
/* Cross attention: fill the cache from mem (B, S, kv_C), source positions [s0, s0 + S) (the
 * whole source, or one chunk of it as an encoder in chunks produces it; s0 + S <= Tmax),
 * then attend. */
void mt_attention_cross_fill(const mt_backend *be, mt_kv_cache *cache, const float *mem,
                             const mt_attn_params *p, const mt_attn_config *cfg, int B, int S,
                             int s0);
void mt_attention_cross_decode(const mt_backend *be, float *out, mt_attn_acts *a, const float *x,
                               const mt_kv_cache *cache, const mt_attn_params *p,
                               const mt_attn_call *call);
/* Beam search: reorder the cache rows along the batch, src/dst (B, Tmax, C) each. */
void mt_kv_cache_reorder(const mt_backend *be, mt_kv_cache *dst, const mt_kv_cache *src,
                         const int32_t *beam_idx, int B, const mt_attn_config *cfg);

/* Sliding-window decoding: a windowed self-attention (cfg->window = W > 0) shows a query
 * only itself and the W keys before it, so decoding keeps those in a ring of Tr slots
 * (mt_kv_cache_point with Tmax = Tr = W + 1, or fewer when no decode is longer): position p
 * lives in slot p % Tr, so memory stays constant in the sequence length.
 *   prefill (slot_mask NULL; Tq positions at len, the whole prompt or one chunk of it,
 *     docs/decoding.md §1.1): the P = min(len, Tr - 1) positions before the chunk come out of
 *     the ring in order, the chunk's keys/values follow them, and the chunk's queries run
 *     windowed causal attention over those P + Tq keys with key_mask (B, key_ld) the
 *     positional mask (0 at pads; NULL when all are real); then the last min(Tq, Tr)
 *     keys/values enter the ring;
 *   step (slot_mask set, Tq == 1, cache->len > 0): the new key/value replaces slot len % Tr
 *     and the query attends over the filled slots, slot_mask (B, Tr) marking those holding a
 *     real token (mt_kv_ring_slot_mask). Keys are cached already rotated and softmax does not
 *     depend on the order of its keys, so the ring gives what a positional cache gives.
 * a: acts for (B, Tq, P + Tq) in a prefill, (B, 1, Tr) in a step. -1 on a step without a
 * prefill. Reorder the ring with mt_kv_cache_reorder. */
int mt_attention_ring_decode(const mt_backend *be, float *out, mt_attn_acts *a, const float *x,
                             mt_kv_cache *cache, const mt_attn_params *p, const mt_attn_call *call);
/* Host: slot_mask (B, Tr) of a ring holding positions [max(0, len - Tr), len), from the
 * positional key_mask (B, key_ld) (0 at pads); slots without a position are 0. */
void mt_kv_ring_slot_mask(uint8_t *slot_mask, const uint8_t *key_mask, int key_ld, int B, int len,
                          int Tr);

/* ---------------------------------------------------------------- multi-scale retention
 * RetNet's token mixer (docs/models.md §4, torchscale MultiScaleRetention), no biases:
 *   q = x Wq^T ; k = x Wk^T / sqrt(Dk) ; v = x Wv^T ; g = x Wg^T      (Dk = C/H, Dv = V/H)
 *   q, k rotated: interleaved pairs at position pos0 + t, angles mt_rope_inv_freq(RETNET)
 *   o = retention(q, k, v), per head with decay gamma_h = 1 - 2^(-5-h) (mtlab/backend.h):
 *       the parallel form in training and prefill, the recurrent form when decoding
 *   o = RMSNorm of each head's Dv values, no affine ("group norm") ; out = (SiLU(g) o) Wo^T
 * Tensors q_proj (C, C), k_proj (C, C), v_proj (V, C), g_proj (V, C), out_proj (C, V). */
typedef struct {
    int C; /* d_model E */
    int H; /* heads, <= MT_RETENTION_MAX_HEADS; Dk = C / H */
    int V; /* value width over all heads (2C in RetNet); Dv = V / H */
    float eps; /* group norm epsilon */
    const float *inv_freq; /* (Dk/2) backend memory, mt_rope_inv_freq(Dk, 10000, RETNET) */
} mt_retention_config;
/* gamma (H) host: gamma_h = 1 - 2^(-5-h) */
void mt_retention_decays(float *gamma, int H);
typedef struct {
    float *q_w; /* (C, C) */
    float *k_w; /* (C, C) */
    float *v_w; /* (V, C) */
    float *g_w; /* (V, C) */
    float *o_w; /* (C, V) */
} mt_retention_params;
typedef struct {
    float *q, *k; /* (B, T, C) rotated; k scaled by Dk^-1/2 */
    float *v, *g; /* (B, T, V) */
    float *att; /* (B, H, T, T) normalised retention weights (the probe's map) */
    float *r; /* (B, H, T) abs-sum normaliser */
    float *o; /* (B, T, V) retention output */
    float *on; /* (B, T, V) group-normed */
    float *rstd; /* (B*T*H) group norm */
    float *gated; /* (B, T, V) SiLU(g) * on */
    float *step; /* (B, 2C + 2V) q, k, v, out of one position of a prefill chunk */
} mt_retention_acts;
/* Decoding state: s and KV of mt_retention_desc, plus the position of the next token. */
typedef struct {
    float *kv; /* (B, H, Dk, Dv) */
    float *scale; /* (B, H) s */
    int len;
} mt_retention_state;
int mt_retention_tensors(const mt_retention_config *cfg, mt_tensor_spec *specs); /* 5 */
size_t mt_retention_params_count(const mt_retention_config *cfg);
float *mt_retention_params_point(mt_retention_params *p, float *base,
                                 const mt_retention_config *cfg);
size_t mt_retention_acts_count(const mt_retention_config *cfg, int B, int T);
float *mt_retention_acts_point(mt_retention_acts *a, float *base, const mt_retention_config *cfg,
                               int B, int T);
size_t mt_retention_state_count(const mt_retention_config *cfg, int B);
float *mt_retention_state_point(mt_retention_state *s, float *base, const mt_retention_config *cfg,
                                int B);
/* out, x (B, T, C); mask (B, T) or NULL; state NULL, or filled after this prefill (positions
 * 0 .. T-1) for decoding. A state that already holds positions (state->len > 0) is continued
 * instead: the T positions are a later chunk of the prompt, run through the recurrent step one
 * position at a time (pads keep the state), as decoding would feed them (docs/decoding.md
 * §1.1). */
typedef struct {
    const mt_retention_config *cfg;
    int B, T;
    const uint8_t *mask; /* (B, T) or NULL */
    mt_retention_state *state; /* forward only: NULL, or the decoding state to fill or continue */
} mt_retention_call;
/* What backward accumulates: dx (B, T, C), the parameter gradients g; da is scratch with the
 * layout of the acts. */
typedef struct {
    float *dx;
    mt_retention_params *g;
    mt_retention_acts *da;
} mt_retention_grads;
void mt_retention_forward(const mt_backend *be, float *out, mt_retention_acts *a, const float *x,
                          const mt_retention_params *p, const mt_retention_call *call);
void mt_retention_backward(const mt_backend *be, const mt_retention_grads *grads, const float *dout,
                           const mt_retention_acts *a, const float *x, const mt_retention_params *p,
                           const mt_retention_call *call);
/* One recurrent step at position state->len: x, out (B, C); a: acts for (B, T = 1). */
void mt_retention_step(const mt_backend *be, float *out, mt_retention_acts *a, const float *x,
                       const mt_retention_params *p, const mt_retention_config *cfg,
                       mt_retention_state *state, int B);
/* Beam search: dst row i = src row idx[i] (idx backend memory, B rows); dst->len = src->len. */
void mt_retention_state_reorder(const mt_backend *be, mt_retention_state *dst,
                                const mt_retention_state *src, const int32_t *idx, int B,
                                const mt_retention_config *cfg);

/* ---------------------------------------------------------------- Mamba v1 mixer
 * docs/models.md §3.4: in_proj -> x, z; x *= mask; conv (K); SiLU; x *= mask; x_proj -> dt, Bm, Cm;
 * dt_proj (bias added in the scan before softplus); scan with A = -exp(A_log) and D skip;
 * y *= SiLU(z); out_proj; dropout. No biases except conv1d and dt_proj (mamba_ssm's; Hugging
 * Face's use_bias adds in_proj's and out_proj's, use_conv_bias false drops conv1d's). */
typedef struct {
    int d_model; /* C */
    int d_inner; /* D = expand * C */
    int d_state; /* N (16) */
    int d_conv; /* K (4) */
    int dt_rank; /* R = ceil(C / 16) */
    int bias; /* 1: in_proj and out_proj have biases (Hugging Face MambaConfig use_bias) */
    int no_conv_bias; /* 1: conv1d has none (use_conv_bias false) */
} mt_mamba_config;
/* d_inner = 2C, d_state 16, d_conv 4, dt_rank ceil(C/16) (mamba_ssm defaults) */
void mt_mamba_config_default(mt_mamba_config *cfg, int d_model);
typedef struct {
    float *in_proj_w; /* (2*D, C): rows [0, D) x, [D, 2*D) z */
    float *in_proj_b; /* (2*D) or NULL (cfg bias) */
    float *conv_w; /* (D, K) */
    float *conv_b; /* (D) or NULL (cfg no_conv_bias) */
    float *x_proj_w; /* (R + 2*N, D): rows [0,R) dt, [R,R+N) B, [R+N,R+2N) C */
    float *dt_proj_w; /* (D, R) */
    float *dt_proj_b; /* (D) */
    float *A_log; /* (D, N) */
    float *D; /* (D) */
    float *out_proj_w; /* (C, D) */
    float *out_proj_b; /* (C) or NULL (cfg bias) */
} mt_mamba_params;
typedef struct {
    float *x; /* (B, T, D) in_proj x half, masked */
    float *z; /* (B, T, D) gate half */
    float *xc; /* (B, T, D) conv output before SiLU */
    float *u; /* (B, T, D) SiLU(xc), masked: the scan input */
    float *dt_low; /* (B, T, R) */
    float *Bm; /* (B, T, N) */
    float *Cm; /* (B, T, N) */
    float *dt; /* (B, T, D) dt_proj output (no bias) */
    float *y; /* (B, T, D) scan output (with D skip) */
    float *yg; /* (B, T, D) y * SiLU(z) */
    float *o; /* (B, T, C) out_proj output before dropout */
} mt_mamba_acts;
typedef struct {
    float *conv; /* (B, D, K) last K masked in_proj x values, oldest first */
    float *ssm; /* (B, D, N) the SSM state h */
    /* MT_SCAN_STEP_A_COUNT(D, N): the step's A (backend scan_step_A), shared by the rows and
     * taken afresh from A_log whenever a decode starts (len 0), so new weights are seen */
    float *A;
    int len; /* positions the state holds */
} mt_mamba_state;
int mt_mamba_tensors(const mt_mamba_config *cfg, mt_tensor_spec *specs); /* 9 tensors */
size_t mt_mamba_params_count(const mt_mamba_config *cfg);
float *mt_mamba_params_point(mt_mamba_params *p, float *base, const mt_mamba_config *cfg);
size_t mt_mamba_acts_count(const mt_mamba_config *cfg, int B, int T);
float *mt_mamba_acts_point(mt_mamba_acts *a, float *base, const mt_mamba_config *cfg, int B, int T);
size_t mt_mamba_state_count(const mt_mamba_config *cfg, int B);
float *mt_mamba_state_point(mt_mamba_state *s, float *base, const mt_mamba_config *cfg, int B);
/* out, inp (B, T, C); mask (B, T) or NULL (left padding is exact: docs/models.md §3.5);
 * state NULL, or filled for decoding after this prefill (docs/models.md §3.6). A state that
 * already holds positions (state->len > 0) is continued instead: the T positions are a later
 * chunk of the prompt; the conv takes its first K-1 outputs from the state through the step
 * and the scan starts from the SSM state (docs/decoding.md §1.1). */
typedef struct {
    const mt_mamba_config *cfg;
    int B, T;
    const uint8_t *mask; /* (B, T) or NULL */
    const mt_dropout *drop; /* of the output, or NULL */
    mt_mamba_state *state; /* forward only: NULL, or the decoding state to fill or continue */
} mt_mamba_call;
/* What backward accumulates: dinp (B, T, C), the parameter gradients g; da is scratch with
 * the layout of the acts. */
typedef struct {
    float *dinp;
    mt_mamba_params *g;
    mt_mamba_acts *da;
} mt_mamba_grads;
void mt_mamba_forward(const mt_backend *be, float *out, mt_mamba_acts *a, const float *inp,
                      const mt_mamba_params *p, const mt_mamba_call *call);
void mt_mamba_backward(const mt_backend *be, const mt_mamba_grads *grads, const float *dout,
                       const mt_mamba_acts *a, const float *inp, const mt_mamba_params *p,
                       const mt_mamba_call *call);
/* One recurrent step: inp, out (B, C); a: acts for (B, T = 1); updates state. No dropout. */
void mt_mamba_step(const mt_backend *be, float *out, mt_mamba_acts *a, const float *inp,
                   const mt_mamba_params *p, const mt_mamba_config *cfg, mt_mamba_state *state,
                   int B);

/* ---------------------------------------------------------------- loss
 * Cross-entropy over target tokens fused with softmax (backend.h); logits (BT, V).
 * Forward writes losses (BT) and lse (BT) and returns the sum of the losses (host). Backward:
 * dlogits += scale * d(sum of losses)/dlogits; scale = 1/count gives the mean's gradient. */
typedef struct {
    size_t BT;
    int V;
    int ignore_index; /* targets equal to it count nothing */
    float smoothing; /* label smoothing */
    float scale; /* backward and fused only */
} mt_loss_call;
double mt_cross_entropy_forward(const mt_backend *be, float *losses, float *lse,
                                const float *logits, const int32_t *targets,
                                const mt_loss_call *call);
void mt_cross_entropy_backward(const mt_backend *be, float *dlogits, const float *logits,
                               const float *lse, const int32_t *targets, const mt_loss_call *call);
/* Training's form: losses (BT), and logits (BT, V) overwritten by scale * d(loss sum)/dlogits
 * (docs/models.md §10.7). */
void mt_cross_entropy_fused(const mt_backend *be, float *losses, float *logits,
                            const int32_t *targets, const mt_loss_call *call);

/* ---------------------------------------------------------------- initialisation (host)
 * Parameters are initialised in host memory (then uploaded when the backend is a device). */
void mt_init_uniform(mt_rng *r, float *w, size_t n, float bound); /* U(-bound, bound) */
void mt_init_normal(mt_rng *r, float *w, size_t n, float std); /* N(0, std^2) */
void mt_init_fill(float *w, size_t n, float value);
/* PyTorch default Linear/Conv init, kaiming_uniform(a = sqrt 5): U(+-1/sqrt(fan_in)) for the
 * weight (OC, fan_in) and, when bias is not NULL, the bias (OC). */
void mt_init_linear_default(mt_rng *r, float *weight, float *bias, int OC, int fan_in);
/* xavier_uniform with gain: U(+-gain * sqrt(6 / (fan_in + fan_out))) */
void mt_init_xavier_uniform(mt_rng *r, float *w, int fan_out, int fan_in, float gain);
/* inverse softplus: the v with softplus(v) = y, y > 0 (y + log(-expm1(-y))) */
float mt_inv_softplus(float y);
/* mamba_ssm Mamba init (docs/models.md §3.3) on host params: in/x/out_proj and conv PyTorch
 * default; dt_proj.weight U(+-R^-0.5); dt_proj.bias = inv_softplus(dt), dt log-uniform in
 * [1e-3, 0.1] clamped at 1e-4; A_log[d, s] = log(s + 1); D = 1; out_proj.weight then
 * multiplied by out_proj_scale (1/sqrt(n_residuals_per_layer * n_layer) for the model-level
 * rescale_prenorm_residual, 1 to skip it). */
void mt_mamba_init(mt_rng *r, mt_mamba_params *host, const mt_mamba_config *cfg,
                   float out_proj_scale);
/* torchscale MultiScaleRetention init on host params: q, k, v, g xavier_uniform with gain
 * 2^-2.5, out_proj xavier_uniform with gain out_gain (1 in ssm-mt's copy, 2^-1 upstream). */
void mt_retention_init(mt_rng *r, mt_retention_params *host, const mt_retention_config *cfg,
                       float out_gain);

#endif
