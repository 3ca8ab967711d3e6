#include "tui/styled.h"

#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "mtlab/error.h"
#include "common/columns.h"

void tui_styled_init(tui_styled *s)
{
    memset(s, 0, sizeof *s);
    s->cap = 256;
    s->text = mt_xmalloc(s->cap + 1);
    s->style = mt_xmalloc(s->cap);
    s->text[0] = '\0';
}

void tui_styled_free(tui_styled *s)
{
    free(s->text);
    free(s->style);
    memset(s, 0, sizeof *s);
}

void tui_styled_add(tui_styled *s, const char *text, size_t n, tui_meaning m)
{
    if (s->len + n > s->cap) {
        while (s->len + n > s->cap) s->cap *= 2;
        s->text = mt_xrealloc(s->text, s->cap + 1);
        s->style = mt_xrealloc(s->style, s->cap);
    }
    memcpy(s->text + s->len, text, n);
    memset(s->style + s->len, (int)m, n);
    s->len += n;
    s->text[s->len] = '\0';
}

void tui_styled_addz(tui_styled *s, const char *text, tui_meaning m)
{
    tui_styled_add(s, text, strlen(text), m);
}

void tui_styled_mark(tui_styled *s, size_t start, size_t end, tui_meaning m)
{
    if (end > s->len) end = s->len;
    if (start < end) memset(s->style + start, (int)m, end - start);
}

int tui_put(WINDOW *w, int y, int x, const char *text, int max_cols)
{
    if (max_cols <= 0) return 0;
    int cols;
    size_t n = tui_text_fit(text, strlen(text), max_cols, &cols);
    if (n) mvwaddnstr(w, y, x, text, (int)n);
    return cols;
}

void tui_put_title(WINDOW *w, const tui_palette *pal, const char *title, int focused,
                   const char *mark)
{
    char t[320];
    snprintf(t, sizeof t, " %s%s%s ", focused ? mark : "", focused ? " " : "", title);
    tui_set_style(w, pal, focused ? TUI_C_FOCUS : TUI_C_TITLE);
    tui_put(w, 0, 2, t, getmaxx(w) - 4);
}

void tui_styled_draw_row(WINDOW *w, const tui_palette *pal, const tui_styled *s, tui_vrow row,
                         int y, int x, int max_cols)
{
    size_t i = row.start;
    int used = 0;
    wmove(w, y, x);
    while (i < row.end && used < max_cols) {
        size_t j = i;
        while (j < row.end && s->style[j] == s->style[i]) j++;
        int cols;
        size_t n = tui_text_fit(s->text + i, j - i, max_cols - used, &cols);
        tui_set_style(w, pal, (tui_meaning)s->style[i]);
        if (n) waddnstr(w, s->text + i, (int)n);
        used += cols;
        if (n < j - i) break;
        i = j;
    }
}
