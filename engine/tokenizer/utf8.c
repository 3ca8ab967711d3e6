#include "tokenizer/utf8.h"

/* Well-formed byte sequences (Unicode 15, table 3-7). The second byte's range depends on the
 * lead byte; it is what excludes overlong forms (E0, F0), surrogates (ED) and > U+10FFFF (F4):
 *   00..7F
 *   C2..DF  80..BF
 *   E0      A0..BF  80..BF
 *   E1..EC  80..BF  80..BF
 *   ED      80..9F  80..BF
 *   EE..EF  80..BF  80..BF
 *   F0      90..BF  80..BF  80..BF
 *   F1..F3  80..BF  80..BF  80..BF
 *   F4      80..8F  80..BF  80..BF                                                       */
size_t utf8_invalid_offset(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < len) {
        unsigned lead = p[i];
        if (lead < 0x80) {
            i++;
            continue;
        }
        size_t n_cont;
        unsigned lo = 0x80, hi = 0xBF; /* allowed range of the second byte */
        if (lead >= 0xC2 && lead <= 0xDF) n_cont = 1;
        else if (lead == 0xE0) n_cont = 2, lo = 0xA0;
        else if (lead >= 0xE1 && lead <= 0xEF) n_cont = 2, hi = lead == 0xED ? 0x9F : 0xBF;
        else if (lead == 0xF0) n_cont = 3, lo = 0x90;
        else if (lead >= 0xF1 && lead <= 0xF3) n_cont = 3;
        else if (lead == 0xF4) n_cont = 3, hi = 0x8F;
        else return i; /* 80..C1 (continuation or overlong lead) or F5..FF */
        if (len - i - 1 < n_cont) return i;
        if (p[i + 1] < lo || p[i + 1] > hi) return i;
        for (size_t k = 2; k <= n_cont; k++)
            if (p[i + k] < 0x80 || p[i + k] > 0xBF) return i;
        i += 1 + n_cont;
    }
    return len;
}
