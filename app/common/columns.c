#include "common/columns.h"

#include "mtlab/utf8.h"

#include <stdio.h>
#include <string.h>
#include <wchar.h>

int tui_utf8_decode(const char *s, size_t n, uint32_t *cp)
{
    *cp = MT_UTF8_REPLACEMENT;
    return mt_utf8_next(s, n, cp);
}

int tui_cp_width(uint32_t cp)
{
    int w = wcwidth((wchar_t)cp);
    return w < 0 ? 1 : w;
}

/* The room a character takes: columns on a line (tui_cp_width), or lines down a column. */
typedef int (*cp_room)(uint32_t cp);

static int one_line(uint32_t cp)
{
    (void)cp;
    return 1;
}

static int room_of(const char *s, size_t n, cp_room room)
{
    int used = 0;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        int len = tui_utf8_decode(s + i, n - i, &cp);
        used += room(cp);
        i += len ? (size_t)len : 1;
    }
    return used;
}

static size_t fit_prefix(const char *s, size_t n, int max, int *got, cp_room room)
{
    int used = 0;
    size_t i = 0;
    while (i < n) {
        uint32_t cp;
        int len = tui_utf8_decode(s + i, n - i, &cp);
        int w = room(cp);
        if (used + w > max) break;
        used += w;
        i += len ? (size_t)len : 1;
    }
    if (got) *got = used;
    return i;
}

int tui_text_width(const char *s, size_t n) { return room_of(s, n, tui_cp_width); }

int tui_text_width_z(const char *s) { return tui_text_width(s, strlen(s)); }

size_t tui_text_fit(const char *s, size_t n, int max_cols, int *cols)
{
    return fit_prefix(s, n, max_cols, cols, tui_cp_width);
}

static void fit_middle(char *out, size_t len, const char *text, int cols, const char *ellipsis,
                       cp_room room)
{
    size_t n = strlen(text);
    int width = room_of(text, n, room), ew = room_of(ellipsis, strlen(ellipsis), room);
    if (width <= cols || cols <= ew) {
        size_t head = fit_prefix(text, n, cols, NULL, room);
        snprintf(out, len, "%.*s", (int)head, text);
        return;
    }
    int keep = cols - ew, tail_cols = (keep + 1) / 2, head_cols = keep - tail_cols;
    size_t head = fit_prefix(text, n, head_cols, NULL, room);
    /* the tail: the shortest suffix left once the text before it is wider than width - tail_cols */
    size_t at = 0;
    int before = 0;
    while (at < n && width - before > tail_cols) {
        uint32_t cp;
        int b = tui_utf8_decode(text + at, n - at, &cp);
        before += room(cp);
        at += b > 0 ? (size_t)b : 1;
    }
    /* a zero-width character stays with the one before it */
    while (at < n) {
        uint32_t cp;
        int b = tui_utf8_decode(text + at, n - at, &cp);
        if (room(cp) != 0) break;
        at += b > 0 ? (size_t)b : 1;
    }
    snprintf(out, len, "%.*s%s%s", (int)head, text, ellipsis, text + at);
}

void tui_fit_middle(char *out, size_t len, const char *text, int cols, const char *ellipsis)
{
    fit_middle(out, len, text, cols, ellipsis, tui_cp_width);
}

void tui_fit_middle_lines(char *out, size_t len, const char *text, int lines, const char *ellipsis)
{
    fit_middle(out, len, text, lines, ellipsis, one_line);
}
