/* UTF-8 for the screen: decoding one character, its display width, and cutting text to a
 * number of columns. Widths come from wcwidth(3), so the process must run under a UTF-8
 * LC_CTYPE for wide (CJK) and combining characters to measure right. */
#ifndef MTLAB_COMMON_COLUMNS_H
#define MTLAB_COMMON_COLUMNS_H

#include <stddef.h>
#include <stdint.h>

/* Decode the character at s[0..n): returns its byte length (1..4) and sets *cp, or returns 0
 * for an invalid, overlong, surrogate or truncated sequence (then *cp = U+FFFD). n > 0. */
int tui_utf8_decode(const char *s, size_t n, uint32_t *cp);
/* Columns the character takes: 0 for combining marks and other zero-width characters, 2 for
 * wide ones, 1 otherwise (unprintable characters count 1: they are shown as U+FFFD). */
int tui_cp_width(uint32_t cp);
/* Columns of valid UTF-8 text s[0..n). */
int tui_text_width(const char *s, size_t n);
/* Columns of a NUL-terminated valid UTF-8 string. */
int tui_text_width_z(const char *s);
/* The longest prefix of valid UTF-8 s[0..n) that fits in max_cols columns (a zero-width
 * character stays with the one before it); returns its byte length, *cols its width. */
size_t tui_text_fit(const char *s, size_t n, int max_cols, int *cols);
/* text in at most cols columns: whole when it fits, else its start and its end around
 * ellipsis, the end keeping the larger half ("mamba-l…mall-reg", "<|end…text|>"): job
 * names of one preset and special tokens differ at their ends; the start alone when cols
 * leaves no room beside the ellipsis. */
void tui_fit_middle(char *out, size_t len, const char *text, int cols, const char *ellipsis);
/* The same for text drawn down a column, one character a line (a heatmap's column labels):
 * at most `lines` characters, the ellipsis' characters included. */
void tui_fit_middle_lines(char *out, size_t len, const char *text, int lines, const char *ellipsis);

#endif
