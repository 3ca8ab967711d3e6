/* `transformer++`: the paper's decoder-only LLaMA-style Transformer in Hugging Face
 * LlamaForCausalLM layout (docs/models.md §6): token embedding, per layer two pre-norm units
 *   h = x + Attn(RMSNorm(x))       causal, rotate-half RoPE on q and k, no biases
 *   y = h + MLP(RMSNorm(h))        down(SiLU(gate h) * up h), SwiGLU, no biases
 * a final RMSNorm and an untied lm_head. ssm-mt sizes the MLP 4 x hidden_size, not LLaMA's
 * 8/3 rule; intermediate_size says which. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/model_internal.h"
#include "mtlab/error.h"

static int build(mt_model *m)
{
    const mt_model_config *c = &m->cfg;
    int C = c->d_model, Dh = C / c->n_heads;
    mt_model_add_embeddings(m, "model.embed_tokens.weight", "lm_head.weight");
    m->rope_dim = Dh;
    m->rope_base = c->rope_theta;
    m->rope_kind = MT_ROPE_LLAMA;
    mt_unit_config attn = {
        .attn = {.C = C, .H = c->n_heads, .causal = 1, .rope_dim = Dh, .out_name = "o_proj"},
    };
    mt_unit_config mlp = {.mlp = {.C = C, .F = c->ffn_dim, .layout = MT_GATED_LLAMA}};
    const mt_decoder_layers layers = {
        .layers = "model.layers",
        .kind = {MT_UNIT_SELF_ATTN, MT_UNIT_GATED_MLP},
        .cfg = {&attn, &mlp},
        .unit = {"self_attn.", "mlp."},
        .norm = {"input_layernorm", "post_attention_layernorm"},
        .norm_kind = MT_NORM_RMS,
        .eps = c->norm_eps,
    };
    mt_model_add_decoder_layers(m, &layers);
    mt_model_add_final_norm(m, &m->dec, MT_NORM_RMS, "model.norm", c->norm_eps);
    return 0;
}

/* rope_theta: transformers 5 nests it in rope_parameters {rope_theta, rope_type}, earlier
 * versions keep it at the top with an optional rope_scaling; only the default rope is known. */
static int read_rope(mt_model_config *cfg, const mt_config *c)
{
    const char *path = mt_config_name(c);
    const mt_config *rp = mt_config_object(c, "rope_parameters");
    const mt_config *from = rp && mt_config_has(rp, "rope_theta") ? rp : c;
    if (mt_config_float_or(from, "rope_theta", 10000.0f, 1.0, 1e12, &cfg->rope_theta)) return -1;
    const char *type = rp ? mt_config_string_or(rp, "rope_type", "default") : "default";
    if (!type) return -1;
    if (strcmp(type, "default") != 0)
        return mt_error("%s: rope_type \"%s\" is not supported (default rotary only)", path, type);
    if (mt_config_has(c, "rope_scaling")) {
        char *v = mt_config_value_json(c, "rope_scaling");
        int null = v && !strcmp(v, "null");
        free(v);
        if (!null) return mt_error("%s: rope_scaling is not supported (default rotary only)", path);
    }
    return 0;
}

static int write_rope(const mt_model_config *cfg, mt_config *o)
{
    mt_config *rope = mt_config_set_object(o, "rope_parameters");
    return rope ? mt_config_set_float(rope, "rope_theta", cfg->rope_theta) |
                      mt_config_set_string(rope, "rope_type", "default")
                : -1;
}

static int read_kv_heads(mt_model_config *cfg, const mt_config *c)
{
    int kv_heads;
    if (mt_config_int_or(c, "num_key_value_heads", cfg->n_heads, 1, 1 << 12, &kv_heads)) return -1;
    if (kv_heads != cfg->n_heads)
        return mt_error("%s: num_key_value_heads %d differs from num_attention_heads %d (grouped "
                        "keys/values are not supported)",
                        mt_config_name(c), kv_heads, cfg->n_heads);
    return 0;
}

static int write_kv_heads(const mt_model_config *cfg, mt_config *o)
{
    return mt_config_set_int(o, "num_key_value_heads", cfg->n_heads);
}

/* head_dim: hidden_size / num_attention_heads (mt_arch.check refuses heads that do not divide) */
static int read_head_dim(mt_model_config *cfg, const mt_config *c)
{
    if (cfg->d_model % cfg->n_heads) return 0;
    int want = cfg->d_model / cfg->n_heads, head_dim;
    if (mt_config_int_or(c, "head_dim", want, 1, 1 << 16, &head_dim)) return -1;
    if (head_dim != want)
        return mt_error("%s: head_dim %d is not hidden_size / num_attention_heads = %d",
                        mt_config_name(c), head_dim, want);
    return 0;
}

static int write_head_dim(const mt_model_config *cfg, mt_config *o)
{
    return mt_config_set_int(o, "head_dim", cfg->d_model / cfg->n_heads);
}

/* LlamaConfig's keys, in the order config.json holds them, with its defaults for the optional
 * ones */
static const mt_config_key keys[] = {
    MT_CFG_CONST_CLASS("LlamaForCausalLM"),
    MT_CFG_CONST_STRING("model_type", "llama"),
    MT_CFG_INT("hidden_size", d_model, 1, 1 << 16),
    MT_CFG_INT("intermediate_size", ffn_dim, 1, 1 << 18),
    MT_CFG_INT("num_hidden_layers", n_layers, 1, 1024),
    MT_CFG_INT("num_attention_heads", n_heads, 1, 1 << 12),
    MT_CFG_CUSTOM("num_key_value_heads", read_kv_heads, write_kv_heads),
    MT_CFG_CUSTOM("head_dim", read_head_dim, write_head_dim),
    MT_CFG_FIXED_STRING("hidden_act", "silu", NULL, "SwiGLU uses silu"),
    MT_CFG_INT_OR("max_position_embeddings", max_positions, 2048, 1, 1 << 24),
    MT_CFG_FLOAT_OR("rms_norm_eps", norm_eps, 1e-6f, 1e-12, 1.0),
    MT_CFG_FLOAT_OR("initializer_range", init_std, 0.02f, 0.0, 1e3),
    MT_CFG_CUSTOM("rope_parameters", read_rope, write_rope),
    MT_CFG_FIXED_BOOL("attention_bias", 0, 0),
    MT_CFG_FIXED_BOOL("mlp_bias", 0, 0),
    MT_CFG_BOOL_OR("tie_word_embeddings", tie_embeddings, 0),
    MT_CFG_INT("vocab_size", vocab_size, 1, 1 << 22),
    MT_CFG_TOKEN_ID("pad_token_id", pad_id),
    MT_CFG_TOKEN_ID("eos_token_id", eos_id),
    MT_CFG_TOKEN_ID("bos_token_id", bos_id),
    MT_CFG_END,
};

static int check(const mt_model_config *c)
{
    if (c->n_heads <= 0 || c->d_model % c->n_heads)
        return mt_error("transformer++ config: %d heads do not divide hidden_size %d", c->n_heads,
                        c->d_model);
    if ((c->d_model / c->n_heads) % 2)
        return mt_error("transformer++ config: head size %d must be even (rotary pairs)",
                        c->d_model / c->n_heads);
    if (c->ffn_dim <= 0 || c->ffn_dim > (1 << 18))
        return mt_error("transformer++ config: intermediate_size %d must be in 1..%d", c->ffn_dim,
                        1 << 18);
    if (!(c->norm_eps > 0.0f)) return mt_error("transformer++ config: rms_norm_eps must be > 0");
    if (!(c->rope_theta > 1.0f)) return mt_error("transformer++ config: rope_theta must be > 1");
    return 0;
}

/* the paper's 12 layers, d_model 496, 8 heads, SwiGLU 1984, untied (~79M); the demo's 4 layers,
 * d_model 168, 4 heads, SwiGLU 672 */
static void preset(mt_model_config *c, int small)
{
    c->d_model = small ? 168 : 496;
    c->n_layers = small ? 4 : 12;
    c->n_heads = small ? 4 : 8;
    c->ffn_dim = small ? 672 : 1984;
    c->max_positions = 2048; /* LlamaConfig's default; informational (rotary needs no table) */
    c->norm_eps = 1e-6f;
    c->rope_theta = 10000.0f;
    c->init_std = 0.02f;
}

const mt_arch mt_arch_llama = {
    .name = "transformer++",
    .hf_class = "LlamaForCausalLM",
    .model_type = "llama",
    .encdec = 0,
    .build = build,
    .init = mt_model_init_hf_normal, /* LlamaPreTrainedModel: N(0, initializer_range) */
    .check = check,
    .keys = {{keys, "transformer++"}},
    .mtlab_dropout = 1,
    .preset = preset,
    .layout_keys = MT_LAYOUT_HEADS | MT_LAYOUT_ROTARY,
};
