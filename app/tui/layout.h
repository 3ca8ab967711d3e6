/* Where everything goes on the screen: a pure function from the terminal size and the number
 * of model panes to rectangles. No curses here, so the unit tests can check every size.
 *
 *   +-- editor (source text) --------------------------+
 *   |                                                  |
 *   +--------------------------------------------------+
 *   +-- pane 1 ------------++-- pane 2 ----------------+   side by side when each pane gets
 *   |                      ||                          |   TUI_PANE_SIDE_MIN_W columns,
 *   +----------------------++--------------------------+   else a grid (stacked when narrow)
 *   +-- log (F2) --------------------------------------+
 *   +-- Lua console (Ctrl-O) -------------------------+   the bottom part, when open
 *   status line: key hints
 */
#ifndef MTLAB_TUI_LAYOUT_H
#define MTLAB_TUI_LAYOUT_H

#define TUI_MAX_PANES 12 /* open at once; those that do not fit show a page at a time */
#define TUI_DEFAULT_PANES 4 /* opened from models/ when no -m is given */
#define TUI_MIN_COLS 40
#define TUI_MIN_ROWS 12
#define TUI_PANE_SIDE_MIN_W 30 /* narrower than this, panes stop sitting side by side */
#define TUI_PANE_MIN_W 16
#define TUI_PANE_MIN_H 3 /* border, one line of text, border */

typedef struct {
    int y, x, h, w; /* top-left corner and size in cells; h = 0 means absent */
} tui_rect;

typedef struct {
    int too_small; /* 1: the terminal is below the minimum; only `message` is drawn */
    int cols, rows;
    tui_rect editor; /* bordered source editor */
    tui_rect panes[TUI_MAX_PANES]; /* h = 0 for a pane on another page */
    int n_panes;
    int first_shown, n_shown; /* the page: panes [first_shown, first_shown + n_shown) */
    int grid_cols, grid_rows;
    tui_rect empty; /* with no panes: where the empty-state message goes */
    tui_rect log; /* h = 0 when hidden (or when there is no room for it) */
    tui_rect console; /* the Lua console: h = 0 when closed (or when there is no room) */
    tui_rect status; /* the last line */
    tui_rect overlay; /* a centred box for help and the bundle picker */
} tui_layout;

#define TUI_CONSOLE_MIN_ROWS 4 /* border, two lines of output, the prompt... bottom border */
#define TUI_CONSOLE_DEFAULT -1 /* tui_layout_in.console_h: about 2/5 of the rows */

/* What the layout is computed from. */
typedef struct {
    int cols, rows; /* the terminal */
    int n_panes; /* 0..TUI_MAX_PANES model panes */
    int show_log;
    int console_h; /* 0: closed; TUI_CONSOLE_DEFAULT; else the rows asked for it */
    int editor_lines; /* the rows the editor's text takes wrapped (0: as many as allowed) */
    int page_of; /* a pane of the page to show when not all panes fit (the focused one) */
} tui_layout_in;

/* Fill out for the input: the editor as tall as its text (one to eight lines, at most a
 * quarter of the screen), the console as asked, the panes the rest. When they do not fit,
 * the log goes first, then console lines, editor lines and last the console. 0, or -1 (with
 * out->too_small = 1) when the terminal is too small. */
int tui_layout_compute_in(tui_layout *out, const tui_layout_in *in);

/* Fill out for a cols x rows terminal with n_panes (0..TUI_MAX_PANES) model panes and the log
 * pane shown or not. Returns 0, or -1 (with out->too_small = 1) when the terminal is too
 * small for them. */
int tui_layout_compute(tui_layout *out, int cols, int rows, int n_panes, int show_log);

/* The same with the Lua console open (show_console = 1) under the panes and the log: it takes
 * about 2/5 of the rows and shrinks before the editor does; it is left out only when even the
 * smallest console would push the panes off the screen. The editor takes its largest height
 * (tui_layout_compute_in sizes it to its text). */
int tui_layout_compute_console(tui_layout *out, int cols, int rows, int n_panes, int show_log,
                               int show_console);

/* Zoom: pane (0 .. n_panes - 1) takes every line above the status line; the editor, the
 * other panes, the log and the console are left out (h = 0; the editor keeps its width). The
 * overlay box stays. */
void tui_layout_zoom(tui_layout *L, int pane);

/* 1 when the point (y, x) lies inside r. */
int tui_rect_contains(tui_rect r, int y, int x);

/* v held to lo..hi (lo when hi < lo): the layouts' sizes and selections. */
static inline int tui_clamp(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

#endif
