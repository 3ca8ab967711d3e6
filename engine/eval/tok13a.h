/* The 13a tokenizer on code points (engine/eval/tok13a.c); mt_tokenize_13a wraps it. */
#ifndef MTLAB_EVAL_TOK13A_H
#define MTLAB_EVAL_TOK13A_H

#include "eval/codepoints.h"

/* Appends the tokens of in[0..n) to *out, separated by single spaces. */
void mt_tok13a_codepoints(mt_cpbuf *out, const uint32_t *in, size_t n);

#endif
