/* UTF-8, strictly (RFC 3629): the one decoder and encoder every part of mtlab uses — the
 * tokenizer's input checks, the metrics' code points, the workbench's editor and screen.
 * Well-formed sequences (Unicode table 3-7); the second byte's range depends on the lead byte
 * and is what excludes overlong forms (E0, F0), surrogates (ED) and > U+10FFFF (F4):
 *   00..7F
 *   C2..DF  80..BF
 *   E0      A0..BF  80..BF
 *   E1..EC  80..BF  80..BF
 *   ED      80..9F  80..BF
 *   EE..EF  80..BF  80..BF
 *   F0      90..BF  80..BF  80..BF
 *   F1..F3  80..BF  80..BF  80..BF
 *   F4      80..8F  80..BF  80..BF                                                        */
#ifndef MTLAB_UTF8_H
#define MTLAB_UTF8_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The character at s[0..n): returns its byte length (1..4) and sets *cp, or returns 0 when
 * the bytes there are not one well-formed sequence (stray continuation byte, truncated,
 * overlong, surrogate, above U+10FFFF, or n == 0); *cp is then left unchanged. */
int mt_utf8_next(const char *s, size_t n, uint32_t *cp);

/* Encode cp into out (room for 4 bytes): returns the length, 0 for a surrogate or a value
 * above U+10FFFF. */
int mt_utf8_put(uint32_t cp, char *out);

/* Byte offset of the first invalid sequence in s[0..len), or len when all of it is valid.
 * NUL bytes are valid UTF-8 and pass. */
size_t mt_utf8_invalid_offset(const char *s, size_t len);

/* Start of the character that ends at byte offset end (exclusive) of valid UTF-8 s: steps back
 * over continuation bytes; 0 when end is 0. */
size_t mt_utf8_prev(const char *s, size_t end);

#ifdef __cplusplus
}
#endif

#endif
