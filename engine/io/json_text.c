/* JSON text the way Python's json.dumps(sort_keys=True) writes it, so a config.json saved by
 * mtlab is byte-identical to the one transformers saves (indent=2): shortest round-trip reals
 * ("1e-05", "0.1", "1.0"), \u escapes with lower-case hex for control characters and (with
 * ensure_ascii, as transformers asks) everything outside printable ASCII, keys sorted. jansson's
 * own dump differs in those details ("1e-5", "\u00E9"). */
#include "io/json_util.h"

#include "core/textbuf.h"

#include "mtlab/error.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void puts_(textbuf *t, const char *s) { textbuf_append(t, s, strlen(s)); }

static void put_indent(textbuf *t, int indent, int level)
{
    puts_(t, "\n");
    for (int i = 0; i < indent * level; i++) puts_(t, " ");
}

/* Python's float repr: the shortest digits that read back as v; plain notation when the
 * decimal exponent x is in [-4, 16), always with a fraction ("1.0"); otherwise d.ddde+XX. */
static void put_real(textbuf *t, double v)
{
    if (v == 0) {
        puts_(t, signbit(v) ? "-0.0" : "0.0");
        return;
    }
    char sci[40];
    for (int p = 1; p <= 17; p++) {
        snprintf(sci, sizeof sci, "%.*e", p - 1, v);
        if (strtod(sci, NULL) == v) break;
    }
    /* sci = "[-]d[.ddd]e[+-]XX" */
    const char *s = sci;
    char out[64], digits[24];
    size_t n = 0, o = 0;
    if (*s == '-') out[o++] = *s++;
    for (; *s != 'e'; s++)
        if (*s != '.') digits[n++] = *s;
    while (n > 1 && digits[n - 1] == '0') n--;
    const int x = atoi(s + 1);
    if (x < -4 || x >= 16) {
        out[o++] = digits[0];
        if (n > 1) {
            out[o++] = '.';
            memcpy(out + o, digits + 1, n - 1);
            o += n - 1;
        }
        o += (size_t)snprintf(out + o, sizeof out - o, "e%c%02d", x < 0 ? '-' : '+', abs(x));
    } else if (x < 0) {
        o += (size_t)snprintf(out + o, sizeof out - o, "0.");
        for (int i = 0; i < -x - 1; i++) out[o++] = '0';
        memcpy(out + o, digits, n);
        o += n;
    } else {
        for (int i = 0; i <= x; i++) out[o++] = (size_t)i < n ? digits[i] : '0';
        out[o++] = '.';
        if ((size_t)x + 1 < n) {
            memcpy(out + o, digits + x + 1, n - (size_t)x - 1);
            o += n - (size_t)x - 1;
        } else {
            out[o++] = '0';
        }
    }
    textbuf_append(t, out, o);
}

/* Decodes one UTF-8 sequence (jansson only holds valid UTF-8); returns its length. */
static int utf8_decode(const unsigned char *s, unsigned *cp)
{
    if (s[0] < 0x80) return *cp = s[0], 1;
    if (s[0] < 0xE0) return *cp = (s[0] & 0x1Fu) << 6 | (s[1] & 0x3Fu), 2;
    if (s[0] < 0xF0) return *cp = (s[0] & 0x0Fu) << 12 | (s[1] & 0x3Fu) << 6 | (s[2] & 0x3Fu), 3;
    *cp = (s[0] & 0x07u) << 18 | (s[1] & 0x3Fu) << 12 | (s[2] & 0x3Fu) << 6 | (s[3] & 0x3Fu);
    return 4;
}

static void put_string(textbuf *t, const char *str, size_t len, int ensure_ascii)
{
    const unsigned char *s = (const unsigned char *)str, *end = s + len;
    char esc[16];
    puts_(t, "\"");
    while (s < end) {
        unsigned cp;
        const int n = utf8_decode(s, &cp);
        s += n;
        switch (cp) {
        case '"': puts_(t, "\\\""); continue;
        case '\\': puts_(t, "\\\\"); continue;
        case '\n': puts_(t, "\\n"); continue;
        case '\r': puts_(t, "\\r"); continue;
        case '\t': puts_(t, "\\t"); continue;
        case '\b': puts_(t, "\\b"); continue;
        case '\f': puts_(t, "\\f"); continue;
        }
        if (cp >= 0x20 && (cp < 0x7F || !ensure_ascii)) {
            textbuf_append(t, (const char *)s - n, (size_t)n);
        } else if (cp < 0x10000) {
            snprintf(esc, sizeof esc, "\\u%04x", cp);
            puts_(t, esc);
        } else {
            /* UTF-16 surrogate pair */
            unsigned v = cp - 0x10000;
            snprintf(esc, sizeof esc, "\\u%04x\\u%04x", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
            puts_(t, esc);
        }
    }
    puts_(t, "\"");
}

static int by_key(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void put_value(textbuf *t, const json_t *v, int indent, int ensure_ascii, int level)
{
    /* one line: Python's default separators ", " and ": " */
    const char *item_sep = indent ? "," : ", ";
    char num[32];
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        size_t n = json_object_size(v), i = 0;
        if (n == 0) {
            puts_(t, "{}");
            return;
        }
        const char **keys = mt_xmalloc(n * sizeof *keys);
        const char *key;
        json_t *value;
        json_object_foreach((json_t *)v, key, value) keys[i++] = key;
        qsort(keys, n, sizeof *keys, by_key);
        puts_(t, "{");
        for (i = 0; i < n; i++) {
            if (i) puts_(t, item_sep);
            if (indent) put_indent(t, indent, level + 1);
            put_string(t, keys[i], strlen(keys[i]), ensure_ascii);
            puts_(t, ": ");
            put_value(t, json_object_get(v, keys[i]), indent, ensure_ascii, level + 1);
        }
        if (indent) put_indent(t, indent, level);
        puts_(t, "}");
        free(keys);
        return;
    }
    case JSON_ARRAY: {
        size_t n = json_array_size(v);
        if (n == 0) {
            puts_(t, "[]");
            return;
        }
        puts_(t, "[");
        for (size_t i = 0; i < n; i++) {
            if (i) puts_(t, item_sep);
            if (indent) put_indent(t, indent, level + 1);
            put_value(t, json_array_get(v, i), indent, ensure_ascii, level + 1);
        }
        if (indent) put_indent(t, indent, level);
        puts_(t, "]");
        return;
    }
    case JSON_STRING:
        put_string(t, json_string_value(v), json_string_length(v), ensure_ascii);
        return;
    case JSON_INTEGER:
        snprintf(num, sizeof num, "%lld", (long long)json_integer_value(v));
        puts_(t, num);
        return;
    case JSON_REAL: put_real(t, json_real_value(v)); return;
    case JSON_TRUE: puts_(t, "true"); return;
    case JSON_FALSE: puts_(t, "false"); return;
    case JSON_NULL: puts_(t, "null"); return;
    }
}

char *json_text(const json_t *v, int indent, int ensure_ascii)
{
    textbuf t = {0};
    put_value(&t, v, indent, ensure_ascii, 0);
    return textbuf_take(&t);
}
