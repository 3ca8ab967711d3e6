/* The five architectures beyond the transformer and Mamba: transformer++ against Hugging Face
 * transformers (tests/fixtures/models/llama, made by make_fixtures.py), the paper and demo
 * presets' sizes, bundles of every architecture saved and reloaded bit-exactly through the one
 * reader, padding, and configuration errors that name the problem. */
#include "test_util.h"

#include <omp.h>

#include "mtlab/error.h"
#include "mtlab/model.h"
#include "mtlab/safetensors.h"

#define FIXTURES "tests/fixtures/models"
/* Reference logits agree to this in fp32 (different summation orders only). */
#define LOGIT_TOL 1e-4f

static const mt_backend *cpu(void) { return mt_backend_cpu(); }

static mt_model *load_or_fail(const char *dir, unsigned flags)
{
    mt_model *m = mt_model_load(dir, cpu(), flags);
    if (!m) fail_msg("loading %s: %s", dir, mt_last_error());
    return m;
}

static void *ref_tensor(mt_safetensors *st, const char *name)
{
    const mt_st_tensor *t = mt_st_find(st, name);
    if (!t) fail_msg("%s: no tensor %s", mt_st_name(st), name);
    void *out = malloc(t->nbytes + 1);
    memcpy(out, t->data, t->nbytes);
    return out;
}

/* ---------------------------------------------------------------- transformer++ vs HF */
static void test_llama_matches_transformers(void **state)
{
    (void)state;
    mt_model *m = load_or_fail(FIXTURES "/llama", 0);
    assert_false(mt_model_is_encdec(m));
    assert_string_equal(mt_model_get_config(m)->arch, "transformer++");
    assert_int_equal(mt_model_param_count(m), 37024); /* as torch counts it */
    mt_safetensors *ref = mt_st_open(FIXTURES "/llama_ref.safetensors");
    assert_non_null(ref);
    const int V = 64, L = 9, Ls = 6, pad = L - Ls;
    int32_t *long_ids = ref_tensor(ref, "long_ids"), *short_ids = ref_tensor(ref, "short_ids");
    int32_t *batch_ids = ref_tensor(ref, "batch_ids");
    float *long_want = ref_tensor(ref, "long_logits"),
          *short_want = ref_tensor(ref, "short_logits");
    float *batch_want = ref_tensor(ref, "batch_logits");
    float *got = malloc(2 * L * V * sizeof(float)), *short_got = malloc(Ls * V * sizeof(float));

    mt_batch one = {.B = 1, .T = L, .ids = long_ids};
    assert_int_equal(mt_model_forward(m, &one, got), 0);
    float d_long = max_abs_diff(got, long_want, (size_t)L * V);
    mt_batch sh = {.B = 1, .T = Ls, .ids = short_ids};
    assert_int_equal(mt_model_forward(m, &sh, short_got), 0);
    float d_short = max_abs_diff(short_got, short_want, (size_t)Ls * V);
    mt_batch batch = {.B = 2, .T = L, .ids = batch_ids};
    assert_int_equal(mt_model_forward(m, &batch, got), 0);
    /* the full row, then the real positions of the padded one */
    float d_batch = max_abs_diff(got, batch_want, (size_t)L * V);
    d_batch = fmaxf(d_batch, max_abs_diff(got + (size_t)(L + pad) * V,
                                          batch_want + (size_t)(L + pad) * V, (size_t)Ls * V));
    float d_pad = max_abs_diff(got + (size_t)(L + pad) * V, short_got, (size_t)Ls * V);
    print_message("transformer++ logits: max |mtlab - transformers| = %.3g (one sequence), %.3g "
                  "(short), %.3g (left-padded batch); padded vs unpadded row %.3g (tolerance "
                  "%.0e)\n",
                  d_long, d_short, d_batch, d_pad, LOGIT_TOL);
    assert_true(d_long < LOGIT_TOL && d_short < LOGIT_TOL && d_batch < LOGIT_TOL);
    assert_true(d_pad < LOGIT_TOL); /* rotary is relative: pads shift positions harmlessly */

    double loss;
    size_t n_tokens;
    assert_int_equal(mt_model_loss(m, &batch, NULL, &loss, &n_tokens), 0);
    float *want = ref_tensor(ref, "batch_loss"), want_loss = *want;
    free(want);
    assert_int_equal(n_tokens, 4 + 3);
    print_message("transformer++ batch loss %.6f, transformers %.6f\n", loss, want_loss);
    assert_true(fabs(loss - want_loss) < 1e-5);
    free(long_ids), free(short_ids), free(batch_ids);
    free(long_want), free(short_want), free(batch_want), free(got), free(short_got);
    mt_st_close(ref);
    mt_model_free(m);
}

/* ---------------------------------------------------------------- presets */
static size_t preset_params(const char *name, mt_model_config *cfg)
{
    assert_int_equal(mt_model_preset(cfg, name), 0);
    size_t n = mt_model_config_param_count(cfg);
    if (!n) fail_msg("preset %s: %s", name, mt_last_error());
    return n;
}

static size_t n_archs(void)
{
    size_t n = 0;
    while (mt_model_arch_list()[n]) n++;
    return n;
}

static void test_presets_match_the_paper(void **state)
{
    (void)state;
    /* docs/models.md §1.5 (Table 5 of the paper); not the registry: the paper's figures */
    const struct {
        const char *name;
        double paper;
    } paper[] = {
        {"transformer++", 79e6}, {"retnet", 77e6},       {"mamba-mha", 78e6},
        {"mamba-local", 78e6},   {"mamba-encdec", 82e6},
    };
    mt_model_config cfg;
    for (size_t i = 0; i < sizeof paper / sizeof paper[0]; i++) {
        size_t n = preset_params(paper[i].name, &cfg);
        double rel = fabs((double)n - paper[i].paper) / paper[i].paper;
        print_message("preset %-20s %11zu parameters, paper %.0fM (%.2f%% off, bound 3%%)\n",
                      paper[i].name, n, paper[i].paper / 1e6, 100 * rel);
        assert_true(rel < 0.03);
        assert_int_equal(cfg.vocab_size, 32000);
    }
    /* the demo presets share one budget: within 5% of transformer-small */
    size_t budget = preset_params("transformer-small", &cfg);
    const char *small[16];
    size_t n_small = 0;
    for (const char *const *p = mt_model_preset_names(); *p; p++)
        if (strstr(*p, "-small")) small[n_small++] = *p;
    assert_int_equal(n_small, n_archs());
    for (size_t i = 0; i < n_small; i++) {
        size_t n = preset_params(small[i], &cfg);
        double gap = ((double)n - (double)budget) / (double)budget;
        print_message("preset %-20s %11zu parameters (%+.1f%% from transformer-small's %zu)\n",
                      small[i], n, 100 * gap, budget);
        assert_true(fabs(gap) < 0.05);
        assert_int_equal(cfg.vocab_size, 8000);
    }
    /* the paper's placement: 0-based layers N/2 - 1 and N - 1, a 64-token window */
    assert_int_equal(mt_model_preset(&cfg, "mamba-local"), 0);
    assert_int_equal(cfg.n_attn_layers, 2);
    assert_int_equal(cfg.attn_layers[0], 11);
    assert_int_equal(cfg.attn_layers[1], 23);
    assert_int_equal(cfg.window, 64);
    /* two presets per architecture of the registry: NAME (the paper's) and NAME-small */
    size_t n_presets = 0;
    for (const char *const *p = mt_model_preset_names(); *p; p++, n_presets++) {
        assert_int_equal(mt_model_preset(&cfg, *p), 0);
        assert_true(mt_model_arch_known(cfg.arch));
        const char *arch = mt_model_arch_list()[n_presets % n_archs()];
        assert_string_equal(cfg.arch, arch);
        assert_int_equal(strcmp(*p, arch) ? 8000 : 32000, cfg.vocab_size);
    }
    assert_int_equal(n_presets, 2 * n_archs());
    assert_int_equal(mt_model_preset(&cfg, "retnet-huge"), -1);
    assert_non_null(strstr(mt_last_error(), "mamba-encdec-small"));
}

/* ---------------------------------------------------------------- tiny models */
/* A small configuration of a preset's architecture, vocabulary 40, touching only the fields
 * the architecture has (the round trip compares whole configurations). */
static mt_model_config tiny(const char *preset)
{
    mt_model_config c;
    assert_int_equal(mt_model_preset(&c, preset), 0);
    c.vocab_size = 40;
    c.d_model = 16;
    if (c.n_heads) c.n_heads = 2;
    c.n_layers = 3;
    if (c.ffn_dim && strcmp(c.arch, "transformer") != 0) c.ffn_dim = 24;
    /* a trained bundle records its direction (a preset has none, which reads back as es -> en) */
    snprintf(c.src_lang, sizeof c.src_lang, "de");
    snprintf(c.tgt_lang, sizeof c.tgt_lang, "en");
    c.langs_recorded = 1;
    if (!strcmp(c.arch, "retnet")) c.value_dim = 32;
    if (!strncmp(c.arch, "mamba", 5)) c.dt_rank = 2, c.d_state = 4;
    if (!strcmp(c.arch, "mamba-encdec")) c.n_encoder_layers = 2;
    if (!strcmp(c.arch, "mamba-local")) c.window = 3;
    if (!strcmp(c.arch, "mamba-mha") || !strcmp(c.arch, "mamba-local")) {
        memset(c.attn_layers, 0, sizeof c.attn_layers);
        c.n_attn_layers = 1, c.attn_layers[0] = 1;
    }
    return c;
}

static mt_model *tiny_model(const char *preset, uint64_t seed)
{
    mt_model_config c = tiny(preset);
    mt_model *m = mt_model_create(&c, cpu(), seed);
    if (!m) fail_msg("%s: %s", preset, mt_last_error());
    return m;
}

static char *make_tmpdir(void)
{
    char *dir = malloc(64);
    assert_int_equal(test_make_tmpdir(dir, 64, "arch"), 0);
    return dir;
}

/* Logits of a short batch: decoder-only `src <sep> tgt </s>`; encoder-decoder with a source. */
static void tiny_forward(mt_model *m, float *logits)
{
    static const int32_t ids[2 * 6] = {7, 8, 2, 9, 10, 1, 0, 11, 2, 12, 13, 1};
    static const int32_t tgt[2 * 4] = {3, 9, 10, 1, 3, 12, 1, 0};
    static const int32_t src[2 * 5] = {7, 8, 14, 15, 1, 11, 16, 1, 0, 0};
    mt_batch dec = {.B = 2, .T = 6, .ids = ids};
    mt_batch encdec = {.B = 2, .T = 4, .ids = tgt, .S = 5, .src = src};
    assert_int_equal(mt_model_forward(m, mt_model_is_encdec(m) ? &encdec : &dec, logits), 0);
}

/* Created with a seed, saved, reloaded: the same config, bit-exact parameters and logits. */
static void test_bundles_round_trip(void **state)
{
    (void)state;
    const char *const *archs = mt_model_arch_list();
    for (size_t i = 0; archs[i]; i++) {
        mt_model *m = tiny_model(archs[i], 5), *twin = tiny_model(archs[i], 5);
        size_t n = mt_model_param_block_size(m);
        assert_memory_equal(mt_model_params(m), mt_model_params(twin), n * sizeof(float));
        char *dir = make_tmpdir();
        if (mt_model_save(m, dir, NULL, MT_DT_F32))
            fail_msg("save %s: %s", archs[i], mt_last_error());
        mt_model *r = load_or_fail(dir, MT_MODEL_LOAD_NO_TOKENIZER);
        assert_memory_equal(mt_model_get_config(r), mt_model_get_config(m),
                            sizeof(mt_model_config));
        assert_int_equal(mt_model_param_block_size(r), n);
        assert_memory_equal(mt_model_params(r), mt_model_params(m), n * sizeof(float));
        float a[2 * 6 * 40] = {0}, b[2 * 6 * 40] = {0}; /* an encoder-decoder fills 2 x 4 rows */
        tiny_forward(m, a);
        tiny_forward(r, b);
        assert_memory_equal(a, b, sizeof a);
        for (size_t k = 0; k < sizeof a / sizeof a[0]; k++) assert_true(isfinite(a[k]));
        print_message("%-14s %6zu parameters, %3d tensors: saved, reloaded bit-exactly\n", archs[i],
                      mt_model_param_count(m), mt_model_tensor_count(m));
        mt_model_free(r), mt_model_free(twin), mt_model_free(m);
        assert_int_equal(test_remove_tree(dir), 0);
        free(dir);
    }
    /* the fixture through mtlab's writer and back */
    mt_model *m = load_or_fail(FIXTURES "/llama", 0);
    char *dir = make_tmpdir();
    assert_int_equal(mt_model_save(m, dir, mt_model_tokenizer_path(m), MT_DT_F32), 0);
    mt_model *r = load_or_fail(dir, 0);
    assert_memory_equal(mt_model_get_config(r), mt_model_get_config(m), sizeof(mt_model_config));
    assert_memory_equal(mt_model_params(r), mt_model_params(m),
                        mt_model_param_block_size(m) * sizeof(float));
    mt_model_free(r), mt_model_free(m);
    assert_int_equal(test_remove_tree(dir), 0);
    free(dir);
}

/* The Hugging Face names of each layout. */
static void test_tensor_names(void **state)
{
    (void)state;
    const struct {
        const char *preset, *name;
    } has[] = {
        {"transformer++", "model.layers.2.self_attn.o_proj.weight"},
        {"transformer++", "model.layers.0.mlp.gate_proj.weight"},
        {"transformer++", "model.layers.1.post_attention_layernorm.weight"},
        {"transformer++", "lm_head.weight"},
        {"retnet", "decoder.layers.0.retention.g_proj.weight"},
        {"retnet", "decoder.layers.2.ffn.gate.weight"},
        {"retnet", "decoder.output_projection.weight"},
        {"mamba-mha", "backbone.layers.1.mixer.o_proj.weight"},
        {"mamba-mha", "backbone.layers.2.mixer.A_log"},
        {"mamba-local", "backbone.layers.1.mixer.q_proj.weight"},
        {"mamba-encdec", "encoder.embeddings.weight"},
        {"mamba-encdec", "encoder.norm_f.weight"},
        {"mamba-encdec", "decoder.layers.4.mixer.k_proj.weight"},
        {"mamba-encdec", "decoder.layers.5.mixer.fc1.bias"},
        {"mamba-encdec", "decoder.layers.6.mixer.dt_proj.bias"},
    };
    const struct {
        const char *preset, *name;
    } lacks[] = {
        {"mamba-mha", "backbone.layers.1.mixer.in_proj.weight"}, /* attention there */
        {"mamba-mha", "lm_head.weight"}, /* tied */
        {"mamba-encdec", "lm_head.weight"},
        {"retnet", "decoder.layers.0.retention.q_proj.bias"},
    };
    for (size_t i = 0; i < sizeof has / sizeof has[0]; i++) {
        mt_model *m = tiny_model(has[i].preset, 1);
        if (mt_model_find_tensor(m, has[i].name) < 0)
            fail_msg("%s lacks %s", has[i].preset, has[i].name);
        mt_model_free(m);
    }
    for (size_t i = 0; i < sizeof lacks / sizeof lacks[0]; i++) {
        mt_model *m = tiny_model(lacks[i].preset, 1);
        assert_int_equal(mt_model_find_tensor(m, lacks[i].name), -1);
        mt_model_free(m);
    }
    mt_model *m = tiny_model("mamba-encdec", 1);
    mt_model_tensor_info info;
    assert_int_equal(
        mt_model_tensor(m, mt_model_find_tensor(m, "decoder.layers.2.mixer.fc1.weight"), &info), 0);
    assert_int_equal(info.shape[0], 48); /* [value; gate] = 2 x 24 */
    assert_int_equal(info.shape[1], 16);
    mt_model_free(m);
}

/* A left-padded row (decoder-only) or a right-padded source (encoder-decoder) gives the
 * logits of the unpadded input at its real positions. */
static void test_padding_is_exact(void **state)
{
    (void)state;
    enum { V = 40 };
    const int32_t full[6] = {7, 8, 2, 9, 10, 1},
                  padded[2 * 8] = {7, 8, 2, 9, 10, 1, 4, 4, 0, 0, 7, 8, 2, 9, 10, 1};
    const char *const *archs = mt_model_arch_list();
    for (size_t i = 0; archs[i]; i++) {
        mt_model *m = tiny_model(archs[i], 9);
        float alone[6 * V], both[2 * 8 * V];
        float d;
        if (!mt_model_is_encdec(m)) {
            mt_batch one = {.B = 1, .T = 6, .ids = full}, two = {.B = 2, .T = 8, .ids = padded};
            assert_int_equal(mt_model_forward(m, &one, alone), 0);
            assert_int_equal(mt_model_forward(m, &two, both), 0);
            d = max_abs_diff(both + (8 + 2) * V, alone, 6 * V);
        } else {
            const int32_t tgt[2 * 3] = {3, 9, 10, 3, 9, 10}, src1[4] = {7, 8, 14, 1};
            const int32_t src2[2 * 6] = {7, 8, 14, 1, 0, 0, 7, 8, 14, 1, 0, 0};
            mt_batch one = {.B = 1, .T = 3, .ids = tgt, .S = 4, .src = src1};
            mt_batch two = {.B = 2, .T = 3, .ids = tgt, .S = 6, .src = src2};
            assert_int_equal(mt_model_forward(m, &one, alone), 0);
            assert_int_equal(mt_model_forward(m, &two, both), 0);
            d = max_abs_diff(both + 3 * V, alone, 3 * V);
        }
        print_message("%-14s padded vs unpadded logits: max |diff| %.2g\n", archs[i], d);
        assert_true(d < 1e-5f);
        mt_model_free(m);
    }
}

/* ---------------------------------------------------------------- configuration errors */
/* config.json of a saved tiny model with one edit; loading must fail naming the problem. */
static void expect_config_error(const char *preset, const char *from, const char *to,
                                const char *needle)
{
    mt_model *m = tiny_model(preset, 2);
    char *dir = make_tmpdir(), path[128];
    assert_int_equal(mt_model_save(m, dir, NULL, MT_DT_F32), 0);
    mt_model_free(m);
    snprintf(path, sizeof path, "%s/config.json", dir);
    char *text = test_read_file(path, NULL);
    assert_non_null(text);
    char *hit = strstr(text, from);
    if (!hit) fail_msg("%s: no '%s' in\n%s", preset, from, text);
    char *edited = malloc(strlen(text) + strlen(to) + 1);
    snprintf(edited, strlen(text) + strlen(to) + 1, "%.*s%s%s", (int)(hit - text), text, to,
             hit + strlen(from));
    test_write_text(path, edited);
    mt_clear_error();
    mt_model *bad = mt_model_load(dir, cpu(), MT_MODEL_LOAD_NO_TOKENIZER);
    print_message("%s: %s -> %s: %s\n", preset, from, to, mt_last_error());
    assert_null(bad);
    assert_non_null(strstr(mt_last_error(), needle));
    free(text), free(edited);
    assert_int_equal(test_remove_tree(dir), 0);
    free(dir);
}

/* how mtlab's writer prints attention_layers = {1} */
#define ATTN_LAYERS_1 "\"attention_layers\": [\n    1\n  ]"

static void test_config_errors_name_the_problem(void **state)
{
    (void)state;
    expect_config_error("transformer++", "\"num_key_value_heads\": 2", "\"num_key_value_heads\": 1",
                        "grouped keys/values are not supported");
    expect_config_error("transformer++", "\"hidden_act\": \"silu\"", "\"hidden_act\": \"gelu\"",
                        "hidden_act \"gelu\"");
    expect_config_error("transformer++", "\"rope_type\": \"default\"", "\"rope_type\": \"yarn\"",
                        "rope_type \"yarn\"");
    expect_config_error("transformer++", "\"num_hidden_layers\": 3", "\"num_hidden_layers\": 4",
                        "missing tensor 'model.layers.3.self_attn.q_proj.weight'");
    expect_config_error("transformer++", "\"mlp_bias\": false", "\"mlp_bias\": true",
                        "mlp_bias = true is not supported (mtlab's transformer++ has false)");
    expect_config_error("retnet", "\"decoder_retention_heads\": 2",
                        "\"decoder_retention_heads\": 3", "3 heads must divide");
    expect_config_error("retnet", "\"decoder_retention_heads\": 2",
                        "\"deepnorm\": true, \"decoder_retention_heads\": 2",
                        "deepnorm = true is not supported (mtlab's RetNet has false)");
    expect_config_error("retnet", "\"decoder_value_embed_dim\": 32",
                        "\"decoder_value_embed_dim\": 48",
                        "'decoder.layers.0.retention.v_proj.weight' has shape (32, 16), "
                        "expected (48, 16)");
    expect_config_error("retnet", "\"activation_fn\": \"swish\"", "\"activation_fn\": \"gelu\"",
                        "activation_fn \"gelu\" is not supported (the GLU uses swish)");
    expect_config_error("retnet",
                        "\"dropout\": ", "\"dropout\": 1.5, \"x\": ", "key 'dropout' must be");
    expect_config_error("mamba-mha", "\"attention_layers\": [", "\"attention_layers\": [2, ",
                        "attention_layers must be increasing");
    expect_config_error("mamba-mha", ATTN_LAYERS_1, "\"attention_layers\": [3]",
                        "attention layer 3 is outside the 3 layers");
    expect_config_error("mamba-mha", ATTN_LAYERS_1, "\"attention_layers\": [2]",
                        "missing tensor 'backbone.layers.1.mixer.in_proj.weight'");
    /* a real option now: the weights saved with a conv bias are not this model's */
    expect_config_error("mamba-local", "\"use_conv_bias\": true", "\"use_conv_bias\": false",
                        "unexpected tensor 'backbone.layers.0.mixer.conv1d.bias'");
    expect_config_error("mamba-local", "\"sliding_window\": 3", "\"sliding_window\": 0",
                        "sliding_window");
    expect_config_error("mamba-local", "\"hidden_act\": \"silu\"", "\"hidden_act\": \"gelu\"",
                        "hidden_act \"gelu\" is not supported (Mamba uses silu)");
    expect_config_error("mamba-mha", "\"intermediate_size\": 32", "\"intermediate_size\": 30",
                        "intermediate_size 30 is not expand x hidden_size = 32");
    expect_config_error("mamba-encdec", "\"decoder_ffn_dim\": 24", "\"decoder_ffn_dim\": 0",
                        "key 'decoder_ffn_dim' must be an integer from 1");
    expect_config_error("mamba-encdec", "\"encoder_layers\": 2", "\"encoder_layers\": 1",
                        "unexpected tensor 'encoder.layers.1.");
    expect_config_error("mamba-encdec", "\"num_attention_heads\": 2", "\"num_attention_heads\": 5",
                        "5 attention heads do not divide");
}

/* Fields that shape a model without showing in its tensors' shapes (MT_LAYOUT_*): checkpoints
 * that differ in them are refused for averaging and init, naming what differs. */
static void expect_layout_refused(mt_model_config want, mt_model_config got, const char *needle)
{
    mt_model *a = mt_model_create(&want, cpu(), 1), *b = mt_model_create(&got, cpu(), 1);
    if (!a || !b) fail_msg("%s", mt_last_error());
    assert_int_equal(mt_model_check_same_layout(a, "A", b, "B"), -1);
    if (!strstr(mt_last_error(), needle)) fail_msg("'%s' not in: %s", needle, mt_last_error());
    assert_int_equal(mt_model_check_same_layout(a, "A", a, "A"), 0);
    mt_model_free(a), mt_model_free(b);
}

static void test_layout_beyond_the_shapes(void **state)
{
    (void)state;
    /* not the registry: the architectures with rotary positions or a parallel residual */
    mt_model_config c = tiny("gpt-neox"), d = c;
    d.parallel_residual = 0;
    expect_layout_refused(c, d, "B has a sequential residual, A a parallel one");
    d = c, d.rotary_pct = 0.5f;
    expect_layout_refused(c, d, "rotates 0.5");
    d = c, d.rope_theta = 500.0f;
    expect_layout_refused(c, d, "at base 500");
    mt_model_config l = tiny("transformer++"), m = l;
    m.rope_theta = 500.0f;
    expect_layout_refused(l, m, "at base 500");
}

int main(void)
{
    /* tiny models: thread start-up and spinning cost far more than their math, and on a busy
     * machine oversubscribed threads make these tests 100x slower */
    omp_set_num_threads(1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_llama_matches_transformers),
        cmocka_unit_test(test_presets_match_the_paper),
        cmocka_unit_test(test_bundles_round_trip),
        cmocka_unit_test(test_tensor_names),
        cmocka_unit_test(test_padding_is_exact),
        cmocka_unit_test(test_config_errors_name_the_problem),
        cmocka_unit_test(test_layout_beyond_the_shapes),
    };
    return cmocka_run_group_tests_name("models_arch", tests, NULL, NULL);
}
