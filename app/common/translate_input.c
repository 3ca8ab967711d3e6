/* Reading and grouping the input of `mtlab translate` (translate_input.h). */
#include "common/translate_input.h"

#include <stdlib.h>
#include <string.h>

#include "mtlab/error.h"
#include "mtlab/files.h"
#include "mtlab/utf8.h"

void tr_lines_free(tr_lines *l)
{
    for (size_t i = 0; i < l->n; i++) free(l->lines[i]);
    free(l->lines);
    l->lines = NULL;
    l->n = 0;
}

int tr_read_lines(tr_lines *out, FILE *f, const char *name)
{
    memset(out, 0, sizeof *out);
    mt_line_reader lr;
    mt_line_reader_init(&lr, f, name, 0);
    size_t cap = 0, len;
    char *buf;
    int rc;
    while ((rc = mt_line_next(&lr, &buf, &len)) > 0) {
        if (len > 0 && buf[len - 1] == '\r') len--;
        if (out->n == cap) {
            cap = cap ? 2 * cap : 64;
            out->lines = mt_xrealloc(out->lines, cap * sizeof *out->lines);
        }
        char *line = mt_xmalloc(len + 1);
        memcpy(line, buf, len);
        line[len] = '\0';
        out->lines[out->n++] = line;
    }
    rc = rc < 0 ? -1 : 0;
    mt_line_reader_free(&lr);
    /* Invalid UTF-8 is named by its own line and byte here: a paragraph joins lines, so the
     * tokenizer could only name the paragraph. Checked after reading, so a NUL byte or an
     * over-long line anywhere is reported first, as a file that is not text. */
    for (size_t i = 0; rc == 0 && i < out->n; i++) {
        const char *line = out->lines[i];
        size_t n = strlen(line), bad = mt_utf8_invalid_offset(line, n);
        if (bad < n)
            rc = mt_error("%s:%zu: invalid UTF-8 at byte %zu (0x%02X)", name, i + 1, bad,
                          (unsigned)(unsigned char)line[bad]);
    }
    if (rc) tr_lines_free(out);
    return rc;
}

int tr_is_blank(const char *line) { return line[strspn(line, " \t")] == '\0'; }

void tr_units_free(tr_units *u)
{
    for (size_t i = 0; i < u->n; i++) free(u->units[i].text);
    free(u->units);
    u->units = NULL;
    u->n = 0;
}

static void add_unit(tr_units *u, char *text, size_t line)
{
    u->units = mt_xrealloc(u->units, (u->n + 1) * sizeof *u->units);
    u->units[u->n++] = (tr_unit){text, line};
}

/* lines[first .. last) trimmed of spaces and tabs, joined by single spaces */
static char *join_block(const char *const *lines, size_t first, size_t last)
{
    size_t cap = 1;
    for (size_t i = first; i < last; i++) cap += strlen(lines[i]) + 1;
    char *out = mt_xmalloc(cap), *p = out;
    for (size_t i = first; i < last; i++) {
        const char *s = lines[i] + strspn(lines[i], " \t");
        size_t len = strlen(s);
        while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t')) len--;
        if (p != out) *p++ = ' ';
        memcpy(p, s, len);
        p += len;
    }
    *p = '\0';
    return out;
}

void tr_split(tr_units *out, const char *const *lines, size_t n, int paragraphs)
{
    memset(out, 0, sizeof *out);
    out->paragraphs = paragraphs;
    if (!paragraphs) {
        for (size_t i = 0; i < n; i++) add_unit(out, mt_xstrdup(lines[i]), i + 1);
        return;
    }
    while (n > 0 && tr_is_blank(lines[n - 1])) n--;
    size_t i = 0;
    while (i < n) {
        while (i < n && tr_is_blank(lines[i])) i++;
        size_t first = i;
        while (i < n && !tr_is_blank(lines[i])) i++;
        if (i > first) add_unit(out, join_block(lines, first, i), first + 1);
    }
}
