/* Residual units: one mixer (attention, cross-attention, FFN, gated MLP, Mamba or retention)
 * with its norm, pre-norm or post-norm (model_internal.h), forward, backward and decoding.
 *
 * pre-norm:   n = norm(x);  f = drop(mixer(n));  y = x + f
 *   backward: dn = mixer'(drop'(dy));  dx = dy + norm'(dn)
 * post-norm:  s = x + drop(mixer(x));  y = norm(s)
 *   backward: ds = norm'(dy);  dx = ds + mixer'(drop'(ds))
 * parallel:   n = norm(x_prev);  y = x + drop(mixer(n))      (pass->branch = x_prev)
 *   backward: dx = dy;  pass->dbranch += norm'(mixer'(drop'(dy)))
 * The Mamba mixer applies its dropout itself (after out_proj, docs/models.md §3.4 step 13).
 * What differs between the kinds of mixer is one row of function pointers each (UNIT_OPS at
 * the end of the file); the norm, dropout and residual code around them is shared.
 * Letters (mtlab/backend.h): B rows, T positions, BT = B*T rows, C d_model, S source positions. */
#include "models/model_internal.h"

/* One kind of mixer: its sizes, tables, passes and caches. */
typedef struct {
    int (*width)(const mt_unit_config *cfg); /* d_model */
    int (*tensors)(const mt_unit_config *cfg, mt_tensor_spec *specs);
    size_t (*params_count)(const mt_unit_config *cfg);
    void (*params_point)(const mt_unit_config *cfg, mt_unit_params *p, float *base);
    /* floats of the mixer's activations for B rows of T queries over Tk keys (S: source) */
    size_t (*acts_count)(const mt_unit *u, int B, int T, int Tk, int S);
    void (*acts_point)(const mt_unit *u, mt_unit_acts *a, float *base, int B, int T, int Tk, int S);
    void (*forward)(const mt_backend *be, const mt_unit *u, mt_unit_acts *a, float *out,
                    const float *in, const mt_pass *pass);
    /* dx += mixer'(dout); for cross-attention pass->dmem receives the key/value side. */
    void (*backward)(const mt_backend *be, mt_unit *u, const mt_unit_acts *a, mt_unit_acts *da,
                     float *dx, const float *dout, const float *in, const mt_pass *pass);
    size_t (*cache_count)(const mt_unit *u, int B, int Tmax, int Smax);
    void (*cache_point)(const mt_unit *u, mt_unit_cache *c, float *base, int B, int Tmax, int Smax);
    float *(*cache_tensor)(const mt_unit *u, mt_unit_cache *c, int which, size_t *row,
                           size_t *used);
    void (*decode)(const mt_backend *be, const mt_unit *u, mt_unit_acts *a, mt_unit_cache *c,
                   float *out, const float *in, const mt_pass *pass);
    int own_dropout; /* 1: the mixer applies the unit's dropout itself (Mamba) */
} unit_ops;

int mt_unit_kv_slots(const mt_unit *u, int Tmax)
{
    if (u->kind != MT_UNIT_SELF_ATTN || u->cfg.attn.window <= 0) return Tmax;
    return u->cfg.attn.window < Tmax ? u->cfg.attn.window + 1 : Tmax;
}

/* Keys a self-attention unit attends over: Tk (training: T), except a sliding window when
 * decoding, which sees only its ring: the ring in a step, the ring's positions before a
 * prefill chunk and the chunk's own in a prefill (docs/decoding.md §1.1). */
static int attn_keys(const mt_unit *u, int T, int Tk)
{
    if (T == 1) return mt_unit_kv_slots(u, Tk);
    if (u->cfg.attn.window <= 0) return Tk;
    int ring = mt_unit_kv_slots(u, Tk) - 1 + T;
    return ring < Tk ? ring : Tk;
}

/* ---- attention (self and cross) */

static int attn_width(const mt_unit_config *cfg) { return cfg->attn.C; }
static int attn_tensors(const mt_unit_config *cfg, mt_tensor_spec *specs)
{
    return mt_attention_tensors(&cfg->attn, specs);
}
static size_t attn_params_count(const mt_unit_config *cfg)
{
    return mt_attention_params_count(&cfg->attn);
}
static void attn_params_point(const mt_unit_config *cfg, mt_unit_params *p, float *base)
{
    mt_attention_params_point(&p->attn, base, &cfg->attn);
}

static size_t self_acts_count(const mt_unit *u, int B, int T, int Tk, int S)
{
    return mt_attention_acts_count(&u->cfg.attn, B, T, attn_keys(u, T, Tk));
}
static void self_acts_point(const mt_unit *u, mt_unit_acts *a, float *base, int B, int T, int Tk,
                            int S)
{
    mt_attention_acts_point(&a->attn, base, &u->cfg.attn, B, T, attn_keys(u, T, Tk));
}
static size_t cross_acts_count(const mt_unit *u, int B, int T, int Tk, int S)
{
    return mt_attention_acts_count(&u->cfg.attn, B, T, S);
}
static void cross_acts_point(const mt_unit *u, mt_unit_acts *a, float *base, int B, int T, int Tk,
                             int S)
{
    mt_attention_acts_point(&a->attn, base, &u->cfg.attn, B, T, S);
}

static void self_forward(const mt_backend *be, const mt_unit *u, mt_unit_acts *a, float *out,
                         const float *in, const mt_pass *pass)
{
    mt_attn_call call = {
        .cfg = &u->cfg.attn, .B = pass->B, .Tq = pass->T, .Tk = pass->T, .key_mask = pass->mask};
    mt_attention_forward(be, out, &a->attn, in, in, &u->p.attn, &call);
}
static void cross_forward(const mt_backend *be, const mt_unit *u, mt_unit_acts *a, float *out,
                          const float *in, const mt_pass *pass)
{
    mt_attn_call call = {.cfg = &u->cfg.attn,
                         .B = pass->B,
                         .Tq = pass->T,
                         .Tk = pass->S,
                         .key_mask = pass->mem_mask};
    mt_attention_forward(be, out, &a->attn, in, pass->mem, &u->p.attn, &call);
}

/* The weight gradients a unit's backward accumulates into: the unit's own, or with
 * pass->input_grads_only a copy whose weight matrices and biases are NULL, so that each of the
 * layer's mt_linear_backward skips its dW product (the input gradients are the same; the
 * per-channel ones, norms, conv and scan parameters, stay). */
static mt_attn_params attn_grads(const mt_unit *u, const mt_pass *pass)
{
    mt_attn_params g = u->g.attn;
    if (pass->input_grads_only) g = (mt_attn_params){0};
    return g;
}
static mt_ffn_params ffn_grads(const mt_unit *u, const mt_pass *pass)
{
    mt_ffn_params g = u->g.ffn;
    if (pass->input_grads_only) g = (mt_ffn_params){0};
    return g;
}
static mt_gated_mlp_params mlp_grads(const mt_unit *u, const mt_pass *pass)
{
    mt_gated_mlp_params g = u->g.mlp;
    if (pass->input_grads_only) g = (mt_gated_mlp_params){0};
    return g;
}
static mt_mamba_params mamba_grads(const mt_unit *u, const mt_pass *pass)
{
    mt_mamba_params g = u->g.mamba;
    if (pass->input_grads_only)
        g.in_proj_w = g.in_proj_b = g.x_proj_w = g.dt_proj_w = g.out_proj_w = g.out_proj_b = NULL;
    return g;
}
static mt_retention_params ret_grads(const mt_unit *u, const mt_pass *pass)
{
    mt_retention_params g = u->g.ret;
    if (pass->input_grads_only) g = (mt_retention_params){0};
    return g;
}

static void self_backward(const mt_backend *be, mt_unit *u, const mt_unit_acts *a, mt_unit_acts *da,
                          float *dx, const float *dout, const float *in, const mt_pass *pass)
{
    mt_attn_call call = {
        .cfg = &u->cfg.attn, .B = pass->B, .Tq = pass->T, .Tk = pass->T, .key_mask = pass->mask};
    mt_attn_params g = attn_grads(u, pass);
    mt_attn_grads grads = {dx, dx, &g, &da->attn};
    mt_attention_backward(be, &grads, dout, &a->attn, in, in, &u->p.attn, &call);
}
static void cross_backward(const mt_backend *be, mt_unit *u, const mt_unit_acts *a,
                           mt_unit_acts *da, float *dx, const float *dout, const float *in,
                           const mt_pass *pass)
{
    mt_attn_call call = {.cfg = &u->cfg.attn,
                         .B = pass->B,
                         .Tq = pass->T,
                         .Tk = pass->S,
                         .key_mask = pass->mem_mask};
    mt_attn_params g = attn_grads(u, pass);
    mt_attn_grads grads = {dx, pass->dmem, &g, &da->attn};
    mt_attention_backward(be, &grads, dout, &a->attn, in, pass->mem, &u->p.attn, &call);
}

static size_t self_cache_count(const mt_unit *u, int B, int Tmax, int Smax)
{
    return mt_kv_cache_count(&u->cfg.attn, B, mt_unit_kv_slots(u, Tmax));
}
static void self_cache_point(const mt_unit *u, mt_unit_cache *c, float *base, int B, int Tmax,
                             int Smax)
{
    mt_kv_cache_point(&c->kv, base, &u->cfg.attn, B, mt_unit_kv_slots(u, Tmax));
}
static size_t cross_cache_count(const mt_unit *u, int B, int Tmax, int Smax)
{
    return mt_kv_cache_count(&u->cfg.attn, B, Smax);
}
static void cross_cache_point(const mt_unit *u, mt_unit_cache *c, float *base, int B, int Tmax,
                              int Smax)
{
    mt_kv_cache_point(&c->kv, base, &u->cfg.attn, B, Smax);
}
static float *attn_cache_tensor(const mt_unit *u, mt_unit_cache *c, int which, size_t *row,
                                size_t *used)
{
    /* the filled positions: len of them, or the whole ring once a window's ring has wrapped */
    int filled = c->kv.len < c->kv.Tmax ? c->kv.len : c->kv.Tmax;
    *row = (size_t)c->kv.Tmax * u->cfg.attn.C;
    *used = (size_t)filled * u->cfg.attn.C;
    return which == 0 ? c->kv.k : c->kv.v;
}

static void self_decode(const mt_backend *be, const mt_unit *u, mt_unit_acts *a, mt_unit_cache *c,
                        float *out, const float *in, const mt_pass *pass)
{
    mt_attn_call call = {.cfg = &u->cfg.attn,
                         .B = pass->B,
                         .Tq = pass->T,
                         .key_mask = pass->key_mask,
                         .key_ld = pass->key_ld,
                         .slot_mask = pass->first ? NULL : pass->slot_mask};
    if (u->cfg.attn.window > 0)
        mt_attention_ring_decode(be, out, &a->attn, in, &c->kv, &u->p.attn, &call);
    else mt_attention_decode(be, out, &a->attn, in, &c->kv, &u->p.attn, &call);
}
static void cross_decode(const mt_backend *be, const mt_unit *u, mt_unit_acts *a, mt_unit_cache *c,
                         float *out, const float *in, const mt_pass *pass)
{
    mt_attn_call call = {
        .cfg = &u->cfg.attn, .B = pass->B, .Tq = pass->T, .key_mask = pass->mem_mask};
    mt_attention_cross_decode(be, out, &a->attn, in, &c->kv, &u->p.attn, &call);
}

/* ---- the kinds without a decoding cache (FFN, gated MLP) */

static size_t no_cache_count(const mt_unit *u, int B, int Tmax, int Smax) { return 0; }
static void no_cache_point(const mt_unit *u, mt_unit_cache *c, float *base, int B, int Tmax,
                           int Smax)
{
}
static float *no_cache_tensor(const mt_unit *u, mt_unit_cache *c, int which, size_t *row,
                              size_t *used)
{
    return NULL;
}

/* ---- FFN */

static int ffn_width(const mt_unit_config *cfg) { return cfg->ffn.C; }
static int ffn_tensors(const mt_unit_config *cfg, mt_tensor_spec *specs)
{
    return mt_ffn_tensors(&cfg->ffn, specs);
}
static size_t ffn_params_count(const mt_unit_config *cfg) { return mt_ffn_params_count(&cfg->ffn); }
static void ffn_params_point(const mt_unit_config *cfg, mt_unit_params *p, float *base)
{
    mt_ffn_params_point(&p->ffn, base, &cfg->ffn);
}
static size_t ffn_acts_count(const mt_unit *u, int B, int T, int Tk, int S)
{
    return mt_ffn_acts_count(&u->cfg.ffn, (size_t)B * T);
}
static void ffn_acts_point(const mt_unit *u, mt_unit_acts *a, float *base, int B, int T, int Tk,
                           int S)
{
    mt_ffn_acts_point(&a->ffn, base, &u->cfg.ffn, (size_t)B * T);
}
static void ffn_forward(const mt_backend *be, const mt_unit *u, mt_unit_acts *a, float *out,
                        const float *in, const mt_pass *pass)
{
    mt_ffn_forward(be, out, &a->ffn, in, &u->p.ffn, &u->cfg.ffn, (size_t)pass->B * pass->T);
}
static void ffn_backward(const mt_backend *be, mt_unit *u, const mt_unit_acts *a, mt_unit_acts *da,
                         float *dx, const float *dout, const float *in, const mt_pass *pass)
{
    mt_ffn_params g = ffn_grads(u, pass);
    mt_ffn_backward(be, &(mt_ffn_grads){dx, &g, &da->ffn}, dout, &a->ffn, in, &u->p.ffn,
                    &u->cfg.ffn, (size_t)pass->B * pass->T);
}
static void ffn_decode(const mt_backend *be, const mt_unit *u, mt_unit_acts *a, mt_unit_cache *c,
                       float *out, const float *in, const mt_pass *pass)
{
    mt_ffn_forward(be, out, &a->ffn, in, &u->p.ffn, &u->cfg.ffn, (size_t)pass->B * pass->T);
}

/* ---- gated MLP */

static int mlp_width(const mt_unit_config *cfg) { return cfg->mlp.C; }
static int mlp_tensors(const mt_unit_config *cfg, mt_tensor_spec *specs)
{
    return mt_gated_mlp_tensors(&cfg->mlp, specs);
}
static size_t mlp_params_count(const mt_unit_config *cfg)
{
    return mt_gated_mlp_params_count(&cfg->mlp);
}
static void mlp_params_point(const mt_unit_config *cfg, mt_unit_params *p, float *base)
{
    mt_gated_mlp_params_point(&p->mlp, base, &cfg->mlp);
}
static size_t mlp_acts_count(const mt_unit *u, int B, int T, int Tk, int S)
{
    return mt_gated_mlp_acts_count(&u->cfg.mlp, (size_t)B * T);
}
static void mlp_acts_point(const mt_unit *u, mt_unit_acts *a, float *base, int B, int T, int Tk,
                           int S)
{
    mt_gated_mlp_acts_point(&a->mlp, base, &u->cfg.mlp, (size_t)B * T);
}
static void mlp_forward(const mt_backend *be, const mt_unit *u, mt_unit_acts *a, float *out,
                        const float *in, const mt_pass *pass)
{
    mt_gated_mlp_forward(be, out, &a->mlp, in, &u->p.mlp, &u->cfg.mlp, (size_t)pass->B * pass->T);
}
static void mlp_backward(const mt_backend *be, mt_unit *u, const mt_unit_acts *a, mt_unit_acts *da,
                         float *dx, const float *dout, const float *in, const mt_pass *pass)
{
    mt_gated_mlp_params g = mlp_grads(u, pass);
    mt_gated_mlp_backward(be, &(mt_gated_mlp_grads){dx, &g, &da->mlp}, dout, &a->mlp, in, &u->p.mlp,
                          &u->cfg.mlp, (size_t)pass->B * pass->T);
}
static void mlp_decode(const mt_backend *be, const mt_unit *u, mt_unit_acts *a, mt_unit_cache *c,
                       float *out, const float *in, const mt_pass *pass)
{
    mt_gated_mlp_forward(be, out, &a->mlp, in, &u->p.mlp, &u->cfg.mlp, (size_t)pass->B * pass->T);
}

/* ---- Mamba */

static int mamba_width(const mt_unit_config *cfg) { return cfg->mamba.d_model; }
static int mamba_tensors(const mt_unit_config *cfg, mt_tensor_spec *specs)
{
    return mt_mamba_tensors(&cfg->mamba, specs);
}
static size_t mamba_params_count(const mt_unit_config *cfg)
{
    return mt_mamba_params_count(&cfg->mamba);
}
static void mamba_params_point(const mt_unit_config *cfg, mt_unit_params *p, float *base)
{
    mt_mamba_params_point(&p->mamba, base, &cfg->mamba);
}
static size_t mamba_acts_count(const mt_unit *u, int B, int T, int Tk, int S)
{
    return mt_mamba_acts_count(&u->cfg.mamba, B, T);
}
static void mamba_acts_point(const mt_unit *u, mt_unit_acts *a, float *base, int B, int T, int Tk,
                             int S)
{
    mt_mamba_acts_point(&a->mamba, base, &u->cfg.mamba, B, T);
}
static void mamba_forward(const mt_backend *be, const mt_unit *u, mt_unit_acts *a, float *out,
                          const float *in, const mt_pass *pass)
{
    mt_mamba_call call = {
        .cfg = &u->cfg.mamba, .B = pass->B, .T = pass->T, .mask = pass->mask, .drop = pass->drop};
    mt_mamba_forward(be, out, &a->mamba, in, &u->p.mamba, &call);
}
static void mamba_backward(const mt_backend *be, mt_unit *u, const mt_unit_acts *a,
                           mt_unit_acts *da, float *dx, const float *dout, const float *in,
                           const mt_pass *pass)
{
    mt_mamba_call call = {
        .cfg = &u->cfg.mamba, .B = pass->B, .T = pass->T, .mask = pass->mask, .drop = pass->drop};
    mt_mamba_params g = mamba_grads(u, pass);
    mt_mamba_grads grads = {dx, &g, &da->mamba};
    mt_mamba_backward(be, &grads, dout, &a->mamba, in, &u->p.mamba, &call);
}
static size_t mamba_cache_count(const mt_unit *u, int B, int Tmax, int Smax)
{
    return mt_mamba_state_count(&u->cfg.mamba, B);
}
static void mamba_cache_point(const mt_unit *u, mt_unit_cache *c, float *base, int B, int Tmax,
                              int Smax)
{
    mt_mamba_state_point(&c->ms, base, &u->cfg.mamba, B);
}
static float *mamba_cache_tensor(const mt_unit *u, mt_unit_cache *c, int which, size_t *row,
                                 size_t *used)
{
    const mt_mamba_config *mc = &u->cfg.mamba;
    *row = *used = (size_t)mc->d_inner * (which == 0 ? mc->d_conv : mc->d_state);
    return which == 0 ? c->ms.conv : c->ms.ssm;
}
static void mamba_decode(const mt_backend *be, const mt_unit *u, mt_unit_acts *a, mt_unit_cache *c,
                         float *out, const float *in, const mt_pass *pass)
{
    if (pass->first)
        mt_mamba_forward(be, out, &a->mamba, in, &u->p.mamba,
                         &(mt_mamba_call){.cfg = &u->cfg.mamba,
                                          .B = pass->B,
                                          .T = pass->T,
                                          .mask = pass->mask,
                                          .state = &c->ms});
    else mt_mamba_step(be, out, &a->mamba, in, &u->p.mamba, &u->cfg.mamba, &c->ms, pass->B);
}

/* ---- retention */

static int ret_width(const mt_unit_config *cfg) { return cfg->ret.C; }
static int ret_tensors(const mt_unit_config *cfg, mt_tensor_spec *specs)
{
    return mt_retention_tensors(&cfg->ret, specs);
}
static size_t ret_params_count(const mt_unit_config *cfg)
{
    return mt_retention_params_count(&cfg->ret);
}
static void ret_params_point(const mt_unit_config *cfg, mt_unit_params *p, float *base)
{
    mt_retention_params_point(&p->ret, base, &cfg->ret);
}
static size_t ret_acts_count(const mt_unit *u, int B, int T, int Tk, int S)
{
    return mt_retention_acts_count(&u->cfg.ret, B, T);
}
static void ret_acts_point(const mt_unit *u, mt_unit_acts *a, float *base, int B, int T, int Tk,
                           int S)
{
    mt_retention_acts_point(&a->ret, base, &u->cfg.ret, B, T);
}
static void ret_forward(const mt_backend *be, const mt_unit *u, mt_unit_acts *a, float *out,
                        const float *in, const mt_pass *pass)
{
    mt_retention_call call = {.cfg = &u->cfg.ret, .B = pass->B, .T = pass->T, .mask = pass->mask};
    mt_retention_forward(be, out, &a->ret, in, &u->p.ret, &call);
}
static void ret_backward(const mt_backend *be, mt_unit *u, const mt_unit_acts *a, mt_unit_acts *da,
                         float *dx, const float *dout, const float *in, const mt_pass *pass)
{
    mt_retention_call call = {.cfg = &u->cfg.ret, .B = pass->B, .T = pass->T, .mask = pass->mask};
    mt_retention_params g = ret_grads(u, pass);
    mt_retention_grads grads = {dx, &g, &da->ret};
    mt_retention_backward(be, &grads, dout, &a->ret, in, &u->p.ret, &call);
}
static size_t ret_cache_count(const mt_unit *u, int B, int Tmax, int Smax)
{
    return mt_retention_state_count(&u->cfg.ret, B);
}
static void ret_cache_point(const mt_unit *u, mt_unit_cache *c, float *base, int B, int Tmax,
                            int Smax)
{
    mt_retention_state_point(&c->rs, base, &u->cfg.ret, B);
}
static float *ret_cache_tensor(const mt_unit *u, mt_unit_cache *c, int which, size_t *row,
                               size_t *used)
{
    const mt_retention_config *rc = &u->cfg.ret;
    *row = *used = which == 0 ? (size_t)rc->C * rc->V / rc->H : (size_t)rc->H;
    return which == 0 ? c->rs.kv : c->rs.scale;
}
static void ret_decode(const mt_backend *be, const mt_unit *u, mt_unit_acts *a, mt_unit_cache *c,
                       float *out, const float *in, const mt_pass *pass)
{
    if (pass->first)
        mt_retention_forward(be, out, &a->ret, in, &u->p.ret,
                             &(mt_retention_call){.cfg = &u->cfg.ret,
                                                  .B = pass->B,
                                                  .T = pass->T,
                                                  .mask = pass->mask,
                                                  .state = &c->rs});
    else mt_retention_step(be, out, &a->ret, in, &u->p.ret, &u->cfg.ret, &c->rs, pass->B);
}

static const unit_ops UNIT_OPS[] = {
    [MT_UNIT_SELF_ATTN] = {attn_width, attn_tensors, attn_params_count, attn_params_point,
                           self_acts_count, self_acts_point, self_forward, self_backward,
                           self_cache_count, self_cache_point, attn_cache_tensor, self_decode, 0},
    [MT_UNIT_CROSS_ATTN] = {attn_width, attn_tensors, attn_params_count, attn_params_point,
                            cross_acts_count, cross_acts_point, cross_forward, cross_backward,
                            cross_cache_count, cross_cache_point, attn_cache_tensor, cross_decode,
                            0},
    [MT_UNIT_FFN] = {ffn_width, ffn_tensors, ffn_params_count, ffn_params_point, ffn_acts_count,
                     ffn_acts_point, ffn_forward, ffn_backward, no_cache_count, no_cache_point,
                     no_cache_tensor, ffn_decode, 0},
    [MT_UNIT_GATED_MLP] = {mlp_width, mlp_tensors, mlp_params_count, mlp_params_point,
                           mlp_acts_count, mlp_acts_point, mlp_forward, mlp_backward,
                           no_cache_count, no_cache_point, no_cache_tensor, mlp_decode, 0},
    [MT_UNIT_MAMBA] = {mamba_width, mamba_tensors, mamba_params_count, mamba_params_point,
                       mamba_acts_count, mamba_acts_point, mamba_forward, mamba_backward,
                       mamba_cache_count, mamba_cache_point, mamba_cache_tensor, mamba_decode, 1},
    [MT_UNIT_RETENTION] = {ret_width, ret_tensors, ret_params_count, ret_params_point,
                           ret_acts_count, ret_acts_point, ret_forward, ret_backward,
                           ret_cache_count, ret_cache_point, ret_cache_tensor, ret_decode, 0},
};
_Static_assert(sizeof UNIT_OPS / sizeof UNIT_OPS[0] == MT_UNIT_KINDS,
               "UNIT_OPS needs one row per unit kind");

/* ---- the unit: norm, mixer, dropout and residual, whatever the kind */

int mt_unit_width(const mt_unit *u) { return UNIT_OPS[u->kind].width(&u->cfg); }

int mt_unit_tensors(mt_unit_kind kind, const mt_unit_config *cfg, mt_tensor_spec *specs)
{
    return UNIT_OPS[kind].tensors(cfg, specs);
}

size_t mt_unit_params_count(mt_unit_kind kind, const mt_unit_config *cfg)
{
    return UNIT_OPS[kind].params_count(cfg);
}

void mt_unit_params_point(mt_unit_kind kind, const mt_unit_config *cfg, mt_unit_params *p,
                          float *base)
{
    UNIT_OPS[kind].params_point(cfg, p, base);
}

/* Work layout: mixer acts, pre (BT, C), mean (BT), rstd (BT). */
size_t mt_unit_work_count(const mt_unit *u, int B, int T, int Tk, int S)
{
    size_t BT = (size_t)B * T;
    return UNIT_OPS[u->kind].acts_count(u, B, T, Tk, S) + BT * (size_t)mt_unit_width(u) + 2 * BT;
}

void mt_unit_work_point(const mt_unit *u, mt_unit_work *w, float *base, int B, int T, int Tk, int S)
{
    size_t BT = (size_t)B * T;
    const unit_ops *ops = &UNIT_OPS[u->kind];
    ops->acts_point(u, &w->a, base, B, T, Tk, S);
    float *p = base + ops->acts_count(u, B, T, Tk, S);
    w->pre = p;
    p += BT * (size_t)mt_unit_width(u);
    w->mean = p;
    w->rstd = p + BT;
}

/* Scratch layout: dn (BT, C), df (BT, C), the mixer's activation gradients. */
size_t mt_unit_scratch_count(const mt_unit *u, int B, int T, int S)
{
    size_t BT = (size_t)B * T;
    return 2 * BT * (size_t)mt_unit_width(u) + UNIT_OPS[u->kind].acts_count(u, B, T, T, S);
}

static void norm_forward(const mt_backend *be, const mt_unit *u, float *out, float *mean,
                         float *rstd, const float *x, size_t BT)
{
    int C = mt_unit_width(u);
    if (u->norm == MT_NORM_LAYER)
        mt_layernorm_forward(be, out, mean, rstd, x, u->norm_w, u->norm_b,
                             &(mt_norm_call){BT, C, u->eps});
    else mt_rmsnorm_forward(be, out, rstd, x, u->norm_w, &(mt_norm_call){BT, C, u->eps});
}

static void norm_backward(const mt_backend *be, mt_unit *u, float *dx, const float *dout,
                          const float *x, const mt_unit_work *w, size_t BT)
{
    int C = mt_unit_width(u);
    if (u->norm == MT_NORM_LAYER)
        mt_layernorm_backward(be, &(mt_weight_grads){dx, u->gnorm_w, u->gnorm_b}, dout, x,
                              u->norm_w, w->mean, w->rstd, &(mt_norm_call){.BT = BT, .C = C});
    else
        mt_rmsnorm_backward(be, &(mt_weight_grads){dx, u->gnorm_w, NULL}, dout, x, u->norm_w,
                            w->rstd, &(mt_norm_call){.BT = BT, .C = C});
}

static int dropping(const mt_dropout *drop) { return drop && drop->p > 0.0f; }

void mt_unit_forward(const mt_backend *be, const mt_unit *u, mt_unit_work *w, float *y,
                     const float *x, const mt_pass *pass)
{
    const unit_ops *ops = &UNIT_OPS[u->kind];
    size_t BT = (size_t)pass->B * pass->T, BTC = BT * (size_t)mt_unit_width(u);
    const float *in = x;
    float *f = u->post_norm ? w->pre : y;
    if (!u->post_norm) { /* before y is written: an inference stack's y may be x_prev's buffer */
        norm_forward(be, u, w->pre, w->mean, w->rstd, u->parallel ? pass->branch : x, BT);
        in = w->pre;
    }
    ops->forward(be, u, &w->a, f, in, pass);
    size_t row_len = (size_t)pass->T * (size_t)mt_unit_width(u);
    if (!ops->own_dropout && dropping(pass->drop))
        mt_dropout_forward(be, f, f, (size_t)pass->B, row_len, pass->drop);
    be->add(f, f, x, BTC);
    if (u->post_norm) norm_forward(be, u, y, w->mean, w->rstd, w->pre, BT);
}

void mt_unit_backward(const mt_backend *be, mt_unit *u, const mt_unit_work *w, float *dy,
                      const float *x, const mt_pass *pass, float *scratch)
{
    const unit_ops *ops = &UNIT_OPS[u->kind];
    const mt_dropout *drop = pass->drop;
    size_t BT = (size_t)pass->B * pass->T, BTC = BT * (size_t)mt_unit_width(u);
    float *dn = scratch, *dfbuf = scratch + BTC;
    mt_unit_acts da; /* each layer's backward zeroes the parts of da it accumulates into */
    ops->acts_point(u, &da, scratch + 2 * BTC, pass->B, pass->T, pass->T, pass->S);
    int unit_drop = !ops->own_dropout && dropping(drop);
    size_t row_len = (size_t)pass->T * (size_t)mt_unit_width(u);

    if (!u->post_norm) {
        const float *df = dy;
        if (unit_drop) {
            /* = its backward into zeros */
            mt_dropout_forward(be, dfbuf, dy, (size_t)pass->B, row_len, drop);
            df = dfbuf;
        }
        be->memzero(dn, BTC * sizeof(float));
        ops->backward(be, u, &w->a, &da, dn, df, w->pre, pass);
        if (u->parallel) norm_backward(be, u, pass->dbranch, dn, pass->branch, w, BT);
        else norm_backward(be, u, dy, dn, x, w, BT);
    } else {
        float *ds = dn;
        be->memzero(ds, BTC * sizeof(float));
        norm_backward(be, u, ds, dy, w->pre, w, BT);
        const float *df = ds;
        if (unit_drop) {
            mt_dropout_forward(be, dfbuf, ds, (size_t)pass->B, row_len, drop);
            df = dfbuf;
        }
        be->copy(dy, ds, BTC * sizeof(float));
        ops->backward(be, u, &w->a, &da, dy, df, x, pass);
    }
}

size_t mt_unit_cache_count(const mt_unit *u, int B, int Tmax, int Smax)
{
    return UNIT_OPS[u->kind].cache_count(u, B, Tmax, Smax);
}

void mt_unit_cache_point(const mt_unit *u, mt_unit_cache *c, float *base, int B, int Tmax, int Smax)
{
    UNIT_OPS[u->kind].cache_point(u, c, base, B, Tmax, Smax);
}

float *mt_unit_cache_tensor(const mt_unit *u, mt_unit_cache *c, int which, size_t *row,
                            size_t *used)
{
    *row = *used = 0;
    return UNIT_OPS[u->kind].cache_tensor(u, c, which, row, used);
}

void mt_unit_decode(const mt_backend *be, const mt_unit *u, mt_unit_work *w, mt_unit_cache *c,
                    float *y, const float *x, const mt_pass *pass)
{
    size_t BT = (size_t)pass->B * pass->T, BTC = BT * (size_t)mt_unit_width(u);
    const float *in = x;
    float *f = u->post_norm ? w->pre : y;
    if (!u->post_norm) {
        norm_forward(be, u, w->pre, w->mean, w->rstd, u->parallel ? pass->branch : x, BT);
        in = w->pre;
    }
    UNIT_OPS[u->kind].decode(be, u, &w->a, c, f, in, pass);
    be->add(f, f, x, BTC);
    if (u->post_norm) norm_forward(be, u, y, w->mean, w->rstd, w->pre, BT);
}
