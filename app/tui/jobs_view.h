/* The jobs view (F11): the runs under runs/ with their progress, plots of their training loss
 * and validation BLEU, and keys that launch, stop, resume and open them (app/jobs/jobs.h).
 *
 * A watcher thread lists the runs and reads what their log.jsonl gained about once a second
 * (file reads, and squeue for Slurm jobs: never on the UI thread); the UI thread takes its
 * latest snapshot when it draws. The pure pieces (ETA, progress bar, row text) are below the
 * view's own API and tested alone. */
#ifndef MTLAB_TUI_JOBS_VIEW_H
#define MTLAB_TUI_JOBS_VIEW_H

#include <pthread.h>
#include <stddef.h>

#include "common/theme.h"
#include "jobs/jobs.h"

#define TUI_JOBS_REFRESH_S 1.0
#define TUI_JOBS_ETA_WINDOW_S 60.0 /* the rate behind the ETA: the last minute of training */

/* One run's curves, from its log.jsonl. */
typedef struct {
    double *step, *loss, *elapsed; /* (n_train) train records */
    size_t n_train;
    double *valid_step, *bleu; /* (n_valid) validations with a BLEU */
    size_t n_valid;
} tui_job_curves;

/* ---------------------------------------------------------------- pure pieces */

/* Seconds until max_steps at the recent rate: steps per second between the last train
 * record and the earliest one within TUI_JOBS_ETA_WINDOW_S before it (elapsed (n) and step
 * (n) from the log); -1 when it cannot be told (fewer than two records, no progress). */
double tui_job_eta_s(const double *step, const double *elapsed, size_t n, long max_steps);
/* "45s", "12m05s", "3h20m", "2d04h"; "-" for a negative time. */
void tui_format_eta(char *out, size_t len, double seconds);
/* A bar of width cells for done/total: full cells, then an eighth-step cell (UTF-8) or '#'
 * cells (ascii), the rest light shade or '-'. out needs 3 * width + 1 bytes. */
void tui_progress_bar(char *out, size_t len, long done, long total, int width, int ascii);
/* The list columns of a run: "running", "2" (the ranks it trains on), "120/400", "1.23K",
 * "3m05s", "12.4"; "-" where there is nothing yet. eta_s < 0: unknown. The state is drawn in
 * state_meaning: failed and broken (job.json unreadable) as errors, running busy, completed done,
 * the rest dim. */
typedef struct {
    char state[16], ranks[12], steps[32], tokens_per_s[16], eta[16], bleu[16];
    tui_meaning state_meaning;
} tui_job_cols;
void tui_job_columns(tui_job_cols *c, const job_info *j, double eta_s);

void tui_job_curves_free(tui_job_curves *c);

/* ---------------------------------------------------------------- the view's state */

typedef struct {
    job_info info;
    tui_job_curves curves;
} tui_job_run;

typedef struct {
    /* the UI thread's */
    tui_job_run *runs; /* (n_runs) the latest snapshot, sorted by name */
    size_t n_runs;
    char list_error[512]; /* runs/ could not be listed */
    int sel; /* the highlighted run */
    int plot_all; /* 1: every run's curves overlaid, 0: the highlighted run's */
    job_launcher launcher;
    int have_sbatch; /* sbatch is on PATH: s/l choose the launcher */
    int picking; /* the config picker is open */
    char **configs; /* (n_configs) scripts/train/ *.lua */
    int n_configs;
    int config_sel; /* 0: the typed path, i > 0: configs[i - 1] */
    char path[512]; /* the typed config path */
    char message[600]; /* the last action's outcome (a config error, "launched ...") */
    int message_is_error;

    /* the watcher thread's, guarded by mu */
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t wake;
    int stop, now; /* stop the thread; refresh now (after an action) */
    tui_job_run *fresh; /* (n_fresh) a snapshot the UI has not taken yet */
    size_t n_fresh;
    int have_fresh;
    char fresh_error[512];
} tui_jobs;

/* Start the watcher (its first snapshot comes at once); 0 or -1. */
int tui_jobs_start(tui_jobs *v);
/* Stop and join the watcher, free everything. */
void tui_jobs_free(tui_jobs *v);
/* Take the watcher's latest snapshot: 1 when there was one. */
int tui_jobs_take(tui_jobs *v);
/* Ask the watcher for a snapshot now. */
void tui_jobs_poke(tui_jobs *v);
void tui_job_runs_free(tui_job_run *runs, size_t n);

#endif
