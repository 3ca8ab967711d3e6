/* runs/NAME/job.json (app/jobs/job_file.c): a file that is not valid JSON is refused with one
 * line naming it, whatever the bad text quotes; cases found by tests/fuzz/fuzz_job_file.c. */
#include "test_util.h"

#include "jobs/job_internal.h"
#include "mtlab/error.h"

#include <sys/stat.h>
#include <unistd.h>

static void write_job(const char *dir, const char *text)
{
    char path[256];
    snprintf(path, sizeof path, "%s/job.json", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_bad_json_is_one_line(void **state)
{
    (void)state;
    char dir[128];
    snprintf(dir, sizeof dir, "/tmp/mtlab_test_job_file_%d", (int)getpid());
    mkdir(dir, 0700);
    /* jansson's message quotes the text near the error, here a backslash and a newline */
    write_job(dir, "{\"cancell\\\n}u0000");
    job_info j = {0};
    assert_int_equal(job_file_read(&j, dir), -1);
    const char *msg = mt_last_error();
    assert_non_null(strstr(msg, "/job.json:"));
    if (strchr(msg, '\n')) fail_msg("the message spans lines: '%s'", msg);
    /* a good file still reads */
    write_job(
        dir,
        "{\"name\": \"x\", \"launcher\": \"local\", \"state\": \"completed\", \"max_steps\": 7}\n");
    assert_int_equal(job_file_read(&j, dir), 0);
    assert_string_equal(j.name, "x");
    assert_int_equal(j.max_steps, 7);
    char path[256];
    snprintf(path, sizeof path, "%s/job.json", dir);
    unlink(path);
    rmdir(dir);
}

/* A data-parallel job's ranks, nodes and GPUs per node survive the file; a file from before
 * them is one process; a count below 1 is refused naming the file. */
static void test_ranks_round_trip(void **state)
{
    char dir[128];
    snprintf(dir, sizeof dir, "/tmp/mtlab_test_job_ranks_%d", (int)getpid());
    mkdir(dir, 0700);
    job_info j = {
        .launcher = JOB_SLURM, .state = JOB_PENDING, .ranks = 16, .nodes = 2, .gpus_per_node = 8};
    snprintf(j.name, sizeof j.name, "dp");
    snprintf(j.dir, sizeof j.dir, "%s", dir);
    assert_int_equal(job_file_write(&j), 0);
    job_info back = {0};
    assert_int_equal(job_file_read(&back, dir), 0);
    assert_int_equal(back.ranks, 16);
    assert_int_equal(back.nodes, 2);
    assert_int_equal(back.gpus_per_node, 8);
    write_job(dir, "{\"name\": \"x\", \"launcher\": \"local\", \"state\": \"completed\"}\n");
    assert_int_equal(job_file_read(&back, dir), 0);
    assert_int_equal(back.ranks, 1);
    assert_int_equal(back.nodes, 0);
    write_job(
        dir,
        "{\"name\": \"x\", \"launcher\": \"local\", \"state\": \"completed\", \"ranks\": 0}\n");
    assert_int_equal(job_file_read(&back, dir), -1);
    assert_non_null(strstr(mt_last_error(), "/job.json: ranks must be >= 1"));
    char path[256];
    snprintf(path, sizeof path, "%s/job.json", dir);
    unlink(path);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_json_is_one_line),
        cmocka_unit_test(test_ranks_round_trip),
    };
    return cmocka_run_group_tests_name("job_file", tests, NULL, NULL);
}
