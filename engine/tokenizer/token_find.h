/* The token a person names by typing it (mtlab/tokenizer.h mt_tokenizer_find_token, the way
 * back from mt_tokenizer_label), the same way for every tokenizer kind: the one hook it needs
 * from the tokenizer's kind. */
#ifndef MTLAB_TOKENIZER_TOKEN_FIND_H
#define MTLAB_TOKENIZER_TOKEN_FIND_H

#ifdef __cplusplus
extern "C" {
#endif

/* How the tokenizer's vocabulary spells text at a word's start, whether or not a token has that
 * spelling: "Ġof" for "of" in byte-level BPE (the bytes of " of"), "▁of" in sentencepiece and
 * an opus-mt vocabulary. Malloc'd (engine/tokenizer/spm.cc). */
struct mt_tokenizer;
char *mt_tokenizer_word_start_piece(const struct mt_tokenizer *tok, const char *text);

#ifdef __cplusplus
}
#endif

#endif
