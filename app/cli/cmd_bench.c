/* `mtlab bench` (what `make bench` runs): speed figures and ratios measured in one run, never
 * pass/fail. Four modes:
 *   mtlab bench [--repeat N] [--only SECTION] [--verbose]
 *                                               the seven sections (app/bench/bench_report.c)
 *   mtlab bench --make-bundles DIR              random-weight small bundles for the peers
 *   mtlab bench --peer-inputs FILE -m BUNDLE    tokens/s on a file of token-id sources,
 *               [--new-tokens N] [--batch N]    the figure `make bench-peers` compares;
 *               [--precision fp32|int8|bf16]
 *               [--tokens-out FILE]             the ids it generated (`make test-peers`)
 *   mtlab bench --device cuda[:N]               the GPU report `make bench-cuda` prints
 *               [--torch-json FILE]             (app/bench/bench_cuda.c); --only kernels,
 *               [--only kernels|decode|train]   decode or train picks its sections
 *   mtlab bench --only comet [--device cuda[:N]]  COMET segments/s at wmt22-comet-da's size
 *                                               (app/bench/bench_comet.c)
 *   mtlab bench --only ranks                    data-parallel step time and all-reduce share,
 *                                               1 and 2 ranks (app/bench/bench_ranks.c)
 *   mtlab bench --only length [-m BUNDLE|PRESET]... [--max-len N]
 *                                               decoding ms per token against source length
 *                                               and the crossover (app/bench/bench_length.c) */
#include "bench/bench.h"
#include "cli/commands.h"
#include "mtlab/error.h"

#include <stdio.h>
#include <string.h>

#define MAX_MODELS 8

typedef struct {
    const char *make_bundles, *peer_inputs, *bundle, *device, *torch_json, *tokens_out;
    const char *models[MAX_MODELS]; /* every -m, in order */
    int n_models;
    int new_tokens, batch, new_tokens_set, precision_set;
    mt_precision precision;
    bench_opts o;
} bench_args;

static const struct {
    const char *name;
    unsigned bit;
} sections[] = {{"gemm", BENCH_GEMM},
                {"decode", BENCH_DECODE},
                {"roofline", BENCH_ROOFLINE},
                {"state", BENCH_STATE},
                {"probes", BENCH_PROBES},
                {"int8", BENCH_INT8},
                {"prefill", BENCH_PREFILL},
                {"attribution", BENCH_ATTRIBUTION},
                {"length", BENCH_LENGTH}, /* decoding against source length */
                {"kernels", BENCH_CUDA_KERNELS},
                {"train", BENCH_CUDA_TRAIN},
                {"comet", BENCH_COMET},
                {"ranks", BENCH_RANKS}};

/* Add the section named s to the mask, or -1 with a message. */
static int add_section(const char *s, unsigned *mask)
{
    for (size_t i = 0; i < sizeof sections / sizeof sections[0]; i++)
        if (!strcmp(s, sections[i].name)) {
            *mask |= sections[i].bit;
            return 0;
        }
    fprintf(stderr,
            "mtlab bench: --only takes gemm, decode, roofline, state, probes, int8, prefill, "
            "attribution, length, comet or ranks (with --device: kernels, decode, train or comet), "
            "got '%s'\n",
            s);
    return -1;
}

static int parse_args(bench_args *a, int argc, char **argv)
{
    *a = (bench_args){.new_tokens = 64, .batch = 16, .o = {.repeat = 3}};
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        if (!strcmp(o, "--verbose") || !strcmp(o, "-v")) {
            a->o.verbose = 1;
            continue;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "mtlab bench: '%s' needs a value\n", o);
            return cli_usage(&cmd_bench);
        }
        const char *v = argv[++i];
        if (!strcmp(o, "--make-bundles")) a->make_bundles = v;
        else if (!strcmp(o, "--peer-inputs")) a->peer_inputs = v;
        else if (!strcmp(o, "-m") || !strcmp(o, "--model")) {
            if (a->n_models == MAX_MODELS) {
                fprintf(stderr, "mtlab bench: at most %d -m\n", MAX_MODELS);
                return 2;
            }
            a->bundle = a->models[a->n_models++] = v;
        } else if (!strcmp(o, "--max-len")) {
            if (cli_option_int("bench", o, v, 64, 1 << 20, &a->o.max_len)) return 2;
        } else if (!strcmp(o, "--device")) a->device = v;
        else if (!strcmp(o, "--torch-json")) a->torch_json = v;
        else if (!strcmp(o, "--precision")) {
            if (mt_precision_parse(v, &a->precision)) return cli_fail("bench: %s", mt_last_error());
            a->precision_set = 1;
        } else if (!strcmp(o, "--tokens-out")) a->tokens_out = v;
        else if (!strcmp(o, "--repeat")) {
            if (cli_option_int("bench", o, v, 1, 100, &a->o.repeat)) return 2;
        } else if (!strcmp(o, "--only")) {
            if (add_section(v, &a->o.sections)) return 2;
        } else if (!strcmp(o, "--new-tokens")) {
            if (cli_option_int("bench", o, v, 1, 4096, &a->new_tokens)) return 2;
            a->new_tokens_set = 1;
        } else if (!strcmp(o, "--batch")) {
            if (cli_option_int("bench", o, v, 1, 4096, &a->batch)) return 2;
        } else {
            fprintf(stderr, "mtlab bench: unknown argument '%s'\n", o);
            return cli_usage(&cmd_bench);
        }
    }
    if (a->make_bundles && (a->peer_inputs || a->bundle)) {
        fprintf(stderr, "mtlab bench: --make-bundles goes alone\n");
        return 2;
    }
    if (a->torch_json && !a->device) {
        fprintf(stderr, "mtlab bench: --torch-json goes with --device cuda[:N]\n");
        return 2;
    }
    if (a->device && (a->make_bundles || a->peer_inputs)) {
        fprintf(stderr, "mtlab bench: --device runs the GPU report alone (no --peer-inputs or "
                        "--make-bundles)\n");
        return 2;
    }
    unsigned cpu_only = (BENCH_ALL & ~BENCH_DECODE) | BENCH_RANKS,
             cuda_only = BENCH_CUDA_KERNELS | BENCH_CUDA_TRAIN;
    if (a->o.sections & (a->device ? cpu_only : cuda_only)) {
        fprintf(stderr, "mtlab bench: --only %s goes %s --device\n",
                a->device ? "gemm, roofline, state, probes, int8, prefill, attribution, length "
                            "or ranks"
                          : "kernels or train",
                a->device ? "without" : "with");
        return 2;
    }
    if (a->tokens_out && !a->peer_inputs) {
        fprintf(stderr, "mtlab bench: --tokens-out goes with --peer-inputs\n");
        return 2;
    }
    if (a->peer_inputs && a->n_models != 1) {
        fprintf(stderr, "mtlab bench: --peer-inputs takes one -m BUNDLE\n");
        return 2;
    }
    /* Table 4 on the device, narrowed: one architecture, one precision, fewer new tokens */
    int device_decode = a->device && a->o.sections == BENCH_DECODE;
    if (a->device && (a->bundle || a->precision_set || a->new_tokens_set) && !device_decode) {
        fprintf(stderr, "mtlab bench: with --device, -m, --precision and --new-tokens go with "
                        "--only decode\n");
        return 2;
    }
    if (device_decode && a->n_models > 1) {
        fprintf(stderr, "mtlab bench: --device --only decode takes one -m (mamba or "
                        "transformer++)\n");
        return 2;
    }
    if (device_decode && a->bundle && strcmp(a->bundle, "mamba") &&
        strcmp(a->bundle, "transformer++")) {
        fprintf(stderr, "mtlab bench: -m '%s': Table 4's rows are mamba and transformer++\n",
                a->bundle);
        return 2;
    }
    if (device_decode && a->precision_set && a->precision != MT_PRECISION_FP32 &&
        a->precision != MT_PRECISION_BF16) {
        fprintf(stderr, "mtlab bench: --precision %s: Table 4 decodes in fp32 or bf16\n",
                mt_precision_name(a->precision));
        return 2;
    }
    if (device_decode && a->new_tokens_set && a->new_tokens < 2) {
        fprintf(stderr, "mtlab bench: --new-tokens %d: a step time needs at least 2\n",
                a->new_tokens);
        return 2;
    }
    if (a->bundle && !a->peer_inputs && a->o.sections != BENCH_LENGTH && !device_decode) {
        fprintf(stderr, "mtlab bench: -m goes with --peer-inputs, or with --only length\n");
        return 2;
    }
    if (a->o.max_len && a->o.sections && !(a->o.sections & BENCH_LENGTH)) {
        fprintf(stderr, "mtlab bench: --max-len goes with --only length\n");
        return 2;
    }
    a->o.models = a->models;
    a->o.n_models = a->peer_inputs ? 0 : a->n_models;
    if (!a->o.sections) a->o.sections = a->device ? BENCH_CUDA_ALL : BENCH_ALL;
    return 0;
}

static int run_bench(int argc, char **argv)
{
    bench_args a;
    int rc = parse_args(&a, argc, argv);
    if (rc) return rc;
    if (a.make_bundles) {
        if (bench_make_bundles(a.make_bundles)) return cli_fail("%s", mt_last_error());
        printf("%s/transformer-small and %s/mamba-small written\n", a.make_bundles, a.make_bundles);
        return 0;
    }
    if (a.o.sections & BENCH_RANKS) {
        if (bench_run_ranks(a.o.repeat)) return cli_fail("%s", mt_last_error());
        if (!(a.o.sections &= ~BENCH_RANKS)) return 0;
    }
    if (a.o.sections & BENCH_COMET) {
        if (bench_run_comet(a.device, a.o.repeat)) return cli_fail("%s", mt_last_error());
        if (!(a.o.sections &= ~BENCH_COMET)) return 0;
    }
    if (a.device) {
        bench_cuda_decode d = {.arch = a.bundle,
                               .precision_set = a.precision_set,
                               .precision = a.precision,
                               .new_tokens = a.new_tokens_set ? a.new_tokens : 0};
        rc = bench_run_cuda(a.device, a.torch_json, a.o.repeat, a.o.sections, &d);
    } else if (a.peer_inputs)
        rc = bench_run_peer(a.bundle, a.peer_inputs, a.tokens_out, a.new_tokens, a.batch,
                            a.o.repeat, a.precision);
    else rc = bench_run_all(&a.o);
    return rc ? cli_fail("%s", mt_last_error()) : 0;
}

const struct mt_command cmd_bench = {
    "bench",
    "[--repeat N] [--only gemm|decode|roofline|state|probes|int8|prefill|attribution|length|comet|"
    "ranks "
    "...] [--verbose] | "
    "--make-bundles DIR | "
    "--peer-inputs FILE -m BUNDLE [--new-tokens N] [--batch N] [--precision fp32|int8|bf16] "
    "[--repeat N] [--tokens-out FILE] | "
    "--only length [-m BUNDLE|PRESET]... [--max-len N] | "
    "--device cuda[:N] [--torch-json FILE] [--repeat N] [--only kernels|decode|train|comet] "
    "[-m mamba|transformer++ --precision fp32|bf16 --new-tokens N: with --only decode]",
    "speed figures: training gemm rate, decode tokens/s, roofline, state memory",
    run_bench,
    .parallel = 1,
};
