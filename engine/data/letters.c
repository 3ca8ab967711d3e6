#include "data/letters.h"

int cp_is_word(uint32_t cp)
{
    if (cp < 0x80)
        return (cp >= '0' && cp <= '9') || (cp >= 'A' && cp <= 'Z') || (cp >= 'a' && cp <= 'z');
    if (cp < 0xC0) return cp == 0xAA || cp == 0xB5 || cp == 0xBA; /* ª µ º */
    if (cp <= 0xFF) return cp != 0xD7 && cp != 0xF7; /* × ÷ */
    if (cp >= 0x0300 && cp <= 0x036F) return 0; /* combining diacritics */
    if (cp >= 0x0591 && cp <= 0x05C7) return 0; /* Hebrew points, accents */
    if (cp >= 0x2000 && cp <= 0x206F) return 0; /* general punctuation */
    if (cp >= 0x3000 && cp <= 0x303F) return 0; /* CJK punctuation */
    if (cp >= 0xFE00 && cp <= 0xFE0F) return 0; /* variation selectors */
    return 1;
}

/* Latin-1 pairs upper U+00C0..U+00DE with lower U+00E0..U+00FE, 0x20 apart (except × and ÷);
 * ß (U+00DF) and ÿ (U+00FF) have no partner in the block. */
int cp_is_upper(uint32_t cp)
{
    return (cp >= 'A' && cp <= 'Z') || (cp >= 0xC0 && cp <= 0xDE && cp != 0xD7);
}

int cp_is_lower(uint32_t cp)
{
    return (cp >= 'a' && cp <= 'z') || (cp >= 0xDF && cp <= 0xFF && cp != 0xF7);
}

uint32_t cp_to_lower(uint32_t cp) { return cp_is_upper(cp) ? cp + 0x20 : cp; }
