#include "mtlab/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local char err_buf[1024];

int mt_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err_buf, sizeof err_buf, fmt, ap);
    va_end(ap);
    return -1;
}

int mt_error_context(const char *fmt, ...)
{
    char prefix[512], old[sizeof err_buf];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, err_buf, sizeof old);
    snprintf(err_buf, sizeof err_buf, "%s: %s", prefix, old);
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
