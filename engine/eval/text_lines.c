/* Hypothesis and reference files, read the way sacreBLEU's command line reads them
 * (open(..., newline="\n") then line.rstrip() for every line). */
#include "eval/codepoints.h"
#include "mtlab/error.h"
#include "mtlab/metrics.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A sentence-per-line file has no business holding a 16 MiB line; stopping there turns a
 * wrong file (a binary, a whole corpus on one line) into a clear message. */
#define MAX_LINE_BYTES ((size_t)16 << 20)

void mt_text_lines_free(mt_text_lines *t)
{
    for (size_t i = 0; i < t->n; i++) free(t->lines[i]);
    free(t->lines);
    t->lines = NULL;
    t->n = 0;
}

/* Validates one line (without its '\n') and returns it rstripped, or NULL. */
static char *clean_line(const char *buf, size_t len, const char *path, size_t line_no)
{
    if (len > MAX_LINE_BYTES) {
        mt_error("%s:%zu: line of %zu bytes is over the %zu-byte limit (one sentence per line "
                 "expected)", path, line_no, len, MAX_LINE_BYTES);
        return NULL;
    }
    const char *nul = memchr(buf, '\0', len);
    if (nul) {
        mt_error("%s:%zu: NUL byte at byte %zu (not a text file?)", path, line_no,
                 (size_t)(nul - buf));
        return NULL;
    }
    mt_cpbuf cps = {0};
    if (mt_utf8_decode(&cps, buf, len) < 0) {
        mt_cpbuf_free(&cps);
        mt_error_context("%s:%zu", path, line_no);
        return NULL;
    }
    char *s = mt_utf8_encode(cps.cp, mt_py_rstrip_len(cps.cp, cps.n), NULL, NULL);
    mt_cpbuf_free(&cps);
    return s;
}

int mt_text_lines_read(mt_text_lines *out, const char *path)
{
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "rb");
    if (!f) return mt_error("%s: %s", path, strerror(errno));
    size_t cap = 0;
    char *buf = NULL;
    size_t buf_cap = 0;
    int rc = 0;
    for (;;) {
        errno = 0;
        ssize_t got = getline(&buf, &buf_cap, f);
        if (got < 0) {
            if (ferror(f)) rc = mt_error("%s: read error: %s", path, strerror(errno ? errno : EIO));
            break;
        }
        size_t len = (size_t)got;
        if (len > 0 && buf[len - 1] == '\n') len--;
        char *line = clean_line(buf, len, path, out->n + 1);
        if (!line) {
            rc = -1;
            break;
        }
        if (out->n == cap) {
            cap = cap ? 2 * cap : 1024;
            out->lines = mt_xrealloc(out->lines, cap * sizeof *out->lines);
        }
        out->lines[out->n++] = line;
    }
    free(buf);
    fclose(f);
    if (rc < 0) mt_text_lines_free(out);
    return rc;
}
