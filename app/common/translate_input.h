/* Input of `mtlab translate`: the lines of a file (or stdin), checked, and grouped into the
 * units translated one each: a line, or a paragraph (a blank-line separated block). */
#ifndef MTLAB_APP_TRANSLATE_INPUT_H
#define MTLAB_APP_TRANSLATE_INPUT_H

#include <stddef.h>
#include <stdio.h>

typedef struct {
    char **lines; /* without their "\n" or "\r\n" */
    size_t n;
} tr_lines;

/* Read every line of f; name is used in messages ("in.txt:3: NUL byte at byte 7").
 * Fails on NUL bytes, over-long lines, read errors and invalid UTF-8. 0 or -1 (mt_last_error). */
int tr_read_lines(tr_lines *out, FILE *f, const char *name);
void tr_lines_free(tr_lines *l);

/* 1 when the line holds only spaces and tabs (or nothing). */
int tr_is_blank(const char *line);

typedef struct {
    char *text; /* the line, or the paragraph's lines trimmed and joined by single spaces */
    size_t line; /* its first input line, from 1 */
} tr_unit;

typedef struct {
    tr_unit *units;
    size_t n;
    int paragraphs; /* 1: units are paragraphs (written separated by blank lines) */
} tr_units;

/* Group lines into units. Sentence mode (the default of `mtlab translate`): every line is a
 * unit, a blank one translating to an empty line, so the output has one line per input line
 * and stays aligned with a reference. Paragraph mode (--paragraphs): every maximal block of
 * non-blank lines is one unit; blank lines only separate them. */
void tr_split(tr_units *out, const char *const *lines, size_t n, int paragraphs);
void tr_units_free(tr_units *u);

#endif
