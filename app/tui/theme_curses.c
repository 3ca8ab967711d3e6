#include "tui/theme_curses.h"

#include <string.h>

static attr_t curses_attrs(unsigned a)
{
    attr_t r = A_NORMAL;
    if (a & TUI_A_BOLD) r |= A_BOLD;
    if (a & TUI_A_DIM) r |= A_DIM;
    if (a & TUI_A_UNDERLINE) r |= A_UNDERLINE;
    if (a & TUI_A_REVERSE) r |= A_REVERSE;
    if (a & TUI_A_ITALIC) r |= A_ITALIC;
    return r;
}

/* The curses colour number of c at the level; bright-on-8 adds bold through *extra. */
static int color_number(const tui_color *c, tui_color_level level, attr_t *extra)
{
    unsigned bold = 0;
    int n = tui_color_number(c, level, extra ? &bold : NULL);
    if (extra) *extra |= curses_attrs(bold);
    return n;
}

void tui_palette_build(tui_palette *p, const tui_theme *t, tui_color_level level)
{
    memset(p, 0, sizeof *p);
    p->level = level;
    for (int m = 0; m < TUI_N_MEANINGS; m++) p->attr[m] = curses_attrs(t->style[m].attrs);
    if (level == TUI_COLORS_NONE) return;
    int next = 1;
    for (int m = 0; m < TUI_N_MEANINGS; m++) {
        tui_resolved_style r = tui_style_resolve(t, (tui_meaning)m, level);
        init_extended_pair(next, r.fg, r.bg);
        p->pair[m] = (short)next++;
        p->attr[m] = curses_attrs(r.attrs);
    }
    if (t->n_heat == 0) return;
    int L = level >= TUI_COLORS_256 ? TUI_HEAT_LEVELS_MAX : 8;
    if (COLOR_PAIRS <= next + L) return;
    p->heat_levels = L;
    tui_color lv[TUI_HEAT_LEVELS_MAX];
    for (int i = 0; i < L; i++) lv[i] = tui_heat_color(t, (i + 0.5) / L);
    int text_bg = color_number(&t->style[TUI_C_TEXT].bg, level, NULL);
    p->heat_fg0 = (short)next;
    for (int i = 0; i < L; i++) {
        attr_t extra = 0;
        init_extended_pair(next++, color_number(&lv[i], level, &extra), text_bg);
        p->heat_fg_attr[i] = extra;
    }
}

void tui_set_style(WINDOW *w, const tui_palette *p, tui_meaning m)
{
    wattr_set(w, p->attr[m], p->pair[m], NULL);
}

void tui_style_background(WINDOW *w, const tui_palette *p)
{
    wbkgdset(w, ' ' | COLOR_PAIR(p->pair[TUI_C_TEXT]));
}
