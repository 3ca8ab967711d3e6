/* Feed-forward blocks.
 * FFN:       pre = fc1 x ; act = f(pre) ; out = fc2 act
 * gated MLP: value = Wv x ; gate = Wg x ; hidden = value * SiLU(gate) ; out = Wd hidden */
#include "layers/tensor_table.h"

/* ---------------------------------------------------------------- FFN */
/* The FFN's tensors in block order, listed once (p may be NULL when no pointers are made) */
static void ffn_walk(tensor_walk *w, const mt_ffn_config *cfg, mt_ffn_params *p)
{
    const char *in = cfg->in_name ? cfg->in_name : "fc1";
    const char *out = cfg->out_name ? cfg->out_name : "fc2";
    mt_ffn_params none;
    if (!p) p = &none;
    tensor_walk_row(w, &p->fc1_w, in, ".weight", 1, TENSOR_SHAPE2(cfg->F, cfg->C));
    tensor_walk_optional(w, cfg->bias, &p->fc1_b, in, ".bias", 0, TENSOR_SHAPE1(cfg->F));
    tensor_walk_row(w, &p->fc2_w, out, ".weight", 1, TENSOR_SHAPE2(cfg->C, cfg->F));
    tensor_walk_optional(w, cfg->bias, &p->fc2_b, out, ".bias", 0, TENSOR_SHAPE1(cfg->C));
}

int mt_ffn_tensors(const mt_ffn_config *cfg, mt_tensor_spec *specs)
{
    tensor_walk w = {.specs = specs};
    ffn_walk(&w, cfg, NULL);
    return w.n;
}

size_t mt_ffn_params_count(const mt_ffn_config *cfg)
{
    tensor_walk w = {0};
    ffn_walk(&w, cfg, NULL);
    return w.count;
}

float *mt_ffn_params_point(mt_ffn_params *p, float *base, const mt_ffn_config *cfg)
{
    tensor_walk w = {.base = base};
    ffn_walk(&w, cfg, p);
    return w.base;
}

size_t mt_ffn_acts_count(const mt_ffn_config *cfg, size_t BT) { return 2 * BT * cfg->F; }

float *mt_ffn_acts_point(mt_ffn_acts *a, float *base, const mt_ffn_config *cfg, size_t BT)
{
    tensor_table_take(&a->pre, &base, BT * cfg->F, 1);
    tensor_table_take(&a->act, &base, BT * cfg->F, 1);
    return base;
}

void mt_ffn_forward(const mt_backend *be, float *out, mt_ffn_acts *a, const float *x,
                    const mt_ffn_params *p, const mt_ffn_config *cfg, size_t BT)
{
    mt_linear_forward(be, a->pre, x, p->fc1_w, p->fc1_b, BT, cfg->C, cfg->F);
    be->act_forward(cfg->act, a->act, a->pre, BT * cfg->F);
    mt_linear_forward(be, out, a->act, p->fc2_w, p->fc2_b, BT, cfg->F, cfg->C);
}

void mt_ffn_backward(const mt_backend *be, const mt_ffn_grads *grads, const float *dout,
                     const mt_ffn_acts *a, const float *x, const mt_ffn_params *p,
                     const mt_ffn_config *cfg, size_t BT)
{
    mt_ffn_params *g = grads->g;
    mt_ffn_acts *da = grads->da;
    size_t nf = BT * cfg->F;
    mt_linear_backward_first(be, &(mt_weight_grads){da->act, g->fc2_w, g->fc2_b}, dout, a->act,
                             p->fc2_w, BT, cfg->F, cfg->C);
    be->act_backward(cfg->act, da->pre, da->act, a->pre, nf);
    mt_linear_backward(be, &(mt_weight_grads){grads->dx, g->fc1_w, g->fc1_b}, da->pre, x, p->fc1_w,
                       BT, cfg->C, cfg->F);
}

/* ---------------------------------------------------------------- gated MLP
 * Memory order follows the tensor table of each layout:
 *   LLAMA  gate_proj, up_proj (value), down_proj
 *   RETNET fc1 (gate, SiLU side), gate (value), fc2
 *   FC1    fc1 = [value; gate] (2F, C), fc2 */
static void gated_walk(tensor_walk *w, const mt_gated_mlp_config *cfg, mt_gated_mlp_params *p)
{
    static const char *names[][3] = {
        [MT_GATED_LLAMA] = {"gate_proj", "up_proj", "down_proj"},
        [MT_GATED_RETNET] = {"fc1", "gate", "fc2"},
    };
    int C = cfg->C, F = cfg->F, b = cfg->bias;
    mt_gated_mlp_params none;
    if (!p) p = &none;
    if (cfg->layout == MT_GATED_FC1) { /* one fc1 tensor, its halves value and gate */
        tensor_walk_row(w, &p->value_w, "fc1", ".weight", 1, TENSOR_SHAPE2(2 * F, C));
        tensor_walk_optional(w, b, &p->value_b, "fc1", ".bias", 0, TENSOR_SHAPE1(2 * F));
        if (w->base) {
            p->gate_w = p->value_w + (size_t)F * C;
            p->gate_b = b ? p->value_b + F : NULL;
        }
        tensor_walk_row(w, &p->down_w, "fc2", ".weight", 1, TENSOR_SHAPE2(C, F));
        tensor_walk_optional(w, b, &p->down_b, "fc2", ".bias", 0, TENSOR_SHAPE1(C));
        return;
    }
    const char *const *name = names[cfg->layout];
    tensor_walk_row(w, &p->gate_w, name[0], ".weight", 1, TENSOR_SHAPE2(F, C));
    tensor_walk_optional(w, b, &p->gate_b, name[0], ".bias", 0, TENSOR_SHAPE1(F));
    tensor_walk_row(w, &p->value_w, name[1], ".weight", 1, TENSOR_SHAPE2(F, C));
    tensor_walk_optional(w, b, &p->value_b, name[1], ".bias", 0, TENSOR_SHAPE1(F));
    tensor_walk_row(w, &p->down_w, name[2], ".weight", 1, TENSOR_SHAPE2(C, F));
    tensor_walk_optional(w, b, &p->down_b, name[2], ".bias", 0, TENSOR_SHAPE1(C));
}

int mt_gated_mlp_tensors(const mt_gated_mlp_config *cfg, mt_tensor_spec *specs)
{
    tensor_walk w = {.specs = specs};
    gated_walk(&w, cfg, NULL);
    return w.n;
}

size_t mt_gated_mlp_params_count(const mt_gated_mlp_config *cfg)
{
    tensor_walk w = {0};
    gated_walk(&w, cfg, NULL);
    return w.count;
}

float *mt_gated_mlp_params_point(mt_gated_mlp_params *p, float *base,
                                 const mt_gated_mlp_config *cfg)
{
    tensor_walk w = {.base = base};
    gated_walk(&w, cfg, p);
    return w.base;
}

size_t mt_gated_mlp_acts_count(const mt_gated_mlp_config *cfg, size_t BT)
{
    return 3 * BT * cfg->F;
}

float *mt_gated_mlp_acts_point(mt_gated_mlp_acts *a, float *base, const mt_gated_mlp_config *cfg,
                               size_t BT)
{
    tensor_table_take(&a->value, &base, BT * cfg->F, 1);
    tensor_table_take(&a->gate, &base, BT * cfg->F, 1);
    tensor_table_take(&a->hidden, &base, BT * cfg->F, 1);
    return base;
}

void mt_gated_mlp_forward(const mt_backend *be, float *out, mt_gated_mlp_acts *a, const float *x,
                          const mt_gated_mlp_params *p, const mt_gated_mlp_config *cfg, size_t BT)
{
    mt_linear_forward(be, a->value, x, p->value_w, p->value_b, BT, cfg->C, cfg->F);
    mt_linear_forward(be, a->gate, x, p->gate_w, p->gate_b, BT, cfg->C, cfg->F);
    be->gate_forward(a->hidden, a->value, a->gate, BT * cfg->F);
    mt_linear_forward(be, out, a->hidden, p->down_w, p->down_b, BT, cfg->F, cfg->C);
}

void mt_gated_mlp_backward(const mt_backend *be, const mt_gated_mlp_grads *grads, const float *dout,
                           const mt_gated_mlp_acts *a, const float *x, const mt_gated_mlp_params *p,
                           const mt_gated_mlp_config *cfg, size_t BT)
{
    mt_gated_mlp_params *g = grads->g;
    mt_gated_mlp_acts *da = grads->da;
    float *dx = grads->dx;
    size_t nf = BT * cfg->F;
    mt_linear_backward_first(be, &(mt_weight_grads){da->hidden, g->down_w, g->down_b}, dout,
                             a->hidden, p->down_w, BT, cfg->F, cfg->C);
    be->gate_backward(da->value, da->gate, da->hidden, a->value, a->gate, nf);
    mt_linear_backward(be, &(mt_weight_grads){dx, g->value_w, g->value_b}, da->value, x, p->value_w,
                       BT, cfg->C, cfg->F);
    mt_linear_backward(be, &(mt_weight_grads){dx, g->gate_w, g->gate_b}, da->gate, x, p->gate_w, BT,
                       cfg->C, cfg->F);
}
