/* The tokenizer of an opus-mt checkpoint (Helsinki-NLP's MarianMTModel on the Hugging Face hub):
 * two sentencepiece models, source.spm and target.spm, segment the text, and the model's ids
 * come from a third file, vocab.json (piece -> id), not from the sentencepiece models' own ids.
 * The reader behind mt_tokenizer for such a directory (engine/tokenizer/spm.cc dispatches here).
 * It encodes as transformers' MarianTokenizer does, less the </s> it appends:
 *   1. a leading language code ">>xx<<" (text starting ">>" up to the first "<<") is one token;
 *   2. </s>, <unk> and <pad> typed in the rest are those tokens;
 *   3. source.spm cuts each text between them into pieces;
 *   4. each piece is looked up in vocab.json; a piece it lacks is <unk>.
 * Decoding drops </s>, <pad> and <unk> (decode(..., skip_special_tokens=True)) and joins the
 * other pieces through target.spm. With separate vocabularies (tokenizer_config.json's
 * separate_vocabs true) the source's ids come from vocab.json and the output's from
 * target_vocab.json (decoding, the piece of an id), whose </s>, <pad> and <unk> must be
 * vocab.json's ids, and whose size its. */
#ifndef MTLAB_TOKENIZER_MARIAN_VOCAB_H
#define MTLAB_TOKENIZER_MARIAN_VOCAB_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct marian_vocab marian_vocab;

/* 1 when dir holds source.spm (what tells an opus-mt directory). */
int marian_vocab_in_dir(const char *dir);
/* Load dir/source.spm, dir/target.spm, dir/vocab.json (and dir/target_vocab.json); NULL with
 * mt_error naming the file (and the key) on failure. */
marian_vocab *marian_vocab_load(const char *dir);
void marian_vocab_free(marian_vocab *mv);

/* "DIR/vocab.json": the file the ids come from, for messages. */
const char *marian_vocab_path(const marian_vocab *mv);
int marian_vocab_size(const marian_vocab *mv);
/* The output's vocabulary (target_vocab.json where separate). */
const char *marian_vocab_id_to_piece(const marian_vocab *mv, int id);
/* The id of an entry of the output's vocabulary, -1 when there is none. */
int marian_vocab_piece_to_id(const marian_vocab *mv, const char *piece);
/* The ids of </s>, <pad> and <unk>. */
int marian_vocab_eos(const marian_vocab *mv);
int marian_vocab_pad(const marian_vocab *mv);
int marian_vocab_unk(const marian_vocab *mv);

/* Encode text[0..len) (valid UTF-8, checked by the caller) without </s>; 0 or -1. *ids is
 * malloc'd. */
int marian_vocab_encode(const marian_vocab *mv, const char *text, size_t len, int **ids, size_t *n);
/* malloc'd text; NULL with mt_error for an id outside the vocabulary. */
char *marian_vocab_decode(const marian_vocab *mv, const int *ids, size_t n);

#ifdef __cplusplus
}
#endif

#endif
