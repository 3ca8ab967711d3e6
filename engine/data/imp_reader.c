/* Reading a mod2imp dump: "$$$Book C:V" key lines, each followed by one line of OSIS markup.
 * Also the key syntax shared with the exclusion list (mt_parse_verse_key in data/verse_key.h). */
#include "mtlab/bible.h"
#include "mtlab/error.h"
#include "mtlab/utf8.h"

#include "data/strmap.h"
#include "data/verse_key.h"

#include <stdlib.h>
#include <string.h>

/* A verse line holds one verse; WEB's longest (Revelation 22:21 with the glossary) is 60 KB. */
enum { MAX_LINE_BYTES = 4 << 20 };

int mt_parse_verse_key(const char *key, size_t len, size_t *book_len, int *chapter, int *verse)
{
    /* "Book C:V": the book is everything before the last space; C and V are 1 to 4 digits. */
    const char *space = NULL;
    for (size_t i = 0; i < len; i++)
        if (key[i] == ' ') space = key + i;
    if (!space || space == key) return -1;
    const char *p = space + 1, *end = key + len;
    int num[2] = {0, 0};
    for (int part = 0; part < 2; part++) {
        int digits = 0;
        for (; p < end && *p >= '0' && *p <= '9'; p++, digits++) {
            if (digits == 4) return -1;
            num[part] = num[part] * 10 + (*p - '0');
        }
        if (digits == 0) return -1;
        if (part == 0 && (p == end || *p++ != ':')) return -1;
    }
    if (p != end) return -1;
    for (const char *b = key; b < space; b++)
        if ((unsigned char)*b < 0x20) return -1;
    *book_len = (size_t)(space - key);
    *chapter = num[0];
    *verse = num[1];
    return 0;
}

/* A short printable excerpt of a line for messages. */
static void excerpt(const char *line, size_t len, char out[48])
{
    size_t n = 0;
    for (size_t i = 0; i < len && n < 40; i++)
        out[n++] = (unsigned char)line[i] < 0x20 ? '?' : line[i];
    if (len > 40) {
        while (n > 0 && ((unsigned char)out[n - 1] & 0xC0) == 0x80) n--; /* no cut code point */
        if (n > 0 && (unsigned char)out[n - 1] >= 0xC0) n--;
        memcpy(out + n, "...", 3);
        n += 3;
    }
    out[n] = '\0';
}

/* Read one line without its newline; 1 = got one, 0 = end of stream, -1 = error. */
static int read_line(FILE *in, char **buf, size_t *cap, size_t *len, const char *module,
                     size_t lineno)
{
    ssize_t n = getline(buf, cap, in);
    if (n < 0) {
        if (ferror(in)) return mt_error("%s: line %zu: read error", module, lineno);
        return 0;
    }
    *len = (size_t)n;
    if (*len > 0 && (*buf)[*len - 1] == '\n') (*buf)[--*len] = '\0';
    if (*len > 0 && (*buf)[*len - 1] == '\r') (*buf)[--*len] = '\0';
    if (*len > MAX_LINE_BYTES)
        return mt_error("%s: line %zu: longer than %d MiB", module, lineno, MAX_LINE_BYTES >> 20);
    size_t bad = mt_utf8_invalid_offset(*buf, *len);
    if (bad < *len) return mt_error("%s: line %zu: byte %zu: invalid UTF-8", module, lineno, bad);
    if (memchr(*buf, '\0', *len)) return mt_error("%s: line %zu: NUL byte", module, lineno);
    return 1;
}

static void push_verse(mt_verse_list *list, const mt_verse *v)
{
    if (list->n == list->cap) {
        list->cap = list->cap ? 2 * list->cap : 1024;
        list->items = mt_xrealloc(list->items, list->cap * sizeof *list->items);
    }
    list->items[list->n++] = *v;
}

int mt_imp_read(FILE *in, const char *module, mt_verse_list *out)
{
    char *line = NULL, *key = NULL;
    size_t cap = 0, len = 0, lineno = 0;
    strmap seen = {0};
    int rc = -1, got;
    for (size_t i = 0; i < out->n; i++)
        strmap_put(&seen, out->items[i].key, strlen(out->items[i].key), i, NULL);
    while ((got = read_line(in, &line, &cap, &len, module, ++lineno)) == 1) {
        char shown[48];
        if (len == 0) continue; /* mod2imp ends its dump with an empty line */
        if (len < 3 || memcmp(line, "$$$", 3) != 0) {
            excerpt(line, len, shown);
            mt_error("%s: line %zu: expected a '$$$Book C:V' key line, got '%s'", module, lineno,
                     shown);
            goto done;
        }
        size_t key_line = lineno, key_len = len - 3;
        free(key);
        key = mt_xstrdup(line + 3);
        size_t book_len = 0;
        int chapter = 0, verse = 0;
        int heading =
            key_len >= 2 && key[0] == '[' && key[key_len - 1] == ']'; /* "[ Module Heading ]" */
        if (!heading && mt_parse_verse_key(key, key_len, &book_len, &chapter, &verse) < 0) {
            excerpt(line, len, shown);
            mt_error("%s: line %zu: malformed key '%s' (expected '$$$Book C:V')", module, lineno,
                     shown);
            goto done;
        }
        got = read_line(in, &line, &cap, &len, module, ++lineno);
        if (got < 0) goto done;
        if (got == 0 || (len >= 3 && memcmp(line, "$$$", 3) == 0)) {
            mt_error("%s: line %zu: key '%s' has no text line after it", module, key_line, key);
            goto done;
        }
        if (heading || chapter == 0 || verse == 0)
            continue; /* module, book and chapter introductions */
        int inserted;
        strmap_put(&seen, key, key_len, out->n, &inserted);
        if (!inserted) {
            mt_error("%s: line %zu: duplicate key '%s'", module, key_line, key);
            goto done;
        }
        char *text = mt_osis_to_text(line, len);
        if (!text) {
            mt_error_context("%s: line %zu (%s)", module, lineno, key);
            goto done;
        }
        mt_verse v = {.key = key,
                      .book = mt_xmalloc(book_len + 1),
                      .chapter = chapter,
                      .verse = verse,
                      .text = text};
        memcpy(v.book, key, book_len);
        v.book[book_len] = '\0';
        push_verse(out, &v);
        key = NULL;
    }
    if (got == 0) rc = 0;
done:
    free(line);
    free(key);
    strmap_free(&seen);
    return rc;
}

void mt_verse_list_free(mt_verse_list *list)
{
    for (size_t i = 0; i < list->n; i++) {
        free(list->items[i].key);
        free(list->items[i].book);
        free(list->items[i].text);
    }
    free(list->items);
    *list = (mt_verse_list){0};
}
