/* Byte-level BPE from a Hugging Face tokenizer.json (GPT-2, GPT-NeoX / Pythia, mamba-*-hf):
 * the reader behind mt_tokenizer for that format (engine/tokenizer/spm.cc dispatches here).
 * It encodes as PyPI's `tokenizers` does with add_special_tokens=False:
 *   1. added tokens with normalized=false are cut out of the raw text (leftmost-longest,
 *      with their single_word / lstrip / rstrip rules);
 *   2. each remaining piece is normalized (NFC, NFD, NFKC, NFKD or a Sequence of them, by
 *      utf8proc), then added tokens with normalized=true are cut out of it;
 *   3. the pre-tokenizer splits the rest (ByteLevel with GPT-2's regular expression, Split on a
 *      regular expression or a string, or a Sequence of them; PCRE2 with Unicode properties)
 *      and ByteLevel maps each byte to its printable character;
 *   4. the BPE model merges each word by rank (lowest first, leftmost among equals).
 * The post-processor is checked (its special ids must be the vocabulary's) but not applied.
 * Every other part, and every option this reader does not implement, is refused by name
 * ("FILE: pre_tokenizer.type 'Whitespace' is not supported ..."). */
#ifndef MTLAB_TOKENIZER_HF_BPE_H
#define MTLAB_TOKENIZER_HF_BPE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hf_bpe hf_bpe;

/* 1 when bytes look like JSON (an object after optional whitespace and a UTF-8 BOM), which no
 * sentencepiece model does (its protobuf starts with a field tag, never '{'). */
int hf_bpe_is_json(const void *data, size_t len);

/* Parse a tokenizer.json held in memory; NULL with mt_error naming `name` and the key. */
hf_bpe *hf_bpe_load_bytes(const void *data, size_t len, const char *name);
void hf_bpe_free(hf_bpe *tok);

/* The highest id (model vocabulary or added token) + 1; every id below it has a token (a
 * file with a gap is refused). */
int hf_bpe_vocab_size(const hf_bpe *tok);
/* The token's text as the vocabulary spells it ("ĠGod"), an added token's content; NULL for
 * an id out of range. */
const char *hf_bpe_id_to_piece(const hf_bpe *tok, int id);
/* The id of a token's text (added tokens first, then the model's vocabulary), else -1. */
int hf_bpe_piece_to_id(const hf_bpe *tok, const char *piece);
/* 1 when id is an added token marked special (<|endoftext|>). */
int hf_bpe_is_special(const hf_bpe *tok, int id);
/* The bytes a token stands for, as the decoder gives them ("ĠGod" -> " God", "Ċ" -> "\n", a
 * piece of a character -> that byte alone); a special token as spelled. Malloc'd with a NUL
 * after its *n bytes (which may hold NUL); NULL for an id out of range. */
char *hf_bpe_token_bytes(const hf_bpe *tok, int id, size_t *n);
/* The inverse for an ordinary token: bytes[0..n) as the vocabulary spells them (" of" ->
 * "Ġof" where the decoder is ByteLevel, else the bytes as they are), whether or not a token
 * has that spelling. Malloc'd, NUL-terminated. */
char *hf_bpe_spell(const hf_bpe *tok, const char *bytes, size_t n);

/* Encode text[0..len) (valid UTF-8, checked by the caller). 0 or -1 (a regular expression
 * running past PCRE2's match limit). *ids is malloc'd. */
int hf_bpe_encode(const hf_bpe *tok, const char *text, size_t len, int **ids, size_t *n);
/* Decode as `tokenizers` does (decoder ByteLevel, or none: tokens joined by spaces), invalid
 * UTF-8 replaced by U+FFFD; skip_special leaves out the special added tokens. NULL with
 * mt_error for an id that no token has. */
char *hf_bpe_decode(const hf_bpe *tok, const int *ids, size_t n, int skip_special);

#ifdef __cplusplus
}
#endif

#endif
