/* What hf_bpe_load.c reads out of a tokenizer.json and hf_bpe.c encodes and decodes with. */
#ifndef MTLAB_TOKENIZER_HF_BPE_INTERNAL_H
#define MTLAB_TOKENIZER_HF_BPE_INTERNAL_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stddef.h>
#include <stdint.h>

#include "data/strmap.h"
#include "tokenizer/hf_bpe.h"

/* Ids above this are refused: real vocabularies stay far below (Gemma's is 262,144), and the
 * id tables are allocated up to the highest id. */
#define HF_BPE_MAX_ID ((1 << 22) - 1)
#define HF_BPE_MAX_STEPS 16 /* normalizers or pre-tokenizers, Sequences flattened */

typedef struct {
    char *content; /* what is matched: the normalized content for a normalized token */
    size_t len;
    int id;
    unsigned char single_word, lstrip, rstrip, normalized, special;
} hf_added;

enum { HF_PRE_BYTE_LEVEL, HF_PRE_SPLIT };
enum { HF_SPLIT_ISOLATED, HF_SPLIT_REMOVED };

typedef struct {
    int kind; /* HF_PRE_* */
    int add_prefix_space; /* ByteLevel */
    pcre2_code *re; /* ByteLevel: GPT-2's expression, NULL when use_regex is false; Split */
    int behavior; /* Split: HF_SPLIT_* */
} hf_pretok;

/* One merge rule: the pair (a, b) joins into new_id, rank = its line in model.merges. */
typedef struct {
    uint64_t pair; /* a << 32 | b; HF_NO_PAIR in an empty slot */
    uint32_t rank;
    int32_t new_id;
} hf_merge;
#define HF_NO_PAIR UINT64_MAX

struct hf_bpe {
    char *name; /* file (or bundle member), for messages */
    strmap vocab; /* model.vocab: text -> id */
    int n_ids; /* highest id + 1 */
    char **pieces; /* (n_ids) text of each id, NULL where no token has it */
    unsigned char *special; /* (n_ids) 1 for a special added token */
    hf_merge *merges; /* (merge_cap) open addressing, linear probing */
    size_t merge_cap; /* a power of two, 0 when there are no merges */
    hf_added *added; /* (n_added) in file order */
    size_t n_added;
    int norm[HF_BPE_MAX_STEPS]; /* utf8proc option sets, applied in turn */
    size_t n_norm;
    hf_pretok pre[HF_BPE_MAX_STEPS];
    size_t n_pre;
    int decoder_byte_level; /* 0: no decoder (tokens joined by spaces) */
    int unk_id; /* -1 when model.unk_token is null */
    int fuse_unk, ignore_merges, byte_fallback;
    char *prefix, *suffix; /* continuing_subword_prefix, end_of_word_suffix; NULL when none */
    int byte_ids[256]; /* byte_fallback: the id of "<0xXX>", -1 when absent */
};

/* The merge rule for (a, b), NULL when there is none. */
const hf_merge *hf_bpe_find_merge(const hf_bpe *tok, int a, int b);
/* text[0..len) through the normalizers: malloc'd NUL-terminated result, its length in *out_len;
 * NULL with mt_error when utf8proc refuses it. */
char *hf_bpe_normalize(const hf_bpe *tok, const char *text, size_t len, size_t *out_len);
/* Compile a pattern as onig (which `tokenizers` uses) reads it: \s and \S mean Unicode's
 * White_Space, which PCRE2's \s does not quite (U+180E); NULL with mt_error naming key. */
pcre2_code *hf_bpe_compile(const char *name, const char *key, const char *pattern, size_t len,
                           int literal);

#endif
