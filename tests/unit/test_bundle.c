/* config.json handles and model bundle directories (open, read, write, failure atomicity).
 * Fixture: tests/fixtures/bundle/config_hf.json, written the way transformers writes configs. */
#include "test_util.h"

#include "mtlab/bundle.h"
#include "mtlab/error.h"

#include <dirent.h>
#include <ftw.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#define CONFIG_HF "tests/fixtures/bundle/config_hf.json"

static char tmp_dir[64];

static int make_tmp_dir(void **state)
{
    (void)state;
    return test_make_tmpdir(tmp_dir, sizeof tmp_dir, "bundle");
}

static int remove_tmp_dir(void **state)
{
    (void)state;
    return test_remove_tree(tmp_dir);
}

static const char *tmp_path(char *buf, size_t len, const char *name)
{
    snprintf(buf, len, "%s/%s", tmp_dir, name);
    return buf;
}

static void write_text(const char *path, const char *text)
{
    test_write_file(path, text, strlen(text));
}

static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) fail_msg("cannot open %s", path);
    fseek(f, 0, SEEK_END);
    size_t len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc(len + 1);
    assert_int_equal(fread(text, 1, len, f), len);
    text[len] = '\0';
    fclose(f);
    return text;
}

static void assert_error_contains(const char *needle)
{
    const char *msg = mt_last_error();
    if (!strstr(msg, needle)) fail_msg("error \"%s\" does not contain \"%s\"", msg, needle);
}

static int dir_entries(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return n;
}

/* A config from JSON text, failing the test when it does not parse. */
static mt_config *config_of(const char *json)
{
    mt_config *c = mt_config_parse(json, strlen(json), "m/config.json");
    if (!c) fail_msg("%s", mt_last_error());
    return c;
}

/* ---------------------------------------------------------------- config.json: reading */

static void test_config_typed_getters(void **state)
{
    (void)state;
    mt_config *c = mt_config_load(CONFIG_HF);
    if (!c) fail_msg("%s", mt_last_error());
    int v, n, list[8];
    float f;
    assert_int_equal(mt_config_int(c, "hidden_size", 1, INT_MAX, &v), 0);
    assert_int_equal(v, 768);
    assert_int_equal(mt_config_float(c, "layer_norm_epsilon", 0, 1, &f), 0);
    assert_true(f == 1e-5f);
    assert_int_equal(mt_config_float(c, "hidden_size", 0, 1e6, &f), 0); /* integers are numbers */
    assert_true(f == 768.0f);
    assert_int_equal(mt_config_bool(c, "residual_in_fp32", &v), 0);
    assert_int_equal(v, 1);
    assert_int_equal(mt_config_bool(c, "use_bias", &v), 0);
    assert_int_equal(v, 0);
    assert_string_equal(mt_config_string(c, "model_type"), "mamba");
    const char *archs[2];
    assert_int_equal(mt_config_string_list(c, "architectures", archs, 2, &n), 0);
    assert_int_equal(n, 1);
    assert_string_equal(archs[0], "MambaForCausalLM");
    assert_int_equal(mt_config_int_list(c, "layers_block_type", 0, 100, list, 8, &n), 0);
    assert_int_equal(n, 4);
    assert_int_equal(list[2], 11);
    assert_int_equal(mt_config_int_list(c, "empty_list", 0, 100, list, 8, &n), 0);
    assert_int_equal(n, 0);

    const mt_config *extra = mt_config_object(c, "mtlab");
    assert_non_null(extra);
    assert_ptr_equal(mt_config_object(c, "mtlab"), extra); /* the same handle twice */
    assert_int_equal(mt_config_int(extra, "window", 1, INT_MAX, &v), 0);
    assert_int_equal(v, 64);
    assert_string_equal(mt_config_string(extra, "note"), "caf\xC3\xA9 \"quoted\"");
    assert_int_equal(mt_config_int_list(extra, "attention_layers", 0, 23, list, 8, &n), 0);
    assert_int_equal(list[1], 23);
    assert_non_null(mt_config_object(c, "ssm_cfg"));

    /* optional values: missing and null give the default, present values are checked */
    assert_int_equal(mt_config_int_or(c, "d_state", 16, 1, INT_MAX, &v), 0);
    assert_int_equal(v, 16);
    assert_int_equal(mt_config_int_or(c, "bos_token_id", 3, 0, INT_MAX, &v), 0);
    assert_int_equal(v, 3);
    assert_int_equal(mt_config_int_or(c, "hidden_size", 3, 0, INT_MAX, &v), 0);
    assert_int_equal(v, 768);
    assert_int_equal(mt_config_float_or(c, "dropout", 0.25f, 0, 1, &f), 0);
    assert_true(f == 0.25f);
    assert_int_equal(mt_config_bool_or(c, "tie_word_embeddings", 1, &v), 0);
    assert_int_equal(v, 1);
    assert_string_equal(mt_config_string_or(c, "hidden_act", "silu"), "silu");
    assert_string_equal(mt_config_string_or(c, "torch_dtype", "x"), "float32");
    assert_false(mt_config_has(c, "bos_token_id"));
    assert_true(mt_config_has(c, "ssm_cfg"));
    mt_config_free(c);
}

static void test_config_wrong_key_types(void **state)
{
    (void)state;
    mt_config *c = config_of(
        "{\"d_model\": \"abc\", \"n_layer\": -2, \"eps\": \"tiny\", \"rms_norm\": 1,"
        " \"name\": 5, \"layers\": [1, \"x\"], \"archs\": [\"A\", \"B\", \"C\"],"
        " \"ssm_cfg\": {\"d_state\": 0.5}, \"huge\": 1e300, \"bos\": null, \"cfg\": [] }");
    int v, n, list[4];
    float f;
    const char *s[2];
    assert_int_equal(mt_config_int(c, "d_model", 1, INT_MAX, &v), -1);
    assert_error_contains("m/config.json: key 'd_model' must be a positive integer, got \"abc\"");
    assert_int_equal(mt_config_int(c, "n_layer", 0, INT_MAX, &v), -1);
    assert_error_contains("m/config.json: key 'n_layer' must be a non-negative integer, got -2");
    assert_int_equal(mt_config_int(c, "n_layer", 1, 64, &v), -1);
    assert_error_contains("key 'n_layer' must be an integer from 1 to 64, got -2");
    assert_int_equal(mt_config_int_or(c, "n_layer", 2, 1, 64, &v), -1); /* present: checked */
    assert_error_contains("key 'n_layer' must be an integer from 1 to 64, got -2");
    assert_int_equal(mt_config_float(c, "eps", 0, 1, &f), -1);
    assert_error_contains("m/config.json: key 'eps' must be a number from 0 to 1, got \"tiny\"");
    assert_int_equal(mt_config_float(c, "huge", -INFINITY, INFINITY, &f), -1);
    assert_error_contains(
        "key 'huge' must be a number within the range of a 32-bit float, got 1e+300");
    assert_int_equal(mt_config_bool(c, "rms_norm", &v), -1);
    assert_error_contains("key 'rms_norm' must be true or false, got 1");
    assert_null(mt_config_string(c, "name"));
    assert_error_contains("key 'name' must be a string, got 5");
    assert_null(mt_config_string_or(c, "name", "x"));
    assert_int_equal(mt_config_int_list(c, "layers", 0, 100, list, 4, &n), -1);
    assert_error_contains("key 'layers' must be a list of integers from 0 to 100, got [1, \"x\"]");
    assert_int_equal(mt_config_int_list(c, "d_model", INT_MIN, INT_MAX, list, 4, &n), -1);
    assert_error_contains("key 'd_model' must be a list of integers, got \"abc\"");
    assert_int_equal(mt_config_string_list(c, "archs", s, 2, &n), -1);
    assert_error_contains("key 'archs' must be a list of at most 2 strings");
    assert_null(mt_config_object(c, "cfg"));
    assert_error_contains("key 'cfg' must be an object, got []");
    const mt_config *ssm = mt_config_object(c, "ssm_cfg");
    assert_non_null(ssm);
    assert_int_equal(mt_config_int(ssm, "d_state", 1, INT_MAX, &v), -1);
    assert_error_contains(
        "m/config.json: key 'ssm_cfg.d_state' must be a positive integer, got 0.5");
    assert_int_equal(mt_config_int(ssm, "d_conv", 1, INT_MAX, &v), -1);
    assert_error_contains("m/config.json: missing key 'ssm_cfg.d_conv'");
    assert_int_equal(mt_config_int(c, "vocab_size", 1, INT_MAX, &v), -1);
    assert_error_contains("m/config.json: missing key 'vocab_size'");
    assert_int_equal(mt_config_int(c, "bos", 0, INT_MAX, &v), -1);
    assert_error_contains("key 'bos' must be set, got null");
    mt_config_free(c);

    /* Regression (fuzz_config): a nested key with a newline split the message in two. */
    c = config_of("{\"odd\\nkey\": {\"n\": \"x\"}}");
    assert_int_equal(mt_config_int(mt_config_object(c, "odd\nkey"), "n", 0, 9, &v), -1);
    assert_error_contains("key 'odd?key.n' must be an integer from 0 to 9, got \"x\"");
    assert_null(strchr(mt_last_error(), '\n'));
    mt_config_free(c);
}

static void test_config_file_errors(void **state)
{
    (void)state;
    char path[128];
    assert_null(mt_config_load(tmp_path(path, sizeof path, "absent.json")));
    assert_error_contains("absent.json: No such file or directory");
    write_text(tmp_path(path, sizeof path, "bad.json"),
               "{\n  \"d_model\": 512,\n  \"n_layer\": \n}\n");
    assert_null(mt_config_load(path));
    assert_error_contains(path);
    assert_error_contains(": not valid JSON: ");
    assert_error_contains("(line 4, column 1)");
    write_text(path, "[1, 2]");
    assert_null(mt_config_load(path));
    assert_error_contains("the top level is a list, expected a JSON object");
    write_text(path, "{\"a\": 1, \"a\": 2}");
    assert_null(mt_config_load(path));
    assert_error_contains("duplicate");
    write_text(path, "");
    assert_null(mt_config_load(path));
    assert_error_contains("not valid JSON");
    write_text(path, "{\"a\\\n\": 1}"); /* jansson quotes the newline: the message must not */
    assert_null(mt_config_load(path));
    assert_error_contains("not valid JSON: invalid escape near '\"a\\?'");
    assert_null(strchr(mt_last_error(), '\n'));
    assert_null(mt_config_load(tmp_dir));
    assert_error_contains(tmp_dir);
    unlink(path);
}

/* ---------------------------------------------------------------- config.json: writing */

/* Loading what transformers wrote and writing it back gives the same bytes. */
static void test_config_writes_like_transformers(void **state)
{
    (void)state;
    mt_config *c = mt_config_load(CONFIG_HF);
    assert_non_null(c);
    char *want = read_text(CONFIG_HF), *got = mt_config_to_text(c);
    assert_string_equal(got, want);
    free(got);
    free(want);
    mt_config_free(c);
}

static void test_config_setters_and_save(void **state)
{
    (void)state;
    mt_config *c = mt_config_new("new/config.json");
    const char *archs[] = {"MambaForCausalLM"};
    const int layers[] = {11, 23};
    assert_int_equal(mt_config_set_string_list(c, "architectures", archs, 1), 0);
    assert_int_equal(mt_config_set_int(c, "hidden_size", 496), 0);
    assert_int_equal(mt_config_set_float(c, "layer_norm_epsilon", 1e-5f), 0);
    assert_int_equal(mt_config_set_float(c, "dropout", 0.3f), 0);
    assert_int_equal(mt_config_set_float(c, "scale", 1.0f), 0);
    assert_int_equal(mt_config_set_bool(c, "rms_norm", 1), 0);
    assert_int_equal(mt_config_set_null(c, "bos_token_id"), 0);
    assert_int_equal(mt_config_set_string(c, "model_type", "mamba"), 0);
    assert_int_equal(mt_config_set_string(c, "note", "caf\xC3\xA9\t\xF0\x9F\x98\x80"), 0);
    assert_int_equal(mt_config_set_int_list(c, "attention_layers", layers, 2), 0);
    mt_config *ssm = mt_config_set_object(c, "ssm_cfg");
    assert_non_null(ssm);
    assert_int_equal(mt_config_set_int(ssm, "d_state", 16), 0);
    assert_int_equal(mt_config_set_int(c, "hidden_size", 512), 0); /* replaces */
    assert_int_equal(mt_config_set_float(c, "bad", INFINITY), -1);
    assert_error_contains("new/config.json: cannot set key 'bad' to inf");
    assert_int_equal(mt_config_set_string(c, "bad", "\xC3("), -1);
    assert_error_contains("key 'bad': key or value is not valid UTF-8");

    char *text = mt_config_to_text(c);
    assert_string_equal(text, "{\n"
                              "  \"architectures\": [\n"
                              "    \"MambaForCausalLM\"\n"
                              "  ],\n"
                              "  \"attention_layers\": [\n"
                              "    11,\n"
                              "    23\n"
                              "  ],\n"
                              "  \"bos_token_id\": null,\n"
                              "  \"dropout\": 0.3,\n"
                              "  \"hidden_size\": 512,\n"
                              "  \"layer_norm_epsilon\": 1e-05,\n"
                              "  \"model_type\": \"mamba\",\n"
                              "  \"note\": \"caf\\u00e9\\t\\ud83d\\ude00\",\n"
                              "  \"rms_norm\": true,\n"
                              "  \"scale\": 1.0,\n"
                              "  \"ssm_cfg\": {\n"
                              "    \"d_state\": 16\n"
                              "  }\n"
                              "}\n");
    free(text);
    int n;
    const char **keys = mt_config_keys(c, &n);
    assert_int_equal(n, 11);
    assert_string_equal(keys[0], "architectures");
    assert_string_equal(keys[10], "ssm_cfg");
    free(keys);
    char *value = mt_config_value_json(c, "ssm_cfg");
    assert_string_equal(value, "{\"d_state\": 16}");
    free(value);
    assert_null(mt_config_value_json(c, "absent"));
    value = mt_config_value_json(c, "note"); /* for display: UTF-8 kept, controls escaped */
    assert_string_equal(value, "\"caf\xC3\xA9\\t\xF0\x9F\x98\x80\"");
    free(value);

    char path[128];
    tmp_path(path, sizeof path, "saved.json");
    const int before = dir_entries(tmp_dir);
    assert_int_equal(mt_config_save(c, path), 0);
    assert_int_equal(dir_entries(tmp_dir), before + 1); /* no temporary file left */
    mt_config *back = mt_config_load(path);
    assert_non_null(back);
    float f;
    int v;
    assert_int_equal(mt_config_float(back, "dropout", 0, 1, &f), 0);
    assert_true(f == 0.3f);
    assert_int_equal(mt_config_int(mt_config_object(back, "ssm_cfg"), "d_state", 1, 64, &v), 0);
    assert_int_equal(v, 16);
    mt_config_free(back);
    mt_config_free(c);
    unlink(path);
}

/* Any finite float written with set_float reads back as the same float. */
static void test_config_floats_round_trip(void **state)
{
    (void)state;
    mt_config *c = mt_config_new("floats");
    uint64_t s = 12345;
    for (int i = 0; i < 20000; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        uint32_t bits = (uint32_t)(s >> 32);
        float x;
        memcpy(&x, &bits, sizeof x);
        if (!isfinite(x)) continue;
        assert_int_equal(mt_config_set_float(c, "x", x), 0);
        char *text = mt_config_to_text(c);
        mt_config *back = config_of(text);
        float y;
        assert_int_equal(mt_config_float(back, "x", -INFINITY, INFINITY, &y), 0);
        if (memcmp(&x, &y, sizeof x) != 0)
            fail_msg("%a written as %s reads back as %a", (double)x, text, (double)y);
        mt_config_free(back);
        free(text);
    }
    mt_config_free(c);
}

/* ---------------------------------------------------------------- bundles */

static const float WEIGHTS_A[6] = {1.0f, -2.0f, 0.5f, 0.25f, 3.0f, -0.125f};

static mt_config *small_config(int hidden)
{
    mt_config *c = mt_config_new("config.json");
    mt_config_set_string(c, "model_type", "mamba");
    mt_config_set_int(c, "hidden_size", hidden);
    return c;
}

static int write_small_bundle(const char *dir, int hidden, const char *tokenizer, const char *stats)
{
    mt_config *c = small_config(hidden);
    const mt_st_write_tensor t[] = {
        {.name = "backbone.embeddings.weight",
         .dtype = MT_DT_BF16,
         .ndim = 2,
         .shape = {2, 3},
         .f32 = WEIGHTS_A},
        {.name = "backbone.norm_f.weight",
         .dtype = MT_DT_F32,
         .ndim = 1,
         .shape = {hidden},
         .f32 = WEIGHTS_A},
    };
    const mt_st_meta meta[] = {{"format", "pt"}};
    const mt_bundle_contents contents = {
        .config = c,
        .tensors = t,
        .n_tensors = 2,
        .metadata = meta,
        .n_metadata = 1,
        .tokenizer_path = tokenizer,
        .corpus_stats_path = stats,
    };
    int rc = mt_bundle_write(dir, &contents);
    mt_config_free(c);
    return rc;
}

static void test_bundle_write_then_open(void **state)
{
    (void)state;
    char dir[128], tok[128], stats[128];
    write_text(tmp_path(tok, sizeof tok, "spm.model"), "not really a sentencepiece model");
    write_text(tmp_path(stats, sizeof stats, "stats.tsv"), "Dios\t4000\n");
    tmp_path(dir, sizeof dir, "runs/demo/bundle"); /* parents are created */
    if (write_small_bundle(dir, 4, tok, stats)) fail_msg("%s", mt_last_error());
    assert_int_equal(dir_entries(dir), 4);

    mt_bundle *b = mt_bundle_open(dir, 0);
    if (!b) fail_msg("%s", mt_last_error());
    assert_string_equal(mt_bundle_dir(b), dir);
    int hidden;
    assert_int_equal(mt_config_int(mt_bundle_config(b), "hidden_size", 1, INT_MAX, &hidden), 0);
    assert_int_equal(hidden, 4);
    float w[6];
    assert_int_equal(
        mt_bundle_read_f32(b, "backbone.embeddings.weight", 2, (const int64_t[]){2, 3}, w), 0);
    assert_memory_equal(w, WEIGHTS_A, sizeof w); /* bf16-exact values */
    assert_int_equal(mt_bundle_read_f32(b, "backbone.norm_f.weight", 1, (const int64_t[]){5}, w),
                     -1);
    assert_error_contains(
        "bundle/model.safetensors: tensor 'backbone.norm_f.weight' has shape (4), expected (5)");
    assert_string_equal(mt_st_metadata_get(mt_bundle_weights(b), "format"), "pt");
    char *copied = read_text(mt_bundle_tokenizer_path(b));
    assert_string_equal(copied, "not really a sentencepiece model");
    free(copied);
    assert_non_null(mt_bundle_corpus_stats_path(b));
    mt_bundle_close(b);
}

static void test_bundle_missing_members(void **state)
{
    (void)state;
    char dir[128], path[256];
    tmp_path(dir, sizeof dir, "partial");
    assert_int_equal(mkdir(dir, 0777), 0);
    assert_null(mt_bundle_open(dir, 0));
    assert_error_contains("partial: not a model bundle: missing config.json, model.safetensors (or "
                          "pytorch_model.bin), tokenizer.model (or tokenizer.json, or source.spm, "
                          "target.spm and vocab.json)");
    snprintf(path, sizeof path, "%s/config.json", dir);
    write_text(path, "{}");
    assert_null(mt_bundle_open(dir, 0));
    assert_error_contains("partial: not a model bundle: missing model.safetensors (or "
                          "pytorch_model.bin), tokenizer.model");
    assert_null(mt_bundle_open(dir, MT_BUNDLE_NO_TOKENIZER));
    assert_error_contains("partial: not a model bundle: missing model.safetensors");
    assert_null(strstr(mt_last_error(), "tokenizer"));

    assert_null(mt_bundle_open("tests/fixtures/bundle/no-such-bundle", 0));
    assert_error_contains("tests/fixtures/bundle/no-such-bundle: No such file or directory");
    assert_null(mt_bundle_open(path, 0));
    assert_error_contains("config.json: not a directory");
}

static void test_bundle_without_tokenizer(void **state)
{
    (void)state;
    char dir[128];
    tmp_path(dir, sizeof dir, "no_tokenizer");
    assert_int_equal(write_small_bundle(dir, 4, NULL, NULL), 0);
    assert_null(mt_bundle_open(dir, 0));
    assert_error_contains("no_tokenizer: not a model bundle: missing tokenizer.model");
    mt_bundle *b = mt_bundle_open(dir, MT_BUNDLE_NO_TOKENIZER);
    assert_non_null(b);
    assert_null(mt_bundle_tokenizer_path(b));
    assert_null(mt_bundle_corpus_stats_path(b));
    mt_bundle_close(b);
}

static void test_bundle_bad_members_name_the_file(void **state)
{
    (void)state;
    char dir[128], path[256];
    tmp_path(dir, sizeof dir, "corrupt");
    assert_int_equal(write_small_bundle(dir, 4, NULL, NULL), 0);
    snprintf(path, sizeof path, "%s/config.json", dir);
    write_text(path, "{\"hidden_size\": 4,");
    assert_null(mt_bundle_open(dir, MT_BUNDLE_NO_TOKENIZER));
    assert_error_contains("corrupt/config.json: not valid JSON");
    write_text(path, "{}");
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    test_write_file(path, "\x10\0\0\0\0\0\0\0{}", 10);
    assert_null(mt_bundle_open(dir, MT_BUNDLE_NO_TOKENIZER));
    assert_error_contains(
        "corrupt/model.safetensors: header length 16 runs past the end of the file (10 bytes)");
}

/* A write that fails part-way (a bad tensor, a missing tokenizer source) leaves every file of
 * the previous bundle as it was, and no temporary files. */
static void test_failed_bundle_write_keeps_previous(void **state)
{
    (void)state;
    char dir[128], tok[128], path[256];
    write_text(tmp_path(tok, sizeof tok, "tok.model"), "tokenizer v1");
    tmp_path(dir, sizeof dir, "keep");
    assert_int_equal(write_small_bundle(dir, 4, tok, NULL), 0);
    snprintf(path, sizeof path, "%s/config.json", dir);
    char *config_v1 = read_text(path);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    mt_safetensors *st = mt_st_open(path);
    const size_t weights_v1 = mt_st_file_size(st);
    mt_st_close(st);

    write_text(tok, "tokenizer v2");
    assert_int_equal(write_small_bundle(dir, -1, tok, NULL), -1); /* negative dimension */
    assert_error_contains("shape dimension 0 is negative");
    assert_int_equal(write_small_bundle(dir, 6, "tests/fixtures/bundle/absent.model", NULL), -1);
    assert_error_contains("tests/fixtures/bundle/absent.model: No such file or directory");

    assert_int_equal(dir_entries(dir), 3);
    mt_bundle *b = mt_bundle_open(dir, 0);
    assert_non_null(b);
    snprintf(path, sizeof path, "%s/config.json", dir);
    char *config_now = read_text(path);
    assert_string_equal(config_now, config_v1);
    assert_int_equal(mt_st_file_size(mt_bundle_weights(b)), weights_v1);
    char *tok_now = read_text(mt_bundle_tokenizer_path(b));
    assert_string_equal(tok_now, "tokenizer v1");
    mt_bundle_close(b);
    free(config_v1);
    free(config_now);
    free(tok_now);

    /* and a successful write replaces everything */
    assert_int_equal(write_small_bundle(dir, 6, tok, NULL), 0);
    b = mt_bundle_open(dir, 0);
    assert_non_null(b);
    int hidden;
    assert_int_equal(mt_config_int(mt_bundle_config(b), "hidden_size", 1, 64, &hidden), 0);
    assert_int_equal(hidden, 6);
    tok_now = read_text(mt_bundle_tokenizer_path(b));
    assert_string_equal(tok_now, "tokenizer v2");
    free(tok_now);
    mt_bundle_close(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config_typed_getters),
        cmocka_unit_test(test_config_wrong_key_types),
        cmocka_unit_test(test_config_file_errors),
        cmocka_unit_test(test_config_writes_like_transformers),
        cmocka_unit_test(test_config_setters_and_save),
        cmocka_unit_test(test_config_floats_round_trip),
        cmocka_unit_test(test_bundle_write_then_open),
        cmocka_unit_test(test_bundle_missing_members),
        cmocka_unit_test(test_bundle_without_tokenizer),
        cmocka_unit_test(test_bundle_bad_members_name_the_file),
        cmocka_unit_test(test_failed_bundle_write_keeps_previous),
    };
    return cmocka_run_group_tests_name("bundle", tests, make_tmp_dir, remove_tmp_dir);
}
