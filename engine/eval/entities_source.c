/* The source-side detector and the fate of a name in a translation (mtlab/entities.h,
 * docs/metrics.md §5.4): what in a typed source sentence a translation should carry over, so
 * the workbench can mark each name copied, translated or dropped. With no reference, a word is
 * a name when its corpus says so (the lexicon's names, wherever they stand) or, for words the
 * corpus does not know, when it is capitalised away from the start of a sentence; a word the
 * corpus writes as an ordinary word ("Que" opening a verse inside a pasted paragraph) is none.
 * Numbers are left out: a translation may rightly write them another way ("2015" is not a
 * name). */
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

int mt_source_entities(mt_text_span **spans, size_t *n, const char *src, const mt_entity_lexicon *lex)
{
    *spans = NULL;
    *n = 0;
    entity_words ws;
    if (entity_words_split(&ws, src) < 0) return -1;
    size_t cap = 0;
    for (size_t i = 0; i < ws.n; i++) {
        if (!is_name_word(src, &ws.w[i], lex)) continue;
        if (*n == cap) {
            cap = cap ? 2 * cap : 8;
            *spans = mt_xrealloc(*spans, cap * sizeof **spans);
        }
        (*spans)[(*n)++] = (mt_text_span){ws.w[i].start, ws.w[i].end};
    }
    entity_words_free(&ws);
    return 0;
}

mt_entity_fate mt_entity_fate_in(const char *hyp, const char *name, size_t len, const mt_entity_lexicon *lex,
                                 const char **form)
{
    if (mt_text_contains(hyp, name, len)) return MT_ENTITY_COPIED;
    const char *const *forms;
    size_t n = lex ? mt_entity_lexicon_forms(lex, name, len, &forms, NULL, NULL) : 0;
    for (size_t k = 0; k < n; k++) {
        if (!mt_text_contains(hyp, forms[k], strlen(forms[k]))) continue;
        if (form) *form = forms[k];
        return MT_ENTITY_TRANSLATED;
    }
    return MT_ENTITY_DROPPED;
}
