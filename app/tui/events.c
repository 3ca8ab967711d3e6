/* What the workers report, applied to the panes on the UI thread. Events of a request the
 * pane no longer shows (the text changed since) are dropped. */
#include <stdlib.h>
#include <string.h>

#include "tui/console/console.h"
#include "mtlab/error.h"
#include "tui/app.h"
#include "tui/format.h"

static void loaded(tui_app *a, tui_pane *p, tui_event *ev)
{
    char lang[sizeof a->ed_lang];
    snprintf(lang, sizeof lang, "%s", tui_editor_language(a));
    p->loaded = 1;
    snprintf(p->info, sizeof p->info, "%s", ev->info);
    snprintf(p->src_lang, sizeof p->src_lang, "%s", ev->src_lang);
    snprintf(p->tgt_lang, sizeof p->tgt_lang, "%s", ev->tgt_lang);
    tui_log_add(&a->log, TUI_LOG_INFO, "%s", ev->text ? ev->text : p->dir);
    /* text not sent yet goes to every pane when the debounce ends; a pane that changes the
     * editor's language (one before the others in pane order loaded after them) re-routes
     * the text sent to every pane */
    if (a->sent.n > 0 && a->sent_version == a->ed.version)
        tui_translate(a, strcmp(lang, tui_editor_language(a)) ? NULL : p);
}

static void take_probe(tui_app *a, tui_pane *p, tui_event *ev)
{
    p->probe_pending = 0;
    if (tui_pane_segment(p, ev->segment) != p->probe_segment) return;
    if (ev->kind == TUI_EV_PROBE_FAILED) {
        free(p->probe_error);
        p->probe_error = mt_xstrdup(ev->text ? ev->text : "probe failed");
        tui_log_add(&a->log, TUI_LOG_ERROR, "%s: probes: %s", p->name, p->probe_error);
        return;
    }
    mt_labelled_probe_free(p->probe);
    p->probe = ev->probe;
    ev->probe = NULL;
    if (p->heat_kind == TUI_HEAT_ATTRIBUTION) return; /* needs no probes: it stays shown */
    const mt_probe_record *r = &p->probe->rec;
    /* a map asked for before the probes came (ui.heatmap) that the record lacks is replaced
     * by the first there is, and the notice says so: never silently another layer or head */
    if (p->heat_kind >= 0 && tui_heat_count(r, (mt_probe_kind)p->heat_kind) == 0)
        tui_notice(a, "%s records no %s maps", p->name,
                   mt_probe_kind_name((mt_probe_kind)p->heat_kind));
    if (p->heat_kind < 0 || tui_heat_count(r, (mt_probe_kind)p->heat_kind) == 0) {
        p->heat_kind = tui_heat_next_kind(r, -1);
        p->heat_nth = 0;
        p->heat_head = -1;
    }
    int count = p->heat_kind >= 0 ? tui_heat_count(r, (mt_probe_kind)p->heat_kind) : 0;
    if (p->heat_kind >= 0 && p->heat_layer_asked > 0) {
        char layers[160];
        int nth = tui_heat_nth_of_layer(r, (mt_probe_kind)p->heat_kind, p->heat_layer_asked - 1,
                                        layers, sizeof layers);
        if (nth < 0)
            tui_notice(a, "%s has %s maps at layers %s, not %d: showing the first", p->name,
                       mt_probe_kind_name((mt_probe_kind)p->heat_kind), layers,
                       p->heat_layer_asked);
        p->heat_nth = nth < 0 ? 0 : nth;
    }
    p->heat_layer_asked = 0;
    if (p->heat_kind >= 0 && p->heat_nth >= count) {
        tui_notice(a, "%s has %d %s layers, not %d: showing layer 1", p->name, count,
                   mt_probe_kind_name((mt_probe_kind)p->heat_kind), p->heat_nth + 1);
        p->heat_nth = 0;
    }
    int m = p->heat_kind >= 0 ? tui_heat_find(r, (mt_probe_kind)p->heat_kind, p->heat_nth) : -1;
    if (m >= 0 && p->heat_head >= r->maps[m].heads) {
        tui_notice(a, "%s's %s has %d heads, not %d: showing their mean", p->name,
                   mt_probe_map_name(&r->maps[m]), r->maps[m].heads, p->heat_head + 1);
        p->heat_head = -1;
    }
    p->heat_row0 = p->heat_col0 = 0;
}

/* An attribution of the request shown: kept when it is of the segment, method and contrast
 * last asked for (an older one, of a method since changed, is dropped). */
static void take_attr(tui_app *a, tui_pane *p, tui_event *ev)
{
    if (tui_pane_segment(p, ev->segment) != p->attr_segment) return;
    if (ev->kind == TUI_EV_ATTRIBUTION &&
        ((int)ev->attr->attr.method != p->attr_of_method ||
         strcmp(ev->attr->contrast ? ev->attr->contrast : "", p->attr_of_contrast) != 0))
        return;
    p->attr_pending = 0;
    if (ev->kind == TUI_EV_ATTRIBUTION_FAILED) {
        free(p->attr_error);
        p->attr_error = mt_xstrdup(ev->text ? ev->text : "attribution failed");
        tui_log_add(&a->log, TUI_LOG_ERROR, "%s: attribution: %s", p->name, p->attr_error);
        return;
    }
    mt_labelled_probe_free(p->attr);
    mt_labelled_attribution_free(p->attr_raw);
    p->attr = ev->probe;
    p->attr_raw = ev->attr;
    ev->probe = NULL;
    ev->attr = NULL;
}

static void request_event(tui_app *a, tui_pane *p, tui_event *ev)
{
    switch (ev->kind) {
    case TUI_EV_PARTIAL:
    case TUI_EV_SEGMENT: {
        /* the worker numbers the texts it was sent: the segments the cache did not hold */
        int seg = tui_pane_segment(p, ev->segment);
        if (seg < 0 || seg >= p->n_hyps) return;
        if (ev->kind == TUI_EV_SEGMENT) {
            tui_cache_put(&a->cache, p->model_key, p->mode, a->sent.texts[seg], ev->text);
            p->final[seg] = 1;
        }
        free(p->hyps[seg]);
        p->hyps[seg] = ev->text;
        ev->text = NULL;
        break;
    }
    case TUI_EV_DONE: {
        p->busy = 0;
        if (ev->cancelled) return;
        /* the attribution map is asked for once the translation is done */
        if (p->view == TUI_VIEW_HEATMAP && p->heat_kind == TUI_HEAT_ATTRIBUTION)
            tui_request_probe(a, p);
        p->seconds = ev->seconds;
        p->tokens = ev->tokens;
        p->state_bytes = ev->state_bytes;
        p->model_state_bytes = ev->model_state_bytes;
        p->have_stats = 1;
        char t[32], mem[32], state[32], search[32];
        tui_format_search(search, sizeof search, p->beam);
        tui_format_seconds(t, sizeof t, ev->seconds);
        tui_format_bytes(mem, sizeof mem, ev->state_bytes);
        tui_format_bytes(state, sizeof state, ev->model_state_bytes);
        tui_log_add(&a->log, TUI_LOG_INFO,
                    "%s: %d segment%s translated (%d from the cache), "
                    "%zu tokens in %s (%.1f tokens/s), %s, model state %s a sentence, working "
                    "set %s",
                    p->name, p->n_worker, p->n_worker == 1 ? "" : "s", p->n_cached, ev->tokens, t,
                    ev->seconds > 0 ? (double)ev->tokens / ev->seconds : 0.0, search, state, mem);
        break;
    }
    case TUI_EV_FAILED:
        p->busy = 0;
        p->probe_pending = 0;
        free(p->request_error);
        p->request_error = mt_xstrdup(ev->text ? ev->text : "translation failed");
        tui_log_add(&a->log, TUI_LOG_ERROR, "%s: %s", p->name, p->request_error);
        break;
    case TUI_EV_PROBE:
    case TUI_EV_PROBE_FAILED: take_probe(a, p, ev); break;
    case TUI_EV_ATTRIBUTION:
    case TUI_EV_ATTRIBUTION_FAILED: take_attr(a, p, ev); break;
    default: break;
    }
}

static void comet_event(tui_app *a, tui_event *ev)
{
    tui_comet_take(a->comet, ev);
    if (ev->kind == TUI_EV_COMET_FAILED) tui_notice(a, "COMET: %s", tui_comet_error(a->comet));
    a->dirty = 1;
}

void tui_handle_events(tui_app *a)
{
    tui_event *ev = tui_queue_drain(&a->q);
    while (ev) {
        tui_event *next = ev->next;
        tui_pane *p = tui_pane_by_id(a, ev->pane_id);
        if (ev->kind == TUI_EV_CONSOLE) {
            tui_console_pump(a);
        } else if (ev->kind == TUI_EV_COMET || ev->kind == TUI_EV_COMET_FAILED) {
            if (a->comet) comet_event(a, ev);
        } else if (p) {
            a->dirty = 1;
            switch (ev->kind) {
            case TUI_EV_LOADED: loaded(a, p, ev); break;
            case TUI_EV_LOAD_FAILED:
                free(p->load_error);
                p->load_error = mt_xstrdup(ev->text ? ev->text : "cannot load the bundle");
                tui_log_add(&a->log, TUI_LOG_ERROR, "%s", p->load_error);
                break;
            default:
                if (ev->request == p->request) request_event(a, p, ev);
                break;
            }
        }
        tui_event_free(ev);
        ev = next;
    }
}
