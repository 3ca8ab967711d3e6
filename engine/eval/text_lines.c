/* Hypothesis and reference files, read the way sacreBLEU's command line reads them
 * (open(..., newline="\n") then line.rstrip() for every line). */
#include "eval/codepoints.h"
#include "mtlab/error.h"
#include "mtlab/files.h"
#include "mtlab/metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void mt_text_lines_free(mt_text_lines *t)
{
    for (size_t i = 0; i < t->n; i++) free(t->lines[i]);
    free(t->lines);
    t->lines = NULL;
    t->n = 0;
}

/* Validates one line (without its '\n'; length and NUL bytes checked by the reader) and
 * returns it rstripped, or NULL. */
static char *clean_line(const char *buf, size_t len, const char *path, size_t line_no)
{
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
    FILE *f = mt_file_fopen(path, MT_FILE_STREAM);
    if (!f) return -1;
    mt_line_reader lr;
    mt_line_reader_init(&lr, f, path, 0);
    size_t cap = 0;
    char *buf;
    size_t len;
    int rc;
    while ((rc = mt_line_next(&lr, &buf, &len)) > 0) {
        char *line = clean_line(buf, len, path, lr.line_no);
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
    mt_line_reader_free(&lr);
    fclose(f);
    if (rc < 0) mt_text_lines_free(out);
    return rc < 0 ? -1 : 0;
}
