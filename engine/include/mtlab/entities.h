/* Named-entity recall as in Pitorro et al. (2024), scripts/ar.py of deep-spin/ssm-mt:
 *
 *   1. Recognise named entities in the REFERENCE (target side): person/organisation/place
 *      names and other proper nouns (the paper used NLTK's ne_chunk: PERSON, ORGANIZATION and
 *      GPE chunks plus un-chunked NNP tokens). mtlab recognises them with rules written and
 *      checked against a reference tagger on the Bible (tests/fixtures/entities/).
 *   2. Keep an entity only when it occurs verbatim (case-sensitive substring) in the SOURCE:
 *      only copyable entities count.
 *   3. Hit: the entity occurs verbatim (substring) in the hypothesis.
 *   4. Frequency of an entity = number of TRAINING pairs that contain it as a kept entity.
 *      Bins: unseen (0), regular (1..15), frequent (16+).
 *   5. Recall of an entity = hits / test sentences that contain it; recall of a bin =
 *      unweighted mean over the distinct entities in it.
 *
 * Strings are UTF-8; every function that reads text fails with "invalid UTF-8 at byte N"
 * rather than guessing. Spans are byte offsets [start, end) into the text given. */
#ifndef MTLAB_ENTITIES_H
#define MTLAB_ENTITIES_H

#include <stddef.h>

/* Which recogniser reads the reference side. */
typedef enum {
    MT_NER_ENGLISH, /* rules for English: proper nouns, multiword names, no common words */
    MT_NER_GENERIC, /* any cased script: capitalised tokens that do not start a sentence */
} mt_ner_lang;

/* "english"/"en" or "generic"; -1 (with a message listing both) otherwise. */
int mt_ner_lang_parse(const char *name, mt_ner_lang *out);
const char *mt_ner_lang_name(mt_ner_lang lang);
/* The recogniser for a target-language code or file suffix: "en" -> English, else generic. */
mt_ner_lang mt_ner_lang_for_code(const char *code);

typedef struct {
    size_t start, end; /* bytes [start, end) */
} mt_text_span;

/* ------------------------------------------------------------------ recognisers */

/* Named entities of a reference sentence, in text order (a name may repeat). *spans is
 * malloc'd (NULL when *n is 0). 0, or -1 on invalid UTF-8. */
int mt_entities_find(mt_text_span **spans, size_t *n, const char *text, mt_ner_lang lang);

/* 1 when needle[0..len) occurs in text (byte-exact, case-sensitive). */
int mt_text_contains(const char *text, const char *needle, size_t len);

/* A set of distinct entity strings, in order of first appearance. */
typedef struct {
    char **names; /* (n) malloc'd */
    size_t n;
} mt_entity_set;

void mt_entity_set_free(mt_entity_set *s);

/* The copyable entities of one pair: entities of ref that occur verbatim in src, each once.
 * 0, or -1 on invalid UTF-8 (in either). */
int mt_entities_copyable(mt_entity_set *out, const char *src, const char *ref, mt_ner_lang lang);

/* ------------------------------------------------------------------ training frequencies */

/* entity -> number of training pairs where it is copyable. Stored as corpus_stats.tsv:
 *   # mtlab corpus_stats 1
 *   # pairs=29102 ner=english
 *   Israel<TAB>1490
 *   ...                       (most frequent first, then bytewise) */
typedef struct mt_corpus_stats mt_corpus_stats;

/* Counts over n training pairs. NULL (mt_last_error names the pair: "pair 17: ...") on
 * invalid UTF-8. progress, when not NULL, is called every 1024 pairs with (done, n). */
mt_corpus_stats *mt_corpus_stats_build(const char *const *src, const char *const *ref, size_t n,
                                       mt_ner_lang lang,
                                       void (*progress)(void *user, size_t done, size_t total),
                                       void *user);
/* Written atomically (temporary file + rename). 0 or -1. */
int mt_corpus_stats_write(const mt_corpus_stats *s, const char *path);
/* NULL with "PATH:LINE: problem" for a malformed file. */
mt_corpus_stats *mt_corpus_stats_read(const char *path);
void mt_corpus_stats_free(mt_corpus_stats *s);

/* Training pairs in which entity[0..len) was copyable; 0 when unseen. */
size_t mt_corpus_stats_count(const mt_corpus_stats *s, const char *entity, size_t len);
size_t mt_corpus_stats_pairs(const mt_corpus_stats *s); /* training pairs counted */
size_t mt_corpus_stats_entities(const mt_corpus_stats *s); /* distinct entities */
mt_ner_lang mt_corpus_stats_lang(const mt_corpus_stats *s);

/* ------------------------------------------------------------------ recall by frequency bin */

enum { MT_NE_UNSEEN, MT_NE_REGULAR, MT_NE_FREQUENT, MT_NE_BINS };
#define MT_NE_FREQUENT_MIN 16 /* training pairs from which an entity is "frequent" */

/* The bin of a training count: 0 -> unseen, 1..15 -> regular, 16+ -> frequent. */
int mt_ne_bin(size_t train_count);
/* "unseen", "regular", "frequent" */
const char *mt_ne_bin_name(int bin);

/* The copyable entities of every test sentence, computed once and scored against any number
 * of systems. Entities are interned: ids index names. */
typedef struct {
    char **names; /* (n_names) distinct entities over the test set */
    size_t *train_count; /* (n_names) from the corpus stats (0 without stats) */
    size_t n_names;
    size_t *first; /* (n_sentences + 1): sentence i has ids[first[i] .. first[i+1]) */
    size_t *ids; /* (first[n_sentences]) */
    char **copy_as; /* NULL, or (first[n_sentences]): a source spelling whose verbatim copy
                     * also hits that entry (NULL entries: the entity alone) */
    size_t n_sentences;
} mt_ne_testset;

/* stats may be NULL (every entity is then unseen). 0, or -1 naming the segment. */
int mt_ne_testset_build(mt_ne_testset *ts, const char *const *src, const char *const *ref, size_t n,
                        mt_ner_lang lang, const mt_corpus_stats *stats);
void mt_ne_testset_free(mt_ne_testset *ts);

typedef struct {
    double recall[MT_NE_BINS]; /* mean over distinct entities of the bin; 0 if none */
    size_t entities[MT_NE_BINS]; /* distinct entities in the bin */
    size_t occurrences[MT_NE_BINS]; /* (sentence, entity) pairs in the bin */
    size_t hits[MT_NE_BINS]; /* of those, found in the hypothesis */
    double recall_all; /* mean over all distinct entities */
    size_t entities_all, occurrences_all, hits_all;
} mt_ne_recall;

/* Scores n_sentences hypotheses. hit_of, when not NULL, receives per test-set id list entry
 * (same layout as ts->ids) 1 for a hit and 0 for a miss. */
void mt_ne_recall_score(mt_ne_recall *out, const mt_ne_testset *ts, const char *const *hyps,
                        unsigned char *hit_of);

/* ------------------------------------------------------------------ bilingual entity lexicon */

/* Which target forms each source name takes in the training corpus (docs/metrics.md §8), and
 * which source words are ordinary ones:
 *   - a NAME of a side is a word capitalised in the middle of a sentence at least twice, and
 *     more often so than written in lower case anywhere (Dios, Juan; God, John; not "Y"), or
 *     a name of several words (mt_source_entities' runs) standing inside a sentence twice, whose
 *     forms may be of several words too (Pedro Sánchez: Peter Sánchez);
 *   - an ORDINARY WORD of the source is a word written in lower case more often than any
 *     capitalised spelling of it stands mid-sentence (que, banco), kept lower-cased; words of
 *     one letter or starting with a digit are left out (a name is never one);
 *   - per training pair, every source name present is paired with every target name present
 *     and with its own spelling when that occurs as a target word (identity counts too);
 *   - dice(s, t) = 2 pairs(s, t) / (pairs(s) + pairs(t)); a form is kept when
 *     pairs(s, t) >= MT_LEXICON_MIN_PAIRS, dice >= MT_LEXICON_MIN_DICE and dice at least
 *     half the best form's, at most MT_LEXICON_MAX_FORMS per name, best first.
 * Stored as entity_lexicon.tsv beside corpus_stats.tsv:
 *   # mtlab entity_lexicon 2
 *   # pairs=29102 words=22911
 *   Dios<TAB>God<TAB>0.8712<TAB>2890      source, target form, dice, pairs with both
 *   Banco<TAB><TAB>0<TAB>3               a name with no form: pairs with the name
 *   que                                   an ordinary word, after the names
 * (names by falling pair count, then bytewise; forms best first; words bytewise). A file of
 * version 1 (names only, "# pairs=N") is still read: it knows no ordinary words. */
typedef struct mt_entity_lexicon mt_entity_lexicon;

#define MT_LEXICON_MIN_PAIRS 2
#define MT_LEXICON_MIN_DICE 0.3
#define MT_LEXICON_MAX_FORMS 3

/* Learns the lexicon from n aligned training pairs. NULL (mt_last_error names the pair) on
 * invalid UTF-8. progress, when not NULL, is called every 1024 pairs and at the end. */
mt_entity_lexicon *mt_entity_lexicon_build(const char *const *src, const char *const *tgt, size_t n,
                                           void (*progress)(void *user, size_t done, size_t total),
                                           void *user);
/* Written atomically (temporary file + rename). 0 or -1. */
int mt_entity_lexicon_write(const mt_entity_lexicon *l, const char *path);
/* NULL with "PATH:LINE: problem" for a malformed file. */
mt_entity_lexicon *mt_entity_lexicon_read(const char *path);
void mt_entity_lexicon_free(mt_entity_lexicon *l);

size_t mt_entity_lexicon_pairs(const mt_entity_lexicon *l); /* training pairs learned from */
size_t mt_entity_lexicon_names(const mt_entity_lexicon *l); /* distinct source names */
size_t mt_entity_lexicon_words(const mt_entity_lexicon *l); /* ordinary source words */
/* 1 when word[0..len) is a source name of the corpus. */
int mt_entity_lexicon_is_name(const mt_entity_lexicon *l, const char *word, size_t len);
/* 1 when word[0..len), lower-cased, is an ordinary word of the source ("Que" for que). */
int mt_entity_lexicon_is_word(const mt_entity_lexicon *l, const char *word, size_t len);
/* The target forms of source name word[0..len), best first (*forms points into l); 0 when it
 * has none or is not a name. dice and pairs, when not NULL, point to the forms' figures. */
size_t mt_entity_lexicon_forms(const mt_entity_lexicon *l, const char *word, size_t len,
                               const char *const **forms, const double **dice,
                               const size_t **pairs);

/* ------------------------------------------------------------------ source-side detector */

/* Names in a SOURCE sentence (typed text, no reference): single words, in text order (a
 * name may repeat). With a lexicon, every word that is a name of its corpus (at any position,
 * so "Marta dijo" yields Marta) and every name-shaped word that does not start a sentence and
 * is not an ordinary word of the corpus (so a verse-opening "Que" inside a paragraph is none);
 * without one, name-shaped words that do not start a sentence. Numbers are
 * never names; punctuation and spaces end a word. lex may be NULL. 0, or -1 on invalid UTF-8. */
int mt_source_entities(mt_text_span **spans, size_t *n, const char *src,
                       const mt_entity_lexicon *lex);

/* What a translation did with a source name. */
typedef enum {
    MT_ENTITY_COPIED, /* the name occurs verbatim in the hypothesis */
    MT_ENTITY_TRANSLATED, /* not verbatim, but one of its lexicon forms occurs */
    MT_ENTITY_DROPPED, /* neither */
} mt_entity_fate;

/* The fate of name[0..len) in hyp (substring matches, as the recall of §5.3). For
 * MT_ENTITY_TRANSLATED, *form (when form is not NULL) is the lexicon form found; lex may be
 * NULL (then a name is copied or dropped). */
mt_entity_fate mt_entity_fate_in(const char *hyp, const char *name, size_t len,
                                 const mt_entity_lexicon *lex, const char **form);

/* ------------------------------------------------------------------ translated-aware recall */

/* The test set of the translated-aware recall: the reference entities of each pair kept when
 * they occur verbatim in the source (as mt_ne_testset_build) OR are a lexicon form of a name
 * of the source (God for Dios). A hit is then the entity in the hypothesis, or the source
 * name copied verbatim (ts->copy_as). Training counts: the corpus stats' count of a copyable
 * entity, or the lexicon's pairs of the (name, form) it came from, whichever is larger.
 * stats may be NULL. 0, or -1 naming the segment. */
int mt_ne_testset_build_translated(mt_ne_testset *ts, const char *const *src,
                                   const char *const *ref, size_t n, mt_ner_lang lang,
                                   const mt_corpus_stats *stats, const mt_entity_lexicon *lex);

#endif
