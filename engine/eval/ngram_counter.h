/* A multiset of n-grams (Python's collections.Counter for the metrics). An n-gram is a byte
 * span of a caller-owned string: tokens joined by single spaces for word n-grams, a run of
 * UTF-8 characters for character n-grams. The spans must outlive the counter. */
#ifndef MTLAB_EVAL_NGRAM_COUNTER_H
#define MTLAB_EVAL_NGRAM_COUNTER_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    const char *key; /* NULL: empty slot */
    size_t len;
    uint64_t hash;
    int64_t count;
} mt_ngram_slot;

typedef struct {
    mt_ngram_slot *slots; /* (cap), open addressing, cap a power of two */
    size_t cap, used;
    int64_t total; /* sum of all counts */
} mt_ngram_counter;

/* Zero-initialised counters are valid and empty. */
void mt_ngram_counter_free(mt_ngram_counter *c);
/* c[key] += count */
void mt_ngram_add(mt_ngram_counter *c, const char *key, size_t len, int64_t count);
/* c[key] = max(c[key], count) */
void mt_ngram_max(mt_ngram_counter *c, const char *key, size_t len, int64_t count);
/* c[key], 0 when absent */
int64_t mt_ngram_get(const mt_ngram_counter *c, const char *key, size_t len);
/* sum over the n-grams of hyp of min(hyp[g], ref[g]): the clipped matches */
int64_t mt_ngram_clipped_matches(const mt_ngram_counter *hyp, const mt_ngram_counter *ref);

#endif
