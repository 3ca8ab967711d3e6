/* jansson's error text quotes the input near the error, so a JSON file with a newline inside a
 * bad value put that newline into mtlab's one-line message. Every reader of a JSON file says
 * what is wrong on one line, the file and line named (mt_error_oneline). */
#include "test_util.h"
#include "jobs/jobs.h"
#include "mtlab/dataset.h"
#include "mtlab/error.h"
#include "mtlab/tokenizer.h"
#include "mtlab/train.h"
#include "train/train_internal.h"

#include <sys/stat.h>
#include <unistd.h>

/* An invalid escape followed by a newline: jansson quotes both ("invalid escape near '"x\<LF>'").
 */
static const char bad_json[] = "{\"format\": \"x\\\ny\"}\n";

static char tmp[256];

static void assert_one_line(const char *what, const char *want)
{
    const char *e = mt_last_error();
    if (!strstr(e, want)) fail_msg("%s: expected '%s' in: %s", what, want, e);
    if (strchr(e, '\n') || strchr(e, '\r'))
        fail_msg("%s: a control character in the message: %s", what, e);
    assert_non_null(strstr(e, "invalid escape near"));
}

static void test_manifest(void **state)
{
    (void)state;
    char dir[300], path[400];
    snprintf(dir, sizeof dir, "%s/data", tmp);
    mkdir(dir, 0755);
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    test_write_text(path, bad_json);
    mt_dataset d;
    assert_int_equal(mt_dataset_open(&d, dir), -1);
    char want[420];
    snprintf(want, sizeof want, "%s:2: ", path);
    assert_one_line("manifest.json", want);
}

static void test_tokenizer_json(void **state)
{
    (void)state;
    char path[400];
    snprintf(path, sizeof path, "%s/tokenizer.json", tmp);
    test_write_text(path, bad_json);
    assert_null(mt_tokenizer_load(path));
    assert_one_line("tokenizer.json", "tokenizer.json:2:");
}

static void test_trainer_json(void **state)
{
    (void)state;
    mt_train_config cfg;
    mt_train_config_defaults(&cfg);
    snprintf(cfg.run_dir, sizeof cfg.run_dir, "%s/run", tmp);
    char path[700];
    mkdir(cfg.run_dir, 0755);
    snprintf(path, sizeof path, "%s/checkpoint", cfg.run_dir);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/checkpoint/trainer.json", cfg.run_dir);
    test_write_text(path, bad_json);
    train_state st = {0};
    assert_null(checkpoint_load(&cfg, NULL, &st));
    assert_one_line("trainer.json", "trainer.json:2: ");
}

static void test_job_json(void **state)
{
    (void)state;
    char cwd[512], path[400];
    assert_non_null(getcwd(cwd, sizeof cwd));
    snprintf(path, sizeof path, "%s/runs", tmp);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/runs/bad", tmp);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/runs/bad/job.json", tmp);
    test_write_text(path, bad_json);
    assert_int_equal(chdir(tmp), 0);
    job_info j;
    int rc = job_load(&j, "bad");
    assert_int_equal(chdir(cwd), 0);
    assert_int_equal(rc, -1);
    assert_one_line("job.json", "runs/bad/job.json:2: ");
}

static int setup(void **state)
{
    (void)state;
    return test_make_tmpdir(tmp, sizeof tmp, "json_errors");
}

static int teardown(void **state)
{
    (void)state;
    return test_remove_tree(tmp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_manifest),
        cmocka_unit_test(test_tokenizer_json),
        cmocka_unit_test(test_trainer_json),
        cmocka_unit_test(test_job_json),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
