/* A translation system behind one interface, so that evaluation, the TUI and Lua treat a
 * rule-based peer and a neural model bundle alike:
 *
 *   mt_translator *t = mt_translator_open("apertium:spa-eng", &opts);   (or a bundle dir)
 *   mt_translator_translate(t, hyps, src, n, on_piece, user);          (any number of times)
 *   mt_translator_last_stats(t)                                         (cost of that batch)
 *   mt_translator_close(t);
 *
 * Systems, chosen by the name given to mt_translator_open:
 *   "apertium:MODE"  the Apertium rule-based translator from Debian (`apertium -u MODE`),
 *                    MODE one of `apertium -l` (spa-eng, eng-spa, ...);
 *   a directory      a model bundle (mtlab/bundle.h).
 * An implementation provides an mt_translator_impl (below) and an opener listed in
 * engine/eval/translator_open.c. */
#ifndef MTLAB_TRANSLATOR_H
#define MTLAB_TRANSLATOR_H

#include <stddef.h>

typedef struct {
    int beam; /* beam size for search-based systems (paper: 5); 1 = greedy */
    int max_batch; /* sentences decoded together (0: the system's default) */
    const char *device; /* "cpu", "cuda:0"... (NULL: the default); ignored by Apertium */
    const char *precision; /* "fp32" or "int8" (mtlab/model.h), NULL: fp32; when given, a
                            * bundle's translator is named "DIR · PRECISION"; ignored by
                            * Apertium */
} mt_translate_opts;

/* Beam 5, default batch and device. */
mt_translate_opts mt_translate_defaults(void);

/* Output as it is produced: text is the next piece of hypothesis `line` (an index into the
 * batch); pieces of one line concatenate to its hypothesis. end_of_line is 1 on the last call
 * for a line (text may then be ""). Lines finish in any order. A non-zero return cancels the
 * batch: translate then fails with "cancelled". */
typedef int (*mt_piece_fn)(void *user, size_t line, const char *text, int end_of_line);

/* The cost of the last batch. Memory is what the system itself needed to decode: for a neural
 * model the peak bytes of its decoding state (caches, states, activations), for Apertium the
 * peak resident memory of its processes. */
typedef struct {
    size_t sentences;
    size_t src_tokens; /* whitespace tokens of the source lines */
    size_t hyp_tokens; /* whitespace tokens of the hypotheses */
    double seconds; /* wall time of the batch, start-up included */
    size_t peak_bytes; /* see above; 0 when unknown */
    const char
        *memory_kind; /* what peak_bytes measures, e.g. "peak RSS of the apertium processes" */
} mt_translate_stats;

typedef struct mt_translator mt_translator;

/* The functions every system implements. translate fills hyps[0..n) with malloc'd strings (or
 * fails and leaves none allocated) and sets *stats except seconds and token counts, which the
 * caller measures. */
typedef struct {
    const char *kind; /* "apertium", "bundle" */
    int (*translate)(void *self, char **hyps, const char *const *src, size_t n,
                     mt_piece_fn on_piece, void *user, mt_translate_stats *stats);
    void (*close)(void *self);
} mt_translator_impl;

/* Open a system by name (see the top of this file). NULL with a message that says what is
 * wrong and what would work: "apertium mode 'es-en' is not installed (installed: eng-spa,
 * spa-eng, spa-eng_US)". */
mt_translator *mt_translator_open(const char *name, const mt_translate_opts *opts);
/* Wrap an implementation (for openers of new systems); takes ownership of self. */
mt_translator *mt_translator_wrap(const char *name, const mt_translator_impl *impl, void *self);
void mt_translator_close(mt_translator *t);

/* The name it was opened with, and its kind ("apertium", "bundle"). */
const char *mt_translator_name(const mt_translator *t);
const char *mt_translator_kind(const mt_translator *t);

/* Translate n source lines (UTF-8, no newlines) into hyps[0..n), each malloc'd (caller frees).
 * on_piece may be NULL. 0, or -1 with nothing allocated in hyps. */
int mt_translator_translate(mt_translator *t, char **hyps, const char *const *src, size_t n,
                            mt_piece_fn on_piece, void *user);
/* The cost of the last successful batch. */
const mt_translate_stats *mt_translator_last_stats(const mt_translator *t);

/* ------------------------------------------------------------------ Apertium */

/* Installed Apertium modes (`apertium -l`) as one malloc'd comma-separated line, e.g.
 * "eng-spa, spa-eng, spa-eng_US"; NULL (with the reason) when apertium cannot run. */
char *mt_apertium_modes(void);
/* The system behind "apertium:MODE". */
mt_translator *mt_apertium_open(const char *mode, const mt_translate_opts *opts);

/* ------------------------------------------------------------------ model bundles */

/* The system behind a bundle directory. */
mt_translator *mt_bundle_translator_open(const char *dir, const mt_translate_opts *opts);

#endif
