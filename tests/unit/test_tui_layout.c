/* The workbench layout: a pure function checked at every terminal size from 40x12 to 300x100
 * (and below, where it must refuse) for 0 to 4 panes, with and without the log and the Lua
 * console. */
#include "test_util.h"
#include "tui/layout.h"

static int overlap(tui_rect a, tui_rect b)
{
    if (a.h <= 0 || a.w <= 0 || b.h <= 0 || b.w <= 0) return 0;
    return a.y < b.y + b.h && b.y < a.y + a.h && a.x < b.x + b.w && b.x < a.x + a.w;
}

static int inside(tui_rect r, int cols, int rows)
{
    return r.y >= 0 && r.x >= 0 && r.y + r.h <= rows && r.x + r.w <= cols;
}

/* Every region of one layout: on screen, not empty where present, no two overlapping, and
 * together covering the whole screen (nothing left blank and unowned). */
static void check_layout(const tui_layout *L, int cols, int rows, int n, int show_log)
{
    tui_rect r[TUI_MAX_PANES + 5];
    int k = 0;
    r[k++] = L->editor;
    r[k++] = L->status;
    /* the page shown: at least one pane when there are any, the others absent */
    if (n > 0)
        assert_true(L->n_shown >= 1 && L->first_shown >= 0 && L->first_shown + L->n_shown <= n);
    for (int i = 0; i < L->n_panes; i++) {
        int shown = i >= L->first_shown && i < L->first_shown + L->n_shown;
        if (shown) r[k++] = L->panes[i];
        else if (L->panes[i].h != 0)
            fail_msg("%dx%d, %d panes: pane %d is off the page yet placed", cols, rows, n, i);
    }
    if (n == 0) r[k++] = L->empty;
    if (L->log.h > 0) r[k++] = L->log;
    if (L->console.h > 0) r[k++] = L->console;
    assert_int_equal(L->n_panes, n);
    long area = 0;
    for (int i = 0; i < k; i++) {
        if (!inside(r[i], cols, rows) || r[i].h <= 0 || r[i].w <= 0)
            fail_msg("%dx%d, %d panes, log %d: region %d (%d,%d %dx%d) off-screen or empty", cols,
                     rows, n, show_log, i, r[i].y, r[i].x, r[i].w, r[i].h);
        area += (long)r[i].h * r[i].w;
        for (int j = 0; j < i; j++)
            if (overlap(r[i], r[j]))
                fail_msg("%dx%d, %d panes: regions %d and %d overlap", cols, rows, n, i, j);
    }
    assert_int_equal(area, (long)cols * rows);
    for (int i = L->first_shown; i < L->first_shown + L->n_shown; i++) {
        assert_true(L->panes[i].w >= TUI_PANE_MIN_W);
        assert_true(L->panes[i].h >= TUI_PANE_MIN_H);
    }
    assert_true(L->editor.h >= 3);
    assert_int_equal(L->status.y, rows - 1);
    assert_true(inside(L->overlay, cols, rows));
    assert_true(L->overlay.w > 0 && L->overlay.h > 0);
}

static void test_every_size_fits(void **state)
{
    (void)state;
    tui_layout L;
    for (int rows = TUI_MIN_ROWS; rows <= 100; rows++)
        for (int cols = TUI_MIN_COLS; cols <= 300; cols++)
            for (int n = 0; n <= TUI_MAX_PANES; n++)
                for (int log = 0; log < 2; log++) {
                    if (tui_layout_compute(&L, cols, rows, n, log) != 0)
                        fail_msg("%dx%d with %d panes (log %d) refused", cols, rows, n, log);
                    assert_false(L.too_small);
                    check_layout(&L, cols, rows, n, log);
                }
}

static void test_every_size_fits_with_the_console(void **state)
{
    (void)state;
    tui_layout L;
    for (int rows = TUI_MIN_ROWS; rows <= 100; rows++)
        for (int cols = TUI_MIN_COLS; cols <= 300; cols += 7)
            for (int n = 0; n <= TUI_MAX_PANES; n++)
                for (int log = 0; log < 2; log++) {
                    if (tui_layout_compute_console(&L, cols, rows, n, log, 1) != 0)
                        fail_msg("%dx%d with %d panes, log %d, console: refused", cols, rows, n,
                                 log);
                    check_layout(&L, cols, rows, n, log);
                    /* the console is left out only where the panes would not fit beside it */
                    if (n <= 1 || rows >= 20)
                        if (L.console.h < 4)
                            fail_msg("%dx%d with %d panes, log %d: console %d rows", cols, rows, n,
                                     log, L.console.h);
                    if (L.console.h > 0) {
                        assert_int_equal(L.console.y + L.console.h, rows - 1);
                        assert_int_equal(L.console.w, cols);
                    }
                }
}

static void test_console_takes_the_bottom_and_gives_way_before_the_editor(void **state)
{
    (void)state;
    tui_layout L, without;
    assert_int_equal(tui_layout_compute_console(&L, 120, 40, 2, 0, 1), 0);
    assert_int_equal(tui_layout_compute(&without, 120, 40, 2, 0), 0);
    assert_int_equal(L.console.h, 40 * 2 / 5);
    assert_int_equal(L.console.y, 39 - L.console.h);
    /* the panes stay, shorter; the editor keeps its size */
    assert_int_equal(L.editor.h, without.editor.h);
    assert_true(L.panes[0].h >= TUI_PANE_MIN_H && L.panes[0].h < without.panes[0].h);
    assert_int_equal(L.panes[0].y + L.panes[0].h, L.console.y);
    /* with the log open the log sits between the panes and the console */
    assert_int_equal(tui_layout_compute_console(&L, 120, 40, 2, 1, 1), 0);
    assert_true(L.log.h > 0);
    assert_int_equal(L.log.y + L.log.h, L.console.y);
    /* closed, nothing of it is left */
    assert_int_equal(without.console.h, 0);
}

/* On a projector (100x30, 80x24) one line of text keeps a one-line editor, the console keeps
 * the height asked, and the panes get every other row. */
static void test_editor_fits_its_text_and_the_console_its_height(void **state)
{
    (void)state;
    int sizes[][2] = {{100, 30}, {80, 24}, {160, 45}};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        int cols = sizes[i][0], rows = sizes[i][1];
        tui_layout L;
        tui_layout_in in = {
            .cols = cols, .rows = rows, .n_panes = 2, .editor_lines = 1, .console_h = 6};
        assert_int_equal(tui_layout_compute_in(&L, &in), 0);
        assert_int_equal(L.editor.h, 3);
        assert_int_equal(L.console.h, 6);
        assert_int_equal(L.panes[0].h, rows - 1 - 3 - 6);
        assert_int_equal(L.panes[0].y, 3);
        /* more text, more rows, up to a quarter of the screen */
        in.editor_lines = 3;
        assert_int_equal(tui_layout_compute_in(&L, &in), 0);
        assert_int_equal(L.editor.h, 5);
        in.editor_lines = 50;
        assert_int_equal(tui_layout_compute_in(&L, &in), 0);
        assert_int_equal(L.editor.h, tui_clamp((rows - 1) / 4, 1, 8) + 2);
        /* the default console is what tui_layout_compute_console gives */
        in.console_h = TUI_CONSOLE_DEFAULT;
        tui_layout def;
        assert_int_equal(tui_layout_compute_in(&L, &in), 0);
        assert_int_equal(tui_layout_compute_console(&def, cols, rows, 2, 0, 1), 0);
        assert_int_equal(L.console.h, def.console.h);
        /* four panes: a grid whose maps show more than a few rows */
        in.n_panes = 4, in.console_h = 0, in.editor_lines = 1;
        assert_int_equal(tui_layout_compute_in(&L, &in), 0);
        for (int p = 0; p < 4; p++)
            if (L.panes[p].h < 10)
                fail_msg("%dx%d, four panes: pane %d is %d rows", cols, rows, p + 1, L.panes[p].h);
        in.n_panes = 2, in.console_h = 6, in.editor_lines = 50;
        /* a console taller than the screen allows gives way to the panes */
        in.console_h = 200;
        assert_int_equal(tui_layout_compute_in(&L, &in), 0);
        assert_true(L.panes[0].h >= TUI_PANE_MIN_H);
        assert_int_equal(L.console.y + L.console.h, rows - 1);
    }
}

static void test_below_minimum_is_too_small(void **state)
{
    (void)state;
    tui_layout L;
    int sizes[][2] = {{39, 40}, {120, 11}, {10, 5}, {0, 0}, {1, 1}, {39, 11}};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        assert_int_equal(tui_layout_compute(&L, sizes[i][0], sizes[i][1], 2, 0), -1);
        assert_true(L.too_small);
    }
}

static void test_side_by_side_when_wide_stacked_when_narrow(void **state)
{
    (void)state;
    tui_layout L;
    assert_int_equal(tui_layout_compute(&L, 120, 40, 2, 0), 0);
    assert_int_equal(L.grid_cols, 2);
    assert_int_equal(L.panes[0].y, L.panes[1].y);
    assert_int_equal(L.panes[0].w + L.panes[1].w, 120);
    assert_int_equal(tui_layout_compute(&L, 60, 20, 2, 0), 0); /* exactly 30 each */
    assert_int_equal(L.grid_cols, 2);
    assert_int_equal(tui_layout_compute(&L, 50, 40, 2, 0), 0); /* 25 each: stack them */
    assert_int_equal(L.grid_cols, 1);
    assert_int_equal(L.panes[0].x, L.panes[1].x);
    assert_true(L.panes[1].y > L.panes[0].y);
    assert_int_equal(tui_layout_compute(&L, 40, 12, 4, 0), 0); /* tiny: a 2x2 grid */
    assert_int_equal(L.grid_cols, 2);
    assert_int_equal(L.grid_rows, 2);
}

static void test_log_gives_way_before_panes(void **state)
{
    (void)state;
    tui_layout L;
    assert_int_equal(tui_layout_compute(&L, 120, 40, 2, 1), 0);
    assert_true(L.log.h >= 4);
    assert_int_equal(L.log.y + L.log.h, 39);
    /* at the minimum height four stacked panes leave no room for the log */
    assert_int_equal(tui_layout_compute(&L, 40, 12, 4, 1), 0);
    assert_int_equal(L.log.h, 0);
}

static void test_contains(void **state)
{
    (void)state;
    tui_rect r = {2, 3, 4, 5};
    assert_true(tui_rect_contains(r, 2, 3));
    assert_true(tui_rect_contains(r, 5, 7));
    assert_false(tui_rect_contains(r, 6, 7));
    assert_false(tui_rect_contains(r, 5, 8));
    assert_false(tui_rect_contains((tui_rect){0, 0, 0, 5}, 0, 0));
}

/* Every shipped architecture side by side: seven panes all show at 160x45 and, smaller, at
 * 80x24; at 40x12 a page of those that fit shows, the one holding the pane asked for (the
 * focused one). */
static void test_seven_panes(void **state)
{
    (void)state;
    tui_layout L;
    tui_layout_in in = {.cols = 160, .rows = 45, .n_panes = 7};
    assert_int_equal(tui_layout_compute_in(&L, &in), 0);
    assert_int_equal(L.first_shown, 0);
    assert_int_equal(L.n_shown, 7);
    check_layout(&L, 160, 45, 7, 0);
    in = (tui_layout_in){.cols = 80, .rows = 24, .n_panes = 7};
    assert_int_equal(tui_layout_compute_in(&L, &in), 0);
    assert_int_equal(L.n_shown, 7);
    check_layout(&L, 80, 24, 7, 0);
    in = (tui_layout_in){.cols = 40, .rows = 12, .n_panes = 7, .page_of = 6};
    assert_int_equal(tui_layout_compute_in(&L, &in), 0);
    assert_true(L.n_shown >= 2 && L.n_shown < 7);
    assert_true(6 >= L.first_shown && 6 < L.first_shown + L.n_shown);
    assert_true(L.panes[0].h == 0);
    check_layout(&L, 40, 12, 7, 0);
    in.page_of = 0;
    assert_int_equal(tui_layout_compute_in(&L, &in), 0);
    assert_int_equal(L.first_shown, 0);
    assert_true(L.panes[6].h == 0);
}

/* Zoom: the pane takes every line above the status line, nothing else is left to draw, and
 * a too-small terminal or a pane that is not there changes nothing. */
static void test_zoom_gives_one_pane_the_screen(void **state)
{
    (void)state;
    for (int n = 1; n <= TUI_MAX_PANES; n++)
        for (int i = 0; i < n; i++) {
            tui_layout L;
            assert_int_equal(tui_layout_compute_console(&L, 80, 24, n, 1, 1), 0);
            tui_layout_zoom(&L, i);
            assert_int_equal(L.panes[i].y, 0);
            assert_int_equal(L.panes[i].x, 0);
            assert_int_equal(L.panes[i].h, 23);
            assert_int_equal(L.panes[i].w, 80);
            for (int j = 0; j < n; j++)
                if (j != i) assert_int_equal(L.panes[j].h, 0);
            assert_int_equal(L.editor.h + L.log.h + L.console.h, 0);
            assert_int_equal(L.editor.w, 80);
            assert_int_equal(L.status.y, 23);
            assert_false(tui_rect_contains(L.editor, 0, 0));
        }
    tui_layout L, before;
    tui_layout_compute(&L, 30, 10, 2, 0);
    before = L;
    tui_layout_zoom(&L, 0);
    assert_memory_equal(&L, &before, sizeof L);
    tui_layout_compute(&L, 80, 24, 2, 0);
    before = L;
    tui_layout_zoom(&L, 2);
    assert_memory_equal(&L, &before, sizeof L);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_size_fits),
        cmocka_unit_test(test_every_size_fits_with_the_console),
        cmocka_unit_test(test_console_takes_the_bottom_and_gives_way_before_the_editor),
        cmocka_unit_test(test_editor_fits_its_text_and_the_console_its_height),
        cmocka_unit_test(test_below_minimum_is_too_small),
        cmocka_unit_test(test_side_by_side_when_wide_stacked_when_narrow),
        cmocka_unit_test(test_log_gives_way_before_panes),
        cmocka_unit_test(test_contains),
        cmocka_unit_test(test_seven_panes),
        cmocka_unit_test(test_zoom_gives_one_pane_the_screen),
    };
    return cmocka_run_group_tests_name("tui_layout", tests, NULL, NULL);
}
