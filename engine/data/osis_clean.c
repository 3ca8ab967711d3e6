/* OSIS verse markup -> plain text (the rules are listed above mt_osis_to_text in bible.h).
 * One pass over the line: tags are parsed and dropped, text runs are unescaped and appended
 * with whitespace collapsed, and the spot where markup stood is remembered so that a space can
 * be put back when removing it would glue two words together. */
#include "mtlab/bible.h"
#include "mtlab/error.h"
#include "mtlab/utf8.h"

#include "data/letters.h"
#include "core/textbuf.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    size_t start, end; /* osis[start] == '<', osis[end - 1] == '>' */
    const char *name; /* element name, name_len bytes */
    size_t name_len;
    int closing; /* </name> */
    int self_closing; /* <name .../> */
} osis_tag;

static int name_is(const osis_tag *t, const char *name)
{
    return t->name_len == strlen(name) && memcmp(t->name, name, t->name_len) == 0;
}

static int is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

/* Parse the tag at osis[at] == '<' and check its attributes are name="value" pairs. */
static int tag_parse(const char *osis, size_t len, size_t at, osis_tag *t)
{
    const char *gt = memchr(osis + at, '>', len - at);
    if (!gt) return mt_error("byte %zu: unterminated tag", at);
    *t = (osis_tag){.start = at, .end = (size_t)(gt - osis) + 1};
    size_t i = at + 1, end = t->end - 1;
    if (i < end && osis[i] == '/') {
        t->closing = 1;
        i++;
    }
    t->name = osis + i;
    while (i < end && ((osis[i] >= 'A' && osis[i] <= 'Z') || (osis[i] >= 'a' && osis[i] <= 'z')))
        i++;
    t->name_len = (size_t)(osis + i - t->name);
    if (t->name_len == 0) return mt_error("byte %zu: tag without an element name", at);
    for (;;) {
        while (i < end && is_space(osis[i])) i++;
        if (i == end) break;
        if (osis[i] == '/' && i + 1 == end && !t->closing) {
            t->self_closing = 1;
            break;
        }
        size_t attr = i;
        while (i < end && osis[i] != '=' && !is_space(osis[i]) && osis[i] != '/') i++;
        if (i == attr || i + 1 >= end || osis[i] != '=' ||
            (osis[i + 1] != '"' && osis[i + 1] != '\''))
            return mt_error("byte %zu: malformed attribute in tag <%.*s>", attr, (int)t->name_len,
                            t->name);
        char quote = osis[i + 1];
        const char *close = memchr(osis + i + 2, quote, end - (i + 2));
        if (!close) return mt_error("byte %zu: unterminated attribute value", attr);
        i = (size_t)(close - osis) + 1;
    }
    return 0;
}

/* Whether the tag carries attribute name="value" (value NULL: any value). */
static int has_attr(const char *osis, const osis_tag *t, const char *name, const char *value)
{
    size_t nlen = strlen(name);
    size_t i = t->start + 1 + (size_t)t->closing + t->name_len, end = t->end - 1;
    while (i < end) {
        while (i < end && is_space(osis[i])) i++;
        size_t attr = i;
        while (i < end && osis[i] != '=') i++;
        if (i + 1 >= end) return 0;
        char quote = osis[i + 1];
        const char *v = osis + i + 2, *close = memchr(v, quote, end - (i + 2));
        if (!close) return 0;
        if (i - attr == nlen && memcmp(osis + attr, name, nlen) == 0)
            return !value ||
                   ((size_t)(close - v) == strlen(value) && memcmp(v, value, strlen(value)) == 0);
        i = (size_t)(close - osis) + 1;
    }
    return 0;
}

/* Append osis[from..to) with entities unescaped; at = offset of osis[from] for messages. */
static int unescape_run(const char *s, size_t from, size_t to, textbuf *out)
{
    static const struct {
        const char *name, *text;
    } named[] = {
        {"amp", "&"}, {"lt", "<"}, {"gt", ">"}, {"quot", "\""}, {"apos", "'"},
    };
    size_t i = from;
    while (i < to) {
        if (s[i] != '&') {
            size_t j = i;
            while (j < to && s[j] != '&') j++;
            textbuf_append(out, s + i, j - i);
            i = j;
            continue;
        }
        const char *semi = memchr(s + i, ';', to - i < 12 ? to - i : 12);
        if (!semi) return mt_error("byte %zu: '&' not followed by an entity name and ';'", i);
        const char *name = s + i + 1;
        size_t nlen = (size_t)(semi - name);
        int found = 0;
        for (size_t k = 0; k < sizeof named / sizeof named[0]; k++) {
            if (nlen == strlen(named[k].name) && memcmp(name, named[k].name, nlen) == 0) {
                textbuf_append(out, named[k].text, 1);
                found = 1;
            }
        }
        if (!found && nlen >= 2 && name[0] == '#') {
            int hex = name[1] == 'x' || name[1] == 'X';
            unsigned long cp = 0;
            size_t ndigits = 0;
            for (size_t k = 1 + (size_t)hex; k < nlen; k++, ndigits++) {
                char c = name[k];
                int d = c >= '0' && c <= '9'          ? c - '0'
                        : hex && c >= 'a' && c <= 'f' ? c - 'a' + 10
                        : hex && c >= 'A' && c <= 'F' ? c - 'A' + 10
                                                      : -1;
                if (d < 0) break;
                cp = cp * (hex ? 16 : 10) + (unsigned long)d;
            }
            if (ndigits > 0 && ndigits == nlen - 1 - (size_t)hex && cp > 0 && cp <= 0x10FFFF &&
                !(cp >= 0xD800 && cp <= 0xDFFF)) {
                char enc[4];
                textbuf_append(out, enc, (size_t)mt_utf8_put((uint32_t)cp, enc));
                found = 1;
            }
        }
        if (!found) return mt_error("byte %zu: unknown entity '&%.*s;'", i, (int)nlen, name);
        i = (size_t)(semi - s) + 1;
    }
    return 0;
}

/* ---------------------------------------------------------------- where a space goes back */

static uint32_t last_cp(const textbuf *b)
{
    uint32_t cp = 0;
    size_t at = mt_utf8_prev(b->p, b->n);
    mt_utf8_next(b->p + at, b->n - at, &cp);
    return cp;
}

/* Characters that end a word-like unit on the left ("God", "said,", "believed.”") and that
 * start one on the right ("created", "“Let", "(which", "¿Quién"): between the two, removed
 * markup was a word break. */
static int ends_unit(uint32_t cp)
{
    return cp_is_word(cp) || (cp > 0 && cp < 0x80 && strchr(".,;:!?)]", (int)cp)) || cp == 0x201D ||
           cp == 0x2019;
}
static int starts_unit(uint32_t cp)
{
    return cp_is_word(cp) || cp == '(' || cp == '[' || cp == 0x201C || cp == 0x2018 || cp == 0xBF ||
           cp == 0xA1;
}

/* s[0..len) is one or more Spanish clitic pronouns: "lo", "les", "selo", "noslo". */
static int is_clitic(const char *s, size_t len)
{
    static const char *const clitics[] = {"les", "los", "las", "nos", "me", "te",
                                          "se",  "le",  "lo",  "la",  "os"};
    if (len == 0) return 1;
    for (size_t k = 0; k < sizeof clitics / sizeof clitics[0]; k++) {
        size_t n = strlen(clitics[k]);
        if (n <= len && memcmp(s, clitics[k], n) == 0 && is_clitic(s + n, len - n)) return 1;
    }
    return 0;
}

static int in_list(const char *w, const char *const *list, size_t n)
{
    for (size_t k = 0; k < n; k++)
        if (strcmp(w, list[k]) == 0) return 1;
    return 0;
}

/* Whether the word ending the text so far can take an enclitic pronoun, i.e. RV1909 wrote
 * verb + added pronoun as one word ("sáca|lo", "díjo|le", "Dad|me", "oyéndo|lo", "di|les")
 * rather than pronoun before the next word ("Josué|los circuncidó", "no|lo hizo"). Verb-like:
 * an infinitive (-r), a plural imperative (-d), a gerund (-ndo), a form carrying a written
 * accent, or one of the short imperatives and preterites; a capitalised word mid-sentence is a
 * name, and accented interrogatives are not verbs. */
static int enclitic_host(const textbuf *out)
{
    static const char *const short_verbs[] = {"da", "di",  "haz", "he",  "ve",
                                              "vi", "pon", "ten", "sal", "ven"};
    static const char *const interrogatives[] = {"qué",  "cuánto", "cuánta", "cuántos", "cuántas",
                                                 "cómo", "dónde",  "cuándo", "quién",   "cuál"};
    size_t start = out->n;
    uint32_t cp, first = 0;
    while (start > 0) {
        size_t prev = mt_utf8_prev(out->p, start);
        mt_utf8_next(out->p + prev, start - prev, &cp);
        if (!cp_is_word(cp)) break;
        first = cp;
        start = prev;
    }
    size_t before = start;
    while (before > 0 && out->p[before - 1] == ' ') before--;
    int sentence_start = before == 0 || strchr(".:;?!", out->p[before - 1]) ||
                         (before >= 2 && ((unsigned char)out->p[before - 2] == 0xC2 &&
                                          ((unsigned char)out->p[before - 1] == 0xBF ||
                                           (unsigned char)out->p[before - 1] == 0xA1)));
    if (cp_is_upper(first) && !sentence_start) return 0;

    char lower[64];
    size_t n = 0, i = start;
    int accented = 0;
    while (i < out->n) {
        size_t len = (size_t)mt_utf8_next(out->p + i, out->n - i, &cp);
        if (n + 4 >= sizeof lower) return 0;
        cp = cp_to_lower(cp);
        accented |=
            cp == 0xE1 || cp == 0xE9 || cp == 0xED || cp == 0xF3 || cp == 0xFA; /* á é í ó ú */
        n += (size_t)mt_utf8_put(cp, lower + n);
        i += len;
    }
    lower[n] = '\0';
    if (in_list(lower, interrogatives, sizeof interrogatives / sizeof interrogatives[0])) return 0;
    if (in_list(lower, short_verbs, sizeof short_verbs / sizeof short_verbs[0])) return 1;
    int verb_ending = (n >= 1 && (lower[n - 1] == 'r' || lower[n - 1] == 'd')) ||
                      (n >= 3 && memcmp(lower + n - 3, "ndo", 3) == 0);
    return verb_ending || accented;
}

/* Removed markup stood between out and run: does a space go back? added_run: run is the whole
 * content of a <transChange> that directly follows the previous word. */
static int space_goes_back(const textbuf *out, const textbuf *run, int added_run)
{
    if (out->n == 0 || run->n == 0 || out->p[out->n - 1] == ' ' || (unsigned char)run->p[0] <= ' ')
        return 0;
    uint32_t a = last_cp(out), b = 0;
    mt_utf8_next(run->p, run->n, &b);
    if (!ends_unit(a) || !starts_unit(b)) return 0;
    if (cp_is_word(a) && added_run && is_clitic(run->p, run->n) && enclitic_host(out)) return 0;
    return 1;
}

/* Append run with whitespace (and any other control character, e.g. from "&#10;") collapsed
 * to single spaces and no leading space. */
static void append_collapsed(textbuf *out, const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if ((unsigned char)s[i] <= ' ' || s[i] == 0x7F) {
            if (out->n > 0 && out->p[out->n - 1] != ' ') textbuf_putc(out, ' ');
        } else {
            textbuf_putc(out, s[i]);
        }
    }
}

/* ---------------------------------------------------------------- the pass */

char *mt_osis_to_text(const char *osis, size_t len)
{
    size_t bad = mt_utf8_invalid_offset(osis, len);
    if (bad < len) {
        mt_error("byte %zu: invalid UTF-8", bad);
        return NULL;
    }
    const char *nul = memchr(osis, '\0', len);
    if (nul) {
        mt_error("byte %zu: NUL byte", (size_t)(nul - osis));
        return NULL;
    }
    textbuf out = {0}, run = {0};
    osis_tag skip = {0}; /* the <note> or <title> being deleted, while depth > 0 */
    size_t depth = 0;
    int markup_before = 0; /* tags (or deleted elements) since the last text run */
    int opened_added = 0; /* the last tag opened a <transChange> */
    size_t i = 0;
    while (i < len) {
        if (osis[i] == '<') {
            osis_tag t;
            if (tag_parse(osis, len, i, &t) < 0) goto fail;
            i = t.end;
            if (depth > 0) {
                if (t.name_len == skip.name_len && memcmp(t.name, skip.name, t.name_len) == 0 &&
                    !t.self_closing) {
                    if (t.closing) depth--;
                    else depth++;
                }
                continue;
            }
            if (name_is(&t, "div") && has_attr(osis, &t, "eID", NULL) &&
                has_attr(osis, &t, "type", "book"))
                break;
            markup_before = 1;
            opened_added = !t.closing && !t.self_closing && name_is(&t, "transChange");
            int opens = !t.closing && !t.self_closing;
            if (opens && (name_is(&t, "note") ||
                          (name_is(&t, "title") && !has_attr(osis, &t, "canonical", "true")))) {
                skip = t;
                depth = 1;
            }
            continue;
        }
        size_t j = i;
        while (j < len && osis[j] != '<') j++;
        if (depth == 0) {
            run.n = 0;
            if (unescape_run(osis, i, j, &run) < 0) goto fail;
            if (run.n > 0) {
                int added_run =
                    opened_added && len - j >= 14 && memcmp(osis + j, "</transChange>", 14) == 0;
                if (markup_before && space_goes_back(&out, &run, added_run))
                    textbuf_putc(&out, ' ');
                append_collapsed(&out, run.p, run.n);
                markup_before = 0;
            }
        }
        i = j;
    }
    if (depth > 0) {
        mt_error("byte %zu: <%.*s> never closed", skip.start, (int)skip.name_len, skip.name);
        goto fail;
    }
    while (out.n > 0 && out.p[out.n - 1] == ' ') out.p[--out.n] = '\0';
    free(run.p);
    return textbuf_take(&out);
fail:
    free(out.p);
    free(run.p);
    return NULL;
}
