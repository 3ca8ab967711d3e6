/* Subword tokenizer: a thin C API over the sentencepiece library (engine/tokenizer/spm.cc),
 * and over mtlab's reader of Hugging Face tokenizer.json files, byte-level BPE (GPT-2,
 * GPT-NeoX / Pythia, mamba-*-hf: engine/tokenizer/hf_bpe.h), which ids as `tokenizers` does.
 * mtlab models share one joint source+target unigram model with these reserved ids: */
#ifndef MTLAB_TOKENIZER_H
#define MTLAB_TOKENIZER_H

#include <stddef.h>

enum { MT_PAD_ID = 0, MT_EOS_ID = 1, MT_SEP_ID = 2, MT_BOS_ID = 3, MT_UNK_ID = 4 };

typedef struct mt_tokenizer mt_tokenizer;

/* Load a sentencepiece .model file or a tokenizer.json (told apart by content), or the
 * tokenizer a model directory holds: its tokenizer.model, its tokenizer.json, or an opus-mt
 * checkpoint's source.spm + target.spm + vocab.json (ids from vocab.json, language codes
 * ">>xx<<" kept whole: engine/tokenizer/marian_vocab.h). NULL with mt_last_error() naming the
 * file (and the key) on failure. The reserved ids above hold for sentencepiece models only. */
mt_tokenizer *mt_tokenizer_load(const char *path);
/* Load from the bytes of a .model file (e.g. embedded in a bundle); NULL on failure. */
mt_tokenizer *mt_tokenizer_load_bytes(const void *data, size_t len, const char *name_for_errors);
/* Load another project's sentencepiece model (XLM-R's sentencepiece.bpe.model for COMET) with
 * its own ids: no reserved-id check, and encode returns sentencepiece's ids as they are (the
 * caller maps them to its model's). decode skips ids 0..3 as for mtlab's models. */
mt_tokenizer *mt_tokenizer_load_foreign(const char *path);
void mt_tokenizer_free(mt_tokenizer *tok);

int mt_tokenizer_vocab_size(const mt_tokenizer *tok);

/* A model's vocabulary (its embedding rows) holds its tokenizer's pieces, padded at most to the
 * next multiple of MT_VOCAB_PAD (docs/bundles.md §5): fewer rows, or more, is another model's
 * tokenizer, whose ids index other rows. Loading a bundle and training one both check this. */
enum { MT_VOCAB_PAD = 128 };
static inline int mt_vocab_rows_fit(int pieces, int rows)
{
    return pieces <= rows && rows <= (pieces + MT_VOCAB_PAD - 1) / MT_VOCAB_PAD * MT_VOCAB_PAD;
}
/* The file the ids come from, for messages ("m/tokenizer.model", "opus-mt-es-en/vocab.json"). */
const char *mt_tokenizer_source(const mt_tokenizer *tok);

/* The id the tokenizer gives a role: mtlab's reserved ids, an opus-mt vocabulary's </s>,
 * <pad> and <unk>; -1 when it does not fix one (a tokenizer.json, a foreign model). Opening a
 * model checks its config's special ids against these. */
typedef enum { MT_ROLE_EOS, MT_ROLE_PAD, MT_ROLE_UNK } mt_token_role;
int mt_tokenizer_special_id(const mt_tokenizer *tok, mt_token_role role);

/* 1 when id is a special token of a tokenizer.json (an added token marked special:
 * <|endoftext|>), 0 when it is another of its tokens or outside the vocabulary; -1 for the
 * other formats, whose special ids mt_tokenizer_special_id gives. */
int mt_tokenizer_is_special(const mt_tokenizer *tok, int id);

/* Piece text of an id ("▁Dios"); NULL when out of range. Valid while tok lives. */
const char *mt_tokenizer_id_to_piece(const mt_tokenizer *tok, int id);
/* A token as a person reads it, for labels (maps' axes, token lists), the same way for every
 * tokenizer kind: the text the token stands for (a byte-level BPE token's bytes: "Ġher" ->
 * "her"), without a word's leading space (sentencepiece's "▁" word mark alike; a token of
 * spaces alone shows each as "␣"), newline, tab and the other control bytes as their control
 * pictures ("␊", "␉"; DEL "␡"), and a byte of a character the token holds only part of as
 * sentencepiece spells its byte pieces ("<0xE2>"); special and added tokens as spelled ("?"
 * for an id out of range). Into out (len bytes with the NUL, cut on a character's boundary);
 * returns out. Encoding and decoding never use it: it is for showing. */
const char *mt_tokenizer_label(const mt_tokenizer *tok, int id, char *out, size_t len);
/* Id of a piece, MT_UNK_ID when unknown (a tokenizer.json or an opus-mt vocabulary: -1). */
int mt_tokenizer_piece_to_id(const mt_tokenizer *tok, const char *piece);
/* The id of the one token a person names by text (a contrast typed on the command line, in
 * Lua, in the workbench), the same way for every tokenizer kind, the first of:
 *   1. the token the vocabulary spells text ("Ġof", "▁Dios", "<|endoftext|>"), unless that
 *      token is part of a character while text reads as a whole one ("á" is byte E1's
 *      spelling in byte-level BPE);
 *   2. the token of text at a word's start: "Ġ" + text in byte-level BPE (the bytes of
 *      " " + text), "▁" + text in sentencepiece ("of" -> "Ġof", "Dios" -> "▁Dios");
 *   3. the first token whose label (mt_tokenizer_label) is text ("␊", "<0xC3>");
 *   4. the one token text encodes to.
 * Else -1, with mt_error naming text and how it splits ("'Zorvald' is 5 tokens (Z or v al d),
 * not one token of this vocabulary"). */
int mt_tokenizer_find_token(const mt_tokenizer *tok, const char *text);

/* Encode UTF-8 text (no special ids added). *ids is malloc'd (caller frees), *n its length.
 * Returns 0, or -1 (invalid UTF-8 is reported with its byte offset; a text over
 * MT_LINE_MAX_BYTES, mtlab/files.h, is refused before it is read). */
int mt_tokenizer_encode(const mt_tokenizer *tok, const char *text, int **ids, size_t *n);
/* Encode text put into a decoder-only model's prompt template (mt_model_config.prompt, holding
 * "{src}" once, e.g. "{src}<sep>"): the whole text at once, so an added token of the template
 * comes out as its id. prompt NULL or "": text alone. As mt_tokenizer_encode. */
int mt_prompt_encode(const mt_tokenizer *tok, const char *prompt, const char *text, int **ids,
                     size_t *n);
/* Decode ids to malloc'd UTF-8 text, skipping <pad>/<eos>/<sep>/<bos> (a tokenizer.json: its
 * special added tokens, as `tokenizers` does by default; an opus-mt vocabulary: </s>, <pad>
 * and <unk>, as MarianTokenizer.decode(skip_special_tokens=True)). NULL on failure. */
char *mt_tokenizer_decode(const mt_tokenizer *tok, const int *ids, size_t n);

/* Train a unigram model on one or more UTF-8 text files (one sentence per line), writing
 * model_prefix.model and model_prefix.vocab, with the reserved ids above: trained under a
 * temporary name beside them and renamed into place when whole (files already there are
 * replaced; `mtlab tokenizer train` asks for --force first). */
typedef struct {
    const char *const *inputs; /* input files */
    size_t n_inputs;
    const char *model_prefix; /* "data/bible/spm" -> data/bible/spm.model */
    int vocab_size; /* default 8000 */
    double character_coverage; /* default 1.0 */
    int num_threads; /* 0: all cores */
    unsigned seed; /* for reproducible sampling of the training sentences */
    size_t max_sentences; /* 0: 2,000,000; more input lines than this are sampled */
    int verbose; /* 1: let sentencepiece log its progress to stderr */
    const char *user_symbols; /* NULL, or comma-separated pieces always kept whole ("<de>,<en>") */
} mt_tokenizer_train_opts;
/* The model depends on the inputs, the seed and num_threads (the EM sums are split per
 * thread), so fix num_threads where byte-identical models across machines matter. */
int mt_tokenizer_train(const mt_tokenizer_train_opts *opts);

#endif
