/* sacreBLEU's BLEU tokenizers on code points (engine/eval/tok_sacrebleu.c). */
#ifndef MTLAB_EVAL_TOK_SACREBLEU_H
#define MTLAB_EVAL_TOK_SACREBLEU_H

#include "eval/codepoints.h"
#include "mtlab/metrics.h"

/* Appends what tokenizer t returns for in[0..n) to *out. 0, or -1 (a flores tokenizer without
 * a model, or a SentencePiece error). */
int mt_sacre_tokenize_codepoints(mt_cpbuf *out, mt_bleu_tokenize t, const mt_spm_pieces *spm,
                                 const uint32_t *in, size_t n);

/* sacreBLEU's ja-mecab (engine/eval/tok_mecab.c): MeCab's segmentation of in[0..n), stripped,
 * appended to *out. 0, or -1 when the IPA dictionary is missing or not sacreBLEU's. */
int mt_mecab_tokenize(mt_cpbuf *out, const uint32_t *in, size_t n);
/* "ja-mecab-<MeCab's version>-IPA", what sacreBLEU's signature says for ja-mecab. */
const char *mt_mecab_signature(void);

#endif
