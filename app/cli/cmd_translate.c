/* `mtlab translate`: translate sentences (one per line) or paragraphs (blank-line separated
 * blocks) from a file or stdin with a model bundle, writing one translation per input in
 * input order. Internally the inputs go in windows of 8 batches, sorted by length inside each
 * window so batches pad little; each window's translations are written as soon as it is done. */
#include "cli/commands.h"
#include "cli/translate_input.h"
#include "mtlab/decode.h"
#include "mtlab/device.h"
#include "mtlab/error.h"
#include "mtlab/model.h"
#include "mtlab/tokenizer.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WINDOW_BATCHES 8

typedef struct {
    const char *bundle, *input, *device;
    int beam, max_len, batch, paragraphs, verbose;
} translate_args;

static int parse_args(translate_args *a, int argc, char **argv)
{
    memset(a, 0, sizeof *a);
    a->beam = MT_DECODE_DEFAULT_BEAM;
    a->batch = MT_DECODE_DEFAULT_BATCH;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        int has_value = i + 1 < argc;
        int *num = NULL, most = 0;
        if (!strcmp(o, "-m") || !strcmp(o, "--model")) {
            if (!has_value) return cli_usage(&cmd_translate);
            a->bundle = argv[++i];
        } else if (!strcmp(o, "--device")) {
            if (!has_value) return cli_usage(&cmd_translate);
            a->device = argv[++i];
        } else if (!strcmp(o, "-i") || !strcmp(o, "--input")) {
            if (!has_value) return cli_usage(&cmd_translate);
            a->input = argv[++i];
        } else if (!strcmp(o, "--beam")) {
            num = &a->beam, most = MT_DECODE_MAX_BEAM;
        } else if (!strcmp(o, "--max-len")) {
            num = &a->max_len, most = 65536;
        } else if (!strcmp(o, "--batch")) {
            num = &a->batch, most = 4096;
        } else if (!strcmp(o, "--paragraphs")) {
            a->paragraphs = 1;
        } else if (!strcmp(o, "--verbose") || !strcmp(o, "-v")) {
            a->verbose = 1;
        } else {
            fprintf(stderr, "mtlab translate: unknown argument '%s'\n", o);
            return cli_usage(&cmd_translate);
        }
        if (num) {
            if (!has_value) return cli_usage(&cmd_translate);
            if (cli_option_int("translate", o, argv[++i], 1, most, num)) return 2;
        }
    }
    if (!a->bundle) return cli_usage(&cmd_translate);
    return 0;
}

/* Every non-blank line must be text the tokenizer takes (valid UTF-8), named by its line. */
static int check_lines(const mt_tokenizer *tok, const tr_lines *in, const char *name)
{
    for (size_t i = 0; i < in->n; i++) {
        if (tr_is_blank(in->lines[i])) continue;
        int *ids;
        size_t n;
        if (mt_tokenizer_encode(tok, in->lines[i], &ids, &n))
            return cli_fail("%s:%zu: %s", name, i + 1, mt_last_error());
        free(ids);
    }
    return 0;
}

typedef struct {
    size_t inputs, tokens;
    double seconds;
    size_t state_bytes;
} totals;

/* Translate units [first, first + count) and write them (blank units stay empty). */
static int translate_window(mt_model *m, const mt_tokenizer *tok, const tr_units *u,
                            size_t first, size_t count, const translate_args *a,
                            const char *name, totals *sum)
{
    const char **texts = mt_xmalloc(count * sizeof *texts);
    size_t *which = mt_xmalloc(count * sizeof *which);
    int n = 0;
    for (size_t i = first; i < first + count; i++) {
        if (tr_is_blank(u->units[i].text)) continue;
        texts[n] = u->units[i].text;
        which[n++] = i;
    }
    mt_decode_opts o;
    mt_decode_opts_init(&o);
    o.beam = a->beam;
    o.max_new_tokens = a->max_len;
    mt_decode_result res;
    int rc = 0;
    if (mt_translate(m, tok, texts, n, a->batch, &o, &res)) {
        if (res.failed_input < 0) {
            rc = cli_fail("%s", mt_last_error());
        } else {
            /* the message starts "input N: "; the line number says it better */
            const char *msg = mt_last_error(), *colon = strstr(msg, ": ");
            if (!strncmp(msg, "input ", 6) && colon) msg = colon + 2;
            rc = cli_fail("%s:%zu: %s", name, u->units[which[res.failed_input]].line, msg);
        }
    } else {
        int k = 0;
        for (size_t i = first; i < first + count; i++) {
            if (u->paragraphs && i > 0) putchar('\n');
            int filled = k < n && which[k] == i;
            puts(filled ? res.hyps[k].text : "");
            k += filled;
        }
        fflush(stdout);
        sum->inputs += (size_t)n;
        sum->tokens += res.tokens;
        sum->seconds += res.seconds;
        if (res.state_bytes > sum->state_bytes) sum->state_bytes = res.state_bytes;
        mt_decode_result_free(&res);
    }
    free(texts);
    free(which);
    return rc;
}

static int translate(const translate_args *a)
{
    char tok_path[PATH_MAX];
    if ((size_t)snprintf(tok_path, sizeof tok_path, "%s/tokenizer.model", a->bundle) >=
        sizeof tok_path)
        return cli_fail("%s: path too long", a->bundle);
    const mt_backend *be = mt_backend_for(a->device, 0);
    if (!be) return cli_fail("%s", mt_last_error());
    mt_model *m = mt_model_load(a->bundle, be, 0);
    if (!m) return cli_fail("%s", mt_last_error());
    mt_tokenizer *tok = mt_tokenizer_load(tok_path);
    if (!tok) {
        mt_model_free(m);
        return cli_fail("%s", mt_last_error());
    }
    const char *name = a->input ? a->input : "<stdin>";
    FILE *f = a->input ? fopen(a->input, "rb") : stdin;
    int rc = 0;
    tr_lines in = {0};
    if (!f) rc = cli_fail("%s: %s", a->input, strerror(errno));
    else if (tr_read_lines(&in, f, name)) rc = cli_fail("%s", mt_last_error());
    if (f && f != stdin) fclose(f);
    if (rc == 0) rc = check_lines(tok, &in, name);
    tr_units u = {0};
    totals sum = {0};
    if (rc == 0) {
        int paragraphs = a->paragraphs || tr_has_paragraphs((const char *const *)in.lines, in.n);
        tr_split(&u, (const char *const *)in.lines, in.n, paragraphs);
        size_t window = (size_t)a->batch * WINDOW_BATCHES;
        for (size_t first = 0; rc == 0 && first < u.n; first += window) {
            size_t count = u.n - first < window ? u.n - first : window;
            rc = translate_window(m, tok, &u, first, count, a, name, &sum);
        }
    }
    if (rc == 0 && a->verbose)
        fprintf(stderr, "mtlab translate: %zu inputs, %zu tokens in %.2f s (%.1f tokens/s), "
                "beam %d, batch %d, decoding state up to %.1f MiB\n", sum.inputs, sum.tokens,
                sum.seconds, sum.seconds > 0 ? (double)sum.tokens / sum.seconds : 0.0, a->beam,
                a->batch, (double)sum.state_bytes / (1024.0 * 1024.0));
    tr_units_free(&u);
    tr_lines_free(&in);
    mt_tokenizer_free(tok);
    mt_model_free(m);
    return rc;
}

static int run(int argc, char **argv)
{
    translate_args a;
    int rc = parse_args(&a, argc, argv);
    return rc ? rc : translate(&a);
}

const struct mt_command cmd_translate = {
    .name = "translate",
    .args = "-m BUNDLE [-i FILE] [--device cpu|cuda[:N]] [--beam N] [--max-len N] [--batch N] [--paragraphs] "
            "[--verbose]",
    .summary = "translate sentences (one per line) or paragraphs from FILE or stdin",
    .run = run,
};
