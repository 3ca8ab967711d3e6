#include "mtlab/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local char err_buf[1024];

/* A message is one line, whatever text of the input it quotes (a file's piece, a JSON value, a
 * pickle's string): control characters become \xNN, cut at the buffer's end. */
static void one_line(char *dst, size_t cap, const char *src)
{
    size_t o = 0;
    for (; *src && o + 1 < cap; src++) {
        unsigned char c = (unsigned char)*src;
        if (c < 0x20 || c == 0x7F) {
            if (o + 5 >= cap) break;
            snprintf(dst + o, 5, "\\x%02x", c);
            o += 4;
        } else {
            dst[o++] = (char)c;
        }
    }
    dst[o] = '\0';
}

int mt_error(const char *fmt, ...)
{
    char text[sizeof err_buf];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    one_line(err_buf, sizeof err_buf, text);
    return -1;
}

int mt_error_context(const char *fmt, ...)
{
    char prefix[512], text[sizeof err_buf];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    snprintf(text, sizeof text, "%s: %s", prefix, err_buf);
    one_line(err_buf, sizeof err_buf, text);
    return -1;
}

const char *mt_last_error(void) { return err_buf; }

void mt_clear_error(void) { err_buf[0] = '\0'; }

char *mt_error_oneline(char *text)
{
    for (char *c = text; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7F) *c = '?';
    return text;
}

static void out_of_memory(size_t n, const char *file, int line)
{
    fprintf(stderr, "mtlab: out of memory allocating %zu bytes at %s:%d\n", n, file, line);
    abort();
}

void *mt_xmalloc_at(size_t n, const char *file, int line)
{
    void *p = malloc(n ? n : 1);
    if (!p) out_of_memory(n, file, line);
    return p;
}

void *mt_xcalloc_at(size_t count, size_t size, const char *file, int line)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p) out_of_memory(count * size, file, line);
    return p;
}

void *mt_xrealloc_at(void *p, size_t n, const char *file, int line)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) out_of_memory(n, file, line);
    return q;
}

char *mt_xstrdup_at(const char *s, const char *file, int line)
{
    size_t n = strlen(s) + 1;
    char *p = mt_xmalloc_at(n, file, line);
    memcpy(p, s, n);
    return p;
}
