/* `gpt-neox`: GPT-NeoX in Hugging Face GPTNeoXForCausalLM layout, the architecture of the Pythia
 * suite the paper finetunes (docs/models.md §11): token embedding embed_in, per layer
 *   parallel (use_parallel_residual, Pythia):
 *     y = x + Attn(LN1(x)) + MLP(LN2(x))
 *   sequential:
 *     h = x + Attn(LN1(x)) ;  y = h + MLP(LN2(h))
 * with LayerNorms with biases, causal attention whose q, k, v come from one fused
 * query_key_value projection (per head [q; k; v], mtlab/layers.h qkv_name) with biases, the
 * rotate-half rotary on the first rotary_pct of each head's dims (base rotary_emb_base), MLP
 * dense_4h_to_h(GELU(dense_h_to_4h x)) with exact (erf) GELU, a final LayerNorm and an untied
 * output projection embed_out. The parallel form is two units, the second reading the first's
 * input (model_internal.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/model_internal.h"
#include "mtlab/error.h"

/* rotated dims per head: int(head_dim * rotary_pct), as GPTNeoXRotaryEmbedding takes them */
static int rotary_dims(const mt_model_config *c)
{
    return (int)((float)(c->d_model / c->n_heads) * c->rotary_pct);
}

static int build(mt_model *m)
{
    const mt_model_config *c = &m->cfg;
    int C = c->d_model;
    mt_model_add_embeddings(m, "gpt_neox.embed_in.weight", "embed_out.weight");
    m->rope_dim = rotary_dims(c);
    m->rope_base = c->rope_theta;
    m->rope_kind = MT_ROPE_LLAMA;
    mt_unit_config attn = {
        .attn = {.C = C,
                 .H = c->n_heads,
                 .bias = 1,
                 .causal = 1,
                 .rope_dim = m->rope_dim,
                 .out_name = "dense",
                 .qkv_name = "query_key_value"},
    };
    mt_unit_config mlp = {.ffn = {.C = C,
                                  .F = c->ffn_dim,
                                  .act = MT_ACT_GELU,
                                  .bias = 1,
                                  .in_name = "dense_h_to_4h",
                                  .out_name = "dense_4h_to_h"}};
    const mt_decoder_layers layers = {
        .layers = "gpt_neox.layers",
        .kind = {MT_UNIT_SELF_ATTN, MT_UNIT_FFN},
        .cfg = {&attn, &mlp},
        .unit = {"attention.", "mlp."},
        .norm = {"input_layernorm", "post_attention_layernorm"},
        .norm_kind = MT_NORM_LAYER,
        .eps = c->norm_eps,
        .parallel = c->parallel_residual,
    };
    mt_model_add_decoder_layers(m, &layers);
    mt_model_add_final_norm(m, &m->dec, MT_NORM_LAYER, "gpt_neox.final_layer_norm", c->norm_eps);
    return 0;
}

/* A float key with a second spelling transformers 4.57 writes beside it (rotary_pct and
 * partial_rotary_factor, rotary_emb_base and rope_theta): the first is read, the second, when
 * present, must agree. */
static int read_twin_float(const mt_config *c, const char *key, const char *twin, float def,
                           double lo, double hi, float *out)
{
    if (mt_config_float_or(c, key, def, lo, hi, out)) return -1;
    if (!mt_config_has(c, twin)) return 0;
    char *v = mt_config_value_json(c, twin);
    int null = v && !strcmp(v, "null");
    free(v);
    if (null) return 0;
    float other;
    if (mt_config_float(c, twin, lo, hi, &other)) return -1;
    if (other != *out)
        return mt_error("%s: %s %g differs from %s %g (one value is needed)", mt_config_name(c),
                        twin, other, key, *out);
    return 0;
}

static int read_rotary_pct(mt_model_config *cfg, const mt_config *c)
{
    return read_twin_float(c, "rotary_pct", "partial_rotary_factor", 0.25f, 0.0, 1.0,
                           &cfg->rotary_pct);
}

static int write_rotary_pct(const mt_model_config *cfg, mt_config *o)
{
    return mt_config_set_float(o, "rotary_pct", cfg->rotary_pct) |
           mt_config_set_float(o, "partial_rotary_factor", cfg->rotary_pct);
}

static int read_rotary_base(mt_model_config *cfg, const mt_config *c)
{
    return read_twin_float(c, "rotary_emb_base", "rope_theta", 10000.0f, 1.0, 1e12,
                           &cfg->rope_theta);
}

static int write_rotary_base(const mt_model_config *cfg, mt_config *o)
{
    return mt_config_set_float(o, "rotary_emb_base", cfg->rope_theta) |
           mt_config_set_float(o, "rope_theta", cfg->rope_theta);
}

/* rope_scaling: absent or null (the default rotary only) */
static int read_rope_scaling(mt_model_config *cfg, const mt_config *c)
{
    (void)cfg;
    if (!mt_config_has(c, "rope_scaling")) return 0;
    char *v = mt_config_value_json(c, "rope_scaling");
    int null = v && !strcmp(v, "null");
    free(v);
    return null ? 0
                : mt_error("%s: rope_scaling is not supported (default rotary only)",
                           mt_config_name(c));
}

/* attention_dropout: on the attention probabilities, which mtlab does not drop */
static int read_attention_dropout(mt_model_config *cfg, const mt_config *c)
{
    (void)cfg;
    float p;
    if (mt_config_float_or(c, "attention_dropout", 0.0f, 0.0, 1.0, &p)) return -1;
    return p == 0.0f ? 0
                     : mt_error("%s: attention_dropout %g is not supported (mtlab's GPT-NeoX has "
                                "0; hidden_dropout drops the residual branches)",
                                mt_config_name(c), p);
}

static int write_attention_dropout(const mt_model_config *cfg, mt_config *o)
{
    (void)cfg;
    return mt_config_set_float(o, "attention_dropout", 0.0f);
}

/* pad_token_id: the hub's Pythia configs have none, and generate() pads with eos_token_id */
static int read_pad(mt_model_config *cfg, const mt_config *c)
{
    int pad = -1;
    if (mt_model_config_token_id(c, "pad_token_id", &pad)) return -1;
    cfg->pad_id = pad >= 0 ? pad : cfg->eos_id;
    return 0;
}

static int write_pad(const mt_model_config *cfg, mt_config *o)
{
    return mt_config_set_int(o, "pad_token_id", cfg->pad_id);
}

/* GPTNeoXConfig's keys (transformers 4.57), with its defaults for the optional ones; the
 * token ids come last, as pad_token_id defaults to eos_token_id */
static const mt_config_key keys[] = {
    MT_CFG_CONST_CLASS("GPTNeoXForCausalLM"),
    MT_CFG_CONST_STRING("model_type", "gpt_neox"),
    MT_CFG_INT("hidden_size", d_model, 1, 1 << 16),
    MT_CFG_INT("num_hidden_layers", n_layers, 1, 1024),
    MT_CFG_INT("num_attention_heads", n_heads, 1, 1 << 12),
    MT_CFG_INT("intermediate_size", ffn_dim, 1, 1 << 18),
    MT_CFG_FIXED_STRING("hidden_act", "gelu", NULL, "GPT-NeoX's MLP uses the exact gelu"),
    MT_CFG_CUSTOM("rotary_pct", read_rotary_pct, write_rotary_pct),
    MT_CFG_CUSTOM("rotary_emb_base", read_rotary_base, write_rotary_base),
    {.name = "rope_scaling",
     .type = MT_KEY_CUSTOM,
     .flags = MT_KEY_READ_ONLY,
     .read = read_rope_scaling},
    MT_CFG_CUSTOM("attention_dropout", read_attention_dropout, write_attention_dropout),
    MT_CFG_FLOAT_OR("hidden_dropout", dropout, 0.0f, 0.0, 0.999),
    MT_CFG_INT_OR("max_position_embeddings", max_positions, 2048, 1, 1 << 24),
    MT_CFG_FLOAT_OR("initializer_range", init_std, 0.02f, 0.0, 1e3),
    MT_CFG_FLOAT_OR("layer_norm_eps", norm_eps, 1e-5f, 1e-12, 1.0),
    MT_CFG_BOOL_OR("use_parallel_residual", parallel_residual, 1),
    MT_CFG_FIXED_BOOL("attention_bias", 1, 0),
    MT_CFG_BOOL_OR("tie_word_embeddings", tie_embeddings, 0),
    MT_CFG_INT("vocab_size", vocab_size, 1, 1 << 22),
    MT_CFG_TOKEN_ID("eos_token_id", eos_id),
    MT_CFG_TOKEN_ID("bos_token_id", bos_id),
    MT_CFG_CUSTOM("pad_token_id", read_pad, write_pad),
    MT_CFG_END,
};

static int check(const mt_model_config *c)
{
    if (c->n_heads <= 0 || c->d_model % c->n_heads)
        return mt_error("gpt-neox config: %d heads do not divide hidden_size %d", c->n_heads,
                        c->d_model);
    if (!(c->rotary_pct >= 0.0f && c->rotary_pct <= 1.0f))
        return mt_error("gpt-neox config: rotary_pct %g must be in [0, 1]", c->rotary_pct);
    if (rotary_dims(c) % 2)
        return mt_error("gpt-neox config: rotary_pct %g rotates %d of each head's %d dims, an odd "
                        "number (rotary pairs)",
                        c->rotary_pct, rotary_dims(c), c->d_model / c->n_heads);
    if (c->ffn_dim <= 0 || c->ffn_dim > (1 << 18))
        return mt_error("gpt-neox config: intermediate_size %d must be in 1..%d", c->ffn_dim,
                        1 << 18);
    if (!(c->norm_eps > 0.0f)) return mt_error("gpt-neox config: layer_norm_eps must be > 0");
    if (!(c->rope_theta > 1.0f)) return mt_error("gpt-neox config: rotary_emb_base must be > 1");
    return 0;
}

/* Pythia's shape: parallel residual, a quarter of each head rotating, MLP 4 x hidden_size,
 * untied. The paper's budget: 14 layers, hidden_size 512, 8 heads (~77M); the demo's 6 layers,
 * hidden_size 168, 7 heads (of 24 dims, 6 rotating) */
static void preset(mt_model_config *c, int small)
{
    c->d_model = small ? 168 : 512;
    c->n_layers = small ? 6 : 14;
    c->n_heads = small ? 7 : 8;
    c->ffn_dim = 4 * c->d_model;
    c->max_positions = 2048; /* GPTNeoXConfig's default; informational (rotary needs no table) */
    c->norm_eps = 1e-5f;
    c->rope_theta = 10000.0f;
    c->rotary_pct = 0.25f;
    c->parallel_residual = 1;
    c->init_std = 0.02f;
}

/* Buffers older transformers versions saved in Pythia's pytorch_model.bin (the causal mask,
 * its fill value and the rotary frequencies), and a tied embed_out. */
static const char *const ignored[] = {
    "gpt_neox.layers.*.attention.bias",
    "gpt_neox.layers.*.attention.masked_bias",
    "gpt_neox.layers.*.attention.rotary_emb.inv_freq",
    "gpt_neox.rotary_emb.inv_freq",
    "embed_out.weight",
    NULL,
};

const mt_arch mt_arch_neox = {
    .name = "gpt-neox",
    .hf_class = "GPTNeoXForCausalLM",
    .model_type = "gpt_neox",
    .encdec = 0,
    .build = build,
    .init = mt_model_init_hf_normal, /* GPTNeoXPreTrainedModel: N(0, initializer_range) */
    .check = check,
    .keys = {{keys, "GPT-NeoX"}},
    .ignored = ignored,
    .preset = preset,
    .layout_keys = MT_LAYOUT_HEADS | MT_LAYOUT_ROTARY | MT_LAYOUT_RESIDUAL,
};
