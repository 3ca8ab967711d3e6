/* The results of `mtlab eval` and their two renderings: the table on stdout (one column per
 * system) and the --json file. */
#ifndef MTLAB_APP_EVAL_REPORT_H
#define MTLAB_APP_EVAL_REPORT_H

#include <stddef.h>
#include <stdio.h>

#include "mtlab/buckets.h"
#include "mtlab/entities.h"
#include "mtlab/metrics.h"
#include "mtlab/names.h"
#include "mtlab/significance.h"
#include "mtlab/translator.h"

/* The metrics the paired test compares systems on, in the table's order; COMET only when the
 * report has a COMET model (eval_report.comet_model) */
enum { EVAL_BLEU, EVAL_CHRF, EVAL_CHRFPP, EVAL_COMET, EVAL_METRICS };

typedef struct {
    const char *name; /* "apertium:spa-eng" */
    const char *kind; /* "apertium" */
    mt_bleu_score bleu;
    double chrf, chrfpp;
    double comet; /* the mean segment score, COMET's own scale (with a model) */
    /* against the first system, when the report has a paired test (docs/metrics.md §10);
     * COMET's score, mean and interval are the mean x 100, as in `mtlab score`'s tests */
    mt_sig_result sig[EVAL_METRICS];
    double *seg_stats[EVAL_METRICS]; /* per-segment statistics, freed once the test has run */
    mt_ne_recall ne; /* the paper's: copyable entities, verbatim hits */
    mt_ne_recall ne_translated; /* copied or translated (docs/metrics.md §8.3); with a lexicon */
    mt_names_recall
        names; /* substituted names copied verbatim (docs/metrics.md §9); with --names */
    mt_bucket_score buckets[MT_LENGTH_BUCKETS];
    mt_translate_stats cost;
} eval_system_result;

typedef struct {
    const char *src_path, *ref_path;
    size_t segments;
    char bleu_signature[160], chrf_signature[160], chrfpp_signature[160];
    const char *comet_model; /* the COMET model directory; NULL: no COMET row */
    int paired; /* 0: no test (one system, or --paired none); 1 + mt_sig_test */
    size_t paired_n; /* its resamples or trials */
    unsigned long long seed;
    const char *ner; /* recogniser name */
    const char *stats_source; /* corpus_stats path, "computed from TRAIN_SRC + TRAIN_REF" or NULL */
    size_t stats_pairs, stats_entities;
    const char *lexicon_source; /* entity lexicon path or "TRAIN_SRC + TRAIN_REF"; NULL: none */
    const char *length_unit; /* "whitespace tokens" or "pieces of MODEL" */
    const char *names_source; /* the --names file; NULL: no names row */
    int beam;
    const eval_system_result *systems; /* (n_systems) */
    size_t n_systems;
} eval_report;

/* The table, metrics as rows and systems as columns, then the notes (signatures, how entities
 * and lengths were counted). */
void eval_report_print(FILE *out, const eval_report *r);

/* The same numbers as a JSON document written to path ("-": stdout). 0, or 1 after printing
 * the reason ("mtlab: /tmp: cannot create: Is a directory"). */
int eval_report_write_json(const eval_report *r, const char *path);

/* "812.0 KiB", "1.3 GiB" */
void eval_format_bytes(char *out, size_t len, size_t bytes);

#endif
