/* UTF-8 decoding and the character classes the Bible cleaner needs. Case mapping covers ASCII
 * and Latin-1 (U+00C0..U+00FE: á é í ó ú ü ñ and RV1909's â ê î ô), which is every cased letter
 * of the two texts; other letters (Hebrew, Greek in notes) count as letters without case. */
#ifndef MTLAB_DATA_LETTERS_H
#define MTLAB_DATA_LETTERS_H

#include <stddef.h>
#include <stdint.h>

/* Decode the code point at s[0..len) into *cp; returns its byte length (1..4), or 0 when the
 * bytes there are not valid UTF-8 (stray continuation, truncated, overlong, surrogate,
 * above U+10FFFF). */
size_t u8_decode(const char *s, size_t len, uint32_t *cp);
/* Encode cp (a valid scalar value) into out[0..4); returns the byte length. */
size_t u8_encode(uint32_t cp, char out[4]);
/* Byte offset of the first invalid sequence in s[0..len), or len when all of it is valid. */
size_t u8_invalid_at(const char *s, size_t len);
/* Start of the code point that ends at s[end] (exclusive): steps back over continuation bytes. */
size_t u8_prev_start(const char *s, size_t end);

/* Letters and digits: ASCII alphanumerics, Latin-1 letters, and anything above U+00FF outside
 * the punctuation and combining blocks. Punctuation such as “ ” ‘ ’ — ¿ ¡ is not a word char. */
int cp_is_word(uint32_t cp);
int cp_is_upper(uint32_t cp);
int cp_is_lower(uint32_t cp);
uint32_t cp_to_lower(uint32_t cp);
uint32_t cp_to_upper(uint32_t cp);

#endif
