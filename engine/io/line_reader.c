/* One line at a time with the limit applied while reading (mtlab/files.h): getline() would
 * hold a whole 50 MB line, or grow without end on /dev/zero, before any limit could apply. */
#include "mtlab/files.h"
#include "mtlab/error.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void mt_line_reader_init(mt_line_reader *r, FILE *f, const char *name, size_t max)
{
    memset(r, 0, sizeof *r);
    r->f = f;
    r->name = name;
    r->max = max ? max : MT_LINE_MAX_BYTES;
    r->hint = "one sentence per line expected";
}

void mt_line_reader_free(mt_line_reader *r)
{
    free(r->buf);
    r->buf = NULL;
    r->cap = 0;
}

int mt_line_next(mt_line_reader *r, char **line, size_t *len)
{
    size_t n = 0, nul = (size_t)-1;
    int c = EOF;
    errno = 0;
    flockfile(r->f);
    while ((c = getc_unlocked(r->f)) != EOF && c != '\n') {
        if (n == r->max) break;
        if (n + 1 >= r->cap) {
            size_t cap = r->cap ? 2 * r->cap : 256;
            if (cap > r->max + 1) cap = r->max + 1;
            r->buf = mt_xrealloc(r->buf, cap);
            r->cap = cap;
        }
        if (c == '\0' && nul == (size_t)-1) nul = n;
        r->buf[n++] = (char)c;
    }
    int read_error = c == EOF && ferror(r->f);
    funlockfile(r->f);
    if (read_error)
        return mt_error("%s: read error after line %zu: %s", r->name, r->line_no,
                        strerror(errno ? errno : EIO));
    if (c == EOF && n == 0) return 0;
    r->line_no++;
    if (c != EOF && c != '\n')
        return mt_error("%s:%zu: line longer than the %zu-byte limit (%s)", r->name, r->line_no,
                        r->max, r->hint);
    if (nul != (size_t)-1)
        return mt_error("%s:%zu: NUL byte at byte %zu (not a text file?)", r->name, r->line_no,
                        nul);
    if (!r->buf) r->buf = mt_xmalloc(r->cap = 1);
    r->buf[n] = '\0';
    *line = r->buf;
    *len = n;
    return 1;
}
