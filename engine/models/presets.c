/* Model presets and configuration checks.
 * Paper sizes (docs/models.md §1.5, vocabulary 32000):
 *   transformer   6+6 layers, d_model 512, 8 heads, FFN 2048, separate output (~77M)
 *   mamba         24 layers, d_model 610 (~77M)
 *   transformer++ 12 layers, d_model 496, 8 heads, SwiGLU 1984, untied (~79M)
 *   retnet        12 layers, d_model 512, values 1024, 4 heads, GLU 1024, untied (~77M)
 *   mamba-mha     24 layers, d_model 624, attention (8 heads) at layers 12 and 24 (~78M)
 *   mamba-local   the same with a 64-token sliding window (~78M)
 *   mamba-encdec  8 Mamba encoder layers, 6 decoder blocks, d_model 512, MLP 2048 (~82M)
 * Demo sizes for the Bible corpus (vocabulary 8000, one budget of ~4.6M each, so that a bundle
 * stored in f16 stays under 10 MB): transformer 3+3 layers, d_model 192, 4 heads, FFN 768, tied
 * output; mamba 12 layers, d_model 192; transformer++ 4 layers, d_model 168, 4 heads, SwiGLU
 * 672; retnet 4 layers, d_model 176, values 352, 4 heads, GLU 352; mamba-mha / -local 12
 * layers, d_model 200, attention at layers 6 and 12; mamba-encdec 4 + 3, d_model 152, 8 heads,
 * MLP 608. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/model_internal.h"
#include "mtlab/error.h"
#include "mtlab/tokenizer.h"

void mt_model_config_init_ids(mt_model_config *cfg)
{
    cfg->pad_id = MT_PAD_ID;
    cfg->eos_id = MT_EOS_ID;
    cfg->sep_id = MT_SEP_ID;
    cfg->bos_id = MT_BOS_ID;
    cfg->unk_id = MT_UNK_ID;
    cfg->decoder_start_id = MT_BOS_ID;
}

static void transformer(mt_model_config *c, int V, int C, int layers, int heads, int ffn, int tie)
{
    snprintf(c->arch, sizeof c->arch, "transformer");
    c->vocab_size = V;
    c->d_model = C;
    c->n_encoder_layers = layers;
    c->n_layers = layers;
    c->n_heads = heads;
    c->ffn_dim = ffn;
    c->activation = MT_ACT_RELU;
    c->max_positions = 1024;
    c->scale_embedding = 1;
    c->tie_embeddings = tie;
    c->init_std = 0.02f;
}

static void mamba(mt_model_config *c, int V, int C, int layers)
{
    snprintf(c->arch, sizeof c->arch, "mamba");
    c->vocab_size = V;
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
}

static void llama(mt_model_config *c, int V, int C, int layers, int heads, int ffn)
{
    snprintf(c->arch, sizeof c->arch, "transformer++");
    c->vocab_size = V;
    c->d_model = C;
    c->n_layers = layers;
    c->n_heads = heads;
    c->ffn_dim = ffn;
    c->max_positions = 2048; /* LlamaConfig's default; informational (rotary needs no table) */
    c->norm_eps = 1e-6f;
    c->rope_theta = 10000.0f;
    c->init_std = 0.02f;
}

static void retnet(mt_model_config *c, int V, int C, int layers, int heads, int value, int ffn)
{
    snprintf(c->arch, sizeof c->arch, "retnet");
    c->vocab_size = V;
    c->d_model = C;
    c->n_layers = layers;
    c->n_heads = heads;
    c->value_dim = value;
    c->ffn_dim = ffn;
    c->norm_eps = 1e-5f;
    c->scale_embedding = 1;
}

/* Mamba with attention at 0-based layers N/2 - 1 and N - 1 (the paper's N/2 and N) */
static void hybrid(mt_model_config *c, const char *arch, int V, int C, int layers, int window)
{
    mamba(c, V, C, layers);
    snprintf(c->arch, sizeof c->arch, "%s", arch);
    c->n_heads = 8;
    c->window = window;
    c->n_attn_layers = 2;
    c->attn_layers[0] = layers / 2 - 1;
    c->attn_layers[1] = layers - 1;
}

static void mamba_encdec(mt_model_config *c, int V, int C, int enc, int dec)
{
    mamba(c, V, C, dec);
    snprintf(c->arch, sizeof c->arch, "mamba-encdec");
    c->n_encoder_layers = enc;
    c->n_heads = 8;
    c->ffn_dim = 4 * C;
}

static const char *const preset_names[] = {
    "transformer",         "mamba",        "transformer++",      "retnet",
    "mamba-mha",           "mamba-local",  "mamba-encdec",       "transformer-small",
    "mamba-small",         "transformer++-small", "retnet-small", "mamba-mha-small",
    "mamba-local-small",   "mamba-encdec-small",  NULL,
};

const char *const *mt_model_preset_names(void) { return preset_names; }

int mt_model_preset(mt_model_config *cfg, const char *name)
{
    memset(cfg, 0, sizeof *cfg);
    mt_model_config_init_ids(cfg);
    cfg->dropout = 0.3f; /* the paper's WMT14 setting (docs/models.md §1.5) */
    if (!strcmp(name, "transformer")) transformer(cfg, 32000, 512, 6, 8, 2048, 0);
    else if (!strcmp(name, "mamba")) mamba(cfg, 32000, 610, 24);
    else if (!strcmp(name, "transformer++")) llama(cfg, 32000, 496, 12, 8, 1984);
    else if (!strcmp(name, "retnet")) retnet(cfg, 32000, 512, 12, 4, 1024, 1024);
    else if (!strcmp(name, "mamba-mha")) hybrid(cfg, "mamba-mha", 32000, 624, 24, 0);
    else if (!strcmp(name, "mamba-local")) hybrid(cfg, "mamba-local", 32000, 624, 24, 64);
    else if (!strcmp(name, "mamba-encdec")) mamba_encdec(cfg, 32000, 512, 8, 6);
    else if (!strcmp(name, "transformer-small")) transformer(cfg, 8000, 192, 3, 4, 768, 1);
    else if (!strcmp(name, "mamba-small")) mamba(cfg, 8000, 192, 12);
    else if (!strcmp(name, "transformer++-small")) llama(cfg, 8000, 168, 4, 4, 672);
    else if (!strcmp(name, "retnet-small")) retnet(cfg, 8000, 176, 4, 4, 352, 352);
    else if (!strcmp(name, "mamba-mha-small")) hybrid(cfg, "mamba-mha", 8000, 200, 12, 0);
    else if (!strcmp(name, "mamba-local-small")) hybrid(cfg, "mamba-local", 8000, 200, 12, 64);
    else if (!strcmp(name, "mamba-encdec-small")) mamba_encdec(cfg, 8000, 152, 4, 3);
    else {
        char known[512] = "";
        for (const char *const *p = preset_names; *p; p++)
            snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s",
                     p == preset_names ? "" : ", ", *p);
        return mt_error("unknown model preset '%s' (%s)", name, known);
    }
    return 0;
}

static int check_id(const mt_model_config *c, const char *what, int id)
{
    if (id < 0 || id >= c->vocab_size)
        return mt_error("%s config: %s %d is outside the vocabulary (0..%d)", c->arch, what, id,
                        c->vocab_size - 1);
    return 0;
}

int mt_model_config_check(const mt_model_config *c)
{
    const mt_arch *arch = mt_arch_find(c->arch);
    if (!arch) return mt_error("unknown model architecture '%s' (%s)", c->arch, mt_arch_names());
    if (c->vocab_size <= 0 || c->vocab_size > (1 << 22))
        return mt_error("%s config: vocab_size %d must be in 1..%d", c->arch, c->vocab_size,
                        1 << 22);
    if (c->d_model <= 0 || c->d_model > (1 << 16))
        return mt_error("%s config: d_model %d must be in 1..%d", c->arch, c->d_model, 1 << 16);
    if (c->n_layers <= 0 || c->n_layers > 1024)
        return mt_error("%s config: %d layers, must be in 1..1024", c->arch, c->n_layers);
    if (!(c->dropout >= 0.0f && c->dropout < 1.0f))
        return mt_error("%s config: dropout %g must be in [0, 1)", c->arch, c->dropout);
    if (!(c->init_std >= 0.0f)) return mt_error("%s config: negative init_std", c->arch);
    if (check_id(c, "pad id", c->pad_id) || check_id(c, "eos id", c->eos_id) ||
        check_id(c, "sep id", c->sep_id) || check_id(c, "bos id", c->bos_id) ||
        check_id(c, "unk id", c->unk_id) || check_id(c, "decoder start id", c->decoder_start_id))
        return -1;
    return arch->check(c);
}

int mt_model_config_token_id(const mt_config *c, const char *key, int *id)
{
    if (!mt_config_has(c, key)) return 0;
    char *json = mt_config_value_json(c, key);
    int is_list = json && json[0] == '[';
    free(json);
    if (!is_list) return mt_config_int(c, key, 0, (1 << 22) - 1, id);
    int ids[16], n = 0;
    if (mt_config_int_list(c, key, 0, (1 << 22) - 1, ids, 16, &n)) return -1;
    if (n == 0) return mt_error("%s: key '%s' is an empty list", mt_config_name(c), key);
    *id = ids[0];
    return 0;
}

int mt_model_config_read_mtlab(mt_model_config *cfg, const mt_config *c)
{
    const mt_config *x = mt_config_object(c, "mtlab");
    if (!x) {
        if (mt_config_has(c, "mtlab"))
            return mt_error("%s: key 'mtlab' must be an object", mt_config_name(c));
        return 0;
    }
    return mt_model_config_token_id(x, "sep_token_id", &cfg->sep_id) ||
                   mt_model_config_token_id(x, "unk_token_id", &cfg->unk_id) ||
                   mt_config_float_or(x, "dropout", cfg->dropout, 0.0, 0.999, &cfg->dropout)
               ? -1
               : 0;
}

int mt_model_config_fixed_bool(const mt_config *c, const char *key, int want, const char *model)
{
    int v;
    if (mt_config_bool_or(c, key, want, &v)) return -1;
    if (v != want)
        return mt_error("%s: %s = %s is not supported (mtlab's %s has %s)", mt_config_name(c), key,
                        v ? "true" : "false", model, want ? "true" : "false");
    return 0;
}

int mt_model_config_write_mtlab(const mt_model_config *cfg, mt_config *c, int with_dropout)
{
    mt_config *x = mt_config_set_object(c, "mtlab");
    if (!x) return -1;
    int rc = mt_config_set_string(x, "architecture", cfg->arch);
    rc |= mt_config_set_int(x, "sep_token_id", cfg->sep_id);
    rc |= mt_config_set_int(x, "unk_token_id", cfg->unk_id);
    if (with_dropout) rc |= mt_config_set_float(x, "dropout", cfg->dropout);
    return rc ? -1 : 0;
}
