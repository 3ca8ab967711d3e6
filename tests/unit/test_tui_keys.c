/* The key table: dispatch by context, no key bound twice in one context, the F1 help and the
 * status hints generated from it, so bindings and help cannot drift apart. */
#include "test_util.h"

#include <curses.h>

#include "tui/keys.h"

static const unsigned contexts[] = {TUI_IN_EDITOR, TUI_IN_PANE, TUI_IN_HEATMAP, TUI_IN_OVERLAY,
                                    TUI_IN_JOBS,   TUI_IN_LOG,  TUI_IN_CONSOLE};

static void test_dispatch_by_context(void **state)
{
    (void)state;
    assert_int_equal(tui_key_action(TUI_CTRL('q'), TUI_IN_EDITOR), TUI_ACT_QUIT);
    assert_int_equal(tui_key_action(TUI_FKEY(KEY_F(10)), TUI_IN_HEATMAP), TUI_ACT_QUIT);
    assert_int_equal(tui_key_action(TUI_FKEY(KEY_F(1)), TUI_IN_OVERLAY), TUI_ACT_HELP);
    /* the same key means different things where the focus is */
    assert_int_equal(tui_key_action(TUI_FKEY(KEY_LEFT), TUI_IN_EDITOR), TUI_ACT_LEFT);
    assert_int_equal(tui_key_action(TUI_FKEY(KEY_LEFT), TUI_IN_HEATMAP), TUI_ACT_CURSOR_LEFT);
    assert_int_equal(tui_key_action(TUI_FKEY(KEY_UP), TUI_IN_HEATMAP), TUI_ACT_CURSOR_UP);
    assert_int_equal(tui_key_action(TUI_FKEY(KEY_DOWN), TUI_IN_HEATMAP), TUI_ACT_CURSOR_DOWN);
    assert_int_equal(tui_key_action('z', TUI_IN_HEATMAP), TUI_ACT_ZOOM);
    assert_int_equal(tui_key_action('e', TUI_IN_HEATMAP), TUI_ACT_HEAT_EXPORT);
    assert_int_equal(tui_key_action('z', TUI_IN_PANE), TUI_ACT_NONE);
    assert_int_equal(tui_key_action(TUI_FKEY(KEY_LEFT), TUI_IN_PANE), TUI_ACT_NONE);
    assert_int_equal(tui_key_action(TUI_FKEY(KEY_UP), TUI_IN_PANE), TUI_ACT_SCROLL_UP);
    assert_int_equal(tui_key_action('\r', TUI_IN_EDITOR), TUI_ACT_NEWLINE);
    assert_int_equal(tui_key_action('\r', TUI_IN_OVERLAY), TUI_ACT_CHOOSE);
    assert_int_equal(tui_key_action(TUI_ESC, TUI_IN_OVERLAY), TUI_ACT_CLOSE);
    assert_int_equal(tui_key_action(TUI_ESC, TUI_IN_EDITOR), TUI_ACT_NONE);
    /* Ctrl-O is the Lua console everywhere (F5 alone opens the picker) */
    assert_int_equal(tui_key_action(TUI_CTRL('o'), TUI_IN_HEATMAP), TUI_ACT_CONSOLE);
    assert_int_equal(tui_key_action(TUI_FKEY(KEY_F(5)), TUI_IN_EDITOR), TUI_ACT_PICKER);
    /* heatmap keys only act on a heatmap */
    assert_int_equal(tui_key_action(TUI_FKEY(KEY_F(6)), TUI_IN_HEATMAP), TUI_ACT_HEAT_KIND);
    assert_int_equal(tui_key_action(TUI_FKEY(KEY_F(6)), TUI_IN_EDITOR), TUI_ACT_NONE);
    /* Tab does not leave an overlay; mouse buttons are in the table too */
    assert_int_equal(tui_key_action('\t', TUI_IN_OVERLAY), TUI_ACT_NONE);
    assert_int_equal(tui_key_action(TUI_MOUSE_CLICK, TUI_IN_PANE), TUI_ACT_FOCUS_AT);
    assert_int_equal(tui_key_action(TUI_MOUSE_WHEEL_DOWN, TUI_IN_PANE), TUI_ACT_SCROLL_DOWN);
    /* a printable character is never a binding outside the jobs view: typing goes to the
     * editor */
    assert_int_equal(tui_key_action('q', TUI_IN_EDITOR), TUI_ACT_NONE);
    assert_int_equal(tui_key_action('x', TUI_IN_EDITOR), TUI_ACT_NONE);
    /* the jobs view: its letters, and the bindings for anywhere, but not the panes' ones */
    assert_int_equal(tui_key_action('x', TUI_IN_JOBS), TUI_ACT_JOB_STOP);
    assert_int_equal(tui_key_action('l', TUI_IN_JOBS), TUI_ACT_JOB_LAUNCHER);
    assert_int_equal(tui_key_action(TUI_FKEY(KEY_F(11)), TUI_IN_JOBS), TUI_ACT_JOBS);
    assert_int_equal(tui_key_action(TUI_FKEY(KEY_F(11)), TUI_IN_EDITOR), TUI_ACT_JOBS);
    assert_int_equal(tui_key_action(TUI_FKEY(KEY_F(1)), TUI_IN_JOBS), TUI_ACT_HELP);
    assert_int_equal(tui_key_action(TUI_CTRL('q'), TUI_IN_JOBS), TUI_ACT_QUIT);
    assert_int_equal(tui_key_action(TUI_ESC, TUI_IN_JOBS), TUI_ACT_CLOSE);
    assert_int_equal(tui_key_action(TUI_FKEY(KEY_UP), TUI_IN_JOBS), TUI_ACT_SCROLL_UP);
    assert_int_equal(tui_key_action('\t', TUI_IN_JOBS), TUI_ACT_NONE);
    assert_int_equal(tui_key_action(TUI_FKEY(KEY_F(4)), TUI_IN_JOBS), TUI_ACT_NONE);
}

/* The console's own keys are in the table (and so in F1): F12 or Ctrl-T the last error's
 * traceback while it has the keys; Shift-Up and Shift-Down resize it from anywhere. */
static void test_console_keys(void **state)
{
    (void)state;
    assert_int_equal(tui_key_action(TUI_FKEY(KEY_F(12)), TUI_IN_CONSOLE),
                     TUI_ACT_CONSOLE_TRACEBACK);
    assert_int_equal(tui_key_action(TUI_CTRL('t'), TUI_IN_CONSOLE), TUI_ACT_CONSOLE_TRACEBACK);
    /* the workbench's keys stay the workbench's: the console passes them on */
    assert_int_equal(tui_key_action(TUI_CTRL('t'), TUI_IN_EDITOR), TUI_ACT_THEME);
    assert_int_equal(tui_key_action(TUI_FKEY(KEY_F(12)), TUI_IN_HEATMAP), TUI_ACT_HEAT_NORM);
    assert_int_equal(tui_key_action(TUI_CTRL('q'), TUI_IN_CONSOLE), TUI_ACT_NONE);
    for (size_t c = 0; c < sizeof contexts / sizeof contexts[0] - 1; c++) {
        assert_int_equal(tui_key_action(TUI_FKEY(KEY_SR), contexts[c]), TUI_ACT_CONSOLE_TALLER);
        assert_int_equal(tui_key_action(TUI_FKEY(KEY_SF), contexts[c]), TUI_ACT_CONSOLE_SHORTER);
    }
    int n, found = 0;
    char **lines = tui_help_lines(&n);
    for (int i = 0; i < n; i++)
        found += (strstr(lines[i], "F12 Ctrl-T") && strstr(lines[i], "traceback")) ||
                 (strstr(lines[i], "Shift-Up") && strstr(lines[i], "taller")) ||
                 (strstr(lines[i], "Shift-Down") && strstr(lines[i], "shorter")) ||
                 !strcmp(lines[i], "Lua console");
    assert_int_equal(found, 4);
    tui_lines_free(lines, n);
}

static void test_no_key_bound_twice_in_a_context(void **state)
{
    (void)state;
    for (size_t c = 0; c < sizeof contexts / sizeof contexts[0]; c++)
        for (size_t i = 0; i < tui_n_bindings; i++)
            for (int k = 0; k < TUI_BINDING_KEYS && tui_bindings[i].keys[k]; k++)
                for (size_t j = i + 1; j < tui_n_bindings; j++) {
                    if (!(tui_bindings[i].where & tui_bindings[j].where & contexts[c])) continue;
                    for (int l = 0; l < TUI_BINDING_KEYS && tui_bindings[j].keys[l]; l++)
                        if (tui_bindings[i].keys[k] == tui_bindings[j].keys[l])
                            fail_msg("key %#x bound twice in context %u (bindings %zu, %zu)",
                                     tui_bindings[i].keys[k], contexts[c], i, j);
                }
}

static void test_every_binding_is_documented_and_reachable(void **state)
{
    (void)state;
    for (size_t i = 0; i < tui_n_bindings; i++) {
        const tui_binding *b = &tui_bindings[i];
        assert_non_null(b->help);
        assert_true(strlen(b->help) > 5 && strlen(b->help) <= 56);
        assert_true(b->keys[0] != 0);
        /* a printable key would steal typing from the editor: only the jobs view and the
         * heatmap (where other letters still go to the editor) have them */
        for (int k = 0; k < TUI_BINDING_KEYS && b->keys[k]; k++)
            assert_true(b->keys[k] < 32 || b->keys[k] == 127 || TUI_IS_FKEY(b->keys[k]) ||
                        b->keys[k] >= TUI_MOUSE_CLICK || b->where == TUI_IN_JOBS ||
                        b->where == TUI_IN_HEATMAP);
        /* its action is what the key does in each of its contexts */
        for (size_t c = 0; c < sizeof contexts / sizeof contexts[0]; c++)
            if (b->where & contexts[c])
                assert_int_equal(tui_key_action(b->keys[0], contexts[c]), b->action);
    }
}

/* Laptops reach F-keys only with Fn: every function-key binding but F1 has a Ctrl key too, in
 * every context it applies to, and the help names both. */
static void test_function_keys_have_ctrl_keys(void **state)
{
    (void)state;
    for (size_t i = 0; i < tui_n_bindings; i++) {
        const tui_binding *b = &tui_bindings[i];
        if (!TUI_IS_FKEY(b->keys[0]) || b->keys[0] < TUI_FKEY(KEY_F(2)) ||
            b->keys[0] > TUI_FKEY(KEY_F(12)))
            continue;
        int ctrl = 0;
        for (int k = 1; k < TUI_BINDING_KEYS && b->keys[k]; k++)
            if (b->keys[k] < 32 && b->keys[k] != TUI_ESC) ctrl = b->keys[k];
        if (!ctrl) fail_msg("%s (F%d) has no Ctrl key", b->help, (b->keys[0] & 0xffffff) - KEY_F0);
        for (size_t c = 0; c < sizeof contexts / sizeof contexts[0]; c++)
            if (b->where & contexts[c])
                assert_int_equal(tui_key_action(ctrl, contexts[c]), b->action);
    }
    assert_int_equal(tui_key_action(TUI_CTRL('v'), TUI_IN_EDITOR), TUI_ACT_HEATMAP);
    assert_int_equal(tui_key_action(TUI_CTRL('v'), TUI_IN_HEATMAP), TUI_ACT_HEATMAP);
    assert_int_equal(tui_key_action(TUI_CTRL('k'), TUI_IN_HEATMAP), TUI_ACT_HEAT_KIND);
    assert_int_equal(tui_key_action(TUI_CTRL('y'), TUI_IN_HEATMAP), TUI_ACT_HEAT_LAYER);
    assert_int_equal(tui_key_action(TUI_CTRL('d'), TUI_IN_HEATMAP), TUI_ACT_HEAT_HEAD);
    int n, found = 0;
    char **lines = tui_help_lines(&n);
    for (int i = 0; i < n; i++)
        found += strstr(lines[i], "F3 Ctrl-V") || strstr(lines[i], "F7 Ctrl-Y");
    assert_int_equal(found, 2);
    tui_lines_free(lines, n);
}

static void test_help_lists_every_binding(void **state)
{
    (void)state;
    int n;
    char **lines = tui_help_lines(&n);
    int bindings = 0;
    for (int i = 0; i < n; i++) bindings += lines[i][0] == ' ';
    assert_int_equal(bindings, (int)tui_n_bindings);
    int found_quit = 0, found_wheel = 0;
    for (int i = 0; i < n; i++) {
        found_quit |= strstr(lines[i], "Ctrl-Q F10 Ctrl-C") && strstr(lines[i], "quit");
        found_wheel |= strstr(lines[i], "Wheel down") != NULL;
    }
    assert_true(found_quit);
    assert_true(found_wheel);
    assert_string_equal(lines[0], "Workbench");
    tui_lines_free(lines, n);
}

static void test_key_names(void **state)
{
    (void)state;
    char buf[32];
    assert_string_equal(tui_key_name(TUI_FKEY(KEY_F(12)), buf, sizeof buf), "F12");
    assert_string_equal(tui_key_name(TUI_CTRL('r'), buf, sizeof buf), "Ctrl-R");
    assert_string_equal(tui_key_name('\t', buf, sizeof buf), "Tab");
    assert_string_equal(tui_key_name('x', buf, sizeof buf), "x");
    assert_string_equal(tui_key_name(TUI_FKEY(KEY_NPAGE), buf, sizeof buf), "PgDn");
}

static void test_status_hints_fit_and_follow_the_table(void **state)
{
    (void)state;
    char buf[512];
    tui_status_hints(buf, sizeof buf, TUI_IN_EDITOR, 200);
    assert_string_equal(buf, "F1 help  Ctrl-Q quit  Ctrl-R translate  Tab focus  F2 log  "
                             "F3 heatmap  F4 beam  F5 models  F11 jobs  Ctrl-O console  F9 theme  "
                             "Ctrl-S save");
    tui_status_hints(buf, sizeof buf, TUI_IN_HEATMAP, 200);
    assert_int_equal(
        strncmp(buf, "F6 map  F7 layer  F8 head  F12 scale  z zoom  e export  F1 help", 62), 0);
    tui_status_hints(buf, sizeof buf, TUI_IN_EDITOR, 30);
    assert_string_equal(buf, "F1 help  Ctrl-Q quit");
    tui_status_hints(buf, sizeof buf, TUI_IN_OVERLAY, 200);
    assert_int_equal(strncmp(buf, "Esc close  Enter add/remove  F1 help", 36), 0);
    assert_null(strstr(buf, "Tab focus"));
    tui_status_hints(buf, sizeof buf, TUI_IN_JOBS, 200);
    assert_int_equal(strncmp(buf, "n new  x stop  r resume  o open  a all  Esc close  F1 help", 58),
                     0);
    assert_null(strstr(buf, "Tab focus"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dispatch_by_context),
        cmocka_unit_test(test_console_keys),
        cmocka_unit_test(test_no_key_bound_twice_in_a_context),
        cmocka_unit_test(test_every_binding_is_documented_and_reachable),
        cmocka_unit_test(test_function_keys_have_ctrl_keys),
        cmocka_unit_test(test_help_lists_every_binding),
        cmocka_unit_test(test_key_names),
        cmocka_unit_test(test_status_hints_fit_and_follow_the_table),
    };
    return cmocka_run_group_tests_name("tui_keys", tests, NULL, NULL);
}
