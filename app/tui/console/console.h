/* The workbench's Lua console (Ctrl-O), the hooks the TUI calls. The console runs chunks on its
 * own thread with its own lua_State (mtl_new plus the `ui` table); the UI thread keeps
 * the line editor (GNU readline's callback interface), the scrollback and every piece of TUI
 * state: each `ui` call is a request the UI thread carries out (tui_console_pump) and answers.
 *
 *   console.c           the pane: open/close, keys, drawing, scrollback, the UI side of calls
 *   console_readline.c  readline fed from the TUI's keys, drawn into the pane
 *   console_lua.c       the Lua thread: chunks, printing values, print/io.write, ? help
 *   ui.c                the `ui` table (Lua side) and its requests (UI side)
 *   console_*.c         pure parts (console_parts.h): scrollback, pretty-printer, chunks,
 *                       completion */
#ifndef MTLAB_CONSOLE_H
#define MTLAB_CONSOLE_H

#include <curses.h>

#include "tui/app.h"

/* Ctrl-O: open the console (starting its Lua thread the first time) and focus it, or close it. */
void tui_console_toggle(tui_app *a);
/* Shift-Up / Shift-Down: the open console delta rows taller (or shorter), never under
 * TUI_CONSOLE_MIN_ROWS (the layout caps what the screen cannot give); growing a closed one
 * opens it. */
void tui_console_resize(tui_app *a, int delta);
/* A key (as tui_handle_key gets it). 1 when the console took it: it has the focus, a script
 * waits for a key, or a script bound it. */
int tui_console_key(tui_app *a, int key, int is_char);
/* A mouse press at (y, x): focuses the console when inside it (1), else unfocuses it (0). */
int tui_console_click(tui_app *a, int y, int x);
/* Carry out the Lua thread's `ui` calls, answer those whose wait is over, take its output.
 * Called on TUI_EV_CONSOLE and after every batch of worker events. */
void tui_console_pump(tui_app *a);
void tui_console_draw(tui_app *a, WINDOW *w);
/* 1 when the console is open (the layout gives it the bottom of the screen). */
int tui_console_is_open(const tui_app *a);
/* 1 while an interrupt waits for the chunk it stops to end: the loop then pumps at least
 * every CONSOLE_REARM_S, and each pump arms the interrupt again (tui_console_pump). */
#define CONSOLE_REARM_S 0.05
int tui_console_interrupting(const tui_app *a);
/* 1 when the console is open and has the keyboard. */
int tui_console_focused(const tui_app *a);
/* Open the console and run a Lua file in it (`mtlab tui --script FILE`). */
void tui_console_run_file(tui_app *a, const char *path);
/* Stop the Lua thread (interrupting what runs) and free everything. */
void tui_console_free(tui_app *a);

#endif
