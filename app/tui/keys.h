/* The one key table: every binding of the workbench, with where it applies and what it says
 * in the F1 help and in the status line. Dispatch (tui_key_action), the help screen
 * (tui_help_lines) and the status hints (tui_status_hints) all read it, so they cannot drift
 * apart. Mouse buttons are pseudo-keys in the same table.
 *
 * Keys are ints: a character or control character is its code point ('\t', TUI_CTRL('q')); a
 * curses function key is TUI_FKEY(KEY_F(1)); mouse pseudo-keys are TUI_MOUSE_*. Typing a
 * printable character is not in the table, except in the jobs view and a few letters of the
 * heatmap (z, e, m, c): it goes to the editor. */
#ifndef MTLAB_TUI_KEYS_H
#define MTLAB_TUI_KEYS_H

#include <stddef.h>

#define TUI_CTRL(c) ((c)&0x1f)
#define TUI_ESC 27
#define TUI_FKEY(k) ((k) | 0x1000000) /* a curses KEY_* code */
#define TUI_IS_FKEY(k) (((k)&0x1000000) != 0)
#define TUI_MOUSE_CLICK 0x2000001
#define TUI_MOUSE_WHEEL_UP 0x2000002
#define TUI_MOUSE_WHEEL_DOWN 0x2000003

typedef enum {
    TUI_ACT_NONE,
    TUI_ACT_QUIT,
    TUI_ACT_HELP,
    TUI_ACT_LOG,
    TUI_ACT_FOCUS_NEXT,
    TUI_ACT_FOCUS_PREV,
    TUI_ACT_FOCUS_AT, /* the pane (or editor) under the mouse */
    TUI_ACT_TRANSLATE,
    TUI_ACT_SAVE, /* write the source and every pane's translation to files */
    TUI_ACT_BEAM,
    TUI_ACT_LANGUAGE, /* the editor writes the next source language of the panes */
    TUI_ACT_PICKER,
    TUI_ACT_CONSOLE,
    TUI_ACT_CONSOLE_TALLER, /* the console's height, a step at a time (ui.console{height=}) */
    TUI_ACT_CONSOLE_SHORTER,
    TUI_ACT_CONSOLE_TRACEBACK, /* the console: the last error's traceback */
    TUI_ACT_THEME,
    TUI_ACT_HEATMAP,
    TUI_ACT_HEAT_KIND,
    TUI_ACT_HEAT_LAYER,
    TUI_ACT_HEAT_HEAD,
    TUI_ACT_HEAT_NORM,
    TUI_ACT_HEAT_METHOD, /* the attribution map's method */
    TUI_ACT_HEAT_CONTRAST, /* the attribution map's contrast token */
    TUI_ACT_CURSOR_LEFT, /* heatmap: move the cursor a column / a row */
    TUI_ACT_CURSOR_RIGHT,
    TUI_ACT_CURSOR_UP,
    TUI_ACT_CURSOR_DOWN,
    TUI_ACT_ZOOM, /* the focused pane over the whole screen, and back */
    TUI_ACT_HEAT_EXPORT, /* the heatmap as SVG, PNG and CSV files */
    TUI_ACT_REDRAW,
    TUI_ACT_CLOSE,
    TUI_ACT_CHOOSE, /* overlay: act on the highlighted line */
    TUI_ACT_SCROLL_UP,
    TUI_ACT_SCROLL_DOWN,
    TUI_ACT_PAGE_UP,
    TUI_ACT_PAGE_DOWN,
    TUI_ACT_NEWLINE,
    TUI_ACT_BACKSPACE,
    TUI_ACT_DELETE,
    TUI_ACT_LEFT,
    TUI_ACT_RIGHT,
    TUI_ACT_UP,
    TUI_ACT_DOWN,
    TUI_ACT_HOME,
    TUI_ACT_END,
    TUI_ACT_CLEAR,
    TUI_ACT_JOBS, /* open or close the jobs view */
    TUI_ACT_JOB_NEW, /* jobs view: the config picker */
    TUI_ACT_JOB_STOP,
    TUI_ACT_JOB_RESUME,
    TUI_ACT_JOB_OPEN, /* the highlighted run's best bundle in a model pane */
    TUI_ACT_JOB_PLOTS, /* plot the highlighted run or every run */
    TUI_ACT_JOB_LAUNCHER, /* local or slurm */
} tui_action;

/* Where a binding applies: the context of the key is one of these bits. */
enum {
    TUI_IN_EDITOR = 1,
    TUI_IN_PANE = 2, /* a model pane showing its translation */
    TUI_IN_HEATMAP = 4, /* a model pane showing its heatmap */
    TUI_IN_OVERLAY = 8, /* help or the bundle picker */
    TUI_IN_ANY = 15,
    TUI_IN_JOBS = 16, /* the jobs view (F11); the bindings for anywhere apply there too */
    TUI_IN_LOG = 32, /* the log (F2), focused with Tab */
    TUI_IN_CONSOLE = 64, /* the console's own keys while it has the keyboard; the others go to
                          * its line editor, function keys to the workbench */
};

#define TUI_BINDING_KEYS 3

typedef struct {
    int keys[TUI_BINDING_KEYS]; /* 0-terminated when fewer */
    unsigned where;
    tui_action action;
    const char *section; /* help section heading */
    const char *help; /* one line for F1 */
    const char *hint; /* short status-line label, or NULL when not hinted */
} tui_binding;

extern const tui_binding tui_bindings[];
extern const size_t tui_n_bindings;

/* The action of key in context (one TUI_IN_* bit): a binding for that context wins over one
 * that applies anywhere. TUI_ACT_NONE when unbound. */
tui_action tui_key_action(int key, unsigned context);
/* "F1", "Ctrl-Q", "Tab", "Shift-Tab", "Esc", "Enter", "PgUp", "Wheel up", "Click". */
const char *tui_key_name(int key, char *buf, size_t len);
/* The F1 screen: section headings and "  KEYS  help" lines, generated from the table, as a
 * malloc'd array of *n malloc'd strings (free with tui_lines_free). */
char **tui_help_lines(int *n);
void tui_lines_free(char **lines, int n);
/* The name of the first key bound to act ("Ctrl-F"), for messages that name it; "" when none. */
const char *tui_action_key(tui_action act, char *buf, size_t len);
/* "F1 help  F2 log  ..." for the bindings of a context that carry a hint (those of the
 * context alone first), cut to fit width columns at a whole hint; writes into buf. */
void tui_status_hints(char *buf, size_t len, unsigned context, int width);

#endif
