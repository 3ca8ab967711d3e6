/* The heatmap's layout inside a pane, for many pane sizes, map sizes and label widths: nothing
 * off the pane, the cursor's row and column always shown (so the marker and the readout name
 * one token), one text row per map row whenever the rows fit, labels placed, and the legend
 * cut to fit. */
#include "test_util.h"

#include "tui/heat_layout.h"

static const int widths[] = {8, 9, 12, 17, 24, 37, 38, 58, 78, 118, 158};
static const int sizes[] = {1, 2, 3, 5, 8, 12, 19, 33, 61};
static const int label_ws[] = {0, 1, 5, 12, 30};

#define N(a) (int)(sizeof(a) / sizeof((a)[0]))

/* Every property of one layout; msg names the case. */
static void check(const tui_heat_geom_in *in, int h, int w)
{
    tui_heat_geom g;
    tui_heat_geom_fit(&g, in, h, w);
    char c[160];
    snprintf(c, sizeof c, "pane %dx%d, map %dx%d, splits %d/%d, labels %d/%d, cursor %d,%d", w, h,
             in->cols, in->rows, in->row_split, in->col_split, in->row_label_w, in->col_label_w,
             in->sel_row, in->sel_col);
    if (g.readout_y != h - 1) fail_msg("%s: readout at %d", c, g.readout_y);
    if (h < 3 || w < 8) {
        if (g.n_rows || g.n_cols) fail_msg("%s: cells in a pane too small", c);
        return;
    }
    int bottom = g.legend_y >= 0 ? g.legend_y : g.readout_y;
    if (g.legend_y >= 0 && g.legend_y != h - 2) fail_msg("%s: legend at %d", c, g.legend_y);
    if (g.n_rows < 1 || g.n_cols < 1) fail_msg("%s: no cells shown", c);
    if (g.cell_h < 1 || g.cell_w < 1) fail_msg("%s: cells %dx%d", c, g.cell_w, g.cell_h);
    /* the parts in order, inside the pane */
    if (g.marker_y >= 0 && g.marker_y != 1) fail_msg("%s: marker at %d", c, g.marker_y);
    if (g.labels_y < 1 || g.labels_y + g.labels_h > g.cells_y)
        fail_msg("%s: labels %d+%d over the cells at %d", c, g.labels_y, g.labels_h, g.cells_y);
    if (g.marker_y >= 0 && g.marker_y >= g.labels_y) fail_msg("%s: marker in the labels", c);
    int last_row = g.row0 + g.n_rows - 1, last_col = g.col0 + g.n_cols - 1;
    if (tui_heat_row_y(&g, last_row) + g.cell_h > bottom)
        fail_msg("%s: rows run to %d, past %d", c, tui_heat_row_y(&g, last_row) + g.cell_h, bottom);
    if (tui_heat_col_x(&g, last_col) + g.cell_w > w)
        fail_msg("%s: columns run to %d, past %d", c, tui_heat_col_x(&g, last_col) + g.cell_w, w);
    if (g.cells_x != g.gutter_w || g.gutter_w < 2 || g.gutter_w > w / 2)
        fail_msg("%s: gutter %d", c, g.gutter_w);
    if (g.row0 < 0 || last_row >= in->rows || g.col0 < 0 || last_col >= in->cols)
        fail_msg("%s: rows %d+%d, columns %d+%d", c, g.row0, g.n_rows, g.col0, g.n_cols);
    /* the cursor is on the screen, where a click finds it again */
    int y = tui_heat_row_y(&g, in->sel_row), x = tui_heat_col_x(&g, in->sel_col);
    if (y < 0 || x < 0) fail_msg("%s: the cursor is not shown (%d, %d)", c, y, x);
    if (tui_heat_row_at(&g, y) != in->sel_row || tui_heat_col_at(&g, x) != in->sel_col)
        fail_msg("%s: the cursor's cell maps back to %d,%d", c, tui_heat_row_at(&g, y),
                 tui_heat_col_at(&g, x));
    /* every shown row has lines of its own (so its label), and every line maps back */
    for (int r = g.row0; r <= last_row; r++) {
        int ry = tui_heat_row_y(&g, r);
        for (int k = 0; k < g.cell_h; k++)
            if (tui_heat_row_at(&g, ry + k) != r)
                fail_msg("%s: line %d is not row %d", c, ry + k, r);
        if (r > g.row0 && ry < tui_heat_row_y(&g, r - 1) + g.cell_h)
            fail_msg("%s: rows %d and %d share a line", c, r - 1, r);
    }
    for (int col = g.col0; col <= last_col; col++)
        if (tui_heat_col_at(&g, tui_heat_col_x(&g, col) + g.cell_w - 1) != col)
            fail_msg("%s: column %d does not map back", c, col);
    /* the boundary only inside the map and only with every row or column shown */
    if (g.sep_row && (g.n_rows != in->rows || in->row_split <= 0 || in->row_split >= in->rows))
        fail_msg("%s: a row boundary where there is none", c);
    if (g.sep_col && (g.n_cols != in->cols || in->col_split <= 0 || in->col_split >= in->cols))
        fail_msg("%s: a column boundary where there is none", c);
    if (g.sep_row && tui_heat_row_at(&g, tui_heat_row_y(&g, in->row_split) - 1) != -1)
        fail_msg("%s: the boundary line is a row", c);
    /* one text row per map row whenever they fit beside a line of labels */
    int lines = h - 2 - (h - 2 >= 4) - (in->col_label_w > 0);
    if (in->rows <= lines && g.n_rows != in->rows)
        fail_msg("%s: %d rows fit in %d lines but %d are shown", c, in->rows, lines, g.n_rows);
    /* column labels whenever there are two lines for the map and them */
    if (in->col_label_w > 0 && h - 2 - (h - 2 >= 4) >= 2 && g.labels_h < 1)
        fail_msg("%s: no column labels", c);
    if (g.vertical && g.labels_h > in->col_label_w) fail_msg("%s: labels band too high", c);
    /* cells as wide as fit: one more column each would not */
    int W = w - g.gutter_w - g.sep_col;
    if (g.cell_w < TUI_HEAT_CELL_W_MAX && g.n_cols == in->cols && (g.cell_w + 1) * in->cols <= W)
        fail_msg("%s: cells %d wide where %d fit", c, g.cell_w, W / in->cols);
}

static void test_many_sizes(void **state)
{
    (void)state;
    for (int h = 1; h <= 50; h++)
        for (int wi = 0; wi < N(widths); wi++)
            for (int ri = 0; ri < N(sizes); ri++)
                for (int ci = 0; ci < N(sizes); ci++)
                    for (int li = 0; li < N(label_ws); li++)
                        for (int split = 0; split < 2; split++) {
                            int rows = sizes[ri], cols = sizes[ci];
                            tui_heat_geom_in in = {rows,
                                                   cols,
                                                   split ? rows / 2 : 0,
                                                   split ? cols / 2 : 0,
                                                   label_ws[li],
                                                   label_ws[(li + 2) % N(label_ws)],
                                                   (h * 7) % rows,
                                                   (h * 5 + li) % cols,
                                                   0,
                                                   0};
                            check(&in, h, widths[wi]);
                            /* the cursor in the corners, with a stale scroll position */
                            in.sel_row = rows - 1, in.sel_col = cols - 1;
                            check(&in, h, widths[wi]);
                            in.row0 = rows - 1, in.col0 = cols - 1;
                            in.sel_row = 0, in.sel_col = 0;
                            check(&in, h, widths[wi]);
                        }
}

/* A 78-column, 18-line pane (a 160x48 terminal with four panes) shows a 12-token sentence
 * whole: a line per token, the boundary, labels and cells wider than one column. */
static void test_a_sentence_fills_the_pane(void **state)
{
    (void)state;
    tui_heat_geom_in in = {12, 12, 6, 6, 7, 7, 11, 3, 0, 0};
    tui_heat_geom g;
    tui_heat_geom_fit(&g, &in, 18, 78);
    assert_int_equal(g.n_rows, 12);
    assert_int_equal(g.n_cols, 12);
    assert_int_equal(g.sep_col, 1);
    assert_true(g.cell_w >= 5);
    assert_int_equal(g.vertical, 0);
    /* words of 7 in cells of 5: one line across when the marker and the boundary take the
     * spare lines ... */
    assert_int_equal(g.stagger, 0);
    assert_int_equal(g.labels_h, 1);
    assert_int_equal(g.legend_y, 16);
    assert_int_equal(g.marker_y, 1);
    assert_int_equal(g.sep_row, 1);
    /* ... two staggered lines, a word per two cells, with one more line */
    tui_heat_geom_fit(&g, &in, 19, 78);
    assert_int_equal(g.stagger, 1);
    assert_int_equal(g.labels_h, 2);
    assert_int_equal(g.marker_y, 1);
    assert_int_equal(g.sep_row, 1);
    tui_heat_geom_fit(&g, &in, 18, 78);
    /* a 38-line zoomed pane gives every token two or more lines */
    tui_heat_geom_fit(&g, &in, 38, 118);
    assert_true(g.cell_h >= 2);
    assert_int_equal(g.sep_row, 1);
    assert_int_equal(tui_heat_row_y(&g, 6), tui_heat_row_y(&g, 5) + g.cell_h + 1);
    /* a 40-column terminal's pane: narrow cells, labels down the columns */
    tui_heat_geom_fit(&g, &in, 5, 36);
    assert_int_equal(g.cell_w, 2);
    assert_int_equal(g.vertical, 1);
    assert_true(g.n_rows >= 1);
    assert_int_equal(g.legend_y, -1);
}

/* A long map scrolls: the first row shown follows the cursor and stays put while the cursor
 * moves inside the window. */
static void test_scrolling_follows_the_cursor(void **state)
{
    (void)state;
    tui_heat_geom_in in = {60, 60, 30, 30, 6, 6, 0, 0, 0, 0};
    tui_heat_geom g;
    tui_heat_geom_fit(&g, &in, 12, 40);
    assert_int_equal(g.row0, 0);
    int shown = g.n_rows;
    assert_true(shown < 60);
    in.sel_row = shown; /* one past the bottom */
    tui_heat_geom_fit(&g, &in, 12, 40);
    assert_int_equal(g.row0, 1);
    in.row0 = g.row0, in.sel_row = 2;
    tui_heat_geom_fit(&g, &in, 12, 40);
    assert_int_equal(g.row0, 1);
    in.sel_col = 59;
    tui_heat_geom_fit(&g, &in, 12, 40);
    assert_int_equal(g.col0 + g.n_cols - 1, 59);
}

static void test_legend_shortens(void **state)
{
    (void)state;
    tui_heat_legend l;
    assert_int_equal(tui_heat_legend_fit(&l, 80, 1, 5, 24), 0);
    assert_int_equal(l.prefix + l.what + l.ends, 3);
    assert_int_equal(l.steps, 16);
    int last = 1 << 30;
    for (int w = 80; w >= 0; w--) {
        int rc = tui_heat_legend_fit(&l, w, 1, 5, 24);
        if (rc == 0) {
            assert_true(l.width <= w);
            assert_true(l.width <= last);
            last = l.width;
        } else {
            assert_true(w < 4);
        }
    }
    assert_int_equal(tui_heat_legend_fit(&l, 16, 1, 5, 24), 0);
    assert_int_equal(l.steps, 8);
    assert_int_equal(l.what, 0);
    assert_int_equal(l.ends, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_many_sizes),
        cmocka_unit_test(test_a_sentence_fills_the_pane),
        cmocka_unit_test(test_scrolling_follows_the_cursor),
        cmocka_unit_test(test_legend_shortens),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
