/* Model panes and what they translate: adding and removing panes (each with its worker),
 * sending the editor's segments as a request, asking for probes. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mtlab/bundle.h"
#include "mtlab/error.h"
#include "mtlab/runner.h"
#include "tui/app.h"
#include "tui/format.h"

static void pane_clear_results(tui_pane *p)
{
    for (int i = 0; i < p->n_hyps; i++) free(p->hyps[i]);
    free(p->hyps);
    free(p->final);
    p->hyps = NULL;
    p->final = NULL;
    p->n_hyps = 0;
    free(p->worker_seg);
    p->worker_seg = NULL;
    p->n_worker = p->n_cached = 0;
    free(p->request_error);
    p->request_error = NULL;
}

static void pane_clear_attr(tui_pane *p)
{
    mt_labelled_probe_free(p->attr);
    p->attr = NULL;
    mt_labelled_attribution_free(p->attr_raw);
    p->attr_raw = NULL;
    free(p->attr_error);
    p->attr_error = NULL;
    p->attr_pending = 0;
}

static void pane_clear_probe(tui_pane *p)
{
    mt_labelled_probe_free(p->probe);
    p->probe = NULL;
    free(p->probe_error);
    p->probe_error = NULL;
    p->probe_pending = 0;
}

/* What names the pane's weights for the result cache: the bundle's real path, the device, the
 * precision and the weights file's size and modification time (a run's best/ is rewritten as
 * it trains). */
char *tui_pane_model_key(const char *dir, const char *device, int precision)
{
    char real[PATH_MAX], path[PATH_MAX + 32], key[2 * PATH_MAX + 96];
    struct stat st;
    if (!realpath(dir, real)) snprintf(real, sizeof real, "%s", dir);
    snprintf(path, sizeof path, "%s/model.safetensors", real);
    if (stat(path, &st) != 0) memset(&st, 0, sizeof st);
    snprintf(key, sizeof key, "%s|%s|%s|%lld|%lld.%09ld", real, device ? device : "cpu",
             mt_precision_name(mt_runner_precision((unsigned)precision)), (long long)st.st_size,
             (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
    return mt_xstrdup(key);
}

int tui_pane_add(tui_app *a, const char *dir, const char *device, int precision)
{
    if (a->n_panes == TUI_MAX_PANES)
        return mt_error("at most %d model panes; remove one first (F5)", TUI_MAX_PANES);
    tui_pane *p = mt_xcalloc(1, sizeof *p);
    p->id = ++a->next_pane_id;
    p->dir = mt_xstrdup(dir);
    p->model_key = tui_pane_model_key(dir, device, precision);
    mt_bundle_name(p->name, sizeof p->name, dir);
    p->beam = a->default_beam;
    p->probe_segment = -1;
    p->attr_segment = -1;
    p->heat_kind = -1;
    p->heat_head = -1;
    /* per row by default: every map readable at once; F12 moves to the shared raw scale */
    p->heat_norm = TUI_NORM_ROW;
    p->precision = precision;
    p->worker = tui_worker_start(p->id, dir, device, precision, &a->q);
    if (!p->worker) {
        free(p->model_key);
        free(p->dir);
        free(p);
        return -1;
    }
    a->panes[a->n_panes++] = p;
    tui_log_add(&a->log, TUI_LOG_INFO, "loading %s on %s%s%s", dir, device ? device : "cpu",
                precision ? " in " : "",
                precision ? mt_precision_name(mt_runner_precision((unsigned)precision)) : "");
    a->relayout = 1;
    return 0;
}

void tui_pane_remove(tui_app *a, int index)
{
    char lang[sizeof a->ed_lang];
    snprintf(lang, sizeof lang, "%s", tui_editor_language(a));
    tui_pane *p = a->panes[index];
    tui_worker_stop(p->worker);
    tui_log_add(&a->log, TUI_LOG_INFO, "closed %s", p->dir);
    pane_clear_results(p);
    pane_clear_probe(p);
    pane_clear_attr(p);
    free(p->load_error);
    free(p->model_key);
    free(p->dir);
    free(p);
    memmove(a->panes + index, a->panes + index + 1,
            (size_t)(a->n_panes - index - 1) * sizeof *a->panes);
    a->n_panes--;
    if (a->focus >= a->n_panes) a->focus = a->n_panes - 1;
    a->relayout = 1;
    /* the last pane of the editor's language closed: the text goes to the panes of the
     * language it writes now */
    if (strcmp(lang, tui_editor_language(a)) && a->sent.n > 0) tui_translate(a, NULL);
}

tui_pane *tui_pane_by_id(tui_app *a, int id)
{
    for (int i = 0; i < a->n_panes; i++)
        if (a->panes[i]->id == id) return a->panes[i];
    return NULL;
}

void tui_sent_free(tui_sent *s)
{
    for (int i = 0; i < s->n; i++) {
        free(s->texts[i]);
        free(s->spans[i]);
    }
    free(s->texts);
    free(s->lines);
    free(s->spans);
    free(s->n_spans);
    memset(s, 0, sizeof *s);
}

/* Snapshot the editor's segments (and their entities) as the text to translate. */
static void snapshot(tui_app *a)
{
    tui_sent_free(&a->sent);
    tui_segment *segs;
    int n = tui_editor_segments(&a->ed, &segs);
    tui_sent *s = &a->sent;
    s->n = n;
    s->texts = mt_xcalloc((size_t)n + 1, sizeof *s->texts);
    s->lines = mt_xcalloc((size_t)n + 1, sizeof *s->lines);
    s->spans = mt_xcalloc((size_t)n + 1, sizeof *s->spans);
    s->n_spans = mt_xcalloc((size_t)n + 1, sizeof *s->n_spans);
    for (int i = 0; i < n; i++) {
        size_t len = segs[i].end - segs[i].start;
        s->texts[i] = mt_xmalloc(len + 1);
        memcpy(s->texts[i], a->ed.text + segs[i].start, len);
        s->texts[i][len] = '\0';
        s->lines[i] = segs[i].line;
        if (mt_source_entities(&s->spans[i], &s->n_spans[i], s->texts[i], a->lexicon) != 0) {
            s->spans[i] = NULL;
            s->n_spans[i] = 0;
        }
    }
    free(segs);
    a->sent_version = a->ed.version;
}

int tui_cursor_segment(const tui_app *a)
{
    int line = tui_editor_cursor_line(&a->ed);
    for (int i = 0; i < a->sent.n; i++)
        if (a->sent.lines[i] >= line) return a->sent.lines[i] == line || i == 0 ? i : i - 1;
    return a->sent.n > 0 ? a->sent.n - 1 : 0;
}

/* The cores shared between the loaded panes, so concurrent models do not oversubscribe. */
static int threads_per_pane(const tui_app *a)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int loaded = 0;
    for (int i = 0; i < a->n_panes; i++) loaded += a->panes[i]->loaded;
    long t = cores / (loaded > 0 ? loaded : 1);
    return t < 1 ? 1 : (int)t;
}

int tui_pane_segment(const tui_pane *p, int k)
{
    return k >= 0 && k < p->n_worker ? p->worker_seg[k] : -1;
}

/* Send segments segs[0..m) of a->sent to the pane's worker under request (probe: the one whose
 * probes to record, or -1). */
static void send_to_worker(tui_app *a, tui_pane *p, unsigned long request, const int *segs, int m,
                           int probe)
{
    char **texts = mt_xmalloc((size_t)m * sizeof *texts);
    free(p->worker_seg);
    p->worker_seg = mt_xmalloc((size_t)m * sizeof *p->worker_seg);
    p->n_worker = m;
    int probe_text = -1;
    for (int k = 0; k < m; k++) {
        texts[k] = mt_xstrdup(a->sent.texts[segs[k]]);
        p->worker_seg[k] = segs[k];
        if (segs[k] == probe) probe_text = k;
    }
    p->busy = 1;
    tui_worker_submit(p->worker, request, texts, m, p->beam, threads_per_pane(a), probe_text);
}

static void submit(tui_app *a, tui_pane *p, unsigned long request)
{
    pane_clear_results(p);
    p->request = request;
    p->scroll = 0;
    p->have_stats = 0;
    int n = a->sent.n;
    if (n == 0) {
        tui_worker_cancel(p->worker);
        p->busy = 0;
        pane_clear_probe(p);
        pane_clear_attr(p);
        return;
    }
    p->hyps = mt_xcalloc((size_t)n, sizeof *p->hyps);
    p->final = mt_xcalloc((size_t)n, 1);
    p->n_hyps = n;
    snprintf(p->mode, sizeof p->mode, "beam=%d", p->beam);
    /* probes describe one request's text and output: a new request makes them stale in any
     * view (a map kept while the pane showed its text would describe the old text) */
    pane_clear_probe(p);
    pane_clear_attr(p);
    int probe = -1, map = -1;
    if (p->view == TUI_VIEW_HEATMAP) map = tui_cursor_segment(a);
    if (map >= 0 && p->heat_kind != TUI_HEAT_ATTRIBUTION) {
        probe = p->probe_segment = map;
        p->probe_request = request;
        p->probe_pending = 1;
    }
    /* the segment whose map is wanted is decoded again: the cache holds no probes, and the
     * worker attributes only the translations of its last request (asked when it is done) */
    int *misses = mt_xmalloc((size_t)n * sizeof *misses), m = 0;
    for (int i = 0; i < n; i++) {
        const char *hit =
            i == map ? NULL : tui_cache_get(&a->cache, p->model_key, p->mode, a->sent.texts[i]);
        if (hit) {
            p->hyps[i] = mt_xstrdup(hit);
            p->final[i] = 1;
            p->n_cached++;
        } else {
            misses[m++] = i;
        }
    }
    tui_log_add(&a->log, TUI_LOG_INFO, "%s: translating %d of %d segment%s (%d from the cache)",
                p->name, m, n, n == 1 ? "" : "s", p->n_cached);
    if (m > 0) {
        send_to_worker(a, p, request, misses, m, probe);
    } else {
        tui_worker_cancel(p->worker);
        p->busy = 0;
        p->seconds = 0;
        p->tokens = p->state_bytes = p->model_state_bytes = 0;
        p->have_stats = 1;
    }
    free(misses);
}

/* A pane of another source language than the editor's: it shows no translation of the text
 * (it says why, draw_pane.c), its worker stops and no map stays pending. */
static void hold(tui_pane *p, unsigned long request)
{
    pane_clear_results(p);
    pane_clear_probe(p);
    pane_clear_attr(p);
    tui_worker_cancel(p->worker);
    p->request = request;
    p->busy = 0;
    p->scroll = 0;
    p->have_stats = 0;
}

void tui_translate(tui_app *a, tui_pane *only)
{
    /* text that changed since the last request goes to every pane, whoever asked */
    if (a->sent_version != a->ed.version) only = NULL;
    if (!only) snapshot(a);
    unsigned long request = ++a->next_request;
    for (int i = 0; i < a->n_panes; i++) {
        tui_pane *p = a->panes[i];
        if (!p->loaded || (only && p != only)) continue;
        if (tui_pane_feeds(a, p)) submit(a, p, request);
        else hold(p, request);
    }
    a->dirty = 1;
}

/* The attribution of the cursor's segment with the pane's method and contrast, unless the pane
 * has it or has asked for it. */
static void request_attr(tui_app *a, tui_pane *p)
{
    int seg = tui_cursor_segment(a);
    if (p->attr_segment == seg && p->attr_request == p->request &&
        p->attr_of_method == p->attr_method && !strcmp(p->attr_of_contrast, p->attr_contrast) &&
        (p->attr || p->attr_pending || p->attr_error))
        return;
    if (seg >= p->n_hyps || !p->final[seg]) return;
    pane_clear_attr(p);
    p->attr_segment = seg;
    p->attr_request = p->request;
    p->attr_of_method = p->attr_method;
    snprintf(p->attr_of_contrast, sizeof p->attr_of_contrast, "%s", p->attr_contrast);
    for (int k = 0; k < p->n_worker; k++)
        if (p->worker_seg[k] == seg) {
            p->attr_pending = 1;
            tui_worker_attribute(p->worker, k, p->attr_method,
                                 p->attr_contrast[0] ? p->attr_contrast : NULL);
            return;
        }
    /* a segment from the cache: the worker decodes it again, then is asked (events.c) */
    send_to_worker(a, p, p->request, &seg, 1, -1);
    p->n_cached = p->n_hyps - 1;
    p->attr_segment = -1;
}

void tui_request_probe(tui_app *a, tui_pane *p)
{
    if (p->view != TUI_VIEW_HEATMAP || !p->loaded || p->busy || a->sent.n == 0) return;
    if (p->heat_kind == TUI_HEAT_ATTRIBUTION) {
        request_attr(a, p);
        return;
    }
    int seg = tui_cursor_segment(a);
    if (p->probe_segment == seg && p->probe_request == p->request &&
        (p->probe || p->probe_pending || p->probe_error))
        return;
    if (seg >= p->n_hyps || !p->final[seg]) return;
    pane_clear_probe(p);
    p->probe_segment = seg;
    p->probe_request = p->request;
    p->probe_pending = 1;
    for (int k = 0; k < p->n_worker; k++)
        if (p->worker_seg[k] == seg) {
            tui_worker_probe(p->worker, k);
            return;
        }
    /* a segment from the cache: the worker decodes it again, recording its probes */
    send_to_worker(a, p, p->request, &seg, 1, seg);
    p->n_cached = p->n_hyps - 1;
}

void tui_refresh_entities(tui_app *a)
{
    if (a->spans_version == a->ed.version) return;
    free(a->ed_spans);
    a->ed_spans = NULL;
    a->n_ed_spans = 0;
    if (mt_source_entities(&a->ed_spans, &a->n_ed_spans, a->ed.text, a->lexicon) != 0) {
        a->ed_spans = NULL;
        a->n_ed_spans = 0;
    }
    a->spans_version = a->ed.version;
}
