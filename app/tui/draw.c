/* One frame: windows rebuilt from the pure layout after every resize, each region drawn into
 * its own window, wnoutrefresh for each and a single doupdate. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/columns.h"
#include "tui/console/console.h"
#include "mtlab/clock.h"
#include "tui/app.h"
#include "tui/glyphs.h"
#include "tui/styled.h"

static WINDOW *window_open(tui_rect r)
{
    if (r.h <= 0 || r.w <= 0) return NULL;
    WINDOW *w = newwin(r.h, r.w, r.y, r.x);
    if (w) keypad(w, TRUE);
    return w;
}

static void window_close(WINDOW **w)
{
    if (*w) delwin(*w);
    *w = NULL;
}

/* The pane z zooms: the focused one, while no console is open. -1: none. */
static int zoom_target(tui_app *a)
{
    return a->zoom && a->focus >= 0 && !tui_console_is_open(a) ? a->focus : -1;
}

void tui_free_windows(tui_app *a)
{
    window_close(&a->w_editor);
    for (int i = 0; i < TUI_MAX_PANES; i++) window_close(&a->w_panes[i]);
    window_close(&a->w_empty);
    window_close(&a->w_log);
    window_close(&a->w_status);
    window_close(&a->w_overlay);
    window_close(&a->w_console);
}

/* The rows the editor's text takes wrapped to a full-width editor (the empty editor's hint:
 * one). */
static int editor_lines(tui_app *a)
{
    if (a->ed.len == 0 || COLS < 5) return 1;
    tui_vrow *rows;
    int n = tui_editor_wrap(&a->ed, COLS - 3, &rows, NULL, NULL);
    free(rows);
    return n;
}

/* The focused pane is on a page not shown (Tab moved to it): the layout turns the page. */
static int off_page(const tui_app *a)
{
    return a->focus >= 0 && a->focus < a->n_panes && a->zoomed < 0 && !a->L.too_small &&
           (a->focus < a->L.first_shown || a->focus >= a->L.first_shown + a->L.n_shown);
}

void tui_build_windows(tui_app *a)
{
    tui_free_windows(a);
    a->editor_lines = editor_lines(a);
    tui_layout_in in = {.cols = COLS,
                        .rows = LINES,
                        .n_panes = a->n_panes,
                        .show_log = a->show_log,
                        .editor_lines = a->editor_lines,
                        .console_h = !tui_console_is_open(a) ? 0
                                     : a->console_rows       ? a->console_rows
                                                             : TUI_CONSOLE_DEFAULT,
                        /* when not every pane fits, the page of the focused one (else the
                         * page shown before) */
                        .page_of = a->focus >= 0 ? a->focus : a->L.first_shown};
    tui_layout_compute_in(&a->L, &in);
    a->zoomed = zoom_target(a);
    tui_layout_zoom(&a->L, a->zoomed);
    a->relayout = 0;
    a->dirty = 1;
    if (a->L.too_small) return;
    a->w_editor = window_open(a->L.editor);
    for (int i = 0; i < a->L.n_panes; i++) a->w_panes[i] = window_open(a->L.panes[i]);
    a->w_empty = window_open(a->L.empty);
    a->w_log = window_open(a->L.log);
    a->w_status = window_open(a->L.status);
    a->w_overlay = window_open(a->L.overlay);
    a->w_console = window_open(a->L.console);
}

static void draw_too_small(tui_app *a)
{
    werase(stdscr);
    tui_style_background(stdscr, &a->palette);
    tui_set_style(stdscr, &a->palette, TUI_C_WARNING);
    char line[96];
    const char *msg[3] = {"terminal too small", line, "enlarge it; Ctrl-Q quits"};
    snprintf(line, sizeof line, "%dx%d, need %dx%d", COLS, LINES, TUI_MIN_COLS, TUI_MIN_ROWS);
    for (int i = 0; i < 3; i++) {
        int len = (int)strlen(msg[i]);
        int y = LINES / 2 - 1 + i, x = (COLS - len) / 2;
        if (y >= 0 && y < LINES) tui_put(stdscr, y, x < 0 ? 0 : x, msg[i], COLS);
    }
    wnoutrefresh(stdscr);
}

static void draw_empty(tui_app *a, WINDOW *w)
{
    werase(w);
    tui_set_style(w, &a->palette, TUI_C_BORDER);
    box(w, 0, 0);
    tui_set_style(w, &a->palette, TUI_C_DIM);
    int maxw = getmaxx(w) - 4, y = 1;
    tui_vrow *rows;
    const char *msg = a->empty_hint ? a->empty_hint : "no model panes: F5 opens the bundle picker";
    int n = tui_wrap(msg, strlen(msg), maxw, &rows);
    for (int i = 0; i < n && y < getmaxy(w) - 1; i++, y++) {
        char line[512];
        snprintf(line, sizeof line, "%.*s", (int)(rows[i].end - rows[i].start),
                 msg + rows[i].start);
        tui_put(w, y, 2, line, maxw);
    }
    free(rows);
}

static void draw_log(tui_app *a, WINDOW *w)
{
    int focused = a->log_focus && a->overlay == TUI_OVERLAY_NONE;
    werase(w);
    tui_set_style(w, &a->palette, focused ? TUI_C_FOCUS : TUI_C_BORDER);
    box(w, 0, 0);
    tui_put_title(w, &a->palette, "log (F2; Tab here, then Up/Down/PgUp/PgDn)", focused,
                  tui_glyphs_for(a->utf8 && !a->ascii)->focus_mark);
    int h = getmaxy(w) - 2, width = getmaxx(w) - 2;
    int most = a->log.n > h ? a->log.n - h : 0;
    if (a->log_scroll > most) a->log_scroll = most;
    int first = most - a->log_scroll;
    for (int i = first, y = 1; i < a->log.n && y <= h; i++, y++) {
        const tui_log_line *l = tui_log_get(&a->log, i);
        tui_set_style(w, &a->palette,
                      l->level == TUI_LOG_ERROR  ? TUI_C_ERROR
                      : l->level == TUI_LOG_WARN ? TUI_C_WARNING
                                                 : TUI_C_DIM);
        tui_put(w, y, 1, l->text, width);
    }
    if (most > 0) {
        char where[48];
        snprintf(where, sizeof where, " %d-%d/%d ", first + 1, first + h, a->log.n);
        tui_set_style(w, &a->palette, TUI_C_DIM);
        tui_put(w, h + 1, getmaxx(w) - 2 - (int)strlen(where), where, (int)strlen(where));
    }
}

static void draw_status(tui_app *a, WINDOW *w)
{
    int width = getmaxx(w);
    wbkgdset(w, ' ' | COLOR_PAIR(a->palette.pair[TUI_C_STATUS]) | a->palette.attr[TUI_C_STATUS]);
    werase(w);
    if (a->notice[0] && mt_now_s() < a->notice_until) {
        /* a notice longer than the line ends in an ellipsis, so it reads as cut (a lesson's
         * step is whole in the console) */
        const char *dots = tui_glyphs_for(a->utf8 && !a->ascii)->ellipsis;
        size_t len = strlen(a->notice);
        int cols;
        size_t n = tui_text_fit(a->notice, len, width - 2, &cols);
        if (n < len) n = tui_text_fit(a->notice, len, width - 2 - tui_text_width_z(dots), &cols);
        char line[sizeof a->notice + 8];
        snprintf(line, sizeof line, "%.*s%s", (int)n, a->notice, n < len ? dots : "");
        tui_set_style(w, &a->palette, TUI_C_WARNING);
        tui_put(w, 0, 1, line, width - 2);
        return;
    }
    char hints[512];
    tui_status_hints(hints, sizeof hints, tui_focus_context(a), width - 2);
    /* key names in the key style, labels in the status style */
    int x = 1;
    for (char *p = hints; *p && x < width - 1;) {
        char *space = strchr(p, ' ');
        if (!space) break;
        char *next = strstr(space + 1, "  ");
        size_t key_len = (size_t)(space - p),
               label_len = next ? (size_t)(next - space) : strlen(space);
        char buf[128];
        snprintf(buf, sizeof buf, "%.*s", (int)key_len, p);
        tui_set_style(w, &a->palette, TUI_C_KEY);
        x += tui_put(w, 0, x, buf, width - 1 - x);
        snprintf(buf, sizeof buf, "%.*s", (int)label_len, space);
        tui_set_style(w, &a->palette, TUI_C_STATUS);
        x += tui_put(w, 0, x, buf, width - 1 - x);
        p = next ? next : space + label_len;
    }
}

void tui_draw(tui_app *a)
{
    if (a->relayout || zoom_target(a) != a->zoomed || editor_lines(a) != a->editor_lines ||
        off_page(a))
        tui_build_windows(a);
    a->dirty = 0;
    if (a->L.too_small) {
        draw_too_small(a);
        doupdate();
        return;
    }
    /* stdscr lies under every window; clear it so nothing stale shows between them */
    wnoutrefresh(stdscr);
    WINDOW *all[] = {a->w_editor, a->w_empty, a->w_log, a->w_status, a->w_console};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i]) tui_style_background(all[i], &a->palette);
    for (int i = 0; i < a->L.n_panes; i++)
        if (a->w_panes[i]) tui_style_background(a->w_panes[i], &a->palette);
    for (int i = 0; i < a->L.n_panes; i++)
        if (a->w_panes[i]) {
            tui_draw_pane(a, i, a->w_panes[i]);
            wnoutrefresh(a->w_panes[i]);
        }
    if (a->w_empty) {
        draw_empty(a, a->w_empty);
        wnoutrefresh(a->w_empty);
    }
    if (a->w_log) {
        draw_log(a, a->w_log);
        wnoutrefresh(a->w_log);
    }
    if (a->w_status) {
        draw_status(a, a->w_status);
        wnoutrefresh(a->w_status);
    }
    if (a->w_editor) {
        tui_draw_editor(a, a->w_editor);
        wnoutrefresh(a->w_editor);
    }
    if (a->jobs) tui_draw_jobs(a);
    if (a->w_console) {
        tui_console_draw(a, a->w_console);
        wnoutrefresh(a->w_console);
    }
    int overlay = a->overlay != TUI_OVERLAY_NONE && a->w_overlay;
    if (overlay) {
        tui_style_background(a->w_overlay, &a->palette);
        tui_draw_overlay(a, a->w_overlay);
        wnoutrefresh(a->w_overlay);
    }
    /* the hardware cursor shows only where typing goes: the editor, when nothing covers it */
    int console = a->w_console && tui_console_focused(a);
    if (console && !overlay) wnoutrefresh(a->w_console); /* its prompt gets the cursor */
    curs_set(!overlay && ((!a->jobs && a->focus < 0 && !a->log_focus) || console) ? 1 : 0);
    doupdate();
}
