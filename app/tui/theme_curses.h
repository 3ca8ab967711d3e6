/* A theme on a real terminal: curses colour pairs for every meaning and for the heat scale,
 * at the colour level the terminal has (24-bit -> 256 -> 16 -> 8 -> none). */
#ifndef MTLAB_TUI_THEME_CURSES_H
#define MTLAB_TUI_THEME_CURSES_H

#include <curses.h>

#include "common/theme.h"

#define TUI_HEAT_LEVELS_MAX 16

typedef struct {
    tui_color_level level;
    int heat_levels; /* colour steps of the heat scale; 0: glyph shading only */
    short pair[TUI_N_MEANINGS];
    attr_t attr[TUI_N_MEANINGS];
    short heat_fg0; /* pair of level i on the text background: heat_fg0 + i */
    attr_t heat_fg_attr[TUI_HEAT_LEVELS_MAX]; /* bold for bright colours on 8-colour terminals */
} tui_palette;

/* Define the pairs for theme t (after start_color when level is not NONE). */
void tui_palette_build(tui_palette *p, const tui_theme *t, tui_color_level level);
/* Draw with a meaning from now on. */
void tui_set_style(WINDOW *w, const tui_palette *p, tui_meaning m);
/* The window background (text meaning) and its blank. */
void tui_style_background(WINDOW *w, const tui_palette *p);

#endif
