/* The console's line editor (console_readline.c): GNU readline's callback interface fed the
 * TUI's keys by console_rl_key, driven here without curses or a Lua thread. */
#include "test_util.h"

#include <curses.h>
#include <lauxlib.h>
#include <pthread.h>
#include <readline/history.h>
#include <readline/readline.h>

#include "tui/console/console_internal.h"
#include "tui/keys.h"

static char state_dir[256];

static int setup(void **state)
{
    (void)state;
    if (test_make_tmpdir(state_dir, sizeof state_dir, "readline") != 0) return -1;
    setenv("XDG_STATE_HOME", state_dir, 1);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    test_remove_tree(state_dir);
    return 0;
}

typedef struct {
    tui_app *app;
    tui_console c;
} bench;

static void start(bench *b)
{
    memset(b, 0, sizeof *b);
    b->app = calloc(1, sizeof *b->app);
    assert_non_null(b->app);
    assert_int_equal(tui_queue_init(&b->app->q), 0);
    b->c.app = b->app;
    b->c.parser = luaL_newstate();
    b->c.L = luaL_newstate(); /* what Tab completes against */
    pthread_mutex_init(&b->c.lock, NULL);
    pthread_mutex_init(&b->c.state_lock, NULL);
    assert_int_equal(console_rl_start(&b->c), 0);
}

static void stop(bench *b)
{
    console_rl_stop();
    for (console_request *r = b->c.req_head, *next; r; r = next) {
        next = r->next;
        free(r->text);
        free(r);
    }
    console_scrollback_free(&b->c.sb);
    lua_close(b->c.parser);
    lua_close(b->c.L);
    free(b->c.pending);
    pthread_mutex_destroy(&b->c.lock);
    pthread_mutex_destroy(&b->c.state_lock);
    tui_queue_destroy(&b->app->q);
    free(b->app);
}

/* Each byte as the TUI passes a typed control key or ASCII character. */
static void keys(const char *s)
{
    for (; *s; s++) console_rl_key((unsigned char)*s, 0);
}

static const char *line(void)
{
    int point;
    return console_rl_line(&point);
}

/* Ctrl-R (or Ctrl-S), then Ctrl-X, a prefix inside the incremental search, then any key:
 * readline 8.2's callback mode crashed ending the search there (the workbench died on
 * Ctrl-O, Ctrl-R, Ctrl-X, x). The search ends with the line it found, as an Emacs user
 * expects of a command key, and the key sequence after it runs. */
static void test_prefix_key_inside_search(void **state)
{
    (void)state;
    bench b;
    start(&b);
    keys("alpha = 1\r"
         "beta = 2\r");
    keys("\x12"
         "bet"
         "\x18"
         "x");
    assert_string_equal(line(), "beta = 2");
    console_rl_clear_line();
    /* Ctrl-X Ctrl-U (undo) after the search: the line the search found stays */
    keys("\x12"
         "alp"
         "\x18\x15");
    assert_string_equal(line(), "alpha = 1");
    console_rl_clear_line();
    /* the forward search, and a search that found nothing */
    keys("\x13"
         "zz"
         "\x18"
         "y");
    keys("\x07\x07");
    console_rl_clear_line();
    /* typing goes on normally after each */
    keys("ok");
    assert_string_equal(line(), "ok");
    stop(&b);
}

/* A console started after one that had history: rl_clear_history left the freed entries in
 * the list, which the next console's first search read as lines (fuzz_console: Ctrl-S, Esc, a,
 * Enter run twice crashed in readline's search cleanup). */
static void test_search_after_a_restart(void **state)
{
    (void)state;
    /* no history file, whose lines a new console would read back over the freed ones */
    char *home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
    unsetenv("XDG_STATE_HOME");
    unsetenv("HOME");
    for (int round = 0; round < 3; round++) {
        bench b;
        start(&b);
        HIST_ENTRY **h = history_list();
        assert_int_equal(history_length, 0);
        assert_true(h == NULL || h[0] == NULL);
        keys("\x13"
             "\x1b"
             "a"
             "\r"
             "bb"
             "\r");
        keys("\x12"
             "b"
             "\x1b");
        assert_string_equal(line(), "bb");
        console_rl_clear_line();
        keys("ok");
        assert_string_equal(line(), "ok");
        stop(&b);
    }
    setenv("XDG_STATE_HOME", state_dir, 1);
    if (home) setenv("HOME", home, 1);
    free(home);
}

/* A console stopped inside a search (or a prefix, a numeric argument): the next console's keys
 * went to the old search, whose terminators the new console's start had freed (fuzz_console:
 * a heap-use-after-free in readline's search). Stopping ends every multi-key state. */
static void test_stop_inside_a_search(void **state)
{
    (void)state;
    static const char *const unfinished[] = {"\x12"
                                             "x",
                                             "\x13", "\x18",
                                             "\x1b"
                                             "5",
                                             "\x1b"};
    for (size_t i = 0; i < sizeof unfinished / sizeof unfinished[0]; i++) {
        bench b;
        start(&b);
        keys(unfinished[i]);
        stop(&b);
        start(&b);
        assert_false(RL_ISSTATE(RL_STATE_ISEARCH | RL_STATE_MULTIKEY | RL_STATE_NUMERICARG));
        keys("ok");
        assert_string_equal(line(), "ok");
        stop(&b);
    }
}

/* Ctrl-Space (a NUL key) inside a search: readline ended the search and handed the NUL back as
 * "no key", leaking the prompt the search had saved (fuzz_console, LeakSanitizer). The search
 * ends with the line it found, then Ctrl-Space sets the mark. */
static void test_ctrl_space_inside_search(void **state)
{
    (void)state;
    bench b;
    start(&b);
    keys("one two\r");
    keys("\x12"
         "one");
    console_rl_key(0, 0);
    assert_false(RL_ISSTATE(RL_STATE_ISEARCH));
    assert_string_equal(line(), "one two");
    keys("\x13");
    console_rl_key(0, 0);
    keys("!");
    assert_false(RL_ISSTATE(RL_STATE_ISEARCH));
    console_rl_clear_line();
    keys("ok");
    assert_string_equal(line(), "ok");
    stop(&b);
}

/* A history line edited, then a search aborted over it: the line's undo list is also the
 * history entry's, and console_rl_stop freed it twice (fuzz_console: a double free when the
 * workbench closed the console). */
static void test_stop_after_editing_history(void **state)
{
    (void)state;
    bench b;
    start(&b);
    keys("]\r");
    console_rl_key(TUI_FKEY(KEY_UP), 0);
    keys("\x15"
         "\x13"
         "\x07"
         "k");
    assert_string_equal(line(), "k");
    stop(&b);
}

/* Every three keys from the keys that start or end readline's multi-key states (searches,
 * prefixes, Meta, quoted insert, numeric arguments, abort, accept) after a search or a prefix:
 * none crashes, and after Ctrl-G twice and a cleared line typing works again. */
static void test_key_triples_after_search_and_prefixes(void **state)
{
    (void)state;
    static const char firsts[] = "\x12\x13\x18\x1b\x16\x1f";
    static const char alphabet[] = "\x12\x13\x18\x1b\x16\x07\x15\r\x0e\x10\x19x[1-";
    bench b;
    start(&b);
    keys("alpha = 1\r"
         "x = [1]\r");
    for (const char *f = firsts; *f; f++)
        for (const char *m = alphabet; *m; m++)
            for (const char *k = alphabet; *k; k++) {
                char seq[8] = {'a', *f, *m, *k, '\0'};
                keys(seq);
                keys("\x07\x07");
                /* Meta-Enter is readline's vi-editing-mode */
                if (rl_editing_mode == 0) rl_emacs_editing_mode(1, 0);
                console_rl_clear_line();
                keys("z");
                if (strcmp(line(), "z") != 0)
                    fail_msg("after %02x %02x %02x the line is \"%s\", not \"z\"",
                             (unsigned char)*f, (unsigned char)*m, (unsigned char)*k, line());
                console_rl_clear_line();
            }
    stop(&b);
}

/* A combining mark typed alone, then history and a forward search: readline's search left the
 * point inside the mark's two bytes (fuzz_console), where the next key would insert into the
 * middle of a character. The point stays on a character boundary after every key. */
static void test_point_stays_on_a_character(void **state)
{
    (void)state;
    bench b;
    start(&b);
    console_rl_key(0x301, 1); /* U+0301 COMBINING ACUTE ACCENT, two bytes */
    keys("\x0f"
         "e");
    console_rl_key(TUI_FKEY(KEY_UP), 0);
    keys("\x13"
         "s"
         "\x1b");
    int point;
    const char *l = console_rl_line(&point);
    size_t len = strlen(l);
    assert_true(point >= 0 && (size_t)point <= len);
    if ((size_t)point < len) assert_int_not_equal((unsigned char)l[point] & 0xC0, 0x80);
    assert_true(rl_point == point);
    stop(&b);
}

/* A keyboard macro holding a search and a key sequence: Ctrl-X ( Ctrl-R Ctrl-X Ctrl-X [ Ctrl-X )
 * records it, Ctrl-X e (here in the next console, as fuzz_console found it) replayed the keys
 * from inside readline, where end_search never saw the Ctrl-X reach the search: readline 8.2
 * crashed in rl_callback_read_char. A macro replays the keys as if typed: the search ends, Ctrl-X
 * Ctrl-X swaps point and mark, "[" is inserted. */
static void test_keyboard_macro_with_a_search(void **state)
{
    (void)state;
    bench b;
    start(&b);
    keys("alpha = 1\r");
    keys("\x18("
         "\x12"
         "\x18\x18"
         "["
         "\x18)");
    assert_string_equal(line(), "[");
    keys("\x18"
         "e");
    assert_string_equal(line(), "[[");
    console_rl_clear_line();
    keys("ab"
         "\x18("
         "c"
         "\x18)"
         "\x18"
         "e"
         "\x18"
         "e");
    assert_string_equal(line(), "abccc");
    stop(&b);
    /* the macro outlives its console, as readline's does */
    start(&b);
    keys("\x18("
         "\x12"
         "\x18\x18"
         "["
         "\x18)");
    console_rl_clear_line();
    stop(&b);
    start(&b);
    keys("\x18"
         "e");
    assert_string_equal(line(), "[");
    keys("\x18"
         "e"
         "\x07");
    assert_false(RL_ISSTATE(RL_STATE_ISEARCH | RL_STATE_MACROINPUT | RL_STATE_MACRODEF));
    stop(&b);
    /* a console closed while a macro was being recorded leaves no recording behind */
    start(&b);
    keys("\x18("
         "\x12"
         "x");
    stop(&b);
    start(&b);
    keys("ok"
         "\x18)");
    assert_string_equal(line(), "ok");
    assert_false(RL_ISSTATE(RL_STATE_MACRODEF));
    stop(&b);
}

static void write_inputrc(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

/* The same keys in a string macro of the user's inputrc ("\C-t": "\C-r\C-x\C-x["), read when
 * readline starts or again with Ctrl-X Ctrl-R: readline replays those from inside itself too. */
static void test_string_macro_with_a_search(void **state)
{
    (void)state;
    char inputrc[300];
    snprintf(inputrc, sizeof inputrc, "%s/inputrc", state_dir);
    write_inputrc(inputrc, "\"\\C-t\": \"\\C-r\\C-x\\C-x[\"\n");
    assert_int_equal(rl_read_init_file(inputrc), 0); /* as readline's first start reads it */
    bench b;
    start(&b);
    keys("alpha = 1\r");
    keys("\x14");
    assert_string_equal(line(), "[");
    keys("\x14"
         "x");
    char *by_macro = strdup(line());
    console_rl_clear_line();
    keys("\x12\x18\x18["
         "\x12\x18\x18["
         "x"); /* the same keys typed */
    assert_string_equal(line(), by_macro);
    free(by_macro);
    console_rl_clear_line();
    /* Ctrl-X Ctrl-R reads the file again: a macro under Meta (Esc o) */
    write_inputrc(inputrc, "\"\\eo\": \"\\C-s\\C-x\\C-x]\"\n");
    keys("\x18\x12");
    keys("\x1b"
         "o");
    assert_string_equal(line(), "]");
    keys("\x1b"
         "o"
         "\x07");
    assert_string_equal(line(), "]]");
    console_rl_clear_line();
    keys("ok");
    assert_string_equal(line(), "ok");
    stop(&b);
}

/* Meta-p and Meta-n, readline's non-incremental searches, from a line with edits: one that found
 * a line leaked the undo records of the line it replaced, one begun on an edited history line
 * leaked that line's (fuzz_console; LeakSanitizer, so the ASan build holds this test). A search
 * begun on a history line starts from the end of the history. */
static void test_noninc_search_from_edited_lines(void **state)
{
    (void)state;
    bench b;
    start(&b);
    keys("nx = 1\r"
         "ny = 2\r");
    keys("ab"
         "\x1b"
         "p"
         "nx ="
         "\r");
    assert_string_equal(line(), "nx = 1");
    console_rl_clear_line();
    console_rl_key(TUI_FKEY(KEY_UP), 0);
    keys("f"
         "\x1b"
         "n"
         "zz"
         "\r");
    assert_false(RL_ISSTATE(RL_STATE_NSEARCH));
    console_rl_clear_line();
    console_rl_key(TUI_FKEY(KEY_UP), 0);
    assert_string_equal(line(), "ny = 2f");
    keys("g"
         "\x1b"
         "p"
         "ny ="
         "\r");
    assert_false(RL_ISSTATE(RL_STATE_NSEARCH));
    assert_memory_equal(line(), "ny = 2", 6);
    console_rl_clear_line();
    keys("ok");
    assert_string_equal(line(), "ok");
    stop(&b);
}

/* Tab with no Lua state behind the console (it failed to start, or closed while keys still
 * came: the key-mash test's seed 899401 crashed in lua_gettop(NULL)): nothing is completed. */
static void test_tab_without_a_lua_state(void **state)
{
    (void)state;
    bench b;
    start(&b);
    lua_close(b.c.L);
    b.c.L = NULL;
    keys("mtl"
         "\t"
         "\t");
    assert_string_equal(line(), "mtl");
    b.c.L = luaL_newstate();
    stop(&b);
}

/* Meta-- Meta-- (Esc - Esc -): the Esc ends the first argument, and the second '-' comes after
 * an explicit argument, so readline 8.2 runs '-' as a key (self-insert with -1: nothing) and then
 * shows "(arg: -1) " by saving the prompt anew, with no argument left to restore it: the prompt
 * stayed, and the next search's save overwrote the saved one, leaking the prompt the console's
 * start had made (fuzz_console, LeakSanitizer: 8 and 3 bytes from rl_expand_prompt). Meta-1
 * Meta-- the same with an insert. The message ends with its key, in one console and the next. */
static void test_argument_message_ends_with_its_key(void **state)
{
    (void)state;
    static const char *const keys_left[] = {"\x1b-\x1b-",
                                            "\x1b"
                                            "1"
                                            "\x1b-",
                                            "\x1b-\x1b-x"};
    static const char *const lines[] = {"", "-", "x"};
    for (size_t i = 0; i < sizeof keys_left / sizeof keys_left[0]; i++) {
        bench b;
        start(&b);
        keys(keys_left[i]);
        assert_string_equal(line(), lines[i]);
        assert_false(RL_ISSTATE(RL_STATE_NUMERICARG));
        assert_string_equal(console_rl_prompt(), "> ");
        keys("\x12"
             "\x07");
        assert_string_equal(console_rl_prompt(), "> ");
        keys("\x1b-\x1b-");
        stop(&b);
        start(&b);
        assert_string_equal(console_rl_prompt(), "> ");
        keys("\x12"
             "\x07"
             "ok");
        assert_string_equal(line(), "ok");
        assert_string_equal(console_rl_prompt(), "> ");
        stop(&b);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prefix_key_inside_search),
        cmocka_unit_test(test_search_after_a_restart),
        cmocka_unit_test(test_stop_inside_a_search),
        cmocka_unit_test(test_ctrl_space_inside_search),
        cmocka_unit_test(test_stop_after_editing_history),
        cmocka_unit_test(test_key_triples_after_search_and_prefixes),
        cmocka_unit_test(test_point_stays_on_a_character),
        cmocka_unit_test(test_tab_without_a_lua_state),
        cmocka_unit_test(test_keyboard_macro_with_a_search),
        cmocka_unit_test(test_string_macro_with_a_search),
        cmocka_unit_test(test_noninc_search_from_edited_lines),
        cmocka_unit_test(test_argument_message_ends_with_its_key),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
