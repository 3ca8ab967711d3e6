/* The console's pure parts: the scrollback ring, the pretty-printer, lua.c's chunk rule
 * (incomplete -> continuation) and the Tab completion candidates. */
#include "test_util.h"

#include <lauxlib.h>
#include <lualib.h>
#include <stdlib.h>
#include <string.h>

#include "tui/console/console_parts.h"

static char *pretty_of(lua_State *L, const char *expr)
{
    char chunk[512];
    snprintf(chunk, sizeof chunk, "return %s", expr);
    if (luaL_dostring(L, chunk) != LUA_OK) fail_msg("%s: %s", expr, lua_tostring(L, -1));
    char *s = console_pretty(L, -1);
    lua_settop(L, 0);
    return s;
}

static void expect_pretty(lua_State *L, const char *expr, const char *want)
{
    char *got = pretty_of(L, expr);
    if (strcmp(got, want) != 0) fail_msg("%s printed as\n  %s\nnot\n  %s", expr, got, want);
    free(got);
}

static void test_pretty_printer(void **state)
{
    (void)state;
    lua_State *L = luaL_newstate();
    luaL_openlibs(L);
    expect_pretty(L, "2", "2");
    expect_pretty(L, "1.5", "1.5");
    expect_pretty(L, "'as it is'", "as it is");
    expect_pretty(L, "nil", "nil");
    expect_pretty(L, "{}", "{}");
    expect_pretty(L, "{1, 2, 3}", "{1, 2, 3}");
    /* the list part in order, then string keys sorted, then other keys; nested strings quoted */
    expect_pretty(
        L, "{'a\\n\"b\"', z = 1, a = true, [2.5] = 'x', ['not id'] = 0, ['end'] = 1}",
        "{\"a\\n\\\"b\\\"\", a = true, [\"end\"] = 1, [\"not id\"] = 0, z = 1, [2.5] = \"x\"}");
    /* depth-limited */
    expect_pretty(L, "{{{{1}}}}", "{{{{...}}}}");
    /* length-limited */
    char *long_list =
        pretty_of(L, "(function() local t = {} for i = 1, 100 do t[i] = i end return t end)()");
    assert_non_null(strstr(long_list, ", 24, ... (76 more)}"));
    assert_null(strstr(long_list, "25"));
    free(long_list);
    /* __tostring wins, for tables and userdata */
    expect_pretty(L, "setmetatable({}, {__tostring = function() return 'handle<x>' end})",
                  "handle<x>");
    expect_pretty(L, "{setmetatable({}, {__tostring = function() return 'h' end})}", "{h}");
    /* a table that holds itself stops at the depth limit */
    char *cyc = pretty_of(L, "(function() local t = {} t.self = t return t end)()");
    assert_string_equal(cyc, "{self = {self = {self = {...}}}}");
    free(cyc);
    lua_close(L);
}

static void test_chunks(void **state)
{
    (void)state;
    lua_State *P = luaL_newstate();
    assert_int_equal(console_chunk_check(P, "1+1"), CONSOLE_CHUNK_EXPRESSION);
    assert_int_equal(console_chunk_check(P, "mtlab.help('load')"), CONSOLE_CHUNK_EXPRESSION);
    assert_int_equal(console_chunk_check(P, "x = 1"), CONSOLE_CHUNK_STATEMENTS);
    assert_int_equal(console_chunk_check(P, "for i = 1, 3 do"), CONSOLE_CHUNK_INCOMPLETE);
    assert_int_equal(console_chunk_check(P, "for i = 1, 3 do\nprint(i)"), CONSOLE_CHUNK_INCOMPLETE);
    assert_int_equal(console_chunk_check(P, "for i = 1, 3 do\nprint(i)\nend"),
                     CONSOLE_CHUNK_STATEMENTS);
    assert_int_equal(console_chunk_check(P, "function f(a,"), CONSOLE_CHUNK_INCOMPLETE);
    assert_int_equal(console_chunk_check(P, "{1, 2,"), CONSOLE_CHUNK_INCOMPLETE);
    assert_int_equal(console_chunk_check(P, "x = = 1"), CONSOLE_CHUNK_ERROR);
    assert_int_equal(console_chunk_check(P, "end"), CONSOLE_CHUNK_ERROR);
    /* nothing is left on the stack */
    assert_int_equal(lua_gettop(P), 0);
    lua_close(P);
}

static int complete(lua_State *L, const char *word, const char *want)
{
    char **c;
    int n = console_complete(L, word, &c);
    char all[1024] = "";
    for (int i = 0; i < n; i++) {
        snprintf(all + strlen(all), sizeof all - strlen(all), "%s%s", i ? " " : "", c[i]);
        free(c[i]);
    }
    free(c);
    if (strcmp(all, want) != 0) fail_msg("%s completes to '%s', not '%s'", word, all, want);
    return n;
}

static void test_completion(void **state)
{
    (void)state;
    lua_State *L = luaL_newstate();
    luaL_openlibs(L);
    if (luaL_dostring(
            L,
            "mtlab = {score = {bleu = print, chrf = print}, scale = 2, load = print}\n"
            "local methods = {translate = print, probe = print, close = print}\n"
            "handle = setmetatable({}, {__index = function() end, methods = methods})\n"
            "obj = setmetatable({own = print, n = 1}, {__index = {size = print, count = 3}})\n") !=
        LUA_OK)
        fail_msg("%s", lua_tostring(L, -1));
    /* a unique table completes with a dot; several candidates come sorted */
    assert_int_equal(complete(L, "mtlab.sco", "mtlab.score."), 1);
    assert_int_equal(complete(L, "mtlab.sc", "mtlab.scale mtlab.score."), 2);
    assert_int_equal(complete(L, "mtlab.score.", "mtlab.score.bleu mtlab.score.chrf"), 2);
    assert_int_equal(complete(L, "mtl", "mtlab."), 1);
    /* methods after ':': the metatable's methods table, or its __index table and own functions */
    assert_int_equal(complete(L, "handle:tr", "handle:translate"), 1);
    assert_int_equal(complete(L, "handle:", "handle:close handle:probe handle:translate"), 3);
    assert_int_equal(complete(L, "obj:", "obj:own obj:size"), 2);
    /* nothing there: no candidates, and nothing runs */
    assert_int_equal(complete(L, "nosuch.x", ""), 0);
    assert_int_equal(complete(L, "mtlab.scale.x", ""), 0);
    /* keywords a line starts with */
    assert_int_equal(complete(L, "functio", "function"), 1);
    assert_int_equal(lua_gettop(L), 0);
    lua_close(L);
}

static void test_scrollback(void **state)
{
    (void)state;
    console_scrollback *s = calloc(1, sizeof *s);
    console_scrollback_write(s, CONSOLE_OUT, "a\nb", 3);
    console_scrollback_write(s, CONSOLE_OUT, "c\n", 2);
    assert_int_equal(s->n, 2);
    assert_string_equal(console_scrollback_get(s, 0)->text, "a");
    assert_string_equal(console_scrollback_get(s, 1)->text, "bc"); /* an open line continues */
    console_scrollback_write(s, CONSOLE_OUT, "x\ty", 3);
    console_scrollback_write(s, CONSOLE_ERROR, "err\n", 4); /* another kind starts a line */
    assert_string_equal(console_scrollback_get(s, 2)->text, "x       y");
    assert_int_equal(console_scrollback_get(s, 3)->kind, CONSOLE_ERROR);
    /* past the limit the oldest lines go */
    for (int i = 0; i < CONSOLE_SCROLLBACK_LINES + 10; i++) {
        char line[32];
        snprintf(line, sizeof line, "line %d\n", i);
        console_scrollback_write(s, CONSOLE_OUT, line, strlen(line));
    }
    assert_int_equal(s->n, CONSOLE_SCROLLBACK_LINES);
    assert_string_equal(console_scrollback_get(s, 0)->text, "line 10");
    char last[32];
    snprintf(last, sizeof last, "line %d", CONSOLE_SCROLLBACK_LINES + 9);
    assert_string_equal(console_scrollback_get(s, s->n - 1)->text, last);
    console_scrollback_free(s);
    free(s);
}

/* Output wraps at spaces: a row ends at the last space that lets it fit (the space not shown),
 * a word longer than the width breaks at the width, escapes take no columns. */
static void test_wrap(void **state)
{
    (void)state;
    console_row rows[8];
    assert_int_equal(console_wrap("the quick brown fox", 10, rows, 8), 2);
    assert_int_equal(rows[0].first, 0);
    assert_int_equal(rows[0].n, 9); /* "the quick" */
    assert_int_equal(rows[1].first, 10);
    assert_int_equal(rows[1].n, 9); /* "brown fox" */
    /* a space just past the width ends the row there */
    assert_int_equal(console_wrap("abcde fgh", 5, rows, 8), 2);
    assert_int_equal(rows[0].n, 5);
    assert_int_equal(rows[1].first, 6);
    assert_int_equal(rows[1].n, 3);
    /* a word longer than the width breaks at the width */
    assert_int_equal(console_wrap("ab abcdefghijkl", 5, rows, 8), 4);
    assert_int_equal(rows[0].n, 2);
    assert_int_equal(rows[1].first, 3);
    assert_int_equal(rows[1].n, 5);
    assert_int_equal(rows[2].first, 8);
    assert_int_equal(rows[2].n, 5);
    assert_int_equal(rows[3].first, 13);
    assert_int_equal(rows[3].n, 2);
    /* what fits is one row; an empty line is one empty row; a final space adds none */
    assert_int_equal(console_wrap("abcde", 5, rows, 8), 1);
    assert_int_equal(rows[0].n, 5);
    assert_int_equal(console_wrap("", 5, rows, 8), 1);
    assert_int_equal(rows[0].n, 0);
    assert_int_equal(console_wrap("abcde ", 5, rows, 8), 1);
    /* colour escapes and multi-byte characters count one column per character */
    assert_int_equal(console_wrap("\x1b[31m\xc3\xa1rbol\x1b[0m verde", 8, rows, 8), 2);
    assert_int_equal(rows[0].n, 5);
    assert_int_equal(rows[1].first, 6);
    /* more rows than asked for: all counted, max stored */
    assert_int_equal(console_wrap("a b c d e", 1, rows, 2), 5);
    assert_int_equal(rows[1].first, 2);
}

/* Colour escapes: their bytes are no columns, an SGR sets the colours that follow it. */
static void test_ansi_escapes(void **state)
{
    (void)state;
    const char *line = "ab\x1b[0;38;5;148mc\x1b[0;48;5;60m \x1b[0m\xe2\x96\x88\x1b[1;31md\x1b[K";
    assert_int_equal(console_ansi_columns(line), 6);
    console_sgr sgr = {-1, -1};
    size_t at = console_ansi_seek(line, 2, &sgr);
    assert_int_equal(line[at], 'c');
    assert_int_equal(sgr.fg, 148);
    assert_int_equal(sgr.bg, -1);
    sgr = (console_sgr){-1, -1};
    at = console_ansi_seek(line, 3, &sgr);
    assert_int_equal(line[at], ' ');
    assert_int_equal(sgr.fg, -1);
    assert_int_equal(sgr.bg, 60);
    sgr = (console_sgr){-1, -1};
    at = console_ansi_seek(line, 5, &sgr);
    assert_int_equal(line[at], 'd');
    assert_int_equal(sgr.fg, 1);
    assert_int_equal(sgr.bg, -1);
    sgr = (console_sgr){-1, -1};
    assert_int_equal(console_ansi_escape("\x1b[38;2;255;0;0m", &sgr), 15);
    assert_int_equal(sgr.fg, 196);
    /* cut short, or not an escape at all */
    assert_int_equal(console_ansi_escape("\x1b[38;5", &sgr), 6);
    assert_int_equal(console_ansi_escape("x", &sgr), 0);
    assert_int_equal(console_ansi_columns("\x1b[0m"), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pretty_printer), cmocka_unit_test(test_chunks),
        cmocka_unit_test(test_completion),     cmocka_unit_test(test_scrollback),
        cmocka_unit_test(test_ansi_escapes),   cmocka_unit_test(test_wrap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
