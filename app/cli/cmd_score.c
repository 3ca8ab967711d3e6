/* `mtlab score`: BLEU, chrF and chrF++ of a hypothesis file against one or more reference
 * files, printed as `sacrebleu REF... -i HYP -m bleu chrf -f text -w 2` prints them (or, with
 * --json, as its JSON output with -w 2), so the numbers can be pasted next to published ones.
 * --lowercase applies to every metric (sacreBLEU's -lc plus --chrf-lowercase). */
#include "cli/commands.h"
#include "mtlab/error.h"
#include "mtlab/metrics.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum metric { METRIC_BLEU, METRIC_CHRF, METRIC_CHRFPP };
#define MAX_METRICS 8
#define MAX_REFS 64

typedef struct {
    const char *hyp_path;
    const char *ref_paths[MAX_REFS];
    size_t n_refs;
    enum metric metrics[MAX_METRICS];
    size_t n_metrics;
    int lowercase, json;
    mt_bleu_smooth smooth;
} score_args;

static int add_metric(score_args *a, const char *name, size_t len)
{
    static const struct { const char *name; enum metric m; } known[] = {
        {"bleu", METRIC_BLEU}, {"chrf", METRIC_CHRF}, {"chrf++", METRIC_CHRFPP},
    };
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        if (strlen(known[i].name) != len || strncmp(known[i].name, name, len) != 0) continue;
        if (a->n_metrics == MAX_METRICS)
            return cli_fail("score: too many metrics (at most %d)", MAX_METRICS);
        a->metrics[a->n_metrics++] = known[i].m;
        return 0;
    }
    fprintf(stderr, "mtlab score: unknown metric '%.*s' (bleu, chrf, chrf++)\n", (int)len, name);
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
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        int has_value = i + 1 < argc;
        if (!strcmp(o, "--hyp") || !strcmp(o, "-i")) {
            if (!has_value) return cli_usage(&cmd_score);
            a->hyp_path = argv[++i];
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
        } else {
            fprintf(stderr, "mtlab score: unknown argument '%s'\n", o);
            return cli_usage(&cmd_score);
        }
    }
    if (!a->hyp_path || a->n_refs == 0) {
        fprintf(stderr, "mtlab score: %s is missing\n", !a->hyp_path ? "--hyp FILE" : "--ref FILE");
        return cli_usage(&cmd_score);
    }
    if (a->n_metrics == 0) {
        a->metrics[a->n_metrics++] = METRIC_BLEU;
        a->metrics[a->n_metrics++] = METRIC_CHRF;
    }
    return 0;
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
        mt_bleu_opts o = mt_bleu_defaults();
        o.lowercase = a->lowercase;
        o.smooth = a->smooth;
        mt_bleu_score s;
        if (mt_bleu_corpus(&s, hyps, hyp->n, refs, a->n_refs, &o) < 0) return -1;
        snprintf(r->name, sizeof r->name, "BLEU");
        r->score = s.score;
        mt_bleu_signature(r->signature, sizeof r->signature, &o, a->n_refs, 0);
        mt_bleu_verbose(r->verbose, sizeof r->verbose, &s);
        mt_bleu_format(r->line, sizeof r->line, &s, r->signature, 2);
    } else {
        mt_chrf_opts o = m == METRIC_CHRF ? mt_chrf_defaults() : mt_chrfpp_defaults();
        o.lowercase = a->lowercase;
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
        snprintf(rounded, sizeof rounded, "%.2f", res[i].score);
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

static int run_score(int argc, char **argv)
{
    score_args a;
    int rc = parse_args(&a, argc, argv);
    if (rc) return rc;

    mt_text_lines hyp, refs[MAX_REFS];
    const char *const *ref_streams[MAX_REFS];
    if (cli_read_sentences(&hyp, a.hyp_path)) return cli_fail("%s", mt_last_error());
    size_t n_read = 0;
    for (; n_read < a.n_refs && rc == 0; n_read++) {
        if (cli_read_sentences(&refs[n_read], a.ref_paths[n_read])) {
            rc = cli_fail("%s", mt_last_error());
            break;
        }
        ref_streams[n_read] = (const char *const *)refs[n_read].lines;
        if (refs[n_read].n != hyp.n)
            rc = cli_fail("%s has %zu lines but %s has %zu", a.hyp_path, hyp.n,
                          a.ref_paths[n_read], refs[n_read].n);
    }
    if (rc == 0) {
        score_result res[MAX_METRICS];
        for (size_t i = 0; i < a.n_metrics && rc == 0; i++)
            if (compute(&res[i], a.metrics[i], &a, &hyp, ref_streams) < 0)
                rc = cli_fail("%s: %s", a.hyp_path, mt_last_error());
        if (rc == 0 && a.json) rc = print_json(res, a.n_metrics);
        else if (rc == 0) print_text(res, a.n_metrics);
    }
    mt_text_lines_free(&hyp);
    for (size_t r = 0; r < n_read; r++) mt_text_lines_free(&refs[r]);
    return rc;
}

const struct mt_command cmd_score = {
    "score",
    "--hyp FILE --ref FILE [--ref FILE...] [-m bleu,chrf,chrf++] [--lowercase] "
    "[--smooth exp|floor|add-k|none] [--json]",
    "sacreBLEU-exact BLEU, chrF and chrF++ of a translation against references",
    run_score,
    .parallel = 0,
};
