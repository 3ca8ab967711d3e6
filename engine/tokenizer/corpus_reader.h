/* Training text for the tokenizer: lines of one or more UTF-8 files, validated and, when there
 * are more than max_lines of them, a seeded uniform sample of exactly max_lines (kept in file
 * order). Two passes over the files: open() counts and validates every line, so a bad byte
 * anywhere is reported before training starts; next() then reads them again and hands out the
 * selected lines. */
#ifndef MTLAB_TOKENIZER_CORPUS_READER_H
#define MTLAB_TOKENIZER_CORPUS_READER_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Longest line accepted, in bytes (a sentence per line is expected, not whole documents). */
enum { CORPUS_MAX_LINE_BYTES = 1 << 16 };

typedef struct corpus_reader corpus_reader;

/* NULL with mt_error on failure: a file that cannot be read ("path: No such file or
 * directory"), a line that is not UTF-8 or holds a NUL byte ("path:LINE: ... at byte B"),
 * a line longer than CORPUS_MAX_LINE_BYTES, or no text at all. */
corpus_reader *corpus_reader_open(const char *const *paths, size_t n_paths, size_t max_lines,
                                  unsigned seed);
/* 1 with the next selected line (no trailing "\n" or "\r\n"; valid until the next call),
 * 0 after the last one, -1 with mt_error when a file changed since open(). */
int corpus_reader_next(corpus_reader *r, const char **line, size_t *len);
size_t corpus_reader_total_lines(const corpus_reader *r); /* lines in all files */
size_t corpus_reader_selected_lines(const corpus_reader *r); /* min(total, max_lines) */
void corpus_reader_close(corpus_reader *r);

#ifdef __cplusplus
}
#endif

#endif
