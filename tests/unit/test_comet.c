/* COMET (mtlab/comet.h) against unbabel-comet itself: tests/fixtures/comet/ holds a tiny
 * wmt22-comet-da-shaped model with random weights (2 XLM-R layers, hidden 32, sparsemax mix,
 * estimator 64 -> 32 -> 1), 50 segments and the scores COMET's model.predict gave them
 * (make_fixture.py). */
#include "test_util.h"

#include <jansson.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cuda_check.h"
#include "eval/comet_internal.h"
#include "mtlab/comet.h"
#include "mtlab/error.h"
#include "mtlab/significance.h"

#define FIX "tests/fixtures/comet"
#define N_SEG 50

typedef struct {
    char *text[3]; /* src, hyp, ref file contents */
    const char *line[3][N_SEG];
    double want[N_SEG];
    double system;
    int hyp_tokens[N_SEG];
} fixture;

static void split_lines(char *text, const char **lines)
{
    int n = 0;
    for (char *p = text; *p && n < N_SEG; n++) {
        lines[n] = p;
        char *nl = strchr(p, '\n');
        assert_non_null(nl);
        *nl = 0, p = nl + 1;
    }
    assert_int_equal(n, N_SEG);
}

static fixture *load_fixture(void)
{
    fixture *f = calloc(1, sizeof *f);
    static const char *const files[3] = {FIX "/src.txt", FIX "/hyp.txt", FIX "/ref.txt"};
    for (int k = 0; k < 3; k++) {
        f->text[k] = test_read_file(files[k], NULL);
        assert_non_null(f->text[k]);
        split_lines(f->text[k], f->line[k]);
    }
    json_error_t err;
    json_t *j = json_load_file(FIX "/scores.json", 0, &err);
    if (!j) fail_msg("%s:%d: %s", FIX "/scores.json", err.line, err.text);
    json_t *seg = json_object_get(j, "segments"), *len = json_object_get(j, "hyp_tokens");
    assert_int_equal(json_array_size(seg), N_SEG);
    for (int i = 0; i < N_SEG; i++) {
        f->want[i] = json_number_value(json_array_get(seg, i));
        f->hyp_tokens[i] = (int)json_integer_value(json_array_get(len, i));
    }
    f->system = json_number_value(json_object_get(j, "system"));
    json_decref(j);
    return f;
}

static void free_fixture(fixture *f)
{
    for (int k = 0; k < 3; k++) free(f->text[k]);
    free(f);
}

/* every segment within 1e-4 of COMET's, and the system score (their mean) too */
static void check_scores(mt_comet *m, const fixture *f)
{
    float got[N_SEG];
    if (mt_comet_score(m, f->line[0], f->line[1], f->line[2], N_SEG, got))
        fail_msg("%s", mt_last_error());
    double worst = 0, sum = 0;
    for (int i = 0; i < N_SEG; i++) {
        double d = fabs(got[i] - f->want[i]);
        if (d > 1e-4) fail_msg("segment %d: mtlab %.7f, COMET %.7f", i + 1, got[i], f->want[i]);
        worst = d > worst ? d : worst;
        sum += got[i];
    }
    assert_true(fabs(sum / N_SEG - f->system) < 1e-4);
    print_message("    max |mtlab - COMET| over %d segments: %.2e\n", N_SEG, worst);
}

static void link_into(const char *dir, const char *name, const char *target)
{
    char path[512], abs_target[512], cwd[400];
    assert_non_null(getcwd(cwd, sizeof cwd));
    snprintf(path, sizeof path, "%s/%s", dir, name);
    snprintf(abs_target, sizeof abs_target, "%s/%s", cwd, target);
    assert_int_equal(symlink(abs_target, path), 0);
}

/* A model directory with the fixture's hparams, tokenizer and config, and model.safetensors
 * in place of the checkpoint. */
static void make_safetensors_dir(char *dir, size_t len)
{
    assert_int_equal(test_make_tmpdir(dir, len, "comet"), 0);
    link_into(dir, "hparams.yaml", FIX "/model/hparams.yaml");
    link_into(dir, "sentencepiece.bpe.model", FIX "/model/sentencepiece.bpe.model");
    link_into(dir, "config.json", FIX "/model/config.json");
    link_into(dir, "model.safetensors", FIX "/model.safetensors");
}

/* on the CPU backend and on the naive reference one */
static void test_checkpoint_scores(void **state)
{
    (void)state;
    fixture *f = load_fixture();
    const mt_backend *backends[2] = {mt_backend_cpu(), mt_backend_cpu_naive()};
    for (int b = 0; b < 2; b++) {
        mt_comet *m = mt_comet_open(FIX "/model", backends[b]);
        if (!m) fail_msg("%s", mt_last_error());
        check_scores(m, f);
        mt_comet_free(m);
    }
    free_fixture(f);
}

static void test_safetensors_scores(void **state)
{
    (void)state;
    fixture *f = load_fixture();
    char dir[256];
    make_safetensors_dir(dir, sizeof dir);
    mt_comet *m = mt_comet_open(dir, mt_backend_cpu());
    if (!m) fail_msg("%s", mt_last_error());
    const mt_comet_config *c = mt_comet_config_of(m);
    assert_int_equal(c->L, 2), assert_int_equal(c->C, 32), assert_int_equal(c->H, 4);
    assert_int_equal(c->P, 514), assert_int_equal(c->n_hidden, 2);
    assert_int_equal(c->sparsemax, 1), assert_int_equal(c->layer_norm, 0);
    check_scores(m, f);
    mt_comet_free(m);
    test_remove_tree(dir);
    free_fixture(f);
}

/* the hypotheses' ids as COMET's tokenizer made them: the same lengths, one of them cut at
 * 510 (<s> 508 pieces </s>) */
static void test_tokens_and_truncation(void **state)
{
    (void)state;
    fixture *f = load_fixture();
    mt_comet *m = mt_comet_open(FIX "/model", mt_backend_cpu());
    if (!m) fail_msg("%s", mt_last_error());
    int cut = 0;
    for (int i = 0; i < N_SEG; i++) {
        int32_t *ids;
        int len;
        assert_int_equal(mt_comet_encode(m, f->line[1][i], &ids, &len), 0);
        if (len != f->hyp_tokens[i])
            fail_msg("hypothesis %d: %d ids, COMET's tokenizer %d", i + 1, len, f->hyp_tokens[i]);
        assert_int_equal(ids[0], 0), assert_int_equal(ids[len - 1], 2);
        cut += len == 510;
        free(ids);
    }
    assert_int_equal(cut, 1);
    mt_comet_free(m);
    free_fixture(f);
}

static void test_sparsemax(void **state)
{
    (void)state;
    /* sorted 0.9, 0.4, -0.6: k = 2, tau = (1.3 - 1) / 2 */
    const float z[3] = {0.9f, -0.6f, 0.4f};
    float p[3];
    comet_sparsemax(p, z, 3);
    assert_float_equal(p[0], 0.75f, 1e-6), assert_float_equal(p[1], 0.0f, 0);
    assert_float_equal(p[2], 0.25f, 1e-6);
    const float flat[4] = {0, 0, 0, 0}; /* a fresh model's scalars: uniform */
    float q[4];
    comet_sparsemax(q, flat, 4);
    for (int i = 0; i < 4; i++) assert_float_equal(q[i], 0.25f, 1e-7);
    const float peak[3] = {5.0f, 1.0f, 0.5f}; /* one layer takes it all */
    comet_sparsemax(p, peak, 3);
    assert_float_equal(p[0], 1.0f, 0), assert_float_equal(p[1], 0.0f, 0);
}

static void write_hparams(const char *dir, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/hparams.yaml", dir);
    test_write_text(path, text);
}

static void expect_open_error(const char *dir, const char *want)
{
    mt_comet *m = mt_comet_open(dir, mt_backend_cpu());
    if (m) {
        mt_comet_free(m);
        fail_msg("opened; expected an error with \"%s\"", want);
    }
    if (!strstr(mt_last_error(), want))
        fail_msg("error \"%s\" lacks \"%s\"", mt_last_error(), want);
}

static void test_hparams(void **state)
{
    (void)state;
    char dir[256], path[512];
    assert_int_equal(test_make_tmpdir(dir, sizeof dir, "comet-hp"), 0);
    snprintf(path, sizeof path, "%s/hparams.yaml", dir);
    mt_comet_config c;
    test_write_text(path, "activations: Tanh\nclass_identifier: regression_metric\nhidden_sizes:\n"
                          "- 3072\n- 1024\nlayer: mix\nlayer_norm: false\n"
                          "layer_transformation: sparsemax\npool: avg\nfinal_activation: null\n");
    assert_int_equal(comet_hparams_read(path, &c), 0);
    assert_int_equal(c.n_hidden, 2), assert_int_equal(c.hidden[0], 3072);
    assert_int_equal(c.hidden[1], 1024), assert_int_equal(c.sparsemax, 1);
    assert_int_equal(c.layer_norm, 0), assert_int_equal(c.layer, -1);
    assert_int_equal(c.final_act, -1), assert_int_equal(c.act, MT_ACT_TANH);
    /* defaults are RegressionMetric's; a flow list; the patched sparsemax is softmax */
    test_write_text(path, "class_identifier: regression_metric\nhidden_sizes: [16, 8, 4]\n"
                          "layer_transformation: sparsemax_patch\nlayer: 3\n");
    assert_int_equal(comet_hparams_read(path, &c), 0);
    assert_int_equal(c.n_hidden, 3), assert_int_equal(c.hidden[2], 4);
    assert_int_equal(c.sparsemax, 0), assert_int_equal(c.layer_norm, 1);
    assert_int_equal(c.layer, 3), assert_int_equal(c.pool, MT_COMET_POOL_AVG);

    const struct {
        const char *text, *want;
    } bad[] = {
        {"class_identifier: unified_metric\n", "hparams.yaml:1: class_identifier 'unified_metric'"},
        {"class_identifier: regression_metric\npool: max\n", "hparams.yaml:2: pool 'max'"},
        {"class_identifier: regression_metric\nlayer_norm: maybe\n",
         "hparams.yaml:2: layer_norm: 'maybe'"},
        {"class_identifier: regression_metric\nhidden_sizes:\n- 12\n- x\n",
         "hparams.yaml:4: hidden_sizes: 'x'"},
        {"class_identifier: regression_metric\nactivations: Sigmoid\n",
         "hparams.yaml:2: activations 'Sigmoid'"},
        {"class_identifier: regression_metric\nlayer_transformation: entmax\n",
         "hparams.yaml:2: layer_transformation 'entmax'"},
        {"class_identifier: regression_metric\nnonsense\n",
         "hparams.yaml:2: expected 'key: value'"},
        {"pool: avg\n", "no class_identifier"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        test_write_text(path, bad[i].text);
        assert_int_equal(comet_hparams_read(path, &c), -1);
        if (!strstr(mt_last_error(), bad[i].want))
            fail_msg("case %zu: \"%s\" lacks \"%s\"", i, mt_last_error(), bad[i].want);
    }
    test_remove_tree(dir);
}

/* each thing a directory may lack is named */
static void test_open_errors(void **state)
{
    (void)state;
    char dir[256], path[512];
    assert_int_equal(test_make_tmpdir(dir, sizeof dir, "comet-dir"), 0);
    expect_open_error(dir, "hparams.yaml: No such file");
    link_into(dir, "hparams.yaml", FIX "/model/hparams.yaml");
    expect_open_error(dir,
                      "no COMET weights: neither checkpoints/model.ckpt nor model.safetensors");
    link_into(dir, "model.safetensors", FIX "/model.safetensors");
    expect_open_error(dir, "sentencepiece.bpe.model: missing: COMET's tokenizer is XLM-R's");
    /* an mtlab tokenizer has another id layout */
    snprintf(path, sizeof path, "%s/sentencepiece.bpe.model", dir);
    link_into(dir, "sentencepiece.bpe.model", "tests/fixtures/tokenizer/sep_user_defined.model");
    expect_open_error(dir, "not XLM-R's layout: id 0 is '<pad>', expected '<unk>'");
    unlink(path);
    link_into(dir, "sentencepiece.bpe.model", FIX "/model/sentencepiece.bpe.model");
    /* hparams that disagree with the weights */
    unlink(strcat(strcpy(path, dir), "/hparams.yaml"));
    write_hparams(dir, "class_identifier: regression_metric\nhidden_sizes: [64, 16]\n"
                       "layer_transformation: sparsemax\nlayer_norm: false\n");
    expect_open_error(dir, "tensor 'estimator.ff.3.weight' has shape (32, 64), expected (16, 64)");
    write_hparams(dir, "class_identifier: regression_metric\nhidden_sizes: [64, 32]\nlayer: 7\n");
    expect_open_error(dir, "layer 7, but the encoder has 2 layers");
    test_remove_tree(dir);
}

/* other transformations and pools run through the same code: softmax with the layer norm
 * and a single layer give finite, different scores (no reference for these: wmt22 uses
 * sparsemax without the norm) */
static void test_variants_run(void **state)
{
    (void)state;
    fixture *f = load_fixture();
    char dir[256];
    make_safetensors_dir(dir, sizeof dir);
    char path[512];
    snprintf(path, sizeof path, "%s/hparams.yaml", dir);
    unlink(path);
    const char *variants[] = {
        "class_identifier: regression_metric\nhidden_sizes: [64, 32]\nlayer_norm: true\n",
        "class_identifier: regression_metric\nhidden_sizes: [64, 32]\nlayer: 1\npool: cls\n",
        "class_identifier: regression_metric\nhidden_sizes: [64, 32]\npool: default\n",
    };
    float first[3];
    for (int v = 0; v < 3; v++) {
        write_hparams(dir, variants[v]);
        mt_comet *m = mt_comet_open(dir, mt_backend_cpu());
        if (!m) fail_msg("%s", mt_last_error());
        float got[N_SEG];
        assert_int_equal(mt_comet_score(m, f->line[0], f->line[1], f->line[2], N_SEG, got), 0);
        for (int i = 0; i < N_SEG; i++) assert_true(isfinite(got[i]));
        first[v] = got[0];
        mt_comet_free(m);
    }
    assert_true(first[0] != first[1] && first[1] != first[2]);
    test_remove_tree(dir);
    free_fixture(f);
}

/* the paired tests over COMET: the score is the mean of the segment scores, x 100 */
static void test_significance(void **state)
{
    (void)state;
    enum { S = 6 };
    const float a[S] = {0.1f, 0.4f, 0.5f, 0.2f, 0.9f, 0.3f},
                b[S] = {0.2f, 0.5f, 0.6f, 0.3f, 1.0f, 0.4f};
    double ra[S * 2], rb[S * 2];
    for (int i = 0; i < S; i++)
        mt_sig_comet_row(ra + 2 * i, a[i]), mt_sig_comet_row(rb + 2 * i, b[i]);
    const double *stats[2] = {ra, rb};
    mt_sig_metric m = mt_sig_comet_metric();
    assert_string_equal(m.name, "COMET");
    mt_sig_result r[2];
    mt_sig_opts o = mt_sig_defaults(MT_SIG_BOOTSTRAP);
    assert_int_equal(mt_sig_paired(r, stats, 2, S, &m, &o), 0);
    assert_float_equal(r[0].score, 240.0 / 6, 1e-4),
        assert_float_equal(r[1].score, 300.0 / 6, 1e-4);
    assert_true(r[1].has_p && r[1].p > 0 && r[1].p <= 1);
}

/* mtlab score -m comet: the system score COMET printed, alone, as JSON and in the systems
 * table (x 100, with a paired test); what it needs is asked for by name */
static void test_score_command(void **state)
{
    (void)state;
    fixture *f = load_fixture();
    test_captured c =
        test_run_command(&cmd_score, (const char *[]){"--hyp", FIX "/hyp.txt", "--ref",
                                                      FIX "/ref.txt", "-m", "comet", "--comet",
                                                      FIX "/model", "--src", FIX "/src.txt", NULL});
    assert_int_equal(c.rc, 0);
    char want[160];
    snprintf(want, sizeof want,
             "COMET|nrefs:1|model:" FIX "/model|device:cpu|version:mtlab = %.4f\n", f->system);
    assert_string_equal(c.out, want);
    test_captured_free(&c);
    c = test_run_command(&cmd_score,
                         (const char *[]){"--hyp", FIX "/hyp.txt", "--ref", FIX "/ref.txt", "-m",
                                          "comet", "--comet", FIX "/model", "--src", FIX "/src.txt",
                                          "--json", NULL});
    assert_int_equal(c.rc, 0);
    json_t *j = json_loads(c.out, 0, NULL);
    assert_non_null(j);
    assert_float_equal(json_real_value(json_object_get(j, "score")), f->system, 5.1e-5);
    json_decref(j);
    test_captured_free(&c);
    /* two systems: the hypotheses against the references themselves, as a table */
    c = test_run_command(&cmd_score,
                         (const char *[]){"-i", FIX "/hyp.txt", FIX "/ref.txt", "--ref",
                                          FIX "/ref.txt", "-m", "comet", "--comet", FIX "/model",
                                          "--src", FIX "/src.txt", "--paired-bs", NULL});
    assert_int_equal(c.rc, 0);
    char cell[32];
    snprintf(cell, sizeof cell, "%.2f (", 100 * f->system);
    if (!strstr(c.out, "COMET (μ ± 95% CI)") || !strstr(c.out, cell))
        fail_msg("no COMET column with %s in:\n%s", cell, c.out);
    test_captured_free(&c);
    const struct {
        const char *const *args;
        const char *want;
    } bad[] = {
        {(const char *[]){"--hyp", FIX "/hyp.txt", "--ref", FIX "/ref.txt", "-m", "comet", "--src",
                          FIX "/src.txt", NULL},
         "-m comet needs --comet DIR"},
        {(const char *[]){"--hyp", FIX "/hyp.txt", "--ref", FIX "/ref.txt", "-m", "comet",
                          "--comet", FIX "/model", NULL},
         "-m comet needs --src FILE"},
        {(const char *[]){"--hyp", FIX "/hyp.txt", "--ref", FIX "/ref.txt", "--ref", FIX "/ref.txt",
                          "-m", "comet", "--comet", FIX "/model", "--src", FIX "/src.txt", NULL},
         "COMET takes one reference, got 2"},
        {(const char *[]){"--hyp", FIX "/hyp.txt", "--ref", FIX "/ref.txt", "--comet", FIX "/model",
                          NULL},
         "--comet, --src and --device go with -m comet"},
        {(const char *[]){"--hyp", FIX "/hyp.txt", "--ref", FIX "/ref.txt", "-m", "comet",
                          "--comet", FIX "/model", "--src", FIX "/ref.txt", "--device", "tpu",
                          NULL},
         "tpu"},
        {(const char *[]){"--hyp", FIX "/hyp.txt", "--ref", FIX "/ref.txt", "-m", "comet",
                          "--comet", FIX, "--src", FIX "/src.txt", NULL},
         FIX "/hparams.yaml"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        c = test_run_command(&cmd_score, bad[i].args);
        assert_int_equal(c.rc, 1);
        if (!strstr(c.err, bad[i].want))
            fail_msg("case %zu: \"%s\" lacks \"%s\"", i, c.err, bad[i].want);
        test_captured_free(&c);
    }
    free_fixture(f);
}

/* the CUDA backend gives the CPU's scores (skips without a device) */
static void test_cuda_scores(void **state)
{
    (void)state;
    const mt_backend *gpu = cuda_or_skip(0);
    if (!gpu) return;
    fixture *f = load_fixture();
    mt_comet *m = mt_comet_open(FIX "/model", gpu);
    if (!m) fail_msg("%s", mt_last_error());
    check_scores(m, f);
    mt_comet_free(m);
    free_fixture(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_checkpoint_scores),
        cmocka_unit_test(test_safetensors_scores),
        cmocka_unit_test(test_tokens_and_truncation),
        cmocka_unit_test(test_sparsemax),
        cmocka_unit_test(test_hparams),
        cmocka_unit_test(test_open_errors),
        cmocka_unit_test(test_variants_run),
        cmocka_unit_test(test_significance),
        cmocka_unit_test(test_score_command),
        cmocka_unit_test(test_cuda_scores),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
