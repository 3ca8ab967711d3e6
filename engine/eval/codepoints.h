/* Text as Unicode code points for the metrics: sacreBLEU's definitions are Python string
 * operations, which count characters (code points), not bytes. */
#ifndef MTLAB_EVAL_CODEPOINTS_H
#define MTLAB_EVAL_CODEPOINTS_H

#include <stddef.h>
#include <stdint.h>

/* A growable code-point buffer. */
typedef struct {
    uint32_t *cp; /* (n) */
    size_t n, cap;
} mt_cpbuf;

void mt_cpbuf_push(mt_cpbuf *b, uint32_t c);
void mt_cpbuf_free(mt_cpbuf *b);

/* Decode s[0..len) strictly, as Python's "utf-8" codec does: no overlong forms, surrogates or
 * code points above U+10FFFF. Appends to *out. 0, or -1 with "invalid UTF-8 at byte N (0xXX)"
 * (N counted from 0). */
int mt_utf8_decode(mt_cpbuf *out, const char *s, size_t len);

/* UTF-8 encoding of the Unicode scalar values cp[0..n), malloc'd and NUL-terminated; *len_out gets
 * its length when not NULL. offsets, when not NULL, gets n + 1 entries: the byte offset where each
 * code point starts, then the total length. */
char *mt_utf8_encode(const uint32_t *cp, size_t n, size_t *len_out, size_t *offsets);

/* Python's str.isspace() for one character: what str.split() splits on and str.rstrip()
 * strips (\t \n \v \f \r, U+001C..U+001F, space, U+0085, U+00A0, U+1680, U+2000..U+200A,
 * U+2028, U+2029, U+202F, U+205F, U+3000). */
int mt_is_py_space(uint32_t c);

/* Length of cp[0..n) without its trailing whitespace (Python's str.rstrip()). */
size_t mt_py_rstrip_len(const uint32_t *cp, size_t n);

#endif
