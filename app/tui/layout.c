#include "tui/layout.h"

#include <string.h>

enum {
    EDITOR_MIN_H = 3, /* border, one line, border */
    EDITOR_MAX_LINES = 8,
    LOG_MIN_H = 4,
    CONSOLE_MIN_H = TUI_CONSOLE_MIN_ROWS,
    CONSOLE_MAX_H = 24,
    OVERLAY_MAX_W = 84,
    OVERLAY_MAX_H = 34,
};

int tui_rect_contains(tui_rect r, int y, int x)
{
    return r.h > 0 && r.w > 0 && y >= r.y && y < r.y + r.h && x >= r.x && x < r.x + r.w;
}

/* Grid columns for n panes in a W x H area: one row when every pane gets the side-by-side
 * width; otherwise the columns whose panes come nearest a heatmap's shape (a map cell is
 * about three columns wide: the shorter of height and width / 3 is the largest), the fewest
 * columns on a tie. 0 when nothing fits. A 100x30 screen gets a 2x2 grid of 13-row panes
 * rather than four 6-row panes stacked, whose maps would show two rows. */
static int grid_columns(int n, int W, int H)
{
    if (W / n >= TUI_PANE_SIDE_MIN_W && H >= TUI_PANE_MIN_H) return n;
    int best = 0, best_side = 0;
    for (int c = 1; c <= n; c++) {
        int r = (n + c - 1) / c, w = W / c, h = H / r;
        if (w < TUI_PANE_MIN_W || h < TUI_PANE_MIN_H) continue;
        int side = h < w / 3 ? h : w / 3;
        if (side > best_side) best = c, best_side = side;
    }
    return best;
}

/* Split [0, total) into k parts, the first total % k parts one cell larger. */
static void split(int total, int k, int i, int *start, int *len)
{
    int base = total / k, extra = total % k;
    *start = i * base + (i < extra ? i : extra);
    *len = base + (i < extra);
}

static void place_panes(tui_layout *L, int y0, int H)
{
    int n = L->n_shown, c = L->grid_cols, r = L->grid_rows;
    for (int i = 0; i < n; i++) {
        int row = i / c, col = i % c;
        /* the last row spreads its panes over the whole width */
        int in_row = row == r - 1 ? n - row * c : c;
        int x, w, y, h;
        split(L->cols, in_row, col, &x, &w);
        split(H, r, row, &y, &h);
        L->panes[L->first_shown + i] = (tui_rect){y0 + y, x, h, w};
    }
}

int tui_layout_compute(tui_layout *out, int cols, int rows, int n_panes, int show_log)
{
    return tui_layout_compute_console(out, cols, rows, n_panes, show_log, 0);
}

int tui_layout_compute_console(tui_layout *out, int cols, int rows, int n_panes, int show_log,
                               int show_console)
{
    tui_layout_in in = {.cols = cols,
                        .rows = rows,
                        .n_panes = n_panes,
                        .show_log = show_log,
                        .console_h = show_console ? TUI_CONSOLE_DEFAULT : 0};
    return tui_layout_compute_in(out, &in);
}

int tui_layout_compute_in(tui_layout *out, const tui_layout_in *in)
{
    int cols = in->cols, rows = in->rows, n_panes = in->n_panes;
    memset(out, 0, sizeof *out);
    out->cols = cols;
    out->rows = rows;
    out->n_panes = tui_clamp(n_panes, 0, TUI_MAX_PANES);
    if (cols < TUI_MIN_COLS || rows < TUI_MIN_ROWS) {
        out->too_small = 1;
        return -1;
    }
    out->status = (tui_rect){rows - 1, 0, 1, cols};
    int editor_lines = tui_clamp((rows - 1) / 4, EDITOR_MIN_H - 2, EDITOR_MAX_LINES);
    if (in->editor_lines > 0) editor_lines = tui_clamp(in->editor_lines, 1, editor_lines);
    int editor_h = editor_lines + 2;
    int log_h = in->show_log ? tui_clamp(rows / 4, LOG_MIN_H, 12) : 0;
    int console_h = in->console_h == TUI_CONSOLE_DEFAULT
                        ? tui_clamp(rows * 2 / 5, CONSOLE_MIN_H, CONSOLE_MAX_H)
                    : in->console_h > 0 ? tui_clamp(in->console_h, CONSOLE_MIN_H, rows)
                                        : 0;
    /* more panes than fit even with nothing else beside them: a page of those that fit, the
     * one holding in->page_of */
    int n = out->n_panes, room = rows - 1 - EDITOR_MIN_H - (in->console_h ? CONSOLE_MIN_H : 0);
    while (n > 1 && grid_columns(n, cols, room) == 0) n--;
    int page_of = tui_clamp(in->page_of, 0, out->n_panes ? out->n_panes - 1 : 0);
    out->first_shown = n ? page_of / n * n : 0;
    if (out->first_shown + n > out->n_panes) out->first_shown = out->n_panes - n;
    out->n_shown = n;
    /* give up room in this order until the panes fit: the log, console lines, editor lines,
     * and last the console itself */
    for (;;) {
        int H = rows - 1 - editor_h - log_h - console_h;
        int c = n ? grid_columns(n, cols, H) : (H >= TUI_PANE_MIN_H);
        if (c > 0) {
            out->grid_cols = n ? c : 0;
            out->grid_rows = n ? (n + c - 1) / c : 0;
            out->editor = (tui_rect){0, 0, editor_h, cols};
            if (n) place_panes(out, editor_h, H);
            else out->empty = (tui_rect){editor_h, 0, H, cols};
            if (log_h) out->log = (tui_rect){editor_h + H, 0, log_h, cols};
            if (console_h) out->console = (tui_rect){editor_h + H + log_h, 0, console_h, cols};
            break;
        }
        if (log_h) log_h = 0;
        else if (console_h > CONSOLE_MIN_H) console_h--;
        else if (editor_h > EDITOR_MIN_H) editor_h--;
        else if (console_h) console_h = 0;
        else {
            out->too_small = 1;
            return -1;
        }
    }
    int ow = cols - 4 < OVERLAY_MAX_W ? cols - 4 : OVERLAY_MAX_W;
    int oh = rows - 2 < OVERLAY_MAX_H ? rows - 2 : OVERLAY_MAX_H;
    out->overlay = (tui_rect){(rows - 1 - oh) / 2, (cols - ow) / 2, oh, ow};
    return 0;
}

void tui_layout_zoom(tui_layout *L, int pane)
{
    if (L->too_small || pane < 0 || pane >= L->n_panes) return;
    for (int i = 0; i < L->n_panes; i++) L->panes[i] = (tui_rect){0, 0, 0, 0};
    L->panes[pane] = (tui_rect){0, 0, L->status.y, L->cols};
    L->editor.h = 0;
    L->log = L->console = (tui_rect){0, 0, 0, 0};
}
