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

int tui_text_width(const char *s, size_t n)
{
    int cols = 0;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        int len = tui_utf8_decode(s + i, n - i, &cp);
        cols += tui_cp_width(cp);
        i += len ? (size_t)len : 1;
    }
    return cols;
}

int tui_text_width_z(const char *s) { return tui_text_width(s, strlen(s)); }

size_t tui_text_fit(const char *s, size_t n, int max_cols, int *cols)
{
    int used = 0;
    size_t i = 0;
    while (i < n) {
        uint32_t cp;
        int len = tui_utf8_decode(s + i, n - i, &cp);
        int w = tui_cp_width(cp);
        if (used + w > max_cols) break;
        used += w;
        i += len ? (size_t)len : 1;
    }
    if (cols) *cols = used;
    return i;
}

void tui_fit_middle(char *out, size_t len, const char *text, int cols, const char *ellipsis)
{
    size_t n = strlen(text);
    int width = tui_text_width(text, n), ew = tui_text_width_z(ellipsis);
    if (width <= cols || cols <= ew) {
        int got;
        size_t head = tui_text_fit(text, n, cols, &got);
        snprintf(out, len, "%.*s", (int)head, text);
        return;
    }
    int keep = cols - ew, tail_cols = (keep + 1) / 2, head_cols = keep - tail_cols, got;
    size_t head = tui_text_fit(text, n, head_cols, &got);
    /* the tail: the shortest suffix left once the text before it is wider than width - tail_cols */
    size_t at = 0;
    int before = 0;
    while (at < n && width - before > tail_cols) {
        uint32_t cp;
        int b = tui_utf8_decode(text + at, n - at, &cp);
        before += tui_cp_width(cp);
        at += b > 0 ? (size_t)b : 1;
    }
    /* a zero-width character stays with the one before it */
    while (at < n) {
        uint32_t cp;
        int b = tui_utf8_decode(text + at, n - at, &cp);
        if (tui_cp_width(cp) != 0) break;
        at += b > 0 ? (size_t)b : 1;
    }
    snprintf(out, len, "%.*s%s%s", (int)head, text, ellipsis, text + at);
}
