/* The source-side detector (mtlab/entities.h): what in a typed source sentence a translation
 * should carry over unchanged, so the TUI can mark each span recalled or dropped once the
 * hypothesis is there. With no reference, it relies on three signs:
 *   - a capitalised word that does not start a sentence (a name, in most cased languages);
 *   - a number;
 *   - a word the training corpus copied verbatim from source to reference (corpus stats),
 *     which also catches names at the start of a sentence ("David dijo ...").
 * Neighbouring name words separated by one space form one span, as the recognisers do. */
#include "eval/entities_words.h"
#include "mtlab/entities.h"
#include "mtlab/error.h"

#include <stdlib.h>

static int copied_in_training(const char *src, const entity_word *w, const mt_corpus_stats *stats)
{
    return stats && mt_corpus_stats_count(stats, src + w->start, w->end - w->start) > 0;
}

static int is_name_word(const char *src, const entity_word *w, const mt_corpus_stats *stats)
{
    if (w->flags & WORD_NUMBER) return 0;
    if (copied_in_training(src, w, stats)) return 1;
    return (w->flags & WORD_CAPITALISED) && !(w->flags & WORD_SENTENCE_START) &&
           !(w->flags & WORD_ALL_UPPER) && w->n_chars >= 2;
}

int mt_source_entities(mt_text_span **spans, size_t *n, const char *src,
                       const mt_corpus_stats *stats)
{
    *spans = NULL;
    *n = 0;
    entity_words ws;
    if (entity_words_split(&ws, src) < 0) return -1;
    size_t cap = 0;
    for (size_t i = 0; i < ws.n; i++) {
        size_t j = i;
        if (is_name_word(src, &ws.w[i], stats)) {
            while (j + 1 < ws.n && entity_words_adjacent(src, &ws.w[j], &ws.w[j + 1]) &&
                   is_name_word(src, &ws.w[j + 1], stats))
                j++;
        } else if (!(ws.w[i].flags & WORD_NUMBER)) {
            continue;
        }
        if (*n == cap) {
            cap = cap ? 2 * cap : 8;
            *spans = mt_xrealloc(*spans, cap * sizeof **spans);
        }
        (*spans)[(*n)++] = (mt_text_span){ws.w[i].start, ws.w[j].end};
        i = j;
    }
    entity_words_free(&ws);
    return 0;
}
