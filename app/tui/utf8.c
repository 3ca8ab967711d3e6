#include "tui/utf8.h"

#include <string.h>
#include <wchar.h>

int tui_utf8_decode(const char *s, size_t n, uint32_t *cp)
{
    const unsigned char *u = (const unsigned char *)s;
    *cp = TUI_REPLACEMENT_CHAR;
    if (u[0] < 0x80) {
        *cp = u[0];
        return 1;
    }
    int len;
    uint32_t c, min;
    if ((u[0] & 0xE0) == 0xC0) len = 2, c = u[0] & 0x1F, min = 0x80;
    else if ((u[0] & 0xF0) == 0xE0) len = 3, c = u[0] & 0x0F, min = 0x800;
    else if ((u[0] & 0xF8) == 0xF0) len = 4, c = u[0] & 0x07, min = 0x10000;
    else return 0;
    if ((size_t)len > n) return 0;
    for (int i = 1; i < len; i++) {
        if ((u[i] & 0xC0) != 0x80) return 0;
        c = c << 6 | (u[i] & 0x3F);
    }
    if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) return 0;
    *cp = c;
    return len;
}

int tui_utf8_encode(uint32_t cp, char *out)
{
    unsigned char *o = (unsigned char *)out;
    if (cp < 0x80) {
        o[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (unsigned char)(0xC0 | cp >> 6);
        o[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp >= 0xD800 && cp <= 0xDFFF) return 0;
    if (cp < 0x10000) {
        o[0] = (unsigned char)(0xE0 | cp >> 12);
        o[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
        o[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    if (cp > 0x10FFFF) return 0;
    o[0] = (unsigned char)(0xF0 | cp >> 18);
    o[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3F));
    o[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
    o[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
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

size_t tui_utf8_prev(const char *s, size_t pos)
{
    size_t i = pos - 1;
    while (i > 0 && ((unsigned char)s[i] & 0xC0) == 0x80) i--;
    return i;
}
