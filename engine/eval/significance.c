/* sacreBLEU's paired bootstrap and approximate randomization (mtlab/significance.h), drawing
 * from NumPy's generator (eval/np_random.h) exactly as sacreBLEU does: a fresh
 * default_rng(seed) for each system, so every system sees the same resamples or swaps. */
#include "mtlab/significance.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval/np_random.h"
#include "mtlab/error.h"

mt_sig_opts mt_sig_defaults(mt_sig_test test)
{
    mt_sig_opts o = {test, 0, MT_SIG_DEFAULT_SEED};
    return o;
}

size_t mt_sig_samples(const mt_sig_opts *o)
{
    if (o->n_samples) return o->n_samples;
    return o->test == MT_SIG_BOOTSTRAP ? MT_SIG_BOOTSTRAP_SAMPLES : MT_SIG_RANDOMIZATION_TRIALS;
}

void mt_sig_signature(char *out, size_t out_len, const mt_sig_opts *o)
{
    snprintf(out, out_len, "%s:%zu|seed:%llu", o->test == MT_SIG_BOOTSTRAP ? "bs" : "ar",
             mt_sig_samples(o), (unsigned long long)o->seed);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* estimate_ci: the mean, and half the distance between the sorted scores' n/40-th from each
 * end (a 95% interval); float32 arithmetic throughout when the scores are float32 */
static void mean_and_ci(const double *scores, size_t n, int f32, double *mean, double *ci)
{
    double *sorted = mt_xmalloc(n * sizeof *sorted);
    memcpy(sorted, scores, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, cmp_double);
    size_t lo = n / 40, hi = n - lo - 1;
    if (f32) {
        float *f = mt_xmalloc(n * sizeof *f);
        for (size_t i = 0; i < n; i++) f[i] = (float)sorted[i];
        *mean = mt_np_sum_f32(f, n) / (float)n;
        *ci = 0.5f * (f[hi] - f[lo]);
        free(f);
    } else {
        *mean = mt_np_sum(sorted, n) / (double)n;
        *ci = 0.5 * (sorted[hi] - sorted[lo]);
    }
    free(sorted);
}

/* (count of stats above real + 1) / (n + 1) */
static double p_value(const double *stats, size_t n, double real)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++) c += stats[i] > real;
    return (double)(c + 1) / (double)(n + 1);
}

/* The bootstrap's p-value: |system - baseline| per resample, centred on its mean, against
 * the real difference (float32 throughout for float32 scores: numpy compares a float32 array
 * with the Python float rounded to float32). */
static double bootstrap_p(const double *sys, const double *base, size_t n, int f32, double real,
                          double *work)
{
    if (f32) {
        float *d = mt_xmalloc(n * sizeof *d);
        for (size_t i = 0; i < n; i++) d[i] = fabsf((float)sys[i] - (float)base[i]);
        float centre = mt_np_sum_f32(d, n) / (float)n;
        size_t c = 0;
        for (size_t i = 0; i < n; i++) c += (float)(d[i] - centre) > (float)real;
        free(d);
        return (double)(c + 1) / (double)(n + 1);
    }
    for (size_t i = 0; i < n; i++) work[i] = fabs(sys[i] - base[i]);
    double centre = mt_np_sum(work, n) / (double)n;
    for (size_t i = 0; i < n; i++) work[i] -= centre;
    return p_value(work, n, real);
}

static double corpus_score(const double *stats, size_t n_seg, const mt_sig_metric *m, double *sums)
{
    memset(sums, 0, m->n_stats * sizeof *sums);
    for (size_t i = 0; i < n_seg; i++)
        for (size_t k = 0; k < m->n_stats; k++) sums[k] += stats[i * m->n_stats + k];
    return m->score(sums, m->ctx);
}

/* Scores of one system over the resamples idx[n][n_seg]: sacreBLEU sums the statistics as
 * float32 (numpy's float32 array), row by row. */
static void resampled_scores(double *scores, const double *stats, const uint32_t *idx, size_t n,
                             size_t n_seg, const mt_sig_metric *m, float *fsums, double *sums)
{
    for (size_t s = 0; s < n; s++) {
        memset(fsums, 0, m->n_stats * sizeof *fsums);
        const uint32_t *row = idx + s * n_seg;
        for (size_t i = 0; i < n_seg; i++)
            for (size_t k = 0; k < m->n_stats; k++)
                fsums[k] += (float)stats[row[i] * m->n_stats + k];
        if (m->score_f32) {
            scores[s] = m->score_f32(fsums, m->ctx);
        } else {
            for (size_t k = 0; k < m->n_stats; k++) sums[k] = fsums[k];
            scores[s] = m->score(sums, m->ctx);
        }
    }
}

static void bootstrap(mt_sig_result *out, const double *const *stats, size_t n_sys, size_t n_seg,
                      const mt_sig_metric *m, size_t n, uint64_t seed)
{
    uint32_t *idx = mt_xmalloc(n * n_seg * sizeof *idx);
    mt_np_rng g;
    mt_np_rng_seed(&g, seed);
    mt_np_choice(&g, (uint32_t)n_seg, idx, n * n_seg);
    double *base = mt_xmalloc(n * sizeof *base), *sys = mt_xmalloc(n * sizeof *sys);
    double *diffs = mt_xmalloc(n * sizeof *diffs), *sums = mt_xmalloc(m->n_stats * sizeof *sums);
    float *fsums = mt_xmalloc(m->n_stats * sizeof *fsums);
    resampled_scores(base, stats[0], idx, n, n_seg, m, fsums, sums);
    mean_and_ci(base, n, m->f32_scores, &out[0].mean, &out[0].ci);
    out[0].has_ci = 1;
    for (size_t s = 1; s < n_sys; s++) {
        resampled_scores(sys, stats[s], idx, n, n_seg, m, fsums, sums);
        mean_and_ci(sys, n, m->f32_scores, &out[s].mean, &out[s].ci);
        out[s].has_ci = 1;
        out[s].p =
            bootstrap_p(sys, base, n, m->f32_scores, fabs(out[0].score - out[s].score), diffs);
        out[s].has_p = 1;
    }
    free(idx);
    free(base);
    free(sys);
    free(diffs);
    free(sums);
    free(fsums);
}

static void randomization(mt_sig_result *out, const double *const *stats, size_t n_sys,
                          size_t n_seg, const mt_sig_metric *m, size_t n, uint64_t seed)
{
    unsigned char *swap = mt_xmalloc(n * n_seg);
    mt_np_rng g;
    mt_np_rng_seed(&g, seed);
    mt_np_booleans(&g, swap, n * n_seg);
    size_t k_n = m->n_stats;
    double *a = mt_xmalloc(k_n * sizeof *a), *b = mt_xmalloc(k_n * sizeof *b);
    double *diffs = mt_xmalloc(n * sizeof *diffs);
    for (size_t s = 1; s < n_sys; s++) {
        for (size_t t = 0; t < n; t++) {
            /* pseudo-system a takes the baseline's segment where the draw is 1, b the other */
            memset(a, 0, k_n * sizeof *a);
            memset(b, 0, k_n * sizeof *b);
            const unsigned char *sel = swap + t * n_seg;
            for (size_t i = 0; i < n_seg; i++) {
                const double *bl = stats[0] + i * k_n, *sy = stats[s] + i * k_n;
                const double *to_a = sel[i] ? bl : sy, *to_b = sel[i] ? sy : bl;
                for (size_t k = 0; k < k_n; k++) {
                    a[k] += to_a[k];
                    b[k] += to_b[k];
                }
            }
            diffs[t] = fabs(m->score(a, m->ctx) - m->score(b, m->ctx));
        }
        out[s].p = p_value(diffs, n, fabs(out[0].score - out[s].score));
        out[s].has_p = 1;
    }
    free(swap);
    free(a);
    free(b);
    free(diffs);
}

int mt_sig_paired(mt_sig_result *out, const double *const *stats, size_t n_sys, size_t n_seg,
                  const mt_sig_metric *m, const mt_sig_opts *opts)
{
    if (n_sys < 2) return mt_error("significance: a paired test needs a baseline and a system");
    if (n_seg == 0) return mt_error("significance: no segments to resample");
    if (n_seg > UINT32_MAX - 1)
        return mt_error("significance: %zu segments exceed the sampler's %u", n_seg,
                        UINT32_MAX - 1);
    size_t n = mt_sig_samples(opts);
    double *sums = mt_xmalloc(m->n_stats * sizeof *sums);
    for (size_t s = 0; s < n_sys; s++) {
        memset(&out[s], 0, sizeof out[s]);
        out[s].score = corpus_score(stats[s], n_seg, m, sums);
    }
    free(sums);
    if (opts->test == MT_SIG_BOOTSTRAP) bootstrap(out, stats, n_sys, n_seg, m, n, opts->seed);
    else randomization(out, stats, n_sys, n_seg, m, n, opts->seed);
    return 0;
}

/* ------------------------------------------------------------------ the metrics' rows */

void mt_sig_bleu_row(double *row, const mt_bleu_stats *s)
{
    row[0] = (double)s->hyp_len;
    row[1] = (double)s->ref_len;
    for (int n = 0; n < MT_BLEU_MAX_ORDER; n++) {
        row[2 + n] = (double)s->correct[n];
        row[2 + MT_BLEU_MAX_ORDER + n] = (double)s->total[n];
    }
}

double mt_sig_bleu_score(const double *sums, const void *bleu_opts)
{
    mt_bleu_stats st;
    st.hyp_len = (int64_t)sums[0];
    st.ref_len = (int64_t)sums[1];
    for (int n = 0; n < MT_BLEU_MAX_ORDER; n++) {
        st.correct[n] = (int64_t)sums[2 + n];
        st.total[n] = (int64_t)sums[2 + MT_BLEU_MAX_ORDER + n];
    }
    mt_bleu_score sc;
    mt_bleu_from_stats(&sc, &st, bleu_opts);
    return sc.score;
}

size_t mt_sig_chrf_stats(const mt_chrf_opts *o)
{
    return 3 * (size_t)(o->char_order + o->word_order);
}

void mt_sig_chrf_row(double *row, const mt_chrf_stats *s)
{
    for (int k = 0; k < s->n_orders; k++) {
        row[3 * k] = (double)s->hyp[k];
        row[3 * k + 1] = (double)s->ref[k];
        row[3 * k + 2] = (double)s->match[k];
    }
}

double mt_sig_chrf_score(const double *sums, const void *chrf_opts)
{
    const mt_chrf_opts *o = chrf_opts;
    mt_chrf_stats st;
    memset(&st, 0, sizeof st);
    st.n_orders = o->char_order + o->word_order;
    for (int k = 0; k < st.n_orders; k++) {
        st.hyp[k] = (int64_t)sums[3 * k];
        st.ref[k] = (int64_t)sums[3 * k + 1];
        st.match[k] = (int64_t)sums[3 * k + 2];
    }
    return mt_chrf_from_stats(&st, o);
}

/* sacreBLEU's compute_bleu on float32 statistics: each precision is float32 arithmetic
 * (100. * correct / total, Python's float times numpy's float32 staying float32), then the
 * logarithms, their sum and the brevity penalty in double, as with integer statistics. */
double mt_sig_bleu_score_f32(const float *sums, const void *bleu_opts)
{
    const mt_bleu_opts *o = bleu_opts;
    float correct[MT_BLEU_MAX_ORDER], total[MT_BLEU_MAX_ORDER];
    int any = 0;
    for (int n = 0; n < MT_BLEU_MAX_ORDER; n++) {
        correct[n] = sums[2 + n];
        total[n] = sums[2 + MT_BLEU_MAX_ORDER + n];
        any |= correct[n] != 0.0f;
    }
    int64_t sys_len = (int64_t)sums[0], ref_len = (int64_t)sums[1];
    double bp = 1.0;
    if (sys_len < ref_len) bp = sys_len > 0 ? exp(1.0 - (double)ref_len / (double)sys_len) : 0.0;
    if (!any) return 0.0;
    double smooth_value = o->smooth_value;
    if (smooth_value < 0) smooth_value = o->smooth == MT_SMOOTH_FLOOR ? 0.1 : 1.0;
    float precisions[MT_BLEU_MAX_ORDER] = {0};
    double smooth_mteval = 1.0;
    int eff_order = MT_BLEU_MAX_ORDER;
    for (int n = 1; n <= MT_BLEU_MAX_ORDER; n++) {
        if (o->smooth == MT_SMOOTH_ADD_K && n > 1) {
            correct[n - 1] += (float)smooth_value;
            total[n - 1] += (float)smooth_value;
        }
        if (total[n - 1] == 0.0f) break;
        if (o->effective_order) eff_order = n;
        if (correct[n - 1] == 0.0f) {
            if (o->smooth == MT_SMOOTH_EXP) {
                smooth_mteval *= 2;
                precisions[n - 1] = 100.0f / ((float)smooth_mteval * total[n - 1]);
            } else if (o->smooth == MT_SMOOTH_FLOOR) {
                precisions[n - 1] = (float)(100.0 * smooth_value) / total[n - 1];
            }
        } else {
            precisions[n - 1] = 100.0f * correct[n - 1] / total[n - 1];
        }
    }
    double logs = 0.0;
    for (int n = 0; n < eff_order; n++)
        logs += precisions[n] == 0.0f ? -9999999999.0 : log((double)precisions[n]);
    return bp * exp(logs / eff_order);
}

/* sacreBLEU's chrF F-score on float32 statistics: every quotient, product and sum float32 */
double mt_sig_chrf_score_f32(const float *sums, const void *chrf_opts)
{
    const mt_chrf_opts *o = chrf_opts;
    const float eps = 1e-16f, factor = (float)(o->beta * o->beta);
    float score = 0.0f, avg_prec = 0.0f, avg_rec = 0.0f;
    int effective_order = 0, orders = o->char_order + o->word_order;
    for (int i = 0; i < orders; i++) {
        float n_hyp = sums[3 * i], n_ref = sums[3 * i + 1], n_match = sums[3 * i + 2];
        float prec = n_hyp > 0 ? n_match / n_hyp : eps;
        float rec = n_ref > 0 ? n_match / n_ref : eps;
        float denom = factor * prec + rec;
        score += denom > 0 ? (1 + factor) * prec * rec / denom : eps;
        if (n_hyp > 0 && n_ref > 0) {
            avg_prec += prec;
            avg_rec += rec;
            effective_order++;
        }
    }
    if (o->eps_smoothing) return (double)(100 * score / (float)orders);
    if (effective_order == 0) {
        avg_prec = avg_rec = 0.0f;
    } else {
        avg_prec /= (float)effective_order;
        avg_rec /= (float)effective_order;
    }
    if (avg_prec + avg_rec == 0.0f) return 0.0;
    score = (1 + factor) * avg_prec * avg_rec;
    score /= factor * avg_prec + avg_rec;
    return (double)(100 * score);
}

mt_sig_metric mt_sig_bleu_metric(const mt_bleu_opts *o)
{
    mt_sig_metric m = {"BLEU", MT_SIG_BLEU_STATS, mt_sig_bleu_score, mt_sig_bleu_score_f32, 0, o};
    return m;
}

mt_sig_metric mt_sig_chrf_metric(const mt_chrf_opts *o, char *name, size_t name_len)
{
    mt_chrf_name(name, name_len, o);
    mt_sig_metric m = {name, mt_sig_chrf_stats(o), mt_sig_chrf_score, mt_sig_chrf_score_f32, 1, o};
    return m;
}

void mt_sig_ter_row(double *row, const mt_ter_stats *s)
{
    row[0] = s->edits;
    row[1] = s->ref_len;
}

double mt_sig_ter_score(const double *sums, const void *ctx)
{
    (void)ctx;
    mt_ter_stats st = {sums[0], sums[1]};
    return mt_ter_from_stats(&st);
}

/* sacreBLEU's TER on float32 statistics: 100 * (edits / ref_len), both steps float32; the
 * two special cases are Python floats (100.0 and 0.0), as in mt_ter_from_stats */
double mt_sig_ter_score_f32(const float *sums, const void *ctx)
{
    (void)ctx;
    if (sums[1] > 0.0f) return (double)(100.0f * (sums[0] / sums[1]));
    return sums[0] > 0.0f ? 100.0 : 0.0;
}

mt_sig_metric mt_sig_ter_metric(const mt_ter_opts *o)
{
    mt_sig_metric m = {"TER", MT_SIG_TER_STATS, mt_sig_ter_score, mt_sig_ter_score_f32, 1, o};
    return m;
}
