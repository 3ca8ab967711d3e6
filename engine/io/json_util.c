#include "io/json_util.h"

#include <stdlib.h>
#include <string.h>

const char *json_kind(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "a list";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a number";
    case JSON_TRUE: return "true";
    case JSON_FALSE: return "false";
    case JSON_NULL: return "null";
    }
    return "a JSON value";
}

char *printable_text(char *buf, size_t len, const char *s)
{
    size_t n = strlen(s), keep = n < len ? n : len - 1;
    const int cut = keep < n;
    if (cut && keep >= 3) keep -= 3;
    for (size_t i = 0; i < keep; i++)
        buf[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7F ? '?' : s[i];
    if (cut && len >= 4) {
        memcpy(buf + keep, "...", 3);
        keep += 3;
    }
    buf[keep] = '\0';
    return buf;
}

char *json_snippet(char *buf, size_t len, const json_t *v)
{
    char *text = json_text(v, 0, 0);
    printable_text(buf, len, text);
    free(text);
    return buf;
}
