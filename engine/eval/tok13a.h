/* The 13a tokenizer on code points (engine/eval/tok13a.c); mt_tokenize_13a wraps it. Its
 * passes are shared with the zh and tercom tokenizers, which reuse mteval's regular
 * expressions around other steps. */
#ifndef MTLAB_EVAL_TOK13A_H
#define MTLAB_EVAL_TOK13A_H

#include "eval/codepoints.h"

/* Appends the tokens of in[0..n) to *out, separated by single spaces. */
void mt_tok13a_codepoints(mt_cpbuf *out, const uint32_t *in, size_t n);

/* sacreBLEU's TokenizerRegexp (13a without its entity handling and ' ' + line + ' '):
 * rules a-d, then ' '.join(line.split()). Appends to *out. */
void mt_tok_regexp_codepoints(mt_cpbuf *out, const uint32_t *in, size_t n);

/* The passes, each one Python re.sub over *s, in place: */
typedef int (*mt_cp_pred)(uint32_t c);
/* (X) -> ' \1 ' for every X with is_sep(X) */
void mt_tok_pad(mt_cpbuf *s, mt_cp_pred is_sep);
/* (X)(Y) -> '\1 \2 ' (or ' \1 \2' with space_before), scanning on after each match */
void mt_tok_pair(mt_cpbuf *s, mt_cp_pred first, mt_cp_pred second, int space_before);
/* rules a-d of the 13a tokenizer (in the header comment of tok13a.c) */
void mt_tok_13a_rules(mt_cpbuf *s);
/* str.replace(pat, rep) with ASCII pat and rep */
void mt_tok_replace_all(mt_cpbuf *s, const char *pat, const char *rep);
/* rule a's character class */
int mt_tok_is_13a_symbol(uint32_t c);
/* ' '.join(in.split()), appended to *out */
void mt_tok_split_join(mt_cpbuf *out, const uint32_t *in, size_t n);

#endif
