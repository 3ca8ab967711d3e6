/* `retnet`: the paper's decoder-only RetNet (docs/models.md §7; torchscale RetNetDecoder as ssm-mt
 * configures it): token embedding times sqrt(E), per layer two pre-norm units
 *   h = x + MSR(RMSNorm(x))        multi-scale retention (engine/layers/retention.c)
 *   y = h + GLU(RMSNorm(h))        fc2(SiLU(fc1 h) * gate h), no biases
 * a final RMSNorm and an untied output projection. No Hugging Face class exists: tensor
 * names are torchscale's under "decoder.", config keys torchscale's RetNetConfig names. */
#include <math.h>
#include <string.h>

#include "models/model_internal.h"
#include "mtlab/error.h"

static int build(mt_model *m)
{
    const mt_model_config *c = &m->cfg;
    int E = c->d_model;
    mt_model_add_embeddings(m, "decoder.embed_tokens.weight", "decoder.output_projection.weight");
    m->embed_scale = c->scale_embedding ? sqrtf((float)E) : 1.0f;
    m->rope_dim = E / c->n_heads;
    m->rope_base = 10000.0f;
    m->rope_kind = MT_ROPE_RETNET;
    mt_unit_config ret = {.ret = {.C = E, .H = c->n_heads, .V = c->value_dim, .eps = c->norm_eps}};
    mt_unit_config glu = {.mlp = {.C = E, .F = c->ffn_dim, .layout = MT_GATED_RETNET}};
    const mt_decoder_layers layers = {
        .layers = "decoder.layers",
        .kind = {MT_UNIT_RETENTION, MT_UNIT_GATED_MLP},
        .cfg = {&ret, &glu},
        .unit = {"retention.", "ffn."},
        .norm = {"retention_layer_norm", "final_layer_norm"},
        .norm_kind = MT_NORM_RMS,
        .eps = c->norm_eps,
    };
    mt_model_add_decoder_layers(m, &layers);
    mt_model_add_final_norm(m, &m->dec, MT_NORM_RMS, "decoder.layer_norm", c->norm_eps);
    return 0;
}

/* torchscale: embedding and output projection N(0, E^-1/2); retention q/k/v/g xavier with
 * gain 2^-2.5 and out_proj gain 1 (ssm-mt's copy); GLU linears PyTorch's default; gains 1. */
static void init(mt_model *m, float *host, uint64_t seed)
{
    const mt_model_config *c = &m->cfg;
    int E = c->d_model;
    mt_model_init_embeddings(m, host, seed, 0, 1.0f / sqrtf((float)E));
    mt_rng r;
    for (int i = 0; i < m->dec.n_units; i++) {
        const mt_unit *u = &m->dec.units[i];
        mt_unit_params p;
        mt_unit_params_point(u->kind, &u->cfg, &p, host + m->tensors[u->first_tensor].offset);
        mt_rng_init(&r, seed, 2 + (uint64_t)i);
        if (u->kind == MT_UNIT_RETENTION) {
            mt_retention_init(&r, &p.ret, &u->cfg.ret, 1.0f);
        } else {
            int F = u->cfg.mlp.F;
            mt_init_linear_default(&r, p.mlp.gate_w, NULL, F, E);
            mt_init_linear_default(&r, p.mlp.value_w, NULL, F, E);
            mt_init_linear_default(&r, p.mlp.down_w, NULL, E, F);
        }
    }
    mt_model_init_norms(m, host);
}

/* torchscale's RetNetConfig keys, in the order config.json holds them; the last three are
 * checked when present and not written */
static const mt_config_key keys[] = {
    MT_CFG_CONST_STRING("model_type", "retnet"),
    MT_CFG_INT("decoder_embed_dim", d_model, 1, 1 << 16),
    MT_CFG_INT("decoder_value_embed_dim", value_dim, 1, 1 << 17),
    MT_CFG_INT("decoder_retention_heads", n_heads, 1, MT_RETENTION_MAX_HEADS),
    MT_CFG_INT("decoder_ffn_embed_dim", ffn_dim, 1, 1 << 18),
    MT_CFG_INT("decoder_layers", n_layers, 1, 1024),
    MT_CFG_INT("vocab_size", vocab_size, 1, 1 << 22),
    MT_CFG_FLOAT_OR("layernorm_eps", norm_eps, 1e-6f, 1e-12, 1.0),
    MT_CFG_FIXED_STRING("activation_fn", "swish", "silu", "the GLU uses swish"),
    MT_CFG_NOT_BOOL_OR("no_scale_embedding", scale_embedding, 0),
    MT_CFG_BOOL_OR("share_decoder_input_output_embed", tie_embeddings, 0),
    MT_CFG_FIXED_BOOL("decoder_normalize_before", 1, 0),
    MT_CFG_FLOAT_OR("dropout", dropout, 0.0f, 0.0, 0.999),
    MT_CFG_TOKEN_ID("pad_token_id", pad_id),
    MT_CFG_TOKEN_ID("eos_token_id", eos_id),
    MT_CFG_TOKEN_ID("bos_token_id", bos_id),
    MT_CFG_FIXED_BOOL("deepnorm", 0, MT_KEY_READ_ONLY),
    MT_CFG_FIXED_BOOL("subln", 0, MT_KEY_READ_ONLY),
    MT_CFG_FIXED_BOOL("layernorm_embedding", 0, MT_KEY_READ_ONLY),
    MT_CFG_END,
};

static int check(const mt_model_config *c)
{
    if (c->n_heads <= 0 || c->n_heads > MT_RETENTION_MAX_HEADS)
        return mt_error("retnet config: %d retention heads, must be in 1..%d", c->n_heads,
                        MT_RETENTION_MAX_HEADS);
    if (c->d_model % c->n_heads || (c->d_model / c->n_heads) % 2)
        return mt_error("retnet config: %d heads must divide decoder_embed_dim %d into even "
                        "key widths (rotation pairs)",
                        c->n_heads, c->d_model);
    if (c->value_dim <= 0 || c->value_dim > (1 << 17) || c->value_dim % c->n_heads)
        return mt_error("retnet config: decoder_value_embed_dim %d must be a positive multiple "
                        "of the %d heads",
                        c->value_dim, c->n_heads);
    if (c->ffn_dim <= 0 || c->ffn_dim > (1 << 18))
        return mt_error("retnet config: decoder_ffn_embed_dim %d must be in 1..%d", c->ffn_dim,
                        1 << 18);
    if (!(c->norm_eps > 0.0f)) return mt_error("retnet config: layernorm_eps must be > 0");
    return 0;
}

/* the paper's 12 layers, d_model 512, values 1024, 4 heads, GLU 1024, untied (~77M); the demo's
 * 4 layers, d_model 176, values 352, 4 heads, GLU 352 */
static void preset(mt_model_config *c, int small)
{
    c->d_model = small ? 176 : 512;
    c->n_layers = small ? 4 : 12;
    c->n_heads = 4;
    c->value_dim = small ? 352 : 1024;
    c->ffn_dim = small ? 352 : 1024;
    c->norm_eps = 1e-5f;
    c->scale_embedding = 1;
}

const mt_arch mt_arch_retnet = {
    .name = "retnet",
    .hf_class = NULL,
    .model_type = "retnet",
    .encdec = 0,
    .build = build,
    .init = init,
    .check = check,
    .keys = {{keys, "RetNet"}},
    .preset = preset,
    .layout_keys = MT_LAYOUT_HEADS,
};
