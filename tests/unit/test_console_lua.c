/* The console's Lua thread without curses: Ctrl-C stops a chunk even when it catches errors
 * with pcall, and closing the console returns while a chunk runs (the workbench's Ctrl-Q).
 * A hang is the failure here: an alarm ends the test with a message instead. */
#include "test_util.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include "tui/console/console_internal.h"
#include "tui/app.h"

static const char *hang_what = "";

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "test_console_lua: hung (30 s): ";
    if (write(2, msg, sizeof msg - 1) < 0 || write(2, hang_what, strlen(hang_what)) < 0 ||
        write(2, "\n", 1) < 0)
        _exit(1);
    _exit(1);
}

static void deadline(const char *what)
{
    hang_what = what;
    signal(SIGALRM, on_alarm);
    alarm(30);
}

/* A console as console.c makes it, without readline and the parser (nothing here needs
 * them): its Lua thread started. */
static tui_console *console_start(tui_app *a)
{
    assert_int_equal(tui_queue_init(&a->q), 0);
    tui_console *c = calloc(1, sizeof *c);
    c->app = a;
    a->console = c;
    pthread_mutex_init(&c->lock, NULL);
    pthread_mutex_init(&c->state_lock, NULL);
    pthread_cond_init(&c->wake_lua, NULL);
    pthread_cond_init(&c->answered, NULL);
    assert_int_equal(console_lua_start(c), 0);
    return c;
}

static void console_end(tui_app *a, tui_console *c)
{
    console_lua_stop(c);
    for (console_request *r = c->req_head, *next; r; r = next) {
        next = r->next;
        free(r->text);
        free(r);
    }
    console_scrollback_free(&c->sb);
    free(c->typeahead);
    free(c->last_traceback); /* kept for F12 by the message handler since 4da7eb1 */
    pthread_cond_destroy(&c->wake_lua);
    pthread_cond_destroy(&c->answered);
    pthread_mutex_destroy(&c->lock);
    pthread_mutex_destroy(&c->state_lock);
    free(c);
    a->console = NULL;
    tui_queue_destroy(&a->q);
}

/* Waits (on the console's wake-ups) until the Lua thread is busy (want 1) or idle (0). */
static void wait_busy(tui_app *a, tui_console *c, int want)
{
    for (;;) {
        pthread_mutex_lock(&c->lock);
        int busy = c->busy || (want == 0 && c->req_head);
        c->woken = 0;
        pthread_mutex_unlock(&c->lock);
        if (busy == want) return;
        struct pollfd p = {.fd = tui_queue_fd(&a->q), .events = POLLIN};
        poll(&p, 1, 50);
        for (tui_event *e = tui_queue_drain(&a->q), *next; e; e = next) {
            next = e->next;
            tui_event_free(e);
        }
        tui_console_pump(a); /* as the workbench's loop does after every wait */
    }
}

static int scrollback_has(tui_console *c, const char *text)
{
    pthread_mutex_lock(&c->lock);
    int found = 0;
    for (int i = 0; i < c->sb.n && !found; i++)
        found = strstr(console_scrollback_get(&c->sb, i)->text, text) != NULL;
    pthread_mutex_unlock(&c->lock);
    return found;
}

static const char *const swallowing_loops[] = {
    "while true do pcall(function() while true do end end) end",
    "while true do xpcall(function() while true do end end, function(e) return e end) end",
    "while true do pcall(error, 'x') end",
};

/* Ctrl-C once: the chunk stops with "interrupted" though every error is caught below it */
static void test_ctrl_c_stops_a_pcall_loop(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof swallowing_loops / sizeof *swallowing_loops; i++) {
        tui_app *a = calloc(1, sizeof *a);
        tui_console *c = console_start(a);
        deadline(swallowing_loops[i]);
        console_send(c, CONSOLE_REQ_CHUNK, swallowing_loops[i], 0);
        wait_busy(a, c, 1);
        tui_console_key(a, TUI_CTRL('c'), 0);
        wait_busy(a, c, 0);
        alarm(0);
        if (!scrollback_has(c, "interrupted"))
            fail_msg("no 'interrupted' after %s", swallowing_loops[i]);
        /* the console goes on: the interrupt does not outlive the chunk it stopped */
        console_send(c, CONSOLE_REQ_CHUNK, "print('after' .. 'wards')", 0);
        deadline("the chunk after an interrupt");
        wait_busy(a, c, 0);
        alarm(0);
        assert_true(scrollback_has(c, "afterwards"));
        console_end(a, c);
        free(a);
    }
}

/* Ctrl-Q while a chunk runs: closing the console interrupts it and returns */
static void test_stop_returns_while_a_pcall_loop_runs(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof swallowing_loops / sizeof *swallowing_loops; i++) {
        tui_app *a = calloc(1, sizeof *a);
        tui_console *c = console_start(a);
        deadline(swallowing_loops[i]);
        console_send(c, CONSOLE_REQ_CHUNK, swallowing_loops[i], 0);
        wait_busy(a, c, 1);
        console_end(a, c);
        alarm(0);
        free(a);
    }
    /* the stop comes before the thread has begun the chunk it took */
    tui_app *a = calloc(1, sizeof *a);
    tui_console *c = console_start(a);
    deadline("a stop right after the send");
    console_send(c, CONSOLE_REQ_CHUNK, swallowing_loops[0], 0);
    console_end(a, c);
    alarm(0);
    free(a);
}

/* a ui function called through pcall names itself in an argument error */
static void test_ui_functions_are_named(void **state)
{
    (void)state;
    tui_app *a = calloc(1, sizeof *a);
    tui_console *c = console_start(a);
    deadline("ui argument errors");
    console_send(c, CONSOLE_REQ_CHUNK,
                 "for _, k in ipairs({'open', 'close', 'set_text', 'heatmap', "
                 "'notify', 'bind', 'theme', 'text_view'}) do "
                 "local ok, e = pcall(ui[k], coroutine.create(print)) "
                 "print(k .. ': ' .. tostring(e)) end",
                 0);
    wait_busy(a, c, 0);
    alarm(0);
    assert_true(
        scrollback_has(c, "notify: bad argument #1 to 'ui.notify' (string expected, got thread)"));
    if (scrollback_has(c, "'?'")) fail_msg("a ui function is unnamed in an argument error");
    console_end(a, c);
    free(a);
}

/* a value whose __tostring raises: the error is printed and the console goes on (it ran
 * outside any pcall, so Lua's panic aborted the workbench) */
static void test_printing_a_result_that_raises(void **state)
{
    (void)state;
    tui_app *a = calloc(1, sizeof *a);
    tui_console *c = console_start(a);
    deadline("a __tostring that raises");
    console_send(c, CONSOLE_REQ_CHUNK,
                 "setmetatable({}, {__tostring = function() error('no text for this') end})", 0);
    console_send(c, CONSOLE_REQ_CHUNK, "print('still' .. ' here')", 0);
    wait_busy(a, c, 0);
    alarm(0);
    assert_true(scrollback_has(c, "no text for this"));
    assert_true(scrollback_has(c, "still here"));
    console_end(a, c);
    free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ctrl_c_stops_a_pcall_loop),
        cmocka_unit_test(test_stop_returns_while_a_pcall_loop_runs),
        cmocka_unit_test(test_ui_functions_are_named),
        cmocka_unit_test(test_printing_a_result_that_raises),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
