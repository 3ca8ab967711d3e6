#include "eval/ngram_counter.h"

#include "mtlab/error.h"

#include <stdlib.h>
#include <string.h>

/* FNV-1a, 64-bit. */
static uint64_t hash_bytes(const char *s, size_t len)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return h;
}

void mt_ngram_counter_free(mt_ngram_counter *c)
{
    free(c->slots);
    memset(c, 0, sizeof *c);
}

/* The slot holding key, or the empty slot where it would go. */
static mt_ngram_slot *find_slot(const mt_ngram_counter *c, const char *key, size_t len, uint64_t h)
{
    size_t mask = c->cap - 1;
    for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
        mt_ngram_slot *s = &c->slots[i];
        if (!s->key) return s;
        if (s->hash == h && s->len == len && memcmp(s->key, key, len) == 0) return s;
    }
}

static void grow(mt_ngram_counter *c)
{
    mt_ngram_counter bigger = {0};
    bigger.cap = c->cap ? 2 * c->cap : 64;
    bigger.slots = mt_xcalloc(bigger.cap, sizeof *bigger.slots);
    for (size_t i = 0; i < c->cap; i++) {
        const mt_ngram_slot *s = &c->slots[i];
        if (s->key) *find_slot(&bigger, s->key, s->len, s->hash) = *s;
    }
    bigger.used = c->used;
    bigger.total = c->total;
    free(c->slots);
    *c = bigger;
}

/* The slot for key, inserted with count 0 when new. Keeps the load under 1/2. */
static mt_ngram_slot *upsert(mt_ngram_counter *c, const char *key, size_t len)
{
    if (2 * (c->used + 1) > c->cap) grow(c);
    uint64_t h = hash_bytes(key, len);
    mt_ngram_slot *s = find_slot(c, key, len, h);
    if (!s->key) {
        s->key = key, s->len = len, s->hash = h, s->count = 0;
        c->used++;
    }
    return s;
}

void mt_ngram_add(mt_ngram_counter *c, const char *key, size_t len, int64_t count)
{
    upsert(c, key, len)->count += count;
    c->total += count;
}

void mt_ngram_max(mt_ngram_counter *c, const char *key, size_t len, int64_t count)
{
    mt_ngram_slot *s = upsert(c, key, len);
    if (count > s->count) {
        c->total += count - s->count;
        s->count = count;
    }
}

int64_t mt_ngram_get(const mt_ngram_counter *c, const char *key, size_t len)
{
    if (c->used == 0) return 0;
    const mt_ngram_slot *s = find_slot(c, key, len, hash_bytes(key, len));
    return s->key ? s->count : 0;
}

int64_t mt_ngram_clipped_matches(const mt_ngram_counter *hyp, const mt_ngram_counter *ref)
{
    int64_t matches = 0;
    for (size_t i = 0; i < hyp->cap; i++) {
        const mt_ngram_slot *s = &hyp->slots[i];
        if (!s->key) continue;
        int64_t r = mt_ngram_get(ref, s->key, s->len);
        matches += s->count < r ? s->count : r;
    }
    return matches;
}
