/* RV1909's chapter-initial capitals ("EN el principio") back to normal case.
 *
 * Which word: the first word of two or more capital letters in the chapter's first verse
 * (after a psalm heading it sits mid-verse: "Salmo de David. JEHOVÁ es mi pastor"), skipping an
 * acrostic label ("ALEPH. BIENAVENTURADOS"), extended over the capitals run it belongs to
 * ("DE SIETE años", "Y Á SUS discípulos" -> "Y á sus discípulos"; a one-letter first word such
 * as "Y" or "A" stays as it is). The same print style opens a section inside a chapter once
 * (Luke 1:5), handled by find_section_opening.
 * Which case: lower case, except the first letter at a sentence start ("En el principio") and
 * in words that the module writes capitalised more often than not mid-sentence ("Jehová",
 * "Abraham"), counted over the whole module. Counting ignores RV1909's circumflex (â ê î ô û),
 * which the capitals sometimes drop ("ACHAB" for Achâb). */
#include "mtlab/bible.h"
#include "mtlab/utf8.h"

#include "data/letters.h"
#include "data/strmap.h"
#include "core/textbuf.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    size_t start, end; /* text[start..end) */
    size_t letters; /* code points */
    int all_caps; /* some upper-case letter, no lower-case letter, no digit */
    int title_case; /* upper-case first letter, then lower-case letters (at least one) */
    int all_lower; /* some lower-case letter, no upper-case letter */
    int sentence_start;
} word_span;

typedef struct {
    word_span *w;
    size_t n, cap;
} word_list;

static int is_sentence_end(const char *text, size_t at)
{
    /* the last non-space character before text[at] */
    while (at > 0 && text[at - 1] == ' ') at--;
    if (at == 0) return 1;
    if (strchr(".:;!?", text[at - 1])) return 1;
    return at >= 2 && (unsigned char)text[at - 2] == 0xC2 &&
           ((unsigned char)text[at - 1] == 0xBF || (unsigned char)text[at - 1] == 0xA1); /* ¿ ¡ */
}

static void split_words(const char *text, word_list *out)
{
    size_t len = strlen(text), i = 0;
    out->n = 0;
    while (i < len) {
        uint32_t cp;
        size_t n = (size_t)mt_utf8_next(text + i, len - i, &cp);
        if (n == 0 || !cp_is_word(cp)) { /* n == 0 cannot happen on cleaned text; skip a byte */
            i += n ? n : 1;
            continue;
        }
        word_span w = {.start = i, .sentence_start = is_sentence_end(text, i)};
        size_t upper = 0, lower = 0, digits = 0, rest_upper = 0, rest_lower = 0;
        int first_upper = cp_is_upper(cp);
        while (i < len && (n = (size_t)mt_utf8_next(text + i, len - i, &cp)) > 0 &&
               cp_is_word(cp)) {
            upper += cp_is_upper(cp);
            lower += cp_is_lower(cp);
            digits += cp >= '0' && cp <= '9';
            if (w.letters > 0) {
                rest_upper += cp_is_upper(cp);
                rest_lower += cp_is_lower(cp);
            }
            w.letters++;
            i += n;
        }
        w.end = i;
        w.all_caps = upper > 0 && lower == 0 && digits == 0;
        w.title_case = first_upper && rest_lower > 0 && rest_upper == 0;
        w.all_lower = lower > 0 && upper == 0;
        if (out->n == out->cap) {
            out->cap = out->cap ? 2 * out->cap : 64;
            out->w = mt_xrealloc(out->w, out->cap * sizeof *out->w);
        }
        out->w[out->n++] = w;
    }
}

/* Lower-case form without circumflexes, the key of the casing counts. */
static void case_key(const char *text, const word_span *w, textbuf *key)
{
    key->n = 0;
    for (size_t i = w->start; i < w->end;) {
        uint32_t cp;
        size_t n = (size_t)mt_utf8_next(text + i, w->end - i, &cp);
        cp = cp_to_lower(cp);
        if (cp == 0xE2) cp = 'a'; /* â */
        else if (cp == 0xEA) cp = 'e'; /* ê */
        else if (cp == 0xEE) cp = 'i'; /* î */
        else if (cp == 0xF4) cp = 'o'; /* ô */
        else if (cp == 0xFB) cp = 'u'; /* û */
        char enc[4];
        textbuf_append(key, enc, (size_t)mt_utf8_put(cp, enc));
        i += n;
    }
    if (!key->p) textbuf_reserve(key, 0);
}

typedef struct {
    strmap index; /* case key -> row */
    size_t (*rows)[2]; /* (n) mid-sentence counts: [0] capitalised, [1] lower case */
    size_t n, cap;
} casing_counts;

static void count_casing(const mt_verse_list *list, casing_counts *cc)
{
    word_list words = {0};
    textbuf key = {0};
    for (size_t v = 0; v < list->n; v++) {
        const char *text = list->items[v].text;
        split_words(text, &words);
        for (size_t k = 0; k < words.n; k++) {
            const word_span *w = &words.w[k];
            if (w->sentence_start || !(w->title_case || w->all_lower)) continue;
            case_key(text, w, &key);
            int inserted;
            size_t *row = strmap_put(&cc->index, key.p, key.n, cc->n, &inserted);
            if (inserted) {
                if (cc->n == cc->cap) {
                    cc->cap = cc->cap ? 2 * cc->cap : 1024;
                    cc->rows = mt_xrealloc(cc->rows, cc->cap * sizeof *cc->rows);
                }
                cc->rows[cc->n][0] = cc->rows[cc->n][1] = 0;
                cc->n++;
            }
            cc->rows[*row][w->title_case ? 0 : 1]++;
        }
    }
    free(words.w);
    free(key.p);
}

static int written_capitalised(const casing_counts *cc, const char *text, const word_span *w,
                               textbuf *key)
{
    case_key(text, w, key);
    const size_t *row = strmap_get(&cc->index, key->p, key->n);
    return row && cc->rows[*row][0] > cc->rows[*row][1];
}

/* Whether the module writes the word in lower case (or capitalised) anywhere mid-sentence. */
static int written_in_lower_case(const casing_counts *cc, const char *text, const word_span *w,
                                 textbuf *key)
{
    case_key(text, w, key);
    const size_t *row = strmap_get(&cc->index, key->p, key->n);
    return row && cc->rows[*row][0] + cc->rows[*row][1] > 0;
}

static int only_space_between(const char *text, const word_span *a, const word_span *b)
{
    return b->start == a->end + 1 && text[a->end] == ' ';
}

/* The capitals run to restore in this verse, as word indices [*first, *last]; 0 if none. */
static int find_capitals_run(const char *text, const word_list *words, size_t *first, size_t *last)
{
    size_t i = 0;
    while (i < words->n && !(words->w[i].all_caps && words->w[i].letters >= 2)) i++;
    if (i == words->n) return 0;
    const word_span *w = words->w;
    if (i + 1 < words->n && w[i + 1].start == w[i].end + 2 &&
        memcmp(text + w[i].end, ". ", 2) == 0 && w[i + 1].all_caps && w[i + 1].letters >= 2)
        i++; /* acrostic label: "ALEPH. BIENAVENTURADOS" */
    size_t s = i, e = i;
    while (s > 0 && w[s - 1].all_caps && w[s - 1].start > 0 &&
           only_space_between(text, &w[s - 1], &w[s]))
        s--;
    while (e + 1 < words->n && w[e + 1].all_caps && only_space_between(text, &w[e], &w[e + 1])) e++;
    *first = s;
    *last = e;
    return 1;
}

/* Inside a chapter, a section opening (Luke 1:5 "HUBO en los días", after the prologue) is a
 * verse-initial capitals word followed directly by lower-case text, and one the module also
 * writes in lower case; labels ("HE. Enséñame", "BETH ¿Con"), inscriptions ("TEKEL:") and the
 * divine name ("JAH, si") do not have that shape. */
static int find_section_opening(const char *text, const word_list *words, const casing_counts *cc,
                                textbuf *key)
{
    const word_span *w = words->w;
    return words->n >= 2 && w[0].start == 0 && w[0].all_caps && w[0].letters >= 2 &&
           w[1].all_lower && only_space_between(text, &w[0], &w[1]) &&
           written_in_lower_case(cc, text, &w[0], key);
}

/* The verse with the capitals run words[first..last] restored (malloc'd). */
static char *restore_run(const char *text, const word_list *words, size_t first, size_t last,
                         const casing_counts *cc, textbuf *key)
{
    textbuf out = {0};
    textbuf_append(&out, text, words->w[first].start);
    for (size_t k = first; k <= last; k++) {
        const word_span *w = &words->w[k];
        if (k > first)
            textbuf_append(&out, text + words->w[k - 1].end, w->start - words->w[k - 1].end);
        int keep_initial =
            (k == first && w->sentence_start) || written_capitalised(cc, text, w, key);
        for (size_t i = w->start; i < w->end;) {
            uint32_t cp;
            size_t n = (size_t)mt_utf8_next(text + i, w->end - i, &cp);
            if (!(i == w->start && keep_initial)) cp = cp_to_lower(cp);
            char enc[4];
            textbuf_append(&out, enc, (size_t)mt_utf8_put(cp, enc));
            i += n;
        }
    }
    size_t len = strlen(text), tail = words->w[last].end;
    if (tail < len) textbuf_append(&out, text + tail, len - tail);
    return textbuf_take(&out);
}

size_t mt_restore_chapter_caps(mt_verse_list *list)
{
    casing_counts cc = {0};
    count_casing(list, &cc);
    word_list words = {0};
    textbuf key = {0};
    size_t changed = 0;
    for (size_t v = 0; v < list->n; v++) {
        mt_verse *verse = &list->items[v];
        const mt_verse *prev = v > 0 ? &list->items[v - 1] : NULL;
        int chapter_start =
            !prev || prev->chapter != verse->chapter || strcmp(prev->book, verse->book) != 0;
        split_words(verse->text, &words);
        size_t first = 0, last = 0;
        if (chapter_start ? !find_capitals_run(verse->text, &words, &first, &last)
                          : !find_section_opening(verse->text, &words, &cc, &key))
            continue;
        char *fixed = restore_run(verse->text, &words, first, last, &cc, &key);
        if (strcmp(fixed, verse->text) != 0) {
            free(verse->text);
            verse->text = fixed;
            verse->caps_restored = 1;
            changed++;
        } else {
            free(fixed);
        }
    }
    free(words.w);
    free(key.p);
    free(cc.rows);
    strmap_free(&cc.index);
    return changed;
}
