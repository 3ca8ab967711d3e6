/* The console's parts that need no terminal and no thread, so the unit tests can reach them:
 * the scrollback, the pretty-printer of values, the test of a chunk's completeness (lua.c's
 * rule) and the candidates of Tab completion. */
#ifndef MTLAB_CONSOLE_PARTS_H
#define MTLAB_CONSOLE_PARTS_H

#include <lua.h>
#include <stddef.h>

/* ---------------------------------------------------------------- scrollback */
#define CONSOLE_SCROLLBACK_LINES 5000

typedef enum { CONSOLE_OUT, CONSOLE_ECHO, CONSOLE_ERROR } console_line_kind;

typedef struct {
    char *text; /* malloc'd, no newline */
    console_line_kind kind;
} console_line;

/* A ring of the last CONSOLE_SCROLLBACK_LINES lines. Text written without a final newline
 * stays open: the next write of the same kind continues that line (io.write("a") io.write("b")
 * makes one line "ab"). */
typedef struct {
    console_line lines[CONSOLE_SCROLLBACK_LINES];
    int first, n; /* the oldest line and how many there are */
    int open; /* the newest line is still open */
    unsigned long added; /* lines ever started */
} console_scrollback;

void console_scrollback_free(console_scrollback *s);
void console_scrollback_write(console_scrollback *s, console_line_kind kind, const char *text,
                              size_t len);
/* Line i, 0 the oldest kept. */
const console_line *console_scrollback_get(const console_scrollback *s, int i);

/* ---------------------------------------------------------------- colour escapes */
/* Lines may hold SGR escapes ("\x1b[0;48;5;148m", what p:text{color=true} writes): the console
 * paints the text after one in its colours, never shows the escape's bytes. */
typedef struct {
    short fg, bg; /* xterm-256 colours, -1 the console's own */
} console_sgr;

/* The length of the escape s starts with (0: none), *sgr updated when it is an SGR; any other
 * escape is skipped, one cut short ends at the string's end. */
size_t console_ansi_escape(const char *s, console_sgr *sgr);
/* Display columns of s, one per code point, escapes not counted. */
int console_ansi_columns(const char *s);
/* The byte offset of column col in s (past the escapes before it; the end when s is shorter),
 * *sgr left as the escapes before it set it. */
size_t console_ansi_seek(const char *s, int col, console_sgr *sgr);

/* One screen row of a wrapped line: columns [first, first + n). */
typedef struct {
    int first, n;
} console_row;

/* How s wraps at width columns: a row ends at the last space that lets it fit (that space is
 * shown on neither row), a word longer than width breaks at width. Stores the first max rows
 * and returns how many there are (at least 1: an empty line is an empty row). */
int console_wrap(const char *s, int width, console_row *rows, int max);

/* ---------------------------------------------------------------- values */
#define CONSOLE_PRETTY_DEPTH 3 /* tables nested deeper print as {...} */
#define CONSOLE_PRETTY_ITEMS 24 /* a table shows this many entries, then "... (N more)" */

/* The value at idx as the console shows it, malloc'd: tables as {1, 2, key = "v", [3.5] = {...}}
 * (the list part in order, then the other keys sorted), nested strings quoted, a string at the
 * top as it is, anything with a __tostring (model handles, matrices) by it. */
char *console_pretty(lua_State *L, int idx);

/* ---------------------------------------------------------------- chunks */
typedef enum {
    CONSOLE_CHUNK_EXPRESSION, /* "return <chunk>" compiles: run it and print its values */
    CONSOLE_CHUNK_STATEMENTS, /* the chunk compiles as it is */
    CONSOLE_CHUNK_INCOMPLETE, /* the parser stopped at <eof>: read another line (>>) */
    CONSOLE_CHUNK_ERROR, /* a syntax error that no further line can mend */
} console_chunk_kind;

/* Classify a chunk by compiling it in P (any state; nothing is run, the stack is left as it
 * was). */
console_chunk_kind console_chunk_check(lua_State *P, const char *chunk);

/* ---------------------------------------------------------------- completion */
/* Completions of word (a dotted name, maybe with a final ':') against L's globals: after a '.'
 * the string keys of the table before it, after a ':' the functions of the value's table or
 * its metatable's __index table (or, when __index is a function, the metatable's `methods`
 * table, as mtlab's handles have). Each candidate is the whole word, with a '.' appended when it
 * names a table (mtlab.sc -> mtlab.score.). Sorted, malloc'd (free each and the array);
 * returns their number. Only tables are walked (raw access): completing never runs code. */
int console_complete(lua_State *L, const char *word, char ***out);

#endif
