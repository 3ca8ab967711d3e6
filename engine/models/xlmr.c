/* XLM-RoBERTa encoder forward (engine/models/xlmr.h). */
#include "models/xlmr.h"

#include <stdio.h>
#include <stdlib.h>

#include "mtlab/error.h"

/* XLM-R pads with id 1 and numbers real positions from padding_idx + 1. */
#define XLMR_FIRST_POSITION 2

static mt_attn_config attn_config(const xlmr_config *cfg)
{
    return (mt_attn_config){.C = cfg->C, .H = cfg->H, .bias = 1};
}

static mt_ffn_config ffn_config(const xlmr_config *cfg)
{
    return (mt_ffn_config){.C = cfg->C, .F = cfg->F, .act = MT_ACT_GELU, .bias = 1};
}

size_t xlmr_params_count(const xlmr_config *cfg)
{
    mt_attn_config ac = attn_config(cfg);
    mt_ffn_config fc = ffn_config(cfg);
    size_t C = (size_t)cfg->C;
    size_t layer = mt_attention_params_count(&ac) + mt_ffn_params_count(&fc) + 4 * C;
    return ((size_t)cfg->V + cfg->P + 1 + 2) * C + (size_t)cfg->L * layer;
}

int xlmr_tensor_count(const xlmr_config *cfg) { return 5 + cfg->L * 16; }

static float *take(xlmr_tensor *t, int *n, float *base, const char *prefix, const char *name,
                   int ndim, int64_t d0, int64_t d1)
{
    xlmr_tensor *e = &t[(*n)++];
    snprintf(e->name, sizeof e->name, "%s%s", prefix, name);
    e->data = base, e->ndim = ndim, e->shape[0] = d0, e->shape[1] = d1;
    return base + d0 * (ndim == 2 ? d1 : 1);
}

int xlmr_params_point(xlmr_params *p, xlmr_tensor *t, float *base, const xlmr_config *cfg,
                      const char *prefix)
{
    int n = 0, C = cfg->C, F = cfg->F;
    mt_attn_config ac = attn_config(cfg);
    mt_ffn_config fc = ffn_config(cfg);
    p->word = base,
    base = take(t, &n, base, prefix, "embeddings.word_embeddings.weight", 2, cfg->V, C);
    p->pos = base,
    base = take(t, &n, base, prefix, "embeddings.position_embeddings.weight", 2, cfg->P, C);
    p->type = base,
    base = take(t, &n, base, prefix, "embeddings.token_type_embeddings.weight", 2, 1, C);
    p->emb_ln_w = base, base = take(t, &n, base, prefix, "embeddings.LayerNorm.weight", 1, C, 0);
    p->emb_ln_b = base, base = take(t, &n, base, prefix, "embeddings.LayerNorm.bias", 1, C, 0);
    p->layers = mt_xcalloc((size_t)cfg->L, sizeof *p->layers);
    char lp[XLMR_NAME_MAX];
    for (int l = 0; l < cfg->L; l++) {
        xlmr_layer *ly = &p->layers[l];
        snprintf(lp, sizeof lp, "%sencoder.layer.%d.", prefix, l);
        /* the attention block's own order (q, k, v, out; weight then bias) */
        float *a = base;
        base = mt_attention_params_point(&ly->attn, base, &ac);
        const char *names[4] = {"attention.self.query", "attention.self.key",
                                "attention.self.value", "attention.output.dense"};
        char nm[XLMR_NAME_MAX];
        for (int k = 0; k < 4; k++) {
            snprintf(nm, sizeof nm, "%s.weight", names[k]);
            a = take(t, &n, a, lp, nm, 2, C, C);
            snprintf(nm, sizeof nm, "%s.bias", names[k]);
            a = take(t, &n, a, lp, nm, 1, C, 0);
        }
        ly->attn_ln_w = base,
        base = take(t, &n, base, lp, "attention.output.LayerNorm.weight", 1, C, 0);
        ly->attn_ln_b = base,
        base = take(t, &n, base, lp, "attention.output.LayerNorm.bias", 1, C, 0);
        float *f = base;
        base = mt_ffn_params_point(&ly->ffn, base, &fc);
        f = take(t, &n, f, lp, "intermediate.dense.weight", 2, F, C);
        f = take(t, &n, f, lp, "intermediate.dense.bias", 1, F, 0);
        f = take(t, &n, f, lp, "output.dense.weight", 2, C, F);
        take(t, &n, f, lp, "output.dense.bias", 1, C, 0);
        ly->ffn_ln_w = base, base = take(t, &n, base, lp, "output.LayerNorm.weight", 1, C, 0);
        ly->ffn_ln_b = base, base = take(t, &n, base, lp, "output.LayerNorm.bias", 1, C, 0);
    }
    return n;
}

void xlmr_params_free(xlmr_params *p)
{
    free(p->layers);
    p->layers = NULL;
}

size_t xlmr_acts_count(const xlmr_config *cfg, int B, int T)
{
    mt_attn_config ac = attn_config(cfg);
    mt_ffn_config fc = ffn_config(cfg);
    size_t BT = (size_t)B * T;
    return 3 * BT * cfg->C + 2 * BT + mt_attention_acts_count(&ac, B, T, T) +
           mt_ffn_acts_count(&fc, BT);
}

void xlmr_acts_point(xlmr_acts *a, float *base, const xlmr_config *cfg, int B, int T)
{
    mt_attn_config ac = attn_config(cfg);
    mt_ffn_config fc = ffn_config(cfg);
    size_t BT = (size_t)B * T, C = (size_t)cfg->C;
    a->x = base, base += BT * C;
    a->y = base, base += BT * C;
    a->h = base, base += BT * C;
    a->mean = base, base += BT;
    a->rstd = base, base += BT;
    base = mt_attention_acts_point(&a->attn, base, &ac, B, T, T);
    mt_ffn_acts_point(&a->ffn, base, &fc, BT);
}

void xlmr_forward(const mt_backend *be, xlmr_acts *a, const int32_t *ids, const xlmr_params *p,
                  const xlmr_call *call)
{
    const xlmr_config *cfg = call->cfg;
    const uint8_t *mask = call->mask;
    const int B = call->B, T = call->T;
    xlmr_layer_fn fn = call->fn;
    void *ctx = call->ctx;
    const int C = cfg->C;
    const size_t BT = (size_t)B * T;
    mt_attn_config ac = attn_config(cfg);
    mt_ffn_config fc = ffn_config(cfg);

    /* pads get the positions after the sentence instead of padding_idx: their rows are
     * hidden from every real token and from the pooling, so nothing reads them */
    mt_embedding_forward(be, a->y, ids, p->word, BT, C, 1.0f);
    be->positions_add(a->y, p->pos, B, T, C, XLMR_FIRST_POSITION);
    be->bias_add(a->y, p->type, BT, C);
    mt_layernorm_forward(be, a->x, a->mean, a->rstd, a->y, p->emb_ln_w, p->emb_ln_b,
                         &(mt_norm_call){BT, C, cfg->eps});
    fn(ctx, 0, a->x);

    for (int l = 0; l < cfg->L; l++) {
        const xlmr_layer *ly = &p->layers[l];
        mt_attn_call attn = {.cfg = &ac, .B = B, .Tq = T, .Tk = T, .key_mask = mask};
        mt_attention_forward(be, a->h, &a->attn, a->x, a->x, &ly->attn, &attn);
        be->add(a->y, a->x, a->h, BT * C);
        mt_layernorm_forward(be, a->x, a->mean, a->rstd, a->y, ly->attn_ln_w, ly->attn_ln_b,
                             &(mt_norm_call){BT, C, cfg->eps});
        mt_ffn_forward(be, a->h, &a->ffn, a->x, &ly->ffn, &fc, BT);
        be->add(a->y, a->x, a->h, BT * C);
        mt_layernorm_forward(be, a->x, a->mean, a->rstd, a->y, ly->ffn_ln_w, ly->ffn_ln_b,
                             &(mt_norm_call){BT, C, cfg->eps});
        fn(ctx, l + 1, a->x);
    }
}
