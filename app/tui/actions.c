/* What keys and mouse buttons do: every input becomes an action through the key table
 * (keys.c), then one switch applies it. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tui/console/console.h"
#include "mtlab/clock.h"
#include "tui/app.h"
#include "tui/format.h"
#include "tui/save.h"

/* Width of the editor's text rows (one column stays free for the cursor). */
static int editor_width(const tui_app *a) { return a->L.editor.w - 3; }

static void editor_changed(tui_app *a)
{
    a->edit_time = mt_now_s();
    a->dirty = 1;
}

/* The heatmap's cursor moved by (dy, dx), kept inside the shown map; the drawing scrolls to
 * it. */
static void move_cursor(tui_pane *p, int dy, int dx)
{
    const tui_probe *pr = tui_heat_pane_probe(p);
    int attribution = p->heat_kind == TUI_HEAT_ATTRIBUTION;
    int i = pr && p->heat_kind >= 0 ? tui_heat_find(&pr->rec, (mt_probe_kind)p->heat_kind,
                                                    attribution ? 0 : p->heat_nth)
                                    : -1;
    if (i < 0) return;
    const mt_probe_map *m = &pr->rec.maps[i];
    p->sel_row += dy, p->sel_col += dx;
    p->sel_row = p->sel_row < 0 ? 0 : p->sel_row >= m->rows ? m->rows - 1 : p->sel_row;
    p->sel_col = p->sel_col < 0 ? 0 : p->sel_col >= m->cols ? m->cols - 1 : p->sel_col;
}

static void scroll_pane(tui_app *a, tui_pane *p, int delta)
{
    if (p->view == TUI_VIEW_HEATMAP) {
        move_cursor(p, delta, 0);
    } else {
        p->scroll += delta;
        if (p->scroll < 0) p->scroll = 0;
    }
    a->dirty = 1;
}

/* Tab's cycle: the editor, the panes, the log when it is shown, the editor again. */
static void focus_step(tui_app *a, int dir)
{
    int count = a->n_panes, log = a->show_log;
    /* positions: 0 the editor, 1..count the panes, count + 1 the log */
    int n = count + 1 + log;
    int at = a->log_focus ? count + 1 : a->focus + 1;
    at = (at + dir + n) % n;
    tui_focus(a, at <= count ? at - 1 : -1);
    a->log_focus = at == count + 1;
}

/* The log scrolls back from its newest line (0: follow it). */
static void scroll_log(tui_app *a, int delta)
{
    int h = a->L.log.h - 2;
    int most = a->log.n > h ? a->log.n - h : 0;
    a->log_scroll -= delta;
    if (a->log_scroll > most) a->log_scroll = most;
    if (a->log_scroll < 0) a->log_scroll = 0;
    a->dirty = 1;
}

static void scroll_overlay(tui_app *a, int delta)
{
    if (a->overlay == TUI_OVERLAY_HELP) {
        a->help_scroll += delta;
        if (a->help_scroll < 0) a->help_scroll = 0;
    } else {
        /* -1 is the line to type a path on */
        a->picker_sel += delta;
        if (a->picker_sel >= a->n_picker) a->picker_sel = a->n_picker - 1;
        if (a->picker_sel < -1) a->picker_sel = -1;
    }
    a->dirty = 1;
}

/* The panes an action on "the focused pane" applies to: the focused one, or every pane when
 * the editor has the focus. */
static int target_panes(tui_app *a, tui_pane **out)
{
    if (a->focus >= 0) {
        out[0] = a->panes[a->focus];
        return 1;
    }
    for (int i = 0; i < a->n_panes; i++) out[i] = a->panes[i];
    return a->n_panes;
}

/* Ctrl-F: the editor writes the next source language of the loaded panes, and the text goes
 * to the panes of that language; a notice when there is no other. */
static void next_language(tui_app *a)
{
    const char *langs[TUI_MAX_PANES];
    int n = tui_source_languages(a, langs);
    const char *now = tui_editor_language(a);
    if (n == 0) {
        tui_notice(a, "no open pane records its source language: the editor feeds every pane");
        return;
    }
    if (n == 1) {
        tui_notice(a, "every open pane translates from %s: no other language to write", now);
        return;
    }
    int at = 0;
    while (at < n && strcasecmp(langs[at], now)) at++;
    snprintf(a->ed_lang, sizeof a->ed_lang, "%s", langs[(at + 1) % n]);
    tui_log_add(&a->log, TUI_LOG_INFO, "the editor writes %s", a->ed_lang);
    tui_translate(a, NULL);
}

static void toggle_beam(tui_app *a)
{
    tui_pane *t[TUI_MAX_PANES];
    int n = target_panes(a, t);
    if (n == 0) return;
    int beam = t[0]->beam == 1 ? TUI_BEAM : 1;
    char search[32];
    tui_format_search(search, sizeof search, beam);
    for (int i = 0; i < n; i++) {
        t[i]->beam = beam;
        tui_log_add(&a->log, TUI_LOG_INFO, "%s: %s search", t[i]->name, search);
        if (a->sent.n > 0) tui_translate(a, t[i]);
    }
}

/* Ctrl-S: what the panes show, with the segments they translated, into the working directory. */
static void save_translations(tui_app *a)
{
    if (a->sent.n == 0) {
        tui_notice(a, "nothing to save yet: no text has been translated");
        return;
    }
    tui_save_column cols[TUI_MAX_PANES];
    char search[TUI_MAX_PANES][32];
    for (int i = 0; i < a->n_panes; i++) {
        const tui_pane *p = a->panes[i];
        tui_format_search(search[i], sizeof search[i], p->beam);
        cols[i] = (tui_save_column){
            p->name,
            p->dir,
            search[i],
            p->hyps,
            p->final,
            p->n_hyps,
            {p->have_stats, p->seconds, p->tokens, p->model_state_bytes, p->state_bytes}};
    }
    FILE *tsv, *jsonl;
    char tsv_path[PATH_MAX], jsonl_path[PATH_MAX];
    if (tui_create_save_files(".", &tsv, &jsonl, tsv_path, jsonl_path, sizeof tsv_path) != 0) {
        tui_notice(a, "not saved: %s", mt_last_error());
        return;
    }
    tui_save_entities ents = {(const mt_text_span *const *)a->sent.spans, a->sent.n_spans,
                              a->lexicon};
    int rc = tui_write_translations(tsv, jsonl, a->sent.texts, a->sent.n, cols, a->n_panes, &ents);
    rc |= fclose(tsv) != 0;
    rc |= fclose(jsonl) != 0;
    if (!rc) a->saved_version = a->sent_version;
    int unfinished = 0;
    for (int i = 0; i < a->n_panes; i++)
        for (int k = 0; k < a->panes[i]->n_hyps; k++) unfinished += !a->panes[i]->final[k];
    if (rc) tui_notice(a, "not saved completely: %s (%s)", tsv_path + 2, mt_last_error());
    else
        tui_notice(a, "saved %d segment%s x %d pane%s to %s and .jsonl%s", a->sent.n,
                   a->sent.n == 1 ? "" : "s", a->n_panes, a->n_panes == 1 ? "" : "s", tsv_path + 2,
                   unfinished ? " (some translations were unfinished)" : "");
}

static void toggle_heatmap(tui_app *a)
{
    tui_pane *t[TUI_MAX_PANES];
    int n = target_panes(a, t);
    if (n == 0) return;
    tui_view v = t[0]->view == TUI_VIEW_TEXT ? TUI_VIEW_HEATMAP : TUI_VIEW_TEXT;
    for (int i = 0; i < n; i++) {
        t[i]->view = v;
        tui_request_probe(a, t[i]);
    }
}

/* m: the attribution's next method; c: its contrast, the token of the cursor's column when
 * that column is of the translation (again on the same token: no contrast). */
static void attribution_step(tui_app *a, tui_pane *p, tui_action act)
{
    if (p->heat_kind != TUI_HEAT_ATTRIBUTION) {
        tui_notice(a, "%s: the attribution map's key (F6 or Ctrl-K to the attribution map)",
                   act == TUI_ACT_HEAT_METHOD ? "m" : "c");
        return;
    }
    if (act == TUI_ACT_HEAT_METHOD) {
        p->attr_method = (p->attr_method + 1) % MT_ATTR_METHODS;
    } else {
        int split = tui_heat_pane_split(p, MT_PROBE_AXIS_SOURCE);
        if (!p->attr_raw || !tui_heat_current(a, p)) {
            tui_notice(a, "c: wait for the attribution map, then put the cursor on a column of "
                          "the translation");
            return;
        }
        if (p->sel_col < split) {
            tui_notice(a, "c: the contrast is a token of the translation: put the cursor on a "
                          "column right of the line (c again there: no contrast)");
            return;
        }
        const char *piece = p->attr_raw->col_labels[p->sel_col];
        if (!strcmp(piece, p->attr_contrast)) p->attr_contrast[0] = '\0';
        else snprintf(p->attr_contrast, sizeof p->attr_contrast, "%s", piece);
    }
    tui_request_probe(a, p);
}

static void heat_step(tui_app *a, tui_action act)
{
    if (a->focus < 0) return;
    tui_pane *p = a->panes[a->focus];
    if (act == TUI_ACT_HEAT_METHOD || act == TUI_ACT_HEAT_CONTRAST) {
        attribution_step(a, p, act);
        a->dirty = 1;
        return;
    }
    if (act == TUI_ACT_HEAT_KIND && p->heat_kind == TUI_HEAT_ATTRIBUTION && !p->probe) {
        /* the probes' first kind, once they come (events.c) */
        p->heat_kind = -1;
        tui_request_probe(a, p);
        return;
    }
    const tui_probe *pr = tui_heat_pane_probe(p);
    if (!pr || p->heat_kind < 0) return;
    const mt_probe_record *r = &pr->rec;
    switch (act) {
    case TUI_ACT_HEAT_KIND:
        p->heat_kind = tui_heat_next_kind(p->probe ? &p->probe->rec : NULL, p->heat_kind);
        p->heat_nth = 0;
        p->heat_head = -1;
        p->heat_row0 = 0;
        tui_request_probe(a, p);
        break;
    case TUI_ACT_HEAT_LAYER:
        if (p->heat_kind == TUI_HEAT_ATTRIBUTION) break; /* one map, of the whole model */
        p->heat_nth = (p->heat_nth + 1) % tui_heat_count(r, (mt_probe_kind)p->heat_kind);
        p->heat_head = -1;
        break;
    case TUI_ACT_HEAT_HEAD: {
        int m = tui_heat_find(r, (mt_probe_kind)p->heat_kind, p->heat_nth);
        int heads = m >= 0 ? r->maps[m].heads : 1;
        p->heat_head = heads > 1 ? (p->heat_head + 2) % (heads + 1) - 1 : -1;
        break;
    }
    case TUI_ACT_HEAT_NORM:
        p->heat_norm = (tui_heat_norm)((p->heat_norm + 1) % TUI_NORM_COUNT);
        break;
    case TUI_ACT_CURSOR_LEFT: move_cursor(p, 0, -1); break;
    case TUI_ACT_CURSOR_RIGHT: move_cursor(p, 0, 1); break;
    case TUI_ACT_CURSOR_UP: move_cursor(p, -1, 0); break;
    case TUI_ACT_CURSOR_DOWN: move_cursor(p, 1, 0); break;
    default: break;
    }
    a->dirty = 1;
}

static void editor_action(tui_app *a, tui_action act)
{
    tui_editor *e = &a->ed;
    switch (act) {
    case TUI_ACT_NEWLINE:
        if (tui_editor_insert_char(e, '\n'))
            tui_notice(a, "the editor is full (%d KiB)", TUI_EDITOR_MAX_BYTES / 1024);
        break;
    case TUI_ACT_BACKSPACE: tui_editor_backspace(e); break;
    case TUI_ACT_DELETE: tui_editor_delete(e); break;
    case TUI_ACT_LEFT: tui_editor_left(e); break;
    case TUI_ACT_RIGHT: tui_editor_right(e); break;
    case TUI_ACT_UP: tui_editor_up(e, editor_width(a)); break;
    case TUI_ACT_DOWN: tui_editor_down(e, editor_width(a)); break;
    case TUI_ACT_HOME: tui_editor_home(e); break;
    case TUI_ACT_END: tui_editor_end(e); break;
    case TUI_ACT_CLEAR: tui_editor_set_text(e, ""); break;
    default: return;
    }
    editor_changed(a);
    /* the heatmaps follow the segment under the cursor */
    for (int i = 0; i < a->n_panes; i++) tui_request_probe(a, a->panes[i]);
}

/* A click on a heatmap cell puts the cursor there (the layout the last frame drew). (y, x)
 * inside the pane. */
static void select_at(tui_pane *p, int y, int x)
{
    if (p->view != TUI_VIEW_HEATMAP || !tui_heat_pane_probe(p)) return;
    int row = tui_heat_row_at(&p->heat_geom, y - p->heat_y0);
    int col = tui_heat_col_at(&p->heat_geom, x - p->heat_x0);
    if (row < 0 || col < 0) return;
    p->sel_row = row, p->sel_col = col;
}

enum { REGION_NONE = -2, REGION_LOG = -3 };

/* The pane index under (y, x), -1 for the editor, REGION_LOG, or REGION_NONE. */
static int region_at(const tui_app *a, int y, int x)
{
    if (tui_rect_contains(a->L.editor, y, x)) return -1;
    for (int i = 0; i < a->n_panes; i++)
        if (tui_rect_contains(a->L.panes[i], y, x)) return i;
    if (a->show_log && tui_rect_contains(a->L.log, y, x)) return REGION_LOG;
    return REGION_NONE;
}

/* A quit key: at once, unless the editor holds text that Ctrl-S has not saved (typed, or a
 * paste whose Ctrl-Q came along), which asks first on the status line. */
static void quit_or_ask(tui_app *a)
{
    if (a->ed.len == 0 || a->ed.version == a->saved_version) {
        a->quit = 1;
        return;
    }
    a->confirm_quit = 1;
    snprintf(a->notice, sizeof a->notice,
             "quit? the editor's text is not saved (Ctrl-S saves it): q or y quits, "
             "any other key stays");
    a->notice_until = mt_now_s() + 1e9;
}

/* The key after "quit?": q or y quits, anything else (a mouse click too) stays. */
static void answer_quit(tui_app *a, int key, int is_char)
{
    a->confirm_quit = 0;
    a->notice[0] = '\0';
    a->dirty = 1;
    if (is_char && (key == 'q' || key == 'y' || key == 'Q' || key == 'Y')) a->quit = 1;
    else tui_notice(a, "not quitting");
}

static void apply(tui_app *a, tui_action act, int my, int mx)
{
    switch (act) {
    case TUI_ACT_NONE: return;
    case TUI_ACT_QUIT: quit_or_ask(a); break;
    case TUI_ACT_HELP:
        a->overlay = a->overlay == TUI_OVERLAY_HELP ? TUI_OVERLAY_NONE : TUI_OVERLAY_HELP;
        a->help_scroll = 0;
        break;
    case TUI_ACT_LOG:
        a->show_log = !a->show_log;
        a->log_scroll = 0;
        if (!a->show_log && a->log_focus) tui_focus(a, -1);
        a->relayout = 1;
        break;
    case TUI_ACT_FOCUS_NEXT: focus_step(a, +1); break;
    case TUI_ACT_FOCUS_PREV: focus_step(a, -1); break;
    case TUI_ACT_FOCUS_AT: {
        int r = region_at(a, my, mx);
        if (r >= -1) tui_focus(a, r);
        if (r == REGION_LOG) a->log_focus = 1;
        if (r >= 0) select_at(a->panes[r], my - a->L.panes[r].y, mx - a->L.panes[r].x);
        break;
    }
    case TUI_ACT_TRANSLATE: tui_translate(a, NULL); break;
    case TUI_ACT_SAVE: save_translations(a); break;
    case TUI_ACT_BEAM: toggle_beam(a); break;
    case TUI_ACT_LANGUAGE: next_language(a); break;
    case TUI_ACT_PICKER: tui_picker_open(a); break;
    case TUI_ACT_JOBS: tui_jobs_toggle(a); break;
    case TUI_ACT_CONSOLE: tui_console_toggle(a); break;
    /* two rows a step: a few presses cross the screen, one row would hardly show */
    case TUI_ACT_CONSOLE_TALLER: tui_console_resize(a, 2); break;
    case TUI_ACT_CONSOLE_SHORTER: tui_console_resize(a, -2); break;
    case TUI_ACT_THEME:
        if (a->n_themes > 0) tui_apply_theme(a, (a->theme_index + 1) % a->n_themes);
        break;
    case TUI_ACT_HEATMAP: toggle_heatmap(a); break;
    case TUI_ACT_HEAT_KIND:
    case TUI_ACT_HEAT_LAYER:
    case TUI_ACT_HEAT_HEAD:
    case TUI_ACT_HEAT_NORM:
    case TUI_ACT_HEAT_METHOD:
    case TUI_ACT_HEAT_CONTRAST:
    case TUI_ACT_CURSOR_LEFT:
    case TUI_ACT_CURSOR_RIGHT:
    case TUI_ACT_CURSOR_UP:
    case TUI_ACT_CURSOR_DOWN: heat_step(a, act); break;
    case TUI_ACT_HEAT_EXPORT:
        if (a->focus >= 0) tui_heat_export(a, a->panes[a->focus]);
        break;
    case TUI_ACT_ZOOM: a->zoom = !a->zoom; break;
    case TUI_ACT_REDRAW: clearok(curscr, TRUE); break;
    case TUI_ACT_CLOSE:
        if (a->overlay != TUI_OVERLAY_NONE) {
            if (a->overlay == TUI_OVERLAY_PICKER) tui_picker_free(a);
            a->overlay = TUI_OVERLAY_NONE;
        } else {
            tui_focus(a, -1);
            a->zoom = 0;
        }
        break;
    case TUI_ACT_CHOOSE: tui_picker_choose(a); break;
    case TUI_ACT_BACKSPACE:
        if (a->overlay == TUI_OVERLAY_PICKER) tui_picker_type(a, '\b');
        else editor_action(a, act);
        break;
    case TUI_ACT_SCROLL_UP:
    case TUI_ACT_SCROLL_DOWN:
    case TUI_ACT_PAGE_UP:
    case TUI_ACT_PAGE_DOWN: {
        int step = act == TUI_ACT_PAGE_UP || act == TUI_ACT_PAGE_DOWN ? 10 : 1;
        int delta = act == TUI_ACT_SCROLL_UP || act == TUI_ACT_PAGE_UP ? -step : step;
        if (a->overlay != TUI_OVERLAY_NONE) {
            scroll_overlay(a, delta);
            break;
        }
        int r = my >= 0 ? region_at(a, my, mx) : a->log_focus ? REGION_LOG : a->focus;
        if (r >= 0) scroll_pane(a, a->panes[r], delta);
        if (r == REGION_LOG) scroll_log(a, delta);
        break;
    }
    default: editor_action(a, act); return;
    }
    a->dirty = 1;
}

void tui_handle_key(tui_app *a, int key, int is_char)
{
    if (a->confirm_quit) {
        answer_quit(a, key, is_char);
        return;
    }
    if (a->overlay == TUI_OVERLAY_NONE && tui_console_key(a, key, is_char)) return;
    if (a->jobs && a->overlay == TUI_OVERLAY_NONE) {
        tui_action act = is_char ? TUI_ACT_NONE : tui_key_action(key, TUI_IN_JOBS);
        if (is_char) tui_jobs_char(a, key);
        else if (!tui_jobs_action(a, act)) apply(a, act, -1, -1);
        return;
    }
    if (is_char) {
        if (a->overlay == TUI_OVERLAY_PICKER) tui_picker_type(a, key);
        if (a->overlay != TUI_OVERLAY_NONE) return;
        /* the heatmap's letters (z, e, m, c); any other goes to the editor */
        tui_action act = tui_focus_context(a) == TUI_IN_HEATMAP
                             ? tui_key_action(key, TUI_IN_HEATMAP)
                             : TUI_ACT_NONE;
        if (act != TUI_ACT_NONE) {
            apply(a, act, -1, -1);
            return;
        }
        tui_focus(a, -1);
        if (tui_editor_insert_char(&a->ed, (uint32_t)key))
            tui_notice(a, "the editor is full (%d KiB)", TUI_EDITOR_MAX_BYTES / 1024);
        editor_changed(a);
        return;
    }
    apply(a, tui_key_action(key, tui_focus_context(a)), -1, -1);
}

void tui_handle_mouse(tui_app *a)
{
    MEVENT me;
    if (getmouse(&me) != OK) return;
    int key;
    if (me.bstate & BUTTON1_PRESSED) key = TUI_MOUSE_CLICK;
    else if (me.bstate & BUTTON4_PRESSED) key = TUI_MOUSE_WHEEL_UP;
    else if (me.bstate & BUTTON5_PRESSED) key = TUI_MOUSE_WHEEL_DOWN;
    else return; /* a release: the press did the work */
    if (a->confirm_quit) {
        answer_quit(a, key, 0);
        return;
    }
    unsigned context;
    if (a->overlay == TUI_OVERLAY_NONE && (me.bstate & BUTTON1_PRESSED) &&
        tui_console_click(a, me.y, me.x))
        return;
    if (a->overlay != TUI_OVERLAY_NONE) context = TUI_IN_OVERLAY;
    else if (a->jobs) context = TUI_IN_JOBS;
    else {
        int r = region_at(a, me.y, me.x);
        context = r >= 0 ? tui_pane_context(a->panes[r]) : TUI_IN_EDITOR;
    }
    tui_action act = tui_key_action(key, context);
    if (context == TUI_IN_JOBS && tui_jobs_action(a, act)) return;
    apply(a, act, me.y, me.x);
}
