/* A growable byte buffer that is always NUL-terminated, for building text: the Bible cleaner's
 * output, JSON text, a child process's output. */
#ifndef MTLAB_CORE_TEXTBUF_H
#define MTLAB_CORE_TEXTBUF_H

#include "mtlab/error.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct {
    char *p; /* (cap) p[n] == '\0' once anything was appended */
    size_t n; /* bytes in use, excluding the terminator */
    size_t cap;
} textbuf;

static inline void textbuf_reserve(textbuf *b, size_t extra)
{
    if (extra < b->cap - b->n) return; /* room for extra bytes and the terminator */
    size_t need = b->n + extra + 1;
    if (need <= extra) need = SIZE_MAX; /* wrapped: mt_xrealloc reports it and aborts */
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need) cap = cap > SIZE_MAX / 2 ? need : 2 * cap;
    b->p = mt_xrealloc(b->p, cap);
    b->cap = cap;
}

static inline void textbuf_append(textbuf *b, const char *s, size_t len)
{
    textbuf_reserve(b, len);
    memcpy(b->p + b->n, s, len);
    b->n += len;
    b->p[b->n] = '\0';
}

static inline void textbuf_putc(textbuf *b, char c) { textbuf_append(b, &c, 1); }

/* The text as a malloc'd string ("" when empty); the buffer is left empty. */
static inline char *textbuf_take(textbuf *b)
{
    if (!b->p) {
        textbuf_reserve(b, 0);
        b->p[0] = '\0';
    }
    char *s = b->p;
    *b = (textbuf){0};
    return s;
}

#endif
