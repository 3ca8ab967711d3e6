/* The reference-side recognisers and the copyable-entity filter (mtlab/entities.h).
 *
 * English (checked against a reference tagger on the Bible, tests/fixtures/entities/):
 *   - a candidate is a capitalised word of two or more characters, not all capitals, that is
 *     not an ordinary word capitalised by position (the first word of a sentence or quotation
 *     from a list of common words) or by style (peoples and languages: "Levites", "Greek");
 *     see entities_english.c;
 *   - candidates separated by exactly one space form one multiword name ("Jesus Christ",
 *     "King David"), also through the particles of names ("Ursula von der Leyen",
 *     entity_word_name_particle), as a chunker joins them, except after a title that stands apart
 *     ("Lord Yahweh" is "Lord" and "Yahweh"); a hyphen or "of" does not join (measured:
 *     joining "X of Y" lowers agreement);
 *   - apostrophes end a word, so the possessive "David’s" yields "David".
 * Generic (other target languages): capitalised words that do not start a sentence, joined
 * the same way; a language-independent approximation with no word list. */
#include "eval/entities_words.h"
#include "mtlab/entities.h"
#include "mtlab/error.h"

#include "data/strmap.h"

#include <stdlib.h>
#include <string.h>

int mt_ner_lang_parse(const char *name, mt_ner_lang *out)
{
    if (!strcmp(name, "english") || !strcmp(name, "en")) {
        *out = MT_NER_ENGLISH;
        return 0;
    }
    if (!strcmp(name, "generic")) {
        *out = MT_NER_GENERIC;
        return 0;
    }
    return mt_error("unknown entity recogniser '%s' (known: english, generic)", name);
}

const char *mt_ner_lang_name(mt_ner_lang lang)
{
    return lang == MT_NER_ENGLISH ? "english" : "generic";
}

mt_ner_lang mt_ner_lang_for_code(const char *code)
{
    return code && (!strcmp(code, "en") || !strcmp(code, "eng") || !strcmp(code, "english"))
               ? MT_NER_ENGLISH
               : MT_NER_GENERIC;
}

/* 1 when word w can be (part of) a name under the recogniser's rules. */
static int is_candidate(const char *text, const entity_word *w, mt_ner_lang lang)
{
    if (!(w->flags & WORD_CAPITALISED) || (w->flags & WORD_ALL_UPPER) || w->n_chars < 2) return 0;
    if (lang == MT_NER_GENERIC) return !(w->flags & WORD_SENTENCE_START);
    char lower[64];
    if (!entity_word_ascii_lower(lower, sizeof lower, text, w)) return 1;
    return !english_common_word(lower, (w->flags & WORD_SENTENCE_START) != 0);
}

/* A title before a name stands apart from it ("Lord Yahweh" is "Lord" and "Yahweh"). */
static int is_title(const char *text, const entity_word *w)
{
    char lower[64];
    return entity_word_ascii_lower(lower, sizeof lower, text, w) && english_title_word(lower);
}

static void push_span(mt_text_span **spans, size_t *n, size_t *cap, mt_text_span s)
{
    if (*n == *cap) {
        *cap = *cap ? 2 * *cap : 8;
        *spans = mt_xrealloc(*spans, *cap * sizeof **spans);
    }
    (*spans)[(*n)++] = s;
}

int mt_entities_find(mt_text_span **spans, size_t *n, const char *text, mt_ner_lang lang)
{
    *spans = NULL;
    *n = 0;
    entity_words ws;
    if (entity_words_split(&ws, text) < 0) return -1;
    size_t cap = 0;
    for (size_t i = 0; i < ws.n; i++) {
        if (!is_candidate(text, &ws.w[i], lang)) continue;
        size_t j = i;
        while (!(lang == MT_NER_ENGLISH && is_title(text, &ws.w[j]))) {
            size_t k = j + 1; /* the next word, past the particles of a name ("von der") */
            while (k < ws.n && entity_words_adjacent(text, &ws.w[k - 1], &ws.w[k]) &&
                   entity_word_name_particle(text, &ws.w[k]))
                k++;
            if (k >= ws.n || !entity_words_adjacent(text, &ws.w[k - 1], &ws.w[k]) ||
                !is_candidate(text, &ws.w[k], lang))
                break;
            j = k;
        }
        push_span(spans, n, &cap, (mt_text_span){ws.w[i].start, ws.w[j].end});
        i = j;
    }
    entity_words_free(&ws);
    return 0;
}

int mt_text_contains(const char *text, const char *needle, size_t len)
{
    return len > 0 && memmem(text, strlen(text), needle, len) != NULL;
}

void mt_entity_set_free(mt_entity_set *s)
{
    for (size_t i = 0; i < s->n; i++) free(s->names[i]);
    free(s->names);
    s->names = NULL;
    s->n = 0;
}

int mt_entities_copyable(mt_entity_set *out, const char *src, const char *ref, mt_ner_lang lang)
{
    memset(out, 0, sizeof *out);
    mt_text_span *spans;
    size_t n;
    if (mt_entities_find(&spans, &n, ref, lang) < 0) return mt_error_context("reference");
    entity_words check;
    if (entity_words_split(&check, src) < 0) {
        free(spans);
        return mt_error_context("source");
    }
    entity_words_free(&check);
    strmap seen = {0};
    for (size_t i = 0; i < n; i++) {
        const char *name = ref + spans[i].start;
        size_t len = spans[i].end - spans[i].start;
        if (!mt_text_contains(src, name, len)) continue;
        int inserted;
        strmap_put(&seen, name, len, 0, &inserted);
        if (!inserted) continue;
        out->names = mt_xrealloc(out->names, (out->n + 1) * sizeof *out->names);
        char *copy = mt_xmalloc(len + 1);
        memcpy(copy, name, len);
        copy[len] = '\0';
        out->names[out->n++] = copy;
    }
    strmap_free(&seen);
    free(spans);
    return 0;
}
