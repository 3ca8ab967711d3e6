/* Small helpers for messages about JSON values (safetensors headers, config.json). */
#ifndef MTLAB_IO_JSON_UTIL_H
#define MTLAB_IO_JSON_UTIL_H

#include <jansson.h>
#include <stddef.h>

/* "an object", "a list", "a string", "an integer", "a number", "true", "false", "null". */
const char *json_kind(const json_t *v);
/* JSON text as Python's json.dumps(v, sort_keys=True, indent=indent, ensure_ascii=ensure_ascii)
 * writes it; indent 0 gives one line with Python's default separators ("[1, 2]", "{\"a\": 1}").
 * malloc'd. */
char *json_text(const json_t *v, int indent, int ensure_ascii);
/* The value as one line of JSON text, cut to fit len (with "..." when cut); returns buf. */
char *json_snippet(char *buf, size_t len, const json_t *v);
/* Copy s into buf for quoting in a one-line message: control characters become '?', and
 * long text is cut with "..."; returns buf. */
char *printable_text(char *buf, size_t len, const char *s);

#endif
