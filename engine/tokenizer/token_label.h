/* A token's text as a label shows it (mt_tokenizer_label, mtlab/tokenizer.h): the formatting
 * every tokenizer kind shares, once its token is turned into the bytes it stands for. */
#ifndef MTLAB_TOKENIZER_TOKEN_LABEL_H
#define MTLAB_TOKENIZER_TOKEN_LABEL_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The label of a token of n bytes (a byte-level BPE token's bytes, a sentencepiece piece with
 * word_mark 1: its U+2581 marks stand for spaces) into out (len bytes with the NUL, cut on a
 * character's boundary). */
void mt_token_label_format(const char *bytes, size_t n, int word_mark, char *out, size_t len);

#ifdef __cplusplus
}
#endif

#endif
