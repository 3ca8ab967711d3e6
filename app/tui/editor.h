/* The source-text editor: a UTF-8 buffer with a cursor, multi-line (Enter inserts a newline),
 * soft-wrapped to the editor's width. Pure data and functions; drawing is draw_editor.c.
 *
 * The text is always valid UTF-8 without control characters other than '\n', so everything
 * downstream (tokenizer, entity detector, screen) can trust it. The cursor always sits on a
 * character boundary and never between a character and the combining marks that follow it.
 * Each non-blank line is one segment: a sentence (or paragraph) the models translate. */
#ifndef MTLAB_TUI_EDITOR_H
#define MTLAB_TUI_EDITOR_H

#include <stddef.h>
#include <stdint.h>

#define TUI_EDITOR_MAX_BYTES (64 * 1024) /* a few chapters; more is a notice, not a loss */

typedef struct {
    char *text; /* (len + 1) bytes, NUL-terminated */
    size_t len, cap;
    size_t cursor; /* byte offset */
    int goal_col; /* display column up/down aim for; -1 when unset */
    unsigned long version; /* increases with every change of the text */
    size_t max_bytes;
} tui_editor;

/* One screen row of the wrapped text: bytes [start, end) of line `line` (0-based). */
typedef struct {
    size_t start, end;
    int line;
} tui_vrow;

/* A non-blank line: bytes [start, end) without the newline, and its line number. */
typedef struct {
    size_t start, end;
    int line;
} tui_segment;

void tui_editor_init(tui_editor *e, size_t max_bytes);
void tui_editor_free(tui_editor *e);

/* Insert n bytes of text at the cursor as one edit (a paste is one call). CR LF and lone CR
 * become LF, a tab a space; other control characters are dropped and each ill-formed UTF-8
 * sequence becomes U+FFFD (mt_utf8_next_lossy: what follows it is kept); *replaced (when not
 * NULL) receives how many input bytes were replaced. Text past max_bytes is not inserted:
 * returns the bytes of the (cleaned) input that were dropped, 0 when everything fit. */
size_t tui_editor_insert(tui_editor *e, const char *s, size_t n, size_t *replaced);
/* Insert one typed character (a newline for '\n'); 0, or -1 when the editor is full. */
int tui_editor_insert_char(tui_editor *e, uint32_t cp);
/* Replace the whole text (cursor at the end); returns the bytes dropped as insert does. */
size_t tui_editor_set_text(tui_editor *e, const char *s);

void tui_editor_backspace(tui_editor *e);
void tui_editor_delete(tui_editor *e);
void tui_editor_left(tui_editor *e);
void tui_editor_right(tui_editor *e);
/* Start / end of the cursor's line (not of its wrapped row). */
void tui_editor_home(tui_editor *e);
void tui_editor_end(tui_editor *e);
/* One wrapped row up or down at the goal column, for rows `width` columns wide. */
void tui_editor_up(tui_editor *e, int width);
void tui_editor_down(tui_editor *e, int width);

/* Wrap the text into rows of at most width columns (width >= 2), breaking after a space when a
 * word does not fit and inside the word only when it is longer than a row. *rows is malloc'd;
 * returns the number of rows (at least 1). cur_row / cur_col, when not NULL, receive the
 * cursor's row and column. */
int tui_editor_wrap(const tui_editor *e, int width, tui_vrow **rows, int *cur_row, int *cur_col);

/* Wrap any UTF-8 text the same way into *rows (malloc'd); returns the number of rows. */
int tui_wrap(const char *text, size_t len, int width, tui_vrow **rows);

/* The non-blank lines; *segs is malloc'd (NULL when none). Returns their number. */
int tui_editor_segments(const tui_editor *e, tui_segment **segs);
/* The line number (0-based) the cursor is on. */
int tui_editor_cursor_line(const tui_editor *e);

#endif
