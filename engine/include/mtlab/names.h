/* Name substitution (docs/data.md §8): a name that a pair carries verbatim on both sides
 * ("David" in "David dijo" / "David said") is replaced on both sides by a name the corpus never
 * uses, drawn from a gazetteer (docs/data.md §7), so that a model learns to copy names it has
 * never seen. The trainer does it to training pairs (mtlab/traindata.h); `mtlab data bible`
 * does it once to the test split for test.names.
 *
 * Strings are UTF-8; a word is a maximal run of letters, digits and combining marks (the
 * entity recognisers' words, so the apostrophe of "David’s" ends "David"). */
#ifndef MTLAB_NAMES_H
#define MTLAB_NAMES_H

#include <stddef.h>

#include "mtlab/entities.h"
#include "mtlab/rng.h"

/* Names to substitute with, one per line: one capitalised word, not all capitals. */
typedef struct {
    char **names; /* (n) */
    size_t n;
} mt_gazetteer;

/* 0, or -1 with "PATH:LINE: problem" (not a single capitalised word, a repeated name, an empty
 * file). */
int mt_gazetteer_load(mt_gazetteer *g, const char *path);
void mt_gazetteer_free(mt_gazetteer *g);

/* The names pair (src, tgt) shares verbatim: words of tgt inside a named entity of the
 * recogniser lang (mtlab/entities.h: capitalised, not all capitals, not a word capitalised by
 * position) that are also a word of src, each once, in order of first appearance in tgt.
 * "Jerusalén"/"Jerusalem" is no shared name; neither is "Jacob" against "Jacobo". 0, or -1 on
 * invalid UTF-8. */
int mt_names_shared(mt_entity_set *out, const char *src, const char *tgt, mt_ner_lang lang);

/* text with every word equal to name replaced by repl (malloc'd); *count, when not NULL, gets
 * the number of words replaced. NULL on invalid UTF-8. */
char *mt_name_replace(const char *text, const char *name, const char *repl, size_t *count);

/* How substitutes are drawn: each name with probability p, from gazetteer g, by rng. */
typedef struct {
    const mt_gazetteer *g;
    double p;
    mt_rng *rng;
} mt_name_draw;
/* Substitutes the shared names of one pair: each of names (mt_names_shared) is replaced, with
 * probability draw->p, on both sides by a gazetteer name drawn uniformly from draw->rng, the
 * names of one pair all different. chosen (names->n entries) receives the gazetteer name that
 * replaced each name (a pointer into draw->g), or NULL for a name kept. Returns the number of
 * names replaced; when it is above 0, *src_out and *tgt_out are the new texts (malloc'd), else
 * both are NULL. -1 on invalid UTF-8. The same rng state always gives the same substitution. */
int mt_names_substitute(char **src_out, char **tgt_out, const char **chosen, const char *src,
                        const char *tgt, const mt_entity_set *names, const mt_name_draw *draw);

/* ------------------------------------------------------------------ recall of substituted names */

/* The names a test set's translations must carry verbatim, per segment (test.names.tsv):
 *   # mtlab names 1
 *   # segments=312
 *   1<TAB>Aachen<TAB>Abraham      segment (from 1), substituted name, the corpus name it replaced
 * rows by segment; a segment may have several rows, or none. */
#define MT_NAMES_MAGIC "# mtlab names 1"

typedef struct {
    size_t n_segments;
    size_t *first; /* (n_segments + 1): segment i's names are names[first[i] .. first[i+1]) */
    char **names; /* (first[n_segments]) */
} mt_names_list;

/* 0, or -1 with "PATH:LINE: problem" (bad magic or header, a segment out of range or
 * out of order, a name that is no single word). */
int mt_names_list_read(mt_names_list *l, const char *path);
void mt_names_list_free(mt_names_list *l);

/* Verbatim recall: of the (segment, name) rows, those whose name is a word of the segment's
 * hypothesis (mt_name_replace's words, so "Aachen’s" counts and "Aachener" does not). */
typedef struct {
    size_t names, hits;
    double recall; /* hits / names; 0 when there are none */
} mt_names_recall;

/* hyps holds l->n_segments translations. */
void mt_names_recall_score(mt_names_recall *out, const mt_names_list *l, const char *const *hyps);

#endif
