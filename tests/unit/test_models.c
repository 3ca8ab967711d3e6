/* Models against Hugging Face transformers: the bundles and reference logits under
 * tests/fixtures/models/ were made by make_fixtures.py with transformers 5.x in fp32. Also the
 * bundle round trip, loader errors and the parameter counts of the presets. */
#include "test_util.h"

#include <unistd.h>

#include "math/half.h"
#include "mtlab/bundle.h"
#include "mtlab/error.h"
#include "mtlab/model.h"
#include "mtlab/safetensors.h"
#include "mtlab/tokenizer.h"

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

/* A reference tensor from <name>_ref.safetensors: F32 as floats, I32 as int32. */
static void *ref_tensor(mt_safetensors *st, const char *name, size_t *numel)
{
    const mt_st_tensor *t = mt_st_find(st, name);
    if (!t) fail_msg("%s: no tensor %s", mt_st_name(st), name);
    void *out = malloc(t->nbytes + 1);
    memcpy(out, t->data, t->nbytes);
    if (numel) *numel = t->numel;
    return out;
}

static double ref_scalar(mt_safetensors *st, const char *name)
{
    float *v = ref_tensor(st, name, NULL);
    double x = v[0];
    free(v);
    return x;
}

static void test_marian_matches_transformers(void **state)
{
    (void)state;
    mt_model *m = load_or_fail(FIXTURES "/marian", 0);
    assert_true(mt_model_is_encdec(m));
    assert_int_equal(mt_model_param_count(m),
                     44800); /* 48896 in torch minus 2 x (64, 32) positions */
    mt_safetensors *ref = mt_st_open(FIXTURES "/marian_ref.safetensors");
    assert_non_null(ref);
    size_t n_logits;
    int32_t *src = ref_tensor(ref, "src_ids", NULL), *tgt = ref_tensor(ref, "tgt_ids", NULL);
    float *want = ref_tensor(ref, "logits", &n_logits);
    mt_batch b = {.B = 2, .T = 6, .ids = tgt, .S = 7, .src = src};
    assert_int_equal(n_logits, 2 * 6 * 64);
    float *got = malloc(n_logits * sizeof(float));
    assert_int_equal(mt_model_forward(m, &b, got), 0);
    float diff = max_abs_diff(got, want, n_logits);
    print_message("marian logits: max |mtlab - transformers| = %.3g (tolerance %.0e)\n", diff,
                  LOGIT_TOL);
    assert_true(diff < LOGIT_TOL);

    double loss;
    size_t n_tokens;
    assert_int_equal(mt_model_loss(m, &b, NULL, &loss, &n_tokens), 0);
    assert_int_equal(n_tokens, 10); /* 5 predictions per row, no padding in the targets */
    print_message("marian loss %.6f, transformers %.6f\n", loss, ref_scalar(ref, "loss"));
    assert_true(fabs(loss - ref_scalar(ref, "loss")) < 1e-5);
    free(src), free(tgt), free(want), free(got);
    mt_st_close(ref);
    mt_model_free(m);
}

static void test_mamba_matches_transformers(void **state)
{
    (void)state;
    mt_model *m = load_or_fail(FIXTURES "/mamba", 0);
    assert_false(mt_model_is_encdec(m));
    assert_int_equal(mt_model_param_count(m), 21984);
    mt_safetensors *ref = mt_st_open(FIXTURES "/mamba_ref.safetensors");
    assert_non_null(ref);
    const int V = 64, L = 9, Ls = 6, pad = L - Ls;
    int32_t *long_ids = ref_tensor(ref, "long_ids", NULL);
    int32_t *short_ids = ref_tensor(ref, "short_ids", NULL);
    int32_t *batch_ids = ref_tensor(ref, "batch_ids", NULL);
    float *long_want = ref_tensor(ref, "long_logits", NULL);
    float *short_want = ref_tensor(ref, "short_logits", NULL);
    float *batch_want = ref_tensor(ref, "batch_logits", NULL);
    float *got = malloc(2 * L * V * sizeof(float)), *short_got = malloc(Ls * V * sizeof(float));

    mt_batch one = {.B = 1, .T = L, .ids = long_ids};
    assert_int_equal(mt_model_forward(m, &one, got), 0);
    float d_long = max_abs_diff(got, long_want, (size_t)L * V);
    mt_batch sh = {.B = 1, .T = Ls, .ids = short_ids};
    assert_int_equal(mt_model_forward(m, &sh, short_got), 0);
    float d_short = max_abs_diff(short_got, short_want, (size_t)Ls * V);
    mt_batch batch = {.B = 2, .T = L, .ids = batch_ids};
    assert_int_equal(mt_model_forward(m, &batch, got), 0);
    /* transformers' logits at pad positions are as meaningless as ours: compare real ones */
    float d_batch = max_abs_diff(got, batch_want, (size_t)L * V);
    d_batch = fmaxf(d_batch, max_abs_diff(got + (size_t)(L + pad) * V,
                                          batch_want + (size_t)(L + pad) * V, (size_t)Ls * V));
    float d_pad = max_abs_diff(got + (size_t)(L + pad) * V, short_got, (size_t)Ls * V);
    print_message("mamba logits: max |mtlab - transformers| = %.3g (one sequence), %.3g (short), "
                  "%.3g (left-padded batch); padded vs unpadded row %.3g (tolerance %.0e)\n",
                  d_long, d_short, d_batch, d_pad, LOGIT_TOL);
    assert_true(d_long < LOGIT_TOL && d_short < LOGIT_TOL && d_batch < LOGIT_TOL);
    assert_true(d_pad < 1e-5f);

    double loss;
    size_t n_tokens;
    assert_int_equal(mt_model_loss(m, &batch, NULL, &loss, &n_tokens), 0);
    assert_int_equal(n_tokens, 4 + 3); /* from <sep> on: 9 61 33 </s> and 55 12 </s> */
    print_message("mamba batch loss %.6f, transformers %.6f\n", loss,
                  ref_scalar(ref, "batch_loss"));
    assert_true(fabs(loss - ref_scalar(ref, "batch_loss")) < 1e-5);
    free(long_ids), free(short_ids), free(batch_ids);
    free(long_want), free(short_want), free(batch_want), free(got), free(short_got);
    mt_st_close(ref);
    mt_model_free(m);
}

/* ---------------------------------------------------------------- temporary bundles */
static char *make_tmpdir(void)
{
    char *dir = malloc(64);
    assert_int_equal(test_make_tmpdir(dir, 64, "models"), 0);
    return dir;
}

static void remove_tree(const char *dir) { assert_int_equal(test_remove_tree(dir), 0); }

/* A copy of a fixture bundle in a new directory, config.json edited: every occurrence of
 * `from` replaced by `to` (from NULL: unchanged); tokenizer.model only when with_tokenizer. */
static char *edited_bundle(const char *fixture, const char *from, const char *to,
                           int with_tokenizer)
{
    char *dir = make_tmpdir(), src[256], dst[512];
    size_t len;
    snprintf(src, sizeof src, "%s/%s/model.safetensors", FIXTURES, fixture);
    char *data = test_read_file(src, &len);
    snprintf(dst, sizeof dst, "%s/model.safetensors", dir);
    test_write_file(dst, data, len);
    free(data);
    if (with_tokenizer) {
        snprintf(src, sizeof src, "%s/%s/tokenizer.model", FIXTURES, fixture);
        data = test_read_file(src, &len);
        snprintf(dst, sizeof dst, "%s/tokenizer.model", dir);
        test_write_file(dst, data, len);
        free(data);
    }
    snprintf(src, sizeof src, "%s/%s/config.json", FIXTURES, fixture);
    char *cfg = test_read_file(src, &len);
    char out[8192] = "";
    const char *p = cfg;
    while (from && *p) {
        const char *hit = strstr(p, from);
        if (!hit) break;
        strncat(out, p, (size_t)(hit - p));
        strcat(out, to);
        p = hit + strlen(from);
    }
    strcat(out, p);
    snprintf(dst, sizeof dst, "%s/config.json", dir);
    test_write_file(dst, out, strlen(out));
    free(cfg);
    return dir;
}

/* Loading the edited bundle fails with a message containing every needle. */
static void expect_load_error(const char *fixture, const char *from, const char *to,
                              const char *needle1, const char *needle2)
{
    char *dir = edited_bundle(fixture, from, to, 1);
    mt_clear_error();
    mt_model *m = mt_model_load(dir, cpu(), 0);
    const char *msg = mt_last_error();
    print_message("%s -> %s: %s\n", from, to, msg);
    assert_null(m);
    assert_non_null(strstr(msg, needle1));
    if (needle2) assert_non_null(strstr(msg, needle2));
    remove_tree(dir);
    free(dir);
}

static void test_loader_errors_name_the_problem(void **state)
{
    (void)state;
    expect_load_error("mamba", "\"time_step_rank\": 2", "\"time_step_rank\": 3",
                      "backbone.layers.0.mixer.x_proj.weight",
                      "has shape (34, 64), expected (35, 64)");
    expect_load_error("mamba", "\"num_hidden_layers\": 2", "\"num_hidden_layers\": 3",
                      "missing tensor 'backbone.layers.2.mixer.in_proj.weight'", NULL);
    expect_load_error("mamba", "\"num_hidden_layers\": 2", "\"num_hidden_layers\": 1",
                      "unexpected tensor 'backbone.layers.1.", NULL);
    expect_load_error("mamba", "\"hidden_size\": 32", "\"hidden_size\": \"abc\"", "hidden_size",
                      "config.json");
    expect_load_error("mamba", "\"architecture\": \"mamba\"", "\"architecture\": \"bert\"",
                      "mtlab.architecture 'bert'", NULL);
    expect_load_error("marian", "\"architecture\": \"transformer\"", "\"architecture\": \"x\"",
                      "architecture 'x' is not one of ", NULL);
    expect_load_error("marian", "\"decoder_ffn_dim\": 64", "\"decoder_ffn_dim\": 65",
                      "decoder_ffn_dim = 65 differs from encoder_ffn_dim = 64", NULL);
    expect_load_error("marian", "\"activation_function\": \"relu\"",
                      "\"activation_function\": \"tanh\"", "activation_function \"tanh\"", NULL);
    expect_load_error("marian", "_attention_heads\": 4", "_attention_heads\": 3",
                      "3 heads do not divide d_model 32", "/tmp/mtlab-models-");
    expect_load_error("marian", "\"encoder_layers\": 2", "\"encoder_layers\": 3",
                      "missing tensor 'model.encoder.layers.2.self_attn.q_proj.weight'", NULL);
}

static void test_tokenizer_needed_unless_flagged(void **state)
{
    (void)state;
    char *dir = edited_bundle("mamba", NULL, NULL, 0);
    mt_clear_error();
    assert_null(mt_model_load(dir, cpu(), 0));
    print_message("without tokenizer.model: %s\n", mt_last_error());
    assert_non_null(strstr(mt_last_error(), "tokenizer.model"));
    mt_model *m = load_or_fail(dir, MT_MODEL_LOAD_NO_TOKENIZER);
    assert_null(mt_model_tokenizer_path(m));
    mt_model_free(m);
    remove_tree(dir);
    free(dir);
}

static void test_bad_batches_are_errors(void **state)
{
    (void)state;
    mt_model *m = load_or_fail(FIXTURES "/mamba", 0);
    float logits[4 * 64];
    int32_t ids[4] = {5, 6, 64, 1};
    mt_batch b = {.B = 1, .T = 4, .ids = ids};
    assert_int_equal(mt_model_forward(m, &b, logits), -1);
    print_message("%s\n", mt_last_error());
    assert_non_null(strstr(mt_last_error(), "id 64 at row 0, position 2"));
    b.T = 0;
    assert_int_equal(mt_model_forward(m, &b, logits), -1);
    mt_model_free(m);

    m = load_or_fail(FIXTURES "/marian", 0);
    int32_t tgt[2] = {3, 5};
    mt_batch nosrc = {.B = 1, .T = 2, .ids = tgt};
    assert_int_equal(mt_model_forward(m, &nosrc, logits), -1);
    assert_non_null(strstr(mt_last_error(), "without a source"));
    int32_t *longer = calloc(65, sizeof(int32_t));
    mt_batch too_long = {.B = 1, .T = 65, .ids = longer, .S = 2, .src = tgt};
    float *big = malloc(65 * 64 * sizeof(float));
    assert_int_equal(mt_model_forward(m, &too_long, big), -1);
    assert_non_null(strstr(mt_last_error(), "exceed max_position_embeddings 64"));
    free(big), free(longer);
    mt_model_free(m);
}

/* Save, reload: every parameter bit-exact, same configuration, same logits. */
static void round_trip(const char *fixture, const mt_batch *b, size_t n_logits)
{
    char src[256];
    snprintf(src, sizeof src, "%s/%s", FIXTURES, fixture);
    mt_model *m = load_or_fail(src, 0);
    char *dir = make_tmpdir();
    if (mt_model_save(m, dir, mt_model_tokenizer_path(m), MT_DT_F32))
        fail_msg("save: %s", mt_last_error());
    mt_model *r = load_or_fail(dir, 0);
    /* the tokenizer travelled with the bundle and is one mtlab's tokenizer accepts */
    mt_tokenizer *tok = mt_tokenizer_load(mt_model_tokenizer_path(r));
    if (!tok) fail_msg("%s", mt_last_error());
    assert_true(mt_tokenizer_vocab_size(tok) <= mt_model_get_config(r)->vocab_size);
    assert_int_equal(mt_tokenizer_piece_to_id(tok, "<sep>"), mt_model_get_config(r)->sep_id);
    mt_tokenizer_free(tok);
    assert_int_equal(mt_model_param_block_size(r), mt_model_param_block_size(m));
    assert_memory_equal(mt_model_params(r), mt_model_params(m),
                        mt_model_param_block_size(m) * sizeof(float));
    assert_memory_equal(mt_model_get_config(r), mt_model_get_config(m), sizeof(mt_model_config));
    float *a = malloc(n_logits * sizeof(float)), *c = malloc(n_logits * sizeof(float));
    assert_int_equal(mt_model_forward(m, b, a), 0);
    assert_int_equal(mt_model_forward(r, b, c), 0);
    assert_memory_equal(a, c, n_logits * sizeof(float));
    print_message("%s: saved to %s and reloaded bit-exactly (%zu floats)\n", fixture, dir,
                  mt_model_param_block_size(m));
    free(a), free(c);
    mt_model_free(r);
    mt_model_free(m);
    remove_tree(dir);
    free(dir);
}

static void test_saved_bundles_reload_bit_exactly(void **state)
{
    (void)state;
    int32_t ids[6] = {17, 23, 2, 9, 61, 1};
    mt_batch dec = {.B = 1, .T = 6, .ids = ids};
    round_trip("mamba", &dec, 6 * 64);
    int32_t src[4] = {30, 8, 55, 1}, tgt[3] = {3, 20, 6};
    mt_batch encdec = {.B = 1, .T = 3, .ids = tgt, .S = 4, .src = src};
    round_trip("marian", &encdec, 3 * 64);
}

/* A bundle whose weights are stored in F16 or BF16 loads (converted to fp32) and gives the
 * logits of the F32 original up to the storage rounding. */
static void test_half_precision_weights_load(void **state)
{
    (void)state;
    mt_model *ref = load_or_fail(FIXTURES "/mamba", 0);
    int32_t ids[6] = {17, 23, 2, 9, 61, 1};
    mt_batch b = {.B = 1, .T = 6, .ids = ids};
    float want[6 * 64], got[6 * 64];
    assert_int_equal(mt_model_forward(ref, &b, want), 0);
    mt_safetensors *st = mt_st_open(FIXTURES "/mamba/model.safetensors");
    assert_non_null(st);
    int n = mt_st_count(st);
    const mt_dtype dtypes[2] = {MT_DT_F16, MT_DT_BF16};
    const float tol[2] = {5e-3f, 5e-2f};
    for (int k = 0; k < 2; k++) {
        char *dir = edited_bundle("mamba", NULL, NULL, 1), path[512];
        mt_st_write_tensor *ts = calloc((size_t)n, sizeof *ts);
        for (int i = 0; i < n; i++) {
            const mt_st_tensor *t = mt_st_tensor_at(st, i);
            float *f = malloc(t->numel * sizeof(float));
            mt_st_tensor_to_f32(t, f);
            ts[i] = (mt_st_write_tensor){
                .name = t->name, .dtype = dtypes[k], .ndim = t->ndim, .f32 = f};
            memcpy(ts[i].shape, t->shape, sizeof t->shape);
        }
        snprintf(path, sizeof path, "%s/model.safetensors", dir);
        assert_int_equal(mt_st_write(path, ts, n, NULL, 0), 0);
        mt_model *m = load_or_fail(dir, 0);
        assert_int_equal(mt_model_forward(m, &b, got), 0);
        float d = max_abs_diff(got, want, 6 * 64);
        print_message("%s weights: max |logit - F32 logit| = %.3g (tolerance %.0e)\n",
                      mt_dtype_name(dtypes[k]), d, tol[k]);
        assert_true(d > 0.0f && d < tol[k]);
        for (int i = 0; i < n; i++) free((void *)ts[i].f32);
        free(ts);
        mt_model_free(m);
        remove_tree(dir);
        free(dir);
    }
    mt_st_close(st);
    mt_model_free(ref);
}

/* Created models: reproducible from the seed, saved and reloaded with the untied head. */
static void test_created_models_are_reproducible(void **state)
{
    (void)state;
    mt_model_config cfg;
    assert_int_equal(mt_model_preset(&cfg, "transformer"), 0);
    cfg.vocab_size = 40, cfg.d_model = 16, cfg.n_heads = 2, cfg.ffn_dim = 24;
    cfg.n_layers = cfg.n_encoder_layers = 1, cfg.max_positions = 32;
    mt_model *a = mt_model_create(&cfg, cpu(), 7), *b = mt_model_create(&cfg, cpu(), 7);
    mt_model *c = mt_model_create(&cfg, cpu(), 8);
    assert_non_null(a), assert_non_null(b), assert_non_null(c);
    size_t n = mt_model_param_block_size(a);
    assert_memory_equal(mt_model_params(a), mt_model_params(b), n * sizeof(float));
    assert_memory_not_equal(mt_model_params(a), mt_model_params(c), n * sizeof(float));
    assert_true(mt_model_find_tensor(a, "lm_head.weight") >= 0); /* the paper preset is untied */
    char *dir = make_tmpdir();
    assert_int_equal(mt_model_save(a, dir, NULL, MT_DT_F32), 0);
    mt_model *r = load_or_fail(dir, MT_MODEL_LOAD_NO_TOKENIZER);
    assert_memory_equal(mt_model_params(r), mt_model_params(a), n * sizeof(float));
    mt_model_free(r);

    /* half-precision bundles: every weight comes back as its f16 / bf16 rounding, and the
     * config names the dtype stored; other dtypes are refused by name */
    const mt_dtype halves[] = {MT_DT_F16, MT_DT_BF16};
    const char *torch_names[] = {"float16", "bfloat16"};
    char config_path[512];
    snprintf(config_path, sizeof config_path, "%s/config.json", dir);
    mt_config *saved = mt_config_load(config_path);
    assert_string_equal(mt_config_string(saved, "dtype"), "float32");
    mt_config_free(saved);
    for (int h = 0; h < 2; h++) {
        assert_int_equal(mt_model_save(a, dir, NULL, halves[h]), 0);
        saved = mt_config_load(config_path);
        assert_string_equal(mt_config_string(saved, "dtype"), torch_names[h]);
        mt_config_free(saved);
        r = load_or_fail(dir, MT_MODEL_LOAD_NO_TOKENIZER);
        const float *pa = mt_model_params(a), *pr = mt_model_params(r);
        for (size_t j = 0; j < n; j++) {
            float want = halves[h] == MT_DT_F16 ? mt_f16_to_f32(mt_f32_to_f16(pa[j]))
                                                : mt_bf16_to_f32(mt_f32_to_bf16(pa[j]));
            if (pr[j] != want)
                fail_msg("%s weight %zu: %g, want %g", mt_dtype_name(halves[h]), j, pr[j], want);
        }
        mt_model_free(r);
    }
    assert_int_equal(mt_model_save(a, dir, NULL, MT_DT_I8), -1);
    assert_non_null(strstr(mt_last_error(), "not I8"));
    remove_tree(dir);
    free(dir);
    mt_model_free(a), mt_model_free(b), mt_model_free(c);

    assert_int_equal(mt_model_preset(&cfg, "mamba"), 0);
    cfg.vocab_size = 40, cfg.d_model = 16, cfg.n_layers = 2, cfg.dt_rank = 1;
    mt_model *mm = mt_model_create(&cfg, cpu(), 3);
    assert_non_null(mm);
    int i = mt_model_find_tensor(mm, "backbone.layers.1.mixer.A_log");
    mt_model_tensor_info info;
    assert_int_equal(mt_model_tensor(mm, i, &info), 0);
    const float *A_log = mt_model_params(mm) + info.offset;
    for (int s = 0; s < 16; s++) assert_float_equal(A_log[s], logf((float)s + 1), 1e-6);
    mt_model_free(mm);
}

static void test_paper_presets_match_the_paper(void **state)
{
    (void)state;
    const struct {
        const char *name;
        double paper;
    } paper[] = {
        {"transformer", 77e6},
        {"mamba", 77e6},
    };
    for (int i = 0; i < 2; i++) {
        mt_model_config cfg;
        assert_int_equal(mt_model_preset(&cfg, paper[i].name), 0);
        size_t n = mt_model_config_param_count(&cfg);
        double rel = fabs((double)n - paper[i].paper) / paper[i].paper;
        print_message("preset %-18s %11zu parameters, paper %.0fM (%.2f%% off, bound 3%%)\n",
                      paper[i].name, n, paper[i].paper / 1e6, 100 * rel);
        assert_true(rel < 0.03);
    }
    mt_model_config t, m;
    assert_int_equal(mt_model_preset(&t, "transformer-small"), 0);
    assert_int_equal(mt_model_preset(&m, "mamba-small"), 0);
    size_t nt = mt_model_config_param_count(&t), nm = mt_model_config_param_count(&m);
    double gap = fabs((double)nt - (double)nm) / (double)nt;
    print_message("preset transformer-small %zu, mamba-small %zu parameters (%.1f%% apart)\n", nt,
                  nm, 100 * gap);
    assert_true(nt > 3000000 && nt < 10000000 && gap < 0.05);
    assert_int_equal(t.vocab_size, 8000);
    assert_int_equal(m.vocab_size, 8000);
    assert_int_equal(mt_model_preset(&t, "gpt"), -1);
    assert_non_null(strstr(mt_last_error(), "unknown model preset 'gpt'"));
    t.n_heads = 5;
    assert_int_equal(mt_model_config_param_count(&t), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_marian_matches_transformers),
        cmocka_unit_test(test_mamba_matches_transformers),
        cmocka_unit_test(test_loader_errors_name_the_problem),
        cmocka_unit_test(test_tokenizer_needed_unless_flagged),
        cmocka_unit_test(test_bad_batches_are_errors),
        cmocka_unit_test(test_saved_bundles_reload_bit_exactly),
        cmocka_unit_test(test_half_precision_weights_load),
        cmocka_unit_test(test_created_models_are_reproducible),
        cmocka_unit_test(test_paper_presets_match_the_paper),
    };
    return cmocka_run_group_tests_name("models", tests, NULL, NULL);
}
