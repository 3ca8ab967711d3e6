/* The console pane on the UI thread: opening and closing it, the keys it takes (the lines
 * readline accepts are handled in console_io.c), drawing the scrollback and the prompt, and
 * carrying out the Lua thread's `ui` calls. */
#include <lauxlib.h>
#include <lualib.h>
#include <stdlib.h>
#include <string.h>

#include "tui/console/console_internal.h"
#include "lua/mtlab_lua.h"
#include "mtlab/error.h"
#include "mtlab/utf8.h"
#include "tui/styled.h"

static tui_console *console_new(tui_app *a)
{
    tui_console *c = mt_xcalloc(1, sizeof *c);
    c->app = a;
    c->text_w = COLS > 12 ? COLS - 2 : 10; /* until the first frame says */
    c->text_h = 20;
    c->search_beam = a->default_beam;
    c->sgr_text_fg = c->sgr_text_bg = -2;
    pthread_mutex_init(&c->lock, NULL);
    pthread_mutex_init(&c->state_lock, NULL);
    pthread_cond_init(&c->wake_lua, NULL);
    pthread_cond_init(&c->answered, NULL);
    c->parser = luaL_newstate();
    if (!c->parser || console_lua_start(c) != 0) {
        tui_notice(a, "console: %s", mt_last_error());
        if (c->parser) lua_close(c->parser);
        free(c);
        return NULL;
    }
    console_rl_start(c);
    static const char hello[] =
        "Lua console: mtlab.* and ui.* (? NAME for help, Tab completes, Ctrl-C interrupts, "
        "F12 or Ctrl-T the last error's traceback, Shift-Up/Down resize, Ctrl-O closes)\n";
    console_write(c, CONSOLE_OUT, hello, sizeof hello - 1);
    return c;
}

void tui_console_free(tui_app *a)
{
    tui_console *c = a->console;
    if (!c) return;
    console_lua_stop(c);
    console_rl_stop();
    for (console_request *r = c->req_head, *next; r; r = next) {
        next = r->next;
        free(r->text);
        free(r);
    }
    console_scrollback_free(&c->sb);
    free(c->typeahead);
    free(c->last_traceback);
    lua_close(c->parser);
    free(c->pending);
    pthread_cond_destroy(&c->wake_lua);
    pthread_cond_destroy(&c->answered);
    pthread_mutex_destroy(&c->lock);
    pthread_mutex_destroy(&c->state_lock);
    free(c);
    a->console = NULL;
}

static int ensure(tui_app *a)
{
    if (!a->console) a->console = console_new(a);
    return a->console != NULL;
}

void tui_console_toggle(tui_app *a)
{
    if (!ensure(a)) return;
    tui_console *c = a->console;
    c->open = !c->open;
    c->focused = c->open;
    a->relayout = 1;
}

void tui_console_run_file(tui_app *a, const char *path)
{
    if (!ensure(a)) return;
    a->console->open = a->console->focused = 1;
    a->relayout = 1;
    console_send(a->console, CONSOLE_REQ_FILE, path, 0);
}

int tui_console_is_open(const tui_app *a) { return a->console && a->console->open; }

int tui_console_interrupting(const tui_app *a)
{
    tui_console *c = a->console;
    if (!c) return 0;
    pthread_mutex_lock(&c->lock);
    int on = c->busy && mtl_interrupted(c->L);
    pthread_mutex_unlock(&c->lock);
    return on;
}

int tui_console_focused(const tui_app *a)
{
    return a->console && a->console->open && a->console->focused;
}

/* Ctrl-C: interrupt what runs, end every wait with an error; at an idle prompt drop the line. */
static void interrupt(tui_console *c)
{
    pthread_mutex_lock(&c->lock);
    int busy = c->busy;
    if (busy) {
        mtl_interrupt(c->L);
        for (ui_call *w = c->waiting; w; w = w->next) {
            snprintf(w->error, sizeof w->error, "interrupted");
            w->done = 1;
        }
        c->waiting = NULL;
        pthread_cond_broadcast(&c->answered);
    }
    pthread_mutex_unlock(&c->lock);
    if (!busy) {
        free(c->pending);
        c->pending = NULL;
        console_rl_clear_line();
        console_write(c, CONSOLE_ECHO, "^C\n", 3);
    }
}

/* A script waits for a key (ui.wait_key, os.exit's question): this one answers it. */
static int answer_key_wait(tui_app *a, tui_console *c, int key, int is_char)
{
    int taken = 0;
    pthread_mutex_lock(&c->lock);
    for (ui_call **w = &c->waiting; *w;) {
        ui_call *call = *w;
        if (call->op != UI_WAIT_KEY && call->op != UI_CONFIRM_QUIT) {
            w = &call->next;
            continue;
        }
        if (call->op == UI_CONFIRM_QUIT) {
            call->result = is_char && (key == 'y' || key == 'Y');
            a->notice[0] = '\0';
            if (call->result) a->quit = 1;
        } else {
            char name[64];
            console_key_name(key, is_char, name, sizeof name);
            /* a lesson takes its own keys (Space, Enter, Backspace); the others go on */
            if (!ui_wait_key_takes(call, name)) {
                w = &call->next;
                continue;
            }
            snprintf(call->result_text, sizeof call->result_text, "%s", name);
        }
        call->done = 1;
        *w = call->next;
        taken = 1;
        break;
    }
    if (taken) pthread_cond_broadcast(&c->answered);
    pthread_mutex_unlock(&c->lock);
    return taken;
}

static int is_bound(const tui_console *c, int key)
{
    for (int i = 0; i < c->n_bound; i++)
        if (c->bound[i] == key) return 1;
    return 0;
}

static int lua_busy(tui_console *c)
{
    pthread_mutex_lock(&c->lock);
    int busy = c->busy || c->req_head;
    pthread_mutex_unlock(&c->lock);
    return busy;
}

int tui_console_key(tui_app *a, int key, int is_char)
{
    tui_console *c = a->console;
    if (!is_char && key == TUI_CTRL('o')) {
        tui_console_toggle(a);
        return 1;
    }
    if (!c) return 0;
    int busy = lua_busy(c);
    if (!is_char && key == TUI_CTRL('c') && (c->focused || busy)) {
        interrupt(c);
        return 1;
    }
    /* Ctrl-Q still quits while a lesson waits for its next key */
    if ((is_char || key != TUI_CTRL('q')) && answer_key_wait(a, c, key, is_char)) return 1;
    if (!is_char && is_bound(c, key)) {
        console_send(c, CONSOLE_REQ_KEY, NULL, key);
        return 1;
    }
    if (!c->open || !c->focused) return 0;
    if (!is_char && tui_key_action(key, TUI_IN_CONSOLE) == TUI_ACT_CONSOLE_TRACEBACK) {
        pthread_mutex_lock(&c->lock);
        char *tb = c->last_traceback ? mt_xstrdup(c->last_traceback) : NULL;
        pthread_mutex_unlock(&c->lock);
        const char *none = "(no error yet: F12 or Ctrl-T shows the last error's traceback)";
        console_write(c, tb ? CONSOLE_ERROR : CONSOLE_OUT, tb ? tb : none, strlen(tb ? tb : none));
        console_write(c, tb ? CONSOLE_ERROR : CONSOLE_OUT, "\n", 1);
        free(tb);
        c->scroll = 0;
        return 1;
    }
    if (!is_char && (key == TUI_FKEY(KEY_PPAGE) || key == TUI_FKEY(KEY_NPAGE))) {
        int page = a->L.console.h > 4 ? a->L.console.h - 3 : 1;
        c->scroll += key == TUI_FKEY(KEY_PPAGE) ? page : -page;
        pthread_mutex_lock(&c->lock);
        int max = c->sb.n;
        pthread_mutex_unlock(&c->lock);
        if (c->scroll > max) c->scroll = max;
        if (c->scroll < 0) c->scroll = 0;
        a->dirty = 1;
        return 1;
    }
    /* function keys, Shift-Tab and Ctrl-Q keep their workbench meaning */
    if (!is_char &&
        ((TUI_IS_FKEY(key) && key != TUI_FKEY(KEY_LEFT) && key != TUI_FKEY(KEY_RIGHT) &&
          key != TUI_FKEY(KEY_UP) && key != TUI_FKEY(KEY_DOWN) && key != TUI_FKEY(KEY_HOME) &&
          key != TUI_FKEY(KEY_END) && key != TUI_FKEY(KEY_DC) && key != TUI_FKEY(KEY_BACKSPACE) &&
          key != TUI_FKEY(KEY_ENTER)) ||
         key == TUI_CTRL('q'))) {
        if (key == TUI_FKEY(KEY_BTAB)) c->focused = 0;
        return 0;
    }
    if (busy) {
        if (c->n_typeahead == c->cap_typeahead) {
            c->cap_typeahead = c->cap_typeahead ? 2 * c->cap_typeahead : 64;
            c->typeahead =
                mt_xrealloc(c->typeahead, (size_t)c->cap_typeahead * sizeof *c->typeahead);
        }
        c->typeahead[c->n_typeahead++] = (console_key){key, is_char};
        return 1;
    }
    console_rl_key(key, is_char);
    a->dirty = 1;
    return 1;
}

void tui_console_resize(tui_app *a, int delta)
{
    if (!ensure(a)) return;
    tui_console *c = a->console;
    if (!c->open) {
        if (delta > 0) c->open = c->focused = 1;
    } else {
        int h = a->L.console.h + delta;
        a->console_rows = h < TUI_CONSOLE_MIN_ROWS ? TUI_CONSOLE_MIN_ROWS : h;
    }
    if (c->open) a->zoom = 0;
    a->relayout = 1;
}

int tui_console_click(tui_app *a, int y, int x)
{
    tui_console *c = a->console;
    if (!c || !c->open) return 0;
    c->focused = tui_rect_contains(a->L.console, y, x);
    a->dirty = 1;
    return c->focused;
}

void tui_console_pump(tui_app *a)
{
    tui_console *c = a->console;
    if (!c) return;
    pthread_mutex_lock(&c->lock);
    c->search_beam = a->n_panes ? a->panes[0]->beam : a->default_beam;
    c->woken = 0;
    if (c->changed) a->dirty = 1;
    c->changed = 0;
    int answered = 0;
    /* calls carried out in the order they came; waits join the waiting list */
    while (c->calls) {
        ui_call *call = c->calls;
        c->calls = call->next;
        call->next = NULL;
        if (ui_execute(a, call)) {
            call->done = 1;
            answered = 1;
        } else {
            ui_call **end = &c->waiting;
            while (*end) end = &(*end)->next;
            *end = call;
        }
        a->dirty = 1;
    }
    for (ui_call **w = &c->waiting; *w;) {
        if (ui_wait_over(a, *w)) {
            (*w)->done = 1;
            answered = 1;
            *w = (*w)->next;
        } else {
            w = &(*w)->next;
        }
    }
    if (answered) pthread_cond_broadcast(&c->answered);
    /* An interrupt armed from this thread can be lost: the Lua thread may have read "no hook"
     * an instant before lua_sethook and then clear the trap that arming set (Lua's hooks are
     * safe from a signal handler on their own thread, not from another; a loop of caught
     * errors, whose stack shrinks at each one, hits the window often enough to hang a test
     * once in a few hundred runs). So an interrupt is armed again at every pump until the
     * chunk it stops has ended; the loop pumps every CONSOLE_REARM_S meanwhile. */
    if (c->busy && mtl_interrupted(c->L)) mtl_interrupt(c->L);
    int idle = !c->busy && !c->req_head;
    pthread_mutex_unlock(&c->lock);
    /* Lua is idle again: what was typed meanwhile goes to the line editor */
    if (idle && c->n_typeahead > 0) {
        for (int i = 0; i < c->n_typeahead; i++)
            console_rl_key(c->typeahead[i].key, c->typeahead[i].is_char);
        c->n_typeahead = 0;
        a->dirty = 1;
    }
}

/* Display columns of s[0..n) (one per code point: the console shows Lua source and output). */
static int columns(const char *s, size_t n)
{
    int cols = 0;
    for (size_t i = 0; i < n; i++) cols += ((unsigned char)s[i] & 0xc0) != 0x80;
    return cols;
}

/* The byte offset where column col starts in s. */
static size_t byte_at_column(const char *s, int col)
{
    size_t i = 0;
    for (int k = 0; s[i] && k < col; k++)
        for (i++; ((unsigned char)s[i] & 0xc0) == 0x80; i++) {}
    return i;
}

/* Paint with an escape's colours: a pair made for them once (on a terminal of 256 colours or
 * more; else, or when the pairs run out, the line's own style). */
static void sgr_style(tui_console *c, WINDOW *w, const tui_palette *pal, console_sgr sgr,
                      tui_meaning base)
{
    if ((sgr.fg < 0 && sgr.bg < 0) || pal->level < TUI_COLORS_256 ||
        COLOR_PAIRS < CONSOLE_PAIR0 + CONSOLE_SGR_PAIRS) {
        tui_set_style(w, pal, base);
        return;
    }
    int fg, bg;
    extended_pair_content(pal->pair[TUI_C_TEXT], &fg, &bg);
    if (fg != c->sgr_text_fg || bg != c->sgr_text_bg) {
        c->n_sgr_pairs = 0; /* the theme changed: the pairs are made again */
        c->sgr_text_fg = fg, c->sgr_text_bg = bg;
    }
    int i = 0;
    while (i < c->n_sgr_pairs && (c->sgr_pairs[i].fg != sgr.fg || c->sgr_pairs[i].bg != sgr.bg))
        i++;
    if (i == c->n_sgr_pairs) {
        if (i == CONSOLE_SGR_PAIRS) {
            tui_set_style(w, pal, base);
            return;
        }
        init_extended_pair(CONSOLE_PAIR0 + i, sgr.fg >= 0 ? sgr.fg : fg, sgr.bg >= 0 ? sgr.bg : bg);
        c->sgr_pairs[c->n_sgr_pairs++] = sgr;
    }
    wattr_set(w, A_NORMAL, (short)(CONSOLE_PAIR0 + i), NULL);
}

/* Columns [first, first + n) of an output line at (y, 1), its escapes painted as colours. */
static void draw_output(tui_console *c, WINDOW *w, const tui_palette *pal, int y, const char *text,
                        int first, int n, tui_meaning base)
{
    console_sgr sgr = {-1, -1};
    size_t i = console_ansi_seek(text, first, &sgr);
    for (int k = 0; k < n && text[i];) {
        size_t e = console_ansi_escape(text + i, &sgr);
        if (e) {
            i += e;
            continue;
        }
        size_t len = 1;
        while (((unsigned char)text[i + len] & 0xc0) == 0x80) len++;
        sgr_style(c, w, pal, sgr, base);
        if ((unsigned char)text[i] < 0x20 || text[i] == 0x7f) mvwaddch(w, y, 1 + k, '?');
        else mvwaddnstr(w, y, 1 + k, text + i, (int)len);
        i += len;
        k++;
    }
}

void tui_console_draw(tui_app *a, WINDOW *w)
{
    tui_console *c = a->console;
    int h = getmaxy(w), width = getmaxx(w);
    werase(w);
    tui_set_style(w, &a->palette, c->focused ? TUI_C_FOCUS : TUI_C_BORDER);
    box(w, 0, 0);
    int text_w = width - 2, y = h - 3;
    pthread_mutex_lock(&c->lock);
    int busy = c->busy;
    /* scrolled back at most until the oldest lines fill the view (PgUp counts lines, which
     * wrap to several rows): the view never scrolls past them into emptiness */
    if (c->scroll > 0) {
        int k = 0, rows = 0;
        while (k < c->sb.n && rows < h - 3)
            rows += console_wrap(console_scrollback_get(&c->sb, k++)->text, text_w, NULL, 0);
        int most = rows >= h - 3 ? c->sb.n - k : 0;
        if (c->scroll > most) c->scroll = most;
    }
    char title[160];
    snprintf(title, sizeof title, " Lua console (Ctrl-O)%s%s ",
             busy ? " · running, Ctrl-C interrupts" : "",
             c->scroll > 0 ? " · scrolled back, PgDn" : "");
    tui_set_style(w, &a->palette, TUI_C_TITLE);
    tui_put(w, 0, 2, title, width - 4);
    /* the newest lines above the prompt, long ones wrapped at spaces, scrolled back by c->scroll
     * lines */
    c->text_w = text_w;
    c->text_h = h - 3; /* the lines above the prompt */
    c->text_colors =
        a->palette.level >= TUI_COLORS_256 && COLOR_PAIRS >= CONSOLE_PAIR0 + CONSOLE_SGR_PAIRS;
    for (int i = c->sb.n - 1 - c->scroll; y >= 1 && i >= 0; i--) {
        const console_line *l = console_scrollback_get(&c->sb, i);
        tui_meaning base = l->kind == CONSOLE_ERROR  ? TUI_C_ERROR
                           : l->kind == CONSOLE_ECHO ? TUI_C_DIM
                                                     : TUI_C_TEXT;
        console_row few[16], *rows = few;
        int n_rows = console_wrap(l->text, text_w, few, 16);
        if (n_rows > 16) {
            rows = mt_xmalloc((size_t)n_rows * sizeof *rows);
            console_wrap(l->text, text_w, rows, n_rows);
        }
        for (int r = n_rows - 1; r >= 0 && y >= 1; r--, y--)
            draw_output(c, w, &a->palette, y, l->text, rows[r].first, rows[r].n, base);
        if (rows != few) free(rows);
    }
    pthread_mutex_unlock(&c->lock);
    /* the prompt line: prompt and text, scrolled sideways to keep the cursor in view */
    int point;
    const char *prompt = busy ? "" : console_rl_prompt();
    const char *line = console_rl_line(&point);
    size_t np = strlen(prompt), nl = strlen(line);
    char *full = mt_xmalloc(np + nl + 1);
    memcpy(full, prompt, np);
    memcpy(full + np, line, nl + 1);
    int cursor = columns(full, np + (size_t)point), avail = width - 3;
    int first = cursor > avail ? cursor - avail : 0;
    tui_set_style(w, &a->palette, TUI_C_TEXT);
    tui_put(w, h - 2, 1, full + byte_at_column(full, first), avail + 1);
    free(full);
    wmove(w, h - 2, 1 + cursor - first);
}
