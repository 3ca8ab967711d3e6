/* Jobs: start (config checked before anything runs), load, refresh, list, stop, resume, wait. */
#include "jobs/job_internal.h"
#include "common/train_config.h"
#include "mtlab/clock.h"
#include "mtlab/error.h"
#include "mtlab/files.h"
#include "mtlab/train.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define RUNS_DIR "runs"

static int exists(const char *dir, const char *leaf)
{
    char p[800];
    snprintf(p, sizeof p, "%s/%s", dir, leaf);
    return access(p, F_OK) == 0;
}

int job_active(const job_info *j) { return j->state == JOB_PENDING || j->state == JOB_RUNNING; }

/* How many ranks the options ask for; -1 with the option named when they do not fit the launcher.
 */
static int ranks_of(const job_start_opts *o, int *nodes, int *gpus_per_node)
{
    *nodes = *gpus_per_node = 0;
    if (o->procs < 0 || o->nodes < 0 || o->gpus_per_node < 0 || o->tasks < 0)
        return mt_error("--procs, --nodes, --gpus-per-node and --tasks must be >= 1");
    if (o->launcher == JOB_LOCAL) {
        if (o->nodes || o->gpus_per_node || o->tasks)
            return mt_error(
                "--nodes, --gpus-per-node and --tasks are for --launcher slurm (local: --procs N)");
        return o->procs > 1 ? o->procs : 1;
    }
    if (o->procs)
        return mt_error(
            "--procs is for --launcher local (slurm: --tasks N or --nodes N --gpus-per-node G)");
    if (o->tasks && o->gpus_per_node)
        return mt_error("--tasks and --gpus-per-node both say how many ranks: give one (a GPU job "
                        "runs one per GPU)");
    *nodes = o->nodes;
    *gpus_per_node = o->gpus_per_node;
    if (o->tasks) return o->tasks;
    int n = o->nodes ? o->nodes : 1;
    return o->gpus_per_node ? n * o->gpus_per_node : n;
}

/* Remove dir and everything under it (best effort: what cannot go stays). */
static void remove_tree(const char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        for (struct dirent *e; (e = readdir(d));) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            char path[1024];
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            struct stat st;
            if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode)) remove_tree(path);
            else unlink(path);
        }
        closedir(d);
    }
    rmdir(dir);
}

int job_start(job_info *out, const char *config_path, const job_start_opts *o)
{
    int nodes, gpus_per_node, ranks = ranks_of(o, &nodes, &gpus_per_node);
    if (ranks < 0) return -1;
    int n = o->n_overrides + 1;
    const char **ov = mt_xcalloc((size_t)n, sizeof *ov);
    char name_ov[160];
    for (int i = 0; i < o->n_overrides; i++) ov[i] = o->overrides[i];
    n = o->n_overrides;
    if (o->name) {
        snprintf(name_ov, sizeof name_ov, "name=%s", o->name);
        ov[n++] = name_ov;
    }
    mt_train_config cfg;
    char preset[64];
    int rc = train_config_load_with(&cfg, config_path, ov, n, preset, sizeof preset);
    free(ov);
    if (rc != 0) return -1;
    if (mt_train_config_check(&cfg) != 0) return mt_error_context("%s", config_path);
    job_info j = {0};
    snprintf(j.name, sizeof j.name, "%s", cfg.name);
    snprintf(j.dir, sizeof j.dir, RUNS_DIR "/%s", cfg.name);
    if (strcmp(cfg.run_dir, j.dir) != 0)
        return mt_error("%s: run_dir is \"%s\": a job's run is always %s (leave run_dir out)",
                        config_path, cfg.run_dir, j.dir);
    if (exists(j.dir, "job.json") || exists(j.dir, "checkpoint") || exists(j.dir, "checkpoint.old"))
        return mt_error(
            "%s already holds a run: resume it (mtlab jobs resume %s) or choose another --name",
            j.dir, j.name);
    if (!getcwd(j.cwd, sizeof j.cwd))
        return mt_error("cannot read the current directory: %s", strerror(errno));
    if (mkdir(RUNS_DIR, 0777) != 0 && errno != EEXIST)
        return mt_error(RUNS_DIR ": %s", strerror(errno));
    int made = mkdir(j.dir, 0777) == 0;
    if (!made && errno != EEXIST) return mt_error("%s: %s", j.dir, strerror(errno));
    /* Two starts of one name at once: the lock lets one through at a time, and the second
     * then finds the first one's run. */
    int lock = mt_run_lock(j.dir, MT_RUN_LAUNCHER);
    if (lock < 0) return -1;
    rc = -1;
    char copy[800];
    snprintf(copy, sizeof copy, "%s/config.lua", j.dir);
    if (exists(j.dir, "job.json") || exists(j.dir, "checkpoint") || exists(j.dir, "checkpoint.old"))
        mt_error(
            "%s already holds a run: resume it (mtlab jobs resume %s) or choose another --name",
            j.dir, j.name);
    else if (train_config_write(&cfg, preset, copy) == 0) {
        j.launcher = o->launcher;
        j.ranks = ranks;
        j.nodes = nodes;
        j.gpus_per_node = gpus_per_node;
        j.max_steps = cfg.max_steps;
        j.valid_bleu = -1;
        j.started_at = job_wall_time();
        rc = o->launcher == JOB_SLURM ? job_slurm_launch(&j, 0) : job_local_launch(&j, 0);
        if (rc != 0) {
            /* nothing runs: leave no state file behind that claims otherwise */
            char state[800];
            snprintf(state, sizeof state, "%s/job.json", j.dir);
            unlink(state);
        }
    }
    mt_run_unlock(lock);
    if (rc != 0) {
        /* a directory this start made holds nothing of use: it goes, so no half-made run is
         * listed and the name stays free */
        if (made) remove_tree(j.dir);
        return -1;
    }
    *out = j;
    return 0;
}

/* The run's train.log, positioned at its last `tail` bytes (all of it when shorter); NULL when
 * it cannot be read. */
static FILE *open_log_tail(const char *dir, long tail)
{
    char path[800];
    snprintf(path, sizeof path, "%s/train.log", dir);
    FILE *f = mt_file_fopen(path, MT_FILE_REGULAR);
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, size > tail ? size - tail : 0, SEEK_SET);
    return f;
}

/* The last non-empty line of train.log (what a trainer that died without recording said). */
static void last_log_line(const char *dir, char *out, size_t n)
{
    char buf[4096];
    out[0] = '\0';
    FILE *f = open_log_tail(dir, (long)sizeof buf - 1);
    if (!f) return;
    size_t len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[len] = '\0';
    /* progress bars redraw with \r: a line ends at either */
    while (len && strchr("\r\n ", buf[len - 1])) buf[--len] = '\0';
    char *start = buf + len;
    while (start > buf && start[-1] != '\n' && start[-1] != '\r') start--;
    snprintf(out, n, "%s", start);
}

/* The step of the run's latest complete checkpoint (checkpoint/, or checkpoint.old/ when a
 * write was cut short: what a resume loads), -1 when it has none. */
static long checkpoint_step(const char *dir)
{
    static const char *const leaves[] = {"checkpoint/trainer.json", "checkpoint.old/trainer.json"};
    for (size_t i = 0; i < sizeof leaves / sizeof leaves[0]; i++) {
        char path[800];
        snprintf(path, sizeof path, "%s/%s", dir, leaves[i]);
        FILE *f = mt_file_fopen(path, MT_FILE_REGULAR);
        json_t *root = f ? json_loadf(f, 0, NULL) : NULL;
        if (f) fclose(f);
        json_t *step = root ? json_object_get(root, "step") : NULL;
        long v = json_is_integer(step) ? (long)json_integer_value(step) : -1;
        json_decref(root);
        if (v >= 0) return v;
    }
    return -1;
}

/* A rank that died is named by its launcher in train.log: mpirun ("... noticed that process rank
 * 1 with PID 42 on node h exited on signal 9 (Killed)."), srun ("srun: error: h: task 1:
 * Killed"), or the rank itself ("rank 1 on h: ..."). The first such line since the trainer last
 * started, or "". */
static void rank_failure_line(const char *dir, char *out, size_t n)
{
    char line[1024];
    out[0] = '\0';
    /* a log of many steps: its last 64 KiB hold the end */
    FILE *f = open_log_tail(dir, 65536);
    if (!f) return;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = '\0';
        if (!strncmp(line, "mtlab train: ranks ", 19)) out[0] = '\0';
        /* the ranks the launcher ended say so; it is the one that died that matters */
        else if (!out[0] && !strstr(line, "terminated (SIGTERM)") &&
                 (strstr(line, "noticed that process rank") ||
                  (strstr(line, "srun: error:") && strstr(line, ": task ")) ||
                  (strstr(line, ": rank ") && strstr(line, " on ") && strstr(line, "mtlab"))))
            snprintf(out, n, "%s", line);
    }
    fclose(f);
}

/* The state file's claim checked against the process table or Slurm. */
static int check_alive(job_info *j)
{
    if (!job_active(j)) return 0;
    job_state gone = JOB_FAILED; /* what a vanished job is, unless it recorded its end */
    if (j->launcher == JOB_LOCAL) {
        if (job_pid_alive(j->pid, j->pid_start)) return 0;
    } else {
        int active;
        job_state st = JOB_FAILED;
        if (job_slurm_query(j, &active, &st) != 0)
            return 0; /* Slurm is unreachable: keep the file's word */
        if (active) {
            /* the trainer records "running" itself; Slurm may know first */
            if (st == JOB_RUNNING) j->state = JOB_RUNNING;
            return 0;
        }
        if (st == JOB_CANCELLED) gone = JOB_CANCELLED; /* cancelled while pending, or by scancel */
    }
    /* The process is gone. It may have recorded its end between our read and the check. */
    job_info again = *j;
    if (job_file_read(&again, j->dir) == 0 && !job_active(&again)) {
        *j = again;
        return 0;
    }
    j->state = gone;
    if (gone != JOB_FAILED) return 0;
    char last[300], resume[160];
    last_log_line(j->dir, last, sizeof last);
    if (j->ranks > 1) {
        /* below the launcher's report come its frames of dashes: the report says more */
        char rank_line[300];
        rank_failure_line(j->dir, rank_line, sizeof rank_line);
        if (rank_line[0]) snprintf(last, sizeof last, "%s", rank_line);
    }
    long step = checkpoint_step(j->dir);
    if (step >= 0)
        snprintf(resume, sizeof resume,
                 "; mtlab jobs resume %s goes on from its checkpoint at step %ld", j->name, step);
    else
        snprintf(resume, sizeof resume,
                 "; it left no checkpoint: mtlab jobs resume %s starts it over", j->name);
    snprintf(j->error, sizeof j->error,
             "the trainer ended without recording its end (killed?)%s%s%s", resume,
             last[0] ? "; train.log ends: " : "", last);
    return 0;
}

static void apply_records(job_info *j, const job_log_record *r, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        j->step = r[i].step;
        j->elapsed_s = r[i].elapsed_s;
        if (r[i].is_valid) {
            if (r[i].valid_bleu >= 0) j->valid_bleu = r[i].valid_bleu;
        } else {
            j->loss = r[i].loss;
            j->tokens_per_s = r[i].tokens_per_s;
        }
    }
}

int job_refresh(job_info *j)
{
    job_info fresh = *j;
    if (job_file_read(&fresh, j->dir) != 0) return -1;
    *j = fresh;
    if (check_alive(j) != 0) return -1;
    if (j->state == JOB_FAILED && j->ranks > 1) {
        /* the ranks the launcher stopped after one died say less than the launcher did */
        char rank_line[400];
        rank_failure_line(j->dir, rank_line, sizeof rank_line);
        if (rank_line[0] && !strstr(j->error, rank_line)) {
            char error[sizeof j->error];
            snprintf(error, sizeof error, "%s; %s", rank_line, j->error);
            snprintf(j->error, sizeof j->error, "%s", error);
        }
    }
    job_log_record *recs;
    size_t n;
    if (job_log_read_since(j->dir, &j->log_offset, &recs, &n) != 0) return -1;
    apply_records(j, recs, n);
    free(recs);
    j->checkpoint = checkpoint_step(j->dir);
    return 0;
}

long job_shown_step(const job_info *j)
{
    if (job_active(j)) return j->step;
    return j->checkpoint >= 0 ? j->checkpoint : 0;
}

static int load_dir(job_info *j, const char *dir)
{
    memset(j, 0, sizeof *j);
    j->valid_bleu = -1;
    snprintf(j->dir, sizeof j->dir, "%s", dir);
    return job_refresh(j);
}

int job_load(job_info *j, const char *name)
{
    if (!name[0] || strchr(name, '/')) return mt_error("\"%s\" is not a job name", name);
    char dir[700];
    snprintf(dir, sizeof dir, RUNS_DIR "/%s", name);
    return load_dir(j, dir);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const job_info *)a)->name, ((const job_info *)b)->name);
}

int job_list(job_info **jobs, size_t *n)
{
    *jobs = NULL;
    *n = 0;
    DIR *d = opendir(RUNS_DIR);
    if (!d) return errno == ENOENT ? 0 : mt_error(RUNS_DIR ": %s", strerror(errno));
    size_t cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char dir[700];
        snprintf(dir, sizeof dir, RUNS_DIR "/%s", e->d_name);
        if (!exists(dir, "job.json")) continue; /* a plain `mtlab train` run */
        if (*n == cap) {
            cap = cap ? 2 * cap : 8;
            *jobs = mt_xrealloc(*jobs, cap * sizeof **jobs);
        }
        job_info *j = &(*jobs)[(*n)++];
        if (load_dir(j, dir) != 0) {
            /* one unreadable state file hides no other job */
            memset(j, 0, sizeof *j);
            snprintf(j->name, sizeof j->name, "%s", e->d_name);
            snprintf(j->dir, sizeof j->dir, "%s", dir);
            snprintf(j->error, sizeof j->error, "%s", mt_last_error());
            j->state = JOB_BROKEN;
            j->valid_bleu = -1;
        }
    }
    closedir(d);
    if (*n) qsort(*jobs, *n, sizeof **jobs, by_name);
    return 0;
}

int job_stop(job_info *j)
{
    if (job_refresh(j) != 0) return -1;
    if (!job_active(j))
        return mt_error("%s is not running (it is %s)", j->name, job_state_name(j->state));
    if (j->launcher == JOB_SLURM) return job_slurm_stop(j);
    /* a data-parallel job's rank 0: SIGUSR1 (SIGTERM ends ranks at once, cmd_train.c) */
    if (kill(j->pid, j->ranks > 1 ? SIGUSR1 : SIGTERM) != 0 && errno != ESRCH)
        return mt_error("%s: kill: %s", j->name, strerror(errno));
    return 0;
}

/* Whether a trainer could take j up: its config is there and leaves steps to train. */
static int check_resumable(const job_info *j)
{
    char path[800];
    struct stat st;
    snprintf(path, sizeof path, "%s/config.lua", j->dir);
    if (stat(path, &st) != 0)
        return mt_error("%s: %s: a job resumes with the config it was started with", path,
                        strerror(errno));
    mt_train_config cfg;
    if (train_config_load(&cfg, path) != 0) return -1;
    long step = checkpoint_step(j->dir);
    if (step >= cfg.max_steps)
        return mt_error(
            "%s is complete: its checkpoint is at step %ld of max_steps %ld, nothing to resume "
            "(mtlab jobs resume %s max_steps=N trains it on)",
            j->name, step, cfg.max_steps, j->name);
    return 0;
}

/* Raise the max_steps of the job's config copy to max_steps, past its checkpoint's step: the
 * resume then trains the run on to it. */
static int extend(job_info *j, long max_steps)
{
    char path[800], preset[64];
    snprintf(path, sizeof path, "%s/config.lua", j->dir);
    mt_train_config cfg;
    if (train_config_load_with(&cfg, path, NULL, 0, preset, sizeof preset) != 0) return -1;
    long step = checkpoint_step(j->dir);
    if (max_steps <= step)
        return mt_error("max_steps=%ld does not extend %s: its checkpoint is at step %ld",
                        max_steps, j->name, step);
    cfg.max_steps = max_steps;
    if (train_config_write(&cfg, preset, path) != 0) return -1;
    j->max_steps = max_steps;
    return 0;
}

static int resume_locked(job_info *j, const job_resume_opts *o)
{
    if (job_refresh(j) != 0) return -1;
    if (job_active(j))
        return mt_error("%s is %s: stop it before resuming", j->name, job_state_name(j->state));
    int nodes = j->nodes, gpus_per_node = j->gpus_per_node, ranks = j->ranks;
    if (o->procs || o->nodes || o->gpus_per_node || o->tasks) {
        job_start_opts r = {.launcher = j->launcher,
                            .procs = o->procs,
                            .nodes = o->nodes,
                            .gpus_per_node = o->gpus_per_node,
                            .tasks = o->tasks};
        ranks = ranks_of(&r, &nodes, &gpus_per_node);
        if (ranks < 0)
            return mt_error_context("%s (a %s job)", j->name, job_launcher_name(j->launcher));
    }
    if (o->max_steps > 0 && extend(j, o->max_steps) != 0) return -1;
    if (check_resumable(j) != 0) return -1;
    j->ranks = ranks;
    j->nodes = nodes;
    j->gpus_per_node = gpus_per_node;
    /* a run killed before its first checkpoint starts again from scratch; one killed while it
     * saved one has it under checkpoint.old/ */
    int resume = exists(j->dir, "checkpoint") || exists(j->dir, "checkpoint.old");
    char cwd[512];
    if (!getcwd(cwd, sizeof cwd))
        return mt_error("cannot read the current directory: %s", strerror(errno));
    snprintf(j->cwd, sizeof j->cwd, "%s", cwd);
    j->started_at = job_wall_time();
    j->ended_at = 0;
    j->exit_code = 0;
    j->error[0] = '\0';
    j->log_offset = 0;
    j->step = 0;
    return j->launcher == JOB_SLURM ? job_slurm_launch(j, resume) : job_local_launch(j, resume);
}

int job_resume(job_info *j) { return job_resume_with(j, NULL); }

int job_resume_with(job_info *j, const job_resume_opts *o)
{
    job_resume_opts none = {0};
    if (!o) o = &none;
    if (job_refresh(j) != 0) return -1;
    if (job_active(j))
        return mt_error("%s is %s: stop it before resuming", j->name, job_state_name(j->state));
    /* Two resumes at once: the second one in finds the first one's trainer running (the
     * launcher records it before it lets go), or the trainer itself holding the lock. */
    int lock = mt_run_lock(j->dir, MT_RUN_LAUNCHER);
    if (lock < 0) return -1;
    int rc = resume_locked(j, o);
    mt_run_unlock(lock);
    return rc;
}

int job_wait(job_info *j, double timeout_s)
{
    double t0 = mt_now_s();
    for (;;) {
        if (job_refresh(j) != 0) return -1;
        if (job_ended(j)) return 0;
        if (timeout_s >= 0 && mt_now_s() - t0 >= timeout_s) return 1;
        struct timespec pause = {0, (job_active(j) ? 100 : 10) * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
}

int job_ended(const job_info *j)
{
    /* a local trainer records its end just before it exits and frees the run's lock: it has
     * ended once it has gone, so a resume right after finds the run free */
    return !job_active(j) && !(j->launcher == JOB_LOCAL && job_pid_alive(j->pid, j->pid_start));
}
