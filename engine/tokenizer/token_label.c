/* Token labels (mtlab/tokenizer.h mt_tokenizer_label): what a map's axis or a token list shows
 * for a token, the same way whichever tokenizer made it. */
#include "tokenizer/token_label.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "mtlab/utf8.h"

#define WORD_MARK "\u2581" /* sentencepiece's word start, 3 bytes */
#define SPACE_SHOWN "\u2423" /* ␣ */

/* Append s (k bytes) when it fits whole; 0 when it does not (the label ends there). */
static int put(char *out, size_t len, size_t *o, const char *s, size_t k)
{
    if (*o + k + 1 > len) return 0;
    memcpy(out + *o, s, k);
    *o += k;
    out[*o] = '\0';
    return 1;
}

/* The character shown for a space, a control byte or DEL: ␣, its control picture (U+2400 +
 * byte: ␊ for a newline, ␉ for a tab), ␡. */
static size_t shown_control(unsigned b, char *buf)
{
    uint32_t cp = b == ' ' ? 0x2423u : b == 0x7f ? 0x2421u : 0x2400u + b;
    buf[0] = (char)(0xe0 | (cp >> 12));
    buf[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
    buf[2] = (char)(0x80 | (cp & 0x3f));
    return 3;
}

/* The length of a word mark at s (a space, or U+2581 where the pieces spell spaces so), else 0. */
static size_t mark_at(const char *s, size_t n, int word_mark)
{
    if (n >= 1 && s[0] == ' ') return 1;
    if (word_mark && n >= 3 && !memcmp(s, WORD_MARK, 3)) return 3;
    return 0;
}

void mt_token_label_format(const char *bytes, size_t n, int word_mark, char *out, size_t len)
{
    if (len == 0) return;
    out[0] = '\0';
    size_t o = 0, i = 0;
    /* a word's leading space is no part of what a reader reads (as a text's words show it);
     * a token that is only spaces shows them */
    size_t m = mark_at(bytes, n, word_mark);
    if (m && m < n && !mark_at(bytes + m, n - m, word_mark)) i = m;
    while (i < n) {
        char buf[8];
        size_t k = 0, step;
        uint32_t cp;
        int l = mt_utf8_next(bytes + i, n - i, &cp);
        if ((step = mark_at(bytes + i, n - i, word_mark)) > 0) {
            k = shown_control(' ', buf);
        } else if (l <= 0) {
            /* a byte of a character the token holds only part of: as sentencepiece spells
             * its byte pieces */
            k = (size_t)snprintf(buf, sizeof buf, "<0x%02X>", (unsigned char)bytes[i]);
            step = 1;
        } else if (cp < 0x20 || cp == 0x7f) {
            k = shown_control(cp, buf);
            step = 1;
        } else {
            memcpy(buf, bytes + i, (size_t)l);
            k = step = (size_t)l;
        }
        if (!put(out, len, &o, buf, k)) return;
        i += step;
    }
}
