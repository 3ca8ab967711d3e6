/* Residual units: one mixer (attention, cross-attention, FFN, gated MLP, Mamba or retention)
 * with its norm, pre-norm or post-norm (model_internal.h), forward, backward and decoding.
 *
 * pre-norm:   n = norm(x);  f = drop(mixer(n));  y = x + f
 *   backward: dn = mixer'(drop'(dy));  dx = dy + norm'(dn)
 * post-norm:  s = x + drop(mixer(x));  y = norm(s)
 *   backward: ds = norm'(dy);  dx = ds + mixer'(drop'(ds))
 * The Mamba mixer applies its dropout itself (after out_proj, docs/models.md §3.4 step 13).
 * Letters: B rows, T positions, N = B*T, C d_model, S source positions. */
#include "models/model_internal.h"

int mt_unit_width(const mt_unit *u)
{
    switch (u->kind) {
    case MT_UNIT_SELF_ATTN:
    case MT_UNIT_CROSS_ATTN: return u->cfg.attn.C;
    case MT_UNIT_FFN: return u->cfg.ffn.C;
    case MT_UNIT_GATED_MLP: return u->cfg.mlp.C;
    case MT_UNIT_MAMBA: return u->cfg.mamba.d_model;
    case MT_UNIT_RETENTION: return u->cfg.ret.C;
    }
    return 0;
}

int mt_unit_tensors(mt_unit_kind kind, const mt_unit_config *cfg, mt_tensor_spec *specs)
{
    switch (kind) {
    case MT_UNIT_SELF_ATTN:
    case MT_UNIT_CROSS_ATTN: return mt_attention_tensors(&cfg->attn, specs);
    case MT_UNIT_FFN: return mt_ffn_tensors(&cfg->ffn, specs);
    case MT_UNIT_GATED_MLP: return mt_gated_mlp_tensors(&cfg->mlp, specs);
    case MT_UNIT_MAMBA: return mt_mamba_tensors(&cfg->mamba, specs);
    case MT_UNIT_RETENTION: return mt_retention_tensors(&cfg->ret, specs);
    }
    return 0;
}

size_t mt_unit_params_count(mt_unit_kind kind, const mt_unit_config *cfg)
{
    switch (kind) {
    case MT_UNIT_SELF_ATTN:
    case MT_UNIT_CROSS_ATTN: return mt_attention_params_count(&cfg->attn);
    case MT_UNIT_FFN: return mt_ffn_params_count(&cfg->ffn);
    case MT_UNIT_GATED_MLP: return mt_gated_mlp_params_count(&cfg->mlp);
    case MT_UNIT_MAMBA: return mt_mamba_params_count(&cfg->mamba);
    case MT_UNIT_RETENTION: return mt_retention_params_count(&cfg->ret);
    }
    return 0;
}

void mt_unit_params_point(mt_unit_kind kind, const mt_unit_config *cfg, mt_unit_params *p,
                          float *base)
{
    switch (kind) {
    case MT_UNIT_SELF_ATTN:
    case MT_UNIT_CROSS_ATTN: mt_attention_params_point(&p->attn, base, &cfg->attn); break;
    case MT_UNIT_FFN: mt_ffn_params_point(&p->ffn, base, &cfg->ffn); break;
    case MT_UNIT_GATED_MLP: mt_gated_mlp_params_point(&p->mlp, base, &cfg->mlp); break;
    case MT_UNIT_MAMBA: mt_mamba_params_point(&p->mamba, base, &cfg->mamba); break;
    case MT_UNIT_RETENTION: mt_retention_params_point(&p->ret, base, &cfg->ret); break;
    }
}

int mt_unit_kv_slots(const mt_unit *u, int Tmax)
{
    if (u->kind != MT_UNIT_SELF_ATTN || u->cfg.attn.window <= 0) return Tmax;
    return u->cfg.attn.window < Tmax ? u->cfg.attn.window + 1 : Tmax;
}

/* Keys a self-attention unit attends over: Tk, except a sliding window decoding one token,
 * which sees only its ring. */
static int attn_keys(const mt_unit *u, int T, int Tk)
{
    return T == 1 ? mt_unit_kv_slots(u, Tk) : Tk;
}

/* Floats of the mixer's activations. */
static size_t mixer_acts_count(const mt_unit *u, int B, int T, int Tk, int S)
{
    size_t N = (size_t)B * T;
    switch (u->kind) {
    case MT_UNIT_SELF_ATTN: return mt_attention_acts_count(&u->cfg.attn, B, T, attn_keys(u, T, Tk));
    case MT_UNIT_CROSS_ATTN: return mt_attention_acts_count(&u->cfg.attn, B, T, S);
    case MT_UNIT_FFN: return mt_ffn_acts_count(&u->cfg.ffn, N);
    case MT_UNIT_GATED_MLP: return mt_gated_mlp_acts_count(&u->cfg.mlp, N);
    case MT_UNIT_MAMBA: return mt_mamba_acts_count(&u->cfg.mamba, B, T);
    case MT_UNIT_RETENTION: return mt_retention_acts_count(&u->cfg.ret, B, T);
    }
    return 0;
}

static void mixer_acts_point(const mt_unit *u, mt_unit_acts *a, float *base, int B, int T, int Tk,
                             int S)
{
    size_t N = (size_t)B * T;
    switch (u->kind) {
    case MT_UNIT_SELF_ATTN:
        mt_attention_acts_point(&a->attn, base, &u->cfg.attn, B, T, attn_keys(u, T, Tk));
        break;
    case MT_UNIT_CROSS_ATTN: mt_attention_acts_point(&a->attn, base, &u->cfg.attn, B, T, S); break;
    case MT_UNIT_FFN: mt_ffn_acts_point(&a->ffn, base, &u->cfg.ffn, N); break;
    case MT_UNIT_GATED_MLP: mt_gated_mlp_acts_point(&a->mlp, base, &u->cfg.mlp, N); break;
    case MT_UNIT_MAMBA: mt_mamba_acts_point(&a->mamba, base, &u->cfg.mamba, B, T); break;
    case MT_UNIT_RETENTION: mt_retention_acts_point(&a->ret, base, &u->cfg.ret, B, T); break;
    }
}

/* Work layout: mixer acts, pre (N, C), mean (N), rstd (N). */
size_t mt_unit_work_count(const mt_unit *u, int B, int T, int Tk, int S)
{
    size_t N = (size_t)B * T;
    return mixer_acts_count(u, B, T, Tk, S) + N * (size_t)mt_unit_width(u) + 2 * N;
}

void mt_unit_work_point(const mt_unit *u, mt_unit_work *w, float *base, int B, int T, int Tk,
                        int S)
{
    size_t N = (size_t)B * T;
    mixer_acts_point(u, &w->a, base, B, T, Tk, S);
    float *p = base + mixer_acts_count(u, B, T, Tk, S);
    w->pre = p;
    p += N * (size_t)mt_unit_width(u);
    w->mean = p;
    w->rstd = p + N;
}

/* Scratch layout: dn (N, C), df (N, C), the mixer's activation gradients. */
size_t mt_unit_scratch_count(const mt_unit *u, int B, int T, int S)
{
    size_t N = (size_t)B * T;
    return 2 * N * (size_t)mt_unit_width(u) + mixer_acts_count(u, B, T, T, S);
}

static void norm_forward(const mt_backend *be, const mt_unit *u, float *out, float *mean,
                         float *rstd, const float *x, size_t N)
{
    int C = mt_unit_width(u);
    if (u->norm == MT_NORM_LAYER)
        mt_layernorm_forward(be, out, mean, rstd, x, u->norm_w, u->norm_b, N, C, u->eps);
    else
        mt_rmsnorm_forward(be, out, rstd, x, u->norm_w, N, C, u->eps);
}

static void norm_backward(const mt_backend *be, mt_unit *u, float *dx, const float *dout,
                          const float *x, const mt_unit_work *w, size_t N)
{
    int C = mt_unit_width(u);
    if (u->norm == MT_NORM_LAYER)
        mt_layernorm_backward(be, dx, u->gnorm_w, u->gnorm_b, dout, x, u->norm_w, w->mean,
                              w->rstd, N, C);
    else
        mt_rmsnorm_backward(be, dx, u->gnorm_w, dout, x, u->norm_w, w->rstd, N, C);
}

static int dropping(const mt_dropout *drop) { return drop && drop->p > 0.0f; }

static void mixer_forward(const mt_backend *be, const mt_unit *u, mt_unit_acts *a, float *out,
                          const float *in, const float *mem, const uint8_t *mask,
                          const uint8_t *mem_mask, int B, int T, int S, const mt_dropout *drop)
{
    size_t N = (size_t)B * T;
    switch (u->kind) {
    case MT_UNIT_SELF_ATTN:
        mt_attention_forward(be, out, &a->attn, in, in, mask, &u->p.attn, &u->cfg.attn, B, T, T);
        break;
    case MT_UNIT_CROSS_ATTN:
        mt_attention_forward(be, out, &a->attn, in, mem, mem_mask, &u->p.attn, &u->cfg.attn, B, T,
                             S);
        break;
    case MT_UNIT_FFN: mt_ffn_forward(be, out, &a->ffn, in, &u->p.ffn, &u->cfg.ffn, N); break;
    case MT_UNIT_GATED_MLP:
        mt_gated_mlp_forward(be, out, &a->mlp, in, &u->p.mlp, &u->cfg.mlp, N);
        break;
    case MT_UNIT_MAMBA:
        mt_mamba_forward(be, out, &a->mamba, in, mask, &u->p.mamba, &u->cfg.mamba, drop, NULL, B,
                         T);
        break;
    case MT_UNIT_RETENTION:
        mt_retention_forward(be, out, &a->ret, in, mask, &u->p.ret, &u->cfg.ret, NULL, B, T);
        break;
    }
}

void mt_unit_forward(const mt_backend *be, const mt_unit *u, mt_unit_work *w, float *y,
                     const float *x, const float *mem, const uint8_t *mask,
                     const uint8_t *mem_mask, int B, int T, int S, const mt_dropout *drop)
{
    size_t N = (size_t)B * T, NC = N * (size_t)mt_unit_width(u);
    const float *in = x;
    float *f = u->post_norm ? w->pre : y;
    if (!u->post_norm) {
        norm_forward(be, u, w->pre, w->mean, w->rstd, x, N);
        in = w->pre;
    }
    mixer_forward(be, u, &w->a, f, in, mem, mask, mem_mask, B, T, S, drop);
    if (u->kind != MT_UNIT_MAMBA && dropping(drop)) mt_dropout_forward(be, f, f, NC, drop);
    be->add(f, f, x, NC);
    if (u->post_norm) norm_forward(be, u, y, w->mean, w->rstd, w->pre, N);
}

/* dx += mixer'(dout); for cross-attention dmem receives the key/value side. */
static void mixer_backward(const mt_backend *be, mt_unit *u, const mt_unit_acts *a,
                           mt_unit_acts *da, float *dx, float *dmem, const float *dout,
                           const float *in, const float *mem, const uint8_t *mask,
                           const uint8_t *mem_mask, int B, int T, int S, const mt_dropout *drop)
{
    size_t N = (size_t)B * T;
    switch (u->kind) {
    case MT_UNIT_SELF_ATTN:
        mt_attention_backward(be, dx, dx, &u->g.attn, &da->attn, dout, &a->attn, in, in, mask,
                              &u->p.attn, &u->cfg.attn, B, T, T);
        break;
    case MT_UNIT_CROSS_ATTN:
        mt_attention_backward(be, dx, dmem, &u->g.attn, &da->attn, dout, &a->attn, in, mem,
                              mem_mask, &u->p.attn, &u->cfg.attn, B, T, S);
        break;
    case MT_UNIT_FFN:
        mt_ffn_backward(be, dx, &u->g.ffn, &da->ffn, dout, &a->ffn, in, &u->p.ffn, &u->cfg.ffn, N);
        break;
    case MT_UNIT_GATED_MLP:
        mt_gated_mlp_backward(be, dx, &u->g.mlp, &da->mlp, dout, &a->mlp, in, &u->p.mlp,
                              &u->cfg.mlp, N);
        break;
    case MT_UNIT_MAMBA:
        mt_mamba_backward(be, dx, &u->g.mamba, &da->mamba, dout, &a->mamba, in, mask,
                          &u->p.mamba, &u->cfg.mamba, drop, B, T);
        break;
    case MT_UNIT_RETENTION:
        mt_retention_backward(be, dx, &u->g.ret, &da->ret, dout, &a->ret, in, mask, &u->p.ret,
                              &u->cfg.ret, B, T);
        break;
    }
}

void mt_unit_backward(const mt_backend *be, mt_unit *u, const mt_unit_work *w, float *dy,
                      float *dmem, const float *x, const float *mem, const uint8_t *mask,
                      const uint8_t *mem_mask, int B, int T, int S, const mt_dropout *drop,
                      float *scratch)
{
    size_t N = (size_t)B * T, NC = N * (size_t)mt_unit_width(u);
    float *dn = scratch, *dfbuf = scratch + NC;
    size_t n_da = mixer_acts_count(u, B, T, T, S);
    mt_unit_acts da;
    mixer_acts_point(u, &da, scratch + 2 * NC, B, T, T, S);
    be->memzero(scratch + 2 * NC, n_da * sizeof(float));
    int unit_drop = u->kind != MT_UNIT_MAMBA && dropping(drop);

    if (!u->post_norm) {
        const float *df = dy;
        if (unit_drop) {
            be->memzero(dfbuf, NC * sizeof(float));
            mt_dropout_backward(be, dfbuf, dy, NC, drop);
            df = dfbuf;
        }
        be->memzero(dn, NC * sizeof(float));
        mixer_backward(be, u, &w->a, &da, dn, dmem, df, w->pre, mem, mask, mem_mask, B, T, S,
                       drop);
        norm_backward(be, u, dy, dn, x, w, N);
    } else {
        float *ds = dn;
        be->memzero(ds, NC * sizeof(float));
        norm_backward(be, u, ds, dy, w->pre, w, N);
        const float *df = ds;
        if (unit_drop) {
            be->memzero(dfbuf, NC * sizeof(float));
            mt_dropout_backward(be, dfbuf, ds, NC, drop);
            df = dfbuf;
        }
        be->copy(dy, ds, NC * sizeof(float));
        mixer_backward(be, u, &w->a, &da, dy, dmem, df, x, mem, mask, mem_mask, B, T, S, drop);
    }
}

size_t mt_unit_cache_count(const mt_unit *u, int B, int Tmax, int Smax)
{
    switch (u->kind) {
    case MT_UNIT_SELF_ATTN: return mt_kv_cache_count(&u->cfg.attn, B, mt_unit_kv_slots(u, Tmax));
    case MT_UNIT_CROSS_ATTN: return mt_kv_cache_count(&u->cfg.attn, B, Smax);
    case MT_UNIT_MAMBA: return mt_mamba_state_count(&u->cfg.mamba, B);
    case MT_UNIT_RETENTION: return mt_retention_state_count(&u->cfg.ret, B);
    case MT_UNIT_FFN:
    case MT_UNIT_GATED_MLP: return 0;
    }
    return 0;
}

void mt_unit_cache_point(const mt_unit *u, mt_unit_cache *c, float *base, int B, int Tmax,
                         int Smax)
{
    switch (u->kind) {
    case MT_UNIT_SELF_ATTN:
        mt_kv_cache_point(&c->kv, base, &u->cfg.attn, B, mt_unit_kv_slots(u, Tmax));
        break;
    case MT_UNIT_CROSS_ATTN: mt_kv_cache_point(&c->kv, base, &u->cfg.attn, B, Smax); break;
    case MT_UNIT_MAMBA: mt_mamba_state_point(&c->ms, base, &u->cfg.mamba, B); break;
    case MT_UNIT_RETENTION: mt_retention_state_point(&c->rs, base, &u->cfg.ret, B); break;
    case MT_UNIT_FFN:
    case MT_UNIT_GATED_MLP: break;
    }
}

float *mt_unit_cache_tensor(const mt_unit *u, mt_unit_cache *c, int which, size_t *row)
{
    *row = 0;
    switch (u->kind) {
    case MT_UNIT_SELF_ATTN:
    case MT_UNIT_CROSS_ATTN:
        *row = (size_t)c->kv.Tmax * u->cfg.attn.C;
        return which == 0 ? c->kv.k : c->kv.v;
    case MT_UNIT_MAMBA: {
        const mt_mamba_config *mc = &u->cfg.mamba;
        *row = (size_t)mc->d_inner * (which == 0 ? mc->d_conv : mc->d_state);
        return which == 0 ? c->ms.conv : c->ms.ssm;
    }
    case MT_UNIT_RETENTION: {
        const mt_retention_config *rc = &u->cfg.ret;
        *row = which == 0 ? (size_t)rc->C * rc->V / rc->H : (size_t)rc->H;
        return which == 0 ? c->rs.kv : c->rs.scale;
    }
    case MT_UNIT_FFN:
    case MT_UNIT_GATED_MLP: break;
    }
    return NULL;
}

static void mixer_decode(const mt_backend *be, const mt_unit *u, mt_unit_acts *a,
                         mt_unit_cache *c, float *out, const float *in, const uint8_t *key_mask,
                         const uint8_t *prompt_mask, const uint8_t *slot_mask,
                         const uint8_t *mem_mask, int B, int Tq, int first)
{
    size_t N = (size_t)B * Tq;
    switch (u->kind) {
    case MT_UNIT_SELF_ATTN:
        if (u->cfg.attn.window > 0)
            mt_attention_ring_decode(be, out, &a->attn, in, &c->kv, prompt_mask, slot_mask,
                                     &u->p.attn, &u->cfg.attn, B, Tq);
        else
            mt_attention_decode(be, out, &a->attn, in, &c->kv, key_mask, &u->p.attn,
                                &u->cfg.attn, B, Tq);
        break;
    case MT_UNIT_CROSS_ATTN:
        mt_attention_cross_decode(be, out, &a->attn, in, &c->kv, mem_mask, &u->p.attn,
                                  &u->cfg.attn, B, Tq);
        break;
    case MT_UNIT_FFN: mt_ffn_forward(be, out, &a->ffn, in, &u->p.ffn, &u->cfg.ffn, N); break;
    case MT_UNIT_GATED_MLP:
        mt_gated_mlp_forward(be, out, &a->mlp, in, &u->p.mlp, &u->cfg.mlp, N);
        break;
    case MT_UNIT_MAMBA:
        if (first)
            mt_mamba_forward(be, out, &a->mamba, in, prompt_mask, &u->p.mamba, &u->cfg.mamba, NULL,
                             &c->ms, B, Tq);
        else
            mt_mamba_step(be, out, &a->mamba, in, &u->p.mamba, &u->cfg.mamba, &c->ms, B);
        break;
    case MT_UNIT_RETENTION:
        if (first)
            mt_retention_forward(be, out, &a->ret, in, prompt_mask, &u->p.ret, &u->cfg.ret, &c->rs,
                                 B, Tq);
        else
            mt_retention_step(be, out, &a->ret, in, &u->p.ret, &u->cfg.ret, &c->rs, B);
        break;
    }
}

void mt_unit_decode(const mt_backend *be, const mt_unit *u, mt_unit_work *w, mt_unit_cache *c,
                    float *y, const float *x, const uint8_t *key_mask,
                    const uint8_t *prompt_mask, const uint8_t *slot_mask,
                    const uint8_t *mem_mask, int B, int Tq, int first)
{
    size_t N = (size_t)B * Tq, NC = N * (size_t)mt_unit_width(u);
    const float *in = x;
    float *f = u->post_norm ? w->pre : y;
    if (!u->post_norm) {
        norm_forward(be, u, w->pre, w->mean, w->rstd, x, N);
        in = w->pre;
    }
    mixer_decode(be, u, &w->a, c, f, in, key_mask, prompt_mask, slot_mask, mem_mask, B, Tq,
                 first);
    be->add(f, f, x, NC);
    if (u->post_norm) norm_forward(be, u, y, w->mean, w->rstd, w->pre, N);
}
