/* The terminal while the workbench owns it: curses set up for raw keys, mouse and bracketed
 * paste; stderr sent to a file (anything the engine or a library prints would corrupt the
 * screen) and shown after endwin; signal handlers that only set a flag; and a crash handler
 * that restores the terminal with async-signal-safe calls before the process dies. */
#ifndef MTLAB_TUI_TERMINAL_H
#define MTLAB_TUI_TERMINAL_H

#include <signal.h>

/* Key codes the terminal sends around a bracketed paste. */
#define TUI_KEY_PASTE_BEGIN (KEY_MAX + 1)
#define TUI_KEY_PASTE_END (KEY_MAX + 2)

/* Set by SIGINT, SIGTERM and SIGHUP: the loop ends and the terminal is restored. */
extern volatile sig_atomic_t tui_quit_signal;
/* Set by SIGWINCH (the workbench handles it, not curses): call tui_term_resize. */
extern volatile sig_atomic_t tui_resize_signal;

/* Take the terminal's new size (TIOCGWINSZ) into curses. */
void tui_term_resize(void);

/* Start curses on the terminal (mouse unless no_mouse). 0, or -1 (mt_last_error) when stdin
 * or stdout is not a terminal or curses cannot start. */
int tui_term_start(int no_mouse);
/* Leave curses, put stderr back and copy what was written to it meanwhile. */
void tui_term_stop(void);

#endif
