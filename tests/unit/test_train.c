/* Training runs: Lua config errors, and a resumed run that repeats the uninterrupted one
 * bit for bit (same per-step losses, same final weights). */
#include "test_util.h"
#include "common/train_config.h"
#include "mtlab/error.h"
#include "mtlab/tokenizer.h"
#include "mtlab/train.h"

#include <sys/stat.h>
#include <unistd.h>

static char tmpdir[64];

static void expect_config_error(const char *lua, const char *needle)
{
    char path[128];
    snprintf(path, sizeof path, "%s/bad.lua", tmpdir);
    test_write_text(path, lua);
    mt_train_config cfg;
    assert_int_equal(train_config_load(&cfg, path), -1);
    if (!strstr(mt_last_error(), needle)) fail_msg("expected '%s' in: %s", needle, mt_last_error());
}

static void test_config_errors(void **state)
{
    (void)state;
    expect_config_error("return {", "bad.lua");
    expect_config_error("error('boom')", "boom");
    expect_config_error("return 42", "must `return { ... }`");
    expect_config_error("return { name = 'x' }", "'model' is missing");
    expect_config_error("return { model = { preset = 'no-such' } }", "no-such");
    expect_config_error("return { model = { preset = 'mamba-small', d_modle = 3 } }",
                        "unknown key 'd_modle'");
    expect_config_error("return { model = { preset = 'mamba-small' }, lr = 'fast' }",
                        "'lr' must be a number");
    expect_config_error("return { model = { preset = 'mamba-small' }, max_len = 1.5 }",
                        "'max_len' must be an integer");
    expect_config_error("return { model = { preset = 'mamba-small', activation = 'tanh' } }",
                        "tanh");
    expect_config_error("return { model = { preset = 'mamba-small' }, max_stpes = 3 }",
                        "unknown key 'max_stpes'");
    expect_config_error("return { model = { preset = 'mamba-mha-small', attn_layers = 5 } }",
                        "must be a list");
    expect_config_error("return { model = { preset = 'mamba-mha-small', attn_layers = {1, 'x'} } }",
                        "entry 2");
    expect_config_error("return { model = { preset = 'mamba-mha-small', attn_layers = {-1} } }",
                        "entry 1");
}

static void test_config_reads_values(void **state)
{
    (void)state;
    char path[128];
    snprintf(path, sizeof path, "%s/ok.lua", tmpdir);
    test_write_text(
        path, "return { name = 'demo', model = { preset = 'mamba-small', d_model = 64, dropout = "
              "0.25 },\n"
              "  lr = 5e-4, warmup = 10, max_tokens = 900, seed = 7, save_dtype_f16 = true }\n");
    mt_train_config cfg;
    assert_int_equal(train_config_load(&cfg, path), 0);
    assert_string_equal(cfg.name, "demo");
    assert_string_equal(cfg.run_dir, "runs/demo");
    assert_string_equal(cfg.model.arch, "mamba");
    assert_int_equal(cfg.model.d_model, 64);
    assert_float_equal(cfg.model.dropout, 0.25, 1e-7);
    assert_float_equal(cfg.lr, 5e-4, 1e-12);
    assert_int_equal(cfg.warmup, 10);
    assert_int_equal(cfg.max_tokens, 900);
    assert_int_equal(cfg.seed, 7);
    assert_int_equal(cfg.save_dtype_f16, 1);

    /* the keys of the other architectures: the paper's placement ablations are configs */
    test_write_text(
        path,
        "return { model = { preset = 'mamba-local-small', window = 32, attn_layers = {0, 2, 9} },\n"
        "  name = 'abl' }\n");
    assert_int_equal(train_config_load(&cfg, path), 0);
    assert_string_equal(cfg.model.arch, "mamba-local");
    assert_int_equal(cfg.model.window, 32);
    assert_int_equal(cfg.model.n_attn_layers, 3);
    assert_int_equal(cfg.model.attn_layers[0], 0);
    assert_int_equal(cfg.model.attn_layers[1], 2);
    assert_int_equal(cfg.model.attn_layers[2], 9);
    test_write_text(
        path, "return { model = { preset = 'retnet-small', value_dim = 256 }, name = 'r' }\n");
    assert_int_equal(train_config_load(&cfg, path), 0);
    assert_int_equal(cfg.model.value_dim, 256);
    test_write_text(
        path,
        "return { model = { preset = 'transformer++-small', rope_theta = 500000 }, name = 'l' }\n");
    assert_int_equal(train_config_load(&cfg, path), 0);
    assert_float_equal(cfg.model.rope_theta, 500000.0, 1e-3);
    /* where it runs */
    test_write_text(path, "return { model = { preset = 'mamba-small' }, name = 'g', device = "
                          "'cuda:1', bf16 = true }\n");
    assert_int_equal(train_config_load(&cfg, path), 0);
    assert_string_equal(cfg.device, "cuda:1");
    assert_int_equal(cfg.bf16, 1);
}

/* Every shipped training script loads, names its own preset, shares the demo budget and keeps
 * its family's learning rate. */
static void test_shipped_scripts_load(void **state)
{
    (void)state;
    /* not the registry: the shipped scripts, each with its family's learning rate */
    static const char *const archs[] = {"transformer", "mamba",       "transformer++", "retnet",
                                        "mamba-mha",   "mamba-local", "mamba-encdec"};
    /* the paper's learning rate of each family (docs/models.md §1.5), doubled */
    static const double lr[] = {8e-4, 2e-3, 8e-4, 2e-3, 1.4e-3, 1.4e-3, 1.4e-3};
    for (int i = 0; i < 7; i++) {
        char path[128];
        snprintf(path, sizeof path, "scripts/train/%s-small.lua", archs[i]);
        mt_train_config cfg;
        if (train_config_load(&cfg, path)) fail_msg("%s", mt_last_error());
        assert_string_equal(cfg.model.arch, archs[i]);
        assert_int_equal(cfg.max_steps, 1000);
        assert_int_equal(cfg.max_tokens, 4096);
        assert_int_equal(cfg.save_dtype_f16, 1);
        assert_true(fabs(cfg.lr - lr[i]) < 1e-12);
    }
}

/* `dataset = DIR`: files, languages and tokenizer from the manifest; the reverse direction by
 * swapping the languages; a file key or language that disagrees is an error naming it; the
 * config written back reads the same; without a dataset the languages default to es, en. */
static void test_config_dataset(void **state)
{
    (void)state;
    char dir[128], path[160], lua[1024];
    snprintf(dir, sizeof dir, "%s/deen", tmpdir);
    mkdir(dir, 0755);
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    test_write_text(
        path, "{\"format\": \"mtlab-dataset 1\", \"src_lang\": \"de\", \"tgt_lang\": \"en\"}\n");
    const char *files[] = {"train.de", "train.en", "valid.de", "valid.en"};
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        test_write_text(path, "x\n");
    }
    snprintf(path, sizeof path, "%s/ds.lua", tmpdir);
    snprintf(lua, sizeof lua,
             "return { name = 'd', model = { preset = 'mamba-small' }, dataset = '%s' }\n", dir);
    test_write_text(path, lua);
    mt_train_config cfg;
    if (train_config_load(&cfg, path)) fail_msg("%s", mt_last_error());
    assert_string_equal(cfg.src_lang, "de");
    assert_string_equal(cfg.tgt_lang, "en");
    assert_string_equal(cfg.model.src_lang, "de"); /* what the bundles' config.json records */
    assert_string_equal(cfg.model.tgt_lang, "en");
    assert_string_equal(strrchr(cfg.train_src, '/'), "/train.de");
    assert_string_equal(strrchr(cfg.valid_tgt, '/'), "/valid.en");
    assert_string_equal(strrchr(cfg.tokenizer, '/'), "/spm.model");

    /* written back (a job's copy) and read again: the same */
    char copy[160];
    snprintf(copy, sizeof copy, "%s/copy.lua", tmpdir);
    assert_int_equal(train_config_write(&cfg, "mamba-small", copy), 0);
    mt_train_config again;
    if (train_config_load(&again, copy)) fail_msg("%s", mt_last_error());
    assert_string_equal(again.train_tgt, cfg.train_tgt);
    assert_string_equal(again.tgt_lang, "en");

    /* the reverse direction: en -> de from the same files */
    snprintf(lua, sizeof lua,
             "return { model = { preset = 'mamba-small' }, dataset = '%s', src_lang = 'en', "
             "tgt_lang = 'de' }\n",
             dir);
    test_write_text(path, lua);
    if (train_config_load(&cfg, path)) fail_msg("%s", mt_last_error());
    assert_string_equal(strrchr(cfg.train_src, '/'), "/train.en");
    assert_string_equal(strrchr(cfg.train_tgt, '/'), "/train.de");
    assert_string_equal(cfg.model.src_lang, "en");

    snprintf(lua, sizeof lua,
             "return { model = { preset = 'mamba-small' }, dataset = '%s', tgt_lang = 'fr' }\n",
             dir);
    expect_config_error(lua, "whose languages are de and en");
    snprintf(lua, sizeof lua,
             "return { model = { preset = 'mamba-small' }, dataset = '%s', train_src = 'a.de' }\n",
             dir);
    expect_config_error(lua, "'train_src' = \"a.de\" beside dataset");
    expect_config_error("return { model = { preset = 'mamba-small' }, dataset = '/nonexistent' }",
                        "dataset = \"/nonexistent\": /nonexistent: not a dataset");
    expect_config_error("return { model = { preset = 'mamba-small' }, src_lang = 'de_DE' }",
                        "'src_lang'");
    test_write_text(
        path, "return { model = { preset = 'mamba-small' }, train_src = 'a', train_tgt = 'b' }\n");
    if (train_config_load(&cfg, path)) fail_msg("%s", mt_last_error());
    assert_string_equal(cfg.src_lang, "es"); /* no dataset: the Bible's direction unless given */
    assert_string_equal(cfg.tgt_lang, "en");
}

/* The retraining runs (scripts/train/retrain/, budget.lua): the seven and three CAT-5 variants,
 * ten times the demo's steps on the same batches, name substitution on, each its own run. */
static void test_retrain_scripts_load(void **state)
{
    (void)state;
    static const struct {
        const char *file, *arch, *name;
        int cat_n;
        double lr;
    } runs[] = {
        {"transformer-small", "transformer", "transformer-small-10k", 0, 8e-4},
        {"transformer++-small", "transformer++", "transformer++-small-10k", 0, 8e-4},
        {"retnet-small", "retnet", "retnet-small-10k", 0, 2e-3},
        {"mamba-small", "mamba", "mamba-small-10k", 0, 2e-3},
        {"mamba-mha-small", "mamba-mha", "mamba-mha-small-10k", 0, 1.4e-3},
        {"mamba-local-small", "mamba-local", "mamba-local-small-10k", 0, 1.4e-3},
        {"mamba-encdec-small", "mamba-encdec", "mamba-encdec-small-10k", 0, 1.4e-3},
        {"transformer-cat5-small", "transformer", "transformer-cat5-small-10k", 5, 8e-4},
        {"mamba-cat5-small", "mamba", "mamba-cat5-small-10k", 5, 2e-3},
        {"mamba-mha-cat5-small", "mamba-mha", "mamba-mha-cat5-small-10k", 5, 1.4e-3},
    };
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        char path[128];
        snprintf(path, sizeof path, "scripts/train/retrain/%s.lua", runs[i].file);
        mt_train_config cfg;
        if (train_config_load(&cfg, path)) fail_msg("%s", mt_last_error());
        assert_string_equal(cfg.model.arch, runs[i].arch);
        assert_string_equal(cfg.name, runs[i].name);
        assert_int_equal(cfg.max_steps, 10000);
        assert_int_equal(cfg.max_tokens, 4096);
        assert_int_equal(cfg.cat_n, runs[i].cat_n);
        assert_int_equal(cfg.max_len, runs[i].cat_n ? 512 : 128);
        assert_true(fabs(cfg.lr - runs[i].lr) < 1e-12);
        assert_float_equal(cfg.name_substitution, 0.3, 1e-12);
        assert_string_equal(cfg.gazetteer, "scripts/data/gazetteer.train.txt");
        assert_int_equal(cfg.save_dtype_f16, 1);
    }
}

/* A tiny run on the tokenizer fixture corpus. */
static void tiny_config(mt_train_config *cfg, const char *arch, const char *run, long max_steps)
{
    test_tiny_train_config(cfg, !strcmp(arch, "mamba") ? "mamba-small" : "transformer-small",
                           tmpdir, run, max_steps);
    cfg->model.n_encoder_layers = 1;
    cfg->model.n_heads = 2;
    cfg->model.ffn_dim = 32;
    cfg->model.dropout = 0.1f;
    cfg->accum = 2;
    cfg->seed = 11;
}

/* The "loss" fields of the train lines of a log, concatenated. */
static char *losses_of(const char *run_dir)
{
    char path[700];
    snprintf(path, sizeof path, "%s/log.jsonl", run_dir);
    char *log = test_read_file(path, NULL);
    assert_non_null(log);
    char *out = calloc(1, strlen(log) + 1);
    for (char *p = strstr(log, "\"loss\":"); p; p = strstr(p + 1, "\"loss\":")) {
        char *end = strchr(p, ',');
        strncat(out, p, (size_t)(end - p) + 1);
    }
    free(log);
    return out;
}

/* Validation is logged at the step it ran, not the last logged one: valid_every = 3 with
 * log_every = 5 validates at steps 3 and 6, and at the last, 8. */
static void test_validation_logged_at_its_step(void **state)
{
    (void)state;
    mt_train_config cfg;
    tiny_config(&cfg, "mamba", "valid-step", 8);
    snprintf(cfg.valid_src, sizeof cfg.valid_src, "tests/fixtures/tokenizer/corpus.es");
    snprintf(cfg.valid_tgt, sizeof cfg.valid_tgt, "tests/fixtures/tokenizer/corpus.en");
    cfg.log_every = 5;
    cfg.valid_every = 3;
    assert_int_equal(mt_train_run(&cfg, 0, NULL), 0);
    char path[700], steps[64] = "";
    snprintf(path, sizeof path, "%s/log.jsonl", cfg.run_dir);
    char *log = test_read_file(path, NULL);
    assert_non_null(log);
    for (char *line = strtok(log, "\n"); line; line = strtok(NULL, "\n")) {
        if (!strstr(line, "\"valid\"")) continue;
        char *at = strstr(line, "\"step\":");
        assert_non_null(at);
        snprintf(steps + strlen(steps), sizeof steps - strlen(steps), " %ld",
                 strtol(at + 7, NULL, 10));
    }
    free(log);
    assert_string_equal(steps, " 3 6 8");
}

/* A device that cannot be opened stops the run at its start, with a message naming it. */
static void test_unavailable_device_is_an_error(void **state)
{
    (void)state;
    mt_train_config cfg;
    tiny_config(&cfg, "mamba", "on-gpu", 2);
    snprintf(cfg.device, sizeof cfg.device, "cuda:9");
    assert_int_equal(mt_train_run(&cfg, 0, NULL), -1);
    assert_non_null(strstr(mt_last_error(), "cuda:9: "));
    snprintf(cfg.device, sizeof cfg.device, "gpu");
    assert_int_equal(mt_train_run(&cfg, 0, NULL), -1);
    assert_non_null(strstr(mt_last_error(), "unknown device 'gpu'"));
}

/* The trainer refuses a vocabulary that loading the bundle would refuse (runner.c's rule):
 * fewer rows than the tokenizer's 256 pieces, or rows past their padding to a multiple of 128. */
static void test_vocab_rows_must_fit_the_tokenizer(void **state)
{
    (void)state;
    static const int bad[] = {255, 257, 384};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        mt_train_config cfg;
        tiny_config(&cfg, "mamba", "vocab-rows", 1);
        cfg.model.vocab_size = bad[i];
        assert_int_equal(mt_train_run(&cfg, 0, NULL), -1);
        char want[160];
        snprintf(want, sizeof want,
                 "the tokenizer %s/spm.model has 256 pieces but model.vocab_size is %d", tmpdir,
                 bad[i]);
        if (!strstr(mt_last_error(), want)) fail_msg("%s", mt_last_error());
        assert_non_null(strstr(mt_last_error(), "multiple of 128"));
    }
}

/* An optimiser step gathers at most MT_TRAIN_MAX_ACCUM micro-batches: a larger accum is refused by
 * name, never trained as the limit while the checkpoint records the value asked for. */
static void test_accum_above_the_limit_is_refused(void **state)
{
    (void)state;
    mt_train_config cfg;
    tiny_config(&cfg, "mamba", "accum-limit", 1);
    cfg.accum = MT_TRAIN_MAX_ACCUM + 1;
    assert_int_equal(mt_train_run(&cfg, 0, NULL), -1);
    char want[120];
    snprintf(want, sizeof want, "accum must be in 1..%d, got %d", MT_TRAIN_MAX_ACCUM,
             MT_TRAIN_MAX_ACCUM + 1);
    if (!strstr(mt_last_error(), want)) fail_msg("expected '%s' in: %s", want, mt_last_error());
}

/* names: the name_substitution probability (docs/data.md §8), 0 for none. */
static void check_resume_exact(const char *arch, double names)
{
    mt_train_config a, b;
    char run_a[48], run_b[48];
    snprintf(run_a, sizeof run_a, "%s-%s-straight", arch, names > 0 ? "names" : "plain");
    snprintf(run_b, sizeof run_b, "%s-%s-resumed", arch, names > 0 ? "names" : "plain");
    tiny_config(&a, arch, run_a, 6);
    a.name_substitution = names;
    snprintf(a.gazetteer, sizeof a.gazetteer, "scripts/data/gazetteer.train.txt");
    assert_int_equal(mt_train_run(&a, 0, NULL), 0);

    tiny_config(&b, arch, run_b, 3);
    b.name_substitution = names;
    snprintf(b.gazetteer, sizeof b.gazetteer, "scripts/data/gazetteer.train.txt");
    assert_int_equal(mt_train_run(&b, 0, NULL), 0);
    /* a second fresh start on the same run directory is refused */
    assert_int_equal(mt_train_run(&b, 0, NULL), -1);
    assert_non_null(strstr(mt_last_error(), "already holds a checkpoint"));
    b.max_steps = 6;
    assert_int_equal(mt_train_run(&b, 1, NULL), 0);

    char *la = losses_of(a.run_dir), *lb = losses_of(b.run_dir);
    print_message("%s losses: %s\n", arch, la);
    assert_string_equal(la, lb);
    free(la);
    free(lb);

    char pa[700], pb[700];
    /* the bundle carries the training corpus's entity frequencies for the recall bins */
    snprintf(pa, sizeof pa, "%s/checkpoint/corpus_stats.tsv", a.run_dir);
    char *stats = test_read_file(pa, NULL);
    assert_non_null(stats);
    assert_non_null(strstr(stats, "# mtlab corpus_stats"));
    free(stats);
    snprintf(pa, sizeof pa, "%s/checkpoint/model.safetensors", a.run_dir);
    snprintf(pb, sizeof pb, "%s/checkpoint/model.safetensors", b.run_dir);
    size_t na, nb;
    char *wa = test_read_file(pa, &na), *wb = test_read_file(pb, &nb);
    assert_non_null(wa);
    assert_non_null(wb);
    assert_int_equal(na, nb);
    assert_memory_equal(wa, wb, na);
    free(wa);
    free(wb);

    /* resuming with a different learning rate is refused, naming the reason */
    b.lr = 1e-3;
    b.max_steps = 7;
    assert_int_equal(mt_train_run(&b, 1, NULL), -1);
    assert_non_null(strstr(mt_last_error(), "other settings"));
}

static void test_resume_is_exact_mamba(void **state)
{
    (void)state;
    check_resume_exact("mamba", 0);
}

/* Name substitution draws each epoch's names from (seed, epoch) alone, so the resumed process
 * rebuilds the substituted epoch the first one trained on. The substituted run must also
 * differ from the plain one, or the substitution did nothing. */
static void test_resume_is_exact_with_names(void **state)
{
    (void)state;
    check_resume_exact("mamba", 0.5);
    char plain[128], named[128];
    snprintf(plain, sizeof plain, "%s/mamba-plain-straight", tmpdir);
    snprintf(named, sizeof named, "%s/mamba-names-straight", tmpdir);
    char *lp = losses_of(plain), *ln = losses_of(named);
    assert_string_not_equal(lp, ln);
    free(lp);
    free(ln);
    /* resuming it without substitution is refused: the data would not be the same */
    mt_train_config b;
    tiny_config(&b, "mamba", "mamba-names-resumed", 8);
    assert_int_equal(mt_train_run(&b, 1, NULL), -1);
    assert_non_null(strstr(mt_last_error(), "other settings"));
}

static void test_name_substitution_config(void **state)
{
    (void)state;
    mt_train_config cfg;
    tiny_config(&cfg, "mamba", "bad-names", 2);
    cfg.cat_n = 5;
    cfg.cat_min = 7;
    assert_int_equal(mt_train_run(&cfg, 0, NULL), -1);
    assert_non_null(strstr(mt_last_error(),
                           "cat_min = 7: it must be 0 (exactly cat_n pairs) or in 2..cat_n (5)"));
    cfg.cat_n = 0;
    cfg.cat_min = 0;
    cfg.name_substitution = 1.5;
    assert_int_equal(mt_train_run(&cfg, 0, NULL), -1);
    assert_non_null(strstr(mt_last_error(), "name_substitution must be in [0, 1], got 1.5"));
    cfg.name_substitution = 0.3;
    assert_int_equal(mt_train_run(&cfg, 0, NULL), -1);
    assert_non_null(strstr(mt_last_error(), "'gazetteer' is not set"));
    assert_non_null(strstr(mt_last_error(), "name_substitution = 0.3 needs a gazetteer"));
    snprintf(cfg.gazetteer, sizeof cfg.gazetteer, "no/such/names.txt");
    assert_int_equal(mt_train_run(&cfg, 0, NULL), -1);
    assert_non_null(strstr(mt_last_error(), "gazetteer = \"no/such/names.txt\""));
    /* the Lua keys */
    char path[128];
    snprintf(path, sizeof path, "%s/names.lua", tmpdir);
    test_write_text(
        path, "return { name = 'n', model = { preset = 'mamba-small' }, name_substitution = 0.25,\n"
              "  gazetteer = 'scripts/data/gazetteer.train.txt' }\n");
    assert_int_equal(train_config_load(&cfg, path), 0);
    assert_float_equal(cfg.name_substitution, 0.25, 1e-12);
    assert_string_equal(cfg.gazetteer, "scripts/data/gazetteer.train.txt");
    expect_config_error("return { model = { preset = 'mamba-small' }, name_substitution = 'yes' }",
                        "'name_substitution' must be a number");
}

static void test_resume_is_exact_transformer(void **state)
{
    (void)state;
    check_resume_exact("transformer", 0);
}

/* A run started from another's bundle (init, init_step): the weights are the bundle's, the steps
 * and the learning-rate schedule go on from init_step, and a bundle of another shape is refused
 * naming the size that differs. */
static void test_init_from_a_bundle(void **state)
{
    (void)state;
    mt_train_config a, b;
    tiny_config(&a, "mamba", "init-source", 3);
    assert_int_equal(mt_train_run(&a, 0, NULL), 0);

    tiny_config(&b, "mamba", "init-continued", 4);
    snprintf(b.init, sizeof b.init, "%s/checkpoint", a.run_dir);
    b.init_step = 3;
    b.lr = 1e-9; /* one step that moves nothing measurable: the weights stay the bundle's */
    b.weight_decay = 0;
    if (mt_train_run(&b, 0, NULL) != 0) fail_msg("%s", mt_last_error());
    char path[700];
    snprintf(path, sizeof path, "%s/log.jsonl", b.run_dir);
    char *log = test_read_file(path, NULL);
    assert_non_null(log);
    assert_non_null(strstr(log, "\"step\":4,")); /* the one step it ran is step 4 */
    assert_null(strstr(log, "\"step\":1,"));
    free(log);
    char da[700], db[700];
    snprintf(da, sizeof da, "%s/checkpoint", a.run_dir);
    snprintf(db, sizeof db, "%s/checkpoint", b.run_dir);
    mt_model *ma = mt_model_load(da, mt_backend_cpu(), 0),
             *mb = mt_model_load(db, mt_backend_cpu(), 0);
    assert_non_null(ma);
    assert_non_null(mb);
    size_t n = mt_model_param_block_size(ma);
    assert_int_equal(n, mt_model_param_block_size(mb));
    const float *pa = mt_model_params(ma), *pb = mt_model_params(mb);
    double worst = 0;
    for (size_t i = 0; i < n; i++) worst = fmax(worst, fabs((double)pa[i] - pb[i]));
    assert_true(worst < 1e-6);
    mt_model_free(ma);
    mt_model_free(mb);

    mt_train_config c;
    tiny_config(&c, "mamba", "init-wrong-size", 4);
    snprintf(c.init, sizeof c.init, "%s/checkpoint", a.run_dir);
    c.model.d_model = 32;
    assert_int_equal(mt_train_run(&c, 0, NULL), -1);
    assert_non_null(strstr(mt_last_error(), "has another shape"));
    tiny_config(&c, "transformer", "init-wrong-arch", 4);
    snprintf(c.init, sizeof c.init, "%s/checkpoint", a.run_dir);
    assert_int_equal(mt_train_run(&c, 0, NULL), -1);
    assert_non_null(strstr(mt_last_error(), "is a mamba model, the config's is transformer"));
    tiny_config(&c, "mamba", "init-no-bundle", 4);
    c.init_step = 2;
    assert_int_equal(mt_train_run(&c, 0, NULL), -1);
    assert_non_null(strstr(mt_last_error(), "init_step = 2 needs init"));
    snprintf(c.init, sizeof c.init, "%s/checkpoint", a.run_dir);
    c.init_step = 4;
    assert_int_equal(mt_train_run(&c, 0, NULL), -1);
    assert_non_null(strstr(mt_last_error(), "init_step must be in 0 .. max_steps - 1"));
}

/* Bundle dir's weights, loaded on the CPU (the test fails when it does not load). */
static mt_model *load_bundle(const char *dir)
{
    mt_model *m = mt_model_load(dir, mt_backend_cpu(), 0);
    if (!m) fail_msg("%s: %s", dir, mt_last_error());
    return m;
}

/* keep_every keeps a bundle at every such step; averaging kept bundles gives the mean of their
 * weights whatever their order, one bundle averages to itself, the first bundle's training
 * statistics come along, and bundles that cannot be averaged are refused naming why. */
static void test_keep_every_and_average(void **state)
{
    (void)state;
    mt_train_config a;
    tiny_config(&a, "mamba", "kept", 3);
    a.keep_every = 1;
    if (mt_train_run(&a, 0, NULL) != 0) fail_msg("%s", mt_last_error());
    char k[3][700], out[700], rev[700], one[700];
    for (int i = 0; i < 3; i++) snprintf(k[i], sizeof k[i], "%s/steps/%d", a.run_dir, i + 1);
    snprintf(out, sizeof out, "%s/avg", tmpdir);
    snprintf(rev, sizeof rev, "%s/avg-reversed", tmpdir);
    snprintf(one, sizeof one, "%s/avg-one", tmpdir);
    const char *dirs[3] = {k[0], k[1], k[2]}, *back[3] = {k[2], k[1], k[0]};
    if (mt_model_average(dirs, 3, out, -1) != 0) fail_msg("%s", mt_last_error());
    assert_int_equal(mt_model_average(back, 3, rev, -1), 0);
    assert_int_equal(mt_model_average(dirs + 2, 1, one, -1), 0);

    mt_model *m[3] = {load_bundle(k[0]), load_bundle(k[1]), load_bundle(k[2])};
    mt_model *avg = load_bundle(out), *avg_rev = load_bundle(rev), *avg_one = load_bundle(one);
    size_t n = mt_model_param_block_size(avg);
    const float *p0 = mt_model_params(m[0]), *p1 = mt_model_params(m[1]),
                *p2 = mt_model_params(m[2]);
    const float *pa = mt_model_params(avg);
    double worst = 0, moved = 0;
    for (size_t i = 0; i < n; i++) {
        worst = fmax(worst, fabs(((double)p0[i] + p1[i] + p2[i]) / 3 - pa[i]));
        moved = fmax(moved, fabs((double)p0[i] - p2[i]));
    }
    assert_true(moved > 1e-4); /* the kept steps differ, so the mean is not any one of them */
    assert_true(worst < 1e-6);
    assert_memory_equal(pa, mt_model_params(avg_rev), n * sizeof(float));
    assert_memory_equal(p2, mt_model_params(avg_one), n * sizeof(float));
    for (int i = 0; i < 3; i++) mt_model_free(m[i]);
    mt_model_free(avg);
    mt_model_free(avg_rev);
    mt_model_free(avg_one);
    char p[800], q[800];
    snprintf(p, sizeof p, "%s/entity_lexicon.tsv", k[0]);
    snprintf(q, sizeof q, "%s/entity_lexicon.tsv", out);
    char *lex0 = test_read_file(p, NULL), *lex = test_read_file(q, NULL);
    assert_non_null(lex0);
    assert_non_null(lex);
    assert_string_equal(lex0, lex);
    free(lex0);
    free(lex);

    assert_int_equal(mt_model_average(dirs, 3, k[1], -1), -1);
    assert_non_null(strstr(mt_last_error(), "is one of the bundles averaged"));
    assert_int_equal(mt_model_average(dirs, 0, out, -1), -1);
    assert_non_null(strstr(mt_last_error(), "no bundles"));
    mt_train_config c;
    tiny_config(&c, "transformer", "avg-other-arch", 1);
    assert_int_equal(mt_train_run(&c, 0, NULL), 0);
    snprintf(p, sizeof p, "%s/checkpoint", c.run_dir);
    const char *mixed[2] = {k[0], p};
    assert_int_equal(mt_model_average(mixed, 2, out, -1), -1);
    assert_non_null(strstr(mt_last_error(), "is a transformer model"));
    tiny_config(&c, "mamba", "avg-other-size", 1);
    c.model.d_model = 32;
    assert_int_equal(mt_train_run(&c, 0, NULL), 0);
    snprintf(p, sizeof p, "%s/checkpoint", c.run_dir);
    assert_int_equal(mt_model_average(mixed, 2, out, -1), -1);
    assert_non_null(strstr(mt_last_error(), "has another shape"));
    snprintf(q, sizeof q, "%s/other-tokenizer", tmpdir);
    assert_int_equal(mkdir(q, 0755), 0);
    assert_int_equal(test_train_fixture_tokenizer(q, 250, 1), 0);
    tiny_config(&c, "mamba", "avg-other-tokenizer", 1);
    snprintf(c.tokenizer, sizeof c.tokenizer, "%s/spm.model", q);
    assert_int_equal(mt_train_run(&c, 0, NULL), 0);
    snprintf(p, sizeof p, "%s/checkpoint", c.run_dir);
    assert_int_equal(mt_model_average(mixed, 2, out, -1), -1);
    assert_non_null(strstr(mt_last_error(), "has another tokenizer.model"));
    snprintf(p, sizeof p, "%s/no-such-bundle", tmpdir);
    assert_int_equal(mt_model_average(mixed, 2, out, -1), -1);
    assert_non_null(strstr(mt_last_error(), "no-such-bundle"));
}

static int setup(void **state)
{
    (void)state;
    if (test_make_tmpdir(tmpdir, sizeof tmpdir, "train") != 0) return -1;
    if (test_train_fixture_tokenizer(tmpdir, 256, 1) != 0) {
        fprintf(stderr, "tokenizer: %s\n", mt_last_error());
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return test_remove_tree(tmpdir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config_errors),
        cmocka_unit_test(test_keep_every_and_average),
        cmocka_unit_test(test_config_reads_values),
        cmocka_unit_test(test_config_dataset),
        cmocka_unit_test(test_shipped_scripts_load),
        cmocka_unit_test(test_retrain_scripts_load),
        cmocka_unit_test(test_validation_logged_at_its_step),
        cmocka_unit_test(test_unavailable_device_is_an_error),
        cmocka_unit_test(test_accum_above_the_limit_is_refused),
        cmocka_unit_test(test_vocab_rows_must_fit_the_tokenizer),
        cmocka_unit_test(test_resume_is_exact_mamba),
        cmocka_unit_test(test_resume_is_exact_transformer),
        cmocka_unit_test(test_resume_is_exact_with_names),
        cmocka_unit_test(test_name_substitution_config),
        cmocka_unit_test(test_init_from_a_bundle),
    };
    return cmocka_run_group_tests_name("train", tests, setup, teardown);
}
