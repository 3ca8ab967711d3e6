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

#define MT_UTF8_REPLACEMENT 0xFFFDu

/* The lossy reading every input path uses (keys, pastes): a well-formed character as
 * mt_utf8_next gives it; otherwise *cp = U+FFFD and the return value is the length of the
 * ill-formed sequence's maximal subpart (the Unicode Standard's recommended practice, ch. 3
 * "U+FFFD Substitution of Maximal Subparts"): the longest prefix that begins some well-formed
 * sequence, at least one byte. So "\xE2\x82x" reads as U+FFFD then 'x', an overlong "\xC0\xAF"
 * or a surrogate "\xED\xA0\x80" as one U+FFFD per byte, and nothing valid after an invalid
 * byte is lost. Returns 0 only when n == 0. */
int mt_utf8_next_lossy(const char *s, size_t n, uint32_t *cp);

/* 1 when s[0..n) is a proper prefix of some well-formed sequence, so more bytes could still
 * complete it (a reader of a byte stream keeps such a tail for the next read). */
int mt_utf8_incomplete(const char *s, size_t n);

/* s[0..n) into out (room for 3n bytes) with every maximal ill-formed subpart replaced by
 * U+FFFD as mt_utf8_next_lossy reads it; returns the bytes written. *replaced (when not NULL)
 * receives how many input bytes were replaced. */
size_t mt_utf8_repair(const char *s, size_t n, char *out, size_t *replaced);

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
