/* Model presets.
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
#include <string.h>

#include "models/model_internal.h"
#include "mtlab/error.h"

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
