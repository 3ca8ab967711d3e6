#include "eval/entities_words.h"

#include "eval/codepoints.h"
#include "mtlab/error.h"

#include <locale.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <wctype.h>

static locale_t utf8_locale;
static pthread_once_t utf8_locale_once = PTHREAD_ONCE_INIT;

static void open_utf8_locale(void)
{
    /* newlocale, not setlocale: the program's own locale stays untouched. */
    utf8_locale = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
}

static size_t utf8_length(uint32_t c) { return c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4; }

/* Combining marks (U+0300..U+036F and the other general-purpose blocks) keep a decomposed
 * "é" inside its word. */
static int is_combining(uint32_t c)
{
    return (c >= 0x0300 && c <= 0x036F) || (c >= 0x1AB0 && c <= 0x1AFF) ||
           (c >= 0x1DC0 && c <= 0x1DFF) || (c >= 0x20D0 && c <= 0x20FF) ||
           (c >= 0xFE20 && c <= 0xFE2F);
}

static int is_word_char(uint32_t c)
{
    return iswalnum_l((wint_t)c, utf8_locale) || is_combining(c);
}

static int is_letter(uint32_t c) { return iswalpha_l((wint_t)c, utf8_locale); }

/* Title-case letters (Dž) have no upper-case class in glibc but do start a capitalised word. */
static int is_upper(uint32_t c)
{
    return iswupper_l((wint_t)c, utf8_locale) ||
           (is_letter(c) && towlower_l((wint_t)c, utf8_locale) != (wint_t)c &&
            towupper_l((wint_t)c, utf8_locale) != (wint_t)c);
}

/* Marks after which the next word starts a sentence or a quotation. */
static int ends_sentence(uint32_t c)
{
    return c == '.' || c == '!' || c == '?' || c == ':' || c == ';';
}

static int opens_quote(uint32_t c)
{
    return c == 0x201C || c == 0x2018 || c == 0x00AB || c == 0x00BF || c == 0x00A1 || c == '(' ||
           c == '[' || c == '"' || c == '\'';
}

static void push_word(entity_words *ws, entity_word w)
{
    if (ws->n == ws->cap) {
        ws->cap = ws->cap ? 2 * ws->cap : 32;
        ws->w = mt_xrealloc(ws->w, ws->cap * sizeof *ws->w);
    }
    ws->w[ws->n++] = w;
}

/* Flags of the word cp[a..b), given whether the gap before it started a sentence. */
static unsigned word_flags(const uint32_t *cp, size_t a, size_t b, int sentence_start)
{
    unsigned flags = sentence_start ? WORD_SENTENCE_START : 0;
    if (is_upper(cp[a])) flags |= WORD_CAPITALISED;
    size_t letters = 0, upper = 0, digits = 0;
    for (size_t i = a; i < b; i++) {
        if (is_letter(cp[i])) {
            letters++;
            upper += (size_t)is_upper(cp[i]);
        } else if (iswdigit_l((wint_t)cp[i], utf8_locale)) {
            digits++;
        }
    }
    if (letters >= 2 && upper == letters) flags |= WORD_ALL_UPPER;
    if (digits == b - a) flags |= WORD_NUMBER;
    return flags;
}

int entity_words_split(entity_words *out, const char *text)
{
    memset(out, 0, sizeof *out);
    pthread_once(&utf8_locale_once, open_utf8_locale);
    if (utf8_locale == (locale_t)0)
        return mt_error("entity recognition needs the C.UTF-8 locale, which this system lacks");
    mt_cpbuf cps = {0};
    if (mt_utf8_decode(&cps, text, strlen(text)) < 0) {
        mt_cpbuf_free(&cps);
        return -1;
    }
    int sentence_start = 1; /* the gap before the next word started a sentence */
    uint32_t last_gap_char = 0;
    size_t byte = 0, i = 0;
    while (i < cps.n) {
        if (!is_word_char(cps.cp[i])) {
            if (ends_sentence(cps.cp[i])) sentence_start = 1;
            last_gap_char = cps.cp[i];
            byte += utf8_length(cps.cp[i++]);
            continue;
        }
        size_t a = i, start = byte;
        while (i < cps.n && is_word_char(cps.cp[i])) byte += utf8_length(cps.cp[i++]);
        int starts = sentence_start || opens_quote(last_gap_char);
        push_word(out, (entity_word){start, byte, i - a, word_flags(cps.cp, a, i, starts)});
        sentence_start = 0;
        last_gap_char = 0;
    }
    mt_cpbuf_free(&cps);
    return 0;
}

void entity_words_free(entity_words *ws)
{
    free(ws->w);
    memset(ws, 0, sizeof *ws);
}

int entity_word_ascii_lower(char *buf, size_t cap, const char *text, const entity_word *w)
{
    size_t len = w->end - w->start;
    if (len + 1 > cap) return 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)text[w->start + i];
        if (c >= 0x80) return 0;
        buf[i] = (char)(c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c);
    }
    buf[len] = '\0';
    return 1;
}

int entity_word_name_shaped(const entity_word *w)
{
    return (w->flags & WORD_CAPITALISED) && !(w->flags & WORD_ALL_UPPER) &&
           !(w->flags & WORD_NUMBER) && w->n_chars >= 2;
}

int entity_word_name_particle(const char *text, const entity_word *w)
{
    static const char *const particles[] = {"von", "van", "der", "den", "ter",
                                            "vom", "zu",  "bin", "ibn"};
    size_t len = w->end - w->start;
    for (size_t i = 0; i < sizeof particles / sizeof particles[0]; i++)
        if (strlen(particles[i]) == len && !memcmp(text + w->start, particles[i], len)) return 1;
    return 0;
}

int entity_words_adjacent(const char *text, const entity_word *a, const entity_word *b)
{
    return b->start == a->end + 1 && text[a->end] == ' ';
}

size_t entity_words_name_next(const char *text, const entity_words *ws, size_t i)
{
    size_t k = i + 1;
    while (k < ws->n && entity_words_adjacent(text, &ws->w[k - 1], &ws->w[k]) &&
           entity_word_name_particle(text, &ws->w[k]))
        k++;
    if (k < ws->n && entity_words_adjacent(text, &ws->w[k - 1], &ws->w[k]) &&
        entity_word_name_shaped(&ws->w[k]) && !(ws->w[k].flags & WORD_SENTENCE_START))
        return k;
    return 0;
}

size_t entity_words_name_last(const char *text, const entity_words *ws, size_t i)
{
    size_t last = i;
    for (size_t k; (k = entity_words_name_next(text, ws, last));) last = k;
    return last;
}
