#include "eval/codepoints.h"

#include "eval/unicode_case.h"
#include "mtlab/error.h"
#include "mtlab/utf8.h"

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

int mt_utf8_decode(mt_cpbuf *out, const char *s, size_t len)
{
    size_t i = 0;
    while (i < len) {
        uint32_t c;
        int k = mt_utf8_next(s + i, len - i, &c);
        if (k == 0)
            return mt_error("invalid UTF-8 at byte %zu (0x%02X)", i, (unsigned)(unsigned char)s[i]);
        mt_cpbuf_push(out, c);
        i += (size_t)k;
    }
    return 0;
}

char *mt_utf8_encode(const uint32_t *cp, size_t n, size_t *len_out, size_t *offsets)
{
    char *s = mt_xmalloc(4 * n + 1);
    size_t len = 0;
    for (size_t i = 0; i < n; i++) {
        if (offsets) offsets[i] = len;
        len += (size_t)mt_utf8_put(cp[i], s + len);
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

int mt_cp_in_ranges(const mt_cp_range *r, size_t n, uint32_t c)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c < r[mid].first) hi = mid;
        else if (c > r[mid].last) lo = mid + 1;
        else return 1;
    }
    return 0;
}
