/* Character classes of sacreBLEU's intl and zh tokenizers (engine/eval/tok_sacrebleu.c),
 * generated from sacreBLEU and the regex module by tests/fixtures/metrics/make_tok_tables.py. */
#ifndef MTLAB_EVAL_UNICODE_TOK_H
#define MTLAB_EVAL_UNICODE_TOK_H

#include "eval/unicode_case.h"

extern const mt_cp_range mt_intl_punct[]; /* \p{P} */
extern const size_t mt_intl_punct_count;
extern const mt_cp_range mt_intl_symbol[]; /* \p{S} */
extern const size_t mt_intl_symbol_count;
extern const mt_cp_range mt_intl_number[]; /* \p{N} */
extern const size_t mt_intl_number_count;
extern const mt_cp_range mt_zh_chars[]; /* TokenizerZh._is_chinese_char */
extern const size_t mt_zh_chars_count;

#endif
