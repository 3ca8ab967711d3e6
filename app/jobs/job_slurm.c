/* The Slurm launcher: runs/NAME/job.sbatch runs the trainer; it is submitted held (sbatch
 * --hold), recorded in job.json, then released, so the trainer's own writes always come after
 * the launcher's. State comes from squeue while Slurm holds the job, then from sacct. A job of
 * N ranks runs `srun --mpi=pmix mtlab train ...`: Slurm starts the ranks and hands them MPI's
 * wiring (PMIx); one that dies ends the step (--kill-on-bad-exit) and srun names its task
 * and node in train.log. */
#include "jobs/job_internal.h"
#include "mtlab/error.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Read fd to its end into buf (size n, the rest dropped), NUL-terminated and trimmed. */
static void read_all(int fd, char *buf, size_t n)
{
    size_t len = 0;
    char drop[512];
    for (;;) {
        char *to = len < n - 1 ? buf + len : drop;
        size_t room = len < n - 1 ? n - 1 - len : sizeof drop;
        ssize_t r = read(fd, to, room);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        if (to == buf + len) len += (size_t)r;
    }
    buf[len] = '\0';
    while (len && (buf[len - 1] == '\n' || buf[len - 1] == ' ')) buf[--len] = '\0';
}

/* Run argv (no shell), its stdout into out (size n, trimmed) and, when err is given, its
 * stderr into err (size en): what the command said when it failed. Its exit status, or -1. */
static int run_capture_err(char *const argv[], char *out, size_t n, char *err, size_t en)
{
    int fds[2], efds[2] = {-1, -1};
    if (pipe2(fds, O_CLOEXEC) != 0) return -1;
    if (err && pipe2(efds, O_CLOEXEC) != 0) {
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        if (err) close(efds[0]), close(efds[1]);
        return -1;
    }
    if (pid == 0) {
        dup2(fds[1], 1);
        if (err) dup2(efds[1], 2);
        execvp(argv[0], argv);
        _exit(127);
    }
    close(fds[1]);
    if (err) close(efds[1]);
    /* stdout first, then stderr: what these commands write to stderr is a few lines, far
     * below a pipe's buffer, so the child never blocks on it meanwhile */
    read_all(fds[0], out, n);
    close(fds[0]);
    if (err) {
        read_all(efds[0], err, en);
        close(efds[0]);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int run_capture(char *const argv[], char *out, size_t n)
{
    return run_capture_err(argv, out, n, NULL, 0);
}

/* A single-quoted shell word (the script is read by /bin/sh). */
static void shell_quote(FILE *f, const char *s)
{
    fputc('\'', f);
    for (; *s; s++) {
        if (*s == '\'') fputs("'\\''", f);
        else fputc(*s, f);
    }
    fputc('\'', f);
}

static int write_script(const job_info *j, const char *path, const char *exe, int resume)
{
    FILE *f = fopen(path, "w");
    if (!f) return mt_error("%s: %s", path, strerror(errno));
    fprintf(f, "#!/bin/sh\n# Written by `mtlab jobs`: trains %s.\n", j->name);
    fprintf(f, "#SBATCH --job-name=mtlab-%s\n", j->name);
    if (j->nodes) fprintf(f, "#SBATCH --nodes=%d\n", j->nodes);
    if (j->gpus_per_node)
        fprintf(f, "#SBATCH --ntasks-per-node=%d\n#SBATCH --gpus-per-node=%d\n", j->gpus_per_node,
                j->gpus_per_node);
    else fprintf(f, "#SBATCH --ntasks=%d\n", j->ranks > 1 ? j->ranks : 1);
    /* a data-parallel job saves a checkpoint and stops 5 minutes before its time limit */
    if (j->ranks > 1) fprintf(f, "#SBATCH --signal=USR1@300\n");
    fprintf(f, "#SBATCH --open-mode=append\n");
    fprintf(f, "#SBATCH --chdir=%s\n#SBATCH --output=%s/%s/train.log\n", j->cwd, j->cwd, j->dir);
    /* one rank per task; the PMIx plugin wires them into one MPI world */
    if (j->ranks > 1) fputs("exec srun --mpi=pmix --kill-on-bad-exit=1 ", f);
    else fputs("exec ", f);
    shell_quote(f, exe);
    fprintf(f, " train %s/config.lua --job%s\n", j->dir, resume ? " --resume" : "");
    int bad = ferror(f) != 0;
    if (fclose(f) != 0 || bad) return mt_error("%s: write failed", path);
    return 0;
}

int job_slurm_launch(job_info *j, int resume)
{
    char exe[PATH_MAX], script[800], out[256];
    if (job_self_exe(exe, sizeof exe) != 0) return -1;
    if (strchr(j->cwd, '\n') || strchr(j->cwd, ' '))
        return mt_error("%s: Slurm output paths cannot hold spaces or newlines", j->cwd);
    snprintf(script, sizeof script, "%s/%s/job.sbatch", j->cwd, j->dir);
    if (write_script(j, script, exe, resume) != 0) return -1;
    char *submit[] = {"sbatch", "--parsable", "--hold", script, NULL};
    char said[512];
    int rc = run_capture_err(submit, out, sizeof out, said, sizeof said);
    if (rc == 127 || rc < 0)
        return mt_error("sbatch could not be run: is Slurm installed (slurm-client)?");
    if (rc != 0) {
        for (char *nl; (nl = strchr(said, '\n'));) *nl = ' '; /* one line for the status */
        return mt_error("sbatch failed (exit %d): %s", rc, said[0] ? said : "it said nothing");
    }
    char *semi = strchr(out, ';'); /* "ID;cluster" on federated setups */
    if (semi) *semi = '\0';
    if (!out[0] || strspn(out, "0123456789") != strlen(out))
        return mt_error("sbatch answered \"%s\", not a job id", out);
    j->launcher = JOB_SLURM;
    snprintf(j->slurm_id, sizeof j->slurm_id, "%s", out);
    j->state = JOB_PENDING;
    j->pid = 0;
    j->pid_start = 0;
    j->host[0] = '\0';
    char *cancel[] = {"scancel", j->slurm_id, NULL};
    if (job_file_write(j) != 0) {
        run_capture(cancel, out, sizeof out);
        return -1;
    }
    char *release[] = {"scontrol", "release", j->slurm_id, NULL};
    if (run_capture(release, out, sizeof out) != 0) {
        run_capture(cancel, out, sizeof out);
        return mt_error("scontrol release %s failed: the job was cancelled", j->slurm_id);
    }
    return 0;
}

/* The state squeue gives the job: 1 when it lists it (*state set), 0 when it does not, -1 when
 * squeue cannot reach the controller (then nothing is known). */
static int squeue_state(const job_info *j, job_state *state)
{
    char out[16384];
    char *squeue[] = {"squeue", "-h", "-t", "all", "-o", "%i %T", NULL};
    int rc = run_capture(squeue, out, sizeof out);
    if (rc != 0) return -1;
    size_t idlen = strlen(j->slurm_id);
    for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
        if (strncmp(line, j->slurm_id, idlen) != 0 || line[idlen] != ' ') continue;
        const char *st = line + idlen + 1;
        if (!strcmp(st, "PENDING")) *state = JOB_PENDING;
        else if (!strcmp(st, "RUNNING") || !strcmp(st, "COMPLETING") ||
                 !strcmp(st, "CONFIGURING") || !strcmp(st, "SUSPENDED"))
            *state = JOB_RUNNING;
        else if (!strcmp(st, "COMPLETED")) *state = JOB_COMPLETED;
        else if (!strcmp(st, "CANCELLED")) *state = JOB_CANCELLED;
        else *state = JOB_FAILED;
        return 1;
    }
    return 0;
}

int job_slurm_query(const job_info *j, int *active, job_state *state)
{
    job_state st;
    int listed = squeue_state(j, &st);
    if (listed < 0) return -1;
    if (listed) {
        *active = st == JOB_PENDING || st == JOB_RUNNING;
        if (st != JOB_COMPLETED) *state = st; /* completed: the trainer's record says how */
        return 0;
    }
    /* forgotten by the controller (MinJobAge): the accounting database, where there is one */
    *active = 0;
    char out[256];
    char *sacct[] = {"sacct", "-n", "-X", "-P", "-j", (char *)j->slurm_id, "-o", "State", NULL};
    if (run_capture(sacct, out, sizeof out) == 0 && out[0]) {
        if (!strncmp(out, "CANCELLED", 9)) *state = JOB_CANCELLED;
        else if (strncmp(out, "COMPLETED", 9) != 0) *state = JOB_FAILED;
    }
    return 0;
}

int job_slurm_stop(job_info *j)
{
    char out[256];
    int active;
    job_state st = j->state;
    if (job_slurm_query(j, &active, &st) != 0)
        return mt_error("%s: squeue could not be run", j->name);
    if (!active) return 0;
    if (st == JOB_PENDING) {
        /* never started, so no trainer will record its end: the launcher does */
        char *cancel[] = {"scancel", j->slurm_id, NULL};
        if (run_capture(cancel, out, sizeof out) != 0)
            return mt_error("scancel %s failed", j->slurm_id);
        j->state = JOB_CANCELLED;
        j->ended_at = job_wall_time();
        return job_file_write(j);
    }
    /* The trainer hears SIGTERM once it recorded "running" (cmd_train.c); Slurm may start the
     * job a moment before that. Then SIGTERM to the batch step too (it is the trainer). */
    if (job_file_read(j, j->dir) != 0) return -1;
    for (int tries = 0; j->state != JOB_RUNNING; tries++) {
        struct timespec pause = {0, 100 * 1000 * 1000};
        nanosleep(&pause, NULL);
        if (job_file_read(j, j->dir) != 0) return -1;
        if (job_slurm_query(j, &active, &st) != 0 || !active) return 0;
        if (tries == 600)
            return mt_error("%s: Slurm runs it but the trainer did not start in 60 s", j->name);
    }
    /* ranks take SIGTERM as their launcher's end of the job (cmd_train.c): they stop on USR1 */
    char *term[] = {"scancel", j->ranks > 1 ? "--signal=USR1" : "--signal=TERM", "--full",
                    j->slurm_id, NULL};
    if (run_capture(term, out, sizeof out) != 0)
        return mt_error("%s %s failed", term[1], j->slurm_id);
    return 0;
}
