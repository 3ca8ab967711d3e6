/* `mtlab eval`: translate a test set with one or more systems and compare them in one table:
 * BLEU, chrF and chrF++ (sacreBLEU-exact; with two systems or more, each tested against the
 * first by sacreBLEU's paired bootstrap, docs/metrics.md §10), named-entity recall by
 * training-frequency bin (the paper's verbatim analysis, and beside it the recall that also counts
 * names the lexicon says were translated), the verbatim recall of substituted names (--names),
 * scores by source-length bucket, and the cost of translating (time, tokens/s, peak memory). Every
 * input is checked before any system runs, so a wrong file fails in a second with its name and line
 * rather than after a long translation. Ctrl-C stops it with no scores (exit 130): a table of the
 * systems that finished would pass for the comparison asked for. */
#include "cli/commands.h"
#include "common/eval_report.h"
#include "common/eval_run.h"
#include "mtlab/dataset.h"
#include "mtlab/decode.h"
#include "mtlab/error.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#define STATUS_INTERRUPTED 130 /* as a shell reports a process Ctrl-C ended, and `mtlab run` */

/* Ctrl-C's flag: the evaluation's cancel flag (eval_request.cancel). A lock-free atomic store
 * is safe in a handler. */
static atomic_int interrupted;

static void on_sigint(int sig)
{
    (void)sig;
    atomic_store(&interrupted, 1);
}

typedef struct {
    eval_request req;
    const char *json;
    char test_src[4096], test_ref[4096]; /* --data's test split */
} eval_args;

static int parse_args(eval_args *a, int argc, char **argv)
{
    memset(a, 0, sizeof *a);
    a->req.beam = 5;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        const char **dest = NULL;
        if (!strcmp(o, "-m") || !strcmp(o, "--model")) {
            if (a->req.n_systems == EVAL_MAX_SYSTEMS)
                return cli_fail("eval: at most %d systems", EVAL_MAX_SYSTEMS);
            dest = &a->req.systems[a->req.n_systems++];
        } else if (!strcmp(o, "--src")) dest = &a->req.src;
        else if (!strcmp(o, "--ref")) dest = &a->req.ref;
        else if (!strcmp(o, "--stats")) dest = &a->req.stats;
        else if (!strcmp(o, "--train-src")) dest = &a->req.train_src;
        else if (!strcmp(o, "--train-ref")) dest = &a->req.train_ref;
        else if (!strcmp(o, "--save-stats")) dest = &a->req.save_stats;
        else if (!strcmp(o, "--lexicon")) dest = &a->req.lexicon;
        else if (!strcmp(o, "--json")) dest = &a->json;
        else if (!strcmp(o, "--hyps")) dest = &a->req.hyps_dir;
        else if (!strcmp(o, "--length-model")) dest = &a->req.length_model;
        else if (!strcmp(o, "--ner")) dest = &a->req.ner;
        else if (!strcmp(o, "--data")) dest = &a->req.data;
        else if (!strcmp(o, "--tgt-lang")) dest = &a->req.tgt_lang;
        else if (!strcmp(o, "--device")) dest = &a->req.device;
        else if (!strcmp(o, "--precision")) dest = &a->req.precision;
        else if (!strcmp(o, "--names")) dest = &a->req.names;
        else if (!strcmp(o, "--paired")) dest = &a->req.paired;
        else if (!strcmp(o, "--comet")) dest = &a->req.comet;
        else if (!strcmp(o, "--beam")) {
            if (i + 1 >= argc) return cli_usage(&cmd_eval);
            if (cli_option_int("eval", o, argv[++i], 1, MT_DECODE_MAX_BEAM, &a->req.beam)) return 2;
            continue;
        } else {
            fprintf(stderr, "mtlab eval: unknown argument '%s'\n", o);
            return cli_usage(&cmd_eval);
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "mtlab eval: %s needs a value\n", o);
            return cli_usage(&cmd_eval);
        }
        *dest = argv[++i];
    }
    if (a->req.data && (!a->req.src || !a->req.ref)) {
        /* the dataset's test split, named by its languages */
        mt_dataset d;
        if (mt_dataset_open(&d, a->req.data) < 0)
            return cli_fail("eval: --data: %s", mt_last_error());
        if ((!a->req.src && mt_dataset_path(&d, "test", 0, a->test_src, sizeof a->test_src) < 0) ||
            (!a->req.ref && mt_dataset_path(&d, "test", 1, a->test_ref, sizeof a->test_ref) < 0))
            return cli_fail("eval: --data: %s", mt_last_error());
        if (!a->req.src) a->req.src = a->test_src;
        if (!a->req.ref) a->req.ref = a->test_ref;
    }
    const char *missing = a->req.n_systems == 0 ? "-m SYSTEM"
                          : !a->req.src         ? "--src FILE"
                          : !a->req.ref         ? "--ref FILE"
                                                : NULL;
    if (missing) {
        fprintf(stderr, "mtlab eval: %s is missing\n", missing);
        return cli_usage(&cmd_eval);
    }
    if (a->req.stats && (a->req.train_src || a->req.train_ref))
        return cli_fail("eval: give either --stats or --train-src/--train-ref, not both");
    if (!a->req.train_src != !a->req.train_ref)
        return cli_fail("eval: --train-src and --train-ref go together");
    if (a->req.save_stats && !a->req.train_src)
        return cli_fail("eval: --save-stats needs --train-src/--train-ref");
    return 0;
}

static int run_eval(int argc, char **argv)
{
    eval_args a;
    int rc = parse_args(&a, argc, argv);
    if (rc) return rc;
    /* a report that cannot be written fails now, not after the translations */
    if (a.json && strcmp(a.json, "-") != 0 && cli_check_output(a.json)) return 1;
    eval_outcome out;
    struct sigaction old;
    atomic_store(&interrupted, 0);
    cli_sigint_catch(on_sigint, &old);
    a.req.cancel = &interrupted;
    int failed = eval_run(&a.req, &out);
    /* a Ctrl-C after the run's last check still leaves no scores: the run was asked to stop */
    if (!failed && atomic_load(&interrupted)) {
        eval_outcome_free(&out);
        failed = mt_error("interrupted (Ctrl-C): no scores");
    }
    if (failed) {
        cli_sigint_restore(&old);
        if (!atomic_load(&interrupted)) return cli_fail("%s", mt_last_error());
        fprintf(stderr, "mtlab eval: %s\n", mt_last_error());
        return STATUS_INTERRUPTED;
    }
    cli_sigint_hold(1); /* the report is written whole; a Ctrl-C meanwhile comes after it */
    eval_report_print(stdout, &out.report);
    rc = a.json ? eval_report_write_json(&out.report, a.json) : 0;
    eval_outcome_free(&out);
    cli_sigint_hold(0);
    cli_sigint_restore(&old);
    return rc;
}

const struct mt_command cmd_eval = {
    .name = "eval",
    .args =
        "-m SYSTEM [-m SYSTEM ...] --src FILE --ref FILE [--beam N] [--device cpu|cuda[:N]] "
        "[--precision fp32|int8|bf16|fp32,int8...] "
        "[--json FILE] "
        "[--stats corpus_stats.tsv | --train-src FILE --train-ref FILE [--save-stats FILE]] "
        "[--lexicon entity_lexicon.tsv] [--ner english|generic] [--length-model SPM.model] [--hyps "
        "DIR] "
        "[--names test.names.tsv] [--paired bs|ar|none] [--comet DIR] [--data DIR] [--tgt-lang L]\n"
        "  --comet DIR: a COMET model (mtlab/comet.h) adds its row, the mean segment score, and\n"
        "  its paired test; it runs on --device\n"
        "  --data DIR: a dataset's test split (DIR/test.SRC, DIR/test.TGT) and languages; the "
        "target\n"
        "  language (the entity recogniser's: en -> english, others generic) is --tgt-lang, else\n"
        "  the dataset's, else the first system's (its config.json, or the Apertium mode)\n"
        "  SYSTEM is apertium:MODE (e.g. apertium:spa-eng) or a model bundle directory; with two\n"
        "  systems or more, every one is tested against the first (paired bootstrap unless "
        "--paired)",
    .summary = "compare systems: BLEU, chrF, chrF++ (and COMET) with paired significance, "
               "named-entity recall by "
               "frequency, length buckets, cost",
    .run = run_eval,
    .parallel = 1,
};
