/* A model on a thread of its own (mtlab/worker.h). */
#include "mtlab/worker.h"

#include <omp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mtlab/clock.h"
#include "mtlab/error.h"

struct mt_worker {
    char *dir;
    char *device; /* NULL: cpu */
    unsigned runner_flags; /* mt_runner_open's */
    double partial_interval;
    mt_worker_sink sink;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    atomic_int cancel;
    int stop; /* guarded by lock */
    mt_worker_request pending; /* texts NULL when none; guarded by lock */
    int probe_request; /* text of the last request, -1 when none; guarded by lock */
    int attr_request; /* text of the last request to attribute, -1 when none; guarded
                       * by lock */
    mt_attr_opts attr_opts; /* its options; guarded by lock */
    char *attr_contrast; /* its contrast as asked for or NULL; guarded by lock */
    int attributing; /* 1 while an attribution runs (a newer one cancels it); guarded by lock */
    /* worker-thread only */
    mt_runner *runner;
    mt_worker_request last; /* the last finished request and its results, for probes */
    mt_decode_result last_res;
    int have_last;
    /* streaming state of the running request */
    unsigned long running;
    double *last_partial; /* (n) per text: when its last partial went out */
};

/* n strings and the array holding them (NULL: none) */
static void free_strings(char **s, int n)
{
    for (int i = 0; s && i < n; i++) free(s[i]);
    free(s);
}

void mt_labelled_probe_free(mt_labelled_probe *p)
{
    if (!p) return;
    free_strings(p->labels, p->rec.n_tokens);
    free_strings(p->src_labels, p->rec.n_src);
    free_strings(p->shown, p->rec.n_tokens);
    free_strings(p->src_shown, p->rec.n_src);
    mt_probe_record_free(&p->rec);
    free(p);
}

void mt_labelled_attribution_free(mt_labelled_attribution *a)
{
    if (!a) return;
    free_strings(a->row_labels, a->attr.rows);
    free_strings(a->col_labels, a->attr.cols);
    free_strings(a->row_shown, a->attr.rows);
    free_strings(a->col_shown, a->attr.cols);
    free(a->contrast);
    free(a->contrast_shown);
    mt_attribution_free(&a->attr);
    free(a);
}

static void request_free(mt_worker_request *r)
{
    for (int i = 0; i < r->n; i++) free(r->texts[i]);
    free(r->texts);
    memset(r, 0, sizeof *r);
}

static void forget_last(mt_worker *w)
{
    if (!w->have_last) return;
    request_free(&w->last);
    mt_decode_result_free(&w->last_res);
    w->have_last = 0;
}

static void on_token(void *user, const mt_decode_event *e)
{
    mt_worker *w = user;
    void (*deliver)(void *, unsigned long, int, const char *) =
        e->final ? w->sink.final : w->sink.partial;
    if (!deliver) return;
    double t = mt_now_s();
    if (!e->final && t - w->last_partial[e->sentence] < w->partial_interval) return;
    w->last_partial[e->sentence] = t;
    char *text = mt_tokenizer_decode(w->runner->tok, e->tokens, (size_t)e->n_tokens);
    deliver(w->sink.user, w->running, e->sentence, text ? text : "");
    free(text);
}

/* The piece of an id ("?" when the tokenizer does not know it). */
static char *piece_of(const mt_tokenizer *tok, int32_t id)
{
    const char *piece = mt_tokenizer_id_to_piece(tok, id);
    return mt_xstrdup(piece ? piece : "?");
}

/* What an axis shows for an id (mt_tokenizer_label). */
static char *shown_of(const mt_tokenizer *tok, int32_t id)
{
    char label[256];
    return mt_xstrdup(mt_tokenizer_label(tok, id, label, sizeof label));
}

/* n strings, one per id, malloc'd (with a NULL after them). */
static char **strings_of(const mt_tokenizer *tok, const int32_t *ids, int n,
                         char *(*of)(const mt_tokenizer *, int32_t))
{
    char **out = mt_xcalloc((size_t)n + 1, sizeof *out);
    for (int i = 0; i < n; i++) out[i] = of(tok, ids[i]);
    return out;
}

static void run_probe(mt_worker *w, int text)
{
    if (!w->have_last || text < 0 || text >= w->last.n || w->last_res.cancelled) return;
    const mt_tokenizer *tok = w->runner->tok;
    int *ids = NULL;
    size_t n = 0;
    mt_labelled_probe *probe = mt_xcalloc(1, sizeof *probe);
    int rc = mt_source_encode(w->runner->model, tok, w->last.texts[text], &ids, &n);
    if (rc == 0) {
        const mt_hypothesis *h = &w->last_res.hyps[text];
        mt_probe_opts o = {0};
        rc = mt_probe_run(w->runner->model, ids, (int)n, h->ids, h->n_ids, &o, &probe->rec);
    }
    free(ids);
    if (rc != 0) {
        mt_labelled_probe_free(probe);
        if (w->sink.probe_failed)
            w->sink.probe_failed(w->sink.user, w->last.id, text, mt_last_error());
        return;
    }
    const mt_probe_record *r = &probe->rec;
    probe->labels = strings_of(tok, r->tokens, r->n_tokens, piece_of);
    probe->src_labels = strings_of(tok, r->src, r->n_src, piece_of);
    probe->shown = strings_of(tok, r->tokens, r->n_tokens, shown_of);
    probe->src_shown = strings_of(tok, r->src, r->n_src, shown_of);
    if (w->sink.probe) w->sink.probe(w->sink.user, w->last.id, text, probe);
    else mt_labelled_probe_free(probe);
}

static void run_attribution(mt_worker *w, int text, mt_attr_opts *o, char *contrast)
{
    if (!w->have_last || text < 0 || text >= w->last.n || w->last_res.cancelled) {
        free(contrast);
        return;
    }
    const mt_tokenizer *tok = w->runner->tok;
    int *ids = NULL;
    size_t n = 0;
    mt_labelled_attribution *la = mt_xcalloc(1, sizeof *la);
    la->contrast = contrast;
    int rc = 0;
    if (contrast && (o->contrast = mt_tokenizer_find_token(tok, contrast)) < 0)
        rc = mt_error("contrast %s", mt_last_error());
    if (rc == 0) rc = mt_source_encode(w->runner->model, tok, w->last.texts[text], &ids, &n);
    if (rc == 0) {
        const mt_hypothesis *h = &w->last_res.hyps[text];
        o->cancel = &w->cancel; /* a newer request stops it between passes */
        rc = mt_attribute(w->runner->model, ids, (int)n, h->ids, h->n_ids, o, &la->attr);
    }
    free(ids);
    if (rc != 0) {
        mt_labelled_attribution_free(la);
        if (atomic_load(&w->cancel)) return; /* cancelled: a newer request or attribution reports */
        if (w->sink.attribution_failed)
            w->sink.attribution_failed(w->sink.user, w->last.id, text, mt_last_error());
        return;
    }
    const mt_attribution *at = &la->attr;
    la->row_labels = strings_of(tok, at->row_ids, at->rows, piece_of);
    la->col_labels = strings_of(tok, at->col_ids, at->cols, piece_of);
    la->row_shown = strings_of(tok, at->row_ids, at->rows, shown_of);
    la->col_shown = strings_of(tok, at->col_ids, at->cols, shown_of);
    if (o->contrast >= 0) la->contrast_shown = shown_of(tok, o->contrast);
    if (w->sink.attribution) w->sink.attribution(w->sink.user, w->last.id, text, la);
    else mt_labelled_attribution_free(la);
}

static void run_request(mt_worker *w, mt_worker_request *req)
{
    /* the OpenMP team size is per thread: this worker's share of the cores */
    if (req->threads > 0) omp_set_num_threads(req->threads);
    w->running = req->id;
    w->last_partial = mt_xcalloc((size_t)req->n + 1, sizeof *w->last_partial);
    mt_decode_opts o;
    mt_decode_opts_init(&o);
    o.beam = req->beam;
    o.max_new_tokens = req->max_new_tokens;
    o.on_token = on_token;
    o.user = w;
    o.cancel = &w->cancel;
    mt_decode_result res;
    int rc = mt_translate(w->runner->model, w->runner->tok, (const char *const *)req->texts, req->n,
                          0, &o, &res);
    free(w->last_partial);
    w->last_partial = NULL;
    if (rc != 0) {
        if (w->sink.failed)
            w->sink.failed(w->sink.user, req->id, res.failed_input, mt_last_error());
        request_free(req);
        return;
    }
    if (w->sink.done) w->sink.done(w->sink.user, req->id, &res);
    forget_last(w);
    w->last = *req;
    w->last_res = res;
    w->have_last = 1;
    if (req->probe_text >= 0) run_probe(w, req->probe_text);
}

static void *worker_main(void *arg)
{
    mt_worker *w = arg;
    w->runner = mt_runner_open(w->dir, w->device, w->runner_flags);
    if (!w->runner && w->sink.load_failed) w->sink.load_failed(w->sink.user, mt_last_error());
    if (w->runner && w->sink.loaded) w->sink.loaded(w->sink.user, w->runner);
    pthread_mutex_lock(&w->lock);
    for (;;) {
        while (!w->stop && !w->pending.texts && w->probe_request < 0 && w->attr_request < 0)
            pthread_cond_wait(&w->wake, &w->lock);
        if (w->stop) break;
        mt_worker_request req = w->pending;
        int probe = w->probe_request, attr = w->attr_request;
        mt_attr_opts attr_opts = w->attr_opts;
        char *contrast = w->attr_contrast;
        w->attr_contrast = NULL;
        memset(&w->pending, 0, sizeof w->pending);
        w->probe_request = w->attr_request = -1;
        w->attributing = !req.texts && attr >= 0;
        atomic_store(&w->cancel, 0);
        pthread_mutex_unlock(&w->lock);
        if (!w->runner) request_free(&req);
        else if (req.texts) run_request(w, &req);
        else run_probe(w, probe);
        if (w->runner && !req.texts) run_attribution(w, attr, &attr_opts, contrast);
        else free(contrast);
        pthread_mutex_lock(&w->lock);
        w->attributing = 0;
    }
    pthread_mutex_unlock(&w->lock);
    forget_last(w);
    mt_runner_close(w->runner);
    return NULL;
}

mt_worker *mt_worker_start(const char *dir, const char *device, unsigned runner_flags,
                           double partial_interval, const mt_worker_sink *sink)
{
    mt_worker *w = mt_xcalloc(1, sizeof *w);
    w->dir = mt_xstrdup(dir);
    w->device = device ? mt_xstrdup(device) : NULL;
    w->runner_flags = runner_flags;
    w->partial_interval = partial_interval;
    w->sink = *sink;
    w->probe_request = w->attr_request = -1;
    atomic_init(&w->cancel, 0);
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->wake, NULL);
    /* signals go to the caller's threads only: the worker (and the OpenMP threads it starts)
     * inherit a mask that blocks them */
    sigset_t all, old;
    sigfillset(&all);
    const int crash[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
    for (size_t i = 0; i < sizeof crash / sizeof crash[0]; i++) sigdelset(&all, crash[i]);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int err = pthread_create(&w->thread, NULL, worker_main, w);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (err) {
        mt_error("%s: cannot start a worker thread: %s", dir, strerror(err));
        pthread_cond_destroy(&w->wake);
        pthread_mutex_destroy(&w->lock);
        free(w->dir);
        free(w->device);
        free(w);
        return NULL;
    }
    return w;
}

void mt_worker_submit(mt_worker *w, const mt_worker_request *req)
{
    pthread_mutex_lock(&w->lock);
    request_free(&w->pending);
    w->pending = *req;
    w->probe_request = w->attr_request = -1;
    free(w->attr_contrast);
    w->attr_contrast = NULL;
    atomic_store(&w->cancel, 1);
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->lock);
}

void mt_worker_probe(mt_worker *w, int text)
{
    pthread_mutex_lock(&w->lock);
    if (!w->pending.texts) {
        w->probe_request = text;
        pthread_cond_signal(&w->wake);
    }
    pthread_mutex_unlock(&w->lock);
}

void mt_worker_attribute(mt_worker *w, int text, const mt_attr_opts *o, const char *contrast)
{
    pthread_mutex_lock(&w->lock);
    if (!w->pending.texts) {
        w->attr_request = text;
        w->attr_opts = *o;
        free(w->attr_contrast);
        w->attr_contrast = contrast ? mt_xstrdup(contrast) : NULL;
        if (w->attributing) atomic_store(&w->cancel, 1); /* the newer one wins, as requests do */
        pthread_cond_signal(&w->wake);
    }
    pthread_mutex_unlock(&w->lock);
}

void mt_worker_cancel(mt_worker *w)
{
    pthread_mutex_lock(&w->lock);
    request_free(&w->pending);
    w->probe_request = w->attr_request = -1;
    free(w->attr_contrast);
    w->attr_contrast = NULL;
    atomic_store(&w->cancel, 1);
    pthread_mutex_unlock(&w->lock);
}

void mt_worker_stop(mt_worker *w)
{
    pthread_mutex_lock(&w->lock);
    w->stop = 1;
    request_free(&w->pending);
    atomic_store(&w->cancel, 1);
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->lock);
    pthread_join(w->thread, NULL);
    pthread_cond_destroy(&w->wake);
    pthread_mutex_destroy(&w->lock);
    free(w->attr_contrast);
    free(w->dir);
    free(w->device);
    free(w);
}
