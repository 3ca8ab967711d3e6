#include "data/letters.h"

size_t u8_decode(const char *s, size_t len, uint32_t *cp)
{
    const unsigned char *u = (const unsigned char *)s;
    if (len == 0) return 0;
    if (u[0] < 0x80) {
        *cp = u[0];
        return 1;
    }
    size_t n;
    uint32_t c, min;
    if ((u[0] & 0xE0) == 0xC0) n = 2, c = u[0] & 0x1F, min = 0x80;
    else if ((u[0] & 0xF0) == 0xE0) n = 3, c = u[0] & 0x0F, min = 0x800;
    else if ((u[0] & 0xF8) == 0xF0) n = 4, c = u[0] & 0x07, min = 0x10000;
    else return 0;
    if (len < n) return 0;
    for (size_t i = 1; i < n; i++) {
        if ((u[i] & 0xC0) != 0x80) return 0;
        c = (c << 6) | (u[i] & 0x3F);
    }
    if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) return 0;
    *cp = c;
    return n;
}

size_t u8_encode(uint32_t cp, char out[4])
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

size_t u8_invalid_at(const char *s, size_t len)
{
    size_t i = 0;
    uint32_t cp;
    while (i < len) {
        if ((unsigned char)s[i] < 0x80) {
            i++;
            continue;
        }
        size_t n = u8_decode(s + i, len - i, &cp);
        if (n == 0) return i;
        i += n;
    }
    return len;
}

size_t u8_prev_start(const char *s, size_t end)
{
    size_t i = end;
    while (i > 0 && ((unsigned char)s[i - 1] & 0xC0) == 0x80) i--;
    return i > 0 ? i - 1 : 0;
}

int cp_is_word(uint32_t cp)
{
    if (cp < 0x80)
        return (cp >= '0' && cp <= '9') || (cp >= 'A' && cp <= 'Z') || (cp >= 'a' && cp <= 'z');
    if (cp < 0xC0) return cp == 0xAA || cp == 0xB5 || cp == 0xBA; /* ª µ º */
    if (cp <= 0xFF) return cp != 0xD7 && cp != 0xF7;              /* × ÷ */
    if (cp >= 0x0300 && cp <= 0x036F) return 0;                   /* combining diacritics */
    if (cp >= 0x0591 && cp <= 0x05C7) return 0;                   /* Hebrew points, accents */
    if (cp >= 0x2000 && cp <= 0x206F) return 0;                   /* general punctuation */
    if (cp >= 0x3000 && cp <= 0x303F) return 0;                   /* CJK punctuation */
    if (cp >= 0xFE00 && cp <= 0xFE0F) return 0;                   /* variation selectors */
    return 1;
}

/* Latin-1 pairs upper U+00C0..U+00DE with lower U+00E0..U+00FE, 0x20 apart (except × and ÷);
 * ß (U+00DF) and ÿ (U+00FF) have no partner in the block. */
int cp_is_upper(uint32_t cp) { return (cp >= 'A' && cp <= 'Z') || (cp >= 0xC0 && cp <= 0xDE && cp != 0xD7); }

int cp_is_lower(uint32_t cp)
{
    return (cp >= 'a' && cp <= 'z') || (cp >= 0xDF && cp <= 0xFF && cp != 0xF7);
}

uint32_t cp_to_lower(uint32_t cp) { return cp_is_upper(cp) ? cp + 0x20 : cp; }

uint32_t cp_to_upper(uint32_t cp)
{
    if ((cp >= 'a' && cp <= 'z') || (cp >= 0xE0 && cp <= 0xFE && cp != 0xF7)) return cp - 0x20;
    return cp;
}
