/* Multi-head attention: projections, optional rotary on q and k, the backend's attention
 * core, output projection; plus the KV-cache forms used when decoding.
 *   q = xq Wq^T + bq ; k = xkv Wk^T + bk ; v = xkv Wv^T + bv       (rotary on q, k)
 *   ctx = softmax(q k^T / sqrt(Dh) + mask) v per head ; out = ctx Wo^T + bo
 * GPT-NeoX fuses the three projections into one (qkv_name): qkv = x Wqkv^T + bqkv (BT, 3C)
 * viewed as (BT, H, 3, Dh), so q, k, v of head h are its three slices of Dh
 * (transformers' GPTNeoXAttention: qkv.view(B, T, H, 3 * Dh).chunk(3, dim=-1)). */
#include "layers/tensor_table.h"
#include "mtlab/error.h"

#include <math.h>

static int kv_width(const mt_attn_config *cfg) { return cfg->kv_C ? cfg->kv_C : cfg->C; }

/* The block's tensors in block order, listed once (p may be NULL when no pointers are made) */
static void walk(tensor_walk *w, const mt_attn_config *cfg, mt_attn_params *p)
{
    const char *out = cfg->out_name ? cfg->out_name : "out_proj";
    int C = cfg->C, kv = kv_width(cfg), b = cfg->bias;
    mt_attn_params none;
    if (!p) p = &none;
    if (cfg->qkv_name) {
        tensor_walk_row(w, &p->q_w, cfg->qkv_name, ".weight", 1, TENSOR_SHAPE2(3 * C, C));
        tensor_walk_optional(w, b, &p->q_b, cfg->qkv_name, ".bias", 0, TENSOR_SHAPE1(3 * C));
        p->k_w = p->k_b = p->v_w = p->v_b = NULL;
        tensor_walk_row(w, &p->o_w, out, ".weight", 1, TENSOR_SHAPE2(C, C));
        tensor_walk_optional(w, b, &p->o_b, out, ".bias", 0, TENSOR_SHAPE1(C));
        return;
    }
    tensor_walk_row(w, &p->q_w, "q_proj", ".weight", 1, TENSOR_SHAPE2(C, C));
    tensor_walk_optional(w, b, &p->q_b, "q_proj", ".bias", 0, TENSOR_SHAPE1(C));
    tensor_walk_row(w, &p->k_w, "k_proj", ".weight", 1, TENSOR_SHAPE2(C, kv));
    tensor_walk_optional(w, b, &p->k_b, "k_proj", ".bias", 0, TENSOR_SHAPE1(C));
    tensor_walk_row(w, &p->v_w, "v_proj", ".weight", 1, TENSOR_SHAPE2(C, kv));
    tensor_walk_optional(w, b, &p->v_b, "v_proj", ".bias", 0, TENSOR_SHAPE1(C));
    tensor_walk_row(w, &p->o_w, out, ".weight", 1, TENSOR_SHAPE2(C, C));
    tensor_walk_optional(w, b, &p->o_b, out, ".bias", 0, TENSOR_SHAPE1(C));
}

int mt_attention_tensors(const mt_attn_config *cfg, mt_tensor_spec *specs)
{
    tensor_walk w = {.specs = specs};
    walk(&w, cfg, NULL);
    return w.n;
}

size_t mt_attention_params_count(const mt_attn_config *cfg)
{
    tensor_walk w = {0};
    walk(&w, cfg, NULL);
    return w.count;
}

float *mt_attention_params_point(mt_attn_params *p, float *base, const mt_attn_config *cfg)
{
    tensor_walk w = {.base = base};
    walk(&w, cfg, p);
    return w.base;
}

size_t mt_attention_acts_count(const mt_attn_config *cfg, int B, int Tq, int Tk)
{
    size_t C = (size_t)cfg->C, fused = cfg->qkv_name ? 3 * Tq * C : 0;
    return (size_t)B * (2 * Tq * C + 2 * Tk * C + (size_t)cfg->H * Tq * Tk + fused);
}

float *mt_attention_acts_point(mt_attn_acts *a, float *base, const mt_attn_config *cfg, int B,
                               int Tq, int Tk)
{
    size_t C = (size_t)cfg->C;
    tensor_table_take(&a->q, &base, (size_t)B * Tq * C, 1);
    tensor_table_take(&a->k, &base, (size_t)B * Tk * C, 1);
    tensor_table_take(&a->v, &base, (size_t)B * Tk * C, 1);
    tensor_table_take(&a->att, &base, (size_t)B * cfg->H * Tq * Tk, 1);
    tensor_table_take(&a->ctx, &base, (size_t)B * Tq * C, 1);
    tensor_table_take(&a->qkv, &base, (size_t)B * Tq * 3 * C, cfg->qkv_name != NULL);
    return base;
}

static mt_attn_desc attn_desc(const mt_attn_config *cfg, int B, int Tq, int Tk)
{
    mt_attn_desc d = {0};
    d.B = B, d.H = cfg->H, d.Tq = Tq, d.Tk = Tk, d.Dh = cfg->C / cfg->H;
    d.causal = cfg->causal;
    d.q_pos0 = Tk - Tq;
    d.window = cfg->window;
    d.scale = 1.0f / sqrtf((float)d.Dh);
    return d;
}

static void rope(const mt_backend *be, float *x, const mt_attn_config *cfg, int B, int T, int pos0,
                 int inverse)
{
    if (!cfg->rope_dim) return;
    int Dh = cfg->C / cfg->H;
    (inverse ? be->rope_backward : be->rope_forward)(x, NULL, B, T, cfg->H, Dh, cfg->rope_dim, pos0,
                                                     cfg->rope_inv_freq, cfg->rope_interleaved);
}

/* a->q, a->k, a->v (rows, C) of the same rows x (rows, C) through the fused projection:
 * a->qkv, then each head's three slices of Dh copied out (rows * H slices of Dh, 3 Dh apart). */
static void fused_forward(const mt_backend *be, mt_attn_acts *a, const float *x,
                          const mt_attn_params *p, const mt_attn_config *cfg, size_t rows)
{
    int C = cfg->C, Dh = C / cfg->H;
    mt_linear_forward(be, a->qkv, x, p->q_w, p->q_b, rows, C, 3 * C);
    float *dst[3] = {a->q, a->k, a->v};
    for (int j = 0; j < 3; j++)
        be->copy2d(dst[j], Dh, a->qkv + (size_t)j * Dh, 3 * Dh, rows * cfg->H, Dh);
}

/* backward of fused_forward: the slices' gradients da->q, da->k, da->v gathered into da->qkv
 * (rows, 3C), then one linear backward */
static void fused_backward(const mt_backend *be, const mt_weight_grads *grads, mt_attn_acts *da,
                           const float *x, const mt_attn_params *p, const mt_attn_config *cfg,
                           size_t rows)
{
    int C = cfg->C, Dh = C / cfg->H;
    const float *src[3] = {da->q, da->k, da->v};
    for (int j = 0; j < 3; j++)
        be->copy2d(da->qkv + (size_t)j * Dh, 3 * Dh, src[j], Dh, rows * cfg->H, Dh);
    mt_linear_backward(be, grads, da->qkv, x, p->q_w, rows, C, 3 * C);
}

void mt_attention_forward(const mt_backend *be, float *out, mt_attn_acts *a, const float *xq,
                          const float *xkv, const mt_attn_params *p, const mt_attn_call *call)
{
    const mt_attn_config *cfg = call->cfg;
    int C = cfg->C, kv = kv_width(cfg), B = call->B, Tq = call->Tq, Tk = call->Tk;
    if (cfg->qkv_name) {
        fused_forward(be, a, xq, p, cfg, (size_t)B * Tq);
    } else {
        mt_linear_forward(be, a->q, xq, p->q_w, p->q_b, (size_t)B * Tq, C, C);
        mt_linear_forward(be, a->k, xkv, p->k_w, p->k_b, (size_t)B * Tk, kv, C);
        mt_linear_forward(be, a->v, xkv, p->v_w, p->v_b, (size_t)B * Tk, kv, C);
    }
    rope(be, a->q, cfg, B, Tq, Tk - Tq, 0);
    rope(be, a->k, cfg, B, Tk, 0, 0);
    mt_attn_desc d = attn_desc(cfg, B, Tq, Tk);
    d.key_mask = call->key_mask;
    be->attention_forward(a->ctx, a->att, a->q, a->k, a->v, &d);
    mt_linear_forward(be, out, a->ctx, p->o_w, p->o_b, (size_t)B * Tq, C, C);
}

void mt_attention_backward(const mt_backend *be, const mt_attn_grads *grads, const float *dout,
                           const mt_attn_acts *a, const float *xq, const float *xkv,
                           const mt_attn_params *p, const mt_attn_call *call)
{
    const mt_attn_config *cfg = call->cfg;
    mt_attn_params *g = grads->g;
    mt_attn_acts *da = grads->da;
    float *dxq = grads->dxq, *dxkv = grads->dxkv;
    int C = cfg->C, kv = kv_width(cfg), B = call->B, Tq = call->Tq, Tk = call->Tk;
    size_t nq = (size_t)B * Tq * C, nk = (size_t)B * Tk * C;
    be->memzero(da->q, nq * sizeof(float));
    be->memzero(da->k, nk * sizeof(float));
    be->memzero(da->v, nk * sizeof(float));
    mt_linear_backward_first(be, &(mt_weight_grads){da->ctx, g->o_w, g->o_b}, dout, a->ctx, p->o_w,
                             (size_t)B * Tq, C, C);
    mt_attn_desc d = attn_desc(cfg, B, Tq, Tk);
    d.key_mask = call->key_mask;
    be->attention_backward(da->q, da->k, da->v, da->att, da->ctx, a->q, a->k, a->v, a->att, &d);
    rope(be, da->q, cfg, B, Tq, Tk - Tq, 1);
    rope(be, da->k, cfg, B, Tk, 0, 1);
    if (cfg->qkv_name) {
        fused_backward(be, &(mt_weight_grads){dxq, g->q_w, g->q_b}, da, xq, p, cfg, (size_t)B * Tq);
        return;
    }
    mt_linear_backward(be, &(mt_weight_grads){dxq, g->q_w, g->q_b}, da->q, xq, p->q_w,
                       (size_t)B * Tq, C, C);
    mt_linear_backward(be, &(mt_weight_grads){dxkv, g->k_w, g->k_b}, da->k, xkv, p->k_w,
                       (size_t)B * Tk, kv, C);
    mt_linear_backward(be, &(mt_weight_grads){dxkv, g->v_w, g->v_b}, da->v, xkv, p->v_w,
                       (size_t)B * Tk, kv, C);
}

/* ---------------------------------------------------------------- decoding with a KV cache */
size_t mt_kv_cache_count(const mt_attn_config *cfg, int B, int Tmax)
{
    return 2 * (size_t)B * Tmax * cfg->C;
}

float *mt_kv_cache_point(mt_kv_cache *c, float *base, const mt_attn_config *cfg, int B, int Tmax)
{
    size_t n = (size_t)B * Tmax * cfg->C;
    tensor_table_take(&c->k, &base, n, 1);
    tensor_table_take(&c->v, &base, n, 1);
    c->Tmax = Tmax;
    c->len = 0;
    return base;
}

int mt_attention_decode(const mt_backend *be, float *out, mt_attn_acts *a, const float *x,
                        mt_kv_cache *cache, const mt_attn_params *p, const mt_attn_call *call)
{
    const mt_attn_config *cfg = call->cfg;
    int C = cfg->C, B = call->B, Tq = call->Tq;
    if (cache->len + Tq > cache->Tmax)
        return mt_error("attention decode: KV cache full (%d cached + %d new > capacity %d)",
                        cache->len, Tq, cache->Tmax);
    size_t rows = (size_t)B * Tq;
    /* the new keys and values pass through a->k, a->v, then into rows [len, len + Tq) */
    if (cfg->qkv_name) {
        fused_forward(be, a, x, p, cfg, rows);
    } else {
        mt_linear_forward(be, a->q, x, p->q_w, p->q_b, rows, C, C);
        mt_linear_forward(be, a->k, x, p->k_w, p->k_b, rows, C, C);
        mt_linear_forward(be, a->v, x, p->v_w, p->v_b, rows, C, C);
    }
    rope(be, a->q, cfg, B, Tq, cache->len, 0);
    rope(be, a->k, cfg, B, Tq, cache->len, 0);
    size_t at = (size_t)cache->len * C;
    be->copy2d(cache->k + at, cache->Tmax * C, a->k, Tq * C, (size_t)B, Tq * C);
    be->copy2d(cache->v + at, cache->Tmax * C, a->v, Tq * C, (size_t)B, Tq * C);
    mt_attn_desc d = attn_desc(cfg, B, Tq, cache->len + Tq);
    d.kv_bstride = (size_t)cache->Tmax * C;
    d.key_mask = call->key_mask;
    d.mask_bstride = (size_t)cache->Tmax;
    be->attention_forward(a->ctx, a->att, a->q, cache->k, cache->v, &d);
    mt_linear_forward(be, out, a->ctx, p->o_w, p->o_b, rows, C, C);
    cache->len += Tq;
    return 0;
}

void mt_attention_cross_fill(const mt_backend *be, mt_kv_cache *cache, const float *mem,
                             const mt_attn_params *p, const mt_attn_config *cfg, int B, int S,
                             int s0)
{
    int C = cfg->C, kv = kv_width(cfg);
    if (s0 == 0 && cache->Tmax == S) {
        /* every source's rows end to end, as a decode of the batch's longest source sizes the
         * cache: one product of B * S rows for the keys and one for the values, not 2B of S
         * rows (docs/decoding.md §9.1) */
        mt_linear_forward(be, cache->k, mem, p->k_w, p->k_b, (size_t)B * S, kv, C);
        mt_linear_forward(be, cache->v, mem, p->v_w, p->v_b, (size_t)B * S, kv, C);
        cache->len = S;
        return;
    }
    for (int b = 0; b < B; b++) {
        const float *mb = mem + (size_t)b * S * kv;
        size_t at = ((size_t)b * cache->Tmax + s0) * C;
        mt_linear_forward(be, cache->k + at, mb, p->k_w, p->k_b, (size_t)S, kv, C);
        mt_linear_forward(be, cache->v + at, mb, p->v_w, p->v_b, (size_t)S, kv, C);
    }
    cache->len = s0 + S;
}

void mt_attention_cross_decode(const mt_backend *be, float *out, mt_attn_acts *a, const float *x,
                               const mt_kv_cache *cache, const mt_attn_params *p,
                               const mt_attn_call *call)
{
    const mt_attn_config *cfg = call->cfg;
    int C = cfg->C, B = call->B, Tq = call->Tq;
    size_t rows = (size_t)B * Tq;
    mt_linear_forward(be, a->q, x, p->q_w, p->q_b, rows, C, C);
    mt_attn_desc d = attn_desc(cfg, B, Tq, cache->len);
    d.causal = 0;
    d.kv_bstride = (size_t)cache->Tmax * C;
    d.key_mask = call->key_mask;
    be->attention_forward(a->ctx, a->att, a->q, cache->k, cache->v, &d);
    mt_linear_forward(be, out, a->ctx, p->o_w, p->o_b, rows, C, C);
}

void mt_kv_cache_reorder(const mt_backend *be, mt_kv_cache *dst, const mt_kv_cache *src,
                         const int32_t *beam_idx, int B, const mt_attn_config *cfg)
{
    size_t row = (size_t)src->Tmax * cfg->C;
    be->index_select(dst->k, src->k, row, beam_idx, B, row);
    be->index_select(dst->v, src->v, row, beam_idx, B, row);
    dst->len = src->len;
}
