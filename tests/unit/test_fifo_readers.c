/* Every reader of a file a user names opens it through mtlab/files.h: a FIFO where a regular
 * file belongs is refused at once, by what it is, instead of blocking in open() until a writer
 * comes (a theme, a training corpus, a gazetteer, a manifest, a job's files, a tokenizer
 * compared by checkpoint averaging); a text read once (bench ids) takes a pipe, and refuses a
 * directory by name. An alarm turns a reader that blocks into a failure rather than a hang. */
#include "test_util.h"
#include "bench/bench.h"
#include "common/theme.h"
#include "jobs/jobs.h"
#include "mtlab/backend.h"
#include "mtlab/bible.h"
#include "mtlab/comet.h"
#include "mtlab/dataset.h"
#include "mtlab/error.h"
#include "mtlab/model.h"
#include "mtlab/names.h"
#include "mtlab/tokenizer.h"
#include "mtlab/train.h"
#include "mtlab/traindata.h"
#include "train/train_internal.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmp[256], fifo[300];

static const char fifo_says[] = ": a FIFO (named pipe), not a regular file";

static void expect_fifo_refused(const char *path)
{
    char want[600];
    snprintf(want, sizeof want, "%s%s", path, fifo_says);
    if (!strstr(mt_last_error(), want)) fail_msg("expected '%s' in: %s", want, mt_last_error());
}

static void test_engine_readers(void **state)
{
    (void)state;
    alarm(20);
    mt_corpus c;
    assert_int_equal(mt_corpus_load(&c, "tests/fixtures/tokenizer/corpus.es", fifo, NULL, 0), -1);
    expect_fifo_refused(fifo);
    mt_gazetteer g;
    assert_int_equal(mt_gazetteer_load(&g, fifo), -1);
    expect_fifo_refused(fifo);
    mt_exclusions ex;
    assert_int_equal(mt_exclusions_load(fifo, &ex), -1);
    expect_fifo_refused(fifo);

    char dir[300], path[400];
    snprintf(dir, sizeof dir, "%s/data", tmp);
    assert_int_equal(mkdir(dir, 0755), 0);
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    assert_int_equal(mkfifo(path, 0600), 0);
    mt_dataset d;
    assert_int_equal(mt_dataset_open(&d, dir), -1);
    expect_fifo_refused(path);
    alarm(0);
}

/* Files the trainers read: tokenizer training's inputs (read twice: counted, then sampled) and
 * a run's checkpoint/trainer.json. */
static void test_training_inputs(void **state)
{
    (void)state;
    alarm(20);
    char prefix[300];
    snprintf(prefix, sizeof prefix, "%s/spm", tmp);
    const char *inputs[] = {"tests/fixtures/tokenizer/corpus.es", fifo};
    mt_tokenizer_train_opts o = {.inputs = inputs,
                                 .n_inputs = 2,
                                 .model_prefix = prefix,
                                 .vocab_size = 100,
                                 .num_threads = 1};
    assert_int_equal(mt_tokenizer_train(&o), -1);
    expect_fifo_refused(fifo);

    mt_train_config cfg;
    mt_train_config_defaults(&cfg);
    snprintf(cfg.run_dir, sizeof cfg.run_dir, "%s/run", tmp);
    char path[700];
    assert_int_equal(mkdir(cfg.run_dir, 0755), 0);
    snprintf(path, sizeof path, "%s/checkpoint", cfg.run_dir);
    assert_int_equal(mkdir(path, 0755), 0);
    snprintf(path, sizeof path, "%s/checkpoint/trainer.json", cfg.run_dir);
    assert_int_equal(mkfifo(path, 0600), 0);
    train_state st = {0};
    assert_null(checkpoint_load(&cfg, NULL, &st));
    expect_fifo_refused(path);
    alarm(0);
}

/* Checkpoint averaging: a bundle whose tokenizer.model is a FIFO (the bundle's own check
 * refuses it before the byte comparison of the tokenizers, which opens through files.h too). */
static void test_average_tokenizers(void **state)
{
    (void)state;
    char a[300], b[300], out[300], cmd[1200], tok[400];
    snprintf(a, sizeof a, "%s/a", tmp);
    snprintf(b, sizeof b, "%s/b", tmp);
    snprintf(out, sizeof out, "%s/mean", tmp);
    snprintf(cmd, sizeof cmd, "cp -r models/mamba-small %s && cp -r models/mamba-small %s", a, b);
    assert_int_equal(system(cmd), 0);
    snprintf(tok, sizeof tok, "%s/tokenizer.model", b);
    assert_int_equal(unlink(tok), 0);
    assert_int_equal(mkfifo(tok, 0600), 0);
    alarm(60);
    const char *dirs[] = {a, b};
    assert_int_equal(mt_model_average(dirs, 2, out, -1), -1);
    alarm(0);
    expect_fifo_refused(tok);
}

/* A COMET model directory's config.json. */
static void test_comet_config(void **state)
{
    (void)state;
    char dir[300], cmd[800], path[400];
    snprintf(dir, sizeof dir, "%s/comet", tmp);
    snprintf(cmd, sizeof cmd, "cp -rL tests/fixtures/comet/model %s", dir);
    assert_int_equal(system(cmd), 0);
    snprintf(path, sizeof path, "%s/config.json", dir);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(mkfifo(path, 0600), 0);
    alarm(60);
    assert_null(mt_comet_open(dir, mt_backend_cpu()));
    alarm(0);
    expect_fifo_refused(path);
}

static void test_app_readers(void **state)
{
    (void)state;
    alarm(20);
    tui_theme t;
    assert_int_equal(tui_theme_load(&t, fifo), -1);
    expect_fifo_refused(fifo);

    /* a job whose job.json or log.jsonl is a FIFO */
    char cwd[512], path[400];
    assert_non_null(getcwd(cwd, sizeof cwd));
    snprintf(path, sizeof path, "%s/runs/j", tmp);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "mkdir -p %s", path);
    assert_int_equal(system(cmd), 0);
    snprintf(path, sizeof path, "%s/runs/j/job.json", tmp);
    assert_int_equal(mkfifo(path, 0600), 0);
    snprintf(path, sizeof path, "%s/runs/j/log.jsonl", tmp);
    assert_int_equal(mkfifo(path, 0600), 0);
    assert_int_equal(chdir(tmp), 0);
    job_info j;
    int rc = job_load(&j, "j");
    char err[1024];
    snprintf(err, sizeof err, "%s", mt_last_error());
    long offset = 0;
    job_log_record *recs;
    size_t n;
    int rc_log = job_log_read_since("runs/j", &offset, &recs, &n);
    char err_log[1024];
    snprintf(err_log, sizeof err_log, "%s", mt_last_error());
    assert_int_equal(chdir(cwd), 0);
    assert_int_equal(rc, -1);
    if (!strstr(err, "runs/j/job.json: a FIFO (named pipe), not a regular file"))
        fail_msg("%s", err);
    assert_int_equal(rc_log, -1);
    if (!strstr(err_log, "runs/j/log.jsonl: a FIFO (named pipe), not a regular file"))
        fail_msg("%s", err_log);

    /* bench ids are a text read once: a directory is refused by what it is */
    bench_ids ids;
    mt_model_config cfg = {.vocab_size = 100, .pad_id = 0, .eos_id = 1, .sep_id = 2, .bos_id = 3};
    assert_int_equal(bench_ids_read(tmp, &cfg, &ids), -1);
    char want[400];
    snprintf(want, sizeof want, "%s: is a directory, not a file", tmp);
    if (!strstr(mt_last_error(), want)) fail_msg("expected '%s' in: %s", want, mt_last_error());
    alarm(0);
}

static int setup(void **state)
{
    (void)state;
    if (test_make_tmpdir(tmp, sizeof tmp, "fifo_readers") != 0) return -1;
    snprintf(fifo, sizeof fifo, "%s/fifo", tmp);
    return mkfifo(fifo, 0600);
}

static int teardown(void **state)
{
    (void)state;
    return test_remove_tree(tmp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_engine_readers),     cmocka_unit_test(test_training_inputs),
        cmocka_unit_test(test_average_tokenizers), cmocka_unit_test(test_comet_config),
        cmocka_unit_test(test_app_readers),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
