/* Training data: a tokenized parallel corpus, CAT-N examples and token-budget batches.
 *
 * Everything here is a pure function of (corpus, seed, epoch), so a resumed run rebuilds the
 * same epoch plan and continues at the same batch. Model-specific packing (decoder-only
 * "src <sep> tgt <eos>", encoder-decoder "src <eos>" / "<bos> tgt <eos>") is the model's job;
 * this layer only decides which pairs go together. */
#ifndef MTLAB_TRAINDATA_H
#define MTLAB_TRAINDATA_H

#include <stddef.h>
#include <stdint.h>

#include "mtlab/names.h"
#include "mtlab/tokenizer.h"

/* A tokenized parallel corpus; ids of every pair in one allocation. */
typedef struct {
    size_t n; /* pairs */
    int32_t *ids; /* all source and target ids, pair by pair */
    size_t *src_start; /* (n) index into ids */
    size_t *tgt_start; /* (n) */
    int *src_len; /* (n) ids, no special tokens */
    int *tgt_len; /* (n) */
    size_t truncated; /* sides cut to max_len while loading */
} mt_corpus;

/* Load and tokenize two aligned UTF-8 files (one segment per line). Sides longer than max_len
 * ids are cut to max_len (0: no limit) and counted in ->truncated. Errors name the file and line:
 * different line counts, invalid UTF-8, empty file, an empty line on one side only. */
int mt_corpus_load(mt_corpus *c, const char *src_path, const char *tgt_path,
                   const mt_tokenizer *tok, int max_len);
/* The same with each source put into a decoder-only model's prompt template first
 * (mt_prompt_encode; prompt NULL or "": as mt_corpus_load), so a finetune's rows begin with the
 * ids decoding gives the model. A source cut to max_len keeps the ids of the template's text
 * after {src} (its separator) at its end. */
int mt_corpus_load_prompted(mt_corpus *c, const char *src_path, const char *tgt_path,
                            const mt_tokenizer *tok, int max_len, const char *prompt);
void mt_corpus_free(mt_corpus *c);

/* Name substitution for training (mtlab/names.h, docs/data.md §8): the pairs of a corpus that
 * share a name verbatim, kept as text, and the gazetteer to draw from. */
typedef struct {
    double p; /* probability that one shared name of a pair is substituted */
    mt_gazetteer gaz;
    size_t n; /* pairs with at least one shared name */
    uint32_t *pair; /* (n) their corpus indices, rising */
    char **src, **tgt; /* (n) their texts */
    mt_entity_set *names; /* (n) their shared names */
} mt_name_pool;

/* Reads the pairs of two aligned files (the ones given to mt_corpus_load) and the gazetteer;
 * the target recogniser is lang. 0, or -1 naming the file (and line). */
int mt_name_pool_build(mt_name_pool *np, const char *src_path, const char *tgt_path,
                       mt_ner_lang lang, const char *gazetteer_path, double p);
void mt_name_pool_free(mt_name_pool *np);
/* One epoch's corpus: base (loaded from the pool's files with the same tokenizer and max_len)
 * with the pairs whose names were substituted encoded again. The draws depend only on
 * (seed, epoch), so a resumed run rebuilds the same epoch; p = 0 copies base unchanged.
 * *substituted, when not NULL, gets the number of names replaced. 0 or -1. */
int mt_corpus_substitute_names(mt_corpus *out, const mt_corpus *base, const mt_name_pool *np,
                               const mt_tokenizer *tok, int max_len, uint64_t seed, uint64_t epoch,
                               size_t *substituted);

/* An example is one pair or, with CAT-N, the concatenation of several pairs (their sources
 * joined, their targets joined, in the same order). parts of all examples share one array. */
typedef struct {
    size_t n; /* examples */
    uint32_t *parts; /* pair indices, example after example */
    size_t *start; /* (n) index into parts */
    int *n_parts; /* (n) */
    int *src_len; /* (n) summed source ids of the parts */
    int *tgt_len; /* (n) summed target ids */
} mt_examples;

/* One epoch of examples from corpus c. cat_n <= 1: every pair once, in corpus order.
 * cat_n >= 2 (CAT-N, docs/models.md §10.3): each pair stays alone with probability keep_p, else it
 * is joined with cat_n - 1 pairs drawn uniformly at random (seeded by seed and epoch); with
 * 2 <= cat_min < cat_n the join's size is itself drawn uniformly from cat_min..cat_n pairs (other
 * cat_min: exactly cat_n). Examples whose joined sides exceed max_len ids are not joined (the pair
 * stays alone). */
void mt_examples_build(mt_examples *e, const mt_corpus *c, int cat_n, int cat_min, double keep_p,
                       int max_len, uint64_t seed, uint64_t epoch);
/* The fewest pairs a CAT-N join holds: cat_min where it draws the join's size (2 <= cat_min <
 * cat_n), otherwise cat_n. */
int mt_cat_fewest(int cat_n, int cat_min);
void mt_examples_free(mt_examples *e);

/* Token-budget batches of similar lengths: examples are sorted by length (ties broken by a seeded
 * random key), cut into batches whose padded size rows * longest <= max_tokens (a single example
 * longer than the budget gets a batch of its own), and the batch order is shuffled. len[i] is the
 * example's packed length as the model will see it. */
typedef struct {
    size_t n_batches;
    uint32_t *order; /* example indices, batch after batch */
    size_t *start; /* (n_batches) index into order */
    int *rows; /* (n_batches) */
    int *longest; /* (n_batches) longest len in the batch */
} mt_batch_plan;

void mt_batch_plan_build(mt_batch_plan *p, const int *len, size_t n, size_t max_tokens,
                         uint64_t seed, uint64_t epoch);

/* The rows * longest budget a training batch plan gets from the configured max_tokens, the
 * padded tokens per side. An encoder-decoder row is one side at a time (its packed length is the
 * longer side), so its budget is max_tokens; a decoder-only row holds both sides in one
 * sequence, so its budget is 2 * max_tokens. Both kinds then see about the same sentence pairs
 * and the same tokens per step, as the paper's fixed 64-pair batches do (docs/models.md §10.2). */
size_t mt_batch_budget(size_t max_tokens, int encdec);
void mt_batch_plan_free(mt_batch_plan *p);

/* Inverse-square-root learning rate. warmup > 0: linear from 0 to base over warmup steps, then
 * base * sqrt(warmup / step). warmup == 0: HF get_inverse_sqrt_schedule's timescale form,
 * base / sqrt((step + timescale) / timescale), timescale 10000 (docs/models.md §10.1); step >= 1 */
double mt_lr_inverse_sqrt(double base, long step, long warmup);

#endif
