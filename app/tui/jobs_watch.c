/* The jobs view's watcher thread: about once a second (or at once when poked) it lists the
 * runs under runs/ (job_list: job.json, the process table, squeue for Slurm jobs) and reads
 * the log.jsonl lines each run gained since the last look into its curves, then hands a copy
 * to the UI thread, which takes it when it draws (tui_jobs_take). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "mtlab/error.h"
#include "tui/jobs_view.h"

/* What the thread remembers of a run between looks. */
typedef struct {
    char name[128];
    long offset; /* bytes of log.jsonl read */
    tui_job_curves curves;
    size_t cap_train, cap_valid;
} watched;

typedef struct {
    watched *w;
    size_t n, cap;
} watch_list;

static watched *watch_find(watch_list *l, const char *name)
{
    for (size_t i = 0; i < l->n; i++)
        if (!strcmp(l->w[i].name, name)) return &l->w[i];
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 8;
        l->w = mt_xrealloc(l->w, l->cap * sizeof *l->w);
    }
    watched *w = &l->w[l->n++];
    memset(w, 0, sizeof *w);
    snprintf(w->name, sizeof w->name, "%s", name);
    return w;
}

/* Room for one more point in each of the k arrays (n points, *cap allocated). */
static void grow(double **arrays[], int k, size_t n, size_t *cap)
{
    if (n < *cap) return;
    *cap = *cap ? 2 * *cap : 64;
    for (int i = 0; i < k; i++) *arrays[i] = mt_xrealloc(*arrays[i], *cap * sizeof **arrays[i]);
}

/* Read what dir/log.jsonl gained; a log that shrank was rewritten (a fresh run of the name). */
static void watch_read(watched *w, const char *dir)
{
    char path[800];
    struct stat st;
    snprintf(path, sizeof path, "%s/log.jsonl", dir);
    if (stat(path, &st) == 0 && st.st_size < w->offset) {
        tui_job_curves_free(&w->curves);
        w->cap_train = w->cap_valid = 0;
        w->offset = 0;
    }
    job_log_record *r;
    size_t n;
    if (job_log_read_since(dir, &w->offset, &r, &n) != 0) return;
    tui_job_curves *c = &w->curves;
    for (size_t i = 0; i < n; i++) {
        if (!r[i].is_valid) {
            double **train[] = {&c->step, &c->loss, &c->elapsed};
            grow(train, 3, c->n_train, &w->cap_train);
            c->step[c->n_train] = (double)r[i].step;
            c->loss[c->n_train] = r[i].loss;
            c->elapsed[c->n_train] = r[i].elapsed_s;
            c->n_train++;
        } else if (r[i].valid_bleu >= 0) {
            double **valid[] = {&c->valid_step, &c->bleu};
            grow(valid, 2, c->n_valid, &w->cap_valid);
            c->valid_step[c->n_valid] = (double)r[i].step;
            c->bleu[c->n_valid] = r[i].valid_bleu;
            c->n_valid++;
        }
    }
    free(r);
}

static double *copy_doubles(const double *a, size_t n)
{
    if (n == 0) return NULL;
    double *b = mt_xmalloc(n * sizeof *b);
    memcpy(b, a, n * sizeof *b);
    return b;
}

static void curves_copy(tui_job_curves *dst, const tui_job_curves *src)
{
    dst->n_train = src->n_train;
    dst->step = copy_doubles(src->step, src->n_train);
    dst->loss = copy_doubles(src->loss, src->n_train);
    dst->elapsed = copy_doubles(src->elapsed, src->n_train);
    dst->n_valid = src->n_valid;
    dst->valid_step = copy_doubles(src->valid_step, src->n_valid);
    dst->bleu = copy_doubles(src->bleu, src->n_valid);
}

/* The runs of runs/ as they are now (malloc'd), or the error in err. */
static tui_job_run *snapshot_runs(watch_list *l, size_t *n_out, char *err, size_t err_len)
{
    job_info *jobs;
    size_t n;
    err[0] = '\0';
    *n_out = 0;
    if (job_list(&jobs, &n) != 0) {
        snprintf(err, err_len, "%s", mt_last_error());
        return NULL;
    }
    tui_job_run *runs = n ? mt_xcalloc(n, sizeof *runs) : NULL;
    for (size_t i = 0; i < n; i++) {
        watched *w = watch_find(l, jobs[i].name);
        watch_read(w, jobs[i].dir);
        runs[i].info = jobs[i];
        curves_copy(&runs[i].curves, &w->curves);
    }
    free(jobs);
    *n_out = n;
    return runs;
}

static void *watch_main(void *arg)
{
    tui_jobs *v = arg;
    watch_list l = {0};
    pthread_mutex_lock(&v->mu);
    while (!v->stop) {
        pthread_mutex_unlock(&v->mu);
        size_t n;
        char err[512];
        tui_job_run *runs = snapshot_runs(&l, &n, err, sizeof err);
        pthread_mutex_lock(&v->mu);
        tui_job_runs_free(v->fresh, v->n_fresh);
        v->fresh = runs;
        v->n_fresh = n;
        snprintf(v->fresh_error, sizeof v->fresh_error, "%s", err);
        v->have_fresh = 1;
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += (time_t)TUI_JOBS_REFRESH_S;
        while (!v->stop && !v->now)
            if (pthread_cond_timedwait(&v->wake, &v->mu, &until) == ETIMEDOUT) break;
        v->now = 0;
    }
    pthread_mutex_unlock(&v->mu);
    for (size_t i = 0; i < l.n; i++) tui_job_curves_free(&l.w[i].curves);
    free(l.w);
    return NULL;
}

int tui_jobs_start(tui_jobs *v)
{
    pthread_mutex_init(&v->mu, NULL);
    pthread_cond_init(&v->wake, NULL);
    int rc = pthread_create(&v->thread, NULL, watch_main, v);
    if (rc != 0) {
        pthread_cond_destroy(&v->wake);
        pthread_mutex_destroy(&v->mu);
        return mt_error("cannot start the jobs watcher thread: %s", strerror(rc));
    }
    return 0;
}

void tui_jobs_poke(tui_jobs *v)
{
    pthread_mutex_lock(&v->mu);
    v->now = 1;
    pthread_cond_signal(&v->wake);
    pthread_mutex_unlock(&v->mu);
}

int tui_jobs_take(tui_jobs *v)
{
    pthread_mutex_lock(&v->mu);
    int got = v->have_fresh;
    if (got) {
        tui_job_runs_free(v->runs, v->n_runs);
        v->runs = v->fresh;
        v->n_runs = v->n_fresh;
        snprintf(v->list_error, sizeof v->list_error, "%s", v->fresh_error);
        v->fresh = NULL;
        v->n_fresh = 0;
        v->have_fresh = 0;
    }
    pthread_mutex_unlock(&v->mu);
    return got;
}

void tui_jobs_free(tui_jobs *v)
{
    pthread_mutex_lock(&v->mu);
    v->stop = 1;
    pthread_cond_signal(&v->wake);
    pthread_mutex_unlock(&v->mu);
    pthread_join(v->thread, NULL);
    pthread_cond_destroy(&v->wake);
    pthread_mutex_destroy(&v->mu);
    tui_job_runs_free(v->fresh, v->n_fresh);
    tui_job_runs_free(v->runs, v->n_runs);
    for (int i = 0; i < v->n_configs; i++) free(v->configs[i]);
    free(v->configs);
    free(v);
}
