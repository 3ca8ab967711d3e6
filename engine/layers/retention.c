/* Multi-scale retention, RetNet's token mixer (docs/models.md §4; mtlab/layers.h), forward,
 * backward, the recurrent step and its state.
 *   q = x Wq^T ; k = x Wk^T / sqrt(Dk) ; v = x Wv^T ; g = x Wg^T
 *   q, k <- rotate(q, k) (interleaved pairs, position pos0 + t)
 *   o = retention(q, k, v)                 (backend: parallel, or state fill + step)
 *   on = o * rsqrt(mean over each head's Dv values of o^2 + eps)
 *   gated = SiLU(g) * on ; out = gated Wo^T */
#include "layers/tensor_table.h"

#include <math.h>

void mt_retention_decays(float *gamma, int H)
{
    for (int h = 0; h < H; h++) gamma[h] = (float)(1.0 - pow(2.0, -5.0 - h));
}

/* The block's tensors in block order, listed once (p may be NULL when no pointers are made) */
static void walk(tensor_walk *w, const mt_retention_config *cfg, mt_retention_params *p)
{
    int C = cfg->C, V = cfg->V;
    mt_retention_params none;
    if (!p) p = &none;
    tensor_walk_row(w, &p->q_w, "q_proj", ".weight", 1, TENSOR_SHAPE2(C, C));
    tensor_walk_row(w, &p->k_w, "k_proj", ".weight", 1, TENSOR_SHAPE2(C, C));
    tensor_walk_row(w, &p->v_w, "v_proj", ".weight", 1, TENSOR_SHAPE2(V, C));
    tensor_walk_row(w, &p->g_w, "g_proj", ".weight", 1, TENSOR_SHAPE2(V, C));
    tensor_walk_row(w, &p->o_w, "out_proj", ".weight", 1, TENSOR_SHAPE2(C, V));
}

int mt_retention_tensors(const mt_retention_config *cfg, mt_tensor_spec *specs)
{
    tensor_walk w = {.specs = specs};
    walk(&w, cfg, NULL);
    return w.n;
}

size_t mt_retention_params_count(const mt_retention_config *cfg)
{
    tensor_walk w = {0};
    walk(&w, cfg, NULL);
    return w.count;
}

float *mt_retention_params_point(mt_retention_params *p, float *base,
                                 const mt_retention_config *cfg)
{
    tensor_walk w = {.base = base};
    walk(&w, cfg, p);
    return w.base;
}

size_t mt_retention_acts_count(const mt_retention_config *cfg, int B, int T)
{
    size_t BT = (size_t)B * T, C = (size_t)cfg->C, V = (size_t)cfg->V, H = (size_t)cfg->H;
    return BT * (2 * C + 5 * V + H) + (size_t)B * H * T * (T + 1) + (size_t)B * (2 * C + 2 * V);
}

float *mt_retention_acts_point(mt_retention_acts *a, float *base, const mt_retention_config *cfg,
                               int B, int T)
{
    size_t BT = (size_t)B * T, C = (size_t)cfg->C, V = (size_t)cfg->V, H = (size_t)cfg->H;
    tensor_table_take(&a->q, &base, BT * C, 1);
    tensor_table_take(&a->k, &base, BT * C, 1);
    tensor_table_take(&a->v, &base, BT * V, 1);
    tensor_table_take(&a->g, &base, BT * V, 1);
    tensor_table_take(&a->att, &base, (size_t)B * H * T * T, 1);
    tensor_table_take(&a->r, &base, (size_t)B * H * T, 1);
    tensor_table_take(&a->o, &base, BT * V, 1);
    tensor_table_take(&a->on, &base, BT * V, 1);
    tensor_table_take(&a->rstd, &base, BT * H, 1);
    tensor_table_take(&a->gated, &base, BT * V, 1);
    tensor_table_take(&a->step, &base, (size_t)B * (2 * C + 2 * V), 1);
    return base;
}

/* Per row: KV (H, Dk, Dv) = C V / H floats and s (H). */
size_t mt_retention_state_count(const mt_retention_config *cfg, int B)
{
    return (size_t)B * ((size_t)cfg->C * cfg->V / cfg->H + (size_t)cfg->H);
}

float *mt_retention_state_point(mt_retention_state *s, float *base, const mt_retention_config *cfg,
                                int B)
{
    tensor_table_take(&s->kv, &base, (size_t)B * cfg->C * cfg->V / cfg->H, 1);
    tensor_table_take(&s->scale, &base, (size_t)B * cfg->H, 1);
    s->len = 0;
    return base;
}

static mt_retention_desc retention_desc(const mt_retention_config *cfg, const float *gamma,
                                        const uint8_t *mask, int B, int T)
{
    mt_retention_desc d = {
        .B = B,
        .H = cfg->H,
        .T = T,
        .Dk = cfg->C / cfg->H,
        .Dv = cfg->V / cfg->H,
        .gamma = gamma,
        .key_mask = mask,
    };
    return d;
}

/* q, k, v, g of BT rows; q and k rotated at positions pos0 + t (rows are (B, T)). */
static void project(const mt_backend *be, mt_retention_acts *a, const float *x,
                    const mt_retention_params *p, const mt_retention_config *cfg, int B, int T,
                    int pos0)
{
    size_t BT = (size_t)B * T;
    int C = cfg->C, V = cfg->V, Dk = C / cfg->H;
    mt_linear_forward(be, a->q, x, p->q_w, NULL, BT, C, C);
    mt_linear_forward(be, a->k, x, p->k_w, NULL, BT, C, C);
    be->scale(a->k, BT * C, 1.0f / sqrtf((float)Dk));
    mt_linear_forward(be, a->v, x, p->v_w, NULL, BT, C, V);
    mt_linear_forward(be, a->g, x, p->g_w, NULL, BT, C, V);
    be->rope_forward(a->q, NULL, B, T, cfg->H, Dk, Dk, pos0, cfg->inv_freq, 1);
    be->rope_forward(a->k, NULL, B, T, cfg->H, Dk, Dk, pos0, cfg->inv_freq, 1);
}

/* group norm, gate and output projection of a->o */
static void output(const mt_backend *be, float *out, mt_retention_acts *a,
                   const mt_retention_params *p, const mt_retention_config *cfg, size_t BT)
{
    int C = cfg->C, V = cfg->V, H = cfg->H;
    be->rmsnorm_forward(a->on, a->rstd, a->o, NULL, BT * H, V / H, cfg->eps);
    be->gate_forward(a->gated, a->on, a->g, BT * V);
    mt_linear_forward(be, out, a->gated, p->o_w, NULL, BT, V, C);
}

/* A later chunk of a prefill: position t of every row goes through the recurrent step with
 * the row's mask byte (the step's mask has row stride T), so the state ends as if the whole
 * prompt had been fed token by token. */
static void continue_chunk(const mt_backend *be, float *out, mt_retention_acts *a, const float *x,
                           const mt_retention_params *p, const mt_retention_call *call,
                           const float *gamma)
{
    const mt_retention_config *cfg = call->cfg;
    const uint8_t *mask = call->mask;
    mt_retention_state *state = call->state;
    int C = cfg->C, V = cfg->V, B = call->B, T = call->T;
    project(be, a, x, p, cfg, B, T, state->len);
    float *q = a->step, *k = q + (size_t)B * C, *v = k + (size_t)B * C, *o = v + (size_t)B * V;
    for (int t = 0; t < T; t++) {
        be->copy2d(q, C, a->q + (size_t)t * C, T * C, (size_t)B, C);
        be->copy2d(k, C, a->k + (size_t)t * C, T * C, (size_t)B, C);
        be->copy2d(v, V, a->v + (size_t)t * V, T * V, (size_t)B, V);
        mt_retention_desc d = retention_desc(cfg, gamma, mask ? mask + t : NULL, B, T);
        be->retention_step(o, state->kv, state->scale, q, k, v, &d);
        be->copy2d(a->o + (size_t)t * V, T * V, o, V, (size_t)B, V);
    }
    state->len += T;
    output(be, out, a, p, cfg, (size_t)B * T);
}

void mt_retention_forward(const mt_backend *be, float *out, mt_retention_acts *a, const float *x,
                          const mt_retention_params *p, const mt_retention_call *call)
{
    const mt_retention_config *cfg = call->cfg;
    mt_retention_state *state = call->state;
    int B = call->B, T = call->T;
    float gamma[MT_RETENTION_MAX_HEADS];
    mt_retention_decays(gamma, cfg->H);
    if (state && state->len > 0) {
        continue_chunk(be, out, a, x, p, call, gamma);
        return;
    }
    project(be, a, x, p, cfg, B, T, 0);
    mt_retention_desc d = retention_desc(cfg, gamma, call->mask, B, T);
    be->retention_forward(a->o, a->att, a->r, a->q, a->k, a->v, &d);
    if (state) {
        be->retention_state_fill(state->kv, state->scale, a->k, a->v, &d);
        state->len = T;
    }
    output(be, out, a, p, cfg, (size_t)B * T);
}

void mt_retention_backward(const mt_backend *be, const mt_retention_grads *grads, const float *dout,
                           const mt_retention_acts *a, const float *x, const mt_retention_params *p,
                           const mt_retention_call *call)
{
    const mt_retention_config *cfg = call->cfg;
    mt_retention_params *g = grads->g;
    mt_retention_acts *da = grads->da;
    float *dx = grads->dx;
    int B = call->B, T = call->T;
    size_t BT = (size_t)B * T;
    int C = cfg->C, V = cfg->V, H = cfg->H, Dk = C / H;
    float gamma[MT_RETENTION_MAX_HEADS];
    mt_retention_decays(gamma, H);
    /* what the backward adds into (gate_backward writes g and on): not the scores' scratch
     * (da->att) or the rest of the block */
    be->memzero(da->q, (size_t)(da->g - da->q) * sizeof(float)); /* q, k, v */
    be->memzero(da->o, BT * V * sizeof(float));
    mt_linear_backward_first(be, &(mt_weight_grads){da->gated, g->o_w, NULL}, dout, a->gated,
                             p->o_w, BT, V, C);
    be->gate_backward(da->on, da->g, da->gated, a->on, a->g, BT * V);
    be->rmsnorm_backward(da->o, NULL, da->on, a->o, NULL, a->rstd, BT * H, V / H);
    mt_retention_desc d = retention_desc(cfg, gamma, call->mask, B, T);
    be->retention_backward(da->q, da->k, da->v, da->att, da->o, a->q, a->k, a->v, a->att, a->r, &d);
    be->rope_backward(da->q, NULL, B, T, H, Dk, Dk, 0, cfg->inv_freq, 1);
    be->rope_backward(da->k, NULL, B, T, H, Dk, Dk, 0, cfg->inv_freq, 1);
    be->scale(da->k, BT * C, 1.0f / sqrtf((float)Dk));
    mt_linear_backward(be, &(mt_weight_grads){dx, g->q_w, NULL}, da->q, x, p->q_w, BT, C, C);
    mt_linear_backward(be, &(mt_weight_grads){dx, g->k_w, NULL}, da->k, x, p->k_w, BT, C, C);
    mt_linear_backward(be, &(mt_weight_grads){dx, g->v_w, NULL}, da->v, x, p->v_w, BT, C, V);
    mt_linear_backward(be, &(mt_weight_grads){dx, g->g_w, NULL}, da->g, x, p->g_w, BT, C, V);
}

void mt_retention_step(const mt_backend *be, float *out, mt_retention_acts *a, const float *x,
                       const mt_retention_params *p, const mt_retention_config *cfg,
                       mt_retention_state *state, int B)
{
    float gamma[MT_RETENTION_MAX_HEADS];
    mt_retention_decays(gamma, cfg->H);
    project(be, a, x, p, cfg, B, 1, state->len);
    mt_retention_desc d = retention_desc(cfg, gamma, NULL, B, 1);
    be->retention_step(a->o, state->kv, state->scale, a->q, a->k, a->v, &d);
    output(be, out, a, p, cfg, (size_t)B);
    state->len++;
}

void mt_retention_state_reorder(const mt_backend *be, mt_retention_state *dst,
                                const mt_retention_state *src, const int32_t *idx, int B,
                                const mt_retention_config *cfg)
{
    size_t kv = (size_t)cfg->C * cfg->V / cfg->H;
    be->index_select(dst->kv, src->kv, kv, idx, B, kv);
    be->index_select(dst->scale, src->scale, (size_t)cfg->H, idx, B, (size_t)cfg->H);
    dst->len = src->len;
}

void mt_retention_init(mt_rng *r, mt_retention_params *host, const mt_retention_config *cfg,
                       float out_gain)
{
    int C = cfg->C, V = cfg->V;
    float gain = powf(2.0f, -2.5f);
    mt_init_xavier_uniform(r, host->q_w, C, C, gain);
    mt_init_xavier_uniform(r, host->k_w, C, C, gain);
    mt_init_xavier_uniform(r, host->v_w, V, C, gain);
    mt_init_xavier_uniform(r, host->g_w, V, C, gain);
    mt_init_xavier_uniform(r, host->o_w, C, V, out_gain);
}
