/* mtlab error reporting: every fallible engine call returns 0 (or a valid pointer) on success
 * and -1 (or NULL) on failure, after recording one human-readable line with mt_error().
 * The message names the file (or object) and the problem, e.g.
 *   "models/x/model.safetensors: header length 9999 runs past end of file (812 bytes)".
 * The buffer is thread-local, so worker threads report independently. */
#ifndef MTLAB_ERROR_H
#define MTLAB_ERROR_H

#include <stddef.h>

#if defined(__GNUC__)
#define MT_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define MT_PRINTF(a, b)
#endif

/* Record an error message (printf-style); always returns -1 so callers can `return mt_error(...)`.
 * The message is kept on one line: a control character in it (quoted input, a parser's text)
 * is recorded as \xNN. */
int mt_error(const char *fmt, ...) MT_PRINTF(1, 2);
/* Prefix the current message with "context: " (e.g. a file name added by an outer caller). */
int mt_error_context(const char *fmt, ...) MT_PRINTF(1, 2);
/* A parser's message made fit for one line of mtlab's, in place: control characters become '?'.
 * jansson's json_error_t.text quotes the input near the error, newlines included, so every
 * message built from it passes it through here: mt_error("%s:%d: %s", path, err.line,
 * mt_error_oneline(err.text)). Returns text. */
char *mt_error_oneline(char *text);
/* The last message recorded on this thread ("" when none). */
const char *mt_last_error(void);
void mt_clear_error(void);

/* Allocation that never returns NULL: on failure prints the size and the call site, then aborts.
 * For allocations whose size comes from untrusted input, use malloc and mt_error instead. */
void *mt_xmalloc_at(size_t n, const char *file, int line);
void *mt_xcalloc_at(size_t count, size_t size, const char *file, int line);
void *mt_xrealloc_at(void *p, size_t n, const char *file, int line);
char *mt_xstrdup_at(const char *s, const char *file, int line);
#define mt_xmalloc(n) mt_xmalloc_at((n), __FILE__, __LINE__)
#define mt_xcalloc(c, s) mt_xcalloc_at((c), (s), __FILE__, __LINE__)
#define mt_xrealloc(p, n) mt_xrealloc_at((p), (n), __FILE__, __LINE__)
#define mt_xstrdup(s) mt_xstrdup_at((s), __FILE__, __LINE__)

#endif
