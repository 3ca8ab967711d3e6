/* The source-side detector and the fate of a name in a translation (mtlab/entities.h,
 * docs/metrics.md §5.4): what in a typed source sentence a translation should carry over, so
 * the workbench can mark each name copied, translated or dropped. With no reference, a word is
 * a name when its corpus says so (the lexicon's names, wherever they stand) or, for words the
 * corpus does not know, when it is capitalised away from the start of a sentence; a word the
 * corpus writes as an ordinary word ("Que" opening a verse inside a pasted paragraph) is none.
 * Numbers are left out: a translation may rightly write them another way ("2015" is not a
 * name).
 *
 * Names of several words are one name: capitalised words one space apart, joined through the
 * particles of names ("Pedro Sánchez", "Ursula von der Leyen"). Two or more capitalised words
 * in a row make a name even when each alone is an ordinary word of the corpus ("El País",
 * "Nueva York", "António Costa": the Bible writes país, nueva and costa); a leading word is
 * left out when it opens the sentence and the corpus does not know it as a name, or is an
 * ordinary word before a name the corpus knows ("Entonces Jesús" opening a verse inside a
 * paragraph is Jesús). */
#include "eval/entities_words.h"
#include "mtlab/entities.h"
#include "mtlab/error.h"

#include <stdlib.h>
#include <string.h>

static int is_name_word(const char *src, const entity_word *w, const mt_entity_lexicon *lex)
{
    if (!entity_word_name_shaped(w)) return 0;
    if (lex && mt_entity_lexicon_is_name(lex, src + w->start, w->end - w->start)) return 1;
    if (lex && mt_entity_lexicon_is_word(lex, src + w->start, w->end - w->start)) return 0;
    return !(w->flags & WORD_SENTENCE_START);
}

static void push(mt_text_span **spans, size_t *n, size_t *cap, mt_text_span span)
{
    if (*n == *cap) {
        *cap = *cap ? 2 * *cap : 8;
        *spans = mt_xrealloc(*spans, *cap * sizeof **spans);
    }
    (*spans)[(*n)++] = span;
}

int entity_source_name_words(mt_text_span **spans, size_t *n, const char *src,
                             const mt_entity_lexicon *lex)
{
    *spans = NULL;
    *n = 0;
    entity_words ws;
    if (entity_words_split(&ws, src) < 0) return -1;
    size_t cap = 0;
    for (size_t i = 0; i < ws.n; i++)
        if (is_name_word(src, &ws.w[i], lex))
            push(spans, n, &cap, (mt_text_span){ws.w[i].start, ws.w[i].end});
    entity_words_free(&ws);
    return 0;
}

static int known_name(const char *src, const entity_word *w, const mt_entity_lexicon *lex)
{
    return lex && mt_entity_lexicon_is_name(lex, src + w->start, w->end - w->start);
}

/* Whether the leading word w[a] of the name a..last stays out of it. */
static int drop_leading(const char *src, const entity_words *ws, size_t a, size_t last,
                        const mt_entity_lexicon *lex)
{
    const entity_word *w = &ws->w[a];
    if ((w->flags & WORD_SENTENCE_START) && !known_name(src, w, lex)) return 1;
    if (!lex || !mt_entity_lexicon_is_word(lex, src + w->start, w->end - w->start)) return 0;
    for (size_t k = entity_words_name_next(src, ws, a); k && k <= last;
         k = entity_words_name_next(src, ws, k))
        if (known_name(src, &ws->w[k], lex)) return 1;
    return 0;
}

int mt_source_entities(mt_text_span **spans, size_t *n, const char *src,
                       const mt_entity_lexicon *lex)
{
    *spans = NULL;
    *n = 0;
    entity_words ws;
    if (entity_words_split(&ws, src) < 0) return -1;
    size_t cap = 0;
    for (size_t i = 0; i < ws.n; i++) {
        if (!entity_word_name_shaped(&ws.w[i])) continue;
        size_t last = entity_words_name_last(src, &ws, i);
        size_t a = i;
        while (a != last && drop_leading(src, &ws, a, last, lex))
            a = entity_words_name_next(src, &ws, a);
        if (a != last) push(spans, n, &cap, (mt_text_span){ws.w[a].start, ws.w[last].end});
        else if (is_name_word(src, &ws.w[a], lex))
            push(spans, n, &cap, (mt_text_span){ws.w[a].start, ws.w[a].end});
        i = last;
    }
    entity_words_free(&ws);
    return 0;
}

/* A name of several words carried over word by word: each capitalised word copied or one of
 * its lexicon forms present, at least one translated. *form: that first form. */
static mt_entity_fate fate_by_words(const char *hyp, const char *name, size_t len,
                                    const mt_entity_lexicon *lex, const char **form)
{
    char *copy = mt_xmalloc(len + 1);
    memcpy(copy, name, len);
    copy[len] = '\0';
    entity_words ws;
    mt_entity_fate fate = MT_ENTITY_DROPPED;
    if (entity_words_split(&ws, copy) == 0) {
        const char *first = NULL;
        size_t k = 0;
        for (; k < ws.n; k++) {
            const entity_word *w = &ws.w[k];
            if (!entity_word_name_shaped(w) ||
                mt_text_contains(hyp, copy + w->start, w->end - w->start))
                continue;
            const char *const *forms;
            size_t nf = mt_entity_lexicon_forms(lex, copy + w->start, w->end - w->start, &forms,
                                                NULL, NULL),
                   f = 0;
            while (f < nf && !mt_text_contains(hyp, forms[f], strlen(forms[f]))) f++;
            if (f == nf) break;
            if (!first) first = forms[f];
        }
        if (k == ws.n && first) {
            fate = MT_ENTITY_TRANSLATED;
            if (form) *form = first;
        }
        entity_words_free(&ws);
    }
    free(copy);
    return fate;
}

mt_entity_fate mt_entity_fate_in(const char *hyp, const char *name, size_t len,
                                 const mt_entity_lexicon *lex, const char **form)
{
    if (mt_text_contains(hyp, name, len)) return MT_ENTITY_COPIED;
    const char *const *forms;
    size_t n = lex ? mt_entity_lexicon_forms(lex, name, len, &forms, NULL, NULL) : 0;
    for (size_t k = 0; k < n; k++) {
        if (!mt_text_contains(hyp, forms[k], strlen(forms[k]))) continue;
        if (form) *form = forms[k];
        return MT_ENTITY_TRANSLATED;
    }
    if (lex && memchr(name, ' ', len)) return fate_by_words(hyp, name, len, lex, form);
    return MT_ENTITY_DROPPED;
}
