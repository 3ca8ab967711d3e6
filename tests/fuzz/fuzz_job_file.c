/* libFuzzer target for runs/NAME/job.json (app/jobs/job_file.c), the file `jobs list`, `jobs
 * resume` and the workbench's jobs view read: any content gives a job or one error line naming
 * the file; an accepted job is written back (as the trainer does at its start and end) and
 * reads back the same.
 * Build and run: make fuzz (see the Makefile). */
#include "jobs/job_internal.h"
#include "mtlab/error.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"

static char dir[64], path[96];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!dir[0]) {
        fuzz_scratch_dir(dir, sizeof dir, "mtlab-fuzz-job-");
        snprintf(path, sizeof path, "%s/job.json", dir);
    }
    fuzz_write_file(path, data, size);
    job_info j;
    memset(&j, 0xA5, sizeof j); /* whatever the caller's struct held */
    mt_clear_error();
    if (job_file_read(&j, dir) != 0) {
        CHECK(strstr(mt_last_error(), path) == mt_last_error());
        CHECK(strchr(mt_last_error(), '\n') == NULL);
        return 0;
    }
    CHECK(j.state >= JOB_PENDING && j.state < JOB_BROKEN);
    CHECK(j.launcher == JOB_LOCAL || j.launcher == JOB_SLURM);
    CHECK(memchr(j.name, 0, sizeof j.name) && memchr(j.cwd, 0, sizeof j.cwd) &&
          memchr(j.host, 0, sizeof j.host));
    CHECK(memchr(j.slurm_id, 0, sizeof j.slurm_id) && memchr(j.error, 0, sizeof j.error));
    CHECK(strcmp(j.dir, dir) == 0);

    /* what a reader accepted, the writer writes and the reader reads back unchanged */
    if (job_file_write(&j) != 0) {
        fprintf(stderr, "write failed: %s\n", mt_last_error());
        CHECK(0);
    }
    job_info back;
    memset(&back, 0x5A, sizeof back);
    if (job_file_read(&back, dir) != 0) {
        fprintf(stderr, "re-read failed: %s\n", mt_last_error());
        CHECK(0);
    }
    CHECK(back.state == j.state && back.launcher == j.launcher && back.pid == j.pid);
    CHECK(back.pid_start == j.pid_start && back.exit_code == j.exit_code &&
          back.max_steps == j.max_steps);
    CHECK(!strcmp(back.name, j.name) && !strcmp(back.cwd, j.cwd) && !strcmp(back.host, j.host));
    CHECK(!strcmp(back.slurm_id, j.slurm_id) && !strcmp(back.error, j.error));
    CHECK(back.started_at == j.started_at && back.ended_at == j.ended_at);
    return 0;
}
