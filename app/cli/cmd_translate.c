/* `mtlab translate`: translate sentences (one per line, one output line per input line) or,
 * with --paragraphs, paragraphs (blank-line separated blocks) from a file or stdin with a model
 * bundle, writing one translation per input in input order. Internally the inputs go in windows of
 * 8 batches, sorted by length inside each window so batches pad little; each window's translations
 * are written as soon as it is done. Ctrl-C stops the window being translated: the windows
 * written before it stay, whole, and the command exits 130. */
#include "cli/commands.h"
#include "common/translate_input.h"
#include "mtlab/decode.h"
#include "mtlab/error.h"
#include "mtlab/files.h"
#include "mtlab/runner.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WINDOW_BATCHES 8
#define STATUS_INTERRUPTED 130 /* as a shell reports a process Ctrl-C ended, and `mtlab run` */

/* Ctrl-C's flag: the decode's cancel flag (mt_decode_opts.cancel), checked before every step.
 * A lock-free atomic store is safe in a handler. */
static atomic_int interrupted;

static void on_sigint(int sig)
{
    (void)sig;
    atomic_store(&interrupted, 1);
}

typedef struct {
    const char *bundle, *input, *device;
    int runner_flags; /* MT_RUNNER_INT8 / MT_RUNNER_BF16 from --precision */
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
            /* one model: `mtlab eval -m A -m B` is the command that compares several */
            if (a->bundle) {
                fprintf(stderr,
                        "mtlab translate: -m given twice (%s, then %s): translate takes one "
                        "model (mtlab eval -m A -m B compares several)\n",
                        a->bundle, argv[i + 1]);
                return 2;
            }
            a->bundle = argv[++i];
        } else if (!strcmp(o, "--device")) {
            if (!has_value) return cli_usage(&cmd_translate);
            a->device = argv[++i];
        } else if (!strcmp(o, "--precision")) {
            if (!has_value) return cli_usage(&cmd_translate);
            a->runner_flags = mt_runner_precision_flags(argv[++i]);
            if (a->runner_flags < 0) return cli_fail("%s", mt_last_error());
        } else if (!strcmp(o, "-i") || !strcmp(o, "--input")) {
            if (!has_value) return cli_usage(&cmd_translate);
            if (a->input) {
                fprintf(stderr, "mtlab translate: -i given twice (%s, then %s)\n", a->input,
                        argv[i + 1]);
                return 2;
            }
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

typedef struct {
    size_t inputs, tokens;
    double seconds;
    size_t state_bytes;
} totals;

/* The non-blank units, encoded and checked by the engine before anything is translated:
 * src[k] is unit which[k]. */
typedef struct {
    mt_sources src;
    size_t *which;
} encoded_units;

static int encode_units(encoded_units *e, const mt_runner *r, const tr_units *u,
                        const mt_decode_opts *o, const char *name)
{
    const char **texts = mt_xmalloc((u->n + 1) * sizeof *texts);
    e->which = mt_xmalloc((u->n + 1) * sizeof *e->which);
    int n = 0, bad;
    for (size_t i = 0; i < u->n; i++) {
        if (tr_is_blank(u->units[i].text)) continue;
        texts[n] = u->units[i].text;
        e->which[n++] = i;
    }
    int rc = 0;
    if (mt_sources_encode(&e->src, r->model, r->tok, texts, n, o, &bad))
        rc = bad < 0 ? cli_fail("%s", mt_last_error())
                     : cli_fail("%s:%zu: %s", name, u->units[e->which[bad]].line, mt_last_error());
    free(texts);
    return rc;
}

/* What stays the same for every window of one input: the model, its units and their
 * encoded sources, the options, the input's name for messages. */
typedef struct {
    const mt_runner *r;
    const tr_units *u;
    const encoded_units *e;
    const mt_decode_opts *o;
    const translate_args *a;
    const char *name;
} tr_run;

/* Translate units [first, first + count) and write them (blank units stay empty); their
 * sources are e->src from index k on. A Ctrl-C that cancelled the decode leaves the window
 * unwritten (STATUS_INTERRUPTED); one after it waits until the window is written. */
static int translate_window(const tr_run *t, size_t *k, size_t first, size_t count, totals *sum)
{
    const mt_runner *r = t->r;
    const tr_units *u = t->u;
    const encoded_units *e = t->e;
    const char *name = t->name;
    size_t k0 = *k, n = 0;
    while (k0 + n < (size_t)e->src.n && e->which[k0 + n] < first + count) n++;
    *k = k0 + n;
    mt_decode_result res;
    if (mt_translate_ids(r->model, r->tok, (const int32_t *const *)e->src.ids + k0, e->src.len + k0,
                         (int)n, t->a->batch, t->o, &res)) {
        if (res.failed_input < 0) return cli_fail("%s", mt_last_error());
        return cli_fail("%s:%zu: %s", name, u->units[e->which[k0 + (size_t)res.failed_input]].line,
                        mt_last_error());
    }
    if (res.cancelled) {
        mt_decode_result_free(&res);
        return STATUS_INTERRUPTED;
    }
    cli_sigint_hold(1);
    size_t j = 0;
    for (size_t i = first; i < first + count; i++) {
        if (u->paragraphs && i > 0) putchar('\n');
        int filled = j < n && e->which[k0 + j] == i;
        puts(filled ? res.hyps[j].text : "");
        j += filled;
    }
    int rc = cli_stdout_check(); /* a full disk stops the translation at once */
    cli_sigint_hold(0);
    sum->inputs += n;
    sum->tokens += res.tokens;
    sum->seconds += res.seconds;
    if (res.state_bytes > sum->state_bytes) sum->state_bytes = res.state_bytes;
    mt_decode_result_free(&res);
    return rc;
}

static int translate(const translate_args *a)
{
    mt_runner *r = mt_runner_open(a->bundle, a->device, (unsigned)a->runner_flags);
    if (!r) return cli_fail("%s", mt_last_error());
    const char *name = a->input ? a->input : "<stdin>";
    FILE *f = a->input ? mt_file_fopen(a->input, MT_FILE_STREAM) : stdin;
    int rc = 0;
    tr_lines in = {0};
    if (!f) rc = cli_fail("%s", mt_last_error());
    else if (tr_read_lines(&in, f, name)) rc = cli_fail("%s", mt_last_error());
    if (f && f != stdin) fclose(f);
    tr_units u = {0};
    encoded_units e = {0};
    totals sum = {0};
    mt_decode_opts o;
    mt_decode_opts_init(&o);
    o.beam = a->beam;
    o.max_new_tokens = a->max_len;
    if (rc == 0) {
        tr_split(&u, (const char *const *)in.lines, in.n, a->paragraphs);
        rc = encode_units(&e, r, &u, &o, name);
        size_t window = (size_t)a->batch * WINDOW_BATCHES, k = 0, first = 0;
        tr_run run = {r, &u, &e, &o, a, name};
        /* Ctrl-C stops decoding (the handler installed only meanwhile, so reading the input
         * and loading the bundle still end the process at once) */
        struct sigaction old;
        atomic_store(&interrupted, 0);
        cli_sigint_catch(on_sigint, &old);
        o.cancel = &interrupted;
        while (rc == 0 && first < u.n) {
            size_t count = u.n - first < window ? u.n - first : window;
            rc = atomic_load(&interrupted) ? STATUS_INTERRUPTED
                                           : translate_window(&run, &k, first, count, &sum);
            if (rc == 0) first += count;
        }
        cli_sigint_restore(&old);
        if (rc == STATUS_INTERRUPTED)
            fprintf(stderr,
                    "mtlab translate: interrupted (Ctrl-C): the first %zu of %zu %s translated "
                    "and written\n",
                    first, u.n, a->paragraphs ? "paragraphs" : "lines");
    }
    if (rc == 0 && a->verbose)
        fprintf(stderr,
                "mtlab translate: %zu inputs, %zu tokens in %.2f s (%.1f tokens/s), "
                "beam %d, batch %d, decoding state up to %.1f MiB\n",
                sum.inputs, sum.tokens, sum.seconds,
                sum.seconds > 0 ? (double)sum.tokens / sum.seconds : 0.0, a->beam, a->batch,
                (double)sum.state_bytes / (1024.0 * 1024.0));
    mt_sources_free(&e.src);
    free(e.which);
    tr_units_free(&u);
    tr_lines_free(&in);
    mt_runner_close(r);
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
    .args = "-m BUNDLE [-i FILE] [--device cpu|cuda[:N]] [--precision fp32|int8|bf16] [--beam N] "
            "[--max-len N] [--batch N] [--paragraphs] "
            "[--verbose]",
    .summary = "translate sentences (one per line) or paragraphs from FILE or stdin",
    .run = run,
    .parallel = 1,
};
