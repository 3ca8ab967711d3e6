/* What the console's files share. Threads: the UI thread owns readline, the pane and every
 * tui_app field; the Lua thread owns L. They meet under `lock`: the scrollback the Lua thread
 * writes, the requests the UI thread sends it (chunks, bound keys), and the `ui` calls it
 * sends back. */
#ifndef MTLAB_CONSOLE_INTERNAL_H
#define MTLAB_CONSOLE_INTERNAL_H

#include <lua.h>
#include <pthread.h>

#include "tui/console/console.h"
#include "tui/console/console_parts.h"

/* What the UI thread asks of the Lua thread. */
typedef enum {
    CONSOLE_REQ_CHUNK,
    CONSOLE_REQ_HELP,
    CONSOLE_REQ_FILE,
    CONSOLE_REQ_KEY
} console_req_kind;

typedef struct console_request {
    console_req_kind kind;
    char *text; /* the chunk, the name after '?' or the file */
    int key; /* CONSOLE_REQ_KEY: the bound key pressed */
    struct console_request *next;
} console_request;

/* What the Lua thread asks of the UI thread: a `ui` call, carried out by ui_execute. */
typedef enum {
    UI_PANES,
    UI_OPEN,
    UI_CLOSE,
    UI_SET_TEXT,
    UI_TRANSLATE,
    UI_HEATMAP,
    UI_TEXT_VIEW,
    UI_NOTIFY,
    UI_BIND,
    UI_THEME,
    UI_WAIT,
    UI_WAIT_KEY,
    UI_CONFIRM_QUIT,
    UI_REFERENCES,
    UI_ZOOM,
    UI_CURSOR,
    UI_SCROLL,
    UI_EXPORT,
    UI_CONSOLE,
} ui_op;

typedef struct {
    char name[64], arch[64];
    int loaded;
    int beam; /* the pane's search: 1 greedy */
} ui_pane_info;

typedef struct ui_call {
    ui_op op;
    int pane; /* 0-based, -1 when none was given */
    int kind, layer, head; /* UI_HEATMAP: mt_probe_kind or -1, 0-based layer or -1, head or -1 */
    int scale; /* UI_HEATMAP: tui_heat_norm, or -1 to keep the pane's */
    int method; /* UI_HEATMAP: mt_attr_method, or -1 to keep the pane's */
    int key; /* UI_BIND */
    int row, col; /* UI_CURSOR, UI_SCROLL: 0-based; UI_ZOOM: row 1 zooms, 0 not */
    int height, hide, focus; /* UI_CONSOLE: rows (0 keeps), 1 closes, 0/1 (-1 keeps) */
    double seconds; /* UI_NOTIFY: how long it stays (<= 0: until the next one) */
    char *text; /* path, text, message, theme name (the caller's); UI_WAIT_KEY:
                 * the key names it takes, one a line ("" any key); UI_HEATMAP:
                 * the contrast token ("" none, NULL keeps the pane's) */
    /* the answer */
    int done;
    char error[256]; /* "" when it worked */
    int result; /* UI_OPEN: the pane; UI_CONFIRM_QUIT: 1 quits */
    char result_text[256]; /* UI_WAIT_KEY: the key's name; UI_EXPORT: what was written */
    ui_pane_info panes[TUI_MAX_PANES];
    int n_panes;
    struct ui_call *next;
} ui_call;

#define CONSOLE_MAX_BINDINGS 32
#define CONSOLE_PAIR0 128 /* above the theme's pairs (meanings and heat levels) */
#define CONSOLE_SGR_PAIRS 256

typedef struct {
    int key, is_char;
} console_key;

struct tui_console {
    tui_app *app;
    int open, focused;
    int scroll; /* lines scrolled back from the newest */
    char *pending; /* lines of an incomplete chunk, or NULL */
    lua_State *parser; /* UI thread: classifies chunks (nothing runs in it) */
    /* keys typed while Lua runs (UI thread): the next ui.wait_key takes the first, readline
     * gets the rest once Lua is idle, so neither a lesson's step nor a typed line is lost */
    console_key *typeahead; /* (cap_typeahead), every key kept however many */
    int n_typeahead, cap_typeahead;
    /* the colour pairs painting escapes' colours (UI thread): pair CONSOLE_PAIR0 + i is
     * sgr_pairs[i] over the text colours it was made with */
    console_sgr sgr_pairs[CONSOLE_SGR_PAIRS];
    int n_sgr_pairs, sgr_text_fg, sgr_text_bg;

    pthread_mutex_t lock; /* guards everything below */
    pthread_cond_t wake_lua; /* a request came, or quitting */
    pthread_cond_t answered; /* a ui call is done */
    console_scrollback sb;
    char *last_traceback; /* the last error's, for F12 */
    int search_beam; /* the panes' search (1: greedy), for translate in Lua */
    int text_w, text_h, text_colors; /* the output area's columns and lines, and 1 when it
                                      * paints xterm-256 colours: for plots the Lua thread draws */
    int changed; /* output since the last frame */
    int woken; /* a TUI_EV_CONSOLE is on its way */
    console_request *req_head, *req_tail;
    ui_call *calls; /* sent, not yet taken by the UI thread */
    ui_call *waiting; /* taken, answered when their condition holds */
    int busy; /* the Lua thread runs something */
    int quitting;
    int bound[CONSOLE_MAX_BINDINGS];
    int n_bound;

    pthread_mutex_t state_lock; /* held by the Lua thread while it runs L; completion tries it */
    lua_State *L;
    pthread_t thread;
    int thread_started;
};

/* console.c */
void console_write(tui_console *c, console_line_kind kind, const char *text, size_t len);
void console_send(tui_console *c, console_req_kind kind, const char *text, int key);
/* Wake the UI thread (call with lock held). */
void console_wake_ui(tui_console *c);

/* console_readline.c (UI thread) */
int console_rl_start(tui_console *c);
void console_rl_stop(void);
void console_rl_key(int key, int is_char);
/* The prompt as readline shows it now ("> ", ">> ", "(reverse-i-search)`x': "), the line and
 * the cursor's byte offset in it. */
const char *console_rl_prompt(void);
const char *console_rl_line(int *point);
void console_rl_clear_line(void);
/* console.c: a line readline accepted. */
void console_accept_line(tui_console *c, const char *line);

/* console_lua.c */
int console_lua_start(tui_console *c);
void console_lua_stop(tui_console *c);

/* ui.c */
void ui_open_library(lua_State *L, tui_console *c);
/* UI thread: carry out a call; 1 when it is answered, 0 when it waits (UI_WAIT, keys). */
int ui_execute(tui_app *a, ui_call *call);
/* UI thread: 1 when a waiting call's condition holds now (it is then answered). */
int ui_wait_over(tui_app *a, ui_call *call);
/* 1 when a UI_WAIT_KEY call takes the key named name (its list, or any key). */
int ui_wait_key_takes(const ui_call *call, const char *name);
/* The name ui.wait_key returns for a key: "Space", "n", "Enter", "F5". */
void console_key_name(int key, int is_char, char *out, size_t len);
/* "F5", "Ctrl-G" -> the key code, or -1. */
int ui_key_code(const char *name);
/* The `ui` functions' reference: "? ui.open" and README. */
const char *ui_help(const char *name);

#endif
