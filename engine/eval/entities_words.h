/* Words of a sentence for the entity recognisers: maximal runs of letters, digits and
 * combining marks (Unicode classes from glibc's C.UTF-8 locale), with what the recognisers ask
 * about each one. Apostrophes and hyphens split words: "David’s" gives "David" and "s", as
 * English taggers split the possessive off. */
#ifndef MTLAB_EVAL_ENTITIES_WORDS_H
#define MTLAB_EVAL_ENTITIES_WORDS_H

#include "mtlab/entities.h"

#include <stddef.h>

enum {
    WORD_CAPITALISED = 1 << 0, /* first character is an upper-case (or title-case) letter */
    WORD_ALL_UPPER = 1 << 1, /* every letter upper case, at least two letters */
    WORD_NUMBER = 1 << 2, /* only digits */
    WORD_SENTENCE_START = 1 << 3, /* first word, or after . ! ? : ; or an opening quote */
};

typedef struct {
    size_t start, end; /* bytes [start, end) of the text */
    size_t n_chars; /* code points */
    unsigned flags; /* WORD_* */
} entity_word;

typedef struct {
    entity_word *w; /* (n) */
    size_t n, cap;
} entity_words;

/* Split text into words. 0, or -1 with "invalid UTF-8 at byte N (0xXX)". */
int entity_words_split(entity_words *out, const char *text);
void entity_words_free(entity_words *ws);

/* Lower-cased ASCII copy of a word into buf (at most cap-1 bytes); 0 when the word has a
 * non-ASCII byte or does not fit, so callers can look it up in ASCII word lists. */
int entity_word_ascii_lower(char *buf, size_t cap, const char *text, const entity_word *w);

/* 1 when a word is shaped like a name wherever it stands: capitalised, two or more characters,
 * not all capitals, not a number. */
int entity_word_name_shaped(const entity_word *w);

/* 1 when w is a lower-case particle that joins the capitalised words of one name around it
 * ("Ursula von der Leyen", "Vincent van Gogh"): von, van, der, den, ter, vom, zu, bin, ibn.
 * The Romance prepositions (de, del, la, di) are not: "el Dios de Israel" is two names. */
int entity_word_name_particle(const char *text, const entity_word *w);

/* 1 when the text between two words is exactly one space. */
int entity_words_adjacent(const char *text, const entity_word *a, const entity_word *b);

/* 1 when lower (an ASCII lower-case word) is an ordinary English word that is capitalised
 * only by position or style, never a name (entities_english.c). sentence_start: the word
 * opens a sentence or quotation, where a longer list applies. */
int english_common_word(const char *lower, int sentence_start);
/* 1 when lower is a title that stays a word of its own before a name ("lord"). */
int english_title_word(const char *lower);

/* The word after ws->w[i] in the same name of several words (particles skipped: "Ursula von der
 * Leyen"): the next capitalised word one space away that does not start a sentence; 0 when the
 * name ends at i. entity_words_name_last: the last word of the name that starts at i. */
size_t entity_words_name_next(const char *text, const entity_words *ws, size_t i);
size_t entity_words_name_last(const char *text, const entity_words *ws, size_t i);

/* mt_source_entities' names one word each, as they were before names of several words: what
 * the translated-aware recall (entities_recall.c) matches lexicon forms against. */
int entity_source_name_words(mt_text_span **spans, size_t *n, const char *src,
                             const mt_entity_lexicon *lex);

#endif
