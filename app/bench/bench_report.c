/* `mtlab bench`: the sections of figures, all measured in this one run.
 *   1. training steps of every small preset: whole-step FLOP rate vs the same products alone on the
 *      step's gemm shapes (>= 50%), the gemms' own in-step rate (>= 70%), the time breakdown
 *   2. decode tokens/s at batch 1 (64, 256, 1024 new tokens) and 16 (64, 256), every small
 *      preset (all seven architectures)
 *   3. batch-1 decode time vs the memory-bandwidth roofline: (parameter bytes a step reads) /
 *      (copy bandwidth measured now) is the fastest a step can be when weights stream from
 *      memory; achieved / roofline >= 60%
 *   4. decoding-state memory at 64, 256 and 1024 generated tokens for every preset
 *   5. the probes' pass against the decode it explains (probes off cost nothing)
 *   6. decode tokens/s with int8 linear layers against fp32 at batch 1 and 16, every small
 *      preset (docs/quantization.md §4)
 *   7. a long prompt's prefill in chunks against one pass: peak RSS and tokens/s
 *   8. input x gradient attribution of a 40-token translation against its greedy decode, and
 *      the floor its matrix products set (docs/attribution.md §4)
 *   9. decode ms per token against source length, Mamba against transformers, and the
 *      crossover length (bench_length.c) */
#include "bench/bench.h"

#include <cblas.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mtlab/attribution.h"
#include "mtlab/clock.h"
#include "mtlab/decode.h"
#include "mtlab/device.h"
#include "mtlab/error.h"
#include "mtlab/probe.h"
#include "mtlab/rng.h"
#include "mtlab/tokenizer.h"

#define GEMM_TARGET 0.70
#define STEP_TARGET 0.50
#define ROOFLINE_TARGET 0.60
#define DECODE_SRC_LEN 32 /* source tokens of the decode runs */
#define STATE_SRC_LEN 64 /* source tokens of the state-memory table */
#define COPY_BYTES ((size_t)256 << 20) /* per buffer: far beyond any L3 here */
#define MAX_ROWS 16

static const char *verdict(double ratio, double target)
{
    return ratio >= target ? "ok" : "below target";
}

static void print_load(const char *when, int warn)
{
    double load[3];
    if (getloadavg(load, 3) != 3) return;
    printf("load average %s: %.2f %.2f %.2f (1, 5, 15 min) on %d CPUs\n", when, load[0], load[1],
           load[2], omp_get_num_procs());
    /* OpenMP threads spin at barriers waiting for a peer that another process holds off the
     * CPU, so a busy machine slows multi-threaded figures far more than its load suggests */
    if (warn && load[0] > 0.5 * omp_get_num_procs() && omp_get_max_threads() > 1)
        printf("note: the machine is busy; multi-threaded figures will be pessimistic (for\n"
               "      steadier ones: an idle machine, OMP_WAIT_POLICY=passive or\n"
               "      OMP_NUM_THREADS=1)\n");
}

/* ---------------------------------------------------------------- 1. training steps */
static void print_shapes(const bench_train_result *r)
{
    printf("   %5s %5s %5s %2s %2s %4s %6s %9s %9s %6s\n", "m", "n", "k", "tA", "tB", "beta",
           "calls", "in step", "bare", "ratio");
    for (int i = 0; i < r->n_shapes; i++) {
        const bench_gemm_shape *s = &r->shapes[i];
        double flops = 2.0 * s->m * s->n * (double)s->k * (double)s->calls;
        double bare = r->bare_call_seconds[i] * (double)s->calls;
        printf("   %5d %5d %5d %2d %2d %4g %6ld %9.1f %9.1f %5.0f%%\n", s->m, s->n, s->k,
               s->trans_a, s->trans_b, s->beta, s->calls, flops * 1e-9 / s->seconds,
               flops * 1e-9 / bare, 100.0 * bare / s->seconds);
    }
}

/* The operations of r in order of their time in a step, largest first; returns the time all of
 * them and the products take */
static double ops_by_time(const bench_train_result *r, int *order)
{
    double timed = r->gemm_seconds;
    for (int i = 0; i < r->n_ops; i++) {
        order[i] = i;
        timed += r->ops[i].seconds;
    }
    for (int i = 1; i < r->n_ops; i++)
        for (int j = i; j > 0 && r->ops[order[j]].seconds > r->ops[order[j - 1]].seconds; j--) {
            int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    return timed;
}

/* --verbose: every operation's calls and milliseconds a step (the mean over the runs), so that
 * two thread counts or two builds compare operation by operation */
static void print_ops(const bench_train_result *r)
{
    int order[BENCH_MAX_OPS];
    ops_by_time(r, order);
    printf("   %-22s %6s %9s %6s\n", "operation", "calls", "ms a step", "share");
    printf("   %-22s %6ld %9.2f %5.1f%%\n", "gemm", r->gemm_calls, 1e3 * r->gemm_seconds,
           100.0 * r->gemm_seconds / r->step_seconds);
    for (int i = 0; i < r->n_ops; i++) {
        const bench_op_time *op = &r->ops[order[i]];
        printf("   %-22s %6ld %9.2f %5.1f%%\n", op->name, op->calls, 1e3 * op->seconds,
               100.0 * op->seconds / r->step_seconds);
    }
}

/* One line of where a step's time goes: gemm, then the operations taking at least 1% of the
 * step, largest first, then whatever no operation accounts for (host work between them). */
static void print_breakdown(bench_train_result *r)
{
    int order[BENCH_MAX_OPS];
    double timed = ops_by_time(r, order);
    int col = printf("   %-18s time: gemm %.0f%%", "", 100.0 * r->gemm_seconds / r->step_seconds);
    for (int i = 0; i < r->n_ops; i++) {
        double share = r->ops[order[i]].seconds / r->step_seconds;
        if (share < 0.01) break;
        char item[64];
        int w = snprintf(item, sizeof item, ", %s %.0f%%", r->ops[order[i]].name, 100.0 * share);
        if (col + w > 96) col = printf(",\n   %-18s       %s", "", item + 2) - 2;
        else col += printf("%s", item);
    }
    double rest = r->step_seconds - timed;
    printf(", host %.0f%%\n", 100.0 * (rest > 0 ? rest : 0.0) / r->step_seconds);
}

/* The demo presets (the "-small" names), in preset order: every architecture of the registry. */
static int small_presets(const char **out, int cap)
{
    int n = 0;
    for (const char *const *name = mt_model_preset_names(); *name && n < cap; name++) {
        size_t len = strlen(*name);
        if (len > 6 && !strcmp(*name + len - 6, "-small")) out[n++] = *name;
    }
    return n;
}

static int section_gemm(const bench_opts *o)
{
    const char *presets[16];
    int n_presets = small_presets(presets, 16);
    printf("\n1. training steps: forward+backward+AdamW (4096-token batches, dropout on) vs\n"
           "   the same products alone on the step's gemm shapes, hot\n");
    printf("   %-18s %-11s %7s %8s %7s %8s %8s %6s\n", "preset", "batch", "step s", "tokens/s",
           "GFLOP", "step GF/s", "bare GF/s", "ratio");
    for (int i = 0; i < n_presets; i++) {
        /* 4096 tokens per step: 64 rows of 64 tokens, or of 32 source + 32 target tokens */
        mt_model_config cfg;
        if (mt_model_preset(&cfg, presets[i])) return -1;
        int encdec = mt_model_config_is_encdec(&cfg);
        bench_train_result r;
        if (bench_train_gemm(presets[i], 64, encdec ? 32 : 0, encdec ? 32 : 64, o->repeat, &r))
            return -1;
        char batch[32];
        if (r.S) snprintf(batch, sizeof batch, "%dx(%d+%d)", r.B, r.S, r.T);
        else snprintf(batch, sizeof batch, "%dx%d", r.B, r.T);
        printf("   %-18s %-11s %7.3f %8.0f %7.1f %9.1f %9.1f %5.0f%%  %s\n", r.preset, batch,
               r.step_seconds, (double)r.tokens / r.step_seconds, r.gemm_flops * 1e-9,
               r.gemm_flops * 1e-9 / r.step_seconds, r.gemm_flops * 1e-9 / r.bare_seconds,
               100.0 * r.step_ratio, verdict(r.step_ratio, STEP_TARGET));
        printf("   %-18s gemms: %ld calls over %d shapes at %.1f GFLOP/s in the step, %.0f%% of "
               "bare  %s\n",
               "", r.gemm_calls, r.n_shapes, r.gemm_flops * 1e-9 / r.gemm_seconds, 100.0 * r.ratio,
               verdict(r.ratio, GEMM_TARGET));
        print_breakdown(&r);
        if (o->verbose) {
            print_ops(&r);
            print_shapes(&r);
        }
        bench_train_result_free(&r);
    }
    printf("   GFLOP: the model FLOPs of a step, 2 m n k over its gemm calls (forward and\n"
           "   backward; attention, retention and scan inner products and per-element work\n"
           "   are time without FLOPs), the same count for every preset. ratio: median over\n"
           "   runs of bare gemm time / whole step time, each run measuring both (target >=\n"
           "   %.0f%%); the gemms' own in-step rate / bare rate has target >= %.0f%%. time: mean\n"
           "   share of the step per backend operation (>= 1%%); host: outside every operation\n",
           100.0 * STEP_TARGET, 100.0 * GEMM_TARGET);
    return 0;
}

/* ---------------------------------------------------------------- 2. decode tokens/s */
typedef struct {
    int32_t *words; /* (MAX_ROWS, DECODE_SRC_LEN) */
    const int32_t *src[MAX_ROWS];
    int len[MAX_ROWS];
} sources;

static void make_sources(sources *s, int V)
{
    mt_rng rng;
    mt_rng_init(&rng, 11, 0);
    s->words = mt_xmalloc((size_t)MAX_ROWS * DECODE_SRC_LEN * sizeof *s->words);
    for (size_t i = 0; i < (size_t)MAX_ROWS * DECODE_SRC_LEN; i++)
        s->words[i] = (int32_t)(MT_UNK_ID + 1 + mt_rng_below(&rng, (uint64_t)V - MT_UNK_ID - 1));
    for (int r = 0; r < MAX_ROWS; r++) {
        s->src[r] = s->words + (size_t)r * DECODE_SRC_LEN;
        s->len[r] = DECODE_SRC_LEN;
    }
}

/* Median prefill and per-step seconds of repeat decodes (after one warm-up decode). */
static int time_decode(mt_model *m, const sources *s, int B, int new_tokens, int repeat,
                       double *prefill, double *per_step, double *total)
{
    bench_decode_time t;
    if (bench_decode_fixed(m, s->src, s->len, B, new_tokens, NULL, &t)) return -1;
    double *pre = mt_xmalloc((size_t)repeat * 3 * sizeof *pre), *step = pre + repeat;
    double *all = step + repeat;
    int rc = 0;
    for (int i = 0; i < repeat && !rc; i++) {
        rc = bench_decode_fixed(m, s->src, s->len, B, new_tokens, NULL, &t);
        pre[i] = t.prefill_seconds;
        step[i] = t.step_seconds / (new_tokens > 1 ? new_tokens - 1 : 1);
        all[i] = t.prefill_seconds + t.step_seconds;
    }
    *prefill = bench_median(pre, repeat);
    *per_step = bench_median(step, repeat);
    *total = bench_median(all, repeat);
    free(pre);
    return rc;
}

/* A random-weight model of the preset on the CPU, and decode sources for its vocabulary;
 * NULL (mt_last_error) when it cannot be made. */
static mt_model *preset_with_sources(const char *preset, sources *s)
{
    mt_model_config cfg;
    if (mt_model_preset(&cfg, preset)) return NULL;
    mt_model *m = mt_model_create(&cfg, mt_backend_cpu(), 1);
    /* fp32 as a runner opens a model: with the panels where this CPU makes them */
    if (m && mt_model_set_fp32_panels(m, 1)) {
        mt_model_free(m);
        return NULL;
    }
    if (m) make_sources(s, cfg.vocab_size);
    return m;
}

/* Fills step_b1[i] with the batch-1, 64-token seconds per step of transformer-small (0) and
 * mamba-small (1), which the roofline section reuses. Batch 16 skips 1024 tokens: the growth
 * with length is the batch-1 row's story, and it would triple the section's time. */
static int section_decode(int repeat, double step_b1[2])
{
    static const int batches[] = {1, MAX_ROWS}, lengths[] = {64, 256, 1024};
    const char *presets[16];
    int n_presets = small_presets(presets, 16);
    printf("\n2. decode tokens/s: greedy, exactly N new tokens per row (random weights; <eos>\n"
           "   does not stop a row), sources of %d tokens, prefill included in tokens/s\n",
           DECODE_SRC_LEN);
    printf("   %-20s %5s %5s %11s %9s %10s\n", "preset", "batch", "N", "prefill ms", "ms/step",
           "tokens/s");
    for (int p = 0; p < n_presets; p++) {
        sources s;
        mt_model *m = preset_with_sources(presets[p], &s);
        if (!m) return -1;
        int rc = 0;
        for (int bi = 0; bi < 2 && !rc; bi++)
            for (int li = 0; li < 3 && !rc; li++) {
                double prefill, per_step, total;
                int B = batches[bi], N = lengths[li];
                if (B > 1 && N > 256) continue;
                rc = time_decode(m, &s, B, N, repeat, &prefill, &per_step, &total);
                if (rc) break;
                if (B == 1 && N == 64 && !strcmp(presets[p], "transformer-small"))
                    step_b1[0] = per_step;
                if (B == 1 && N == 64 && !strcmp(presets[p], "mamba-small")) step_b1[1] = per_step;
                printf("   %-20s %5d %5d %11.2f %9.3f %10.1f\n", presets[p], B, N, 1e3 * prefill,
                       1e3 * per_step, (double)B * N / total);
            }
        free(s.words);
        mt_model_free(m);
        if (rc) return -1;
    }
    printf("   ms/step grows with N where a cache grows (attention); it stays flat for Mamba,\n"
           "   RetNet and Mamba-Local, whose decoding state has a fixed size\n");
    return 0;
}

/* ---------------------------------------------------------------- 3. roofline */
static int roofline_row(const char *preset, double measured_step, int repeat, double bandwidth,
                        size_t l3)
{
    mt_model_config cfg;
    size_t step_bytes, all_bytes;
    if (mt_model_preset(&cfg, preset) || bench_step_param_bytes(&cfg, &step_bytes, &all_bytes))
        return -1;
    if (measured_step <= 0) {
        /* not decoded in section 2 (the paper sizes, or section 2 was skipped) */
        mt_model *m = mt_model_create(&cfg, mt_backend_cpu(), 1);
        if (!m) return -1;
        sources s;
        make_sources(&s, cfg.vocab_size);
        double prefill, total;
        int rc = time_decode(m, &s, 1, 64, repeat, &prefill, &measured_step, &total);
        free(s.words);
        mt_model_free(m);
        if (rc) return -1;
    }
    /* roofline time per token = parameter bytes read per step / copy bandwidth */
    double roof = (double)step_bytes / bandwidth;
    double ratio = roof / measured_step;
    printf("   %-18s %9.1f %10.1f %12.3f %12.3f %6.0f%%  %s%s\n", preset, all_bytes / 1e6,
           step_bytes / 1e6, 1e3 * roof, 1e3 * measured_step, 100.0 * ratio,
           verdict(ratio, ROOFLINE_TARGET), l3 && step_bytes <= l3 ? " (fits in L3)" : "");
    return 0;
}

static int section_roofline(int repeat, const double step_b1[2])
{
    double bandwidth = bench_copy_bandwidth(COPY_BYTES, repeat + 2);
    size_t l3 = bench_l3_bytes();
    printf("\n3. batch-1 decode vs the memory-bandwidth roofline\n"
           "   copy bandwidth %.2f GB/s (parallel memcpy of %zu MiB, read + written bytes);"
           " L3 %zu MiB\n",
           bandwidth / 1e9, COPY_BYTES >> 20, l3 >> 20);
    printf("   %-18s %9s %10s %12s %12s %7s\n", "preset", "params MB", "read/step", "roofline ms",
           "measured ms", "ratio");
    static const char *const presets[] = {"transformer-small", "mamba-small", "transformer",
                                          "mamba"};
    for (int i = 0; i < 4; i++)
        if (roofline_row(presets[i], i < 2 ? step_b1[i] : 0.0, repeat, bandwidth, l3)) return -1;
    printf("   read/step: MB of parameters one step reads (counted per operation); ratio:\n"
           "   roofline / measured (target >= %.0f%%); weights that fit in L3 can beat DRAM\n",
           100.0 * ROOFLINE_TARGET);
    return 0;
}

/* ---------------------------------------------------------------- 4. state memory */
static void print_bytes(size_t bytes)
{
    if (bytes < ((size_t)1 << 20)) printf(" %10.1f KiB", bytes / 1024.0);
    else printf(" %10.2f MiB", bytes / (1024.0 * 1024.0));
}

/* Sized from each model's own cache layout (mt_model_decode_state_bytes), so every
 * architecture gets a figure; the models are created for it and freed at once. */
static int section_state(void)
{
    static const int generated[] = {64, 256, 1024};
    printf("\n4. decoding-state memory per sentence (caches only; source of %d tokens; a batch\n"
           "   holds one per row, beam search one per beam)\n",
           STATE_SRC_LEN);
    printf("   %-20s %14s %14s %14s\n", "preset", "64 tokens", "256 tokens", "1024 tokens");
    for (const char *const *name = mt_model_preset_names(); *name; name++) {
        mt_model_config cfg;
        if (mt_model_preset(&cfg, *name)) return -1;
        mt_model *m = mt_model_create(&cfg, mt_backend_cpu(), 1);
        if (!m) return -1;
        /* sized as mt_decode sizes it: the last generated token is never fed back */
        int encdec = mt_model_is_encdec(m);
        printf("   %-20s", *name);
        for (int i = 0; i < 3; i++) {
            int prompt = encdec ? 1 : STATE_SRC_LEN + 1;
            print_bytes(mt_model_decode_state_bytes(m, 1, prompt + generated[i] - 1,
                                                    encdec ? STATE_SRC_LEN + 1 : 0));
        }
        printf("\n");
        mt_model_free(m);
    }
    return 0;
}

/* ---------------------------------------------------------------- 5. probes */
/* Median seconds of mt_probe_run over a 64-token hypothesis of source 0 (after a warm-up). */
static int time_probes(mt_model *m, const sources *s, int repeat, double *seconds)
{
    enum { HYP = 64 };
    int32_t hyp[HYP];
    bench_decode_time t;
    if (bench_decode_fixed(m, s->src, s->len, 1, HYP, hyp, &t)) return -1;
    double *v = mt_xmalloc((size_t)(repeat + 1) * sizeof *v);
    int rc = 0;
    for (int i = 0; i <= repeat && !rc; i++) {
        mt_probe_record r;
        double t0 = mt_now_s();
        rc = mt_probe_run(m, s->src[0], s->len[0], hyp, HYP, NULL, &r);
        v[i] = mt_now_s() - t0;
        if (!rc) mt_probe_record_free(&r);
    }
    *seconds = bench_median(v + 1, repeat);
    free(v);
    return rc;
}

static int section_probes(int repeat)
{
    const char *presets[16];
    int n_presets = small_presets(presets, 16);
    printf("\n5. probes: the heatmaps' pass (mt_probe_run: one parallel forward over source and\n"
           "   a 64-token hypothesis, every map kind) against the batch-1 decode it explains\n");
    printf("   %-20s %10s %10s %8s\n", "preset", "decode ms", "probes ms", "ratio");
    for (int p = 0; p < n_presets; p++) {
        sources s;
        mt_model *m = preset_with_sources(presets[p], &s);
        if (!m) return -1;
        double prefill, per_step, decode, probes;
        int rc = time_decode(m, &s, 1, 64, repeat, &prefill, &per_step, &decode);
        if (!rc) rc = time_probes(m, &s, repeat, &probes);
        free(s.words);
        mt_model_free(m);
        if (rc) return -1;
        printf("   %-20s %10.2f %10.2f %7.2fx\n", presets[p], 1e3 * decode, 1e3 * probes,
               probes / decode);
    }
    printf("   probes off costs nothing: decoding holds no probe code (the maps come from this\n"
           "   separate pass, run only when a heatmap asks), so its time is the decode column\n");
    return 0;
}

/* ---------------------------------------------------------------- 8. attribution */
/* Median seconds of repeat attributions (after one warm-up) of hyp by method. */
static int time_attribution(mt_model *m, const sources *s, const int32_t *hyp, int n_hyp,
                            mt_attr_method method, int steps, int repeat, double *seconds)
{
    mt_attr_opts o;
    mt_attr_opts_init(&o);
    o.method = method;
    o.steps = steps;
    double *v = mt_xmalloc((size_t)(repeat + 1) * sizeof *v);
    int rc = 0;
    for (int i = 0; i <= repeat && !rc; i++) {
        mt_attribution a;
        double t0 = mt_now_s();
        rc = mt_attribute(m, s->src[0], s->len[0], hyp, n_hyp, &o, &a);
        v[i] = mt_now_s() - t0;
        if (!rc) mt_attribution_free(&a);
    }
    *seconds = bench_median(v + 1, repeat);
    free(v);
    return rc;
}

/* The matrix products of one input x gradient attribution of hyp, on a copy of preset's model
 * (the same seed, so the same weights) built on the counting backend: their FLOPs, and the
 * seconds the same calls take bare, one shape at a time with hot operands
 * (bench_bare_sgemm_seconds), which the counted run's own timing does not enter. That is what the
 * products alone cost at this core's sgemm rate, before any other operation of the backward: a
 * floor under any attribution that takes one backward pass per target row. */
static int attribution_products(const char *preset, const sources *s, const int32_t *hyp, int n_hyp,
                                double *flops, double *bare_seconds)
{
    mt_model_config cfg;
    if (mt_model_preset(&cfg, preset)) return -1;
    mt_model *m = mt_model_create(&cfg, bench_counting_backend(), 1);
    if (!m) return -1;
    mt_attr_opts o;
    mt_attr_opts_init(&o);
    o.method = MT_ATTR_INPUT_X_GRADIENT;
    mt_attribution a;
    bench_counters_reset(NULL, 0);
    int rc = mt_attribute(m, s->src[0], s->len[0], hyp, n_hyp, &o, &a);
    if (!rc) {
        mt_attribution_free(&a);
        const bench_counters *c = bench_counters_get();
        *flops = c->gemm_flops;
        *bare_seconds = 0.0;
        for (int k = 0; k < c->n_shapes; k++)
            *bare_seconds += (double)c->shapes[k].calls * bench_bare_sgemm_seconds(&c->shapes[k]);
    }
    bench_counters_free();
    mt_model_free(m);
    return rc;
}

/* One input x gradient attribution of a whole 40-token translation (41 rows with </s>: one
 * backward pass per row, batched) against the batch-1 greedy decode of it (goal: 3x on the
 * CPU), the floor its products set (attribution_products), and integrated gradients' time per
 * step (IG_STEPS steps, divided). */
static int section_attribution(int repeat)
{
    enum { HYP = 40, IG_STEPS = 4 };
    const char *presets[16];
    int n_presets = small_presets(presets, 16);
    printf("\n8. attribution (docs/attribution.md): input x gradient of every token of a %d-token\n"
           "   translation of a %d-token source, against the batch-1 greedy decode of it;\n"
           "   integrated gradients per step (%d steps, divided)\n",
           HYP, DECODE_SRC_LEN, IG_STEPS);
    printf("   %-19s %9s %8s %7s %7s %8s %7s %10s\n", "preset", "decode ms", "IxG ms", "ratio",
           "GFLOP", "bare ms", "floor", "IG ms/step");
    for (int p = 0; p < n_presets; p++) {
        sources s;
        mt_model *m = preset_with_sources(presets[p], &s);
        if (!m) return -1;
        int32_t hyp[HYP];
        bench_decode_time t;
        double prefill, per_step, decode, ixg = 0.0, ig = 0.0, flops = 0.0, bare = 0.0;
        int rc = bench_decode_fixed(m, s.src, s.len, 1, HYP, hyp, &t);
        if (!rc) rc = time_decode(m, &s, 1, HYP, repeat, &prefill, &per_step, &decode);
        if (!rc) rc = time_attribution(m, &s, hyp, HYP, MT_ATTR_INPUT_X_GRADIENT, 0, repeat, &ixg);
        if (!rc)
            rc = time_attribution(m, &s, hyp, HYP, MT_ATTR_INTEGRATED_GRADIENTS, IG_STEPS, 1, &ig);
        if (!rc) rc = attribution_products(presets[p], &s, hyp, HYP, &flops, &bare);
        free(s.words);
        mt_model_free(m);
        if (rc) return -1;
        printf("   %-19s %9.2f %8.2f %6.2fx %7.2f %8.2f %6.2fx %10.2f\n", presets[p], 1e3 * decode,
               1e3 * ixg, ixg / decode, 1e-9 * flops, 1e3 * bare, bare / decode,
               1e3 * ig / IG_STEPS);
    }
    printf("   each target row is one backward pass (the inputs' gradients only, no weight\n"
           "   gradient products), so the ratio grows with the translation's length. GFLOP:\n"
           "   the attribution's matrix products; bare ms: the same calls alone, operands hot;\n"
           "   floor: bare ms / decode ms, what the products alone cost against the decode\n");
    return 0;
}

/* ---------------------------------------------------------------- 6. int8 decode */
/* A Marian-base decoding step's 49 products at 16 rows (6 decoder layers: self-attention's q, k,
 * v and o and cross-attention's q and o, 512 x 512 each, the FFN's 2048 x 512 and 512 x 2048; the
 * tied 58101 x 512 projection), 207 MB of fp32 weights, one after the other as a step runs them:
 * more than the caches hold, so the weights stream from memory. ms a step, best of repeat, for
 * the fp32 few-row kernel, the fp32 panels (where this CPU makes them) and int8. */
static int step_products(int repeat)
{
    enum { LAYERS = 6, PER_LAYER = 8, N_MATS = LAYERS * PER_LAYER + 1, M = 16, V = 58101 };
    static const int layer[PER_LAYER][2] = {{512, 512}, {512, 512}, {512, 512},  {512, 512},
                                            {512, 512}, {512, 512}, {2048, 512}, {512, 2048}};
    const mt_backend *cpu = mt_backend_cpu();
    int shape[N_MATS][2], has_panels[N_MATS] = {0}, n = 0, rc = 0, panels = 1;
    float *w[N_MATS];
    mt_qmatrix q8[N_MATS], pan[N_MATS];
    float *x = mt_xmalloc((size_t)M * 2048 * sizeof *x),
          *out = mt_xmalloc((size_t)M * V * sizeof *out);
    mt_rng rng;
    mt_rng_init(&rng, 6, 0);
    for (size_t j = 0; j < (size_t)M * 2048; j++) x[j] = mt_rng_uniform(&rng) - 0.5f;
    for (; n < N_MATS; n++) {
        int last = n == N_MATS - 1, N = last ? V : layer[n % PER_LAYER][0],
            K = last ? 512 : layer[n % PER_LAYER][1];
        shape[n][0] = N, shape[n][1] = K;
        w[n] = mt_xmalloc((size_t)N * K * sizeof *w[n]);
        for (size_t j = 0; j < (size_t)N * K; j++) w[n][j] = mt_rng_uniform(&rng) - 0.5f;
        int p = -1;
        if (cpu->qmatrix_make(&q8[n], MT_QMATRIX_INT8, w[n], N, K) == 0 &&
            (p = cpu->qmatrix_make(&pan[n], MT_QMATRIX_F32P, w[n], N, K)) < 0)
            cpu->qmatrix_free(&q8[n]);
        if (p < 0) {
            free(w[n]);
            rc = -1;
            break;
        }
        has_panels[n] = p == 0;
        panels = panels && has_panels[n];
    }
    double best[3] = {0}; /* few-row kernel, panels, int8 */
    for (int k = 0; k < 3 && !rc; k++) {
        if (k == 1 && !panels) continue;
        for (int t = 0; t < repeat; t++) {
            double t0 = mt_now_s();
            for (int i = 0; i < N_MATS; i++) {
                int N = shape[i][0], K = shape[i][1];
                if (k == 0) cpu->gemm(0, 1, M, N, K, 1.0f, x, K, w[i], K, 0.0f, out, N);
                else cpu->qlinear_forward(out, x, k == 1 ? &pan[i] : &q8[i], 0, NULL, M, N);
            }
            double dt = mt_now_s() - t0;
            if (t == 0 || dt < best[k]) best[k] = dt;
        }
    }
    if (!rc) {
        char p16[32] = "-";
        if (panels) snprintf(p16, sizeof p16, "%.2f", best[1] * 1e3);
        printf("   a Marian-base step's 49 products at 16 rows, from memory (207 MB in fp32), ms:\n"
               "   fp32 %.2f, panels %s, int8 %.2f\n",
               best[0] * 1e3, p16, best[2] * 1e3);
    }
    for (int i = 0; i < n; i++) {
        cpu->qmatrix_free(&q8[i]);
        if (has_panels[i]) cpu->qmatrix_free(&pan[i]);
        free(w[i]);
    }
    free(x), free(out);
    return rc;
}

/* The int8 products alone, on the linear layers of a decoding step of transformer-small
 * (d_model 192, FFN 768, 8,000 words) and of Marian base (512, 2,048, 58,101), at 1 and 16
 * rows, and the fp32 products of the same shapes beside them: the kernels the CPU backend
 * picks, this process's threads, best of repeat groups of calls (activations quantized in each
 * int8 call, as in a step). */
static int int8_products(int repeat)
{
    static const int shapes[][2] = {{192, 192}, {768, 192},  {192, 768},  {8000, 192},
                                    {512, 512}, {2048, 512}, {512, 2048}, {58101, 512}};
    enum { N_SHAPES = sizeof shapes / sizeof shapes[0] };
    const mt_backend *cpu = mt_backend_cpu();
    char own[256];
    int threads = omp_get_max_threads();
    printf("\n   int8 and fp32 products alone (N output channels x K inputs), GMAC/s, best of %d\n"
           "   groups, %d thread%s (mtlab's kernels here: %s)\n",
           repeat, threads, threads == 1 ? "" : "s", mt_cpu_own_kernels(own, sizeof own));
    printf("   %13s %10s %10s %10s %10s %10s\n", "N x K", "int8 1", "int8 16", "fp32 1", "fp32 16",
           "panels 16");
    for (int i = 0; i < N_SHAPES; i++) {
        int N = shapes[i][0], K = shapes[i][1];
        float *w = mt_xmalloc((size_t)N * K * sizeof *w),
              *x = mt_xmalloc(16 * (size_t)K * sizeof *x);
        float *out = mt_xmalloc(16 * (size_t)N * sizeof *out);
        mt_rng rng;
        mt_rng_init(&rng, 5, (uint64_t)i);
        for (size_t j = 0; j < (size_t)N * K; j++) w[j] = mt_rng_uniform(&rng) - 0.5f;
        for (size_t j = 0; j < 16 * (size_t)K; j++) x[j] = mt_rng_uniform(&rng) - 0.5f;
        mt_qmatrix q;
        if (cpu->qmatrix_make(&q, MT_QMATRIX_INT8, w, N, K)) {
            free(w), free(x), free(out);
            return -1;
        }
        /* the fp32 panels, where this CPU makes them (docs/decoding.md §9.3) */
        mt_qmatrix panels;
        int have_panels = cpu->qmatrix_make(&panels, MT_QMATRIX_F32P, w, N, K);
        if (have_panels < 0) {
            cpu->qmatrix_free(&q);
            free(w), free(x), free(out);
            return -1;
        }
        have_panels = have_panels == 0;
        /* int8 at 1 and 16 rows, fp32 at 1 and 16, panels at 16 */
        double rate[5] = {0};
        for (int r = 0; r < (have_panels ? 5 : 4); r++) {
            int M = r % 2 || r == 4 ? 16 : 1, fp32 = r == 2 || r == 3;
            /* a group of calls: about 2e8 multiply-adds, a few milliseconds */
            int calls = (int)(2e8 / ((double)M * N * K)) + 1;
            double best = 0;
            for (int t = 0; t < repeat; t++) {
                double t0 = mt_now_s();
                for (int c = 0; c < calls; c++) {
                    if (fp32) cpu->gemm(0, 1, M, N, K, 1.0f, x, K, w, K, 0.0f, out, N);
                    else cpu->qlinear_forward(out, x, r == 4 ? &panels : &q, 0, NULL, M, N);
                }
                double dt = (mt_now_s() - t0) / calls;
                if (t == 0 || dt < best) best = dt;
            }
            rate[r] = (double)M * N * K / best * 1e-9;
        }
        char p16[16] = "-";
        if (have_panels) snprintf(p16, sizeof p16, "%.1f", rate[4]);
        printf("   %6d x %-5d %10.1f %10.1f %10.1f %10.1f %10s\n", N, K, rate[0], rate[1], rate[2],
               rate[3], p16);
        cpu->qmatrix_free(&q);
        if (have_panels) cpu->qmatrix_free(&panels);
        free(w), free(x), free(out);
    }
    printf(
        "   fp32 16: the few-row kernel on the (N, K) matrix; panels 16: the fp32 copy in panels\n"
        "   (docs/decoding.md §9.3; -: not made on this CPU)\n");
    return step_products(repeat);
}

/* Each preset's model decodes in fp32 and then, quantized, in int8, batch by batch, so both
 * figures of a row see the same load. */
static int section_int8(int repeat)
{
    static const int batches[] = {1, MAX_ROWS};
    enum { N = 64 };
    const char *presets[16];
    int n_presets = small_presets(presets, 16);
    printf("\n6. int8 decode: tokens/s with every linear layer in int8 (weights per output\n"
           "   channel, activations per row; docs/quantization.md) against fp32, greedy, %d new\n"
           "   tokens per row, sources of %d tokens, prefill included\n",
           N, DECODE_SRC_LEN);
    printf("   %-20s %5s %12s %12s %7s %10s\n", "preset", "batch", "fp32 tok/s", "int8 tok/s",
           "ratio", "weights");
    for (int p = 0; p < n_presets; p++) {
        sources s;
        mt_model *m = preset_with_sources(presets[p], &s);
        if (!m) return -1;
        int rc = 0;
        for (int bi = 0; bi < 2 && !rc; bi++) {
            double prefill, per_step, total[2];
            int B = batches[bi];
            for (int q = 0; q < 2 && !rc; q++)
                rc = mt_model_set_precision(m, q ? MT_PRECISION_INT8 : MT_PRECISION_FP32) ||
                     time_decode(m, &s, B, N, repeat, &prefill, &per_step, &total[q]);
            if (rc) break;
            printf("   %-20s %5d %12.1f %12.1f %6.2fx %6.1f MiB\n", presets[p], B,
                   (double)B * N / total[0], (double)B * N / total[1], total[0] / total[1],
                   (double)mt_model_int8_bytes(m) / (1024.0 * 1024.0));
        }
        free(s.words);
        mt_model_free(m);
        if (rc) return -1;
    }
    printf("   ratio: int8 / fp32 tokens/s; weights: the int8 matrices with their scales (the\n"
           "   fp32 parameters stay loaded beside them for embeddings, norms and training)\n");
    return int8_products(repeat);
}

/* ---------------------------------------------------------------- 7. long prefill */
/* One pass would take the transformer past its 1,024 positions and the others' T x T scores
 * to gigabytes at the 5,556 tokens of the workbench's long-line test: 2,048 tokens shows the
 * growth and stays safe on a shared machine. The state is sized for 2T + 10 new tokens, as
 * mt_translate sizes it. The two runs alternate, repeat times each, so both see the same load;
 * the medians are printed, and the largest peak RSS of each. */
static int section_prefill(int repeat)
{
    enum { T = 2048 };
    const char *presets[16];
    int n_presets = small_presets(presets, 16);
    printf("\n7. prefill of a %d-token prompt (source, for the encoder-decoders), state sized for\n"
           "   %d new tokens: in chunks (working set within %zu MiB) against one pass (T x T\n"
           "   scores), each in a child process: peak RSS of that process and prefill tokens/s\n",
           T, 2 * T + 10, MT_PREFILL_WORK_BYTES >> 20);
    printf("   %-20s %12s %12s %12s %12s %8s\n", "preset", "RSS 1 pass", "RSS chunks",
           "tok/s 1 pass", "tok/s chunks", "speed");
    double *secs = mt_xmalloc(2 * (size_t)repeat * sizeof *secs);
    for (int p = 0; p < n_presets; p++) {
        bench_prefill_result r;
        size_t rss[2] = {0, 0};
        for (int i = 0; i < 2 * repeat; i++) {
            if (bench_prefill_child(presets[p], T, 2 * T + 10, i % 2 ? MT_PREFILL_AUTO : 0, &r)) {
                free(secs);
                return -1;
            }
            if (r.refused[0]) break;
            secs[(i % 2) * repeat + i / 2] = r.seconds;
            if (r.peak_rss_bytes > rss[i % 2]) rss[i % 2] = r.peak_rss_bytes;
        }
        if (r.refused[0]) {
            printf("   %-20s refused: %s\n", presets[p], r.refused);
            continue;
        }
        double whole = bench_median(secs, repeat), chunked = bench_median(secs + repeat, repeat);
        printf("   %-20s %8.0f MiB %8.0f MiB %12.0f %12.0f %7.2fx\n", presets[p],
               rss[0] / 1048576.0, rss[1] / 1048576.0, T / whole, T / chunked, whole / chunked);
    }
    free(secs);
    printf("   (one pass here already shares one unit's working set among the units; before\n"
           "   the chunked prefill every unit kept its own, so the old path held more)\n");
    return 0;
}

int bench_run_all(const bench_opts *o)
{
    printf("mtlab bench: %d OpenMP threads; OpenBLAS %d threads, %s\n", omp_get_max_threads(),
           openblas_get_num_threads(), openblas_get_config());
    char hint[512];
    if (mt_cpu_blas_hint(hint, sizeof hint)) printf("   %s\n", hint);
    printf("   products: %s\n", mt_cpu_products(hint, sizeof hint));
    printf("   mtlab's own kernels: %s\n", mt_cpu_own_kernels(hint, sizeof hint));
    print_load("at start", 1);
    printf("every figure: one warm-up, then the median of %d runs\n", o->repeat);
    double step_b1[2] = {0, 0};
    double t0 = mt_now_s();
    if (((o->sections & BENCH_GEMM) && section_gemm(o)) ||
        ((o->sections & BENCH_DECODE) && section_decode(o->repeat, step_b1)) ||
        ((o->sections & BENCH_ROOFLINE) && section_roofline(o->repeat, step_b1)) ||
        ((o->sections & BENCH_STATE) && section_state()) ||
        ((o->sections & BENCH_PROBES) && section_probes(o->repeat)) ||
        ((o->sections & BENCH_INT8) && section_int8(o->repeat)) ||
        ((o->sections & BENCH_PREFILL) && section_prefill(o->repeat)) ||
        ((o->sections & BENCH_ATTRIBUTION) && section_attribution(o->repeat)) ||
        ((o->sections & BENCH_LENGTH) && bench_run_length(o)))
        return -1;
    printf("\n");
    print_load("at end", 0);
    printf("bench took %.0f s\n", mt_now_s() - t0);
    return 0;
}
