/* The terminal is given back on every way out of the workbench, not only through
 * tui_term_stop: exit() from anywhere (atexit), a crash (the signal handler) and, in the
 * sanitizer build, a sanitizer's report (its death callback). Each case runs the workbench's
 * terminal code in a child on a pseudo-terminal and reads what reached the terminal: the
 * restore sequence (keypad modes off too), then what went to stderr while curses had the
 * screen, and the stderr capture file removed. The child is this program executed again (a
 * fresh process: cmocka's signal handlers would take the crash otherwise). */
#include "test_util.h"

#include <dirent.h>
#include <errno.h>
#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tui/terminal.h"

#if defined(__SANITIZE_ADDRESS__)
#define SAN_BUILD 1
#endif

typedef enum { END_EXIT, END_SEGV, END_ASAN } child_end;

typedef struct {
    char out[65536];
    size_t len;
    int status;
} child_run;

static char tmpdir[256];

static const char *const end_names[] = {"exit", "segv", "asan"};

static void child(child_end how)
{
    if (tui_term_start(1) != 0) _exit(100);
    fputs("what the engine said meanwhile\n", stderr);
    if (how == END_EXIT) exit(3);
    if (how == END_SEGV) raise(SIGSEGV);
    /* a heap overflow ASan reports (the index hidden from the compiler's bounds warning) */
    volatile size_t four = 4;
    char *p = malloc(four);
    ((volatile char *)p)[four] = 1;
    _exit(101);
}

static void run_child(child_end how, child_run *r)
{
    memset(r, 0, sizeof *r);
    int master;
    fflush(NULL);
    pid_t pid = forkpty(&master, NULL, NULL, NULL);
    assert_true(pid >= 0);
    if (pid == 0) {
        setenv("TERM", "xterm", 1);
        setenv("TMPDIR", tmpdir, 1);
        execl("/proc/self/exe", "test_tui_terminal", "--child", end_names[how], (char *)NULL);
        _exit(102);
    }
    for (;;) {
        ssize_t n = read(master, r->out + r->len, sizeof r->out - 1 - r->len);
        if (n > 0) r->len += (size_t)n;
        else if (n < 0 && errno == EINTR) continue;
        else break; /* EIO: the child's side closed */
    }
    r->out[r->len] = '\0';
    close(master);
    assert_int_equal(waitpid(pid, &r->status, 0), pid);
}

/* The offset of the last occurrence of s in the output, or -1. */
static long last_at(const child_run *r, const char *s)
{
    long at = -1;
    size_t n = strlen(s);
    for (size_t i = 0; i + n <= r->len; i++)
        if (!memcmp(r->out + i, s, n)) at = (long)i;
    return at;
}

static int tmpdir_is_empty(void)
{
    DIR *d = opendir(tmpdir);
    assert_non_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(d);
    return n == 0;
}

/* The terminal restored (keypad off, normal screen), then the captured stderr after it. */
static void expect_restored(const child_run *r, const char *says)
{
    long keypad_off = last_at(r, "\033[?1l\033>");
    long normal_screen = last_at(r, "\033[?1049l");
    long message = last_at(r, says);
    long captured = last_at(r, "what the engine said meanwhile");
    if (keypad_off < 0 || normal_screen < 0 || message < 0 || captured < 0)
        fail_msg("not restored (keypad off at %ld, normal screen at %ld, \"%s\" at %ld, stderr at "
                 "%ld) in:\n%s",
                 keypad_off, normal_screen, says, message, captured, r->out);
    assert_true(captured > normal_screen);
    assert_true(message > normal_screen);
    assert_true(tmpdir_is_empty());
}

static int setup(void **state)
{
    (void)state;
    return test_make_tmpdir(tmpdir, sizeof tmpdir, "terminal");
}

static int teardown(void **state)
{
    (void)state;
    return test_remove_tree(tmpdir);
}

static void test_exit_restores_the_terminal(void **state)
{
    (void)state;
    child_run r;
    run_child(END_EXIT, &r);
    assert_true(WIFEXITED(r.status));
    assert_int_equal(WEXITSTATUS(r.status), 3);
    expect_restored(&r, "the workbench exited without closing its screen");
}

static void test_crash_restores_the_terminal(void **state)
{
    (void)state;
    child_run r;
    run_child(END_SEGV, &r);
#ifdef SAN_BUILD
    /* ASan reports the signal itself; the death callback restores and shows its report */
    expect_restored(&r, "the workbench was stopped by a sanitizer");
    assert_true(last_at(&r, "AddressSanitizer: SEGV") > last_at(&r, "\033[?1049l"));
#else
    assert_true(WIFSIGNALED(r.status));
    assert_int_equal(WTERMSIG(r.status), SIGSEGV);
    expect_restored(&r, "the workbench crashed (segmentation fault)");
#endif
}

static void test_sanitizer_report_restores_the_terminal(void **state)
{
    (void)state;
#ifdef SAN_BUILD
    child_run r;
    run_child(END_ASAN, &r);
    assert_false(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 101);
    expect_restored(&r, "the workbench was stopped by a sanitizer");
    assert_true(last_at(&r, "AddressSanitizer: heap-buffer-overflow") > last_at(&r, "\033[?1049l"));
#else
    skip();
#endif
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--child"))
        for (int i = 0; i < 3; i++)
            if (!strcmp(argv[2], end_names[i])) child((child_end)i);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exit_restores_the_terminal),
        cmocka_unit_test(test_crash_restores_the_terminal),
        cmocka_unit_test(test_sanitizer_report_restores_the_terminal),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
