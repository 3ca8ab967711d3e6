#include "eval/codepoints.h"

#include "mtlab/error.h"

#include <stdlib.h>

void mt_cpbuf_push(mt_cpbuf *b, uint32_t c)
{
    if (b->n == b->cap) {
        b->cap = b->cap ? 2 * b->cap : 64;
        b->cp = mt_xrealloc(b->cp, b->cap * sizeof *b->cp);
    }
    b->cp[b->n++] = c;
}

void mt_cpbuf_free(mt_cpbuf *b)
{
    free(b->cp);
    b->cp = NULL;
    b->n = b->cap = 0;
}

/* Sequence length announced by a lead byte, with the allowed range of the second byte
 * (RFC 3629 table 3.7: the narrowed ranges exclude overlongs, surrogates and > U+10FFFF). */
static int utf8_lead(unsigned char b, unsigned char *lo, unsigned char *hi)
{
    *lo = 0x80, *hi = 0xBF;
    if (b < 0x80) return 1;
    if (b >= 0xC2 && b <= 0xDF) return 2;
    if (b == 0xE0) { *lo = 0xA0; return 3; }
    if (b >= 0xE1 && b <= 0xEC) return 3;
    if (b == 0xED) { *hi = 0x9F; return 3; }
    if (b >= 0xEE && b <= 0xEF) return 3;
    if (b == 0xF0) { *lo = 0x90; return 4; }
    if (b >= 0xF1 && b <= 0xF3) return 4;
    if (b == 0xF4) { *hi = 0x8F; return 4; }
    return 0;
}

int mt_utf8_decode(mt_cpbuf *out, const char *s, size_t len)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    while (i < len) {
        unsigned char lo, hi;
        int k = utf8_lead(u[i], &lo, &hi);
        int ok = k > 0 && i + (size_t)k <= len;
        for (int j = 1; ok && j < k; j++) {
            unsigned char c = u[i + j];
            ok = j == 1 ? (c >= lo && c <= hi) : (c >= 0x80 && c <= 0xBF);
        }
        if (!ok) return mt_error("invalid UTF-8 at byte %zu (0x%02X)", i, (unsigned)u[i]);
        uint32_t c = k == 1 ? u[i] : (uint32_t)(u[i] & (0x7F >> k));
        for (int j = 1; j < k; j++) c = (c << 6) | (u[i + j] & 0x3F);
        mt_cpbuf_push(out, c);
        i += (size_t)k;
    }
    return 0;
}

static size_t utf8_put(char *dst, uint32_t c)
{
    unsigned char *d = (unsigned char *)dst;
    if (c < 0x80) { d[0] = (unsigned char)c; return 1; }
    if (c < 0x800) {
        d[0] = (unsigned char)(0xC0 | (c >> 6));
        d[1] = (unsigned char)(0x80 | (c & 0x3F));
        return 2;
    }
    if (c < 0x10000) {
        d[0] = (unsigned char)(0xE0 | (c >> 12));
        d[1] = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
        d[2] = (unsigned char)(0x80 | (c & 0x3F));
        return 3;
    }
    d[0] = (unsigned char)(0xF0 | (c >> 18));
    d[1] = (unsigned char)(0x80 | ((c >> 12) & 0x3F));
    d[2] = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
    d[3] = (unsigned char)(0x80 | (c & 0x3F));
    return 4;
}

char *mt_utf8_encode(const uint32_t *cp, size_t n, size_t *len_out, size_t *offsets)
{
    char *s = mt_xmalloc(4 * n + 1);
    size_t len = 0;
    for (size_t i = 0; i < n; i++) {
        if (offsets) offsets[i] = len;
        len += utf8_put(s + len, cp[i]);
    }
    if (offsets) offsets[n] = len;
    s[len] = '\0';
    if (len_out) *len_out = len;
    return s;
}

int mt_is_py_space(uint32_t c)
{
    return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
           c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
           c == 0x202F || c == 0x205F || c == 0x3000;
}

size_t mt_py_rstrip_len(const uint32_t *cp, size_t n)
{
    while (n > 0 && mt_is_py_space(cp[n - 1])) n--;
    return n;
}
