/* Reading the files a user names: every reader opens them here, so a directory, a FIFO, a
 * device or a symlink loop is refused by name before anything blocks in open() or reads
 * forever, and every text reader reads lines through one reader with one line limit, applied
 * while it reads (a 50 MB line or /dev/zero costs a megabyte, not gigabytes). */
#ifndef MTLAB_FILES_H
#define MTLAB_FILES_H

#include <stddef.h>
#include <stdio.h>

/* The longest line any text input may hold (a sentence, a paragraph, a TSV row): far above
 * real text, far below what a wrong file (a binary, a corpus without newlines) would cost. */
#define MT_LINE_MAX_BYTES ((size_t)1 << 20)

enum {
    MT_FILE_REGULAR = 0, /* a regular file (after symlinks), nothing else */
    MT_FILE_STREAM = 1, /* also a pipe or FIFO (text read once, start to end): `<(cmd)` */
};

/* 0 when path names what kind allows, else -1 with the reason, without opening it:
 * "PATH: No such file or directory", "PATH: is a directory, not a file", "PATH: a FIFO (named
 * pipe), not a regular file", "PATH: a character device, not a regular file", "PATH: Too many
 * levels of symbolic links", "PATH: Permission denied". */
int mt_file_check(const char *path, int kind);

/* Open for reading (O_CLOEXEC) after the same check: a FIFO that kind refuses is never
 * opened, and a regular file is checked again on the open descriptor. A descriptor or -1. */
int mt_file_open(const char *path, int kind);
/* The same as a FILE ("rb"); NULL with the reason. */
FILE *mt_file_fopen(const char *path, int kind);
/* A regular file mapped read-only, whole: *map is NULL for an empty file, else the caller
 * munmaps (*map, *size). 0, or -1 with the reason ("PATH: cannot map N bytes: ..."). */
int mt_file_map(const char *path, void **map, size_t *size);
/* "DIR/NAME", malloc'd. */
char *mt_path_join(const char *dir, const char *name);

/* Lines of a stream, one at a time, each at most max bytes (MT_LINE_MAX_BYTES when 0): a
 * longer line is an error as soon as its max+1-th byte is read. */
typedef struct {
    FILE *f;
    const char *name; /* in messages: "NAME:LINE: ..." */
    size_t max;
    const char *hint; /* after the limit's message: "one sentence per line expected" */
    size_t line_no; /* of the line last returned, from 1 */
    char *buf;
    size_t cap;
} mt_line_reader;

void mt_line_reader_init(mt_line_reader *r, FILE *f, const char *name, size_t max);
/* The next line without its '\n' (a final line without one counts) in *line, NUL-terminated
 * and valid until the next call, its length in *len: 1, or 0 at the end, or -1 with
 * "NAME:LINE: line longer than the 1048576-byte limit (HINT)",
 * "NAME:LINE: NUL byte at byte 7 (not a text file?)" or "NAME: read error after line N: ...". */
int mt_line_next(mt_line_reader *r, char **line, size_t *len);
void mt_line_reader_free(mt_line_reader *r);

#endif
