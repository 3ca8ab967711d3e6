/* The console's scrollback: a ring of lines, the oldest dropped past the limit. */
#include <stdlib.h>
#include <string.h>

#include "tui/console/console_parts.h"
#include "mtlab/error.h"

void console_scrollback_free(console_scrollback *s)
{
    for (int i = 0; i < s->n; i++) free(console_scrollback_get(s, i)->text);
    memset(s, 0, sizeof *s);
}

const console_line *console_scrollback_get(const console_scrollback *s, int i)
{
    return &s->lines[(s->first + i) % CONSOLE_SCROLLBACK_LINES];
}

static console_line *newest(console_scrollback *s)
{
    return &s->lines[(s->first + s->n - 1) % CONSOLE_SCROLLBACK_LINES];
}

static void start_line(console_scrollback *s, console_line_kind kind)
{
    if (s->n == CONSOLE_SCROLLBACK_LINES) {
        free(s->lines[s->first].text);
        s->first = (s->first + 1) % CONSOLE_SCROLLBACK_LINES;
        s->n--;
    }
    s->n++;
    console_line *l = newest(s);
    l->text = mt_xstrdup("");
    l->kind = kind;
    s->added++;
}

static void append(console_line *l, const char *text, size_t len)
{
    size_t old = strlen(l->text);
    l->text = mt_xrealloc(l->text, old + len + 1);
    memcpy(l->text + old, text, len);
    l->text[old + len] = '\0';
}

void console_scrollback_write(console_scrollback *s, console_line_kind kind, const char *text,
                              size_t len)
{
    size_t i = 0;
    while (i < len) {
        const char *nl = memchr(text + i, '\n', len - i);
        size_t end = nl ? (size_t)(nl - text) : len;
        if (!s->open || newest(s)->kind != kind) start_line(s, kind);
        /* a tab moves to the next multiple of 8, as a terminal would */
        for (size_t j = i; j < end; j++) {
            if (text[j] == '\t') {
                size_t col = strlen(newest(s)->text);
                append(newest(s), "        ", 8 - col % 8);
            } else if (text[j] != '\r') {
                append(newest(s), text + j, 1);
            }
        }
        s->open = nl == NULL;
        i = nl ? end + 1 : len;
    }
}
