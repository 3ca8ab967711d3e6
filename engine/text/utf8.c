/* Strict UTF-8 decoding and encoding (the table is in mtlab/utf8.h). */
#include "mtlab/utf8.h"

/* How many bytes of p[0..n) (n > 0) agree with some well-formed sequence, counted from the
 * lead byte and stopping at the first that cannot continue it; *need receives the length the
 * lead byte announces (1 for a byte that cannot lead, which then agrees with nothing). */
static int agreeing_bytes(const unsigned char *p, size_t n, int *need)
{
    unsigned lead = p[0];
    unsigned lo = 0x80, hi = 0xBF; /* allowed range of the second byte */
    int n_cont;
    *need = 1;
    if (lead < 0x80) return 1;
    if (lead >= 0xC2 && lead <= 0xDF) n_cont = 1;
    else if (lead == 0xE0) n_cont = 2, lo = 0xA0;
    else if (lead >= 0xE1 && lead <= 0xEF) n_cont = 2, hi = lead == 0xED ? 0x9F : 0xBF;
    else if (lead == 0xF0) n_cont = 3, lo = 0x90;
    else if (lead >= 0xF1 && lead <= 0xF3) n_cont = 3;
    else if (lead == 0xF4) n_cont = 3, hi = 0x8F;
    else return 0; /* 80..C1 (continuation or overlong lead) or F5..FF */
    *need = 1 + n_cont;
    if (n < 2 || p[1] < lo || p[1] > hi) return 1;
    int k = 2;
    while (k < *need && (size_t)k < n && p[k] >= 0x80 && p[k] <= 0xBF) k++;
    return k;
}

int mt_utf8_next(const char *s, size_t n, uint32_t *cp)
{
    const unsigned char *p = (const unsigned char *)s;
    if (n == 0) return 0;
    int need, k = agreeing_bytes(p, n, &need);
    if (k < need || k == 0) return 0;
    if (need == 1) {
        *cp = p[0];
        return 1;
    }
    uint32_t c = p[0] & (0x7Fu >> need);
    for (int i = 1; i < need; i++) c = c << 6 | (p[i] & 0x3Fu);
    *cp = c;
    return need;
}

int mt_utf8_next_lossy(const char *s, size_t n, uint32_t *cp)
{
    if (n == 0) return 0;
    int k = mt_utf8_next(s, n, cp);
    if (k > 0) return k;
    int need;
    k = agreeing_bytes((const unsigned char *)s, n, &need);
    *cp = MT_UTF8_REPLACEMENT;
    return k > 0 ? k : 1;
}

int mt_utf8_incomplete(const char *s, size_t n)
{
    int need;
    return n > 0 && (size_t)agreeing_bytes((const unsigned char *)s, n, &need) == n &&
           (int)n < need;
}

size_t mt_utf8_repair(const char *s, size_t n, char *out, size_t *replaced)
{
    size_t o = 0, bad = 0;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        int k = mt_utf8_next(s + i, n - i, &cp);
        if (k == 0) {
            k = mt_utf8_next_lossy(s + i, n - i, &cp);
            bad += (size_t)k;
        }
        o += (size_t)mt_utf8_put(cp, out + o);
        i += (size_t)k;
    }
    if (replaced) *replaced = bad;
    return o;
}

int mt_utf8_put(uint32_t cp, char *out)
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

size_t mt_utf8_invalid_offset(const char *s, size_t len)
{
    size_t i = 0;
    uint32_t cp;
    while (i < len) {
        int k = mt_utf8_next(s + i, len - i, &cp);
        if (k == 0) return i;
        i += (size_t)k;
    }
    return len;
}

size_t mt_utf8_prev(const char *s, size_t end)
{
    size_t i = end;
    while (i > 0 && ((unsigned char)s[i - 1] & 0xC0) == 0x80) i--;
    return i > 0 ? i - 1 : 0;
}
