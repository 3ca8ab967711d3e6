#include "tui/worker.h"

#include <omp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mtlab/decode.h"
#include "mtlab/device.h"
#include "mtlab/error.h"
#include "mtlab/model.h"
#include "mtlab/tokenizer.h"
#include "tui/format.h"

/* A partial hypothesis is sent at most this often per segment (the final one always). */
#define PARTIAL_INTERVAL_S 0.02

typedef struct {
    unsigned long id;
    char **texts;
    int n;
    int beam;
    int threads;
    int probe_segment;
} job;

struct tui_worker {
    int pane_id;
    char *dir;
    char *device;             /* NULL: cpu */
    tui_queue *q;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    atomic_int cancel;
    int stop;                 /* guarded by lock */
    job pending;              /* texts NULL when none; guarded by lock */
    int probe_request;        /* segment of the last job, -1 when none; guarded by lock */
    /* worker-thread only */
    mt_model *model;
    mt_tokenizer *tok;
    job last;                 /* the last finished job and its results, for probe requests */
    mt_decode_result last_res;
    int have_last;
    /* streaming state of the running job */
    unsigned long running;
    double *last_push;        /* (n) per segment */
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void job_free(job *j)
{
    for (int i = 0; i < j->n; i++) free(j->texts[i]);
    free(j->texts);
    memset(j, 0, sizeof *j);
}

static void push_text(tui_worker *w, tui_event_kind kind, unsigned long id, int segment,
                      const char *text)
{
    tui_event *ev = tui_event_new(kind, w->pane_id, id);
    ev->segment = segment;
    ev->text = mt_xstrdup(text ? text : "");
    tui_queue_push(w->q, ev);
}

static void on_token(void *user, const mt_decode_event *e)
{
    tui_worker *w = user;
    double t = now_s();
    if (!e->final && t - w->last_push[e->sentence] < PARTIAL_INTERVAL_S) return;
    w->last_push[e->sentence] = t;
    int *ids = mt_xmalloc(((size_t)e->n_tokens + 1) * sizeof *ids);
    for (int i = 0; i < e->n_tokens; i++) ids[i] = e->tokens[i];
    char *text = mt_tokenizer_decode(w->tok, ids, (size_t)e->n_tokens);
    free(ids);
    push_text(w, e->final ? TUI_EV_SEGMENT : TUI_EV_PARTIAL, w->running, e->sentence,
              text ? text : "");
    free(text);
}

static int load(tui_worker *w)
{
    double t0 = now_s();
    /* opened here: a CUDA backend binds its stream and memory pool to this thread */
    const mt_backend *be = mt_backend_for(w->device, 0);
    if (!be) return -1;
    w->model = mt_model_load(w->dir, be, 0);
    if (!w->model) return -1;
    const char *tok_path = mt_model_tokenizer_path(w->model);
    w->tok = tok_path ? mt_tokenizer_load(tok_path) : NULL;
    if (!w->tok) {
        if (!tok_path) mt_error("%s: the bundle has no tokenizer.model", w->dir);
        return -1;
    }
    const mt_model_config *cfg = mt_model_get_config(w->model);
    tui_event *ev = tui_event_new(TUI_EV_LOADED, w->pane_id, 0);
    char params[32];
    tui_format_count(params, sizeof params, mt_model_param_count(w->model));
    snprintf(ev->info, sizeof ev->info, "%s, %s params, %s", cfg->arch, params, be->name);
    ev->text = mt_xmalloc(256);
    snprintf(ev->text, 256, "loaded %s (%s) in %.2f s", w->dir, ev->info, now_s() - t0);
    tui_queue_push(w->q, ev);
    return 0;
}

/* The piece of an id for axis labels ("?" when the tokenizer does not know it). */
static char *label_of(const mt_tokenizer *tok, int32_t id)
{
    const char *piece = mt_tokenizer_id_to_piece(tok, id);
    return mt_xstrdup(piece ? piece : "?");
}

static void run_probe(tui_worker *w, unsigned long id, int segment)
{
    if (!w->have_last || segment < 0 || segment >= w->last.n || w->last_res.cancelled) return;
    int *ids = NULL;
    size_t n = 0;
    tui_event *ev;
    tui_probe *probe = mt_xcalloc(1, sizeof *probe);
    int rc = mt_tokenizer_encode(w->tok, w->last.texts[segment], &ids, &n);
    if (rc == 0) {
        int32_t *src = mt_xmalloc((n + 1) * sizeof *src);
        for (size_t i = 0; i < n; i++) src[i] = ids[i];
        const mt_hypothesis *h = &w->last_res.hyps[segment];
        mt_probe_opts o = {0};
        rc = mt_probe_run(w->model, src, (int)n, h->ids, h->n_ids, &o, &probe->rec);
        free(src);
    }
    free(ids);
    if (rc == 0) {
        const mt_probe_record *r = &probe->rec;
        probe->labels = mt_xcalloc((size_t)r->n_tokens + 1, sizeof *probe->labels);
        for (int i = 0; i < r->n_tokens; i++) probe->labels[i] = label_of(w->tok, r->tokens[i]);
        probe->src_labels = mt_xcalloc((size_t)r->n_src + 1, sizeof *probe->src_labels);
        for (int i = 0; i < r->n_src; i++) probe->src_labels[i] = label_of(w->tok, r->src[i]);
        ev = tui_event_new(TUI_EV_PROBE, w->pane_id, id);
        ev->probe = probe;
    } else {
        ev = tui_event_new(TUI_EV_PROBE_FAILED, w->pane_id, id);
        ev->text = mt_xstrdup(mt_last_error());
        tui_probe_free(probe);
    }
    ev->segment = segment;
    tui_queue_push(w->q, ev);
}

static void run_job(tui_worker *w, job *j)
{
    /* the OpenMP team size is per thread: this worker's share of the cores */
    if (j->threads > 0) omp_set_num_threads(j->threads);
    w->running = j->id;
    w->last_push = mt_xcalloc((size_t)j->n + 1, sizeof *w->last_push);
    mt_decode_opts o;
    mt_decode_opts_init(&o);
    o.beam = j->beam;
    o.on_token = on_token;
    o.user = w;
    o.cancel = &w->cancel;
    mt_decode_result res;
    int rc = mt_translate(w->model, w->tok, (const char *const *)j->texts, j->n, 0, &o, &res);
    free(w->last_push);
    w->last_push = NULL;
    if (rc != 0) {
        tui_event *ev = tui_event_new(TUI_EV_FAILED, w->pane_id, j->id);
        ev->segment = res.failed_input;
        ev->text = mt_xstrdup(mt_last_error());
        tui_queue_push(w->q, ev);
        job_free(j);
        return;
    }
    tui_event *ev = tui_event_new(TUI_EV_DONE, w->pane_id, j->id);
    ev->seconds = res.seconds;
    ev->tokens = res.tokens;
    ev->state_bytes = res.state_bytes;
    ev->cancelled = res.cancelled;
    tui_queue_push(w->q, ev);
    if (w->have_last) {
        job_free(&w->last);
        mt_decode_result_free(&w->last_res);
    }
    w->last = *j;
    w->last_res = res;
    w->have_last = 1;
    if (j->probe_segment >= 0) run_probe(w, j->id, j->probe_segment);
}

static void *worker_main(void *arg)
{
    tui_worker *w = arg;
    int ok = load(w) == 0;
    if (!ok) push_text(w, TUI_EV_LOAD_FAILED, 0, -1, mt_last_error());
    pthread_mutex_lock(&w->lock);
    for (;;) {
        while (!w->stop && !w->pending.texts && w->probe_request < 0)
            pthread_cond_wait(&w->wake, &w->lock);
        if (w->stop) break;
        job j = w->pending;
        int probe = w->probe_request;
        memset(&w->pending, 0, sizeof w->pending);
        w->probe_request = -1;
        atomic_store(&w->cancel, 0);
        pthread_mutex_unlock(&w->lock);
        if (!ok) job_free(&j);
        else if (j.texts) run_job(w, &j);
        else run_probe(w, w->last.id, probe);
        pthread_mutex_lock(&w->lock);
    }
    pthread_mutex_unlock(&w->lock);
    if (w->have_last) {
        job_free(&w->last);
        mt_decode_result_free(&w->last_res);
    }
    mt_tokenizer_free(w->tok);
    mt_model_free(w->model);
    return NULL;
}

tui_worker *tui_worker_start(int pane_id, const char *bundle_dir, const char *device, tui_queue *q)
{
    tui_worker *w = mt_xcalloc(1, sizeof *w);
    w->pane_id = pane_id;
    w->dir = mt_xstrdup(bundle_dir);
    w->device = device ? mt_xstrdup(device) : NULL;
    w->q = q;
    w->probe_request = -1;
    atomic_init(&w->cancel, 0);
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->wake, NULL);
    /* signals go to the UI thread only: the worker (and the OpenMP threads it starts)
     * inherit a mask that blocks them */
    sigset_t all, old;
    sigfillset(&all);
    const int crash[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
    for (size_t i = 0; i < sizeof crash / sizeof crash[0]; i++) sigdelset(&all, crash[i]);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int err = pthread_create(&w->thread, NULL, worker_main, w);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (err) {
        mt_error("%s: cannot start a worker thread: %s", bundle_dir, strerror(err));
        pthread_cond_destroy(&w->wake);
        pthread_mutex_destroy(&w->lock);
        free(w->dir);
        free(w->device);
        free(w);
        return NULL;
    }
    return w;
}

void tui_worker_submit(tui_worker *w, unsigned long id, char **texts, int n, int beam,
                       int threads, int probe_segment)
{
    pthread_mutex_lock(&w->lock);
    job_free(&w->pending);
    w->pending = (job){id, texts, n, beam, threads, probe_segment};
    w->probe_request = -1;
    atomic_store(&w->cancel, 1);
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->lock);
}

void tui_worker_probe(tui_worker *w, int segment)
{
    pthread_mutex_lock(&w->lock);
    if (!w->pending.texts) {
        w->probe_request = segment;
        pthread_cond_signal(&w->wake);
    }
    pthread_mutex_unlock(&w->lock);
}

void tui_worker_cancel(tui_worker *w)
{
    pthread_mutex_lock(&w->lock);
    job_free(&w->pending);
    w->probe_request = -1;
    atomic_store(&w->cancel, 1);
    pthread_mutex_unlock(&w->lock);
}

void tui_worker_stop(tui_worker *w)
{
    pthread_mutex_lock(&w->lock);
    w->stop = 1;
    job_free(&w->pending);
    atomic_store(&w->cancel, 1);
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->lock);
    pthread_join(w->thread, NULL);
    pthread_cond_destroy(&w->wake);
    pthread_mutex_destroy(&w->lock);
    free(w->dir);
    free(w->device);
    free(w);
}
