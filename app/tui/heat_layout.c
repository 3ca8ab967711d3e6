#include "tui/heat_layout.h"
#include "tui/layout.h"

#include <string.h>

static int min(int a, int b) { return a < b ? a : b; }
static int max(int a, int b) { return a > b ? a : b; }

/* First index shown of n items, `shown` at a time, keeping `sel` in view and the last first
 * index when it still does. */
static int scroll_to(int first, int sel, int shown, int n)
{
    if (shown >= n) return 0;
    first = tui_clamp(first, sel - shown + 1, sel);
    return tui_clamp(first, 0, n - shown);
}

static int splits(int split, int n) { return split > 0 && split < n; }

void tui_heat_geom_fit(tui_heat_geom *g, const tui_heat_geom_in *in, int h, int w)
{
    memset(g, 0, sizeof *g);
    g->h = h, g->w = w;
    g->readout_y = h - 1;
    g->legend_y = g->marker_y = -1;
    g->row_split = in->row_split, g->col_split = in->col_split;
    if (h < 3 || w < 8 || in->rows <= 0 || in->cols <= 0) return;
    int sel_row = tui_clamp(in->sel_row, 0, in->rows - 1);
    int sel_col = tui_clamp(in->sel_col, 0, in->cols - 1);

    /* columns: the gutter for the row labels, then cells as wide as fit */
    g->gutter_w = tui_clamp(in->row_label_w, 1, TUI_HEAT_GUTTER_MAX - 2) + 2;
    g->gutter_w = min(g->gutter_w, w / 2);
    int W = w - g->gutter_w;
    g->sep_col = splits(in->col_split, in->cols) && in->cols + 1 <= W;
    g->cell_w = tui_clamp((W - g->sep_col) / in->cols, 1, TUI_HEAT_CELL_W_MAX);
    g->n_cols = min(in->cols, (W - g->sep_col) / g->cell_w);
    g->col0 = scroll_to(in->col0, sel_col, g->n_cols, in->cols);
    /* a label across its cell needs three characters and a space, unless it is shorter */
    int across = g->cell_w - 1;
    g->vertical = in->col_label_w > 0 && across < min(in->col_label_w, 3);
    /* words wider than a cell: every other column's on a second line, twice the room */
    g->stagger = !g->vertical && in->col_label_w > across && g->n_cols > 1;
    int band = in->col_label_w <= 0 ? 0
               : g->vertical        ? min(in->col_label_w, TUI_HEAT_LABEL_H_MAX)
                                    : 1 + g->stagger;

    /* lines: header and readout always, the legend when four lines are left for the rest */
    int R = h - 2;
    if (R >= 4) {
        g->legend_y = h - 2;
        R--;
    }
    int want_sep = splits(in->row_split, in->rows);
    int top;
    if (in->rows + want_sep + band + 1 <= R) {
        /* everything fits at one line a row: grow the cells with what is left */
        g->sep_row = want_sep;
        g->labels_h = band;
        top = band + 1;
        int fit_h = (R - top - g->sep_row) / in->rows;
        g->cell_h = tui_clamp(fit_h, 1, max(1, g->cell_w / 2));
    } else {
        /* rows first (at least the cursor's), then a line of labels, the marker, the
         * boundary, and more lines of labels */
        g->cell_h = 1;
        int label_min = band > 0 && R >= 2 ? 1 : 0;
        int map_h = min(in->rows, R - label_min);
        int rest = R - map_h - label_min;
        int marker = rest > 0;
        rest -= marker;
        g->sep_row = want_sep && map_h == in->rows && rest > 0;
        rest -= g->sep_row;
        g->labels_h = label_min + min(band - label_min, rest);
        top = g->labels_h + marker;
    }
    if (g->labels_h < 2) g->stagger = 0;
    g->marker_y = top > g->labels_h ? 1 : -1;
    g->labels_y = 1 + (g->marker_y >= 0);
    g->cells_y = g->labels_y + g->labels_h;
    g->cells_x = g->gutter_w;
    int map_lines = (g->legend_y >= 0 ? g->legend_y : g->readout_y) - g->cells_y - g->sep_row;
    g->n_rows = tui_clamp(map_lines / g->cell_h, 0, in->rows);
    g->row0 = scroll_to(in->row0, sel_row, g->n_rows, in->rows);
    if (g->n_rows < in->rows) g->sep_row = 0;
    if (g->n_cols < in->cols) g->sep_col = 0;
}

int tui_heat_row_y(const tui_heat_geom *g, int r)
{
    if (r < g->row0 || r >= g->row0 + g->n_rows) return -1;
    return g->cells_y + (r - g->row0) * g->cell_h + (g->sep_row && r >= g->row_split);
}

int tui_heat_col_x(const tui_heat_geom *g, int c)
{
    if (c < g->col0 || c >= g->col0 + g->n_cols) return -1;
    return g->cells_x + (c - g->col0) * g->cell_w + (g->sep_col && c >= g->col_split);
}

/* The index under offset d (from the first cell) along an axis, or -1. */
static int index_at(int d, int first, int shown, int size, int sep, int split)
{
    if (d < 0 || size <= 0) return -1;
    if (sep) {
        int line = (split - first) * size;
        if (d == line) return -1;
        if (d > line) d--;
    }
    int i = d / size;
    return i < shown ? first + i : -1;
}

int tui_heat_row_at(const tui_heat_geom *g, int y)
{
    return index_at(y - g->cells_y, g->row0, g->n_rows, g->cell_h, g->sep_row, g->row_split);
}

int tui_heat_col_at(const tui_heat_geom *g, int x)
{
    return index_at(x - g->cells_x, g->col0, g->n_cols, g->cell_w, g->sep_col, g->col_split);
}

int tui_heat_legend_fit(tui_heat_legend *out, int width, int lo_w, int hi_w, int what_w)
{
    static const struct {
        int prefix, steps, what, ends;
    } plans[] = {
        {1, 16, 1, 1}, {1, 8, 1, 1}, {0, 8, 1, 1}, {0, 8, 0, 1}, {0, 4, 0, 1}, {0, 4, 0, 0},
    };
    for (size_t i = 0; i < sizeof plans / sizeof plans[0]; i++) {
        /* "scale " LO " " STEPS " " HI "  " WHAT */
        int n = (plans[i].prefix ? 6 : 0) + plans[i].steps +
                (plans[i].ends ? lo_w + 1 + 1 + hi_w : 0) + (plans[i].what ? 2 + what_w : 0);
        if (n <= width) {
            *out =
                (tui_heat_legend){plans[i].prefix, plans[i].steps, plans[i].what, plans[i].ends, n};
            return 0;
        }
    }
    memset(out, 0, sizeof *out);
    return -1;
}
