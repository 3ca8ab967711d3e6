/* The XLM-RoBERTa encoder (Hugging Face XLMRobertaModel without its pooler), forward only: the
 * encoder under COMET (engine/eval/comet.c). Post-norm BERT layers:
 *   x_0 = LayerNorm(word[id] + pos[t + 2] + type[0])        (the padding index is 1, so the
 *                                                           first real position is 2)
 *   y   = LayerNorm(x + Attention(x))                       (biases, key padding mask)
 *   x_l = LayerNorm(y + W2 GELU(W1 y + b1) + b2)            (the exact erf GELU)
 * with every x_l (l = 0 .. L) handed to the caller as it is made, since COMET mixes them all.
 * Letters: mtlab/backend.h; L encoder layers, P rows of the position table (514). */
#ifndef MTLAB_MODELS_XLMR_H
#define MTLAB_MODELS_XLMR_H

#include <stdint.h>

#include "mtlab/layers.h"

typedef struct {
    int V, C, H, F, L, P;
    float eps; /* layer_norm_eps (1e-5) */
} xlmr_config;

/* One weight as a checkpoint names it, and where it goes in the parameter block. */
#define XLMR_NAME_MAX 96
typedef struct {
    char name[XLMR_NAME_MAX];
    float *data; /* backend memory inside the block */
    int ndim;
    int64_t shape[2];
} xlmr_tensor;

typedef struct {
    mt_attn_params attn; /* q/k/v/o (C, C) with biases */
    float *attn_ln_w, *attn_ln_b; /* (C) */
    mt_ffn_params ffn; /* (F, C), (F), (C, F), (C) */
    float *ffn_ln_w, *ffn_ln_b; /* (C) */
} xlmr_layer;

typedef struct {
    float *word; /* (V, C) */
    float *pos; /* (P, C) */
    float *type; /* (1, C) */
    float *emb_ln_w, *emb_ln_b; /* (C) */
    xlmr_layer *layers; /* (L), malloc'd by xlmr_params_point */
} xlmr_params;

typedef struct {
    float *x; /* (BT, C) the latest hidden state x_l */
    float *y; /* (BT, C) residual sums before a norm */
    float *h; /* (BT, C) a sublayer's output */
    float *mean, *rstd; /* (BT) */
    mt_attn_acts attn;
    mt_ffn_acts ffn;
} xlmr_acts;

size_t xlmr_params_count(const xlmr_config *cfg);
/* Point p into base (floats of xlmr_params_count) and list its tensors, named prefix + the
 * Hugging Face name ("encoder.model." + "embeddings.word_embeddings.weight"), into t (room for
 * xlmr_tensor_count); returns the number listed. */
int xlmr_tensor_count(const xlmr_config *cfg);
int xlmr_params_point(xlmr_params *p, xlmr_tensor *t, float *base, const xlmr_config *cfg,
                      const char *prefix);
void xlmr_params_free(xlmr_params *p);

size_t xlmr_acts_count(const xlmr_config *cfg, int B, int T);
void xlmr_acts_point(xlmr_acts *a, float *base, const xlmr_config *cfg, int B, int T);

/* Called with each hidden state x_l (BT, C), l = 0 (the embeddings) .. L. */
typedef void (*xlmr_layer_fn)(void *ctx, int l, const float *x);
/* One forward: the config, the shape, the mask and the hook that sees each hidden state. */
typedef struct {
    const xlmr_config *cfg;
    int B, T; /* T + 2 <= P */
    const uint8_t *mask; /* (B, T) backend memory, right-padded */
    xlmr_layer_fn fn;
    void *ctx; /* fn's */
} xlmr_call;
/* ids (B, T) backend memory */
void xlmr_forward(const mt_backend *be, xlmr_acts *a, const int32_t *ids, const xlmr_params *p,
                  const xlmr_call *call);

#endif
