/* Where a heatmap goes inside a pane: pure functions from the pane's size, the map's size and
 * its labels to the place of every part, so unit tests can check many sizes (nothing off the
 * pane, every row labelled when one text row per row fits, the cursor always shown).
 *
 *   retention · L1 2/3 · mean of 4 heads · seg 1     header
 *             ▼                                      marker: the cursor's column
 *          Y d M A  J < W h                          column labels: down the column when the
 *            i a       s e                           cells are narrow, across them otherwise
 *                                                    (on two staggered lines when a word is
 *                                                    wider than its cell)
 *   Y      ████████│███████                          row labels | cells; │ and ─ (when they
 *   ▶dijo  ████████│███████                          fit) between source and translation
 *   0 ░▒▓█ 0.243  raw, shared by attention           legend, shortened to fit
 *   'dijo' → 'Marta'  0.0712                         readout: the cursor's row, column, value
 *
 * Cells are as large as fit (about square: twice as wide as tall, at most TUI_HEAT_CELL_W_MAX
 * wide), one text row per map row at least; when the rows or columns do not fit at one line
 * or column each, the map scrolls so the cursor stays in view. */
#ifndef MTLAB_TUI_HEAT_LAYOUT_H
#define MTLAB_TUI_HEAT_LAYOUT_H

#define TUI_HEAT_CELL_W_MAX 10
#define TUI_HEAT_LABEL_H_MAX 6 /* characters of a vertical column label */
#define TUI_HEAT_GUTTER_MAX 14 /* columns of the row labels, marker included */

typedef struct {
    int rows, cols; /* the map */
    int row_split, col_split; /* first row / column after the source/target boundary; 0: none */
    int row_label_w; /* widest row label, in columns */
    int col_label_w; /* widest column label, in columns; 0: no column labels */
    int sel_row, sel_col; /* the cursor, inside the map */
    int row0, col0; /* the first row / column shown last time (kept when it can be) */
} tui_heat_geom_in;

typedef struct {
    int h, w; /* the pane's inside */
    int header_y, readout_y; /* always 0 and h - 1 */
    int legend_y; /* -1 when there is no room for it */
    int marker_y; /* the cursor's column mark; -1 when there is no room */
    int labels_y, labels_h; /* the column labels' band (labels_h 0: none) */
    int vertical; /* 1: column labels run down their column, one character a line */
    int stagger; /* 1: labels across, on two lines, every other column on each, so
                  * a word gets two cells' room (vertical is 0) */
    int gutter_w; /* row labels: the marker, the label, a space */
    int cells_y, cells_x; /* the top-left cell */
    int cell_h, cell_w;
    int row0, n_rows; /* the rows shown: row0 .. row0 + n_rows - 1 */
    int col0, n_cols;
    int sep_row, sep_col; /* 1: a boundary line before row_split / col_split */
    int row_split, col_split;
} tui_heat_geom;

/* Lay a map out in an h x w pane inside. Sizes below 3 x 8 give no cells (n_rows = 0). */
void tui_heat_geom_fit(tui_heat_geom *g, const tui_heat_geom_in *in, int h, int w);
/* The line of row r's first text row, or the column of column c's first cell; -1 when not
 * shown. */
int tui_heat_row_y(const tui_heat_geom *g, int r);
int tui_heat_col_x(const tui_heat_geom *g, int c);
/* The row under line y / the column under column x, or -1 (a boundary line, outside). */
int tui_heat_row_at(const tui_heat_geom *g, int y);
int tui_heat_col_at(const tui_heat_geom *g, int x);

/* The legend "scale LO ░▒▓█ HI  WHAT" cut to width: what goes in, in this order of giving up:
 * the word "scale", steps (16, then 8, then 4), WHAT, and last LO and HI. */
typedef struct {
    int prefix, steps, what, ends; /* 0/1, colour steps, 0/1, 0/1 (LO and HI) */
    int width; /* columns it takes */
} tui_heat_legend;
/* lo_w, hi_w, what_w: the widths of LO, HI and WHAT. 0, or -1 when not even 4 steps fit. */
int tui_heat_legend_fit(tui_heat_legend *out, int width, int lo_w, int hi_w, int what_w);

#endif
