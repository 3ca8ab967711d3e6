#include "data/strmap.h"

#include "mtlab/error.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* FNV-1a, 64-bit: h = (h ^ byte) * 0x100000001b3, starting from the offset basis. */
static uint64_t fnv1a(const char *s, size_t len)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < len; i++) h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
    return h;
}

static int key_equals(const char *stored, const char *key, size_t klen)
{
    return strncmp(stored, key, klen) == 0 && stored[klen] == '\0';
}

/* Slot holding key, or the empty slot where it would go. */
static size_t find_slot(const strmap *m, const char *key, size_t klen)
{
    size_t mask = m->cap - 1, i = (size_t)fnv1a(key, klen) & mask;
    while (m->keys[i] && !key_equals(m->keys[i], key, klen)) i = (i + 1) & mask;
    return i;
}

static void grow(strmap *m)
{
    strmap bigger = {0};
    bigger.cap = m->cap ? 2 * m->cap : 64;
    bigger.keys = mt_xcalloc(bigger.cap, sizeof *bigger.keys);
    bigger.vals = mt_xcalloc(bigger.cap, sizeof *bigger.vals);
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->keys[i]) continue;
        size_t j = find_slot(&bigger, m->keys[i], strlen(m->keys[i]));
        bigger.keys[j] = m->keys[i];
        bigger.vals[j] = m->vals[i];
    }
    bigger.n = m->n;
    free(m->keys);
    free(m->vals);
    *m = bigger;
}

size_t *strmap_put(strmap *m, const char *key, size_t klen, size_t init, int *inserted)
{
    if (inserted) *inserted = 0;
    if (2 * (m->n + 1) > m->cap) grow(m); /* load factor stays at or below 1/2 */
    size_t i = find_slot(m, key, klen);
    if (!m->keys[i]) {
        char *copy = mt_xmalloc(klen + 1);
        memcpy(copy, key, klen);
        copy[klen] = '\0';
        m->keys[i] = copy;
        m->vals[i] = init;
        m->n++;
        if (inserted) *inserted = 1;
    }
    return &m->vals[i];
}

size_t *strmap_get(const strmap *m, const char *key, size_t klen)
{
    if (m->cap == 0) return NULL;
    size_t i = find_slot(m, key, klen);
    return m->keys[i] ? &m->vals[i] : NULL;
}

void strmap_free(strmap *m)
{
    for (size_t i = 0; i < m->cap; i++) free(m->keys[i]);
    free(m->keys);
    free(m->vals);
    *m = (strmap){0};
}
