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
    write_job(dir, "{\"name\": \"x\", \"launcher\": \"local\", \"state\": \"completed\", \"max_steps\": 7}\n");
    assert_int_equal(job_file_read(&j, dir), 0);
    assert_string_equal(j.name, "x");
    assert_int_equal(j.max_steps, 7);
    char path[256];
    snprintf(path, sizeof path, "%s/job.json", dir);
    unlink(path);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_json_is_one_line),
    };
    return cmocka_run_group_tests_name("job_file", tests, NULL, NULL);
}
