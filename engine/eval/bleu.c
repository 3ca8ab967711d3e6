/* BLEU exactly as sacreBLEU computes it (metrics/bleu.py, helpers.py, utils.my_log).
 *
 * Per segment, text -> [lowercase] -> rstrip -> tokenizer (13a unless opts->tokenize says
 * otherwise, tok_sacrebleu.c) -> words split on whitespace; n-grams of orders 1..4 counted
 * as multisets. With several references each n-gram's reference count is its maximum over
 * them, and the reference length is the one closest to the hypothesis length (the shorter on
 * ties). Statistics [hyp_len, ref_len, correct_1..4, total_1..4] are summed over the corpus
 * and only then turned into a score (mt_bleu_from_stats). */
#include "eval/codepoints.h"
#include "eval/ngram_counter.h"
#include "eval/tok13a.h"
#include "eval/tok_sacrebleu.h"
#include "mtlab/error.h"
#include "mtlab/metrics.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

mt_bleu_opts mt_bleu_defaults(void)
{
    return (mt_bleu_opts){.lowercase = 0,
                          .smooth = MT_SMOOTH_EXP,
                          .smooth_value = -1,
                          .effective_order = 0,
                          .tokenize = MT_BLEU_TOK_13A,
                          .spm = NULL};
}

/* One preprocessed sentence and its n-gram multisets. */
typedef struct {
    char *tokens; /* words joined by single spaces */
    size_t n_tokens;
    mt_ngram_counter ngrams[MT_BLEU_MAX_ORDER]; /* [n-1]: the n-grams, as spans of tokens */
} bleu_segment;

static void bleu_segment_free(bleu_segment *s)
{
    free(s->tokens);
    for (int n = 0; n < MT_BLEU_MAX_ORDER; n++) mt_ngram_counter_free(&s->ngrams[n]);
}

/* BLEU._preprocess_segment (lowercase, rstrip, tokenize), then extract_all_word_ngrams, which
 * splits the tokenizer's output on whitespace (13a's output is split already; "none" and
 * "char" leave runs of whitespace). */
static int bleu_segment_read(bleu_segment *out, const char *sent, const mt_bleu_opts *opts)
{
    memset(out, 0, sizeof *out);
    char *lowered = NULL;
    if (opts->lowercase && !(sent = lowered = mt_lowercase(sent))) return -1;
    mt_cpbuf cps = {0}, raw = {0}, toks = {0};
    int rc = mt_utf8_decode(&cps, sent, strlen(sent));
    free(lowered);
    if (rc == 0)
        rc = mt_sacre_tokenize_codepoints(&raw, opts->tokenize, opts->spm, cps.cp,
                                          mt_py_rstrip_len(cps.cp, cps.n));
    if (rc < 0) {
        mt_cpbuf_free(&cps);
        mt_cpbuf_free(&raw);
        return -1;
    }
    mt_tok_split_join(&toks, raw.cp, raw.n);
    mt_cpbuf_free(&raw);
    size_t len;
    out->tokens = mt_utf8_encode(toks.cp, toks.n, &len, NULL);
    mt_cpbuf_free(&cps);
    mt_cpbuf_free(&toks);

    /* Token i spans [start[i], end[i]); tokens are separated by exactly one space, so the
     * n-gram (i..i+n-1) is the span [start[i], end[i+n-1]) of the joined string. */
    size_t *start = mt_xmalloc((len / 2 + 1) * sizeof *start);
    size_t *end = mt_xmalloc((len / 2 + 1) * sizeof *end);
    size_t k = 0;
    for (size_t i = 0; i < len;) {
        start[k] = i;
        while (i < len && out->tokens[i] != ' ') i++;
        end[k++] = i++;
    }
    out->n_tokens = k;
    for (size_t n = 1; n <= MT_BLEU_MAX_ORDER; n++)
        for (size_t i = 0; i + n <= k; i++)
            mt_ngram_add(&out->ngrams[n - 1], out->tokens + start[i], end[i + n - 1] - start[i], 1);
    free(start);
    free(end);
    return 0;
}

/* BLEU._get_closest_ref_len: the closest length; on equal distance the shorter one. */
static int64_t closest_ref_len(int64_t hyp_len, const int64_t *ref_lens, size_t n_refs)
{
    int64_t best_diff = -1, best = -1;
    for (size_t r = 0; r < n_refs; r++) {
        int64_t diff = hyp_len > ref_lens[r] ? hyp_len - ref_lens[r] : ref_lens[r] - hyp_len;
        if (best_diff == -1 || diff < best_diff) best_diff = diff, best = ref_lens[r];
        else if (diff == best_diff && ref_lens[r] < best) best = ref_lens[r];
    }
    return best;
}

int mt_bleu_segment_stats(mt_bleu_stats *out, const char *hyp, const char *const *refs,
                          size_t n_refs, const mt_bleu_opts *opts)
{
    if (n_refs == 0) return mt_error("BLEU needs at least one reference");
    memset(out, 0, sizeof *out);
    mt_ngram_counter ref_max[MT_BLEU_MAX_ORDER] = {{0}};
    bleu_segment *ref = mt_xcalloc(n_refs, sizeof *ref);
    int64_t *ref_lens = mt_xcalloc(n_refs, sizeof *ref_lens);
    bleu_segment h = {0};
    int rc = 0;
    for (size_t r = 0; r < n_refs && rc == 0; r++) {
        if (bleu_segment_read(&ref[r], refs[r], opts) < 0) {
            rc = mt_error_context("reference %zu", r + 1);
            break;
        }
        ref_lens[r] = (int64_t)ref[r].n_tokens;
        for (int n = 0; n < MT_BLEU_MAX_ORDER; n++) {
            const mt_ngram_counter *c = &ref[r].ngrams[n];
            for (size_t i = 0; i < c->cap; i++)
                if (c->slots[i].key)
                    mt_ngram_max(&ref_max[n], c->slots[i].key, c->slots[i].len, c->slots[i].count);
        }
    }
    if (rc == 0 && bleu_segment_read(&h, hyp, opts) < 0) rc = mt_error_context("hypothesis");
    if (rc == 0) {
        out->hyp_len = (int64_t)h.n_tokens;
        out->ref_len = closest_ref_len(out->hyp_len, ref_lens, n_refs);
        for (int n = 0; n < MT_BLEU_MAX_ORDER; n++) {
            out->total[n] = h.ngrams[n].total;
            out->correct[n] = mt_ngram_clipped_matches(&h.ngrams[n], &ref_max[n]);
        }
    }
    bleu_segment_free(&h);
    for (size_t r = 0; r < n_refs; r++) bleu_segment_free(&ref[r]);
    for (int n = 0; n < MT_BLEU_MAX_ORDER; n++) mt_ngram_counter_free(&ref_max[n]);
    free(ref);
    free(ref_lens);
    return rc;
}

void mt_bleu_stats_add(mt_bleu_stats *acc, const mt_bleu_stats *s)
{
    acc->hyp_len += s->hyp_len;
    acc->ref_len += s->ref_len;
    for (int n = 0; n < MT_BLEU_MAX_ORDER; n++) {
        acc->correct[n] += s->correct[n];
        acc->total[n] += s->total[n];
    }
}

/* utils.my_log: log with log(0) floored at -9999999999. */
static double my_log(double x) { return x == 0.0 ? -9999999999.0 : log(x); }

static double smooth_value_or_default(const mt_bleu_opts *o)
{
    if (o->smooth_value >= 0) return o->smooth_value;
    return o->smooth == MT_SMOOTH_FLOOR ? 0.1 : 1.0;
}

/* BLEU.compute_bleu, statement for statement (the float operations happen in the same order,
 * so the score is bit-identical to CPython's):
 *   BP = 1 if sys_len >= ref_len, else exp(1 - ref_len / sys_len) (0 when sys_len = 0)
 *   no matches at all -> BLEU 0
 *   p_n = 100 correct_n / total_n; stop at the first order with total_n = 0
 *     exp:   a zero correct_n gives p_n = 100 / (2^k total_n), k counting such orders
 *     floor: a zero correct_n gives p_n = 100 v / total_n
 *     add-k: orders n >= 2 add v to correct_n and total_n first
 *   BLEU = BP exp( (1/N) sum_{n<=N} my_log(p_n) ), N = 4 (or the last order reached when
 *   effective_order is on) */
void mt_bleu_from_stats(mt_bleu_score *out, const mt_bleu_stats *st, const mt_bleu_opts *opts)
{
    memset(out, 0, sizeof *out);
    out->sys_len = st->hyp_len;
    out->ref_len = st->ref_len;
    memcpy(out->counts, st->correct, sizeof out->counts);
    memcpy(out->totals, st->total, sizeof out->totals);
    out->ratio = st->ref_len ? (double)st->hyp_len / (double)st->ref_len : 0.0;
    out->bp = 1.0;
    if (st->hyp_len < st->ref_len)
        out->bp = st->hyp_len > 0 ? exp(1 - (double)st->ref_len / (double)st->hyp_len) : 0.0;

    int any_correct = 0;
    for (int n = 0; n < MT_BLEU_MAX_ORDER; n++) any_correct |= st->correct[n] != 0;
    if (!any_correct) return;

    double v = smooth_value_or_default(opts);
    double smooth_mteval = 1.0;
    int eff_order = MT_BLEU_MAX_ORDER;
    for (int n = 1; n <= MT_BLEU_MAX_ORDER; n++) {
        double correct = (double)st->correct[n - 1], total = (double)st->total[n - 1];
        if (opts->smooth == MT_SMOOTH_ADD_K && n > 1) {
            correct += v;
            total += v;
        }
        if (total == 0) break;
        if (opts->effective_order) eff_order = n;
        if (correct == 0) {
            if (opts->smooth == MT_SMOOTH_EXP) {
                smooth_mteval *= 2;
                out->precisions[n - 1] = 100. / (smooth_mteval * total);
            } else if (opts->smooth == MT_SMOOTH_FLOOR) {
                out->precisions[n - 1] = 100. * v / total;
            }
        } else {
            out->precisions[n - 1] = 100. * correct / total;
        }
    }
    double sum_log = 0;
    for (int n = 0; n < eff_order; n++) sum_log += my_log(out->precisions[n]);
    out->score = out->bp * exp(sum_log / eff_order);
}

int mt_bleu_corpus(mt_bleu_score *out, const char *const *hyps, size_t n,
                   const char *const *const *refs, size_t n_refs, const mt_bleu_opts *opts)
{
    if (n_refs == 0) return mt_error("BLEU needs at least one reference");
    const char **seg_refs = mt_xcalloc(n_refs, sizeof *seg_refs);
    mt_bleu_stats sum = {0};
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        for (size_t r = 0; r < n_refs; r++) seg_refs[r] = refs[r][i];
        mt_bleu_stats s;
        if (mt_bleu_segment_stats(&s, hyps[i], seg_refs, n_refs, opts) < 0)
            rc = mt_error_context("segment %zu", i + 1);
        else mt_bleu_stats_add(&sum, &s);
    }
    free(seg_refs);
    if (rc == 0) mt_bleu_from_stats(out, &sum, opts);
    return rc;
}

int mt_bleu_sentence(mt_bleu_score *out, const char *hyp, const char *const *refs, size_t n_refs,
                     const mt_bleu_opts *opts)
{
    mt_bleu_stats s;
    if (mt_bleu_segment_stats(&s, hyp, refs, n_refs, opts) < 0) return -1;
    mt_bleu_from_stats(out, &s, opts);
    return 0;
}

/* BLEUSignature: nrefs, case, eff, tok, smooth, version; a smoothing method that takes a
 * value shows it as "floor[0.10]". */
void mt_bleu_signature(char *out, size_t out_len, const mt_bleu_opts *opts, size_t n_refs,
                       int short_form)
{
    static const char *const names[] = {"exp", "floor", "add-k", "none"};
    char smooth[64];
    if (opts->smooth == MT_SMOOTH_FLOOR || opts->smooth == MT_SMOOTH_ADD_K)
        snprintf(smooth, sizeof smooth, "%s[%.2f]", names[opts->smooth],
                 smooth_value_or_default(opts));
    else snprintf(smooth, sizeof smooth, "%s", names[opts->smooth]);
    const char *tok = opts->tokenize == MT_BLEU_TOK_JA_MECAB
                          ? mt_mecab_signature()
                          : mt_bleu_tokenize_name(opts->tokenize);
    snprintf(out, out_len,
             short_form ? "#:%zu|c:%s|e:%s|tok:%s|s:%s|v:%s"
                        : "nrefs:%zu|case:%s|eff:%s|tok:%s|smooth:%s|version:%s",
             n_refs, opts->lowercase ? "lc" : "mixed", opts->effective_order ? "yes" : "no",
             tok ? tok : "?", smooth, MT_SACREBLEU_VERSION);
}

void mt_bleu_verbose(char *out, size_t out_len, const mt_bleu_score *s)
{
    snprintf(out, out_len,
             "%.1f/%.1f/%.1f/%.1f (BP = %.3f ratio = %.3f hyp_len = %lld ref_len = %lld)",
             s->precisions[0], s->precisions[1], s->precisions[2], s->precisions[3], s->bp,
             s->ratio, (long long)s->sys_len, (long long)s->ref_len);
}

void mt_bleu_format(char *out, size_t out_len, const mt_bleu_score *s, const char *signature,
                    int width)
{
    char verbose[256];
    mt_bleu_verbose(verbose, sizeof verbose, s);
    int sig = signature && signature[0];
    snprintf(out, out_len, "BLEU%s%s = %.*f %s", sig ? "|" : "", sig ? signature : "", width,
             s->score, verbose);
}
