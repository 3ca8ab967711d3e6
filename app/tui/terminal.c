#include "tui/terminal.h"

#include <curses.h>
#include <errno.h>
#include <fcntl.h>
#include <langinfo.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "mtlab/error.h"

/* Under AddressSanitizer its own handlers report a SIGSEGV, SIGBUS or SIGFPE (with the stack
 * and the address), which the workbench's crash handler would hide; the terminal is restored
 * by the death callback instead, after the report. */
#if defined(__SANITIZE_ADDRESS__)
#define TUI_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TUI_ASAN 1
#endif
#endif
#ifdef TUI_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

volatile sig_atomic_t tui_quit_signal;
volatile sig_atomic_t tui_resize_signal;

/* What the crash handler needs, set before curses starts. */
static int saved_stderr = -1; /* the real stderr while fd 2 is the capture file */
static char capture_path[64]; /* the capture file ("" when none) */
static struct termios saved_tio;
static int have_tio;
static SCREEN *screen;
/* 1 from tui_term_start to tui_term_stop: what restore_terminal must undo */
static volatile sig_atomic_t owned;

/* Bracketed paste off, mouse reporting off, attributes reset, cursor shown, keypad (cursor
 * and numeric) modes off, normal screen. */
static const char restore_seq[] = "\033[?2004l\033[?1000l\033[?1002l\033[?1006l\033[0m"
                                  "\033[?25h\033[?1l\033>\033[?1049l\r\n";

static void write_all(int fd, const char *s, size_t n)
{
    while (n > 0) {
        ssize_t k = write(fd, s, n);
        if (k <= 0) return;
        s += k;
        n -= (size_t)k;
    }
}

static void on_quit_signal(int sig)
{
    (void)sig;
    tui_quit_signal = 1;
}

static void on_resize_signal(int sig)
{
    (void)sig;
    tui_resize_signal = 1;
}

void tui_term_resize(void)
{
    struct winsize ws;
    tui_resize_signal = 0;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0)
        resizeterm(ws.ws_row, ws.ws_col);
}

/* The terminal put back, and what stderr got while curses had the screen shown after `why`
 * and removed, on a way out that does not pass tui_term_stop: a crash, exit() from anywhere,
 * a sanitizer's report. Only async-signal-safe calls: write, tcsetattr, open, read, unlink,
 * dup2, close. */
static void restore_terminal(const char *why)
{
    if (!owned) return;
    owned = 0;
    write_all(STDOUT_FILENO, restore_seq, sizeof restore_seq - 1);
    if (have_tio) tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved_tio);
    int err = saved_stderr >= 0 ? saved_stderr : STDERR_FILENO;
    static const char head[] = "mtlab: the workbench ";
    static const char tail[] = "; the terminal was restored\n";
    write_all(err, head, sizeof head - 1);
    write_all(err, why, strlen(why));
    write_all(err, tail, sizeof tail - 1);
    if (capture_path[0]) {
        int fd = open(capture_path, O_RDONLY);
        char buf[4096];
        ssize_t n;
        while (fd >= 0 && (n = read(fd, buf, sizeof buf)) > 0) write_all(err, buf, (size_t)n);
        if (fd >= 0) close(fd);
        unlink(capture_path);
        capture_path[0] = '\0';
    }
    if (saved_stderr >= 0) {
        dup2(saved_stderr, STDERR_FILENO);
        close(saved_stderr);
        saved_stderr = -1;
    }
}

static void on_crash(int sig)
{
    restore_terminal(sig == SIGSEGV  ? "crashed (segmentation fault)"
                     : sig == SIGBUS ? "crashed (bus error)"
                     : sig == SIGFPE ? "crashed (arithmetic exception)"
                     : sig == SIGILL ? "crashed (illegal instruction)"
                                     : "crashed (abort)");
    raise(sig);
}

static void on_exit_unrestored(void)
{
    if (!owned) return;
    fflush(stdout); /* curses' last output before the sequence that ends it */
    restore_terminal("exited without closing its screen");
}

#ifdef TUI_ASAN
static void on_sanitizer_death(void)
{
    restore_terminal("was stopped by a sanitizer (its report follows)");
}
#endif

/* The signals on_crash takes: under ASan, the sanitizer keeps those it reports. */
#ifdef TUI_ASAN
static const int crash_signals[] = {SIGILL, SIGABRT};
#else
static const int crash_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
#endif

static void install_handlers(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = on_quit_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    /* installed before initscr, so curses leaves SIGWINCH to us */
    sa.sa_handler = on_resize_signal;
    sigaction(SIGWINCH, &sa, NULL);
    sa.sa_handler = on_crash;
    sa.sa_flags = SA_RESETHAND;
    for (size_t i = 0; i < sizeof crash_signals / sizeof crash_signals[0]; i++)
        sigaction(crash_signals[i], &sa, NULL);
    static int registered;
    if (!registered) {
        registered = 1;
        atexit(on_exit_unrestored);
#ifdef TUI_ASAN
        __sanitizer_set_death_callback(on_sanitizer_death);
#endif
    }
}

static void uninstall_handlers(void)
{
    int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGWINCH};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) signal(sigs[i], SIG_DFL);
    for (size_t i = 0; i < sizeof crash_signals / sizeof crash_signals[0]; i++)
        signal(crash_signals[i], SIG_DFL);
}

/* Send fd 2 to a fresh temporary file, keeping the real stderr in saved_stderr. */
static void capture_stderr(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(capture_path, sizeof capture_path, "%s/mtlab-stderr-XXXXXX",
             tmp && strlen(tmp) < 32 ? tmp : "/tmp");
    int fd = mkstemp(capture_path);
    if (fd < 0) {
        capture_path[0] = '\0';
        return;
    }
    fflush(stderr);
    saved_stderr = dup(STDERR_FILENO);
    dup2(fd, STDERR_FILENO);
    close(fd);
}

static void release_stderr(void)
{
    if (saved_stderr < 0) return;
    fflush(stderr);
    dup2(saved_stderr, STDERR_FILENO);
    close(saved_stderr);
    saved_stderr = -1;
    FILE *f = fopen(capture_path, "rb");
    if (f) {
        char buf[4096];
        size_t n;
        while ((n = fread(buf, 1, sizeof buf, f)) > 0) fwrite(buf, 1, n, stderr);
        fclose(f);
    }
    unlink(capture_path);
    capture_path[0] = '\0';
}

int tui_term_start(int no_mouse)
{
    if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO))
        return mt_error("the workbench needs a terminal (stdin and stdout are not both one); "
                        "for files use `mtlab translate`");
    have_tio = tcgetattr(STDIN_FILENO, &saved_tio) == 0;
    capture_stderr();
    owned = 1;
    install_handlers();
    /* Line drawing in a UTF-8 locale: the box characters themselves, not the terminal's
     * alternate character set, which tmux with TERM=xterm-256color shows as "lqqqk"
     * (a user's own NCURSES_NO_UTF8_ACS is kept). */
    if (!strcmp(nl_langinfo(CODESET), "UTF-8")) setenv("NCURSES_NO_UTF8_ACS", "1", 0);
    /* newterm, unlike initscr, returns on an unknown terminal instead of exiting */
    screen = newterm(NULL, stdout, stdin);
    if (!screen) {
        owned = 0;
        uninstall_handlers();
        release_stderr();
        return mt_error("curses cannot start on this terminal (TERM=%s has no usable terminfo "
                        "entry; try TERM=xterm-256color, or install ncurses-term)",
                        getenv("TERM") ? getenv("TERM") : "unset");
    }
    raw();
    noecho();
    nonl();
    keypad(stdscr, TRUE);
    nodelay(stdscr, TRUE);
    set_escdelay(25);
    define_key("\033[200~", TUI_KEY_PASTE_BEGIN);
    define_key("\033[201~", TUI_KEY_PASTE_END);
    if (!no_mouse) {
        /* releases too: curses keeps reading (blocking) past events it was not asked for */
        mousemask(BUTTON1_PRESSED | BUTTON1_RELEASED | BUTTON4_PRESSED | BUTTON5_PRESSED, NULL);
        mouseinterval(0);
    }
    fputs("\033[?2004h", stdout);
    fflush(stdout);
    return 0;
}

void tui_term_stop(void)
{
    owned = 0;
    fputs("\033[?2004l", stdout);
    fflush(stdout);
    mousemask(0, NULL);
    endwin();
    delscreen(screen);
    screen = NULL;
    uninstall_handlers();
    release_stderr();
}
