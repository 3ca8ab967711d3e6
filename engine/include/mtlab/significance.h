/* Paired significance tests between systems, as sacreBLEU 2.x defines them (`sacrebleu REF -i
 * BASE SYS... --paired-bs` / `--paired-ar`): the same resamples from the same seed, so with its
 * default seed (12345) the p-values, means and 95% intervals are sacreBLEU's own.
 *
 * A metric enters as per-segment sufficient statistics and a function from their sums to the
 * corpus score: BLEU's n-gram counts, chrF's, TER's edits and lengths (mt_sig_*_row below
 * write them), COMET's segment scores (their mean). System 0 is the baseline.
 *
 *   paired bootstrap (n = 1000): one set of resampled segment lists (with replacement),
 *     shared by every system; each system's scores over them give its mean and 95% interval
 *     (sorted scores' n/40-th from each end, half their distance); the p-value compares the
 *     real |score - baseline| with the resampled differences, centred on their mean.
 *   approximate randomization (n = 10000): each trial swaps each segment between the system
 *     and the baseline with probability 1/2; the p-value is the share of trials whose score
 *     difference exceeds the real one.
 *   p = (count + 1) / (n + 1) in both (Clark et al.'s MultEval). */
#ifndef MTLAB_SIGNIFICANCE_H
#define MTLAB_SIGNIFICANCE_H

#include <stddef.h>
#include <stdint.h>

#include "mtlab/metrics.h"

typedef enum { MT_SIG_BOOTSTRAP, MT_SIG_RANDOMIZATION } mt_sig_test;

/* sacreBLEU's defaults: 1000 resamples, 10000 trials, seed 12345 */
#define MT_SIG_BOOTSTRAP_SAMPLES 1000
#define MT_SIG_RANDOMIZATION_TRIALS 10000
#define MT_SIG_DEFAULT_SEED 12345

typedef struct {
    const char *name; /* "BLEU", "chrF2", "TER" */
    size_t n_stats; /* statistics per segment */
    /* the corpus score (0..100) of statistics summed over segments */
    double (*score)(const double *sums, const void *ctx);
    /* the same from float32 sums, in the float32 arithmetic sacreBLEU's bootstrap does on
     * numpy's float32 arrays (chrF and TER throughout, BLEU's precisions); NULL: score() */
    double (*score_f32)(const float *sums, const void *ctx);
    /* 1: those scores are float32 values (chrF's, TER's), and sacreBLEU's means, intervals
     * and p-values over them are float32 arithmetic too; 0: float64 (BLEU's) */
    int f32_scores;
    const void *ctx;
} mt_sig_metric;

typedef struct {
    mt_sig_test test;
    size_t n_samples; /* 0: the test's default */
    uint64_t seed;
} mt_sig_opts;

mt_sig_opts mt_sig_defaults(mt_sig_test test);
/* the resamples or trials opts asks for (its n_samples, else the test's default) */
size_t mt_sig_samples(const mt_sig_opts *opts);

typedef struct {
    double score; /* the system's corpus score */
    double mean, ci; /* bootstrap mean and half-width of the 95% interval (has_ci) */
    double p; /* against the baseline (has_p: every system but the first) */
    int has_ci, has_p;
} mt_sig_result;

/* stats[s]: system s's statistics, n_seg rows of m->n_stats; out[n_sys]. 0, or -1 (fewer
 * than two systems, no segments, more segments than the sampler takes). */
int mt_sig_paired(mt_sig_result *out, const double *const *stats, size_t n_sys, size_t n_seg,
                  const mt_sig_metric *m, const mt_sig_opts *opts);

/* "bs:1000|seed:12345" or "ar:10000|seed:12345", sacreBLEU's additions to a signature */
void mt_sig_signature(char *out, size_t out_len, const mt_sig_opts *opts);

/* The metrics' statistics as rows, and their scores (ctx: the metric's options). */
#define MT_SIG_BLEU_STATS (2 + 2 * MT_BLEU_MAX_ORDER)
void mt_sig_bleu_row(double *row, const mt_bleu_stats *s);
double mt_sig_bleu_score(const double *sums, const void *bleu_opts);
double mt_sig_bleu_score_f32(const float *sums, const void *bleu_opts);
size_t mt_sig_chrf_stats(const mt_chrf_opts *o); /* 3 per order */
void mt_sig_chrf_row(double *row, const mt_chrf_stats *s);
double mt_sig_chrf_score(const double *sums, const void *chrf_opts);
double mt_sig_chrf_score_f32(const float *sums, const void *chrf_opts);
#define MT_SIG_TER_STATS 2 /* [edits, ref_len] */
void mt_sig_ter_row(double *row, const mt_ter_stats *s);
double mt_sig_ter_score(const double *sums, const void *ctx);
double mt_sig_ter_score_f32(const float *sums, const void *ctx);
/* BLEU, chrF and TER as mt_sig_metric (name: the metric's own, "BLEU", "chrF2", "chrF2++",
 * "TER"; TER's score does not depend on its options, which shape the statistics only) */
mt_sig_metric mt_sig_bleu_metric(const mt_bleu_opts *o);
mt_sig_metric mt_sig_chrf_metric(const mt_chrf_opts *o, char *name, size_t name_len);
mt_sig_metric mt_sig_ter_metric(const mt_ter_opts *o);

#endif
