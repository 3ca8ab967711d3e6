/* The evaluation behind `mtlab eval` and Lua's mtlab.eval: systems (bundles or apertium:MODE)
 * translate one test set and are scored the same way for both (cli/eval_report.h prints it). */
#ifndef MTLAB_APP_EVAL_RUN_H
#define MTLAB_APP_EVAL_RUN_H

#include <stdatomic.h>
#include <stddef.h>

#include "common/eval_report.h"
#include "mtlab/metrics.h"

#define EVAL_MAX_SYSTEMS 16

typedef struct {
    const char *systems[EVAL_MAX_SYSTEMS]; /* bundle directories or "apertium:MODE" */
    size_t n_systems;
    const char *src, *ref; /* the test files, or the names the lines below go by */
    const mt_text_lines *src_lines, *ref_lines; /* NULL: read src and ref as files */
    const char *stats, *train_src, *train_ref, *save_stats, *lexicon;
    const char *hyps_dir, *length_model, *ner, *device;
    const char *precision; /* "fp32", "int8" or a list "fp32,int8": each bundle is
                            * evaluated once per precision, its columns named
                            * "DIR · PRECISION"; NULL: fp32, named DIR */
    const char *names; /* test.names.tsv: the recall of substituted names (docs/metrics.md §9) */
    const char *data; /* a dataset directory: its languages (and, in the callers, its test split) */
    const char *tgt_lang; /* the target language (the entity recogniser's); NULL: from data,
                           * else the first system (never a file's extension) */
    const char *paired; /* "bs", "ar" or "none"; NULL: bs when there are two systems or more */
    const char *comet; /* a COMET model directory (mtlab/comet.h), run on device; NULL: none */
    int beam;
    int keep_hyps; /* 1: the outcome keeps the hypotheses and the test set */
    const atomic_int *cancel; /* non-zero (Ctrl-C) stops the run: checked before each system and
                               * each of its finished lines, and before the paired tests; the
                               * run then fails "interrupted" and keeps no scores (NULL: never) */
} eval_request;

typedef struct {
    eval_report report; /* points into the fields below */
    eval_system_result results[EVAL_MAX_SYSTEMS];
    char *names[EVAL_MAX_SYSTEMS];
    char **hyps[EVAL_MAX_SYSTEMS]; /* (report.segments) each, with keep_hyps */
    mt_text_lines src, ref; /* with keep_hyps */
    char stats_source[512], lexicon_source[512], length_unit[512];
} eval_outcome;

/* 0, or 1 with the reason in mt_last_error() (nothing is kept then). */
int eval_run(const eval_request *req, eval_outcome *out);
void eval_outcome_free(eval_outcome *o);

#endif
