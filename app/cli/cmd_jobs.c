/* `mtlab jobs start|list|stop|resume|log`: training runs launched in the background, locally or
 * through Slurm, found again from their state files (app/jobs/jobs.h). */
#include "cli/commands.h"
#include "jobs/jobs.h"
#include "mtlab/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void print_record(const job_log_record *r, long max_steps)
{
    if (r->is_valid) {
        printf("valid  step %ld  loss %.4f", r->step, r->valid_loss);
        if (r->valid_bleu >= 0) printf("  BLEU %.2f", r->valid_bleu);
        putchar('\n');
    } else {
        printf("step %ld/%ld  epoch %d  loss %.4f  lr %.2e  %.0f tok/s  (%.0f s)\n", r->step,
               max_steps, r->epoch, r->loss, r->lr, r->tokens_per_s, r->elapsed_s);
    }
}

/* argv[i] is --procs, --nodes, --tasks or --gpus-per-node with a value: its slot of ranks[4]
 * (procs, nodes, gpus_per_node, tasks) set. 1: taken (i moved past the value), 0: not such an
 * option, -1: a bad value (said). */
static int rank_option(const char *cmd, int argc, char **argv, int *i, int ranks[4])
{
    static const char *const names[4] = {"--procs", "--nodes", "--gpus-per-node", "--tasks"};
    for (int k = 0; k < 4; k++) {
        if (strcmp(argv[*i], names[k]) != 0 || *i + 1 >= argc) continue;
        long v;
        if (cli_option_long(cmd, argv[*i], argv[*i + 1], 1, 65536, &v)) return -1;
        ranks[k] = (int)v;
        *i += 1;
        return 1;
    }
    return 0;
}

static int start(int argc, char **argv)
{
    job_start_opts o = {.launcher = JOB_LOCAL};
    const char *config = NULL;
    const char **ov = calloc((size_t)argc, sizeof *ov);
    int bad = 0, ranks[4] = {0}, r;
    for (int i = 2; i < argc && !bad; i++) {
        if (!strcmp(argv[i], "--launcher") && i + 1 < argc) {
            if (job_launcher_parse(argv[++i], &o.launcher) != 0) bad = 1;
        } else if (!strcmp(argv[i], "--name") && i + 1 < argc) o.name = argv[++i];
        else if ((r = rank_option("jobs start", argc, argv, &i, ranks)) != 0) {
            if (r < 0) {
                free(ov);
                return 2;
            }
        } else if (argv[i][0] == '-') bad = 2;
        else if (strchr(argv[i], '=')) ov[o.n_overrides++] = argv[i];
        else if (!config) config = argv[i];
        else bad = 2;
    }
    if (bad == 1) {
        free(ov);
        return cli_fail("jobs start: %s", mt_last_error());
    }
    if (bad || !config) {
        free(ov);
        return cli_usage(&cmd_jobs);
    }
    o.overrides = ov;
    o.procs = ranks[0], o.nodes = ranks[1], o.gpus_per_node = ranks[2], o.tasks = ranks[3];
    job_info j;
    int rc = job_start(&j, config, &o);
    free(ov);
    if (rc != 0) return cli_fail("jobs start: %s (nothing was started)", mt_last_error());
    if (j.launcher == JOB_SLURM)
        printf("%s: submitted to Slurm as job %s; log in %s/train.log\n", j.name, j.slurm_id,
               j.dir);
    else printf("%s: started, pid %ld; log in %s/train.log\n", j.name, (long)j.pid, j.dir);
    return 0;
}

static void format_time(double t, char *out, size_t n)
{
    if (t <= 0) {
        snprintf(out, n, "-");
        return;
    }
    time_t s = (time_t)t;
    struct tm tm;
    localtime_r(&s, &tm);
    strftime(out, n, "%Y-%m-%d %H:%M:%S", &tm);
}

/* Every run, a broken one (its job.json unreadable) too: state "broken" and the reason below it.
 * The exit status is 0 all the same: the list is whole, and a script that watches its jobs
 * should not lose them all to one damaged file (it finds the broken ones by their state). */
static int list(void)
{
    job_info *jobs;
    size_t n;
    if (job_list(&jobs, &n) != 0) return cli_fail("jobs list: %s", mt_last_error());
    if (!n) {
        printf("no jobs under runs/ (start one: mtlab jobs start CONFIG.lua)\n");
        return 0;
    }
    printf("%-20s %-9s %-10s %13s %8s %9s %6s  %s\n", "NAME", "WHERE", "STATE", "STEP", "LOSS",
           "TOK/S", "BLEU", "STARTED");
    for (size_t i = 0; i < n; i++) {
        const job_info *j = &jobs[i];
        char steps[40], bleu[16], started[32], where[40];
        snprintf(steps, sizeof steps, "%ld/%ld", job_shown_step(j), j->max_steps);
        if (j->valid_bleu >= 0) snprintf(bleu, sizeof bleu, "%.2f", j->valid_bleu);
        else snprintf(bleu, sizeof bleu, "-");
        format_time(j->started_at, started, sizeof started);
        /* a data-parallel job is one line: where it runs and on how many ranks ("slurm:4") */
        if (j->ranks > 1)
            snprintf(where, sizeof where, "%s:%d", job_launcher_name(j->launcher), j->ranks);
        else snprintf(where, sizeof where, "%s", job_launcher_name(j->launcher));
        printf("%-20s %-9s %-10s %13s %8.4f %9.0f %6s  %s\n", j->name, where,
               job_state_name(j->state), steps, j->loss, j->tokens_per_s, bleu, started);
        if ((j->state == JOB_FAILED || j->state == JOB_BROKEN) && j->error[0])
            printf("  %s\n", j->error);
    }
    free(jobs);
    return 0;
}

static int stop(const char *name)
{
    job_info j;
    if (job_load(&j, name) != 0 || job_stop(&j) != 0)
        return cli_fail("jobs stop: %s", mt_last_error());
    printf("%s: asked to stop; waiting for its checkpoint\n", name);
    fflush(stdout);
    if (job_wait(&j, -1) != 0) return cli_fail("jobs stop: %s", mt_last_error());
    printf("%s: %s at step %ld\n", name, job_state_name(j.state), j.step);
    if (j.state == JOB_FAILED) return cli_fail("jobs stop: %s: %s", name, j.error);
    return 0;
}

/* jobs resume NAME [--procs N | --tasks N | --nodes N [--gpus-per-node G]] [max_steps=N]:
 * N extends the run past its end; the rank options run it on another number of ranks */
static int resume(int argc, char **argv)
{
    job_info j;
    job_resume_opts o = {0};
    int ranks[4] = {0}, r;
    if (argc < 3 || argv[2][0] == '-') return cli_usage(&cmd_jobs);
    const char *name = argv[2], *setting = NULL;
    for (int i = 3; i < argc; i++) {
        if ((r = rank_option("jobs resume", argc, argv, &i, ranks)) != 0) {
            if (r < 0) return 2;
        } else if (argv[i][0] == '-' || setting) return cli_usage(&cmd_jobs);
        else setting = argv[i];
    }
    o.procs = ranks[0], o.nodes = ranks[1], o.gpus_per_node = ranks[2], o.tasks = ranks[3];
    if (setting) {
        char *end;
        if (strncmp(setting, "max_steps=", 10) != 0)
            return cli_fail("jobs resume: %s: only max_steps=N and the ranks (--procs, --tasks, "
                            "--nodes, --gpus-per-node) can change when a run resumes",
                            setting);
        o.max_steps = strtol(setting + 10, &end, 10);
        if (end == setting + 10 || *end || o.max_steps < 1)
            return cli_fail("jobs resume: %s: max_steps must be a whole number >= 1", setting);
    }
    if (job_load(&j, name) != 0 || job_resume_with(&j, &o) != 0)
        return cli_fail("jobs resume: %s", mt_last_error());
    char to[96] = "";
    int n = 0;
    if (o.max_steps) n = snprintf(to, sizeof to, ", to max_steps %ld", o.max_steps);
    if (ranks[0] || ranks[1] || ranks[2] || ranks[3])
        snprintf(to + n, sizeof to - (size_t)n, ", on %d rank%s", j.ranks, j.ranks == 1 ? "" : "s");
    if (j.launcher == JOB_SLURM)
        printf("%s: resubmitted to Slurm as job %s%s\n", name, j.slurm_id, to);
    else printf("%s: resumed, pid %ld%s\n", name, (long)j.pid, to);
    return 0;
}

/* The log's records; with follow, keep printing new ones until the job is neither pending nor
 * running. */
static int show_log(const char *name, int follow)
{
    job_info j;
    if (job_load(&j, name) != 0) return cli_fail("jobs log: %s", mt_last_error());
    long offset = 0;
    for (;;) {
        int active = job_active(&j);
        job_log_record *recs;
        size_t n;
        if (job_log_read_since(j.dir, &offset, &recs, &n) != 0)
            return cli_fail("jobs log: %s", mt_last_error());
        for (size_t i = 0; i < n; i++) print_record(&recs[i], j.max_steps);
        free(recs);
        fflush(stdout);
        if (!follow || !active) break;
        struct timespec pause = {0, 200 * 1000 * 1000};
        nanosleep(&pause, NULL);
        if (job_refresh(&j) != 0) return cli_fail("jobs log: %s", mt_last_error());
    }
    printf("%s: %s%s%s\n", name, job_state_name(j.state), j.error[0] ? ": " : "", j.error);
    return 0;
}

static int run_jobs(int argc, char **argv)
{
    if (argc < 2) return cli_usage(&cmd_jobs);
    const char *sub = argv[1];
    if (!strcmp(sub, "start")) return start(argc, argv);
    if (!strcmp(sub, "list") && argc == 2) return list();
    if (!strcmp(sub, "stop") && argc == 3) return stop(argv[2]);
    if (!strcmp(sub, "resume")) return resume(argc, argv);
    if (!strcmp(sub, "log") && argc == 3) return show_log(argv[2], 0);
    if (!strcmp(sub, "log") && argc == 4 && !strcmp(argv[3], "--follow"))
        return show_log(argv[2], 1);
    return cli_usage(&cmd_jobs);
}

const struct mt_command cmd_jobs = {
    "jobs",
    "start CONFIG.lua [--launcher local|slurm] [--name N] [--procs N | --tasks N | --nodes N "
    "[--gpus-per-node G]] "
    "[KEY=VALUE...] | list | stop NAME | resume NAME [--procs N | --tasks N | --nodes N "
    "[--gpus-per-node G]] [max_steps=N] | "
    "log NAME [--follow]",
    "training runs in the background (locally or on Slurm), one trainer per run: start, list "
    "(exits 0 with a "
    "run whose job.json cannot be read shown as \"broken\"), stop with a checkpoint, resume, log",
    run_jobs,
    .parallel = 0,
};
