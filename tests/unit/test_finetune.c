/* Finetuning a pretrained checkpoint from the hub (docs/training-config.md, "init"): the tiny
 * MambaForCausalLM of tests/fixtures/mamba_hf (and the GPTNeoXForCausalLM of
 * tests/fixtures/neox_hf) on a slice of the Bible (tests/fixtures/finetune,
 * make.sh). A config naming only init, the data and training keys gets the model's config and
 * tokenizer from the checkpoint; a model key that contradicts it is refused by name; the
 * training rows are the decoding prompt (mt_source_encode's text template) then the target and
 * <eos>; a hub checkpoint without a template needs one given; the validation loss goes down and
 * the saved bundle is the Hugging Face layout, reloading with the trainer's validation loss. */
#include "test_util.h"
#include "common/train_config.h"
#include "mtlab/bundle.h"
#include "mtlab/decode.h"
#include "mtlab/error.h"
#include "mtlab/safetensors.h"
#include "mtlab/train.h"
#include "mtlab/traindata.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define HUB "tests/fixtures/mamba_hf/st"
#define HUB_NEOX "tests/fixtures/neox_hf/st"
#define DATA "tests/fixtures/finetune"

static char tmpdir[64];

/* A finetune config for run NAME: init, the Bible slice and training keys, then extra lines. */
static int load_config(mt_train_config *cfg, const char *name, const char *init, const char *extra)
{
    char path[128], text[2048];
    snprintf(path, sizeof path, "%s/%s.lua", tmpdir, name);
    snprintf(
        text, sizeof text,
        "return {\n  name = \"%s\", run_dir = \"%s/%s\", init = \"%s\",\n"
        "  train_src = \"" DATA "/train.es\", train_tgt = \"" DATA "/train.en\",\n"
        "  valid_src = \"" DATA "/valid.es\", valid_tgt = \"" DATA "/valid.en\",\n"
        "  max_len = 64, max_tokens = 1200, lr = 2e-3, warmup = 0, max_steps = 12, log_every = 1,\n"
        "  valid_every = 3, valid_bleu_lines = 0, save_every = 0, seed = 3,\n%s}\n",
        name, tmpdir, name, init, extra);
    test_write_text(path, text);
    return train_config_load_with(cfg, path, NULL, 0, NULL, 0);
}

static void expect_config_error(const char *name, const char *init, const char *extra,
                                const char *needle)
{
    mt_train_config cfg;
    assert_int_equal(load_config(&cfg, name, init, extra), -1);
    if (!strstr(mt_last_error(), needle))
        fail_msg("expected \"%s\" in: %s", needle, mt_last_error());
}

/* The "valid_loss" values of a run's log, in order. */
static int valid_losses(const char *run_dir, double *out, int cap)
{
    char path[700];
    snprintf(path, sizeof path, "%s/log.jsonl", run_dir);
    char *log = test_read_file(path, NULL);
    assert_non_null(log);
    int n = 0;
    for (char *p = strstr(log, "\"valid_loss\":"); p && n < cap;
         p = strstr(p + 1, "\"valid_loss\":"))
        out[n++] = strtod(p + strlen("\"valid_loss\":"), NULL);
    free(log);
    return n;
}

/* dir/name read whole */
static char *read_in(const char *dir, const char *name, size_t *len)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return test_read_file(path, len);
}

static mt_safetensors *open_weights(const char *dir)
{
    char path[512];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    return mt_st_open(path);
}

/* The model's config and tokenizer come from init; dropout may be set beside it. */
static void test_init_supplies_the_model(void **state)
{
    (void)state;
    mt_train_config cfg;
    assert_int_equal(load_config(&cfg, "supplied", HUB, "  model = { dropout = 0.1 },\n"), 0);
    assert_string_equal(cfg.model.arch, "mamba");
    assert_int_equal(cfg.model.d_model, 32);
    assert_int_equal(cfg.model.n_layers, 2);
    assert_int_equal(cfg.model.vocab_size, 600);
    assert_int_equal(cfg.model.tie_embeddings, 1);
    assert_string_equal(cfg.model.prompt, "{src}<sep>");
    assert_float_equal(cfg.model.dropout, 0.1, 1e-7);
    assert_string_equal(cfg.tokenizer, HUB "/tokenizer.json");
    assert_int_equal(mt_train_config_check(&cfg), 0);
    /* a job's config.lua (every key written back, preset = the architecture) reads back the same */
    char preset[64], path[128];
    mt_train_config back;
    snprintf(path, sizeof path, "%s/supplied.lua", tmpdir);
    assert_int_equal(train_config_load_with(&cfg, path, NULL, 0, preset, sizeof preset), 0);
    assert_string_equal(preset, "mamba");
    snprintf(path, sizeof path, "%s/written.lua", tmpdir);
    assert_int_equal(train_config_write(&cfg, preset, path), 0);
    if (train_config_load_with(&back, path, NULL, 0, NULL, 0) != 0) fail_msg("%s", mt_last_error());
    assert_string_equal(back.model.arch, "mamba");
    assert_int_equal(back.model.d_model, 32);
    assert_int_equal(back.model.vocab_size, 600);
    assert_string_equal(back.model.prompt, "{src}<sep>");
    assert_float_equal(back.model.dropout, 0.1, 1e-7);
    assert_float_equal(back.model.norm_eps, cfg.model.norm_eps, 0);
    assert_string_equal(back.tokenizer, cfg.tokenizer);
    /* the same keys restated, as a written-back config holds them, are no contradiction */
    assert_int_equal(
        load_config(&cfg, "restated", HUB,
                    "  model = { preset = \"mamba\", d_model = 32, n_layers = 2, vocab_size = 600,"
                    " prompt = \"{src}<sep>\" },\n  tokenizer = \"" HUB "/tokenizer.json\",\n"),
        0);
    assert_int_equal(cfg.model.d_model, 32);
}

static void test_contradictions_are_named(void **state)
{
    (void)state;
    expect_config_error("c1", HUB, "  model = { d_model = 64 },\n",
                        "'d_model' = 64 contradicts init");
    expect_config_error("c2", HUB, "  model = { preset = \"transformer\" },\n",
                        "preset \"transformer\" is a transformer, but init");
    expect_config_error("c3", HUB, "  model = { prompt = \"Spanish: {src}\\nEnglish:\" },\n",
                        "'prompt' = \"Spanish: {src}\\010English:\" contradicts init");
    expect_config_error("c4", HUB, "  tokenizer = \"" DATA "/spm.model\",\n",
                        "'tokenizer' = \"" DATA "/spm.model\"");
    mt_train_config cfg;
    assert_int_equal(load_config(&cfg, "c5", HUB, "  cat_n = 2,\n"), 0);
    assert_int_equal(mt_train_config_check(&cfg), -1);
    assert_non_null(strstr(mt_last_error(), "cat_n = 2 with the prompt template \"{src}<sep>\""));
    /* without init the model table is still needed */
    expect_config_error("c6", "", "", "'model' is missing");
}

/* A hub config.json without mtlab's block has no template and no separator of mtlab's (its
 * sep id would be GPT-NeoX's ordinary token 2): the finetune must name its prompt. */
/* tmpdir/name: hub's weights and tokenizer.json with its config.json less the mtlab block, as
 * the hub gives it */
static void make_bare(char *bare, size_t len, const char *name, const char *hub)
{
    char path[512];
    snprintf(bare, len, "%s/%s", tmpdir, name);
    assert_int_equal(mkdir(bare, 0755), 0);
    static const char *const files[] = {"model.safetensors", "tokenizer.json"};
    for (int i = 0; i < 2; i++) {
        size_t n;
        char *data = read_in(hub, files[i], &n);
        assert_non_null(data);
        snprintf(path, sizeof path, "%s/%s", bare, files[i]);
        test_write_file(path, data, n);
        free(data);
    }
    char *config = read_in(hub, "config.json", NULL);
    char *block = strstr(config, "\"mtlab\"");
    assert_non_null(block);
    char *end = strstr(block, "},\n");
    assert_non_null(end);
    memmove(block, end + 3, strlen(end + 3) + 1); /* `"mtlab": {...},\n` */
    snprintf(path, sizeof path, "%s/config.json", bare);
    test_write_text(path, config);
    free(config);
}

/* the shipped finetune `script` (the paper's pretrained rows) on a bare checkpoint: its
 * template, init's architecture and tokenizer */
static void check_shipped_finetune(const char *script, const char *bare, const char *arch)
{
    char init[160], path[200];
    snprintf(init, sizeof init, "init=%s", bare);
    const char *const over[] = {init, "dataset="};
    mt_train_config cfg;
    if (train_config_load_with(&cfg, script, over, 2, NULL, 0) != 0)
        fail_msg("%s", mt_last_error());
    assert_string_equal(cfg.model.arch, arch);
    assert_string_equal(cfg.model.prompt, "Spanish: {src}\nEnglish:");
    snprintf(path, sizeof path, "%s/tokenizer.json", bare);
    assert_string_equal(cfg.tokenizer, path);
    assert_string_equal(cfg.device, "cuda");
}

/* A hub config.json without mtlab's block has no template and no separator of mtlab's (its
 * sep id would be GPT-NeoX's ordinary token 2): the finetune must name its prompt. */
static void test_hub_checkpoint_needs_a_prompt(void **state)
{
    (void)state;
    char bare[128];
    make_bare(bare, sizeof bare, "bare", HUB);
    expect_config_error("bare1", bare, "", "has no prompt template");
    mt_train_config cfg;
    assert_int_equal(load_config(&cfg, "bare2", bare, "  model = { prompt = \"{src}<sep>\" },\n"),
                     0);
    assert_string_equal(cfg.model.prompt, "{src}<sep>");
    assert_int_equal(cfg.model.hf_generate, 0);
    check_shipped_finetune("scripts/train/finetune-mamba.lua", bare, "mamba");

    char neox[128];
    make_bare(neox, sizeof neox, "bare-neox", HUB_NEOX);
    expect_config_error("bare3", neox, "", "has no prompt template");
    check_shipped_finetune("scripts/train/finetune-pythia.lua", neox, "gpt-neox");
}

/* A training row is the decoding prompt's ids, the target's, then <eos>; the loss counts
 * from the prompt's end on. */
static void test_rows_are_the_decoding_prompt(void **state)
{
    (void)state;
    mt_model *m = mt_model_load(HUB, mt_backend_cpu(), 0);
    assert_non_null(m);
    mt_tokenizer *tok = mt_tokenizer_load(HUB);
    assert_non_null(tok);
    const mt_model_config *mc = mt_model_get_config(m);
    mt_corpus c;
    assert_int_equal(
        mt_corpus_load_prompted(&c, DATA "/valid.es", DATA "/valid.en", tok, 64, mc->prompt), 0);
    mt_examples ex;
    mt_examples_build(&ex, &c, 0, 0, 0.5, 64, 1, 0);
    uint32_t row = 0;
    mt_batch b;
    mt_batch_pack(&b, 0, mc, &c, &ex, &row, 1);
    char *src = test_read_file(DATA "/valid.es", NULL),
         *tgt = test_read_file(DATA "/valid.en", NULL);
    *strchr(src, '\n') = '\0';
    *strchr(tgt, '\n') = '\0';
    int *want_src, *want_tgt;
    size_t ns, nt;
    assert_int_equal(mt_source_encode(m, tok, src, &want_src, &ns), 0);
    assert_int_equal(mt_tokenizer_encode(tok, tgt, &want_tgt, &nt), 0);
    assert_int_equal(b.T, (int)(ns + nt + 1));
    for (size_t i = 0; i < ns; i++) assert_int_equal(b.ids[i], want_src[i]);
    for (size_t i = 0; i < nt; i++) assert_int_equal(b.ids[ns + i], want_tgt[i]);
    assert_int_equal(b.ids[ns + nt], mc->eos_id);
    assert_non_null(b.n_prompt);
    assert_int_equal(b.n_prompt[0], (int)ns);
    /* the loss averages the target and its <eos>, not the prompt */
    double loss;
    size_t n;
    mt_step_opts opts = {0};
    assert_int_equal(mt_model_loss(m, &b, &opts, &loss, &n), 0);
    assert_int_equal(n, nt + 1);
    free(want_src);
    free(want_tgt);
    free(src);
    free(tgt);
    mt_batch_free(&b);
    mt_examples_free(&ex);
    mt_corpus_free(&c);

    /* a prompt cut to max_len keeps the template's separator at its end */
    assert_int_equal(
        mt_corpus_load_prompted(&c, DATA "/valid.es", DATA "/valid.en", tok, 8, mc->prompt), 0);
    assert_int_equal(c.truncated, 2 * c.n);
    for (size_t i = 0; i < c.n; i++) {
        assert_int_equal(c.src_len[i], 8);
        assert_int_equal(c.ids[c.src_start[i] + 7], mt_tokenizer_piece_to_id(tok, "<sep>"));
    }
    mt_corpus_free(&c);
    mt_tokenizer_free(tok);
    mt_model_free(m);
}

/* The mean validation loss of a bundle, packed as the trainer packs it. */
static double bundle_valid_loss(const char *dir)
{
    mt_model *m = mt_model_load(dir, mt_backend_cpu(), 0);
    assert_non_null(m);
    mt_tokenizer *tok = mt_tokenizer_load(dir);
    assert_non_null(tok);
    const mt_model_config *mc = mt_model_get_config(m);
    mt_corpus c;
    assert_int_equal(
        mt_corpus_load_prompted(&c, DATA "/valid.es", DATA "/valid.en", tok, 64, mc->prompt), 0);
    mt_examples ex;
    mt_examples_build(&ex, &c, 0, 0, 0.5, 64, 1, 0);
    double sum = 0;
    size_t count = 0;
    mt_step_opts opts = {0};
    for (uint32_t i = 0; i < ex.n; i++) {
        mt_batch b;
        mt_batch_pack(&b, 0, mc, &c, &ex, &i, 1);
        double loss;
        size_t n;
        assert_int_equal(mt_model_loss(m, &b, &opts, &loss, &n), 0);
        sum += loss * (double)n;
        count += n;
        mt_batch_free(&b);
    }
    mt_examples_free(&ex);
    mt_corpus_free(&c);
    mt_tokenizer_free(tok);
    mt_model_free(m);
    return sum / (double)count;
}

/* run `name` finetunes the checkpoint hub (of Hugging Face class hf_class, model_type type) */
static void finetune_lowers(const char *name, const char *hub, const char *hf_class,
                            const char *type)
{
    mt_train_config cfg;
    assert_int_equal(load_config(&cfg, name, hub, ""), 0);
    assert_int_equal(mt_train_run(&cfg, 0, NULL), 0);
    double v[16];
    int n = valid_losses(cfg.run_dir, v, 16);
    assert_int_equal(n, 4); /* steps 3, 6, 9, 12 */
    printf("finetune %s: validation loss %.4f (step 3) -> %.4f (step 12); the checkpoint before: "
           "%.4f\n",
           type, v[0], v[n - 1], bundle_valid_loss(hub));
    assert_true(v[n - 1] < v[0] - 0.05);

    /* the saved bundle: the Hugging Face layout of the checkpoint it came from */
    char dir[700], path[760];
    snprintf(dir, sizeof dir, "%s/checkpoint", cfg.run_dir);
    snprintf(path, sizeof path, "%s/config.json", dir);
    mt_config *c = mt_config_load(path);
    assert_non_null(c);
    const char *archs[2];
    int n_archs;
    assert_int_equal(mt_config_string_list(c, "architectures", archs, 2, &n_archs), 0);
    assert_int_equal(n_archs, 1);
    assert_string_equal(archs[0], hf_class);
    assert_string_equal(mt_config_string(c, "model_type"), type);
    const mt_config *x = mt_config_object(c, "mtlab");
    assert_non_null(x);
    assert_string_equal(mt_config_string(x, "prompt"), "{src}<sep>");
    /* the template holds the separator: no sep id of mtlab's (2 is an ordinary GPT-NeoX token) */
    assert_false(mt_config_has(x, "sep_token_id"));
    /* nor an unk id: the hub's config gave none (mtlab's reserved 4 is an ordinary token) */
    assert_false(mt_config_has(x, "unk_token_id"));
    mt_config_free(c);
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    size_t a_len, b_len;
    char *a = test_read_file(path, &a_len), *b = read_in(hub, "tokenizer.json", &b_len);
    assert_true(a_len == b_len && !memcmp(a, b, a_len));
    free(a);
    free(b);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    mt_safetensors *got = mt_st_open(path), *want = open_weights(hub);
    assert_non_null(got);
    assert_non_null(want);
    assert_int_equal(mt_st_count(got), mt_st_count(want));
    for (int i = 0; i < mt_st_count(want); i++) {
        const mt_st_tensor *w = mt_st_tensor_at(want, i), *g = mt_st_find(got, w->name);
        if (!g) fail_msg("the saved bundle lacks %s", w->name);
        assert_int_equal(g->ndim, w->ndim);
        for (int d = 0; d < w->ndim; d++) assert_int_equal(g->shape[d], w->shape[d]);
    }
    mt_st_close(got);
    mt_st_close(want);

    /* reloaded, it gives the trainer's last validation loss */
    double again = bundle_valid_loss(dir);
    printf("finetune %s: the saved bundle's validation loss %.6f (the trainer's %.6f)\n", type,
           again, v[n - 1]);
    assert_true(fabs(again - v[n - 1]) < 1e-5);
}

static void test_finetune_lowers_the_validation_loss(void **state)
{
    (void)state;
    finetune_lowers("ft", HUB, "MambaForCausalLM", "mamba");
}

/* GPT-NeoX (Pythia): parallel residual, partial rotary, fused query_key_value */
static void test_finetune_neox(void **state)
{
    (void)state;
    finetune_lowers("ft-neox", HUB_NEOX, "GPTNeoXForCausalLM", "gpt_neox");
}

static int setup(void **state)
{
    (void)state;
    return test_make_tmpdir(tmpdir, sizeof tmpdir, "finetune");
}

static int teardown(void **state)
{
    (void)state;
    return test_remove_tree(tmpdir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_init_supplies_the_model),
        cmocka_unit_test(test_contradictions_are_named),
        cmocka_unit_test(test_hub_checkpoint_needs_a_prompt),
        cmocka_unit_test(test_rows_are_the_decoding_prompt),
        cmocka_unit_test(test_finetune_lowers_the_validation_loss),
        cmocka_unit_test(test_finetune_neox),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
