/* `mamba`: the paper's decoder-only Mamba v1 in Hugging Face MambaForCausalLM layout
 * (docs/models.md §8): token embedding, n pre-norm units x + Mixer(RMSNorm(x)), final RMSNorm
 * norm_f, output projection tied to the embedding (or lm_head.weight when untied). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "models/model_internal.h"
#include "mtlab/error.h"

mt_mamba_config mt_mamba_mixer_config(const mt_model_config *c)
{
    mt_mamba_config mc = {
        .d_model = c->d_model,
        .d_inner = c->expand * c->d_model,
        .d_state = c->d_state,
        .d_conv = c->d_conv,
        .dt_rank = c->dt_rank,
        .bias = c->mamba_bias,
        .no_conv_bias = c->mamba_no_conv_bias,
    };
    return mc;
}

static int build(mt_model *m)
{
    const mt_model_config *c = &m->cfg;
    mt_model_add_embeddings(m, "backbone.embeddings.weight", "lm_head.weight");
    mt_unit_config mixer = {.mamba = mt_mamba_mixer_config(c)};
    char prefix[MT_NAME_MAX], norm[MT_NAME_MAX];
    const mt_unit_norm rms = {.kind = MT_NORM_RMS, .name = norm, .eps = c->norm_eps};
    for (int l = 0; l < c->n_layers; l++) {
        snprintf(prefix, sizeof prefix, "backbone.layers.%d.mixer.", l);
        snprintf(norm, sizeof norm, "backbone.layers.%d.norm", l);
        mt_model_add_unit(m, &m->dec, MT_UNIT_MAMBA, &mixer, prefix, &rms)->layer = l;
    }
    mt_model_add_final_norm(m, &m->dec, MT_NORM_RMS, "backbone.norm_f", c->norm_eps);
    return 0;
}

/* mamba_ssm initialisation (docs/models.md §3.3): embedding N(0, init_std), mixers by mt_mamba_init
 * with out_proj rescaled by 1/sqrt(n_layer) (one residual per layer), RMSNorm gains 1. */
void mt_mamba_backbone_init(mt_model *m, float *host, uint64_t seed)
{
    const mt_model_config *c = &m->cfg;
    int C = c->d_model;
    mt_model_init_embeddings(m, host, seed, 0, c->init_std);
    mt_rng r;
    float out_scale = 1.0f / sqrtf((float)c->n_layers);
    for (int i = 0; i < m->dec.n_units; i++) {
        const mt_unit *u = &m->dec.units[i];
        mt_unit_params p;
        mt_unit_params_point(u->kind, &u->cfg, &p, host + m->tensors[u->first_tensor].offset);
        mt_rng_init(&r, seed, 2 + (uint64_t)i);
        if (u->kind == MT_UNIT_MAMBA) {
            mt_mamba_init(&r, &p.mamba, &u->cfg.mamba, out_scale);
        } else { /* the attention layers of mamba-mha and mamba-local (hybrid.c) */
            mt_init_linear_default(&r, p.attn.q_w, NULL, C, C);
            mt_init_linear_default(&r, p.attn.k_w, NULL, C, C);
            mt_init_linear_default(&r, p.attn.v_w, NULL, C, C);
            mt_init_linear_default(&r, p.attn.o_w, NULL, C, C);
        }
    }
    mt_model_init_norms(m, host);
}

/* The first present key of two spellings (state-spaces checkpoints without the -hf suffix say
 * d_model and n_layer). */
static int int_either(const mt_config *c, const char *key, const char *old_key, int lo, int hi,
                      int *out)
{
    return mt_config_int(c, mt_config_has(c, key) || !mt_config_has(c, old_key) ? key : old_key, lo,
                         hi, out);
}

/* hidden_size, or d_model in state-spaces checkpoints */
static int read_hidden_size(mt_model_config *cfg, const mt_config *c)
{
    return int_either(c, "hidden_size", "d_model", 1, 1 << 16, &cfg->d_model);
}

static int write_hidden_size(const mt_model_config *cfg, mt_config *o)
{
    return mt_config_set_int(o, "hidden_size", cfg->d_model);
}

/* expand x hidden_size: read after both, only to check it */
static int read_intermediate_size(mt_model_config *cfg, const mt_config *c)
{
    int inner;
    if (mt_config_int_or(c, "intermediate_size", cfg->expand * cfg->d_model, 1, 1 << 22, &inner))
        return -1;
    if (inner != cfg->expand * cfg->d_model)
        return mt_error("%s: intermediate_size %d is not expand x hidden_size = %d",
                        mt_config_name(c), inner, cfg->expand * cfg->d_model);
    return 0;
}

static int write_intermediate_size(const mt_model_config *cfg, mt_config *o)
{
    return mt_config_set_int(o, "intermediate_size", (long long)cfg->expand * cfg->d_model);
}

/* time_step_rank: an integer, or "auto" = ceil(hidden_size / 16) */
static int read_time_step_rank(mt_model_config *cfg, const mt_config *c)
{
    cfg->dt_rank = (cfg->d_model + 15) / 16;
    const char *rank = mt_config_has(c, "time_step_rank")
                           ? mt_config_string_or(c, "time_step_rank", NULL)
                           : "auto";
    if (!rank || strcmp(rank, "auto") != 0) {
        mt_clear_error();
        if (mt_config_int(c, "time_step_rank", 1, 1 << 20, &cfg->dt_rank)) return -1;
    }
    return 0;
}

static int write_time_step_rank(const mt_model_config *cfg, mt_config *o)
{
    return mt_config_set_int(o, "time_step_rank", cfg->dt_rank);
}

/* MambaConfig's keys but the layer count, in the order config.json holds them; MambaConfig's
 * defaults for the optional ones */
const mt_config_key mt_mamba_keys[] = {
    MT_CFG_CUSTOM("hidden_size", read_hidden_size, write_hidden_size),
    MT_CFG_INT_OR("state_size", d_state, 16, 1, MT_SCAN_MAX_STATE),
    MT_CFG_INT_OR("conv_kernel", d_conv, 4, 1, 64),
    MT_CFG_INT_OR("expand", expand, 2, 1, 16),
    MT_CFG_CUSTOM("intermediate_size", read_intermediate_size, write_intermediate_size),
    MT_CFG_CUSTOM("time_step_rank", read_time_step_rank, write_time_step_rank),
    MT_CFG_CONST_FLOAT("time_step_scale", 1.0),
    MT_CFG_FLOAT_OR("time_step_min", dt_min, 0.001f, 1e-12, 1e3),
    MT_CFG_FLOAT_OR("time_step_max", dt_max, 0.1f, 1e-12, 1e3),
    MT_CFG_FLOAT_OR("time_step_floor", dt_init_floor, 1e-4f, 0.0, 1e3),
    MT_CFG_CONST_STRING("time_step_init_scheme", "random"),
    MT_CFG_FLOAT_OR("layer_norm_epsilon", norm_eps, 1e-5f, 1e-12, 1.0),
    MT_CFG_FLOAT_OR("initializer_range", init_std, 0.1f, 0.0, 1e3),
    MT_CFG_BOOL_OR("use_bias", mamba_bias, 0),
    MT_CFG_NOT_BOOL_OR("use_conv_bias", mamba_no_conv_bias, 1),
    MT_CFG_FIXED_STRING("hidden_act", "silu", NULL, "Mamba uses silu"),
    MT_CFG_CONST_BOOL("residual_in_fp32", 1),
    MT_CFG_CONST_BOOL("rescale_prenorm_residual", 0),
    MT_CFG_BOOL_OR("tie_word_embeddings", tie_embeddings, 1),
    MT_CFG_INT("vocab_size", vocab_size, 1, 1 << 22),
    /* what the checkpoint's vocabulary was padded to; vocab_size holds the padded rows */
    {.name = "pad_vocab_size_multiple",
     .type = MT_KEY_INT,
     .offset = MT_KEY_FIELD(pad_vocab_multiple),
     .lo = 1,
     .hi = 1 << 16,
     .def = 8,
     .flags = MT_KEY_OPTIONAL | MT_KEY_READ_ONLY},
    MT_CFG_TOKEN_ID("pad_token_id", pad_id),
    MT_CFG_TOKEN_ID("eos_token_id", eos_id),
    MT_CFG_TOKEN_ID("bos_token_id", bos_id),
    MT_CFG_END,
};

/* num_hidden_layers, or n_layer in state-spaces checkpoints */
static int read_layers(mt_model_config *cfg, const mt_config *c)
{
    return int_either(c, "num_hidden_layers", "n_layer", 1, 1024, &cfg->n_layers);
}

static int write_layers(const mt_model_config *cfg, mt_config *o)
{
    return mt_config_set_int(o, "num_hidden_layers", cfg->n_layers);
}

/* MambaForCausalLM's keys after MambaConfig's (mt_mamba_keys) */
static const mt_config_key keys[] = {
    MT_CFG_CONST_CLASS("MambaForCausalLM"),
    MT_CFG_CONST_STRING("model_type", "mamba"),
    MT_CFG_CUSTOM("num_hidden_layers", read_layers, write_layers),
    MT_CFG_END,
};

int mt_mamba_keys_check(const mt_model_config *c)
{
    if (c->d_state <= 0 || c->d_state > MT_SCAN_MAX_STATE)
        return mt_error("%s config: state_size %d must be in 1..%d", c->arch, c->d_state,
                        MT_SCAN_MAX_STATE);
    if (c->d_conv <= 0 || c->d_conv > 64)
        return mt_error("%s config: conv_kernel %d must be in 1..64", c->arch, c->d_conv);
    if (c->expand <= 0 || c->expand > 16)
        return mt_error("%s config: expand %d must be in 1..16", c->arch, c->expand);
    if (c->dt_rank <= 0 || c->dt_rank > c->d_model * c->expand)
        return mt_error("%s config: time_step_rank %d must be in 1..%d", c->arch, c->dt_rank,
                        c->d_model * c->expand);
    if (!(c->norm_eps > 0.0f))
        return mt_error("%s config: layer_norm_epsilon must be > 0", c->arch);
    if (!(c->dt_min > 0.0f && c->dt_max >= c->dt_min))
        return mt_error("%s config: need 0 < time_step_min <= time_step_max", c->arch);
    return 0;
}

void mt_mamba_preset(mt_model_config *c, int C, int layers)
{
    c->d_model = C;
    c->n_layers = layers;
    c->d_state = 16;
    c->d_conv = 4;
    c->expand = 2;
    c->dt_rank = (C + 15) / 16;
    c->dt_min = 0.001f;
    c->dt_max = 0.1f;
    c->dt_init_floor = 1e-4f;
    c->norm_eps = 1e-5f;
    c->tie_embeddings = 1;
    c->init_std = 0.02f;
    c->pad_vocab_multiple = 8;
}

/* the paper's 24 layers, d_model 610 (~77M); the demo's 12 layers, d_model 192 */
static void preset(mt_model_config *c, int small)
{
    mt_mamba_preset(c, small ? 192 : 610, small ? 12 : 24);
}

const char *const mt_mamba_aliases[][2] = {
    {"backbone.embeddings.weight", "backbone.embedding.weight"},
    {NULL, NULL},
};

const mt_arch mt_arch_mamba = {
    .name = "mamba",
    .hf_class = "MambaForCausalLM",
    .model_type = "mamba",
    .encdec = 0,
    .build = build,
    .init = mt_mamba_backbone_init,
    .check = mt_mamba_keys_check,
    .keys = {{mt_mamba_keys, "Mamba"}, {keys, "Mamba"}},
    .mtlab_dropout = 1,
    .aliases = mt_mamba_aliases,
    .preset = preset,
};
