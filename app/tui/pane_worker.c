/* The engine's worker reporting through the UI's event queue (tui/pane_worker.h). */
#include "tui/pane_worker.h"

#include <stdio.h>
#include <stdlib.h>

#include "mtlab/error.h"
#include "mtlab/worker.h"
#include "tui/format.h"

/* A partial hypothesis is sent at most this often per segment (the final one always). */
#define PARTIAL_INTERVAL_S 0.02

struct tui_worker {
    int pane_id;
    tui_queue *q;
    mt_worker *engine;
};

static void push_text(tui_worker *w, tui_event_kind kind, unsigned long request, int segment,
                      const char *text)
{
    tui_event *ev = tui_event_new(kind, w->pane_id, request);
    ev->segment = segment;
    ev->text = mt_xstrdup(text ? text : "");
    tui_queue_push(w->q, ev);
}

static void on_loaded(void *user, const mt_runner *r)
{
    tui_worker *w = user;
    tui_event *ev = tui_event_new(TUI_EV_LOADED, w->pane_id, 0);
    char params[32];
    tui_format_count(params, sizeof params, r->params);
    const mt_model_config *cfg = mt_model_get_config(r->model);
    snprintf(ev->info, sizeof ev->info, "%s, %s params, %s", cfg->arch, params, r->backend->name);
    /* only a recorded direction: a bundle without one is read as the Bible's es -> en, which
     * the panes must not show as if the bundle said so */
    if (cfg->langs_recorded) {
        snprintf(ev->src_lang, sizeof ev->src_lang, "%s", cfg->src_lang);
        snprintf(ev->tgt_lang, sizeof ev->tgt_lang, "%s", cfg->tgt_lang);
    }
    ev->text = mt_xmalloc(256);
    snprintf(ev->text, 256, "loaded %s (%s) in %.2f s", r->dir, ev->info, r->load_seconds);
    tui_queue_push(w->q, ev);
}

static void on_load_failed(void *user, const char *why)
{
    push_text(user, TUI_EV_LOAD_FAILED, 0, -1, why);
}

static void on_partial(void *user, unsigned long request, int segment, const char *hyp)
{
    push_text(user, TUI_EV_PARTIAL, request, segment, hyp);
}

static void on_final(void *user, unsigned long request, int segment, const char *hyp)
{
    push_text(user, TUI_EV_SEGMENT, request, segment, hyp);
}

static void on_done(void *user, unsigned long request, const mt_decode_result *res)
{
    tui_worker *w = user;
    tui_event *ev = tui_event_new(TUI_EV_DONE, w->pane_id, request);
    ev->seconds = res->seconds;
    ev->tokens = res->tokens;
    ev->state_bytes = res->state_bytes;
    ev->model_state_bytes = res->model_state_bytes;
    ev->cancelled = res->cancelled;
    tui_queue_push(w->q, ev);
}

static void on_failed(void *user, unsigned long request, int segment, const char *why)
{
    push_text(user, TUI_EV_FAILED, request, segment, why);
}

static void on_probe(void *user, unsigned long request, int segment, mt_labelled_probe *probe)
{
    tui_worker *w = user;
    tui_event *ev = tui_event_new(TUI_EV_PROBE, w->pane_id, request);
    ev->segment = segment;
    ev->probe = probe;
    tui_queue_push(w->q, ev);
}

static void on_probe_failed(void *user, unsigned long request, int segment, const char *why)
{
    push_text(user, TUI_EV_PROBE_FAILED, request, segment, why);
}

static void on_attribution(void *user, unsigned long request, int segment,
                           mt_labelled_attribution *attr)
{
    tui_worker *w = user;
    tui_event *ev = tui_event_new(TUI_EV_ATTRIBUTION, w->pane_id, request);
    ev->segment = segment;
    ev->attr = attr;
    ev->probe = tui_heat_attribution_record(attr); /* here, off the UI thread */
    tui_queue_push(w->q, ev);
}

static void on_attribution_failed(void *user, unsigned long request, int segment, const char *why)
{
    push_text(user, TUI_EV_ATTRIBUTION_FAILED, request, segment, why);
}

tui_worker *tui_worker_start(int pane_id, const char *bundle_dir, const char *device,
                             unsigned runner_flags, tui_queue *q)
{
    tui_worker *w = mt_xcalloc(1, sizeof *w);
    w->pane_id = pane_id;
    w->q = q;
    mt_worker_sink sink = {
        .user = w,
        .loaded = on_loaded,
        .load_failed = on_load_failed,
        .partial = on_partial,
        .final = on_final,
        .done = on_done,
        .failed = on_failed,
        .probe = on_probe,
        .probe_failed = on_probe_failed,
        .attribution = on_attribution,
        .attribution_failed = on_attribution_failed,
    };
    w->engine = mt_worker_start(bundle_dir, device, runner_flags, PARTIAL_INTERVAL_S, &sink);
    if (!w->engine) {
        free(w);
        return NULL;
    }
    return w;
}

void tui_worker_submit(tui_worker *w, unsigned long request, char **texts, int n, int beam,
                       int threads, int probe_segment)
{
    mt_worker_request req = {.id = request,
                             .texts = texts,
                             .n = n,
                             .beam = beam,
                             .threads = threads,
                             .probe_text = probe_segment};
    mt_worker_submit(w->engine, &req);
}

void tui_worker_probe(tui_worker *w, int segment) { mt_worker_probe(w->engine, segment); }

void tui_worker_attribute(tui_worker *w, int segment, int method, const char *contrast)
{
    mt_attr_opts o;
    mt_attr_opts_init(&o);
    o.method = (mt_attr_method)method;
    mt_worker_attribute(w->engine, segment, &o, contrast);
}

void tui_worker_cancel(tui_worker *w) { mt_worker_cancel(w->engine); }

void tui_worker_stop(tui_worker *w)
{
    mt_worker_stop(w->engine);
    free(w);
}
