/* app/jobs without launching anything: the list with a broken state file, the log read back
 * with each step once, and the resumes refused before a launch (a missing config, a complete
 * run, a run another process trains). Runs under runs/ of a temporary working directory. */
#include "test_util.h"
#include "cli/commands.h"
#include "jobs/jobs.h"
#include "mtlab/error.h"
#include "mtlab/train.h"

#include <sys/stat.h>
#include <unistd.h>

static char tmpdir[64], home[1024];

static void job_file(const char *name, const char *state)
{
    char dir[256], path[300], text[600];
    snprintf(dir, sizeof dir, "runs/%s", name);
    mkdir("runs", 0777);
    mkdir(dir, 0777);
    snprintf(path, sizeof path, "%s/job.json", dir);
    snprintf(
        text, sizeof text,
        "{\"name\": \"%s\", \"launcher\": \"local\", \"state\": \"%s\", \"cwd\": \"%s\", \"pid\": "
        "0,\n"
        " \"host\": \"h\", \"slurm_id\": \"\", \"error\": \"\", \"started_at\": 1.0, \"ended_at\": "
        "2.0,\n"
        " \"exit_code\": 0, \"config\": \"config.lua\", \"max_steps\": 20, \"pid_start\": \"0\"}\n",
        name, state, tmpdir);
    test_write_text(path, text);
}

static void config_file(const char *name, long max_steps)
{
    char path[300], text[300];
    snprintf(path, sizeof path, "runs/%s/config.lua", name);
    snprintf(text, sizeof text,
             "return { name = '%s', model = { preset = 'mamba-small' }, max_steps = %ld }\n", name,
             max_steps);
    test_write_text(path, text);
}

static void checkpoint_at(const char *name, const char *leaf, long step)
{
    char path[300], text[200];
    snprintf(path, sizeof path, "runs/%s/%s", name, leaf);
    mkdir(path, 0777);
    snprintf(path, sizeof path, "runs/%s/%s/trainer.json", name, leaf);
    snprintf(text, sizeof text, "{\"step\": %ld, \"epoch\": 0, \"batch\": 0}\n", step);
    test_write_text(path, text);
}

static void expect_error(const char *needle)
{
    if (!strstr(mt_last_error(), needle)) fail_msg("expected '%s' in: %s", needle, mt_last_error());
}

/* One job.json that does not parse: the others are listed, it is marked broken with the reason. */
static void test_list_marks_a_broken_job(void **state)
{
    (void)state;
    job_file("alpha", "completed");
    job_file("beta", "completed");
    test_write_text("runs/beta/job.json", "{\"name\": \"beta\", \"state\": ");
    job_file("gamma", "cancelled");
    job_info *jobs;
    size_t n;
    if (job_list(&jobs, &n) != 0) fail_msg("%s", mt_last_error());
    assert_int_equal(n, 3);
    assert_string_equal(jobs[0].name, "alpha");
    assert_string_equal(job_state_name(jobs[0].state), "completed");
    assert_string_equal(jobs[1].name, "beta");
    assert_string_equal(job_state_name(jobs[1].state), "broken");
    assert_non_null(strstr(jobs[1].error, "runs/beta/job.json:1:"));
    assert_string_equal(jobs[2].name, "gamma");
    assert_string_equal(job_state_name(jobs[2].state), "cancelled");
    free(jobs);
    /* a file cannot claim to be broken: that is a reader's word */
    job_file("delta", "broken");
    assert_int_equal(job_list(&jobs, &n), 0);
    assert_int_equal(n, 4);
    assert_string_equal(jobs[2].name, "delta");
    assert_int_equal(jobs[2].state, JOB_BROKEN);
    assert_non_null(strstr(jobs[2].error, "runs/delta/job.json: not a job state file"));
    free(jobs);
    test_remove_tree("runs");
}

/* A log that repeats the steps after a checkpoint (written before resumes cut it back): each
 * step once, its last record, in step order. */
static void test_log_takes_the_last_record_per_step(void **state)
{
    (void)state;
    job_file("logged", "failed");
    test_write_text("runs/logged/log.jsonl",
                    "{\"event\":\"train\",\"step\":2,\"loss\":5.0}\n"
                    "{\"event\":\"train\",\"step\":4,\"loss\":4.0}\n"
                    "{\"event\":\"valid\",\"step\":4,\"valid_loss\":4.5,\"valid_bleu\":1.0}\n"
                    "{\"event\":\"train\",\"step\":6,\"loss\":3.0}\n"
                    "{\"event\":\"train\",\"step\":4,\"loss\":4.25}\n"
                    "{\"event\":\"valid\",\"step\":4,\"valid_loss\":4.75,\"valid_bleu\":2.0}\n"
                    "{\"event\":\"train\",\"step\":6,\"loss\":3.25}\n"
                    "{\"event\":\"train\",\"step\":8,\"loss\":2.0}\n");
    long offset = 0;
    job_log_record *r;
    size_t n;
    assert_int_equal(job_log_read_since("runs/logged", &offset, &r, &n), 0);
    assert_int_equal(n, 5);
    static const struct {
        long step;
        int valid;
        double value;
    } want[] = {{2, 0, 5.0}, {4, 0, 4.25}, {4, 1, 4.75}, {6, 0, 3.25}, {8, 0, 2.0}};
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(r[i].step, want[i].step);
        assert_int_equal(r[i].is_valid, want[i].valid);
        assert_float_equal(r[i].is_valid ? r[i].valid_loss : r[i].loss, want[i].value, 0);
    }
    free(r);
    job_info j;
    assert_int_equal(job_load(&j, "logged"), 0);
    assert_int_equal(j.step, 8);
    assert_float_equal(j.valid_bleu, 2.0, 0);
    test_remove_tree("runs");
}

/* Resumes that no trainer could take, refused before anything is launched. */
static void test_resume_refusals(void **state)
{
    (void)state;
    job_info j;
    /* no config.lua */
    job_file("noconfig", "cancelled");
    checkpoint_at("noconfig", "checkpoint", 5);
    assert_int_equal(job_load(&j, "noconfig"), 0);
    assert_int_equal(job_resume(&j), -1);
    expect_error("runs/noconfig/config.lua: No such file or directory");
    /* complete: its checkpoint reached max_steps (checkpoint/ or, after a crash at the swap,
     * checkpoint.old/) */
    job_file("done", "completed");
    config_file("done", 20);
    checkpoint_at("done", "checkpoint", 20);
    assert_int_equal(job_load(&j, "done"), 0);
    assert_int_equal(job_resume(&j), -1);
    expect_error(
        "done is complete: its checkpoint is at step 20 of max_steps 20, nothing to resume");
    job_file("done-old", "failed");
    config_file("done-old", 20);
    checkpoint_at("done-old", "checkpoint.old", 20);
    assert_int_equal(job_load(&j, "done-old"), 0);
    assert_int_equal(job_resume(&j), -1);
    expect_error("done-old is complete");
    /* another process trains the run (a plain `mtlab train` of its config) */
    job_file("busy", "cancelled");
    config_file("busy", 20);
    checkpoint_at("busy", "checkpoint", 5);
    int fd = mt_run_lock("runs/busy", MT_RUN_TRAINER);
    assert_true(fd >= 0);
    assert_int_equal(job_load(&j, "busy"), 0);
    assert_int_equal(job_resume(&j), -1);
    char want[128];
    snprintf(want, sizeof want, "run runs/busy is already being trained by pid %ld",
             (long)getpid());
    expect_error(want);
    mt_run_unlock(fd);
    test_remove_tree("runs");
}

/* Ranks for a resume are checked against the job's launcher before anything is launched, and
 * a refused resume leaves the job's ranks as they were. */
static void test_resume_ranks_checked_for_the_launcher(void **state)
{
    (void)state;
    job_info j;
    job_file("ranked", "cancelled");
    config_file("ranked", 20);
    checkpoint_at("ranked", "checkpoint", 5);
    assert_int_equal(job_load(&j, "ranked"), 0);
    assert_int_equal(j.ranks, 1);
    job_resume_opts tasks = {.tasks = 2};
    assert_int_equal(job_resume_with(&j, &tasks), -1);
    expect_error("ranked (a local job): --nodes, --gpus-per-node and --tasks are for --launcher "
                 "slurm (local: --procs N)");
    /* the command takes the rank options after the name, and max_steps=N with them */
    test_captured c = test_run_command(
        &cmd_jobs, (const char *[]){"resume", "ranked", "--tasks", "2", "max_steps=30", NULL});
    assert_int_equal(c.rc, 1);
    assert_non_null(strstr(c.err, "jobs resume: ranked (a local job): --nodes, --gpus-per-node"));
    test_captured_free(&c);
    c = test_run_command(&cmd_jobs, (const char *[]){"resume", "ranked", "--procs", "0", NULL});
    assert_int_equal(c.rc, 2);
    assert_non_null(strstr(c.err, "--procs"));
    test_captured_free(&c);
    /* a good number of ranks, but the run cannot resume: refused as before, ranks unchanged */
    checkpoint_at("ranked", "checkpoint", 20);
    job_resume_opts procs = {.procs = 2};
    assert_int_equal(job_resume_with(&j, &procs), -1);
    expect_error("ranked is complete");
    assert_int_equal(j.ranks, 1);
    test_remove_tree("runs");
}

/* A run that stopped or died: the step shown is its checkpoint's, where a resume continues,
 * not the last step it logged; a running one shows the step it logged. */
static void test_step_shown_is_the_checkpoints(void **state)
{
    (void)state;
    job_file("died", "failed");
    config_file("died", 20);
    checkpoint_at("died", "checkpoint", 5);
    test_write_text("runs/died/log.jsonl", "{\"event\":\"train\",\"step\":7,\"loss\":5.0}\n");
    job_info j;
    assert_int_equal(job_load(&j, "died"), 0);
    assert_int_equal(j.step, 7);
    assert_int_equal(j.checkpoint, 5);
    assert_int_equal(job_shown_step(&j), 5);
    job_file("fresh", "failed");
    test_write_text("runs/fresh/log.jsonl", "{\"event\":\"train\",\"step\":3,\"loss\":5.0}\n");
    assert_int_equal(job_load(&j, "fresh"), 0);
    assert_int_equal(j.checkpoint, -1);
    assert_int_equal(job_shown_step(&j), 0); /* no checkpoint: a resume starts from scratch */
    j.state = JOB_RUNNING;
    assert_int_equal(job_shown_step(&j), 3);
    test_remove_tree("runs");
}

/* A data-parallel job whose processes are gone: its error names the rank that died and its host
 * from the launcher's report in train.log, not a rank the launcher ended after it, nor the
 * launcher's frames of dashes. */
static void test_dead_rank_named(void **state)
{
    static const char *const logs[][2] = {
        {"mtlab train: ranks 2 (mpi): each batch of max_tokens 600 x 2 is cut into 2 shards\n"
         "step 2/20  loss 5.5\n"
         "mtlab: train dp: rank 0 on h: terminated (SIGTERM): the launcher ends the job\n"
         "--------------------------------------------------------------------------\n"
         "mpirun noticed that process rank 1 with PID 0 on node h exited on signal 9 (Killed).\n"
         "--------------------------------------------------------------------------\n",
         "mpirun noticed that process rank 1 with PID 0 on node h exited on signal 9 (Killed)."},
        {"mtlab train: ranks 2 (mpi): each batch of max_tokens 600 x 2 is cut into 2 shards\n"
         "srun: error: h: task 1: Killed\n"
         "mtlab: train dp: rank 0 on h: terminated (SIGTERM): the launcher ends the job\n"
         "srun: error: h: task 0: Exited with exit code 143\n",
         "srun: error: h: task 1: Killed"},
        /* a resumed run: the failure of the run before the resume is not this one's */
        {"srun: error: h: task 1: Killed\n"
         "mtlab train: ranks 2 (mpi): each batch of max_tokens 600 x 2 is cut into 2 shards\n"
         "mtlab: train dp: rank 1 on h2: MPI: MPI_Alltoallv (gradient slices) failed: x\n",
         "rank 1 on h2: MPI: MPI_Alltoallv"},
    };
    for (size_t i = 0; i < sizeof logs / sizeof logs[0]; i++) {
        job_file("dp", "running");
        test_write_text("runs/dp/job.json",
                        "{\"name\": \"dp\", \"launcher\": \"local\", \"state\": \"running\", "
                        "\"pid\": 0, \"pid_start\": \"0\", \"ranks\": 2, \"max_steps\": 20}\n");
        test_write_text("runs/dp/train.log", logs[i][0]);
        job_info j;
        assert_int_equal(job_load(&j, "dp"), 0);
        assert_int_equal(j.state, JOB_FAILED);
        assert_int_equal(j.ranks, 2);
        if (!strstr(j.error, logs[i][1]))
            fail_msg("log %zu: expected '%s' in: %s", i, logs[i][1], j.error);
        assert_null(strstr(j.error, "-----"));
        test_remove_tree("runs");
    }
}

/* Ranks asked of the wrong launcher, or twice: refused naming the options, nothing starts. */
static void test_ranks_options_refused(void **state)
{
    const struct {
        job_start_opts o;
        const char *error;
    } cases[] = {
        {{.launcher = JOB_LOCAL, .nodes = 2},
         "--nodes, --gpus-per-node and --tasks are for --launcher slurm"},
        {{.launcher = JOB_LOCAL, .tasks = 2}, "are for --launcher slurm (local: --procs N)"},
        {{.launcher = JOB_SLURM, .procs = 2}, "--procs is for --launcher local"},
        {{.launcher = JOB_SLURM, .tasks = 4, .gpus_per_node = 2},
         "--tasks and --gpus-per-node both say"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        job_info j;
        assert_int_equal(job_start(&j, "no-such-config.lua", &cases[i].o), -1);
        expect_error(cases[i].error);
        assert_int_equal(access("runs", F_OK), -1);
    }
}

static int setup(void **state)
{
    (void)state;
    if (!getcwd(home, sizeof home) || test_make_tmpdir(tmpdir, sizeof tmpdir, "jobs") != 0)
        return -1;
    return chdir(tmpdir);
}

static int teardown(void **state)
{
    (void)state;
    if (chdir(home) != 0) return -1;
    return test_remove_tree(tmpdir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_list_marks_a_broken_job),
        cmocka_unit_test(test_log_takes_the_last_record_per_step),
        cmocka_unit_test(test_resume_refusals),
        cmocka_unit_test(test_resume_ranks_checked_for_the_launcher),
        cmocka_unit_test(test_step_shown_is_the_checkpoints),
        cmocka_unit_test(test_dead_rank_named),
        cmocka_unit_test(test_ranks_options_refused),
    };
    return cmocka_run_group_tests_name("jobs", tests, setup, teardown);
}
