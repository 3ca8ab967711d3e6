/* A stack of residual units: embeddings in, units in order, optional final norm out.
 * Letters (mtlab/backend.h): B rows, T positions, BT = B*T rows, C d_model, S source positions. */
#include "models/model_internal.h"

#include <stdlib.h>

#include "mtlab/error.h"

/* The per-unit pointer arrays of sa, made once (both layouts point them into their block). */
static void stack_acts_alloc(const mt_stack *s, mt_stack_acts *sa)
{
    if (sa->w) return;
    sa->w = mt_xcalloc((size_t)s->n_units + 1, sizeof *sa->w);
    sa->xs = mt_xcalloc((size_t)s->n_units + 1, sizeof *sa->xs);
}

int mt_stack_has_parallel(const mt_stack *s)
{
    for (int i = 0; i < s->n_units; i++)
        if (s->units[i].parallel) return 1;
    return 0;
}

size_t mt_stack_scratch_count(const mt_stack *s, int B, int T, int S)
{
    size_t most = 0;
    for (int i = 0; i < s->n_units; i++) {
        size_t n = mt_unit_scratch_count(&s->units[i], B, T, S);
        if (n > most) most = n;
    }
    return most;
}

size_t mt_stack_acts_layout(const mt_stack *s, mt_stack_acts *sa, float *base, int B, int T, int Tk,
                            int S)
{
    stack_acts_alloc(s, sa);
    size_t BT = (size_t)B * T, BTC = BT * (size_t)s->C, off = 0;
    for (int i = 0; i <= s->n_units; i++) {
        if (base) sa->xs[i] = base + off;
        off += BTC;
    }
    for (int i = 0; i < s->n_units; i++) {
        if (base) mt_unit_work_point(&s->units[i], &sa->w[i], base + off, B, T, Tk, S);
        off += mt_unit_work_count(&s->units[i], B, T, Tk, S);
    }
    if (s->final_norm_tensor >= 0) {
        if (base) {
            sa->fn_out = base + off;
            sa->fn_mean = base + off + BTC;
            sa->fn_rstd = base + off + BTC + BT;
        }
        off += BTC + 2 * BT;
    }
    sa->dbranch = NULL;
    if (mt_stack_has_parallel(s)) {
        if (base) sa->dbranch = base + off;
        off += BTC;
    }
    return off;
}

size_t mt_stack_infer_layout(const mt_stack *s, mt_stack_acts *sa, float *base, int B, int T,
                             int Tk, int S)
{
    stack_acts_alloc(s, sa);
    size_t BT = (size_t)B * T, BTC = BT * (size_t)s->C, most = 0;
    for (int i = 0; i < s->n_units; i++) {
        size_t n = mt_unit_work_count(&s->units[i], B, T, Tk, S);
        if (n > most) most = n;
    }
    if (base) {
        for (int i = 0; i <= s->n_units; i++) sa->xs[i] = base + (size_t)(i % 2) * BTC;
        for (int i = 0; i < s->n_units; i++)
            mt_unit_work_point(&s->units[i], &sa->w[i], base + 2 * BTC, B, T, Tk, S);
        sa->fn_out = base + 2 * BTC + most;
        sa->fn_mean = sa->fn_out + BTC;
        sa->fn_rstd = sa->fn_mean + BT;
        sa->dbranch = NULL;
    }
    return 2 * BTC + most + BTC + 2 * BT;
}

void mt_stack_acts_free(mt_stack_acts *sa)
{
    free(sa->w);
    free(sa->xs);
    sa->w = NULL;
    sa->xs = NULL;
}

mt_dropout mt_stack_dropout(const mt_stack *s, int unit, int k, const mt_step_opts *opts, float p)
{
    mt_dropout d = {0};
    if (!opts || !opts->train || p <= 0.0f) return d;
    d.p = p;
    d.seed = opts->seed;
    d.step = opts->step;
    d.site = s->site_base + (uint32_t)(unit + 1) * 8u + (uint32_t)k;
    d.row0 = opts->row0;
    d.align_end = s->left_padded;
    return d;
}

void mt_stack_embed(const mt_model *m, const mt_stack *s, mt_stack_acts *sa, const int32_t *ids,
                    int B, int T, int pos0, const mt_dropout *drop)
{
    const mt_backend *be = m->be;
    size_t BT = (size_t)B * T;
    int embed = s->embed_tensor >= 0 ? s->embed_tensor : m->embed_tensor;
    const float *table = m->params + m->tensors[embed].offset;
    mt_embedding_forward(be, sa->xs[0], ids, table, BT, s->C, m->embed_scale);
    if (s->positions) mt_positions_add(be, sa->xs[0], m->pos, B, T, s->C, pos0);
    if (drop && drop->p > 0.0f)
        mt_dropout_forward(be, sa->xs[0], sa->xs[0], (size_t)B, (size_t)T * s->C, drop);
}

const float *mt_stack_final_norm(const mt_backend *be, const mt_stack *s, float *out, float *mean,
                                 float *rstd, const float *x, size_t BT)
{
    if (s->final_norm_tensor < 0) return x;
    if (s->final_norm == MT_NORM_LAYER)
        mt_layernorm_forward(be, out, mean, rstd, x, s->fn_w, s->fn_b,
                             &(mt_norm_call){BT, s->C, s->final_eps});
    else mt_rmsnorm_forward(be, out, rstd, x, s->fn_w, &(mt_norm_call){BT, s->C, s->final_eps});
    return out;
}

const float *mt_stack_forward(const mt_model *m, const mt_stack *s, mt_stack_acts *sa,
                              const mt_pass *pass)
{
    mt_pass unit = *pass;
    for (int i = 0; i < s->n_units; i++) {
        mt_dropout drop = mt_stack_dropout(s, i, 0, pass->opts, m->cfg.dropout);
        unit.drop = &drop;
        unit.branch = s->units[i].parallel ? sa->xs[i - 1] : NULL;
        mt_unit_forward(m->be, &s->units[i], &sa->w[i], sa->xs[i + 1], sa->xs[i], &unit);
    }
    return mt_stack_final_norm(m->be, s, sa->fn_out, sa->fn_mean, sa->fn_rstd, sa->xs[s->n_units],
                               (size_t)pass->B * pass->T);
}

void mt_stack_backward(mt_model *m, mt_stack *s, const mt_stack_acts *sa, float *dx,
                       const float *dout, const mt_pass *pass, float *scratch)
{
    const mt_backend *be = m->be;
    size_t BT = (size_t)pass->B * pass->T, BTC = BT * (size_t)s->C;
    if (s->final_norm_tensor >= 0) {
        be->memzero(dx, BTC * sizeof(float));
        const float *x = sa->xs[s->n_units];
        if (s->final_norm == MT_NORM_LAYER)
            mt_layernorm_backward(be, &(mt_weight_grads){dx, s->gfn_w, s->gfn_b}, dout, x, s->fn_w,
                                  sa->fn_mean, sa->fn_rstd, &(mt_norm_call){.BT = BT, .C = s->C});
        else
            mt_rmsnorm_backward(be, &(mt_weight_grads){dx, s->gfn_w, NULL}, dout, x, s->fn_w,
                                sa->fn_rstd, &(mt_norm_call){.BT = BT, .C = s->C});
    } else {
        be->copy(dx, dout, BTC * sizeof(float));
    }
    mt_pass unit = *pass;
    for (int i = s->n_units - 1; i >= 0; i--) {
        mt_dropout drop = mt_stack_dropout(s, i, 0, pass->opts, m->cfg.dropout);
        unit.drop = &drop;
        unit.branch = s->units[i].parallel ? sa->xs[i - 1] : NULL;
        unit.dbranch = sa->dbranch;
        if (s->units[i].parallel) be->memzero(sa->dbranch, BTC * sizeof(float));
        mt_unit_backward(be, &s->units[i], &sa->w[i], dx, sa->xs[i], &unit, scratch);
        /* dx is now the gradient of x_prev through this unit: add the parallel one's */
        if (i + 1 < s->n_units && s->units[i + 1].parallel) be->add(dx, dx, sa->dbranch, BTC);
        /* the unit's weights are done: range (decoder units, then encoder units, last first) of
         * mt_model_grad_ranges */
        const mt_step_opts *o = pass->opts;
        if (o && o->grads_ready)
            o->grads_ready(o->grads_ready_ud,
                           (s == &m->dec ? 0 : m->dec.n_units) + (s->n_units - 1 - i));
    }
}
