/* `mamba-encdec`: the paper's Mamba encoder-decoder (docs/models.md §9.2; ssm-mt
 * models/hybrids/mamba_encdec.py).
 *   encoder: own token embedding, encoder_layers causal pre-norm Mamba blocks, norm_f
 *   decoder: token embedding tied to the output projection, decoder_layers blocks of three
 *            pre-norm units (no decoder self-attention):
 *              h = x + Mamba(RMSNorm(x))
 *              h = h + CrossAttn(RMSNorm(h), encoder output)   8 heads, no biases
 *              y = h + fc2(value * SiLU(gate))                  [value; gate] = fc1 h (+ bias)
 *            and norm_f.
 * Source `src <eos>` and target `<bos> tgt <eos>` are right padded (model.h). Tensor names
 * follow the MixerModel layout: {encoder,decoder}.layers.i.{mixer,norm}, i counting blocks
 * (the decoder's Mamba / cross-attention / MLP at 3l, 3l + 1, 3l + 2). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "models/model_internal.h"
#include "mtlab/error.h"

static int build(mt_model *m)
{
    const mt_model_config *c = &m->cfg;
    int C = c->d_model;
    int shape[2] = {c->vocab_size, C};
    m->enc.embed_tensor = mt_model_add_tensor(m, "encoder.embeddings.weight", 2, shape, 1, 0);
    mt_model_add_embeddings(m, "decoder.embeddings.weight", "lm_head.weight");
    mt_unit_config mixer = {.mamba = mt_mamba_mixer_config(c)};
    mt_unit_config cross = {.attn = {.C = C, .H = c->n_heads, .out_name = "o_proj"}};
    mt_unit_config mlp = {.mlp = {.C = C, .F = c->ffn_dim, .bias = 1, .layout = MT_GATED_FC1}};
    char prefix[MT_NAME_MAX], norm[MT_NAME_MAX];
    const mt_unit_norm rms = {.kind = MT_NORM_RMS, .name = norm, .eps = c->norm_eps};
    for (int l = 0; l < c->n_encoder_layers; l++) {
        snprintf(prefix, sizeof prefix, "encoder.layers.%d.mixer.", l);
        snprintf(norm, sizeof norm, "encoder.layers.%d.norm", l);
        mt_model_add_unit(m, &m->enc, MT_UNIT_MAMBA, &mixer, prefix, &rms)->layer = l;
    }
    mt_model_add_final_norm(m, &m->enc, MT_NORM_RMS, "encoder.norm_f", c->norm_eps);
    const mt_unit_kind kinds[3] = {MT_UNIT_MAMBA, MT_UNIT_CROSS_ATTN, MT_UNIT_GATED_MLP};
    const mt_unit_config *cfgs[3] = {&mixer, &cross, &mlp};
    for (int l = 0; l < c->n_layers; l++)
        for (int k = 0; k < 3; k++) {
            snprintf(prefix, sizeof prefix, "decoder.layers.%d.mixer.", 3 * l + k);
            snprintf(norm, sizeof norm, "decoder.layers.%d.norm", 3 * l + k);
            mt_model_add_unit(m, &m->dec, kinds[k], cfgs[k], prefix, &rms)->layer = l;
        }
    mt_model_add_final_norm(m, &m->dec, MT_NORM_RMS, "decoder.norm_f", c->norm_eps);
    return 0;
}

/* ssm-mt MixerModel initialisation per stack: embeddings N(0, init_std); Mamba blocks as
 * mamba_ssm; every `out_proj.weight` and `fc2.weight` rescaled by 1/sqrt(blocks of the
 * stack); other Linear weights PyTorch's default, their biases 0; norm gains 1. */
static void init_stack(mt_model *m, const mt_stack *s, float *host, uint64_t seed, uint64_t stream)
{
    int C = m->cfg.d_model;
    float out_scale = 1.0f / sqrtf((float)s->n_units);
    mt_rng r;
    for (int i = 0; i < s->n_units; i++) {
        const mt_unit *u = &s->units[i];
        mt_unit_params p;
        mt_unit_params_point(u->kind, &u->cfg, &p, host + m->tensors[u->first_tensor].offset);
        mt_rng_init(&r, seed, stream + (uint64_t)i);
        if (u->kind == MT_UNIT_MAMBA) {
            mt_mamba_init(&r, &p.mamba, &u->cfg.mamba, out_scale);
        } else if (u->kind == MT_UNIT_CROSS_ATTN) {
            mt_init_linear_default(&r, p.attn.q_w, NULL, C, C);
            mt_init_linear_default(&r, p.attn.k_w, NULL, C, C);
            mt_init_linear_default(&r, p.attn.v_w, NULL, C, C);
            mt_init_linear_default(&r, p.attn.o_w, NULL, C, C);
        } else {
            int F = u->cfg.mlp.F;
            /* fc1 = [value; gate] (2F, C) in one block */
            mt_init_linear_default(&r, p.mlp.value_w, NULL, 2 * F, C);
            mt_init_linear_default(&r, p.mlp.down_w, NULL, C, F);
            for (size_t j = 0; j < (size_t)C * F; j++) p.mlp.down_w[j] *= out_scale;
        }
    }
}

static void init(mt_model *m, float *host, uint64_t seed)
{
    const mt_model_config *c = &m->cfg;
    size_t VC = (size_t)c->vocab_size * c->d_model;
    mt_rng r;
    mt_rng_init(&r, seed, 0);
    mt_init_normal(&r, mt_model_host_tensor(m, host, m->enc.embed_tensor), VC, c->init_std);
    mt_model_init_embeddings(m, host, seed, 1, c->init_std);
    init_stack(m, &m->enc, host, seed, 3);
    init_stack(m, &m->dec, host, seed, 3 + (uint64_t)m->enc.n_units);
    mt_model_init_norms(m, host);
}

/* the keys beside MambaConfig's (mt_mamba_keys), in the order config.json holds them */
static const mt_config_key keys[] = {
    MT_CFG_CONST_STRING("model_type", "mamba-encdec"),
    MT_CFG_CONST_BOOL("is_encoder_decoder", 1),
    MT_CFG_INT("encoder_layers", n_encoder_layers, 1, 1024),
    MT_CFG_INT("decoder_layers", n_layers, 1, 1024),
    MT_CFG_INT_OR("num_attention_heads", n_heads, 8, 1, 1 << 12),
    MT_CFG_INT("decoder_ffn_dim", ffn_dim, 1, 1 << 18),
    MT_CFG_TOKEN_ID("decoder_start_token_id", decoder_start_id),
    MT_CFG_END,
};

static int check(const mt_model_config *c)
{
    if (mt_mamba_keys_check(c)) return -1;
    if (c->n_encoder_layers <= 0 || c->n_encoder_layers > 1024)
        return mt_error("mamba-encdec config: encoder_layers %d must be in 1..1024",
                        c->n_encoder_layers);
    if (c->n_heads <= 0 || c->d_model % c->n_heads)
        return mt_error("mamba-encdec config: %d attention heads do not divide hidden_size %d",
                        c->n_heads, c->d_model);
    if (c->ffn_dim <= 0 || c->ffn_dim > (1 << 18))
        return mt_error("mamba-encdec config: decoder_ffn_dim %d must be in 1..%d", c->ffn_dim,
                        1 << 18);
    return 0;
}

/* the paper's 8 Mamba encoder layers, 6 decoder blocks, d_model 512, MLP 2048 (~82M); the demo's
 * 4 + 3, d_model 152, MLP 608; 8 heads */
static void preset(mt_model_config *c, int small)
{
    int C = small ? 152 : 512;
    mt_mamba_preset(c, C, small ? 3 : 6);
    c->n_encoder_layers = small ? 4 : 8;
    c->n_heads = 8;
    c->ffn_dim = 4 * C;
}

const mt_arch mt_arch_mamba_encdec = {
    .name = "mamba-encdec",
    .hf_class = NULL,
    .model_type = "mamba-encdec",
    .encdec = 1,
    .build = build,
    .init = init,
    .check = check,
    .keys = {{mt_mamba_keys, "Mamba"}, {keys, "mamba-encdec"}},
    .mtlab_dropout = 1,
    .preset = preset,
    .layout_keys = MT_LAYOUT_HEADS,
};
