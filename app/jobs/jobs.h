/* Training jobs: one model behind `mtlab jobs ...`, `mtlab.jobs` in Lua and the workbench.
 *
 * A job is its run directory runs/NAME/ (relative to the directory it was started from):
 *   config.lua   every setting, written at start (config + overrides); what the trainer reads
 *   job.json     the state file: launcher, pid (+ its start time) or Slurm job id, state,
 *                start/end times, exit code, error; replaced atomically (temp + fsync + rename)
 *   train.log    the trainer's stdout and stderr
 *   train.lock   flock'd by the trainer for its life and by a launcher while it starts one, so a
 *                second start or resume is refused (mt_run_lock, mtlab/train.h)
 *   log.jsonl, checkpoint/, best/   written by `mtlab train` (mtlab/train.h)
 *
 * Who writes job.json: the launcher, once, before the trainer may start (a local child waits
 * on a pipe, a Slurm job is submitted held); from then on only the trainer (`mtlab train
 * --job`): "running" when it starts, completed / cancelled / failed when it ends. Watchers
 * never write, so any number of them (CLI, Lua, workbench) read the same state: the file,
 * checked against the process table (a local pid counts only while /proc/PID/stat shows the
 * start time recorded with it, so a reused pid is not mistaken for the job) or against
 * squeue/sacct for Slurm. A job whose process is gone without recording its end is `failed`.
 *
 * Stopping is graceful: SIGTERM (local kill, Slurm `scancel --signal=TERM --full`); the
 * trainer saves a checkpoint at the next step and records `cancelled`. A data-parallel job (N
 * ranks under mpirun or srun, docs/distributed.md) is one job: rank 0 records itself in
 * job.json, and it stops on SIGUSR1 instead (its ranks take SIGTERM as the launcher's end). Resume
 * relaunches the same config with --resume through the same launcher. */
#ifndef MTLAB_APP_JOBS_H
#define MTLAB_APP_JOBS_H

#include <stddef.h>
#include <sys/types.h>

typedef enum { JOB_LOCAL, JOB_SLURM } job_launcher;

typedef enum {
    JOB_PENDING, /* submitted, not started (Slurm queue) */
    JOB_RUNNING,
    JOB_COMPLETED, /* reached max_steps */
    JOB_CANCELLED, /* stopped on request, checkpoint saved: resumable */
    JOB_FAILED, /* error (job_info.error says which) or killed */
    JOB_BROKEN, /* job_list only: its job.json cannot be read (job_info.error says why) */
} job_state;

/* A record of log.jsonl: a training interval or a validation. */
typedef struct {
    int is_valid; /* 0: "train" record, 1: "valid" record */
    long step;
    int epoch; /* train records */
    double loss, lr, tokens_per_s; /* train records */
    double valid_loss; /* valid records */
    double valid_bleu; /* valid records with BLEU; -1 otherwise */
    double elapsed_s;
} job_log_record;

typedef struct {
    char name[128];
    char dir[700]; /* runs/NAME, relative to cwd */
    char cwd[512]; /* where the job runs (absolute) */
    job_launcher launcher;
    job_state state; /* after job_refresh: the file checked against the process/queue */
    pid_t pid; /* the trainer's pid (0: not started) */
    unsigned long long pid_start; /* its start time in clock ticks after boot (/proc/PID/stat) */
    char host[64]; /* where the trainer runs (its rank 0) */
    int ranks; /* trainer processes (1; N: data parallel, docs/distributed.md) */
    int nodes; /* Slurm: nodes asked for (0: Slurm's choice) */
    int gpus_per_node; /* Slurm: GPUs per node, one rank each (0: a CPU job) */
    char slurm_id[32]; /* Slurm job id ("" for local jobs) */
    double started_at, ended_at; /* Unix seconds; 0: not yet */
    int exit_code; /* the trainer's exit status once ended */
    char error[512]; /* why it failed ("" otherwise) */
    long max_steps; /* from the config */
    /* the latest of log.jsonl (job_refresh reads what was appended since the last call) */
    long step; /* last logged step (0: none yet) */
    long checkpoint; /* the step of its checkpoint, where a resume continues (-1: none) */
    double loss, tokens_per_s, elapsed_s;
    double valid_bleu; /* last validation BLEU, -1: none yet */
    long log_offset; /* bytes of log.jsonl read so far */
} job_info;

typedef struct {
    job_launcher launcher;
    const char *name; /* NULL: the config's name */
    const char *const *overrides; /* "key=value", "model.key=value" */
    int n_overrides;
    /* Data parallel (0: one process). local: procs ranks under mpirun; slurm: tasks ranks, or
     * nodes x gpus_per_node (one rank per GPU), or nodes ranks, under srun. */
    int procs, nodes, gpus_per_node, tasks;
} job_start_opts;

const char *job_state_name(job_state s);
const char *job_launcher_name(job_launcher l);
/* "local" / "slurm" -> *out; -1 with mt_last_error() otherwise. */
int job_launcher_parse(const char *s, job_launcher *out);

/* Read the config with its overrides, check every setting (files included), and only then
 * create runs/NAME/ and launch. 0 with *out filled, or -1 with mt_last_error() (nothing was
 * started). */
int job_start(job_info *out, const char *config_path, const job_start_opts *o);
/* Read runs/NAME/job.json and refresh it. */
int job_load(job_info *j, const char *name);
/* Re-read the state file, check it against the process table / Slurm, read new log records. */
int job_refresh(job_info *j);
/* Every job under runs/, sorted by name (malloc'd array, free()). A run whose job.json cannot
 * be read is listed as JOB_BROKEN with the reason in its error, beside the others; -1 only when
 * runs/ itself cannot be read. */
int job_list(job_info **jobs, size_t *n);
/* Ask a pending or running job to stop (graceful); returns at once (see job_wait). */
int job_stop(job_info *j);
/* Relaunch a job that is not pending or running, from its checkpoint when it has one; refused
 * when no trainer could take it (its config.lua is missing, or its checkpoint already reached
 * max_steps) or another process trains its run (mt_run_lock). */
/* The step to show for the job: the logged one while it is active, else its checkpoint's
 * (0 without one: a resume starts from scratch), which is where it stands. */
long job_shown_step(const job_info *j);
int job_resume(job_info *j);
/* What a resume may change. max_steps (0: as it is) raises the run's, and must lie past its
 * checkpoint: a completed run trains on. procs, nodes, gpus_per_node, tasks (all 0: as it ran)
 * give the ranks anew as job_start_opts does for the job's launcher: a run goes on with the same
 * losses on any number of ranks (docs/distributed.md §2). */
typedef struct {
    long max_steps;
    int procs, nodes, gpus_per_node, tasks;
} job_resume_opts;
/* job_resume with those changes (o NULL: none); a bad option is refused before anything. */
int job_resume_with(job_info *j, const job_resume_opts *o);
/* Poll until the job is neither pending nor running: 0, or 1 when timeout_s (< 0: none)
 * passed first; -1 on error. */
int job_wait(job_info *j, double timeout_s);
/* 1 while pending or running. */
int job_active(const job_info *j);
/* Not active, and its trainer's process gone too (it records its end just before it exits):
 * what a wait waits for. */
int job_ended(const job_info *j);

/* The complete lines of dir/log.jsonl after *offset, parsed; *offset moves past them (a line
 * still being written is left for the next call). Of records of the same step and event only
 * the last is kept, and they come in step order (a log written before resumes cut it back may
 * repeat the steps after a checkpoint). *recs is malloc'd (free()), *n may be 0. */
int job_log_read_since(const char *dir, long *offset, job_log_record **recs, size_t *n);

/* For `mtlab train --job`: the trainer records itself as running, and later its end
 * (status: 0 ok, stopped: 1 when a stop was requested; error: NULL or the message). */
int job_trainer_begin(const char *run_dir);
int job_trainer_end(const char *run_dir, int status, int stopped, const char *error);

#endif
