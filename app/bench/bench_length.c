/* `mtlab bench --only length`: decoding tokens/s against source length (docs/decoding.md §10).
 * A Mamba's decoding state has a fixed size, so its cost per generated token stays flat however
 * long the source was; a transformer's grows with it (cross-attention over the source's keys,
 * or self-attention over a prompt's KV cache). Per model and length: one batch-1 greedy decode
 * of LENGTH_NEW tokens after a prefill of the source (a decoder-only model's prompt `src
 * <sep>`), timed apart; the step seconds over the LENGTH_NEW - 1 steps are the figure. The models
 * take turns inside each round, so load from the rest of the machine lands on all of them; one
 * warm-up decode per model, on the shortest source (the long prefills are most of the time). */
#include "bench/bench.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mtlab/error.h"
#include "mtlab/tokenizer.h"

#define LENGTH_NEW 32 /* generated tokens per decode (31 timed steps) */
#define LENGTH_MIN 64

static const char *const default_models[] = {"mamba-small", "transformer-small",
                                             "transformer++-small"};

int bench_crossover(const int *lens, const double *ref, const double *other, int n, double *at)
{
    int prev = -1; /* the last length both measured */
    for (int i = 0; i < n; i++) {
        if (ref[i] <= 0 || other[i] <= 0) continue; /* refused */
        if (ref[i] < other[i]) {
            if (prev < 0) {
                *at = lens[i];
                return 1;
            }
            /* where the difference of the two costs changes sign, linear in log2(length) */
            double d0 = ref[prev] - other[prev], d1 = ref[i] - other[i];
            double l0 = log2(lens[prev]), l1 = log2(lens[i]);
            *at = exp2(l0 + (l1 - l0) * d0 / (d0 - d1));
            return 2;
        }
        prev = i;
    }
    return 0;
}

/* A model named on the command line: a bundle directory (it has a config.json) or a preset
 * (random weights, its position table stretched to hold max_len + LENGTH_NEW positions). */
static mt_model *length_model(const char *name, int max_len)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", name);
    FILE *f = fopen(path, "r");
    if (f) {
        fclose(f);
        return mt_model_load(name, mt_backend_cpu(), MT_MODEL_LOAD_NO_TOKENIZER);
    }
    mt_model_config cfg;
    if (mt_model_preset(&cfg, name))
        return mt_error_context("no bundle there (%s: not found)", path), NULL;
    if (cfg.max_positions < max_len + LENGTH_NEW + 2) cfg.max_positions = max_len + LENGTH_NEW + 2;
    return mt_model_create(&cfg, mt_backend_cpu(), 1);
}

/* Wall and CPU seconds per generated token of one decode from a source of len ids (sec[0],
 * sec[1]); -1 with refused set (mt_last_error's text) when the model will not take it. */
static int per_token(mt_model *m, const int32_t *words, int len, double sec[2], char *refused,
                     size_t cap)
{
    bench_decode_time t;
    const int32_t *src[1] = {words};
    if (bench_decode_fixed(m, src, &len, 1, LENGTH_NEW, NULL, &t)) {
        snprintf(refused, cap, "%s", mt_last_error());
        return -1;
    }
    sec[0] = t.step_seconds / (LENGTH_NEW - 1);
    sec[1] = t.step_cpu_seconds / (LENGTH_NEW - 1);
    return 0;
}

/* One row of the table: a figure per length, "refused" where there is none */
static void print_row(int w, const char *name, const double *ms, int n_lens, int rate,
                      const char *unit)
{
    printf("   %-*s", w, name);
    for (int li = 0; li < n_lens; li++)
        if (ms[li] <= 0) printf(" %7s", rate ? "-" : "refused");
        else if (rate) printf(" %7.0f", 1e3 / ms[li]);
        else printf(" %7.3f", ms[li]);
    printf("  %s\n", unit);
}

static void print_crossover(const char *clock, const char *ref, const char *other, const int *lens,
                            const double *ms_ref, const double *ms_other, int n_lens)
{
    double at;
    int k = bench_crossover(lens, ms_ref, ms_other, n_lens, &at);
    printf("   crossover (%s): ", clock);
    if (k == 1) printf("%s decodes faster than %s at every length from %d\n", ref, other, lens[0]);
    else if (k == 2)
        printf("%s decodes faster than %s from a source of about %.0f tokens\n", ref, other, at);
    else printf("%s is not faster than %s at any length measured\n", ref, other);
}

int bench_run_length(const bench_opts *o)
{
    int max_len = o->max_len > 0 ? o->max_len : BENCH_LENGTH_MAX;
    int n_models =
        o->n_models ? o->n_models : (int)(sizeof default_models / sizeof *default_models);
    const char *const *names = o->n_models ? o->models : default_models;
    int lens[32], n_lens = 0, R = o->repeat;
    for (int L = LENGTH_MIN; L <= max_len && n_lens < 32; L *= 2) lens[n_lens++] = L;
    if (!n_lens) return mt_error("bench length: --max-len %d is below %d", max_len, LENGTH_MIN);
    printf("\n9. decoding against source length: batch 1, greedy, %d new tokens after a source of\n"
           "   L random ids (a decoder-only model's prompt `src <sep>`); ms per generated token\n"
           "   (the prefill apart), wall and the process's CPU time (all threads; at one thread\n"
           "   the figure a busy machine blurs least), median of %d rounds, the models in turn\n",
           LENGTH_NEW, R);
    size_t cells = (size_t)n_models * n_lens;
    mt_model **m = mt_xcalloc((size_t)n_models, sizeof *m);
    double *ms = mt_xcalloc(2 * cells, sizeof *ms); /* [clock][model][length], 0: refused */
    double *runs = mt_xmalloc((size_t)2 * n_models * R * sizeof *runs); /* [model][clock][r] */
    char(*refused)[256] = mt_xcalloc(cells, sizeof *refused);
    int32_t *words = mt_xmalloc((size_t)max_len * sizeof *words);
    int rc = 0;
    for (int i = 0; i < n_models && !rc; i++)
        if (!(m[i] = length_model(names[i], max_len)))
            rc = mt_error_context("bench length: %s", names[i]);
    for (int li = 0; li < n_lens && !rc; li++) {
        int L = lens[li];
        /* the same source for every model, inside every vocabulary */
        int V = 1 << 30;
        for (int i = 0; i < n_models; i++)
            if (mt_model_get_config(m[i])->vocab_size < V)
                V = mt_model_get_config(m[i])->vocab_size;
        for (int t = 0; t < L; t++)
            words[t] =
                MT_UNK_ID + 1 + (int32_t)(((unsigned)t * 7919u) % (unsigned)(V - MT_UNK_ID - 1));
        double sec[2];
        if (li == 0) /* one warm-up per model, on the shortest source */
            for (int i = 0; i < n_models; i++)
                per_token(m[i], words, L, sec, refused[i * n_lens + li], sizeof refused[0]);
        for (int r = 0; r < R; r++)
            for (int i = 0; i < n_models; i++)
                if (!refused[i * n_lens + li][0] &&
                    !per_token(m[i], words, L, sec, refused[i * n_lens + li], sizeof refused[0]))
                    for (int c = 0; c < 2; c++) runs[((size_t)i * 2 + c) * R + r] = sec[c];
        for (int i = 0; i < n_models; i++)
            if (!refused[i * n_lens + li][0])
                for (int c = 0; c < 2; c++)
                    ms[c * cells + i * n_lens + li] =
                        1e3 * bench_median(runs + ((size_t)i * 2 + c) * R, R);
    }
    int w = 20; /* the name column */
    for (int i = 0; i < n_models; i++)
        if ((int)strlen(names[i]) > w) w = (int)strlen(names[i]);
    if (!rc) {
        printf("   %-*s", w, "source length");
        for (int li = 0; li < n_lens; li++) printf(" %7d", lens[li]);
        printf("\n");
        for (int i = 0; i < n_models; i++) {
            const double *wall = ms + i * n_lens, *cpu = ms + cells + i * n_lens;
            print_row(w, names[i], wall, n_lens, 0, "ms/token");
            print_row(w, "", cpu, n_lens, 0, "CPU ms/token");
            print_row(w, "", wall, n_lens, 1, "tokens/s");
            if (wall[n_lens - 1] > 0)
                printf("   %-*s %.2fx the wall time per token at %d as at %d (CPU time %.2fx)\n", w,
                       "", wall[n_lens - 1] / wall[0], lens[n_lens - 1], lens[0],
                       cpu[n_lens - 1] / cpu[0]);
        }
        for (int i = 0; i < n_models; i++)
            for (int li = 0; li < n_lens; li++)
                if (refused[i * n_lens + li][0]) {
                    printf("   %s refused %d: %s\n", names[i], lens[li], refused[i * n_lens + li]);
                    break;
                }
        for (int i = 1; i < n_models; i++)
            for (int c = 0; c < 2; c++)
                print_crossover(c ? "CPU time" : "wall", names[0], names[i], lens, ms + c * cells,
                                ms + c * cells + i * n_lens, n_lens);
    }
    for (int i = 0; i < n_models; i++)
        if (m[i]) mt_model_free(m[i]);
    free(m), free(ms), free(runs), free(refused), free(words);
    return rc;
}
