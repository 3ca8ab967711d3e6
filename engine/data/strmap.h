/* A string -> size_t hash map (open addressing, FNV-1a, linear probing) for verse keys and
 * word counts. Keys are copied; the map never shrinks. */
#ifndef MTLAB_DATA_STRMAP_H
#define MTLAB_DATA_STRMAP_H

#include <stddef.h>

typedef struct {
    char **keys; /* (cap) NUL-terminated copies, NULL for an empty slot */
    size_t *vals; /* (cap) */
    size_t cap; /* a power of two, 0 before the first insert */
    size_t n; /* keys stored */
} strmap;

void strmap_free(strmap *m);
/* The value slot for key[0..klen); a missing key is inserted with value init and *inserted
 * (when not NULL) set to 1. */
size_t *strmap_put(strmap *m, const char *key, size_t klen, size_t init, int *inserted);
/* The value slot for key[0..klen), or NULL when absent. */
size_t *strmap_get(const strmap *m, const char *key, size_t klen);

#endif
