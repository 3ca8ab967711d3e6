/* `mamba-mha` and `mamba-local`: the paper's Mamba hybrids (docs/models.md §9.1; ssm-mt
 * models/hybrids/). A Mamba stack in MambaForCausalLM layout whose layers at the configured
 * indices (attention_layers, 0-based; default N/2 - 1 and N - 1, the paper's "layers N/2
 * and N") are pre-norm causal self-attention blocks instead: 8 heads, no biases, no
 * positional encoding, no MLP. mamba-mha attends over every earlier position; mamba-local over
 * a sliding window (sliding_window = 64: a query sees itself and the 64 keys before it) and
 * decodes through a ring of window + 1 keys/values, so its decoding state is constant in the
 * sequence length like Mamba's. The interleaved / early / late ablations are attention_layers
 * lists. No Hugging Face class exists: the config is MambaConfig's keys plus
 * attention_layers, num_attention_heads and (local) sliding_window. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "models/model_internal.h"
#include "mtlab/error.h"

static int local(const mt_model_config *c) { return !strcmp(c->arch, "mamba-local"); }

static int is_attention(const mt_model_config *c, int layer)
{
    for (int i = 0; i < c->n_attn_layers; i++)
        if (c->attn_layers[i] == layer) return 1;
    return 0;
}

static int build(mt_model *m)
{
    const mt_model_config *c = &m->cfg;
    mt_model_add_embeddings(m, "backbone.embeddings.weight", "lm_head.weight");
    mt_unit_config mixer = {.mamba = mt_mamba_mixer_config(c)};
    mt_unit_config attn = {
        .attn = {.C = c->d_model,
                 .H = c->n_heads,
                 .causal = 1,
                 .window = local(c) ? c->window : 0,
                 .out_name = "o_proj"},
    };
    char prefix[MT_NAME_MAX], norm[MT_NAME_MAX];
    const mt_unit_norm rms = {.kind = MT_NORM_RMS, .name = norm, .eps = c->norm_eps};
    for (int l = 0; l < c->n_layers; l++) {
        int a = is_attention(c, l);
        snprintf(prefix, sizeof prefix, "backbone.layers.%d.mixer.", l);
        snprintf(norm, sizeof norm, "backbone.layers.%d.norm", l);
        mt_model_add_unit(m, &m->dec, a ? MT_UNIT_SELF_ATTN : MT_UNIT_MAMBA, a ? &attn : &mixer,
                          prefix, &rms)
            ->layer = l;
    }
    mt_model_add_final_norm(m, &m->dec, MT_NORM_RMS, "backbone.norm_f", c->norm_eps);
    return 0;
}

static int write_model_type(const mt_model_config *cfg, mt_config *o)
{
    return mt_config_set_string(o, "model_type", cfg->arch);
}

/* attention_layers (0-based), by default the paper's N/2 - 1 and N - 1 */
static int read_attention_layers(mt_model_config *cfg, const mt_config *c)
{
    if (mt_config_has(c, "attention_layers"))
        return mt_config_int_list(c, "attention_layers", 0, 1 << 20, cfg->attn_layers,
                                  MT_MAX_ATTN_LAYERS, &cfg->n_attn_layers);
    cfg->n_attn_layers = 0;
    if (cfg->n_layers >= 2) cfg->attn_layers[cfg->n_attn_layers++] = cfg->n_layers / 2 - 1;
    cfg->attn_layers[cfg->n_attn_layers++] = cfg->n_layers - 1;
    return 0;
}

static int write_attention_layers(const mt_model_config *cfg, mt_config *o)
{
    return mt_config_set_int_list(o, "attention_layers", cfg->attn_layers, cfg->n_attn_layers);
}

/* sliding_window: mamba-local's alone */
static int read_sliding_window(mt_model_config *cfg, const mt_config *c)
{
    return local(cfg) ? mt_config_int_or(c, "sliding_window", 64, 1, 1 << 20, &cfg->window) : 0;
}

static int write_sliding_window(const mt_model_config *cfg, mt_config *o)
{
    return local(cfg) ? mt_config_set_int(o, "sliding_window", cfg->window) : 0;
}

/* the keys beside MambaConfig's (mt_mamba_keys), in the order config.json holds them */
static const mt_config_key keys[] = {
    MT_CFG_CUSTOM("model_type", NULL, write_model_type),
    MT_CFG_INT("num_hidden_layers", n_layers, 1, 1024),
    MT_CFG_CUSTOM("attention_layers", read_attention_layers, write_attention_layers),
    MT_CFG_INT_OR("num_attention_heads", n_heads, 8, 1, 1 << 12),
    MT_CFG_CUSTOM("sliding_window", read_sliding_window, write_sliding_window),
    MT_CFG_END,
};

static int check(const mt_model_config *c)
{
    if (mt_mamba_keys_check(c)) return -1;
    if (c->n_heads <= 0 || c->d_model % c->n_heads)
        return mt_error("%s config: %d attention heads do not divide hidden_size %d", c->arch,
                        c->n_heads, c->d_model);
    if (c->n_attn_layers < 0 || c->n_attn_layers > MT_MAX_ATTN_LAYERS)
        return mt_error("%s config: %d attention layers, at most %d", c->arch, c->n_attn_layers,
                        MT_MAX_ATTN_LAYERS);
    for (int i = 0; i < c->n_attn_layers; i++) {
        int l = c->attn_layers[i];
        if (l < 0 || l >= c->n_layers)
            return mt_error("%s config: attention layer %d is outside the %d layers (0-based)",
                            c->arch, l, c->n_layers);
        if (i > 0 && l <= c->attn_layers[i - 1])
            return mt_error("%s config: attention_layers must be increasing (%d after %d)", c->arch,
                            l, c->attn_layers[i - 1]);
    }
    if (local(c) && c->window <= 0)
        return mt_error("mamba-local config: sliding_window %d must be positive", c->window);
    return 0;
}

/* the paper's 24 layers, d_model 624, attention (8 heads) at 0-based layers N/2 - 1 and N - 1
 * (the paper's N/2 and N) (~78M); the demo's 12 layers, d_model 200; mamba-local's window is 64
 * tokens */
static void preset(mt_model_config *c, int small, int window)
{
    int layers = small ? 12 : 24;
    mt_mamba_preset(c, small ? 200 : 624, layers);
    c->n_heads = 8;
    c->window = window;
    c->n_attn_layers = 2;
    c->attn_layers[0] = layers / 2 - 1;
    c->attn_layers[1] = layers - 1;
}

static void preset_mha(mt_model_config *c, int small) { preset(c, small, 0); }

static void preset_local(mt_model_config *c, int small) { preset(c, small, 64); }

const mt_arch mt_arch_mamba_mha = {
    .name = "mamba-mha",
    .hf_class = NULL,
    .model_type = "mamba-mha",
    .encdec = 0,
    .build = build,
    .init = mt_mamba_backbone_init,
    .check = check,
    .keys = {{mt_mamba_keys, "Mamba"}, {keys, "mamba-mha"}},
    .mtlab_dropout = 1,
    .aliases = mt_mamba_aliases,
    .preset = preset_mha,
    .layout_keys = MT_LAYOUT_HEADS,
};

const mt_arch mt_arch_mamba_local = {
    .name = "mamba-local",
    .hf_class = NULL,
    .model_type = "mamba-local",
    .encdec = 0,
    .build = build,
    .init = mt_mamba_backbone_init,
    .check = check,
    .keys = {{mt_mamba_keys, "Mamba"}, {keys, "mamba-local"}},
    .mtlab_dropout = 1,
    .aliases = mt_mamba_aliases,
    .preset = preset_local,
    .layout_keys = MT_LAYOUT_HEADS | MT_LAYOUT_WINDOW,
};
