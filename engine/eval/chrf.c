/* chrF and chrF++ exactly as sacreBLEU computes them (metrics/chrf.py, helpers.py).
 *
 * No tokenization: character n-grams (orders 1..char_order) of the sentence with all
 * whitespace removed, counted on code points. chrF++ adds word n-grams (orders
 * 1..word_order) of the whitespace-split words, a single punctuation character split off the
 * end of a word (or else off its start). Per segment and order the statistics are
 * [hyp n-grams (0 when the reference has none), ref n-grams, clipped matches]; with several
 * references the segment keeps the statistics of the reference it scores best against. */
#include "eval/codepoints.h"
#include "eval/ngram_counter.h"
#include "mtlab/error.h"
#include "mtlab/metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

mt_chrf_opts mt_chrf_defaults(void)
{
    return (mt_chrf_opts){.char_order = 6, .word_order = 0, .beta = 2};
}

mt_chrf_opts mt_chrfpp_defaults(void)
{
    mt_chrf_opts o = mt_chrf_defaults();
    o.word_order = 2;
    return o;
}

static int check_opts(const mt_chrf_opts *o)
{
    if (o->char_order < 0 || o->word_order < 0 || o->char_order + o->word_order < 1 ||
        o->char_order + o->word_order > MT_CHRF_MAX_ORDERS)
        return mt_error("chrF orders %d (characters) + %d (words) must add up to 1..%d",
                        o->char_order, o->word_order, MT_CHRF_MAX_ORDERS);
    if (o->beta < 0) return mt_error("chrF beta %d must not be negative", o->beta);
    return 0;
}

/* One sentence's n-gram multisets: character orders first, then word orders. */
typedef struct {
    char *chars; /* the characters counted (UTF-8) */
    char *words; /* the words, joined by single spaces (UTF-8) */
    mt_ngram_counter ngrams[MT_CHRF_MAX_ORDERS];
} chrf_segment;

static void chrf_segment_free(chrf_segment *s)
{
    free(s->chars);
    free(s->words);
    for (int i = 0; i < MT_CHRF_MAX_ORDERS; i++) mt_ngram_counter_free(&s->ngrams[i]);
}

/* string.punctuation, the set CHRF._remove_punctuation splits off */
static int is_ascii_punct(uint32_t c)
{
    return c < 0x80 && c > 0x20 && c != 0x7F && !(c >= '0' && c <= '9') &&
           !((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
}

/* CHRF._remove_punctuation: for each whitespace-separated word w of length > 1,
 *   w[-1] punctuation -> w[:-1], w[-1];  else w[0] punctuation -> w[0], w[1:];  else w.
 * Appends the words to *out, each followed by a space (the last space is dropped later). */
static void split_words(mt_cpbuf *out, const uint32_t *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        if (mt_is_py_space(s[i])) {
            i++;
            continue;
        }
        size_t b = i;
        while (i < n && !mt_is_py_space(s[i])) i++;
        size_t len = i - b;
        size_t cut = 0; /* split before w[cut] when non-zero */
        if (len > 1 && is_ascii_punct(s[i - 1])) cut = len - 1;
        else if (len > 1 && is_ascii_punct(s[b])) cut = 1;
        for (size_t k = 0; k < len; k++) {
            if (cut && k == cut) mt_cpbuf_push(out, ' ');
            mt_cpbuf_push(out, s[b + k]);
        }
        mt_cpbuf_push(out, ' ');
    }
}

/* Counts every order of one (preprocessed) sentence. */
static int chrf_segment_read(chrf_segment *out, const char *sent, const mt_chrf_opts *o)
{
    memset(out, 0, sizeof *out);
    char *lowered = NULL;
    if (o->lowercase && !(sent = lowered = mt_lowercase(sent))) return -1;
    mt_cpbuf cps = {0}, chars = {0}, words = {0};
    int rc = mt_utf8_decode(&cps, sent, strlen(sent));
    free(lowered);
    if (rc < 0) {
        mt_cpbuf_free(&cps);
        return -1;
    }

    /* extract_all_char_ngrams: line[i:i+n] of ''.join(line.split()) (or of the line) */
    for (size_t i = 0; i < cps.n; i++)
        if (o->whitespace || !mt_is_py_space(cps.cp[i])) mt_cpbuf_push(&chars, cps.cp[i]);
    size_t *off = mt_xmalloc((chars.n + 1) * sizeof *off);
    out->chars = mt_utf8_encode(chars.cp, chars.n, NULL, off);
    for (size_t n = 1; n <= (size_t)o->char_order; n++)
        for (size_t i = 0; i + n <= chars.n; i++)
            mt_ngram_add(&out->ngrams[n - 1], out->chars + off[i], off[i + n] - off[i], 1);
    free(off);

    /* extract_word_ngrams: ' '.join(words[i:i+n]), a span of the space-joined words */
    if (o->word_order > 0) {
        split_words(&words, cps.cp, cps.n);
        size_t len;
        out->words = mt_utf8_encode(words.cp, words.n, &len, NULL);
        size_t n_words = 0;
        for (size_t i = 0; i < len; i++) n_words += out->words[i] == ' ';
        size_t *start = mt_xmalloc((n_words + 1) * sizeof *start);
        size_t *end = mt_xmalloc((n_words + 1) * sizeof *end);
        for (size_t i = 0, k = 0; i < len; i++) {
            start[k] = i;
            while (out->words[i] != ' ') i++;
            end[k++] = i;
        }
        for (size_t n = 1; n <= (size_t)o->word_order; n++)
            for (size_t i = 0; i + n <= n_words; i++)
                mt_ngram_add(&out->ngrams[o->char_order + n - 1], out->words + start[i],
                             end[i + n - 1] - start[i], 1);
        free(start);
        free(end);
    }
    mt_cpbuf_free(&cps);
    mt_cpbuf_free(&chars);
    mt_cpbuf_free(&words);
    return 0;
}

/* CHRF._compute_f_score, with the float operations in CPython's order.
 * Default (effective order): P = mean of match_n / hyp_n, R = mean of match_n / ref_n over
 * the orders with hyp_n > 0 and ref_n > 0;  chrF = 100 (1 + b^2) P R / (b^2 P + R).
 * eps_smoothing: per-order F_n with 1e-16 for undefined parts; chrF = 100 mean_n F_n. */
double mt_chrf_from_stats(const mt_chrf_stats *st, const mt_chrf_opts *o)
{
    const double eps = 1e-16;
    int factor = o->beta * o->beta;
    double score = 0, avg_prec = 0, avg_rec = 0;
    int effective_order = 0;
    for (int i = 0; i < st->n_orders; i++) {
        int64_t n_hyp = st->hyp[i], n_ref = st->ref[i], n_match = st->match[i];
        double prec = n_hyp > 0 ? (double)n_match / (double)n_hyp : eps;
        double rec = n_ref > 0 ? (double)n_match / (double)n_ref : eps;
        double denom = factor * prec + rec;
        score += denom > 0 ? (1 + factor) * prec * rec / denom : eps;
        if (n_hyp > 0 && n_ref > 0) {
            avg_prec += prec;
            avg_rec += rec;
            effective_order++;
        }
    }
    if (o->eps_smoothing) return 100 * score / st->n_orders;
    if (effective_order == 0) {
        avg_prec = avg_rec = 0.0;
    } else {
        avg_prec /= effective_order;
        avg_rec /= effective_order;
    }
    if (avg_prec + avg_rec == 0) return 0.0;
    score = (1 + factor) * avg_prec * avg_rec;
    score /= (factor * avg_prec) + avg_rec;
    return 100 * score;
}

/* CHRF._get_match_statistics for every order. */
static void match_stats(mt_chrf_stats *out, const chrf_segment *h, const chrf_segment *r,
                        int n_orders)
{
    memset(out, 0, sizeof *out);
    out->n_orders = n_orders;
    for (int i = 0; i < n_orders; i++) {
        out->hyp[i] = r->ngrams[i].used ? h->ngrams[i].total : 0;
        out->ref[i] = r->ngrams[i].total;
        out->match[i] = mt_ngram_clipped_matches(&h->ngrams[i], &r->ngrams[i]);
    }
}

int mt_chrf_segment_stats(mt_chrf_stats *out, const char *hyp, const char *const *refs,
                          size_t n_refs, const mt_chrf_opts *opts)
{
    if (check_opts(opts) < 0) return -1;
    if (n_refs == 0) return mt_error("chrF needs at least one reference");
    int n_orders = opts->char_order + opts->word_order;
    chrf_segment h, r;
    if (chrf_segment_read(&h, hyp, opts) < 0) return mt_error_context("hypothesis");
    double best = -1.0;
    int rc = 0;
    for (size_t k = 0; k < n_refs; k++) {
        if (chrf_segment_read(&r, refs[k], opts) < 0) {
            rc = mt_error_context("reference %zu", k + 1);
            break;
        }
        mt_chrf_stats s;
        match_stats(&s, &h, &r, n_orders);
        double f = mt_chrf_from_stats(&s, opts);
        if (f > best) {
            best = f;
            *out = s;
        }
        chrf_segment_free(&r);
    }
    chrf_segment_free(&h);
    return rc;
}

void mt_chrf_stats_add(mt_chrf_stats *acc, const mt_chrf_stats *s)
{
    acc->n_orders = s->n_orders;
    for (int i = 0; i < s->n_orders; i++) {
        acc->hyp[i] += s->hyp[i];
        acc->ref[i] += s->ref[i];
        acc->match[i] += s->match[i];
    }
}

int mt_chrf_corpus(double *score, const char *const *hyps, size_t n, const char *const *const *refs,
                   size_t n_refs, const mt_chrf_opts *opts)
{
    if (check_opts(opts) < 0) return -1;
    if (n_refs == 0) return mt_error("chrF needs at least one reference");
    const char **seg_refs = mt_xcalloc(n_refs, sizeof *seg_refs);
    mt_chrf_stats sum = {.n_orders = opts->char_order + opts->word_order};
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        for (size_t r = 0; r < n_refs; r++) seg_refs[r] = refs[r][i];
        mt_chrf_stats s;
        if (mt_chrf_segment_stats(&s, hyps[i], seg_refs, n_refs, opts) < 0)
            rc = mt_error_context("segment %zu", i + 1);
        else mt_chrf_stats_add(&sum, &s);
    }
    free(seg_refs);
    if (rc == 0) *score = mt_chrf_from_stats(&sum, opts);
    return rc;
}

int mt_chrf_sentence(double *score, const char *hyp, const char *const *refs, size_t n_refs,
                     const mt_chrf_opts *opts)
{
    mt_chrf_stats s;
    if (mt_chrf_segment_stats(&s, hyp, refs, n_refs, opts) < 0) return -1;
    *score = mt_chrf_from_stats(&s, opts);
    return 0;
}

void mt_chrf_name(char *out, size_t out_len, const mt_chrf_opts *opts)
{
    static const char pluses[MT_CHRF_MAX_ORDERS + 1] = "++++++++++++++++++++";
    int n_plus = opts->word_order < 0 ? 0 : opts->word_order;
    if (n_plus > MT_CHRF_MAX_ORDERS) n_plus = MT_CHRF_MAX_ORDERS;
    snprintf(out, out_len, "chrF%d%.*s", opts->beta, n_plus, pluses);
}

/* CHRFSignature: nrefs, case, eff (yes unless eps smoothing), nc, nw, space, version. */
void mt_chrf_signature(char *out, size_t out_len, const mt_chrf_opts *opts, size_t n_refs,
                       int short_form)
{
    snprintf(out, out_len,
             short_form ? "#:%zu|c:%s|e:%s|nc:%d|nw:%d|s:%s|v:%s"
                        : "nrefs:%zu|case:%s|eff:%s|nc:%d|nw:%d|space:%s|version:%s",
             n_refs, opts->lowercase ? "lc" : "mixed", opts->eps_smoothing ? "no" : "yes",
             opts->char_order, opts->word_order, opts->whitespace ? "yes" : "no",
             MT_SACREBLEU_VERSION);
}

void mt_chrf_format(char *out, size_t out_len, double score, const mt_chrf_opts *opts,
                    const char *signature, int width)
{
    char name[32];
    mt_chrf_name(name, sizeof name, opts);
    int sig = signature && signature[0];
    snprintf(out, out_len, "%s%s%s = %.*f", name, sig ? "|" : "", sig ? signature : "", width,
             score);
}
