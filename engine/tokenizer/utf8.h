/* Strict UTF-8 validation (RFC 3629) for text handed to sentencepiece, which would otherwise
 * replace or drop bad bytes without telling anyone. */
#ifndef MTLAB_TOKENIZER_UTF8_H
#define MTLAB_TOKENIZER_UTF8_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Byte offset of the first invalid sequence in s[0..len), or len when all of it is valid.
 * Rejected: stray continuation bytes, truncated sequences, overlong forms, UTF-16 surrogates
 * (U+D800..U+DFFF) and code points above U+10FFFF. NUL bytes are valid UTF-8 and pass. */
size_t utf8_invalid_offset(const char *s, size_t len);

#ifdef __cplusplus
}
#endif

#endif
