/* What a run directory promises whatever happens to its trainer: one trainer at a time (its
 * lock, released by a SIGKILL), a log of whole lines that stops the run when it cannot be
 * written, a resume that logs each step once, and a checkpoint that loads from every state a
 * crash inside its save can leave. */
#include "test_util.h"
#include "mtlab/error.h"
#include "mtlab/train.h"
#include "train/train_internal.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char tmpdir[64];

/* A tiny Mamba run on the tokenizer fixture corpus, one record per step. */
static void tiny_config(mt_train_config *cfg, const char *run, long max_steps)
{
    test_tiny_train_config(cfg, "mamba-small", tmpdir, run, max_steps);
    cfg->model.d_state = 4;
    cfg->seed = 5;
}

static void run_ok(const mt_train_config *cfg, int resume)
{
    if (mt_train_run(cfg, resume, NULL) != 0) fail_msg("%s: %s", cfg->name, mt_last_error());
}

static char *read_log(const mt_train_config *cfg)
{
    char path[700];
    snprintf(path, sizeof path, "%s/log.jsonl", cfg->run_dir);
    char *log = test_read_file(path, NULL);
    if (!log) fail_msg("%s: cannot read", path);
    return log;
}

/* The "loss" fields of the log, concatenated (the records but for their timings). */
static char *losses_of(const mt_train_config *cfg)
{
    char *log = read_log(cfg);
    char *out = calloc(1, strlen(log) + 1);
    for (char *p = strstr(log, "\"loss\":"); p; p = strstr(p + 1, "\"loss\":")) {
        char *end = strchr(p, ',');
        strncat(out, p, (size_t)(end - p) + 1);
    }
    free(log);
    return out;
}

/* The steps of the log's train records, "1 2 3 ", and 1 when every line is a whole record. */
static int log_steps(const mt_train_config *cfg, char *out, size_t n)
{
    char *log = read_log(cfg);
    out[0] = '\0';
    int whole = 1;
    for (char *line = log; *line;) {
        char *nl = strchr(line, '\n');
        if (!nl || line[0] != '{' || nl[-1] != '}') whole = 0;
        char *s = strstr(line, "\"step\":");
        if (s && (!nl || s < nl)) {
            size_t len = strlen(out);
            snprintf(out + len, n - len, "%ld ", strtol(s + 7, NULL, 10));
        }
        if (!nl) break;
        line = nl + 1;
    }
    free(log);
    return whole;
}

/* A second trainer on a run directory is refused, naming the pid that trains it; the lock of a
 * SIGKILLed trainer is gone with it. */
static void test_one_trainer_per_run_dir(void **state)
{
    (void)state;
    mt_train_config cfg;
    tiny_config(&cfg, "locked", 2);
    int fd = mt_run_lock(cfg.run_dir, MT_RUN_TRAINER);
    assert_true(fd >= 0);
    char want[160];
    snprintf(want, sizeof want, "run %s is already being trained by pid %ld", cfg.run_dir,
             (long)getpid());
    assert_int_equal(mt_train_run(&cfg, 0, NULL), -1);
    if (!strstr(mt_last_error(), want)) fail_msg("expected '%s' in: %s", want, mt_last_error());
    char ckpt[700];
    snprintf(ckpt, sizeof ckpt, "%s/checkpoint", cfg.run_dir);
    assert_int_not_equal(access(ckpt, F_OK), 0); /* it trained nothing */
    assert_int_equal(mt_run_lock(cfg.run_dir, MT_RUN_LAUNCHER), -1);
    mt_run_unlock(fd);
    run_ok(&cfg, 0);

    /* a child holds the lock, then dies by SIGKILL */
    int ready[2];
    assert_int_equal(pipe(ready), 0);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        int held = mt_run_lock(cfg.run_dir, MT_RUN_TRAINER);
        char c = held >= 0 ? 'y' : 'n';
        if (write(ready[1], &c, 1) != 1) _exit(1);
        for (;;) pause();
    }
    char c = 0;
    assert_int_equal(read(ready[0], &c, 1), 1);
    assert_int_equal(c, 'y');
    snprintf(want, sizeof want, "already being trained by pid %ld", (long)child);
    cfg.max_steps = 3;
    assert_int_equal(mt_train_run(&cfg, 1, NULL), -1);
    if (!strstr(mt_last_error(), want)) fail_msg("expected '%s' in: %s", want, mt_last_error());
    kill(child, SIGKILL);
    int status;
    assert_int_equal(waitpid(child, &status, 0), child);
    close(ready[0]);
    close(ready[1]);
    run_ok(&cfg, 1); /* no stale lock */
}

/* A log that cannot be written stops the run with the system's reason: a full device, and a
 * file size limit reached in the middle of a line (the part written is cut off). */
static void test_log_write_failure_stops_the_run(void **state)
{
    (void)state;
    mt_train_config cfg;
    tiny_config(&cfg, "log-full", 3);
    char path[700];
    snprintf(path, sizeof path, "%s/log.jsonl", cfg.run_dir);
    assert_int_equal(mkdir(cfg.run_dir, 0777), 0);
    assert_int_equal(symlink("/dev/full", path), 0);
    assert_int_equal(mt_train_run(&cfg, 0, NULL), -1);
    if (!strstr(mt_last_error(), "log.jsonl: cannot write: No space left on device"))
        fail_msg("got: %s", mt_last_error());

    /* a file size limit, SIGXFSZ ignored as `mtlab train` does: the write says EFBIG (in this
     * process: a forked one would find OpenMP's threads gone) */
    tiny_config(&cfg, "log-limit", 200);
    struct rlimit was;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &was), 0);
    void (*was_handler)(int) = signal(SIGXFSZ, SIG_IGN);
    struct rlimit lim = {.rlim_cur = 4000, .rlim_max = was.rlim_max};
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
    int rc = mt_train_run(&cfg, 0, NULL);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &was), 0);
    signal(SIGXFSZ, was_handler);
    assert_int_equal(rc, -1);
    if (!strstr(mt_last_error(), "log.jsonl: cannot write: File too large"))
        fail_msg("got: %s", mt_last_error());
    char steps[4096];
    assert_true(log_steps(&cfg, steps, sizeof steps)); /* whole lines only */
    struct stat st;
    snprintf(path, sizeof path, "%s/log.jsonl", cfg.run_dir);
    assert_int_equal(stat(path, &st), 0);
    assert_true(st.st_size > 1000 && st.st_size <= 4000);
}

/* The directory as a kill -9 leaves it after step `to` with the last checkpoint at `at`: train
 * to `to` from a checkpoint at `at`, then put the step-`at` checkpoint back. */
static void killed_after(mt_train_config *cfg, long at, long to)
{
    char cur[700], kept[720], cmd[1600];
    cfg->max_steps = at;
    run_ok(cfg, 0);
    snprintf(cur, sizeof cur, "%s/checkpoint", cfg->run_dir);
    snprintf(kept, sizeof kept, "%s.at-%ld", cur, at);
    snprintf(cmd, sizeof cmd, "cp -a '%s' '%s'", cur, kept);
    assert_int_equal(system(cmd), 0);
    cfg->max_steps = to;
    run_ok(cfg, 1);
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mv '%s' '%s'", cur, kept, cur);
    assert_int_equal(system(cmd), 0);
}

/* A resume cuts the log back to its checkpoint's step: each step is logged once, in order, and
 * the losses are an uninterrupted run's. */
static void test_resume_logs_each_step_once(void **state)
{
    (void)state;
    mt_train_config straight, cfg;
    tiny_config(&straight, "log-straight", 5);
    run_ok(&straight, 0);
    tiny_config(&cfg, "log-killed", 5);
    killed_after(&cfg, 2, 4);
    cfg.max_steps = 5;
    run_ok(&cfg, 1);
    char a[256], b[256];
    assert_true(log_steps(&cfg, b, sizeof b));
    assert_string_equal(b, "1 2 3 4 5 ");
    assert_true(log_steps(&straight, a, sizeof a));
    assert_string_equal(a, b);
    char *la = losses_of(&straight), *lb = losses_of(&cfg);
    assert_string_equal(la, lb);
    free(la);
    free(lb);
}

/* The checkpoint's step as a resume loads it. */
static long loaded_step(const mt_train_config *cfg)
{
    train_state st = {0};
    mt_model *m = checkpoint_load(cfg, mt_backend_cpu(), &st);
    if (!m) fail_msg("%s: %s", cfg->name, mt_last_error());
    mt_model_free(m);
    return st.step;
}

static int is_dir(const mt_train_config *cfg, const char *leaf)
{
    char path[720];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", cfg->run_dir, leaf);
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* A save of step 4 over the checkpoint of step 2, stopped after each stage of its swap: the
 * directories are those the stage names, a resume loads the complete checkpoint they hold (2
 * until the new one has its name, 4 after), and training on matches a run never stopped. */
static void test_checkpoint_swap_stages(void **state)
{
    (void)state;
    mt_train_config straight;
    tiny_config(&straight, "swap-straight", 5);
    run_ok(&straight, 0);
    char want[256];
    assert_true(log_steps(&straight, want, sizeof want));
    static const struct {
        checkpoint_stage stage;
        const char *name;
        int cur, old, new_; /* which of checkpoint/, .old/, .new/ the stage leaves */
        long loads;
    } stages[] = {
        {CHECKPOINT_NEW_WRITTEN, "swap-new-written", 1, 0, 1, 2},
        {CHECKPOINT_OLD_RENAMED, "swap-old-renamed", 0, 1, 1, 2},
        {CHECKPOINT_NEW_RENAMED, "swap-new-renamed", 1, 1, 0, 4},
    };
    for (size_t i = 0; i < sizeof stages / sizeof stages[0]; i++) {
        mt_train_config cfg;
        tiny_config(&cfg, stages[i].name, 2);
        run_ok(&cfg, 0);
        cfg.max_steps = 4;
        checkpoint_stop_step = 4;
        checkpoint_stop_stage = stages[i].stage;
        int rc = mt_train_run(&cfg, 1, NULL);
        checkpoint_stop_stage = 0;
        assert_int_equal(rc, -1);
        assert_non_null(strstr(mt_last_error(), "checkpoint_stop_stage"));
        print_message("%s: checkpoint/ %d, .old/ %d, .new/ %d\n", stages[i].name,
                      is_dir(&cfg, "checkpoint"), is_dir(&cfg, "checkpoint.old"),
                      is_dir(&cfg, "checkpoint.new"));
        assert_int_equal(is_dir(&cfg, "checkpoint"), stages[i].cur);
        assert_int_equal(is_dir(&cfg, "checkpoint.old"), stages[i].old);
        assert_int_equal(is_dir(&cfg, "checkpoint.new"), stages[i].new_);
        assert_int_equal(loaded_step(&cfg), stages[i].loads);
        /* a fresh start is refused while any complete checkpoint is there */
        assert_int_equal(mt_train_run(&cfg, 0, NULL), -1);
        assert_non_null(strstr(mt_last_error(), "already holds a checkpoint"));
        cfg.max_steps = 5;
        run_ok(&cfg, 1);
        char got[256];
        assert_true(log_steps(&cfg, got, sizeof got));
        assert_string_equal(got, want);
        assert_int_equal(is_dir(&cfg, "checkpoint.old") || is_dir(&cfg, "checkpoint.new"), 0);
        char pa[720], pb[720];
        snprintf(pa, sizeof pa, "%s/checkpoint/model.safetensors", straight.run_dir);
        snprintf(pb, sizeof pb, "%s/checkpoint/model.safetensors", cfg.run_dir);
        size_t na, nb;
        char *wa = test_read_file(pa, &na), *wb = test_read_file(pb, &nb);
        assert_non_null(wa);
        assert_non_null(wb);
        assert_int_equal(na, nb);
        assert_memory_equal(wa, wb, na);
        free(wa);
        free(wb);
    }
}

static int setup(void **state)
{
    (void)state;
    return test_tokenizer_tmpdir(tmpdir, sizeof tmpdir, "run-dir");
}

static int teardown(void **state)
{
    (void)state;
    return test_remove_tree(tmpdir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_trainer_per_run_dir),
        cmocka_unit_test(test_log_write_failure_stops_the_run),
        cmocka_unit_test(test_resume_logs_each_step_once),
        cmocka_unit_test(test_checkpoint_swap_stages),
    };
    return cmocka_run_group_tests_name("train_run_dir", tests, setup, teardown);
}
