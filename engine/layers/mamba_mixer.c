/* The Mamba v1 mixer (docs/models.md §3.4 and §3.6), forward, backward and the recurrent step.
 *   x = inp Wx^T ; z = inp Wz^T              (in_proj rows [0, D) and [D, 2D))
 *   x *= mask ; xc = conv1d(x) ; u = SiLU(xc) * mask
 *   dt_low, Bm, Cm = u Wdt^T, u WB^T, u WC^T (x_proj rows [0,R), [R,R+N), [R+N,R+2N))
 *   dt = dt_low dt_proj_w^T                  (dt_proj.bias is added inside the scan)
 *   y = scan(u, dt, A_log, Bm, Cm, D, dt_proj.bias) ; yg = y * SiLU(z)
 *   o = yg out_proj^T ; out = dropout(o)
 * (plus in_proj's and out_proj's biases with cfg->bias; conv1d's bias unless cfg->no_conv_bias)
 * With left padding, x and u are 0 on the pads, so Bm = Cm = dt_low = 0 there, every state
 * stays exactly 0 through the pads, and the real tokens see what an unpadded run sees. */
#include "layers/tensor_table.h"

void mt_mamba_config_default(mt_mamba_config *cfg, int d_model)
{
    cfg->d_model = d_model;
    cfg->d_inner = 2 * d_model;
    cfg->d_state = 16;
    cfg->d_conv = 4;
    cfg->dt_rank = (d_model + 15) / 16;
    cfg->bias = 0;
    cfg->no_conv_bias = 0;
}

/* The mixer's tensors in block order, listed once (p may be NULL when no pointers are made) */
static void walk(tensor_walk *w, const mt_mamba_config *cfg, mt_mamba_params *p)
{
    int C = cfg->d_model, D = cfg->d_inner, N = cfg->d_state, R = cfg->dt_rank;
    mt_mamba_params none;
    if (!p) p = &none;
    tensor_walk_row(w, &p->in_proj_w, "in_proj", ".weight", 1, TENSOR_SHAPE2(2 * D, C));
    tensor_walk_optional(w, cfg->bias, &p->in_proj_b, "in_proj", ".bias", 0, TENSOR_SHAPE1(2 * D));
    tensor_walk_row(w, &p->conv_w, "conv1d", ".weight", 1, TENSOR_SHAPE3(D, 1, cfg->d_conv));
    tensor_walk_optional(w, !cfg->no_conv_bias, &p->conv_b, "conv1d", ".bias", 0, TENSOR_SHAPE1(D));
    tensor_walk_row(w, &p->x_proj_w, "x_proj", ".weight", 1, TENSOR_SHAPE2(R + 2 * N, D));
    tensor_walk_row(w, &p->dt_proj_w, "dt_proj", ".weight", 1, TENSOR_SHAPE2(D, R));
    tensor_walk_row(w, &p->dt_proj_b, "dt_proj", ".bias", 0, TENSOR_SHAPE1(D));
    tensor_walk_row(w, &p->A_log, "A_log", "", 0, TENSOR_SHAPE2(D, N));
    tensor_walk_row(w, &p->D, "D", "", 0, TENSOR_SHAPE1(D));
    tensor_walk_row(w, &p->out_proj_w, "out_proj", ".weight", 1, TENSOR_SHAPE2(C, D));
    tensor_walk_optional(w, cfg->bias, &p->out_proj_b, "out_proj", ".bias", 0, TENSOR_SHAPE1(C));
}

int mt_mamba_tensors(const mt_mamba_config *cfg, mt_tensor_spec *specs)
{
    tensor_walk w = {.specs = specs};
    walk(&w, cfg, NULL);
    return w.n;
}

size_t mt_mamba_params_count(const mt_mamba_config *cfg)
{
    tensor_walk w = {0};
    walk(&w, cfg, NULL);
    return w.count;
}

float *mt_mamba_params_point(mt_mamba_params *p, float *base, const mt_mamba_config *cfg)
{
    tensor_walk w = {.base = base};
    walk(&w, cfg, p);
    return w.base;
}

size_t mt_mamba_acts_count(const mt_mamba_config *cfg, int B, int T)
{
    size_t BT = (size_t)B * T;
    return BT * (7 * (size_t)cfg->d_inner + cfg->dt_rank + 2 * (size_t)cfg->d_state + cfg->d_model);
}

float *mt_mamba_acts_point(mt_mamba_acts *a, float *base, const mt_mamba_config *cfg, int B, int T)
{
    size_t BT = (size_t)B * T, D = cfg->d_inner;
    tensor_table_take(&a->x, &base, BT * D, 1);
    tensor_table_take(&a->z, &base, BT * D, 1);
    tensor_table_take(&a->xc, &base, BT * D, 1);
    tensor_table_take(&a->u, &base, BT * D, 1);
    tensor_table_take(&a->dt_low, &base, BT * cfg->dt_rank, 1);
    tensor_table_take(&a->Bm, &base, BT * cfg->d_state, 1);
    tensor_table_take(&a->Cm, &base, BT * cfg->d_state, 1);
    tensor_table_take(&a->dt, &base, BT * D, 1);
    tensor_table_take(&a->y, &base, BT * D, 1);
    tensor_table_take(&a->yg, &base, BT * D, 1);
    tensor_table_take(&a->o, &base, BT * cfg->d_model, 1);
    return base;
}

size_t mt_mamba_state_count(const mt_mamba_config *cfg, int B)
{
    return (size_t)B * cfg->d_inner * (cfg->d_conv + cfg->d_state) +
           MT_SCAN_STEP_A_COUNT(cfg->d_inner, cfg->d_state);
}

float *mt_mamba_state_point(mt_mamba_state *s, float *base, const mt_mamba_config *cfg, int B)
{
    tensor_table_take(&s->conv, &base, (size_t)B * cfg->d_inner * cfg->d_conv, 1);
    tensor_table_take(&s->ssm, &base, (size_t)B * cfg->d_inner * cfg->d_state, 1);
    tensor_table_take(&s->A, &base, MT_SCAN_STEP_A_COUNT(cfg->d_inner, cfg->d_state), 1);
    s->len = 0;
    return base;
}

static mt_scan_args scan_args(const mt_mamba_acts *a, const mt_mamba_params *p,
                              const mt_mamba_config *cfg, int B, int T)
{
    mt_scan_args s = {
        .u = a->u,
        .dt = a->dt,
        .A_log = p->A_log,
        .Bm = a->Bm,
        .Cm = a->Cm,
        .Dskip = p->D,
        .dt_bias = p->dt_proj_b,
        .B = B,
        .T = T,
        .D = cfg->d_inner,
        .N = cfg->d_state,
    };
    return s;
}

/* x_proj with dt_low, Bm and Cm each landing contiguous (three products, or one where the
 * backend splits a bf16 product's output) */
static void x_proj_forward(const mt_backend *be, mt_mamba_acts *a, const mt_mamba_params *p,
                           const mt_mamba_config *cfg, size_t BT)
{
    int D = cfg->d_inner, R = cfg->dt_rank, N = cfg->d_state;
    const mt_out_parts parts = {3, {a->dt_low, a->Bm, a->Cm}, {R, N, N}};
    mt_linear_forward_parts(be, &parts, a->u, p->x_proj_w, NULL, BT, D);
    mt_linear_forward(be, a->dt, a->dt_low, p->dt_proj_w, NULL, BT, R, D);
}

/* The first K-1 conv outputs of a later prefill chunk see inputs of the chunk before, which
 * only the conv state holds: they come from the decoding step, which also advances the state
 * (enough when the chunk is shorter than K; otherwise the caller refills it from the chunk).
 * a->y and a->yg, written later, carry one position's input and output (B, D). */
static void conv_continue(const mt_backend *be, mt_mamba_acts *a, const mt_mamba_params *p,
                          const mt_mamba_config *cfg, mt_mamba_state *state, int B, int T)
{
    int D = cfg->d_inner, K = cfg->d_conv;
    for (int t = 0; t < T && t < K - 1; t++) {
        be->copy2d(a->y, D, a->x + (size_t)t * D, T * D, (size_t)B, D);
        be->conv1d_step(a->yg, state->conv, a->y, p->conv_w, p->conv_b, B, D, K);
        be->copy2d(a->xc + (size_t)t * D, T * D, a->yg, D, (size_t)B, D);
    }
}

void mt_mamba_forward(const mt_backend *be, float *out, mt_mamba_acts *a, const float *inp,
                      const mt_mamba_params *p, const mt_mamba_call *call)
{
    const mt_mamba_config *cfg = call->cfg;
    const uint8_t *mask = call->mask;
    mt_mamba_state *state = call->state;
    int B = call->B, T = call->T;
    size_t BT = (size_t)B * T;
    int C = cfg->d_model, D = cfg->d_inner;
    const mt_out_parts xz = {2, {a->x, a->z}, {D, D}};
    mt_linear_forward_parts(be, &xz, inp, p->in_proj_w, p->in_proj_b, BT, C);
    if (mask) be->mask_rows(a->x, mask, BT, D);
    be->conv1d_forward(a->xc, a->x, p->conv_w, p->conv_b, B, T, D, cfg->d_conv);
    int continuing = state && state->len > 0;
    if (continuing) conv_continue(be, a, p, cfg, state, B, T);
    if (state && (!continuing || T >= cfg->d_conv))
        be->conv1d_state_fill(state->conv, a->x, B, T, D, cfg->d_conv);
    be->act_forward(MT_ACT_SILU, a->u, a->xc, BT * D);
    if (mask) be->mask_rows(a->u, mask, BT, D);
    x_proj_forward(be, a, p, cfg, BT);
    mt_scan_args s = scan_args(a, p, cfg, B, T);
    if (continuing) s.h0 = state->ssm;
    if (state && !continuing && be->scan_step_A) be->scan_step_A(state->A, &s);
    be->scan_forward(a->y, state ? state->ssm : NULL, &s);
    if (state) state->len += T;
    be->gate_forward(a->yg, a->y, a->z, BT * D);
    mt_linear_forward(be, a->o, a->yg, p->out_proj_w, p->out_proj_b, BT, D, C);
    mt_dropout_forward(be, out, a->o, (size_t)B, (size_t)T * C, call->drop);
}

void mt_mamba_backward(const mt_backend *be, const mt_mamba_grads *grads, const float *dout,
                       const mt_mamba_acts *a, const float *inp, const mt_mamba_params *p,
                       const mt_mamba_call *call)
{
    const mt_mamba_config *cfg = call->cfg;
    const uint8_t *mask = call->mask;
    mt_mamba_params *g = grads->g;
    mt_mamba_acts *da = grads->da;
    float *dinp = grads->dinp;
    int B = call->B, T = call->T;
    size_t BT = (size_t)B * T;
    int C = cfg->d_model, D = cfg->d_inner, R = cfg->dt_rank, N = cfg->d_state;
    be->memzero(da->x, mt_mamba_acts_count(cfg, B, T) * sizeof(float)); /* da is one block */
    mt_dropout_backward(be, da->o, dout, (size_t)B, (size_t)T * C, call->drop);
    mt_linear_backward(be, &(mt_weight_grads){da->yg, g->out_proj_w, g->out_proj_b}, da->o, a->yg,
                       p->out_proj_w, BT, D, C);
    be->gate_backward(da->y, da->z, da->yg, a->y, a->z, BT * D);
    mt_scan_args s = scan_args(a, p, cfg, B, T);
    mt_scan_grads sg = {
        .du = da->u,
        .ddt = da->dt,
        .dA_log = g->A_log,
        .dBm = da->Bm,
        .dCm = da->Cm,
        .dDskip = g->D,
        .ddt_bias = g->dt_proj_b,
    };
    be->scan_backward(&sg, da->y, &s);
    mt_linear_backward(be, &(mt_weight_grads){da->dt_low, g->dt_proj_w, NULL}, da->dt, a->dt_low,
                       p->dt_proj_w, BT, R, D);
    mt_linear_backward(be, &(mt_weight_grads){da->u, g->x_proj_w, NULL}, da->dt_low, a->u,
                       p->x_proj_w, BT, D, R);
    float *gx = g->x_proj_w; /* NULL: no weight gradients (mt_pass input_grads_only) */
    mt_linear_backward(be, &(mt_weight_grads){da->u, gx ? gx + (size_t)R * D : NULL, NULL}, da->Bm,
                       a->u, p->x_proj_w + (size_t)R * D, BT, D, N);
    mt_linear_backward(be, &(mt_weight_grads){da->u, gx ? gx + (size_t)(R + N) * D : NULL, NULL},
                       da->Cm, a->u, p->x_proj_w + (size_t)(R + N) * D, BT, D, N);
    if (mask) be->mask_rows(da->u, mask, BT, D);
    be->act_backward(MT_ACT_SILU, da->xc, da->u, a->xc, BT * D);
    be->conv1d_backward(da->x, g->conv_w, g->conv_b, da->xc, a->x, p->conv_w, B, T, D, cfg->d_conv);
    if (mask) be->mask_rows(da->x, mask, BT, D);
    mt_linear_backward(be, &(mt_weight_grads){dinp, g->in_proj_w, g->in_proj_b}, da->x, inp,
                       p->in_proj_w, BT, C, D);
    float *dz_bias = g->in_proj_b ? g->in_proj_b + D : NULL;
    float *dz_w = g->in_proj_w ? g->in_proj_w + (size_t)D * C : NULL;
    mt_linear_backward(be, &(mt_weight_grads){dinp, dz_w, dz_bias}, da->z, inp,
                       p->in_proj_w + (size_t)D * C, BT, C, D);
}

/* The step as separate operations (the reference the backend's fused mamba_step equals) */
static void step_by_ops(const mt_backend *be, const mt_mamba_step_args *m, mt_mamba_acts *a,
                        const mt_mamba_params *p, const mt_mamba_config *cfg, const mt_scan_args *s)
{
    const float *inp = m->inp;
    float *out = m->out;
    int B = m->B;
    int C = cfg->d_model, D = cfg->d_inner;
    /* One row's x and z lie end to end (mt_mamba_acts_point): in_proj as one product of 2D
     * rows, one fork at two threads instead of two. Each output is the same dot product. */
    if (B == 1 && a->z == a->x + D) {
        mt_linear_forward(be, a->x, inp, p->in_proj_w, p->in_proj_b, 1, C, 2 * D);
    } else {
        const mt_out_parts parts = {2, {a->x, a->z}, {D, D}};
        mt_linear_forward_parts(be, &parts, inp, p->in_proj_w, p->in_proj_b, (size_t)B, C);
    }
    if (be->conv1d_step_silu) { /* one launch where a backend has it (CUDA) */
        be->conv1d_step_silu(a->xc, a->u, m->conv_state, a->x, p->conv_w, p->conv_b, B, D,
                             cfg->d_conv);
    } else {
        be->conv1d_step(a->xc, m->conv_state, a->x, p->conv_w, p->conv_b, B, D, cfg->d_conv);
        be->act_forward(MT_ACT_SILU, a->u, a->xc, (size_t)B * D);
    }
    x_proj_forward(be, a, p, cfg, (size_t)B);
    if (be->scan_step_gate) {
        be->scan_step_gate(a->y, a->yg, m->h, a->z, s);
    } else {
        be->scan_step(a->y, m->h, s);
        be->gate_forward(a->yg, a->y, a->z, (size_t)B * D);
    }
    mt_linear_forward(be, out, a->yg, p->out_proj_w, p->out_proj_b, (size_t)B, D, C);
}

/* 1 when the layer's products run in int8 or bf16 (a copy of in_proj that is not fp32) */
static int low_precision(const mt_backend *be, const float *in_proj_w, int C)
{
    int row0;
    const mt_qmatrix *q = be->qweights ? mt_qweights_find(be->qweights, in_proj_w, C, &row0) : NULL;
    return q && q->kind != MT_QMATRIX_F32P;
}

/* docs/models.md §3.6: the conv state takes the new x and the scan advances one step. A
 * backend with mamba_step runs it in one pass over the channels, in fp32 only: int8 and bf16
 * products go through mt_linear_forward's qweights. With fp32 panels (docs/decoding.md §9.3)
 * the pass still runs, on the fp32 matrices: at two threads its single region was worth more
 * than the panels (mamba-small, batch 1: 1,489 against 1,236 tokens/s; batch 16: 3,242 against
 * 3,080, medians of 4 interleaved runs). */
void mt_mamba_step(const mt_backend *be, float *out, mt_mamba_acts *a, const float *inp,
                   const mt_mamba_params *p, const mt_mamba_config *cfg, mt_mamba_state *state,
                   int B)
{
    mt_scan_args s = scan_args(a, p, cfg, B, 1);
    if (be->scan_step_A) {
        if (state->len == 0) be->scan_step_A(state->A, &s); /* a decode begun with a step */
        s.A_step = state->A;
    }
    mt_mamba_step_args m = {
        .B = B,
        .C = cfg->d_model,
        .D = cfg->d_inner,
        .N = cfg->d_state,
        .R = cfg->dt_rank,
        .K = cfg->d_conv,
        .inp = inp,
        .out = out,
        .in_proj_w = p->in_proj_w,
        .in_proj_b = p->in_proj_b,
        .conv_w = p->conv_w,
        .conv_b = p->conv_b,
        .x_proj_w = p->x_proj_w,
        .dt_proj_w = p->dt_proj_w,
        .out_proj_w = p->out_proj_w,
        .out_proj_b = p->out_proj_b,
        .conv_state = state->conv,
        .h = state->ssm,
        .x = a->x,
        .z = a->z,
        .xc = a->xc,
        .u = a->u,
        .dt_low = a->dt_low,
        .Bm = a->Bm,
        .Cm = a->Cm,
        .dt = a->dt,
        .y = a->y,
        .yg = a->yg,
        .A_log = p->A_log,
        .A_step = s.A_step,
        .Dskip = p->D,
        .dt_bias = p->dt_proj_b,
    };
    if (!(be->mamba_step && !low_precision(be, p->in_proj_w, cfg->d_model) && be->mamba_step(&m)))
        step_by_ops(be, &m, a, p, cfg, &s);
    state->len++;
}
