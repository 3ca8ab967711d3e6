/* Finished translations kept for reuse: a segment whose text, model and decoding mode were
 * translated before is shown at once instead of decoded again, so an edit of one line of a
 * long paste translates one segment. The key is the whole (model, mode, text) triple compared
 * byte for byte: model names the weights (bundle path, device, the weights file's size and
 * time), mode everything else that changes the output (search and beam size). Bounded by
 * entries and by bytes; the least recently used entry goes first. UI thread only. */
#ifndef MTLAB_TUI_RESULT_CACHE_H
#define MTLAB_TUI_RESULT_CACHE_H

#include <stddef.h>
#include <stdint.h>

#define TUI_CACHE_MAX_ENTRIES 8192
#define TUI_CACHE_MAX_BYTES (32u << 20)

typedef struct tui_cache_entry tui_cache_entry;

typedef struct {
    tui_cache_entry **buckets; /* (n_buckets) chains by hash */
    size_t n_buckets;
    tui_cache_entry *newest, *oldest; /* the recency list */
    size_t n, bytes; /* entries held and their bytes (keys and values) */
    size_t max_entries, max_bytes;
    size_t hits, misses, evictions;
} tui_result_cache;

void tui_cache_init(tui_result_cache *c, size_t max_entries, size_t max_bytes);
void tui_cache_free(tui_result_cache *c);
/* The translation stored for (model, mode, text), now the most recently used; NULL on a miss.
 * Valid until the next tui_cache_put. */
const char *tui_cache_get(tui_result_cache *c, const char *model, const char *mode,
                          const char *text);
/* Store (or replace) the translation of (model, mode, text), evicting the least recently used
 * entries until both bounds hold; an entry larger than max_bytes alone is not stored. */
void tui_cache_put(tui_result_cache *c, const char *model, const char *mode, const char *text,
                   const char *translation);

#endif
