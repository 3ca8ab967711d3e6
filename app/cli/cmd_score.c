/* `mtlab score`: BLEU, chrF, chrF++ and TER of a hypothesis file against one or more
 * reference files, printed as `sacrebleu REF... -i HYP -m bleu chrf ter -f text -w 2` prints
 * them (or, with --json, as its JSON output with -w 2), so the numbers can be pasted next to
 * published ones. --lowercase applies to BLEU and chrF (sacreBLEU's -lc plus --chrf-lowercase);
 * TER lowercases unless --ter-case-sensitive. sacreBLEU's own names choose the rest:
 * --tokenize (BLEU's; flores101/flores200 with --spm FILE, the SentencePiece model),
 * --chrf-word-order, --ter-normalized, --ter-no-punct, --ter-asian-support.
 *
 * Several hypothesis files (--hyp A --hyp B ..., or -i A B ...) are systems compared in one
 * table, the first the baseline; --paired-bs or --paired-ar adds sacreBLEU's paired tests
 * (docs/metrics.md §10): the same table, intervals and p-values as `sacrebleu REF -i A B ...
 * --paired-bs -w 2`.
 *
 * -m comet with --comet DIR and --src FILE adds COMET (mtlab/comet.h, one reference): alone it
 * prints the system score on COMET's own scale ("COMET = 0.8456", the mean of the segment
 * scores, as comet-score prints it); in the systems table and the paired tests it is that mean
 * x 100 ("84.56"), on the scale of the table's other columns. --device cpu|cuda[:N] runs it. */
#include "cli/commands.h"
#include "common/sig_table.h"
#include "mtlab/comet.h"
#include "mtlab/device.h"
#include "mtlab/error.h"
#include "mtlab/metrics.h"
#include "mtlab/significance.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* in the sorted order of their names, the order sacreBLEU prints them in */
enum metric { METRIC_BLEU, METRIC_CHRF, METRIC_CHRFPP, METRIC_COMET, METRIC_TER };
#define MAX_METRICS 8
#define MAX_REFS 64
#define MAX_SYSTEMS 32

typedef struct {
    const char *hyp_paths[MAX_SYSTEMS]; /* the first is the baseline of a paired test */
    size_t n_hyps;
    int paired; /* 0, or 1 + mt_sig_test */
    size_t paired_n; /* resamples or trials; 0: sacreBLEU's */
    uint64_t seed;
    const char *ref_paths[MAX_REFS];
    size_t n_refs;
    enum metric metrics[MAX_METRICS];
    size_t n_metrics;
    int lowercase, json;
    mt_bleu_smooth smooth;
    mt_bleu_tokenize tokenize;
    const char *spm_path; /* the flores tokenizers' SentencePiece model */
    const mt_spm_pieces *spm; /* loaded by run_score */
    int chrf_word_order; /* -1: the metric's own (0 for chrf, 2 for chrf++) */
    mt_ter_opts ter;
    const char *src_path, *comet_dir, *device; /* COMET's source, model directory, device */
    mt_comet *comet; /* opened by run_score when -m comet */
    const mt_text_lines *src;
} score_args;

static int add_metric(score_args *a, const char *name, size_t len)
{
    static const struct {
        const char *name;
        enum metric m;
    } known[] = {
        {"bleu", METRIC_BLEU}, {"chrf", METRIC_CHRF},   {"chrf++", METRIC_CHRFPP},
        {"ter", METRIC_TER},   {"comet", METRIC_COMET},
    };
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        if (strlen(known[i].name) != len || strncmp(known[i].name, name, len) != 0) continue;
        for (size_t m = 0; m < a->n_metrics; m++)
            if (a->metrics[m] == known[i].m) return 0; /* each once, as sacreBLEU's dict of them */
        if (a->n_metrics == MAX_METRICS)
            return cli_fail("score: too many metrics (at most %d)", MAX_METRICS);
        a->metrics[a->n_metrics++] = known[i].m;
        return 0;
    }
    fprintf(stderr, "mtlab score: unknown metric '%.*s' (bleu, chrf, chrf++, ter, comet)\n",
            (int)len, name);
    return 2;
}

/* "bleu,chrf" or "bleu" "chrf": every comma-separated name of one argument. */
static int add_metric_list(score_args *a, const char *arg)
{
    while (*arg) {
        size_t len = strcspn(arg, ",");
        int rc = len ? add_metric(a, arg, len) : 0;
        if (rc) return rc;
        arg += len + (arg[len] == ',');
    }
    return 0;
}

static int parse_args(score_args *a, int argc, char **argv)
{
    memset(a, 0, sizeof *a);
    a->smooth = MT_SMOOTH_EXP;
    a->seed = MT_SIG_DEFAULT_SEED;
    a->tokenize = MT_BLEU_TOK_13A;
    a->chrf_word_order = -1;
    a->ter = mt_ter_defaults();
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        int has_value = i + 1 < argc;
        if (!strcmp(o, "--hyp") || !strcmp(o, "-i")) {
            if (!has_value) return cli_usage(&cmd_score);
            /* --hyp takes one file a time; -i, as sacreBLEU's, every file up to the next option */
            do {
                if (a->n_hyps == MAX_SYSTEMS)
                    return cli_fail("score: too many systems (at most %d)", MAX_SYSTEMS);
                a->hyp_paths[a->n_hyps++] = argv[++i];
            } while (!strcmp(o, "-i") && i + 1 < argc && argv[i + 1][0] != '-');
        } else if (!strcmp(o, "--paired-bs") || !strcmp(o, "--paired-ar")) {
            a->paired = 1 + (!strcmp(o, "--paired-ar") ? MT_SIG_RANDOMIZATION : MT_SIG_BOOTSTRAP);
        } else if (!strcmp(o, "--paired-n") || !strcmp(o, "--seed")) {
            if (!has_value) return cli_usage(&cmd_score);
            char *end;
            errno = 0;
            unsigned long long v = strtoull(argv[++i], &end, 10);
            if (errno || end == argv[i] || *end || argv[i][0] == '-' ||
                (!strcmp(o, "--paired-n") && (v == 0 || v > 1000000)))
                return cli_fail(
                    "score: %s takes %s, not '%s'", o,
                    !strcmp(o, "--seed") ? "a whole number" : "a count from 1 to 1000000", argv[i]);
            if (!strcmp(o, "--seed")) a->seed = v;
            else a->paired_n = (size_t)v;
        } else if (!strcmp(o, "--ref") || !strcmp(o, "-r")) {
            if (!has_value) return cli_usage(&cmd_score);
            if (a->n_refs == MAX_REFS)
                return cli_fail("score: too many references (at most %d)", MAX_REFS);
            a->ref_paths[a->n_refs++] = argv[++i];
        } else if (!strcmp(o, "--metrics") || !strcmp(o, "-m")) {
            if (!has_value) return cli_usage(&cmd_score);
            while (i + 1 < argc && argv[i + 1][0] != '-') {
                int rc = add_metric_list(a, argv[++i]);
                if (rc) return rc;
            }
        } else if (!strcmp(o, "--lowercase") || !strcmp(o, "-lc")) {
            a->lowercase = 1;
        } else if (!strcmp(o, "--smooth")) {
            if (!has_value) return cli_usage(&cmd_score);
            const char *s = argv[++i];
            if (!strcmp(s, "exp")) a->smooth = MT_SMOOTH_EXP;
            else if (!strcmp(s, "floor")) a->smooth = MT_SMOOTH_FLOOR;
            else if (!strcmp(s, "add-k")) a->smooth = MT_SMOOTH_ADD_K;
            else if (!strcmp(s, "none")) a->smooth = MT_SMOOTH_NONE;
            else {
                fprintf(stderr, "mtlab score: unknown smoothing '%s' (exp, floor, add-k, none)\n",
                        s);
                return 2;
            }
        } else if (!strcmp(o, "--json")) {
            a->json = 1;
        } else if (!strcmp(o, "--tokenize") || !strcmp(o, "-tok")) {
            if (!has_value) return cli_usage(&cmd_score);
            if (mt_bleu_tokenize_parse(argv[++i], &a->tokenize) < 0)
                return cli_fail("score: --tokenize: %s", mt_last_error());
        } else if (!strcmp(o, "--spm")) {
            if (!has_value) return cli_usage(&cmd_score);
            a->spm_path = argv[++i];
        } else if (!strcmp(o, "--chrf-word-order") || !strcmp(o, "-cw")) {
            if (!has_value) return cli_usage(&cmd_score);
            char *end;
            long v = strtol(argv[++i], &end, 10);
            if (end == argv[i] || *end || v < 0 || v > MT_CHRF_MAX_ORDERS - 6)
                return cli_fail("score: %s takes a count from 0 to %d, not '%s'", o,
                                MT_CHRF_MAX_ORDERS - 6, argv[i]);
            a->chrf_word_order = (int)v;
        } else if (!strcmp(o, "--ter-normalized")) {
            a->ter.normalized = 1;
        } else if (!strcmp(o, "--ter-no-punct")) {
            a->ter.no_punct = 1;
        } else if (!strcmp(o, "--ter-asian-support")) {
            a->ter.asian_support = 1;
        } else if (!strcmp(o, "--ter-case-sensitive")) {
            a->ter.case_sensitive = 1;
        } else if (!strcmp(o, "--src") || !strcmp(o, "-s") || !strcmp(o, "--comet") ||
                   !strcmp(o, "--device")) {
            if (!has_value) return cli_usage(&cmd_score);
            const char **dst = !strcmp(o, "--comet")    ? &a->comet_dir
                               : !strcmp(o, "--device") ? &a->device
                                                        : &a->src_path;
            *dst = argv[++i];
        } else {
            fprintf(stderr, "mtlab score: unknown argument '%s'\n", o);
            return cli_usage(&cmd_score);
        }
    }
    if (!a->n_hyps || a->n_refs == 0) {
        fprintf(stderr, "mtlab score: %s is missing\n", !a->n_hyps ? "--hyp FILE" : "--ref FILE");
        return cli_usage(&cmd_score);
    }
    if (a->paired && a->n_hyps < 2)
        return cli_fail("score: a paired test compares systems with a baseline: give two or more "
                        "hypothesis files (the first is the baseline)");
    if (a->n_metrics == 0) {
        a->metrics[a->n_metrics++] = METRIC_BLEU;
        a->metrics[a->n_metrics++] = METRIC_CHRF;
    }
    /* sacreBLEU prints one system's metrics, and the systems table without a paired test, in
     * sorted order (`for name in sorted(metrics)`); the paired test's table in -m's order */
    for (size_t i = 1; !a->paired && i < a->n_metrics; i++)
        for (size_t j = i; j > 0 && a->metrics[j - 1] > a->metrics[j]; j--) {
            enum metric t = a->metrics[j];
            a->metrics[j] = a->metrics[j - 1];
            a->metrics[j - 1] = t;
        }
    int comet = 0;
    for (size_t m = 0; m < a->n_metrics; m++) comet |= a->metrics[m] == METRIC_COMET;
    if (comet && (!a->comet_dir || !a->src_path))
        return cli_fail("score: -m comet needs %s",
                        !a->comet_dir ? "--comet DIR (the model)" : "--src FILE (the sources)");
    if (comet && a->n_refs != 1)
        return cli_fail("score: COMET takes one reference, got %zu", a->n_refs);
    if (!comet && (a->comet_dir || a->src_path || a->device))
        return cli_fail("score: --comet, --src and --device go with -m comet");
    int flores = a->tokenize == MT_BLEU_TOK_FLORES101 || a->tokenize == MT_BLEU_TOK_FLORES200;
    if (flores != (a->spm_path != NULL))
        return cli_fail(flores ? "score: --tokenize %s needs --spm FILE (its SentencePiece model)"
                               : "score: --spm FILE goes with --tokenize flores101 or flores200",
                        mt_bleu_tokenize_name(a->tokenize));
    return 0;
}

/* COMET's segment scores of one system, n floats; -1 with mt_last_error(). */
static int comet_scores(float *out, const score_args *a, const mt_text_lines *hyp,
                        const char *const *const *refs)
{
    return mt_comet_score(a->comet, (const char *const *)a->src->lines,
                          (const char *const *)hyp->lines, refs[0], hyp->n, out);
}

static void comet_signature(char *out, size_t len, const score_args *a)
{
    snprintf(out, len, "nrefs:1|model:%s|device:%s|version:mtlab", a->comet_dir,
             a->device ? a->device : "cpu");
}

static mt_bleu_opts bleu_opts_of(const score_args *a)
{
    mt_bleu_opts o = mt_bleu_defaults();
    o.lowercase = a->lowercase;
    o.smooth = a->smooth;
    o.tokenize = a->tokenize;
    o.spm = a->spm;
    return o;
}

static mt_chrf_opts chrf_opts_of(enum metric m, const score_args *a)
{
    mt_chrf_opts o = m == METRIC_CHRF ? mt_chrf_defaults() : mt_chrfpp_defaults();
    o.lowercase = a->lowercase;
    if (m == METRIC_CHRF && a->chrf_word_order >= 0) o.word_order = a->chrf_word_order;
    return o;
}

/* One printed result: sacreBLEU's text line and the parts its JSON object is made of. */
typedef struct {
    char name[32];
    double score;
    char signature[160];
    char verbose[256]; /* "" for chrF */
    char line[512];
} score_result;

/* 0, or -1 with mt_last_error() set. */
static int compute(score_result *r, enum metric m, const score_args *a, const mt_text_lines *hyp,
                   const char *const *const *refs)
{
    memset(r, 0, sizeof *r);
    const char *const *hyps = (const char *const *)hyp->lines;
    if (m == METRIC_BLEU) {
        mt_bleu_opts o = bleu_opts_of(a);
        mt_bleu_score s;
        if (mt_bleu_corpus(&s, hyps, hyp->n, refs, a->n_refs, &o) < 0) return -1;
        snprintf(r->name, sizeof r->name, "BLEU");
        r->score = s.score;
        mt_bleu_signature(r->signature, sizeof r->signature, &o, a->n_refs, 0);
        mt_bleu_verbose(r->verbose, sizeof r->verbose, &s);
        mt_bleu_format(r->line, sizeof r->line, &s, r->signature, 2);
    } else if (m == METRIC_COMET) {
        float *seg = mt_xmalloc(hyp->n * sizeof *seg);
        int rc = comet_scores(seg, a, hyp, refs);
        double sum = 0;
        for (size_t i = 0; i < hyp->n && !rc; i++) sum += seg[i];
        free(seg);
        if (rc) return -1;
        snprintf(r->name, sizeof r->name, "COMET");
        r->score = sum / (double)hyp->n;
        comet_signature(r->signature, sizeof r->signature, a);
        snprintf(r->line, sizeof r->line, "COMET|%s = %.4f", r->signature, r->score);
    } else if (m == METRIC_TER) {
        if (mt_ter_corpus(&r->score, hyps, hyp->n, refs, a->n_refs, &a->ter) < 0) return -1;
        snprintf(r->name, sizeof r->name, "TER");
        mt_ter_signature(r->signature, sizeof r->signature, &a->ter, a->n_refs, 0);
        mt_ter_format(r->line, sizeof r->line, r->score, r->signature, 2);
    } else {
        mt_chrf_opts o = chrf_opts_of(m, a);
        if (mt_chrf_corpus(&r->score, hyps, hyp->n, refs, a->n_refs, &o) < 0) return -1;
        mt_chrf_name(r->name, sizeof r->name, &o);
        mt_chrf_signature(r->signature, sizeof r->signature, &o, a->n_refs, 0);
        mt_chrf_format(r->line, sizeof r->line, r->score, &o, r->signature, 2);
    }
    return 0;
}

/* sacreBLEU's print_single_results: one line as is; several right-aligned on their " = ". */
static void print_text(const score_result *res, size_t n)
{
    size_t w = 0;
    for (size_t i = 0; i < n; i++) {
        size_t left = (size_t)(strchr(res[i].line, '=') - res[i].line) - 1;
        if (left > w) w = left;
    }
    for (size_t i = 0; i < n; i++) {
        size_t left = (size_t)(strchr(res[i].line, '=') - res[i].line) - 1;
        printf("%*s%s\n", n == 1 ? 0 : (int)(w - left), "", res[i].line);
    }
}

/* sacreBLEU's Score.format(is_json=True) with width 2: name, score, signature, verbose_score
 * (BLEU only), then every signature field; several objects go in a list. Scores are printed
 * as Python prints float(f"{score:.2f}"), which 15 significant digits reproduce. */
static int print_json(const score_result *res, size_t n)
{
    if (n > 1) printf("[\n");
    for (size_t i = 0; i < n; i++) {
        char rounded[64];
        /* COMET's own 4 decimals, as comet-score prints its system score */
        snprintf(rounded, sizeof rounded, "%.*f", strcmp(res[i].name, "COMET") ? 2 : 4,
                 res[i].score);
        json_t *o = json_object();
        json_object_set_new(o, "name", json_string(res[i].name));
        json_object_set_new(o, "score", json_real(strtod(rounded, NULL)));
        json_object_set_new(o, "signature", json_string(res[i].signature));
        if (res[i].verbose[0]) json_object_set_new(o, "verbose_score", json_string(res[i].verbose));
        char sig[sizeof res[i].signature];
        memcpy(sig, res[i].signature, sizeof sig);
        char *save = NULL;
        for (char *kv = strtok_r(sig, "|", &save); kv; kv = strtok_r(NULL, "|", &save)) {
            char *colon = strchr(kv, ':');
            if (!colon) continue;
            *colon = '\0';
            json_object_set_new(o, kv, json_string(colon + 1));
        }
        char *text = json_dumps(o, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15));
        json_decref(o);
        if (!text) return cli_fail("score: cannot format JSON");
        printf("%s%s\n", text, i + 1 < n ? "," : "");
        free(text);
    }
    if (n > 1) printf("]\n");
    return 0;
}

/* The paired test the options ask for (a->paired != 0) */
static mt_sig_opts paired_opts(const score_args *a)
{
    mt_sig_opts o = mt_sig_defaults((mt_sig_test)(a->paired - 1));
    o.n_samples = a->paired_n;
    o.seed = a->seed;
    return o;
}

/* The metric's options and its view for the paired tests (ctx points into o). */
typedef struct {
    mt_bleu_opts bleu;
    mt_chrf_opts chrf;
    mt_ter_opts ter;
    char name[32];
    char signature[200]; /* with the test's fields after nrefs, as sacreBLEU writes it */
    mt_sig_metric sig;
} metric_setup;

static void setup_metric(metric_setup *ms, enum metric m, const score_args *a)
{
    memset(ms, 0, sizeof *ms);
    char sig[160];
    if (m == METRIC_BLEU) {
        ms->bleu = bleu_opts_of(a);
        ms->sig = mt_sig_bleu_metric(&ms->bleu);
        snprintf(ms->name, sizeof ms->name, "BLEU");
        mt_bleu_signature(sig, sizeof sig, &ms->bleu, a->n_refs, 0);
    } else if (m == METRIC_COMET) {
        ms->sig = mt_sig_comet_metric();
        snprintf(ms->name, sizeof ms->name, "COMET");
        comet_signature(sig, sizeof sig, a);
    } else if (m == METRIC_TER) {
        ms->ter = a->ter;
        ms->sig = mt_sig_ter_metric(&ms->ter);
        snprintf(ms->name, sizeof ms->name, "TER");
        mt_ter_signature(sig, sizeof sig, &ms->ter, a->n_refs, 0);
    } else {
        ms->chrf = chrf_opts_of(m, a);
        ms->sig = mt_sig_chrf_metric(&ms->chrf, ms->name, sizeof ms->name);
        mt_chrf_signature(sig, sizeof sig, &ms->chrf, a->n_refs, 0);
    }
    if (!a->paired) {
        snprintf(ms->signature, sizeof ms->signature, "%s", sig);
        return;
    }
    mt_sig_opts o = paired_opts(a);
    char test[64];
    mt_sig_signature(test, sizeof test, &o);
    size_t first = strcspn(sig, "|");
    snprintf(ms->signature, sizeof ms->signature, "%.*s|%s%s", (int)first, sig, test, sig + first);
}

/* Per-segment statistics of one system, n rows of ms->sig.n_stats. 0 or -1. */
static int segment_stats(double *rows, const metric_setup *ms, enum metric m,
                         const mt_text_lines *hyp, const char *const *const *refs, size_t n_refs)
{
    const char *seg_refs[MAX_REFS];
    for (size_t i = 0; i < hyp->n; i++) {
        for (size_t r = 0; r < n_refs; r++) seg_refs[r] = refs[r][i];
        double *row = rows + i * ms->sig.n_stats;
        int rc;
        if (m == METRIC_BLEU) {
            mt_bleu_stats st;
            rc = mt_bleu_segment_stats(&st, hyp->lines[i], seg_refs, n_refs, &ms->bleu);
            if (rc == 0) mt_sig_bleu_row(row, &st);
        } else if (m == METRIC_TER) {
            mt_ter_stats st;
            rc = mt_ter_segment_stats(&st, hyp->lines[i], seg_refs, n_refs, &ms->ter);
            if (rc == 0) mt_sig_ter_row(row, &st);
        } else {
            mt_chrf_stats st;
            rc = mt_chrf_segment_stats(&st, hyp->lines[i], seg_refs, n_refs, &ms->chrf);
            if (rc == 0) mt_sig_chrf_row(row, &st);
        }
        if (rc != 0) {
            mt_error_context("line %zu", i + 1);
            return -1;
        }
    }
    return 0;
}

/* COMET's rows [score, 1] of one system. 0 or -1. */
static int comet_rows(double *rows, const score_args *a, const mt_text_lines *hyp,
                      const char *const *const *refs)
{
    float *seg = mt_xmalloc(hyp->n * sizeof *seg);
    int rc = comet_scores(seg, a, hyp, refs);
    for (size_t i = 0; i < hyp->n && !rc; i++)
        mt_sig_comet_row(rows + i * MT_SIG_COMET_STATS, seg[i]);
    free(seg);
    return rc;
}

static void explain_test(const score_args *a, size_t n)
{
    int bs = a->paired - 1 == MT_SIG_BOOTSTRAP;
    printf("Paired %s, %zu %s against the baseline, seed %llu (docs/metrics.md §10).\n",
           bs ? "bootstrap resampling" : "approximate randomization", n,
           bs ? "resamples" : "trials", (unsigned long long)a->seed);
    printf(
        "%s"
        "p: how often chance alone gives a difference from the baseline at least as large;\n"
        "* marks p <= 0.05, a difference unlikely to be chance (not which system is better).\n\n",
        bs ? "Each cell: the score (the bootstrap's mean ± half its 95% interval).\n" : "");
}

/* Every system against the baseline (the first), as one table, with the paired test when one
 * was asked for; or the same as JSON. */
static int compare_systems(const score_args *a, const mt_text_lines *hyps,
                           const char *const *const *refs)
{
    int rc = 0;
    metric_setup *ms = mt_xmalloc(a->n_metrics * sizeof *ms);
    mt_sig_result *res = mt_xmalloc(a->n_metrics * a->n_hyps * sizeof *res);
    double **stats = mt_xmalloc(a->n_hyps * sizeof *stats);
    size_t n_seg = hyps[0].n;
    for (size_t mi = 0; mi < a->n_metrics && rc == 0; mi++) {
        setup_metric(&ms[mi], a->metrics[mi], a);
        size_t k = ms[mi].sig.n_stats;
        for (size_t s = 0; s < a->n_hyps; s++)
            stats[s] = mt_xmalloc((n_seg ? n_seg : 1) * k * sizeof **stats);
        for (size_t s = 0; s < a->n_hyps && rc == 0; s++)
            if (a->metrics[mi] == METRIC_COMET ? comet_rows(stats[s], a, &hyps[s], refs)
                                               : segment_stats(stats[s], &ms[mi], a->metrics[mi],
                                                               &hyps[s], refs, a->n_refs) < 0)
                rc = cli_fail("%s: %s", a->hyp_paths[s], mt_last_error());
        mt_sig_result *col = res + mi * a->n_hyps;
        if (rc == 0 && a->paired) {
            mt_sig_opts o = paired_opts(a);
            if (mt_sig_paired(col, (const double *const *)stats, a->n_hyps, n_seg, &ms[mi].sig,
                              &o) < 0)
                rc = cli_fail("score: %s", mt_last_error());
        } else if (rc == 0) {
            double *sums = mt_xmalloc(k * sizeof *sums);
            for (size_t s = 0; s < a->n_hyps; s++) {
                memset(&col[s], 0, sizeof col[s]);
                memset(sums, 0, k * sizeof *sums);
                for (size_t i = 0; i < n_seg; i++)
                    for (size_t j = 0; j < k; j++) sums[j] += stats[s][i * k + j];
                col[s].score = ms[mi].sig.score(sums, ms[mi].sig.ctx);
            }
            free(sums);
        }
        for (size_t s = 0; s < a->n_hyps; s++) free(stats[s]);
    }
    if (rc == 0 && a->json) {
        json_t *list = json_array();
        for (size_t s = 0; s < a->n_hyps; s++) {
            json_t *o = json_object();
            json_object_set_new(o, "system", json_string(a->hyp_paths[s]));
            json_object_set_new(o, "baseline", json_boolean(s == 0));
            for (size_t mi = 0; mi < a->n_metrics; mi++) {
                const mt_sig_result *r = &res[mi * a->n_hyps + s];
                json_t *m = json_object();
                json_object_set_new(m, "score", json_real(r->score));
                if (r->has_ci) {
                    json_object_set_new(m, "mean", json_real(r->mean));
                    json_object_set_new(m, "ci", json_real(r->ci));
                }
                if (r->has_p) json_object_set_new(m, "p_value", json_real(r->p));
                json_object_set_new(m, "signature", json_string(ms[mi].signature));
                json_object_set_new(o, ms[mi].name, m);
            }
            json_array_append_new(list, o);
        }
        char *text =
            json_dumps(list, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
        json_decref(list);
        if (!text) rc = cli_fail("score: cannot format JSON");
        else printf("%s\n", text);
        free(text);
    } else if (rc == 0) {
        const char *names[MAX_METRICS];
        const mt_sig_result *cols[MAX_METRICS];
        for (size_t mi = 0; mi < a->n_metrics; mi++) {
            names[mi] = ms[mi].name;
            cols[mi] = res + mi * a->n_hyps;
        }
        sig_table_print(stdout, a->hyp_paths, a->n_hyps, names, cols, a->n_metrics, 2);
        printf("\n");
        if (a->paired) {
            mt_sig_opts o = paired_opts(a);
            explain_test(a, mt_sig_samples(&o));
        }
        printf("-----------------\nMetric signatures\n-----------------\n");
        for (size_t mi = 0; mi < a->n_metrics; mi++)
            printf(" - %-10s %s\n", ms[mi].name, ms[mi].signature);
    }
    free(stats);
    free(res);
    free(ms);
    return rc;
}

static int run_score(int argc, char **argv)
{
    score_args a;
    int rc = parse_args(&a, argc, argv);
    if (rc) return rc;

    mt_text_lines hyps[MAX_SYSTEMS], refs[MAX_REFS];
    const char *const *ref_streams[MAX_REFS];
    size_t n_hyps = 0, n_read = 0;
    for (; n_hyps < a.n_hyps && rc == 0; n_hyps++) {
        if (cli_read_sentences(&hyps[n_hyps], a.hyp_paths[n_hyps])) {
            rc = cli_fail("%s", mt_last_error());
            break;
        }
        if (hyps[n_hyps].n != hyps[0].n)
            rc = cli_fail("%s has %zu lines but %s has %zu", a.hyp_paths[0], hyps[0].n,
                          a.hyp_paths[n_hyps], hyps[n_hyps].n);
    }
    for (; n_read < a.n_refs && rc == 0; n_read++) {
        if (cli_read_sentences(&refs[n_read], a.ref_paths[n_read])) {
            rc = cli_fail("%s", mt_last_error());
            break;
        }
        ref_streams[n_read] = (const char *const *)refs[n_read].lines;
        if (refs[n_read].n != hyps[0].n)
            rc = cli_fail("%s has %zu lines but %s has %zu", a.hyp_paths[0], hyps[0].n,
                          a.ref_paths[n_read], refs[n_read].n);
    }
    mt_text_lines src = {0};
    int have_src = 0;
    mt_spm_pieces *spm = NULL;
    if (rc == 0 && a.spm_path && !(spm = mt_spm_pieces_load(a.spm_path)))
        rc = cli_fail("score: --spm %s", mt_last_error());
    a.spm = spm;
    if (rc == 0 && a.comet_dir) {
        const mt_backend *be = a.device ? mt_backend_for(a.device, 0) : mt_backend_cpu();
        if (!be || cli_read_sentences(&src, a.src_path)) rc = cli_fail("%s", mt_last_error());
        else if ((have_src = 1, src.n != hyps[0].n))
            rc = cli_fail("%s has %zu lines but %s has %zu", a.hyp_paths[0], hyps[0].n, a.src_path,
                          src.n);
        else if (!(a.comet = mt_comet_open(a.comet_dir, be))) rc = cli_fail("%s", mt_last_error());
        a.src = &src;
    }
    if (rc == 0 && a.n_hyps > 1) {
        rc = compare_systems(&a, hyps, ref_streams);
    } else if (rc == 0) {
        score_result res[MAX_METRICS];
        for (size_t i = 0; i < a.n_metrics && rc == 0; i++)
            if (compute(&res[i], a.metrics[i], &a, &hyps[0], ref_streams) < 0)
                rc = cli_fail("%s: %s", a.hyp_paths[0], mt_last_error());
        if (rc == 0 && a.json) rc = print_json(res, a.n_metrics);
        else if (rc == 0) print_text(res, a.n_metrics);
    }
    mt_comet_free(a.comet);
    mt_spm_pieces_free(spm);
    if (have_src) mt_text_lines_free(&src);
    for (size_t h = 0; h < n_hyps; h++) mt_text_lines_free(&hyps[h]);
    for (size_t r = 0; r < n_read; r++) mt_text_lines_free(&refs[r]);
    return rc;
}

const struct mt_command cmd_score = {
    "score",
    "--hyp FILE [--hyp FILE...] --ref FILE [--ref FILE...] [-m bleu,chrf,chrf++,ter,comet] "
    "[--lowercase] "
    "[--smooth exp|floor|add-k|none] [--tokenize 13a|none|intl|char|zh|flores101|flores200 [--spm "
    "FILE]|ja-mecab] "
    "[--chrf-word-order N] [--ter-normalized] [--ter-no-punct] [--ter-asian-support] "
    "[--ter-case-sensitive] [--paired-bs|--paired-ar [--paired-n N] [--seed N]] [--json] "
    "[-m comet --comet DIR --src FILE [--device cpu|cuda[:N]]]",
    "sacreBLEU-exact BLEU, chrF, chrF++ and TER of translations against references, and COMET; "
    "paired tests between systems (the first is the baseline)",
    run_score,
    .parallel = 0,
};
