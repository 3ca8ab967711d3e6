#include "tui/result_cache.h"

#include <stdlib.h>
#include <string.h>

#include "mtlab/error.h"

struct tui_cache_entry {
    char *key; /* (key_len) model NUL mode NUL text */
    size_t key_len;
    char *value;
    uint64_t hash;
    tui_cache_entry *chain; /* next in the bucket */
    tui_cache_entry *newer, *older;
};

/* FNV-1a, 64 bits. */
static uint64_t hash_bytes(const char *s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
    return h;
}

/* The key as one byte string (NULs between the parts, so no two triples share one). */
static char *make_key(const char *model, const char *mode, const char *text, size_t *len)
{
    size_t a = strlen(model), b = strlen(mode), t = strlen(text);
    *len = a + 1 + b + 1 + t;
    char *k = mt_xmalloc(*len);
    memcpy(k, model, a + 1);
    memcpy(k + a + 1, mode, b + 1);
    memcpy(k + a + b + 2, text, t);
    return k;
}

static size_t entry_bytes(const tui_cache_entry *e) { return e->key_len + strlen(e->value) + 1; }

void tui_cache_init(tui_result_cache *c, size_t max_entries, size_t max_bytes)
{
    memset(c, 0, sizeof *c);
    c->max_entries = max_entries;
    c->max_bytes = max_bytes;
    c->n_buckets = 16;
    while (c->n_buckets < 2 * max_entries) c->n_buckets *= 2;
    c->buckets = mt_xcalloc(c->n_buckets, sizeof *c->buckets);
}

static void unlink_recency(tui_result_cache *c, tui_cache_entry *e)
{
    if (e->newer) e->newer->older = e->older;
    else c->newest = e->older;
    if (e->older) e->older->newer = e->newer;
    else c->oldest = e->newer;
    e->newer = e->older = NULL;
}

static void make_newest(tui_result_cache *c, tui_cache_entry *e)
{
    e->older = c->newest;
    e->newer = NULL;
    if (c->newest) c->newest->newer = e;
    c->newest = e;
    if (!c->oldest) c->oldest = e;
}

static void remove_entry(tui_result_cache *c, tui_cache_entry *e)
{
    tui_cache_entry **link = &c->buckets[e->hash & (c->n_buckets - 1)];
    while (*link != e) link = &(*link)->chain;
    *link = e->chain;
    unlink_recency(c, e);
    c->n--;
    c->bytes -= entry_bytes(e);
    free(e->key);
    free(e->value);
    free(e);
}

void tui_cache_free(tui_result_cache *c)
{
    while (c->oldest) remove_entry(c, c->oldest);
    free(c->buckets);
    memset(c, 0, sizeof *c);
}

static tui_cache_entry *find(const tui_result_cache *c, const char *key, size_t len, uint64_t h)
{
    for (tui_cache_entry *e = c->buckets[h & (c->n_buckets - 1)]; e; e = e->chain)
        if (e->hash == h && e->key_len == len && !memcmp(e->key, key, len)) return e;
    return NULL;
}

const char *tui_cache_get(tui_result_cache *c, const char *model, const char *mode,
                          const char *text)
{
    size_t len;
    char *key = make_key(model, mode, text, &len);
    tui_cache_entry *e = find(c, key, len, hash_bytes(key, len));
    free(key);
    if (!e) {
        c->misses++;
        return NULL;
    }
    c->hits++;
    unlink_recency(c, e);
    make_newest(c, e);
    return e->value;
}

void tui_cache_put(tui_result_cache *c, const char *model, const char *mode, const char *text,
                   const char *translation)
{
    size_t len;
    char *key = make_key(model, mode, text, &len);
    uint64_t h = hash_bytes(key, len);
    tui_cache_entry *old = find(c, key, len, h);
    if (old) remove_entry(c, old);
    if (len + strlen(translation) + 1 > c->max_bytes || c->max_entries == 0) {
        free(key);
        return;
    }
    tui_cache_entry *e = mt_xcalloc(1, sizeof *e);
    e->key = key;
    e->key_len = len;
    e->value = mt_xstrdup(translation);
    e->hash = h;
    while (c->n + 1 > c->max_entries || c->bytes + entry_bytes(e) > c->max_bytes) {
        remove_entry(c, c->oldest);
        c->evictions++;
    }
    tui_cache_entry **bucket = &c->buckets[h & (c->n_buckets - 1)];
    e->chain = *bucket;
    *bucket = e;
    make_newest(c, e);
    c->n++;
    c->bytes += entry_bytes(e);
}
