/* What the console's parts share, below all of them: waking the UI thread, writing to the
 * scrollback, handing requests to the Lua thread, the lines readline accepts (continued while
 * incomplete, `? name` for help) and the names of keys. */
#include <stdlib.h>
#include <string.h>

#include "tui/console/console_internal.h"
#include "mtlab/error.h"
#include "mtlab/utf8.h"

void console_wake_ui(tui_console *c)
{
    if (c->woken) return;
    c->woken = 1;
    tui_queue_push(&c->app->q, tui_event_new(TUI_EV_CONSOLE, 0, 0));
}

void console_write(tui_console *c, console_line_kind kind, const char *text, size_t len)
{
    pthread_mutex_lock(&c->lock);
    console_scrollback_write(&c->sb, kind, text, len);
    c->changed = 1;
    console_wake_ui(c);
    pthread_mutex_unlock(&c->lock);
}

void console_send(tui_console *c, console_req_kind kind, const char *text, int key)
{
    console_request *r = mt_xcalloc(1, sizeof *r);
    r->kind = kind;
    r->text = text ? mt_xstrdup(text) : NULL;
    r->key = key;
    pthread_mutex_lock(&c->lock);
    if (c->req_tail) c->req_tail->next = r;
    else c->req_head = r;
    c->req_tail = r;
    pthread_cond_signal(&c->wake_lua);
    pthread_mutex_unlock(&c->lock);
}

static void echo_line(tui_console *c, const char *prompt, const char *line)
{
    size_t n = strlen(prompt) + strlen(line) + 2;
    char *s = mt_xmalloc(n);
    snprintf(s, n, "%s%s\n", prompt, line);
    console_write(c, CONSOLE_ECHO, s, strlen(s));
    free(s);
}

void console_accept_line(tui_console *c, const char *line)
{
    echo_line(c, c->pending ? ">> " : "> ", line);
    c->scroll = 0;
    const char *p = line;
    while (*p == ' ' || *p == '\t') p++;
    if (!c->pending && *p == '?') {
        p++;
        while (*p == ' ') p++;
        console_send(c, CONSOLE_REQ_HELP, p, 0);
        return;
    }
    if (!c->pending && !*p) return;
    if (c->pending) {
        size_t n = strlen(c->pending) + strlen(line) + 2;
        char *joined = mt_xmalloc(n);
        snprintf(joined, n, "%s\n%s", c->pending, line);
        free(c->pending);
        c->pending = joined;
    } else {
        c->pending = mt_xstrdup(line);
    }
    if (console_chunk_check(c->parser, c->pending) == CONSOLE_CHUNK_INCOMPLETE) return;
    console_send(c, CONSOLE_REQ_CHUNK, c->pending, 0);
    free(c->pending);
    c->pending = NULL;
}

void console_key_name(int key, int is_char, char *out, size_t len)
{
    if (is_char) {
        char buf[8];
        buf[mt_utf8_put((uint32_t)key, buf)] = '\0';
        snprintf(out, len, "%s", key == ' ' ? "Space" : buf);
    } else {
        char buf[32];
        snprintf(out, len, "%s", tui_key_name(key, buf, sizeof buf));
    }
}
