#include "eval/tsv_file.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mtlab/error.h"
#include "mtlab/files.h"

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
    FILE *f = mt_file_fopen(path, MT_FILE_STREAM);
    if (!f) return -1;
    char hint[96];
    snprintf(hint, sizeof hint, "%s has short lines", r->kind);
    mt_line_reader lr;
    mt_line_reader_init(&lr, f, path, r->max_line);
    lr.hint = hint;
    char *line;
    size_t len;
    int got, ok = 1;
    while (ok && (got = mt_line_next(&lr, &line, &len)) != 0) {
        size_t line_no = lr.line_no;
        if (got < 0) {
            ok = 0;
        } else if (line_no == 1) {
            if (strcmp(line, r->magic) != 0 &&
                !(r->older_magic && strcmp(line, r->older_magic) == 0)) {
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
    if (ok && lr.line_no < 2) {
        mt_error("%s: %s (%s has a two-line header)", path,
                 lr.line_no == 0 ? "empty file" : "header ends after one line", r->kind);
        ok = 0;
    }
    mt_line_reader_free(&lr);
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
