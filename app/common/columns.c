#include "common/columns.h"

#include "mtlab/utf8.h"

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
