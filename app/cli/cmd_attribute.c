/* `mtlab attribute`: which source tokens made a model write each target token — gradient
 * attribution (mtlab/attribution.h, docs/attribution.md) of the source on stdin and the
 * model's greedy translation of it (or --hyp), as a CSV of raw values: the first row the
 * input tokens (source side, then the target side), the first column the target tokens. */
#include "cli/commands.h"
#include "mtlab/attribution.h"
#include "mtlab/decode.h"
#include "mtlab/error.h"
#include "mtlab/runner.h"
#include "mtlab/tokenizer.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Ctrl-C's flag: the attribution's cancel flag (mt_attr_opts.cancel), checked before every
 * backward pass and by the greedy decode. A lock-free atomic store is safe in a handler. */
static atomic_int interrupted;

static void on_sigint(int sig)
{
    (void)sig;
    atomic_store(&interrupted, 1);
}

/* mt_attribute with Ctrl-C stopping it between passes (the handler installed only meanwhile, so
 * reading stdin and loading the bundle still end the process at once). */
static int attribute_interruptible(mt_model *m, const int32_t *src, int n_src, const int32_t *hyp,
                                   int n_hyp, mt_attr_opts *o, mt_attribution *a)
{
    struct sigaction old;
    atomic_store(&interrupted, 0);
    cli_sigint_catch(on_sigint, &old);
    o->cancel = &interrupted;
    if (o->method == MT_ATTR_INTEGRATED_GRADIENTS)
        fprintf(stderr,
                "attribute: integrated gradients, %d steps per target token, %s rule (Ctrl-C "
                "stops)\n",
                o->steps ? o->steps : MT_ATTR_DEFAULT_STEPS, mt_attr_rule_name(o->rule));
    int rc = mt_attribute(m, src, n_src, hyp, n_hyp, o, a);
    cli_sigint_restore(&old);
    o->cancel = NULL;
    return rc;
}

/* All of stdin without its trailing newlines (malloc'd). */
static char *read_stdin(void)
{
    size_t len = 0, cap = 4096;
    char *text = mt_xmalloc(cap);
    size_t n;
    while ((n = fread(text + len, 1, cap - len - 1, stdin)) > 0) {
        len += n;
        if (cap - len < 2) text = mt_xrealloc(text, cap *= 2);
    }
    while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == '\r')) len--;
    text[len] = '\0';
    return text;
}

/* A CSV field: quoted when it holds a comma, a quote or a line break (RFC 4180). */
static void csv_field(FILE *f, const char *s)
{
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static const char *piece(const mt_tokenizer *tok, int32_t id)
{
    const char *p = mt_tokenizer_id_to_piece(tok, id);
    return p ? p : "?";
}

static int write_csv(const char *path, const mt_attribution *a, const mt_tokenizer *tok)
{
    FILE *f = cli_create(path);
    if (!f) return 1;
    fputs("target\\input", f);
    for (int c = 0; c < a->cols; c++) {
        fputc(',', f);
        csv_field(f, piece(tok, a->col_ids[c]));
    }
    fputc('\n', f);
    for (int r = 0; r < a->rows; r++) {
        csv_field(f, piece(tok, a->row_ids[r]));
        for (int c = 0; c < a->cols; c++) fprintf(f, ",%.9g", a->values[(size_t)r * a->cols + c]);
        fputc('\n', f);
    }
    return cli_close_output(f, path);
}

/* Integrated gradients' completeness per row: the attributions' sum against the change of the
 * log-prob from the baseline to the input. */
static void print_completeness(const mt_attribution *a, const mt_tokenizer *tok)
{
    double worst = 0.0;
    printf("completeness (%d steps, %s rule): sum of attributions vs log-prob(input) - "
           "log-prob(baseline)\n",
           a->steps, mt_attr_rule_name(a->rule));
    for (int r = 0; r < a->rows; r++) {
        double sum = mt_attribution_row_sum(a, r), change = a->logp[r] - a->logp_baseline[r];
        double err = fabs(sum - change) / (fabs(change) > 1e-12 ? fabs(change) : 1e-12);
        if (err > worst) worst = err;
        printf("  %-16s %12.6f %12.6f  %.2f%%\n", piece(tok, a->row_ids[r]), sum, change,
               100.0 * err);
    }
    printf("completeness: worst relative error %.2f%% over %d rows\n", 100.0 * worst, a->rows);
}

static int run_attribute(int argc, char **argv)
{
    const char *bundle = NULL, *device = NULL, *csv = NULL, *hyp_text = NULL;
    const char *contrast = NULL, *method = "saliency", *baseline = "pad", *rule = NULL;
    int steps = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int more = i + 1 < argc;
        if (!strcmp(a, "-m") && more) bundle = argv[++i];
        else if (!strcmp(a, "--device") && more) device = argv[++i];
        else if (!strcmp(a, "--csv") && more) csv = argv[++i];
        else if (!strcmp(a, "--hyp") && more) hyp_text = argv[++i];
        else if (!strcmp(a, "--contrast") && more) contrast = argv[++i];
        else if (!strcmp(a, "--method") && more) method = argv[++i];
        else if (!strcmp(a, "--baseline") && more) baseline = argv[++i];
        else if (!strcmp(a, "--rule") && more) rule = argv[++i];
        else if (!strcmp(a, "--steps") && more) {
            int rc =
                cli_option_int("attribute", "--steps", argv[++i], 1, MT_ATTR_MAX_STEPS, &steps);
            if (rc) return rc;
        } else return cli_usage(&cmd_attribute);
    }
    if (!bundle || !csv) return cli_usage(&cmd_attribute);
    mt_attr_opts o;
    mt_attr_opts_init(&o);
    if (mt_attr_method_parse(method, &o.method)) return cli_fail("attribute: %s", mt_last_error());
    if (!strcmp(baseline, "zero")) o.baseline = MT_ATTR_BASELINE_ZERO;
    else if (strcmp(baseline, "pad"))
        return cli_fail("attribute: --baseline '%s' is not zero or pad", baseline);
    if (steps && o.method != MT_ATTR_INTEGRATED_GRADIENTS)
        return cli_fail("attribute: --steps is for --method integrated_gradients");
    o.steps = steps;
    if (rule && o.method != MT_ATTR_INTEGRATED_GRADIENTS)
        return cli_fail("attribute: --rule is for --method integrated_gradients");
    if (rule && mt_attr_rule_parse(rule, &o.rule))
        return cli_fail("attribute: %s", mt_last_error());

    int rc = 1;
    char *src_text = read_stdin();
    int *src = NULL, *hyp = NULL;
    size_t n_src = 0, n_hyp = 0;
    int32_t *src32 = NULL, *hyp32 = NULL;
    mt_attribution a = {0};
    mt_runner *r = mt_runner_open(bundle, device, 0);
    if (!r) {
        cli_fail("%s", mt_last_error());
        goto done;
    }
    o.vocab_limit = mt_tokenizer_vocab_size(r->tok);
    if (contrast && (o.contrast = mt_tokenizer_find_token(r->tok, contrast)) < 0) {
        cli_fail("attribute: --contrast %s", mt_last_error());
        goto done;
    }
    if (mt_source_encode(r->model, r->tok, src_text, &src, &n_src) < 0) {
        cli_fail("attribute: the source on stdin: %s", mt_last_error());
        goto done;
    }
    if (hyp_text && mt_tokenizer_encode(r->tok, hyp_text, &hyp, &n_hyp) < 0) {
        cli_fail("attribute: --hyp: %s", mt_last_error());
        goto done;
    }
    src32 = mt_xmalloc((n_src + 1) * sizeof *src32);
    hyp32 = mt_xmalloc((n_hyp + 1) * sizeof *hyp32);
    for (size_t i = 0; i < n_src; i++) src32[i] = src[i];
    for (size_t i = 0; i < n_hyp; i++) hyp32[i] = hyp[i];
    if (attribute_interruptible(r->model, src32, (int)n_src, hyp_text ? hyp32 : NULL, (int)n_hyp,
                                &o, &a)) {
        if (atomic_load(&interrupted)) {
            cli_fail("attribute: interrupted: %s; no CSV written", mt_last_error());
            rc = 130; /* as a shell reports a process Ctrl-C ended, and `mtlab run` */
        } else cli_fail("attribute: %s", mt_last_error());
        goto done;
    }
    if (write_csv(csv, &a, r->tok)) goto done;
    printf("%s: %s of %d target tokens over %d inputs (%d on the source side) -> %s\n", bundle,
           mt_attr_method_name(a.method), a.rows, a.cols, a.n_src, csv);
    if (o.contrast >= 0)
        printf("contrast: every row attributes log p(target) - log p(%s)\n",
               piece(r->tok, o.contrast));
    if (a.method == MT_ATTR_INTEGRATED_GRADIENTS) print_completeness(&a, r->tok);
    rc = 0;
done:
    mt_attribution_free(&a);
    free(src_text);
    free(src);
    free(hyp);
    free(src32);
    free(hyp32);
    mt_runner_close(r);
    return rc;
}

const struct mt_command cmd_attribute = {
    "attribute",
    "-m BUNDLE [--device cpu|cuda[:N]] [--method saliency|input_x_gradient|integrated_gradients]\n"
    "  [--steps N] [--rule adaptive|gauss-legendre] [--baseline zero|pad] [--hyp TEXT]\n"
    "  [--contrast TOKEN] --csv FILE   (source on stdin)\n"
    "  rows: each target token (the model's greedy translation, or --hyp, then <eos>); columns:\n"
    "  the source-side inputs, then the target-side ones; raw values (docs/attribution.md).\n"
    "  integrated_gradients (--steps gradient evaluations per row, default 64; nodes placed by\n"
    "  --rule, default adaptive) prints its completeness check",
    "gradient attribution of a translation onto its source tokens, as CSV",
    run_attribute,
    .parallel = 1,
};
