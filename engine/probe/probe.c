/* mt_probe_run: one parallel forward pass (no dropout) over the prompt and the hypothesis,
 * then the maps read from the activations the pass keeps for backward anyway (attention
 * probabilities; Mamba's scan inputs u, dt, B, C). Nothing here runs while decoding.
 * Letters (mtlab/backend.h): T decoder positions, S source positions, H heads, D Mamba
 * channels, N state. */
#include "mtlab/probe.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "models/model_internal.h"
#include "mtlab/error.h"

#define DEFAULT_GROUPS 8
#define DEFAULT_MAX_POSITIONS 1024

const char *mt_probe_kind_name(mt_probe_kind kind)
{
    static const char *const names[MT_PROBE_KINDS] = {
        "state norms", "state groups", "self-attention", "cross-attention", "implicit attention",
    };
    return kind >= 0 && kind < MT_PROBE_KINDS ? names[kind] : "?";
}

const char *mt_probe_map_name(const mt_probe_map *m)
{
    if (m->kind == MT_PROBE_SELF_ATTN && m->unit == MT_PROBE_UNIT_RETENTION) return "retention";
    if (m->kind == MT_PROBE_SELF_ATTN && m->window > 0) return "local window attention";
    return mt_probe_kind_name(m->kind);
}

int mt_probe_masked(const mt_probe_map *m, int r, int c)
{
    return (m->causal && c > r) || (m->window > 0 && c < r - m->window);
}

void mt_probe_record_free(mt_probe_record *r)
{
    for (int i = 0; i < r->n_maps; i++) free(r->maps[i].values);
    free(r->maps);
    free(r->tokens);
    free(r->src);
    memset(r, 0, sizeof *r);
}

/* A new map of r described by shape (kind, unit, layer, sizes, axes), its values zeroed. */
static mt_probe_map *add_map(mt_probe_record *r, const mt_probe_map *shape)
{
    r->maps = mt_xrealloc(r->maps, (size_t)(r->n_maps + 1) * sizeof *r->maps);
    mt_probe_map *m = &r->maps[r->n_maps++];
    *m = *shape;
    m->values = mt_xcalloc((size_t)m->heads * m->rows * m->cols, sizeof *m->values);
    return m;
}

/* A copy of n floats of backend memory on the host (malloc'd). */
static float *host_copy(const mt_backend *be, const float *src, size_t n)
{
    float *h = mt_xmalloc(n * sizeof *h);
    be->download(h, src, n * sizeof *h);
    return h;
}

typedef struct {
    const mt_probe_opts *o;
    int groups;
    float *norms; /* (Mamba layers of the decoder, T) collected for the state-norms map */
    int n_norm_layers;
} probe_ctx;

static int wants(const probe_ctx *c, mt_probe_kind k)
{
    return c->o->kinds == 0 || (c->o->kinds & (1u << k));
}

/* out (T, T) = mean over channels d of |alpha_d| (mtlab/probe.h). Channels are split over
 * the OpenMP threads, one T x T scratch each; the threads' partial sums are added in thread
 * order, so the result does not depend on scheduling. */
static void implicit_mean_abs(float *out, const mt_scan_args *s)
{
    int T = s->T, D = s->D, N = s->N;
    size_t TT = (size_t)T * T;
    int n_threads = omp_get_max_threads();
    float *parts = mt_xcalloc((size_t)n_threads * TT, sizeof *parts);
#pragma omp parallel num_threads(n_threads)
    {
        float *part = parts + (size_t)omp_get_thread_num() * TT;
        float *alpha = mt_xmalloc(TT * sizeof *alpha);
        float *dt_d = mt_xmalloc((size_t)T * sizeof *dt_d);
#pragma omp for schedule(static)
        for (int d = 0; d < D; d++) {
            for (int t = 0; t < T; t++) dt_d[t] = s->dt[(size_t)t * D + d];
            mt_scan_args one = *s; /* channel d alone */
            one.dt = dt_d, one.dt_bias = s->dt_bias + d, one.A_log = s->A_log + (size_t)d * N;
            one.D = 1;
            mt_implicit_attention(alpha, &one);
            for (size_t i = 0; i < TT; i++) part[i] += fabsf(alpha[i]);
        }
        free(alpha);
        free(dt_d);
    }
    for (int k = 0; k < n_threads; k++)
        for (size_t i = 0; i < TT; i++) out[i] += parts[(size_t)k * TT + i];
    for (size_t i = 0; i < TT; i++) out[i] /= (float)D;
    free(parts);
}

/* The maps of one Mamba unit over T positions (B = 1). */
static void mamba_maps(mt_probe_record *r, probe_ctx *c, const mt_model *m, const mt_unit *u,
                       const mt_unit_work *w, int layer, int encoder, int T)
{
    const mt_backend *be = m->be;
    const mt_mamba_config *cfg = &u->cfg.mamba;
    int D = cfg->d_inner, N = cfg->d_state, G = c->groups < D ? c->groups : D;
    const mt_mamba_acts *a = &w->a.mamba;
    float *uu = host_copy(be, a->u, (size_t)T * D), *dt = host_copy(be, a->dt, (size_t)T * D);
    float *Bm = host_copy(be, a->Bm, (size_t)T * N), *Cm = host_copy(be, a->Cm, (size_t)T * N);
    float *A_log = host_copy(be, u->p.mamba.A_log, (size_t)D * N);
    float *dt_bias = host_copy(be, u->p.mamba.dt_proj_b, (size_t)D);
    mt_scan_args scan = {.u = uu,
                         .dt = dt,
                         .A_log = A_log,
                         .Bm = Bm,
                         .Cm = Cm,
                         .dt_bias = dt_bias,
                         .B = 1,
                         .T = T,
                         .D = D,
                         .N = N};
    mt_probe_axis axis = encoder ? MT_PROBE_AXIS_SOURCE : MT_PROBE_AXIS_TARGET;
    if (wants(c, MT_PROBE_STATE_NORMS) || wants(c, MT_PROBE_STATE_GROUPS)) {
        float *norms = mt_xmalloc((size_t)T * sizeof *norms);
        float *groups = NULL;
        if (wants(c, MT_PROBE_STATE_GROUPS))
            groups = add_map(r, &(mt_probe_map){.kind = MT_PROBE_STATE_GROUPS,
                                                .unit = MT_PROBE_UNIT_MAMBA,
                                                .layer = layer,
                                                .encoder = encoder,
                                                .heads = 1,
                                                .rows = G,
                                                .cols = T,
                                                .row_axis = MT_PROBE_AXIS_GROUP,
                                                .col_axis = axis})
                         ->values;
        mt_state_norms(norms, groups, G, &scan);
        if (!encoder) {
            c->norms = mt_xrealloc(c->norms, (size_t)(c->n_norm_layers + 1) * T * sizeof *c->norms);
            memcpy(c->norms + (size_t)c->n_norm_layers++ * T, norms, (size_t)T * sizeof *norms);
        }
        free(norms);
    }
    if (wants(c, MT_PROBE_IMPLICIT_ATTN)) {
        /* alpha_d[r][c] is a sum over c <= r: the scan is causal */
        mt_probe_map *map = add_map(r, &(mt_probe_map){.kind = MT_PROBE_IMPLICIT_ATTN,
                                                       .unit = MT_PROBE_UNIT_MAMBA,
                                                       .layer = layer,
                                                       .encoder = encoder,
                                                       .heads = 1,
                                                       .rows = T,
                                                       .cols = T,
                                                       .row_axis = axis,
                                                       .col_axis = axis});
        map->causal = 1;
        implicit_mean_abs(map->values, &scan);
    }
    free(uu);
    free(dt);
    free(Bm);
    free(Cm);
    free(A_log);
    free(dt_bias);
}

/* The maps of every unit of a stack run over T positions (S source positions for
 * cross-attention). */
static void stack_maps(mt_probe_record *r, probe_ctx *c, const mt_model *m, const mt_stack *s,
                       const mt_stack_acts *sa, int encoder, int T, int S)
{
    int layer = -1;
    for (int i = 0; i < s->n_units; i++) {
        const mt_unit *u = &s->units[i];
        /* a self-attention or Mamba unit starts a layer; cross-attention and FFN units belong
         * to the layer before them */
        if (u->kind == MT_UNIT_SELF_ATTN || u->kind == MT_UNIT_MAMBA ||
            u->kind == MT_UNIT_RETENTION || layer < 0)
            layer++;
        mt_probe_axis own = encoder ? MT_PROBE_AXIS_SOURCE : MT_PROBE_AXIS_TARGET;
        if (u->kind == MT_UNIT_MAMBA) {
            mamba_maps(r, c, m, u, &sa->w[i], layer, encoder, T);
        } else if ((u->kind == MT_UNIT_SELF_ATTN || u->kind == MT_UNIT_RETENTION) &&
                   wants(c, MT_PROBE_SELF_ATTN)) {
            int ret = u->kind == MT_UNIT_RETENTION;
            int H = ret ? u->cfg.ret.H : u->cfg.attn.H;
            mt_probe_map *map = add_map(
                r, &(mt_probe_map){.kind = MT_PROBE_SELF_ATTN,
                                   .unit = ret ? MT_PROBE_UNIT_RETENTION : MT_PROBE_UNIT_ATTENTION,
                                   .layer = layer,
                                   .encoder = encoder,
                                   .heads = H,
                                   .rows = T,
                                   .cols = T,
                                   .row_axis = own,
                                   .col_axis = own});
            map->causal = ret || u->cfg.attn.causal;
            map->window = !ret && u->cfg.attn.causal ? u->cfg.attn.window : 0;
            size_t n = (size_t)H * T * T;
            m->be->download(map->values, ret ? sa->w[i].a.ret.att : sa->w[i].a.attn.att,
                            n * sizeof(float));
            /* retention weights are signed; their magnitude is what a heatmap compares */
            if (ret)
                for (size_t j = 0; j < n; j++) map->values[j] = fabsf(map->values[j]);
        } else if (u->kind == MT_UNIT_CROSS_ATTN && wants(c, MT_PROBE_CROSS_ATTN)) {
            int H = u->cfg.attn.H;
            mt_probe_map *map = add_map(r, &(mt_probe_map){.kind = MT_PROBE_CROSS_ATTN,
                                                           .unit = MT_PROBE_UNIT_ATTENTION,
                                                           .layer = layer,
                                                           .encoder = encoder,
                                                           .heads = H,
                                                           .rows = T,
                                                           .cols = S,
                                                           .row_axis = MT_PROBE_AXIS_TARGET,
                                                           .col_axis = MT_PROBE_AXIS_SOURCE});
            m->be->download(map->values, sa->w[i].a.attn.att, (size_t)H * T * S * sizeof(float));
        }
    }
}

int mt_probe_run(mt_model *m, const int32_t *src, int src_len, const int32_t *hyp, int hyp_len,
                 const mt_probe_opts *o, mt_probe_record *out)
{
    memset(out, 0, sizeof *out);
    mt_probe_opts defaults = {0};
    if (!o) o = &defaults;
    int max_pos = o->max_positions > 0 ? o->max_positions : DEFAULT_MAX_POSITIONS;
    const mt_model_config *cfg = &m->cfg;
    int encdec = m->arch->encdec;
    if (src_len < 0 || hyp_len < 0 || (src_len > 0 && !src) || (hyp_len > 0 && !hyp))
        return mt_error("probes: bad source or hypothesis (%d and %d tokens)", src_len, hyp_len);
    /* decoder-only: `src <sep> hyp` (a text template holds its separator in src); encoder-
     * decoder: source `src <eos>`, decoder `<bos> hyp` */
    int sep = mt_model_config_prompt_sep(cfg);
    int T = encdec ? 1 + hyp_len : src_len + (sep >= 0) + hyp_len;
    int S = encdec ? src_len + 1 : 0;
    if (T > max_pos || S > max_pos)
        return mt_error("probes: %d positions exceed the limit of %d", T > S ? T : S, max_pos);
    out->tokens = mt_xmalloc((size_t)T * sizeof *out->tokens);
    out->n_tokens = T;
    if (encdec) {
        out->src = mt_xmalloc((size_t)S * sizeof *out->src);
        out->n_src = S;
        if (src_len > 0) memcpy(out->src, src, (size_t)src_len * sizeof *src);
        out->src[src_len] = cfg->eos_id;
        out->tokens[0] = cfg->decoder_start_id;
        out->n_prompt = 1;
    } else {
        if (src_len > 0) memcpy(out->tokens, src, (size_t)src_len * sizeof *src);
        if (sep >= 0) out->tokens[src_len] = sep;
        out->n_prompt = src_len + (sep >= 0);
    }
    /* an empty source or translation may come as NULL, which memcpy must not get even for 0 */
    if (hyp_len > 0) memcpy(out->tokens + out->n_prompt, hyp, (size_t)hyp_len * sizeof *hyp);
    mt_batch b = {.B = 1, .T = T, .ids = out->tokens, .S = S, .src = out->src};
    if (mt_model_prepare(m, &b) != 0) {
        mt_error_context("probes");
        mt_probe_record_free(out);
        return -1;
    }
    mt_model_run_forward(m, NULL, 0);
    probe_ctx c = {o, o->groups > 0 ? o->groups : DEFAULT_GROUPS, NULL, 0};
    out->groups = c.groups;
    stack_maps(out, &c, m, &m->dec, &m->dec_acts, 0, T, S);
    if (encdec) stack_maps(out, &c, m, &m->enc, &m->enc_acts, 1, S, 0);
    if (c.n_norm_layers > 0 && wants(&c, MT_PROBE_STATE_NORMS)) {
        mt_probe_map *map = add_map(out, &(mt_probe_map){.kind = MT_PROBE_STATE_NORMS,
                                                         .unit = MT_PROBE_UNIT_MODEL,
                                                         .layer = -1,
                                                         .heads = 1,
                                                         .rows = c.n_norm_layers,
                                                         .cols = T,
                                                         .row_axis = MT_PROBE_AXIS_LAYER,
                                                         .col_axis = MT_PROBE_AXIS_TARGET});
        memcpy(map->values, c.norms, (size_t)c.n_norm_layers * T * sizeof *c.norms);
    }
    free(c.norms);
    return 0;
}
