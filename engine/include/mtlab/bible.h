/* The default corpus: the Bible, Spanish (Reina-Valera 1909, SWORD module spaRV1909eb) and
 * English (World English Bible, engWEB2015eb), verse-aligned and split by whole books.
 *
 *   mod2imp dump --mt_imp_read--> verses (OSIS cleaned to plain text)
 *   Spanish verses --mt_restore_chapter_caps--> "EN el principio" becomes "En el principio"
 *   both + exclusion list --mt_bible_build--> aligned pairs, splits, 8-verse runs, chapters
 *   --mt_bible_write--> DIR/{train,valid,test}.{es,en,keys}, {valid,test}.para8.*,
 *                       test.chapter.*   (one line per verse/run/chapter, aligned)
 *   test split + test gazetteer --mt_bible_names_build--> test.names.{es,en,keys,tsv}
 *
 * The rules and the expected figures are in docs/data.md; every function reports
 * bad input (invalid UTF-8, malformed keys or markup, inconsistent exclusion list) through
 * mt_error with the module or file and line. */
#ifndef MTLAB_BIBLE_H
#define MTLAB_BIBLE_H

#include <stddef.h>
#include <stdio.h>

#include "mtlab/names.h"

/* ---------------------------------------------------------------- verses of one module */
typedef struct {
    char *key; /* "I Samuel 24:3", exactly as mod2imp prints it */
    char *book; /* "I Samuel": English book names in both modules */
    int chapter; /* >= 1 */
    int verse; /* >= 1 */
    char *text; /* plain UTF-8, single spaces, no leading/trailing space; may be "" */
    int caps_restored; /* 1 when mt_restore_chapter_caps changed this verse */
} mt_verse;

typedef struct {
    mt_verse *items; /* (n) in module order */
    size_t n, cap;
} mt_verse_list;

/* Read a mod2imp stream: "$$$Book C:V" key lines, each followed by one line of OSIS. Verse-0
 * keys (book and chapter introductions) and "$$$[ ... Heading ]" entries are dropped; every
 * other text line is cleaned with mt_osis_to_text. module names the stream in errors:
 * "spaRV1909eb: line 812: malformed key '$$$Genesis 1'". Appends to *out; 0 or -1. */
int mt_imp_read(FILE *in, const char *module, mt_verse_list *out);
void mt_verse_list_free(mt_verse_list *list);

/* Clean one verse of OSIS markup into plain text:
 *  - text after an end-of-book marker (<div eID=.. type="book"/>) is cut (WEB's glossary);
 *  - <note>...</note> is deleted with everything inside, as is a <title> that is not
 *    canonical="true"; a canonical title (psalm heading) keeps its text;
 *  - every other tag is removed keeping its text; entities are unescaped;
 *  - where removed markup stood between two words with no space (RV1909's
 *    "FUÉ</w><transChange>á mí</transChange><w>palabra", WEB's "God<note>..</note><w>created")
 *    a space is put back, except before a clitic pronoun added to a verb ("díjo" + "le");
 *  - whitespace runs collapse to one space, trimmed at both ends.
 * Returns a malloc'd string, or NULL after mt_error("byte N: problem") (unterminated tag,
 * unknown entity, unclosed note). */
char *mt_osis_to_text(const char *osis, size_t len);

/* RV1909 prints the first word of each chapter in capitals ("EN el principio", "Y FUERON
 * acabados", after a psalm heading "Salmo de David. JEHOVÁ es mi pastor"). Restore the case of
 * that word (and of the capitals run it belongs to: "DE SIETE años"), keeping an initial capital
 * at a sentence start and for words the module itself writes capitalised mid-sentence
 * ("Y JEHOVÁ dijo" -> "Y Jehová dijo"). A section opening inside a chapter ("HUBO en los días",
 * Luke 1:5) is restored too. Acrostic labels ("ALEPH.", "HE."), inscriptions ("TEKEL:") and words
 * in capitals later in the verse ("en EFESO") are left alone. Returns the verses changed. */
size_t mt_restore_chapter_caps(mt_verse_list *list);

/* ---------------------------------------------------------------- exclusion list */
typedef struct {
    char **keys; /* (n) "Numbers 13:1" */
    char **reasons; /* (n) "versification_shift_chapter", "es_empty", ... */
    size_t *lines; /* (n) line of each key in the file, for messages */
    size_t n;
    char *path; /* for messages */
} mt_exclusions;

/* Read "KEY<TAB>REASON" lines (blank lines and lines starting with '#' are skipped). A
 * malformed key, a missing reason, a duplicate or invalid UTF-8 is an error naming path:line. */
int mt_exclusions_load(const char *path, mt_exclusions *out);
int mt_exclusions_parse(const char *text, size_t len, const char *name, mt_exclusions *out);
void mt_exclusions_free(mt_exclusions *ex);

/* ---------------------------------------------------------------- splits and the corpus */
typedef enum { MT_SPLIT_TRAIN, MT_SPLIT_VALID, MT_SPLIT_TEST, MT_SPLIT_COUNT } mt_split;

/* Whole books: valid = Ruth, Joel, Habakkuk, Zephaniah, Haggai, Galatians, Colossians,
 * I Peter, Jude; test = Esther, Ecclesiastes, Micah, Nahum, Obadiah, Philippians, Titus, James,
 * I John; every other book trains. */
mt_split mt_bible_split_of(const char *book);
const char *mt_split_name(mt_split split); /* "train", "valid", "test" */

enum { MT_BIBLE_PARA_VERSES = 8 }; /* verses per paragraph-level sample */

typedef struct {
    const mt_verse *es, *en; /* into the two verse lists, which must outlive the corpus */
    mt_split split;
} mt_pair;

typedef struct {
    size_t first, count; /* pairs[first .. first+count), one chapter, consecutive verses */
} mt_span;

typedef struct {
    mt_pair *pairs; /* (n_pairs) kept pairs in Spanish module order */
    size_t n_pairs;
    size_t split_pairs[MT_SPLIT_COUNT];
    mt_span *para[MT_SPLIT_COUNT]; /* non-overlapping 8-verse runs without gap or exclusion */
    size_t n_para[MT_SPLIT_COUNT];
    mt_span *chapters[MT_SPLIT_COUNT]; /* chapters whose every verse with text (in either module) is
                                          kept */
    size_t n_chapters[MT_SPLIT_COUNT];
    size_t n_common; /* keys present in both modules */
    size_t n_excluded; /* of those, dropped by the exclusion list */
    size_t n_es_only; /* Spanish keys without an English verse */
    size_t n_en_only; /* English keys without a Spanish verse (WEB's deuterocanon) */
} mt_bible_corpus;

/* Join es and en on the key, drop the excluded keys, assign splits, and find the 8-verse runs
 * and complete chapters. Fails when an excluded key is not in both modules, when a kept pair
 * has an empty side, or when the totals disagree with what the exclusion list implies. */
int mt_bible_build(const mt_verse_list *es, const mt_verse_list *en, const mt_exclusions *ex,
                   mt_bible_corpus *out);
void mt_bible_corpus_free(mt_bible_corpus *c);

/* Find the runs of consecutive verses (same book and chapter, verse numbers +1) in
 * pairs[0..n) and cut each into non-overlapping windows of `width` verses from its start;
 * a shorter remainder is dropped. Writes at most n / width spans; returns how many. */
size_t mt_bible_windows(const mt_pair *pairs, size_t n, size_t width, mt_span *out);

/* test.names (docs/data.md §9): every test verse that shares a name verbatim (mt_names_shared,
 * English recogniser) with each such name substituted on both sides by a name of the test
 * gazetteer; the draws are fixed (seed 1), so the files are the same on every machine. */
typedef struct {
    size_t n; /* verses */
    const mt_pair **pairs; /* (n) */
    char **es, **en; /* (n) the substituted texts */
    size_t *first; /* (n + 1): the names of verse i are from/to[first[i] .. first[i+1]) */
    char **from; /* the corpus's names */
    const char **to; /* their substitutes (pointers into the gazetteer) */
} mt_bible_names;

int mt_bible_names_build(mt_bible_names *out, const mt_bible_corpus *c, const mt_gazetteer *g);
void mt_bible_names_free(mt_bible_names *names);

/* Write DIR/{train,valid,test}.{es,en,keys}, DIR/{valid,test}.para8.{es,en,keys},
 * DIR/test.chapter.{es,en,keys} and, when names is not NULL, DIR/test.names.{es,en,keys,tsv}
 * (the .tsv in the format of mt_names_list_read); creates DIR (and parents). Each file is
 * written to a temporary name and renamed into place only after all of them were written.
 * 0 or -1. */
int mt_bible_write(const mt_bible_corpus *c, const mt_bible_names *names, const char *dir);

#endif
