/* The source editor: wrapped text with the detected entities underlined, scrolled so the
 * cursor stays in view, and the hardware cursor left where typing goes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tui/console/console.h"
#include "tui/app.h"
#include "tui/glyphs.h"
#include "tui/styled.h"

static void title(tui_app *a, WINDOW *w, int focused)
{
    tui_segment *segs;
    int n = tui_editor_segments(&a->ed, &segs);
    free(segs);
    char t[256], lang[160] = "";
    const tui_glyphs *g = tui_glyphs_for(a->utf8 && !a->ascii);
    /* the language it feeds, once a pane records one; with several, the key and the others in
     * the order the key brings them */
    const char *langs[TUI_MAX_PANES];
    int n_langs = tui_source_languages(a, langs);
    if (n_langs > 0) {
        const char *now = tui_editor_language(a);
        size_t k = (size_t)snprintf(lang, sizeof lang, " %s %s", g->dot, now);
        if (n_langs > 1) {
            char key[32];
            tui_action_key(TUI_ACT_LANGUAGE, key, sizeof key);
            k += (size_t)snprintf(lang + k, sizeof lang - k, " (%s:", key);
            int at = 0;
            while (at < n_langs && langs[at] != now) at++;
            for (int i = 1; i < n_langs && k < sizeof lang; i++)
                k += (size_t)snprintf(lang + k, sizeof lang - k, " %s", langs[(at + i) % n_langs]);
            if (k < sizeof lang) snprintf(lang + k, sizeof lang - k, ")");
        }
    }
    snprintf(t, sizeof t, "source%s %s %d segment%s %s %zu entit%s", lang, g->dot, n,
             n == 1 ? "" : "s", g->dot, a->n_ed_spans, a->n_ed_spans == 1 ? "y" : "ies");
    tui_put_title(w, &a->palette, t, focused, g->focus_mark);
}

void tui_draw_editor(tui_app *a, WINDOW *w)
{
    int focused =
        a->focus < 0 && !a->log_focus && a->overlay == TUI_OVERLAY_NONE && !tui_console_focused(a);
    int h = getmaxy(w) - 2, width = getmaxx(w) - 3;
    werase(w);
    tui_set_style(w, &a->palette, focused ? TUI_C_FOCUS : TUI_C_BORDER);
    box(w, 0, 0);
    tui_refresh_entities(a);
    title(a, w, focused);
    if (a->ed.len == 0) {
        tui_set_style(w, &a->palette, TUI_C_DIM);
        tui_put(w, 1, 1,
                "Type or paste text to translate: each line is one segment, translated when "
                "you pause (Ctrl-R: now). F1: help.",
                width);
        wmove(w, 1, 1);
        return;
    }
    tui_styled st;
    tui_styled_init(&st);
    tui_styled_add(&st, a->ed.text, a->ed.len, TUI_C_TEXT);
    for (size_t i = 0; i < a->n_ed_spans; i++)
        tui_styled_mark(&st, a->ed_spans[i].start, a->ed_spans[i].end, TUI_C_ENTITY);
    tui_vrow *rows;
    int cur_row, cur_col;
    int n = tui_editor_wrap(&a->ed, width, &rows, &cur_row, &cur_col);
    if (cur_row < a->ed_scroll) a->ed_scroll = cur_row;
    if (cur_row >= a->ed_scroll + h) a->ed_scroll = cur_row - h + 1;
    if (a->ed_scroll > n - h) a->ed_scroll = n - h > 0 ? n - h : 0;
    for (int y = 0; y < h && a->ed_scroll + y < n; y++)
        tui_styled_draw_row(w, &a->palette, &st, rows[a->ed_scroll + y], 1 + y, 1, width + 1);
    if (n > h) {
        char more[32];
        snprintf(more, sizeof more, " %d/%d ", cur_row + 1, n);
        tui_set_style(w, &a->palette, TUI_C_DIM);
        tui_put(w, h + 1, getmaxx(w) - 2 - (int)strlen(more), more, (int)strlen(more));
    }
    free(rows);
    tui_styled_free(&st);
    wmove(w, 1 + cur_row - a->ed_scroll, 1 + cur_col);
}
