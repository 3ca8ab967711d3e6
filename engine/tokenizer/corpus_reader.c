#include "tokenizer/corpus_reader.h"

#include "mtlab/error.h"
#include "mtlab/files.h"
#include "mtlab/utf8.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

struct corpus_reader {
    const char *const *paths;
    size_t n_paths;
    size_t total; /* lines in all files, counted by open() */
    size_t selected; /* lines to hand out: min(total, max_lines) */
    size_t seen; /* lines read so far by next() */
    size_t taken; /* of those, lines handed out */
    uint64_t rng; /* splitmix64 state */
    size_t file; /* index into paths of the file being read */
    FILE *f; /* NULL between files */
    mt_line_reader lr; /* f's lines, the limit applied while reading */
};

/* splitmix64 (Steele, Lea, Flood 2014): a small, well-mixed generator, so the sample depends
 * only on the seed and not on the C library's rand(). */
static uint64_t splitmix64_next(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform double in [0, 1) from the top 53 bits. */
static double uniform01(uint64_t *state)
{
    return (double)(splitmix64_next(state) >> 11) * 0x1p-53;
}

static int open_file(corpus_reader *r, size_t i)
{
    r->f = mt_file_fopen(r->paths[i], MT_FILE_REGULAR); /* read twice: counted, then sampled */
    if (!r->f) return -1;
    r->file = i;
    mt_line_reader_init(&r->lr, r->f, r->paths[i], CORPUS_MAX_LINE_BYTES);
    r->lr.hint = "one sentence per line expected for tokenizer training";
    return 0;
}

/* Reads the next line of the current file into r->buf and checks it. 1 line, 0 end of file,
 * -1 error. */
static int read_line(corpus_reader *r, size_t *len)
{
    const char *path = r->paths[r->file];
    char *line;
    size_t l;
    int got = mt_line_next(&r->lr, &line, &l); /* NUL bytes and read errors named there */
    if (got <= 0) return got;
    if (l > 0 && line[l - 1] == '\r') line[--l] = '\0';
    size_t bad = mt_utf8_invalid_offset(line, l);
    if (bad < l)
        return mt_error("%s:%zu: invalid UTF-8 at byte %zu of the line (0x%02X)", path,
                        r->lr.line_no, bad, (unsigned)(unsigned char)line[bad]);
    *len = l;
    return 1;
}

static void close_file(corpus_reader *r)
{
    if (r->f) fclose(r->f);
    r->f = NULL;
    mt_line_reader_free(&r->lr);
}

corpus_reader *corpus_reader_open(const char *const *paths, size_t n_paths, size_t max_lines,
                                  unsigned seed)
{
    if (n_paths == 0) {
        mt_error("tokenizer training: no input files");
        return NULL;
    }
    corpus_reader *r = mt_xcalloc(1, sizeof *r);
    r->paths = paths;
    r->n_paths = n_paths;
    for (size_t i = 0; i < n_paths; i++) {
        if (open_file(r, i)) goto fail;
        size_t len;
        int got;
        while ((got = read_line(r, &len)) == 1) r->total++;
        close_file(r);
        if (got < 0) goto fail;
    }
    if (r->total == 0) {
        mt_error("%s: no text to train the tokenizer on", paths[0]);
        goto fail;
    }
    r->selected = r->total < max_lines ? r->total : max_lines;
    r->rng = seed;
    r->file = 0;
    return r;
fail:
    corpus_reader_close(r);
    return NULL;
}

/* Knuth's selection sampling (TAOCP vol. 2, 3.4.2, Algorithm S): having seen t of N lines and
 * taken m, take the next one with probability (n - m) / (N - t). Every n-subset is equally
 * likely, exactly n lines are taken, and they come out in file order. */
static int take_this_line(corpus_reader *r)
{
    if (r->selected == r->total) return 1;
    double remaining = (double)(r->total - r->seen);
    return remaining * uniform01(&r->rng) < (double)(r->selected - r->taken);
}

int corpus_reader_next(corpus_reader *r, const char **line, size_t *len)
{
    while (r->taken < r->selected) {
        if (!r->f && open_file(r, r->file)) return -1;
        int got = read_line(r, len);
        if (got < 0) return -1;
        if (got == 0) {
            close_file(r);
            if (r->file + 1 == r->n_paths)
                return mt_error(
                    "%s: file changed while training the tokenizer (%zu lines, then %zu)",
                    r->paths[r->file], r->total, r->seen);
            r->file++;
            continue;
        }
        int take = take_this_line(r);
        r->seen++;
        if (take) {
            r->taken++;
            *line = r->lr.buf;
            return 1;
        }
    }
    return 0;
}

size_t corpus_reader_total_lines(const corpus_reader *r) { return r->total; }

size_t corpus_reader_selected_lines(const corpus_reader *r) { return r->selected; }

void corpus_reader_close(corpus_reader *r)
{
    if (!r) return;
    close_file(r);
    free(r);
}
