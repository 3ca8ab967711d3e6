/* The exclusion list: verse keys whose Spanish and English do not correspond (scripts/data/
 * bible_exclude.tsv, one "KEY<TAB>REASON" per line). */
#include "mtlab/bible.h"
#include "mtlab/error.h"
#include "mtlab/files.h"
#include "mtlab/utf8.h"

#include "data/strmap.h"
#include "data/verse_key.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_LIST_BYTES = 16 << 20 };

static size_t line_of(const char *text, size_t offset)
{
    size_t line = 1;
    for (size_t i = 0; i < offset; i++) line += text[i] == '\n';
    return line;
}

static char *copy_bytes(const char *s, size_t n)
{
    char *p = mt_xmalloc(n + 1);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

static void push(mt_exclusions *ex, size_t *cap, const char *key, size_t klen, const char *reason,
                 size_t rlen, size_t line)
{
    if (ex->n == *cap) {
        *cap = *cap ? 2 * *cap : 256;
        ex->keys = mt_xrealloc(ex->keys, *cap * sizeof *ex->keys);
        ex->reasons = mt_xrealloc(ex->reasons, *cap * sizeof *ex->reasons);
        ex->lines = mt_xrealloc(ex->lines, *cap * sizeof *ex->lines);
    }
    ex->keys[ex->n] = copy_bytes(key, klen);
    ex->reasons[ex->n] = copy_bytes(reason, rlen);
    ex->lines[ex->n] = line;
    ex->n++;
}

int mt_exclusions_parse(const char *text, size_t len, const char *name, mt_exclusions *out)
{
    *out = (mt_exclusions){.path = mt_xstrdup(name)};
    strmap seen = {0};
    size_t bad = mt_utf8_invalid_offset(text, len);
    if (bad < len) {
        mt_error("%s: line %zu: invalid UTF-8", name, line_of(text, bad));
        goto fail;
    }
    size_t cap = 0, line = 0, at = 0;
    while (at < len) {
        const char *nl = memchr(text + at, '\n', len - at);
        size_t end = nl ? (size_t)(nl - text) : len, next = nl ? end + 1 : len;
        line++;
        const char *s = text + at;
        size_t n = end - at;
        at = next;
        if (n > 0 && s[n - 1] == '\r') n--;
        if (n == 0 || s[0] == '#') continue;
        const char *tab = memchr(s, '\t', n);
        if (!tab || memchr(tab + 1, '\t', n - (size_t)(tab + 1 - s)) || tab + 1 == s + n) {
            mt_error("%s: line %zu: expected KEY<TAB>REASON", name, line);
            goto fail;
        }
        size_t klen = (size_t)(tab - s), book_len;
        int chapter, verse;
        if (memchr(s, '\0', n) || mt_parse_verse_key(s, klen, &book_len, &chapter, &verse) < 0 ||
            chapter == 0 || verse == 0) {
            mt_error("%s: line %zu: malformed key '%.*s' (expected 'Book C:V')", name, line,
                     (int)(klen < 60 ? klen : 60), s);
            goto fail;
        }
        int inserted;
        size_t *first = strmap_put(&seen, s, klen, line, &inserted);
        if (!inserted) {
            mt_error("%s: line %zu: duplicate key '%.*s' (first on line %zu)", name, line,
                     (int)klen, s, *first);
            goto fail;
        }
        push(out, &cap, s, klen, tab + 1, n - klen - 1, line);
    }
    strmap_free(&seen);
    return 0;
fail:
    strmap_free(&seen);
    mt_exclusions_free(out);
    return -1;
}

int mt_exclusions_load(const char *path, mt_exclusions *out)
{
    FILE *f = mt_file_fopen(path, MT_FILE_REGULAR);
    if (!f) return -1;
    char *text = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len == cap) {
            if (cap >= MAX_LIST_BYTES) {
                fclose(f);
                free(text);
                return mt_error("%s: larger than %d MiB; not an exclusion list", path,
                                MAX_LIST_BYTES >> 20);
            }
            cap = cap ? 2 * cap : 65536;
            text = mt_xrealloc(text, cap);
        }
        size_t got = fread(text + len, 1, cap - len, f);
        len += got;
        if (got == 0) break;
    }
    int read_error = ferror(f);
    fclose(f);
    int rc =
        read_error ? mt_error("%s: read error", path) : mt_exclusions_parse(text, len, path, out);
    free(text);
    return rc;
}

void mt_exclusions_free(mt_exclusions *ex)
{
    for (size_t i = 0; i < ex->n; i++) {
        free(ex->keys[i]);
        free(ex->reasons[i]);
    }
    free(ex->keys);
    free(ex->reasons);
    free(ex->lines);
    free(ex->path);
    *ex = (mt_exclusions){0};
}
