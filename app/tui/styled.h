/* Styled text for the panes: UTF-8 bytes with a meaning per byte, appended piece by piece,
 * wrapped like the editor (tui_wrap) and drawn a row at a time in runs of one meaning. */
#ifndef MTLAB_TUI_STYLED_H
#define MTLAB_TUI_STYLED_H

#include <curses.h>
#include <stddef.h>
#include <stdint.h>

#include "tui/editor.h"
#include "tui/theme_curses.h"

typedef struct {
    char *text; /* (len + 1), NUL-terminated */
    uint8_t *style; /* (len) tui_meaning of each byte */
    size_t len, cap;
} tui_styled;

void tui_styled_init(tui_styled *s);
void tui_styled_free(tui_styled *s);
void tui_styled_add(tui_styled *s, const char *text, size_t n, tui_meaning m);
void tui_styled_addz(tui_styled *s, const char *text, tui_meaning m);
/* Restyle bytes [start, end) (clamped to the text). */
void tui_styled_mark(tui_styled *s, size_t start, size_t end, tui_meaning m);
/* Draw bytes [row.start, row.end) at (y, x), at most max_cols columns. */
void tui_styled_draw_row(WINDOW *w, const tui_palette *pal, const tui_styled *s, tui_vrow row,
                         int y, int x, int max_cols);

/* Put UTF-8 text at (y, x) in at most max_cols columns; returns the columns used. */
int tui_put(WINDOW *w, int y, int x, const char *text, int max_cols);
/* A box's title in its top border: " title " in the title's style, or, when the box has the
 * focus, " ▶ title " (mark) in the focus style, so the focus shows without colour too. */
void tui_put_title(WINDOW *w, const tui_palette *pal, const char *title, int focused,
                   const char *mark);

#endif
