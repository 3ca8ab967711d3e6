/* `transformer`: the paper's encoder-decoder Transformer in Hugging Face MarianMTModel layout
 * (docs/models.md §5): shared token embedding times sqrt(C), fixed sinusoid positions, post-norm
 * layers (encoder: self-attention, FFN; decoder: causal self-attention, cross-attention, FFN),
 * biases everywhere, output projection tied to the embedding or separate (lm_head.weight),
 * plus the final_logits_bias buffer. A hub checkpoint with separate vocabularies has an
 * encoder embedding of its own (separate_embeddings; the output is then the decoder's). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/model_internal.h"
#include "mtlab/error.h"

#define MARIAN_LN_EPS 1e-5f

static int build(mt_model *m)
{
    const mt_model_config *c = &m->cfg;
    int C = c->d_model, V = c->vocab_size;
    if (c->separate_embeddings) {
        int shape[2] = {V, C};
        m->enc.embed_tensor =
            mt_model_add_tensor(m, "model.encoder.embed_tokens.weight", 2, shape, 1, 0);
        mt_model_add_embeddings(m, "model.decoder.embed_tokens.weight", "lm_head.weight");
    } else {
        mt_model_add_embeddings(m, "model.shared.weight", "lm_head.weight");
    }
    int bias_shape[2] = {1, V};
    m->logits_bias_tensor = mt_model_add_tensor(m, "final_logits_bias", 2, bias_shape, 0, 1);
    m->embed_scale = c->scale_embedding ? sqrtf((float)C) : 1.0f;

    mt_unit_config self = {.attn = {.C = C, .H = c->n_heads, .bias = 1}};
    mt_unit_config causal = self, cross = self;
    causal.attn.causal = 1;
    mt_unit_config ffn = {.ffn = {.C = C, .F = c->ffn_dim, .act = c->activation, .bias = 1}};
    char prefix[MT_NAME_MAX], norm[MT_NAME_MAX];
    const mt_unit_norm post_ln = {
        .kind = MT_NORM_LAYER, .name = norm, .post = 1, .eps = MARIAN_LN_EPS};

    m->enc.positions = 1;
    for (int l = 0; l < c->n_encoder_layers; l++) {
        snprintf(prefix, sizeof prefix, "model.encoder.layers.%d.self_attn.", l);
        snprintf(norm, sizeof norm, "model.encoder.layers.%d.self_attn_layer_norm", l);
        mt_model_add_unit(m, &m->enc, MT_UNIT_SELF_ATTN, &self, prefix, &post_ln)->layer = l;
        snprintf(prefix, sizeof prefix, "model.encoder.layers.%d.", l);
        snprintf(norm, sizeof norm, "model.encoder.layers.%d.final_layer_norm", l);
        mt_model_add_unit(m, &m->enc, MT_UNIT_FFN, &ffn, prefix, &post_ln)->layer = l;
    }
    m->dec.positions = 1;
    for (int l = 0; l < c->n_layers; l++) {
        snprintf(prefix, sizeof prefix, "model.decoder.layers.%d.self_attn.", l);
        snprintf(norm, sizeof norm, "model.decoder.layers.%d.self_attn_layer_norm", l);
        mt_model_add_unit(m, &m->dec, MT_UNIT_SELF_ATTN, &causal, prefix, &post_ln)->layer = l;
        snprintf(prefix, sizeof prefix, "model.decoder.layers.%d.encoder_attn.", l);
        snprintf(norm, sizeof norm, "model.decoder.layers.%d.encoder_attn_layer_norm", l);
        mt_model_add_unit(m, &m->dec, MT_UNIT_CROSS_ATTN, &cross, prefix, &post_ln)->layer = l;
        snprintf(prefix, sizeof prefix, "model.decoder.layers.%d.", l);
        snprintf(norm, sizeof norm, "model.decoder.layers.%d.final_layer_norm", l);
        mt_model_add_unit(m, &m->dec, MT_UNIT_FFN, &ffn, prefix, &post_ln)->layer = l;
    }
    return 0;
}

/* fairseq / torchscale initialisation (the paper's Transformer): token embedding N(0, C^-1/2)
 * with the <pad> row zero, projections xavier_uniform (q/k/v with gain 2^-1/2, as torchscale
 * MultiheadAttention), biases 0, LayerNorm 1 and 0, final_logits_bias 0. */
static void init(mt_model *m, float *host, uint64_t seed)
{
    const mt_model_config *c = &m->cfg;
    int C = c->d_model;
    mt_model_init_embeddings(m, host, seed, 0, 1.0f / sqrtf((float)C));
    float *emb = mt_model_host_tensor(m, host, m->embed_tensor);
    mt_init_fill(emb + (size_t)c->pad_id * C, (size_t)C, 0.0f);
    mt_rng r;
    const mt_stack *stacks[2] = {&m->enc, &m->dec};
    uint64_t stream = 2;
    for (int s = 0; s < 2; s++) {
        for (int i = 0; i < stacks[s]->n_units; i++) {
            const mt_unit *u = &stacks[s]->units[i];
            mt_unit_params p;
            mt_unit_params_point(u->kind, &u->cfg, &p, host + m->tensors[u->first_tensor].offset);
            mt_rng_init(&r, seed, stream++);
            if (u->kind == MT_UNIT_FFN) {
                int F = u->cfg.ffn.F;
                mt_init_xavier_uniform(&r, p.ffn.fc1_w, F, C, 1.0f);
                mt_init_xavier_uniform(&r, p.ffn.fc2_w, C, F, 1.0f);
            } else {
                float g = 1.0f / sqrtf(2.0f);
                mt_init_xavier_uniform(&r, p.attn.q_w, C, C, g);
                mt_init_xavier_uniform(&r, p.attn.k_w, C, C, g);
                mt_init_xavier_uniform(&r, p.attn.v_w, C, C, g);
                mt_init_xavier_uniform(&r, p.attn.o_w, C, C, 1.0f);
            }
        }
    }
    if (m->enc.embed_tensor >= 0) { /* separate_embeddings: the encoder's, as the decoder's */
        float *enc = mt_model_host_tensor(m, host, m->enc.embed_tensor);
        mt_rng_init(&r, seed, stream);
        mt_init_normal(&r, enc, (size_t)c->vocab_size * C, 1.0f / sqrtf((float)C));
        mt_init_fill(enc + (size_t)c->pad_id * C, (size_t)C, 0.0f);
    }
    mt_model_init_norms(m, host);
}

static int activation_from_name(const char *name, mt_act *out)
{
    if (!strcmp(name, "relu")) *out = MT_ACT_RELU;
    else if (!strcmp(name, "swish") || !strcmp(name, "silu")) *out = MT_ACT_SILU;
    else if (!strcmp(name, "gelu")) *out = MT_ACT_GELU;
    else return -1;
    return 0;
}

static const char *activation_name(mt_act act)
{
    switch (act) {
    case MT_ACT_RELU: return "relu";
    case MT_ACT_SILU: return "swish";
    case MT_ACT_GELU: return "gelu";
    case MT_ACT_SOFTPLUS:
    case MT_ACT_TANH: break;
    }
    return "?";
}

static int read_activation(mt_model_config *cfg, const mt_config *c)
{
    const char *act = mt_config_string_or(c, "activation_function", "gelu");
    if (!act) return -1;
    if (activation_from_name(act, &cfg->activation))
        return mt_error("%s: activation_function \"%s\" is not supported (relu, swish, silu, "
                        "gelu)",
                        mt_config_name(c), act);
    return 0;
}

static int write_activation(const mt_model_config *cfg, mt_config *o)
{
    return mt_config_set_string(o, "activation_function", activation_name(cfg->activation));
}

/* MarianModel: false gives the encoder and the decoder an embedding each (copies of one
 * vocab_size x d_model initialisation), and a tied lm_head is the decoder's */
static int read_shared(mt_model_config *cfg, const mt_config *c)
{
    int shared;
    if (mt_config_bool_or(c, "share_encoder_decoder_embeddings", 1, &shared)) return -1;
    cfg->separate_embeddings = !shared;
    return 0;
}

static int write_shared(const mt_model_config *cfg, mt_config *o)
{
    return mt_config_set_bool(o, "share_encoder_decoder_embeddings", !cfg->separate_embeddings);
}

/* bad_words_ids as the hub's opus-mt configs give it, [[pad_token_id]]: mtlab never generates
 * <pad> and bans nothing else */
static int read_bad_words(mt_model_config *cfg, const mt_config *c)
{
    if (!mt_config_has(c, "bad_words_ids")) return 0;
    char want[32], *got = mt_config_value_json(c, "bad_words_ids");
    snprintf(want, sizeof want, "[[%d]]", cfg->pad_id);
    int rc = 0;
    if (!got || strcmp(got, want))
        rc = mt_error("%s: bad_words_ids %.80s is not supported (only %s, the pad_token_id: "
                      "mtlab never generates <pad> and bans nothing else)",
                      mt_config_name(c), got ? got : "?", want);
    free(got);
    return rc;
}

/* MarianConfig's keys, in the order config.json holds them, with its defaults for the optional
 * ones; both sides of the model must agree where mtlab has one value */
static const mt_config_key keys[] = {
    MT_CFG_CONST_CLASS("MarianMTModel"),
    MT_CFG_CONST_STRING("model_type", "marian"),
    MT_CFG_INT("d_model", d_model, 1, 1 << 16),
    MT_CFG_INT("encoder_layers", n_encoder_layers, 1, 1024),
    MT_CFG_INT("decoder_layers", n_layers, 1, 1024),
    MT_CFG_INT("encoder_attention_heads", n_heads, 1, 1 << 16),
    MT_CFG_SAME_INT("decoder_attention_heads", n_heads, "encoder_attention_heads"),
    MT_CFG_INT("encoder_ffn_dim", ffn_dim, 1, 1 << 18),
    MT_CFG_SAME_INT("decoder_ffn_dim", ffn_dim, "encoder_ffn_dim"),
    MT_CFG_CUSTOM("activation_function", read_activation, write_activation),
    MT_CFG_INT_OR("max_position_embeddings", max_positions, 1024, 1, 1 << 20),
    MT_CFG_INT("vocab_size", vocab_size, 1, 1 << 22),
    MT_CFG_SAME_INT("decoder_vocab_size", vocab_size, "vocab_size"),
    MT_CFG_BOOL_OR("scale_embedding", scale_embedding, 0),
    MT_CFG_CUSTOM("share_encoder_decoder_embeddings", read_shared, write_shared),
    MT_CFG_BOOL_OR("tie_word_embeddings", tie_embeddings, 1),
    MT_CFG_CONST_BOOL("is_encoder_decoder", 1),
    MT_CFG_TOKEN_ID("pad_token_id", pad_id),
    MT_CFG_TOKEN_ID("eos_token_id", eos_id),
    {.name = "forced_eos_token_id",
     .type = MT_KEY_TOKEN_ID,
     .offset = MT_KEY_FIELD(eos_id),
     .flags = MT_KEY_WRITE_ONLY},
    MT_CFG_TOKEN_ID("bos_token_id", bos_id),
    MT_CFG_TOKEN_ID("decoder_start_token_id", decoder_start_id),
    {.name = "bad_words_ids",
     .type = MT_KEY_CUSTOM,
     .read = read_bad_words,
     .flags = MT_KEY_READ_ONLY},
    /* keys of the BART-era configs the hub's opus-mt checkpoints were converted with: what
     * Marian is (sinusoid positions, post-norm, no extra norms or logits bias) */
    MT_CFG_FIXED_BOOL("static_position_embeddings", 1, MT_KEY_READ_ONLY),
    MT_CFG_FIXED_BOOL("normalize_before", 0, MT_KEY_READ_ONLY),
    MT_CFG_FIXED_BOOL("normalize_embedding", 0, MT_KEY_READ_ONLY),
    MT_CFG_FIXED_BOOL("add_final_layer_norm", 0, MT_KEY_READ_ONLY),
    MT_CFG_FIXED_BOOL("add_bias_logits", 0, MT_KEY_READ_ONLY),
    MT_CFG_FLOAT_OR("dropout", dropout, 0.1f, 0.0, 0.999),
    MT_CFG_CONST_FLOAT("attention_dropout", 0.0),
    MT_CFG_CONST_FLOAT("activation_dropout", 0.0),
    MT_CFG_FLOAT_OR("init_std", init_std, 0.02f, 0.0, 1e3),
    MT_CFG_END,
};

static int check(const mt_model_config *c)
{
    if (c->n_encoder_layers <= 0 || c->n_encoder_layers > 1024)
        return mt_error("transformer config: encoder_layers %d must be in 1..1024",
                        c->n_encoder_layers);
    if (c->n_heads <= 0 || c->d_model % c->n_heads)
        return mt_error("transformer config: %d heads do not divide d_model %d", c->n_heads,
                        c->d_model);
    if (c->d_model % 2)
        return mt_error("transformer config: d_model %d must be even (sinusoids)", c->d_model);
    if (c->ffn_dim <= 0 || c->ffn_dim > (1 << 18))
        return mt_error("transformer config: ffn_dim %d must be in 1..%d", c->ffn_dim, 1 << 18);
    if (c->max_positions <= 0 || c->max_positions > (1 << 20))
        return mt_error("transformer config: max_position_embeddings %d must be in 1..%d",
                        c->max_positions, 1 << 20);
    if (c->activation == MT_ACT_SOFTPLUS)
        return mt_error("transformer config: softplus is not an FFN activation");
    return 0;
}

static const char *const aliases[][2] = {
    {"model.shared.weight", "model.encoder.embed_tokens.weight"},
    {NULL, NULL},
};

static const char *const embed_copies[] = {
    "model.encoder.embed_tokens.weight",
    "model.decoder.embed_tokens.weight",
    NULL,
};

static const char *const ignored[] = {
    "model.encoder.embed_positions.weight",
    "model.decoder.embed_positions.weight",
    "model.encoder.embed_tokens.weight",
    "model.decoder.embed_tokens.weight",
    NULL,
};

/* the paper's 6+6 layers, d_model 512, 8 heads, FFN 2048, separate output (~77M); the demo's
 * 3+3 layers, d_model 192, 4 heads, FFN 768, tied output */
static void preset(mt_model_config *c, int small)
{
    c->d_model = small ? 192 : 512;
    c->n_encoder_layers = small ? 3 : 6;
    c->n_layers = small ? 3 : 6;
    c->n_heads = small ? 4 : 8;
    c->ffn_dim = small ? 768 : 2048;
    c->activation = MT_ACT_RELU;
    c->max_positions = 1024;
    c->scale_embedding = 1;
    c->tie_embeddings = small;
    c->init_std = 0.02f;
}

const mt_arch mt_arch_transformer = {
    .name = "transformer",
    .hf_class = "MarianMTModel",
    .model_type = "marian",
    .encdec = 1,
    .build = build,
    .init = init,
    .check = check,
    .keys = {{keys, "Marian"}},
    .aliases = aliases,
    .ignored = ignored,
    .embed_copies = embed_copies,
    .preset = preset,
    .layout_keys = MT_LAYOUT_HEADS,
};
