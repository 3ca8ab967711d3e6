/* libFuzzer target for the workbench console's line editor (app/tui/console/console_readline.c):
 * GNU readline's callback interface fed the TUI's keys by console_rl_key, without curses or a Lua
 * thread (as tests/unit/test_console_readline.c drives it). The input is a script of keys, one
 * byte each, some followed by argument bytes:
 *   0x00-0x7F  that control key or ASCII character (Ctrl-R/Ctrl-S searches, Ctrl-X prefixes,
 *              Esc as Meta, Tab completing against a Lua state with the standard libraries)
 *   0x80-0x8F  a function key (cursor keys, Home, End, Delete, Backspace, Enter, others)
 *   0x90-0x9F  a typed character: the code point of the next three bytes (modulo 0x110000)
 *   0xA0-0xBF  a typed character from a few multi-byte ones (accents, combining marks, CJK,
 *              emoji, no-break and zero-width spaces)
 *   0xC0-0xDF  a paste: the next (op & 31) + 1 bytes typed as characters (Latin-1)
 *   0xE0-0xFF  the line cleared, as the console does after Ctrl-C
 * vi mode (Meta-Ctrl-J) is switched off again after each key, a pasted one too (after_key).
 * After every key the line is NUL-terminated at rl_end, rl_point lies within it and, in a valid
 * UTF-8 line, on a character boundary; the prompt is one of the console's.
 * Build and run: make fuzz (see the Makefile). */
#include <curses.h>
#include <lauxlib.h>
#include <locale.h>
#include <lualib.h>
#include <pthread.h>
#include <readline/readline.h>
#include "fuzz_util.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mtlab/utf8.h"
#include "tui/console/console_internal.h"
#include "tui/keys.h"

/* readline 8.2 in callback mode never frees the context of a non-incremental search (Meta-p,
 * Meta-n) that is aborted (Ctrl-G, or erasing past its start), nor the undo records of what was
 * typed into it: _rl_nsearch_callback returns without its cleanup. Leaks of readline's own,
 * named here so that every other leak still stops the run; the slow unwinder lets the
 * suppressions see readline's frames. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
    return "leak:_rl_scxt_alloc\nleak:_rl_nsearch_callback\n";
}
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "fast_unwind_on_malloc=0"; }

static void check_line(void)
{
    int point;
    const char *line = console_rl_line(&point);
    CHECK(line);
    if (!rl_line_buffer) return;
    CHECK(rl_end >= 0 && point >= 0 && point <= rl_end);
    CHECK(rl_line_buffer[rl_end] == '\0');
    size_t len = (size_t)rl_end;
    if (memchr(line, 0, len) == NULL && mt_utf8_invalid_offset(line, len) == len)
        CHECK(point == rl_end || ((unsigned char)line[point] & 0xC0) != 0x80);
    /* outside a search or a numeric argument, the console's own prompt: no message left shown
     * (Meta-- Meta-- left "(arg: -1) " over a saved prompt, which the next search leaked) */
    const char *prompt = console_rl_prompt();
    CHECK(prompt);
    if (!RL_ISSTATE(RL_STATE_ISEARCH | RL_STATE_NSEARCH | RL_STATE_NUMERICARG | RL_STATE_VIMOTION))
        CHECK(strcmp(prompt, "> ") == 0 || strcmp(prompt, ">> ") == 0);
}

/* After every key, a pasted one too: the line checked, and vi mode (Meta-Ctrl-J, Meta-Ctrl-M,
 * pasted or typed) switched back to emacs (the console's) at once: readline 8.2's vi mode
 * overwrites its kill ring's last entry on a second kill in a row without freeing it (2 bytes
 * for "xx"), a leak of readline's own. */
static void after_key(void)
{
    check_line();
    if (rl_editing_mode == 0) rl_emacs_editing_mode(1, 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int ready;
    if (!ready) {
        setlocale(LC_ALL, "C.UTF-8");
        /* no history file: the keys are the input, nothing is read or written */
        unsetenv("XDG_STATE_HOME");
        unsetenv("HOME");
        setenv("INPUTRC", "/dev/null", 1);
        ready = 1;
    }
    tui_app *app = calloc(1, sizeof *app);
    CHECK(app && tui_queue_init(&app->q) == 0);
    tui_console c;
    memset(&c, 0, sizeof c);
    c.app = app;
    c.parser = luaL_newstate();
    c.L = luaL_newstate();
    luaL_openlibs(c.L);
    pthread_mutex_init(&c.lock, NULL);
    pthread_mutex_init(&c.state_lock, NULL);
    CHECK(console_rl_start(&c) == 0);

    static const int fkeys[16] = {
        KEY_LEFT,  KEY_RIGHT, KEY_UP,    KEY_DOWN,  KEY_HOME, KEY_END, KEY_DC,    KEY_BACKSPACE,
        KEY_ENTER, KEY_F(1),  KEY_NPAGE, KEY_PPAGE, KEY_BTAB, KEY_IC,  KEY_F(12), KEY_RESIZE};
    static const uint32_t chars[32] = {
        0xE9,   0x301,   0x4E2D,  0x1F600, 0xA0,   0x200B,   0xFEFF, 0x85,   0x2028, 0x308, 0xC5,
        0x1100, 0x1161,  0xAC00,  0x3000,  0xFF21, 0x10FFFF, 0xD800, 0xFFFD, 0x7F,   0x80,  0x9F,
        0x200D, 0x1F1E9, 0x1F1EA, 0x65,    0x20,   0x5D0,    0x627,  0x202E, 0xE000, 0xFF};
    for (size_t i = 0; i < size;) {
        uint8_t op = data[i++];
        if (op < 0x80) {
            console_rl_key(op, 0);
        } else if (op < 0x90) {
            console_rl_key(TUI_FKEY(fkeys[op & 15]), 0);
        } else if (op < 0xA0) {
            uint32_t cp = 0;
            for (int k = 0; k < 3; k++) cp = cp << 8 | (i < size ? data[i++] : 0);
            console_rl_key((int)(cp % 0x110000), 1);
        } else if (op < 0xC0) {
            console_rl_key((int)chars[op & 31], 1);
        } else if (op < 0xE0) {
            for (size_t n = (size_t)(op & 31) + 1; n > 0 && i < size; n--) {
                console_rl_key(data[i++], 1);
                after_key();
            }
        } else {
            console_rl_clear_line();
        }
        after_key();
    }

    console_rl_stop();
    for (console_request *r = c.req_head, *next; r; r = next) {
        next = r->next;
        free(r->text);
        free(r);
    }
    console_scrollback_free(&c.sb);
    lua_close(c.parser);
    lua_close(c.L);
    free(c.pending);
    pthread_mutex_destroy(&c.lock);
    pthread_mutex_destroy(&c.state_lock);
    tui_queue_destroy(&app->q);
    free(app);
    return 0;
}
