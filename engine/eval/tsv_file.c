#include "eval/tsv_file.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "mtlab/error.h"

int tsv_parse_count(const char *s, size_t *out)
{
    if (!*s) return -1;
    size_t v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9') return -1;
        size_t d = (size_t)(*s - '0');
        if (v > (SIZE_MAX - d) / 10) return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

int tsv_read(const char *path, const tsv_reader *r)
{
    FILE *f = fopen(path, "r");
    if (!f) return mt_error("%s: %s", path, strerror(errno));
    char *line = NULL;
    size_t cap = 0, line_no = 0;
    ssize_t got;
    int ok = 1;
    while (ok && (got = getline(&line, &cap, f)) >= 0) {
        line_no++;
        size_t len = (size_t)got;
        if (len > 0 && line[len - 1] == '\n') line[--len] = '\0';
        if (len > r->max_line) {
            mt_error("%s:%zu: line of %zu bytes (%s has short lines)", path, line_no, len, r->kind);
            ok = 0;
        } else if (strlen(line) != len) {
            mt_error("%s:%zu: NUL byte at byte %zu (not a text file?)", path, line_no, strlen(line));
            ok = 0;
        } else if (line_no == 1) {
            if (strcmp(line, r->magic) != 0 && !(r->older_magic && strcmp(line, r->older_magic) == 0)) {
                mt_error("%s:1: not %s (expected the line '%s')", path, r->kind, r->magic);
                ok = 0;
            }
        } else if (line_no == 2) {
            if (r->header(r->user, line) < 0) {
                mt_error("%s:2: expected '%s'", path, r->header_hint);
                ok = 0;
            }
        } else if (r->row(r->user, line, len) < 0) {
            mt_error_context("%s:%zu", path, line_no);
            ok = 0;
        }
    }
    if (ok && ferror(f)) {
        mt_error("%s: read error: %s", path, strerror(errno));
        ok = 0;
    }
    if (ok && line_no < 2) {
        mt_error("%s: %s (%s has a two-line header)", path,
                 line_no == 0 ? "empty file" : "header ends after one line", r->kind);
        ok = 0;
    }
    free(line);
    fclose(f);
    return ok ? 0 : -1;
}

static int by_count_then_name(const void *a, const void *b)
{
    const tsv_name_count *x = a, *y = b;
    if (x->count != y->count) return x->count > y->count ? -1 : 1;
    return strcmp(x->name, y->name);
}

tsv_name_count *tsv_sorted_counts(const strmap *m, size_t *n)
{
    tsv_name_count *e = mt_xmalloc((m->n + 1) * sizeof *e);
    *n = 0;
    for (size_t i = 0; i < m->cap; i++)
        if (m->keys[i] && m->vals[i] > 0) e[(*n)++] = (tsv_name_count){m->keys[i], m->vals[i]};
    qsort(e, *n, sizeof *e, by_count_then_name);
    return e;
}
