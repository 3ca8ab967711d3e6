/* Colour escapes in the console's output: print(p:text{color=true}) and p:show() write xterm
 * SGR escapes, which the console paints as colours instead of showing their bytes; and where
 * an output line wraps, counting columns past the escapes. */
#include <stdlib.h>

#include "tui/console/console_parts.h"
#include "common/theme.h"

/* Apply the SGR parameters params[0..n) (Select Graphic Rendition: 0 resets, 30-37/90-97
 * and 40-47/100-107 are the 16 colours, 38;5;N and 48;5;N xterm-256, 38;2;R;G;B truecolour,
 * 39/49 the default; bold, underline and the rest are ignored). */
static void apply_sgr(const int *params, int n, console_sgr *sgr)
{
    if (n == 0) *sgr = (console_sgr){-1, -1};
    for (int i = 0; i < n; i++) {
        int v = params[i];
        if (v == 0) *sgr = (console_sgr){-1, -1};
        else if (v >= 30 && v <= 37) sgr->fg = (short)(v - 30);
        else if (v >= 90 && v <= 97) sgr->fg = (short)(v - 90 + 8);
        else if (v >= 40 && v <= 47) sgr->bg = (short)(v - 40);
        else if (v >= 100 && v <= 107) sgr->bg = (short)(v - 100 + 8);
        else if (v == 39) sgr->fg = -1;
        else if (v == 49) sgr->bg = -1;
        else if ((v == 38 || v == 48) && i + 2 < n && params[i + 1] == 5) {
            short c = params[i + 2] >= 0 && params[i + 2] < 256 ? (short)params[i + 2] : -1;
            if (v == 38) sgr->fg = c;
            else sgr->bg = c;
            i += 2;
        } else if ((v == 38 || v == 48) && i + 4 < n && params[i + 1] == 2) {
            short c = (short)tui_rgb_to_256(params[i + 2], params[i + 3], params[i + 4]);
            if (v == 38) sgr->fg = c;
            else sgr->bg = c;
            i += 4;
        }
    }
}

size_t console_ansi_escape(const char *s, console_sgr *sgr)
{
    if (s[0] != '\x1b') return 0;
    if (s[1] != '[') return s[1] ? 2 : 1;
    int params[32], n = 0, cur = -1;
    size_t i = 2;
    for (; s[i] >= 0x20 && s[i] <= 0x3f; i++) {
        if (s[i] >= '0' && s[i] <= '9') {
            cur = (cur < 0 ? 0 : cur) * 10 + (s[i] - '0');
            if (cur > 100000) cur = 100000;
        } else if (s[i] == ';') {
            if (n < 32) params[n++] = cur < 0 ? 0 : cur;
            cur = -1;
        }
    }
    if (cur >= 0 && n < 32) params[n++] = cur;
    if (!s[i]) return i; /* cut short: drop what there is */
    if (s[i] == 'm') apply_sgr(params, n, sgr);
    return i + 1;
}

size_t console_ansi_seek(const char *s, int col, console_sgr *sgr)
{
    size_t i = 0;
    int k = 0;
    for (;;) {
        size_t e = console_ansi_escape(s + i, sgr);
        if (e) {
            i += e;
            continue;
        }
        if (!s[i] || k == col) return i;
        for (i++; ((unsigned char)s[i] & 0xc0) == 0x80; i++) {}
        k++;
    }
}

int console_ansi_columns(const char *s)
{
    console_sgr sgr = {-1, -1};
    int cols = 0;
    for (size_t i = 0; s[i];) {
        size_t e = console_ansi_escape(s + i, &sgr);
        if (e) {
            i += e;
            continue;
        }
        cols++;
        for (i++; ((unsigned char)s[i] & 0xc0) == 0x80; i++) {}
    }
    return cols;
}

int console_wrap(const char *s, int width, console_row *rows, int max)
{
    console_sgr sgr = {-1, -1};
    int n = 0, first = 0, space = -1, col = 0;
    if (width < 1) width = 1;
    for (size_t i = 0; s[i];) {
        size_t e = console_ansi_escape(s + i, &sgr);
        if (e) {
            i += e;
            continue;
        }
        int is_space = s[i] == ' ';
        if (col - first == width) {
            /* the row is full: end it at this space, else at the last one, else here */
            int end = is_space ? col : space > first ? space : col;
            if (n < max) rows[n] = (console_row){first, end - first};
            n++;
            first = is_space || end < col ? end + 1 : col;
            space = -1;
        }
        if (is_space && col >= first) space = col;
        col++;
        for (i++; ((unsigned char)s[i] & 0xc0) == 0x80; i++) {}
    }
    if (col > first || n == 0) {
        if (n < max) rows[n] = (console_row){first, col - first};
        n++;
    }
    return n;
}
