/* Colour themes: files in themes/ map meanings (text, border, focus, recalled, translated,
 * dropped, heat scale...) to colours; the drawing code only ever names meanings. Parsing
 * and the colour arithmetic (nearest xterm-256 and 16-colour matches, heat-scale
 * interpolation, how many colours the terminal has) live here, without curses;
 * theme_curses.c turns a theme into curses colour pairs.
 *
 * File format, one meaning per line (a line starting with '#', or a lone '#' word and what
 * follows it, is a comment):
 *     MEANING  FG  [BG  [ATTRS]]
 *     heat     COLOR COLOR ...           (2..16 stops, cold to hot)
 * A colour is `default` (or `-`), `#rrggbb`, `#rrggbb/N` (N: the xterm-256 index to use),
 * `#rrggbb/N/NAME` (NAME: the 16-colour one), an xterm-256 index 0..255 or a 16-colour name
 * (black red green yellow blue magenta cyan white, bright-*). Fallbacks not given are the
 * nearest colours. ATTRS is `none` or a comma list of bold, dim, underline, reverse, italic.
 * A theme without a `heat` line draws heatmaps with shading glyphs only (monochrome).
 *     terminal FG BG                     (the terminal's own colours the theme is made for;
 *                                         default: #d0d0d0 on #000000, a dark terminal)
 * A meaning whose colour is `default` takes the text's, and the text's `default` is the
 * terminal's own. Every meaning stays legible at every colour level: where the fallback of a
 * colour lands on its background's (a grey that becomes black on 8 colours), the nearest other
 * colour of that level is used instead (tui_style_resolve). */
#ifndef MTLAB_COMMON_THEME_H
#define MTLAB_COMMON_THEME_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    TUI_C_TEXT, /* ordinary text; its background is the screen's */
    TUI_C_DIM, /* secondary text: statistics, placeholders */
    TUI_C_BORDER,
    TUI_C_FOCUS, /* the focused pane's border and title */
    TUI_C_TITLE,
    TUI_C_STATUS, /* the status line */
    TUI_C_KEY, /* key names in the status line and help */
    TUI_C_ERROR,
    TUI_C_WARNING, /* notices: a capped paste, a terminal too small */
    TUI_C_BUSY, /* loading, translating */
    TUI_C_DONE, /* finished, with its timings */
    TUI_C_ENTITY, /* source entities in the editor */
    TUI_C_RECALLED, /* entities a model copied */
    TUI_C_DROPPED, /* entities a model left out */
    TUI_C_TRANSLATED, /* entities a model wrote in a form the training corpus gives them */
    TUI_C_SELECTION, /* highlighted line in overlays, selected heatmap token */
    TUI_C_SERIES1, /* plot lines of the jobs view, one meaning per run (repeating after 4); */
    TUI_C_SERIES2, /* they must differ from each other on 8 colours too */
    TUI_C_SERIES3,
    TUI_C_SERIES4,
    TUI_N_MEANINGS
} tui_meaning;

enum {
    TUI_A_BOLD = 1,
    TUI_A_DIM = 2,
    TUI_A_UNDERLINE = 4,
    TUI_A_REVERSE = 8,
    TUI_A_ITALIC = 16,
};

typedef struct {
    int is_default; /* 1: the terminal's own colour */
    uint8_t r, g, b;
    int c256; /* xterm-256 index */
    int c16; /* 0..15: black red green yellow blue magenta cyan white, then bright */
} tui_color;

typedef struct {
    tui_color fg, bg;
    unsigned attrs; /* TUI_A_* */
} tui_style;

#define TUI_N_SERIES 4 /* TUI_C_SERIES1 .. TUI_C_SERIES4 */
#define TUI_HEAT_STOPS_MAX 16

typedef struct {
    char name[64];
    tui_style style[TUI_N_MEANINGS];
    tui_color term_fg, term_bg; /* the `terminal` line */
    tui_color heat[TUI_HEAT_STOPS_MAX];
    int n_heat; /* 0: shading glyphs only */
} tui_theme;

/* How many colours the terminal can show. */
typedef enum {
    TUI_COLORS_NONE, /* NO_COLOR, or a terminal without colours: attributes only */
    TUI_COLORS_8,
    TUI_COLORS_16,
    TUI_COLORS_256,
    TUI_COLORS_DIRECT, /* 24-bit: terminfo with the RGB capability (TERM=xterm-direct) */
} tui_color_level;

/* The attribute-only theme every file starts from (meanings a file leaves out keep it). */
void tui_theme_plain(tui_theme *t, const char *name);
/* Parse theme text; errors name the file and line: "themes/mine.theme:7: unknown meaning 'txt'
 * (known: text, dim, ...)". 0 or -1. */
int tui_theme_parse(tui_theme *t, const char *text, size_t len, const char *path);
/* Read and parse a file; the theme's name is the file name without ".theme". */
int tui_theme_load(tui_theme *t, const char *path);
const char *tui_meaning_name(tui_meaning m);

/* Parse one colour token (see the format above); 0 or -1. */
int tui_color_parse(tui_color *c, const char *tok);
/* Nearest xterm-256 colour (the 6x6x6 cube and the grey ramp, never the 16 system colours
 * whose RGB values differ between terminals), and nearest of the 16 standard colours. */
int tui_rgb_to_256(int r, int g, int b);
int tui_rgb_to_16(int r, int g, int b);
/* The heat scale at v in [0, 1] (clamped), interpolated between stops in RGB. */
tui_color tui_heat_color(const tui_theme *t, double v);

/* The colour level from what the terminal reports (has_colors(), COLORS, the terminfo RGB
 * flag) and the NO_COLOR environment variable (set and non-empty: no colour). */
tui_color_level tui_color_level_detect(int has_colors, int n_colors, int rgb_flag,
                                       const char *no_color);
const char *tui_color_level_name(tui_color_level level);

/* The colour number of c at level for curses: an index (0..7 on 8 colours, with bold through
 * *bold_attr for a bright one when bold_attr is not NULL; 0..15; 0..255), 0xRRGGBB at 24-bit,
 * or -1 for the terminal's own colour (and at TUI_COLORS_NONE). */
int tui_color_number(const tui_color *c, tui_color_level level, unsigned *bold_attr);

/* How a meaning is drawn at a level. */
typedef struct {
    int fg, bg; /* colour numbers for curses (tui_color_number) */
    int shown_fg, shown_bg; /* the colours seen: -1 replaced by the theme's `terminal` colours */
    unsigned attrs; /* TUI_A_*: the meaning's, plus bold for a bright colour on 8 */
} tui_resolved_style;

/* The meaning's colours at level after the fallbacks, `default` resolved (see the top), and
 * made legible: when the foreground would show as the background's colour, the meaning's own
 * background (a highlight) moves to the nearest other colour of the level, else the
 * foreground does. So shown_fg != shown_bg at every level but TUI_COLORS_NONE (where both are
 * -1 and attributes carry the meaning). */
tui_resolved_style tui_style_resolve(const tui_theme *t, tui_meaning m, tui_color_level level);

#endif
