/* TER, translation edit rate, exactly as sacreBLEU computes it (metrics/ter.py, lib_ter.py,
 * tokenizers/tokenizer_ter.py), which follows Tercom (Snover et al. 2006).
 *
 * Per reference, TER counts the edits that turn the hypothesis into the reference: word
 * insertions, deletions and substitutions (cost 1 each) plus shifts, a shift moving a block of
 * up to 10 contiguous hypothesis words elsewhere at cost 1. Finding the best shift sequence is
 * NP-hard, so Tercom and sacreBLEU search greedily:
 *
 *   repeat
 *     d = edit distance of the current hypothesis, and its alignment to the reference
 *     among all candidate shifts, take the one whose shifted hypothesis has the smallest
 *     edit distance (ties: the longer block, then the earlier block, then the earlier target)
 *     stop when it does not lower d, or when 1000 candidates were tried in all (then the
 *     shift found in that last round is not applied)
 *   TER edits = shifts applied + edit distance of the final hypothesis
 *
 * A candidate is a block h[sh, sh+len) equal to r[sr, sr+len), 1 <= len <= 10, with
 * |sr - sh| <= 50, where some of the hypothesis block and some of the reference block are
 * misaligned (errors), and the reference block is not already aligned inside the hypothesis
 * block. Its targets are "just after the hypothesis word aligned to r[sr + k]" for
 * k = -1..len-1 (k = -1: the very start), each distinct target tried once, consecutively.
 *
 * The edit distance is Levenshtein over words, but only inside a beam: row i (hypothesis word
 * i) fills columns [floor(i nr/nh) - w, floor(i nr/nh) + w) around the pseudo-diagonal, with
 * w = 25 (or ceil(nr/(2 nh) + 25) when the lengths differ wildly); the last row is filled
 * completely and cells outside the beam stay "infinite" (1e16). Ties between operations go
 * to match/substitution, then hypothesis-word deletion, then reference-word insertion; the
 * backtrace, read as rewriting the reference into the hypothesis, gives the alignment.
 *
 * sacreBLEU memoises rows in a trie keyed by hypothesis prefixes. Every hypothesis scored
 * against one reference has the same length (shifts keep it), so a row depends only on the
 * prefix above it: the memo is pure and recomputing gives the same numbers. Here the matrix
 * of the previous call is kept and rows are recomputed from the first word that differs.
 *
 * Segment statistics: the fewest edits over the references, and the average reference length;
 * the corpus TER is 100 * sum(edits) / sum(lengths) (100 when only the lengths are zero, 0
 * when both are). */
#include "eval/codepoints.h"
#include "eval/tok13a.h"
#include "mtlab/error.h"
#include "mtlab/metrics.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    TER_MAX_SHIFT_SIZE = 10,
    TER_MAX_SHIFT_DIST = 50,
    TER_BEAM_WIDTH = 25,
    TER_MAX_SHIFT_CANDIDATES = 1000
};
static const int64_t TER_INF = 10000000000000000LL; /* sacreBLEU's int(1e16) */

/* Cell operations, as rewriting the hypothesis (rows) into the reference (columns). */
enum { OP_MATCH = ' ', OP_SUB = 's', OP_DEL = 'd', OP_INS = 'i', OP_UNSET = 'x' };

mt_ter_opts mt_ter_defaults(void)
{
    return (mt_ter_opts){.normalized = 0, .no_punct = 0, .asian_support = 0, .case_sensitive = 0};
}

/* ------------------------------------------------------------------ tercom tokenizer */

static int in_range(uint32_t c, uint32_t a, uint32_t b) { return c >= a && c <= b; }
static int is_cjk_ideograph(uint32_t c)
{
    return in_range(c, 0x4E00, 0x9FFF) || in_range(c, 0x3400, 0x4DBF);
}
static int is_cjk_stroke_radical(uint32_t c)
{
    return in_range(c, 0x31C0, 0x31EF) || in_range(c, 0x2E80, 0x2EFF);
}
static int is_cjk_compat(uint32_t c)
{
    return in_range(c, 0x3300, 0x33FF) || in_range(c, 0xF900, 0xFAFF) ||
           in_range(c, 0xFE30, 0xFE4F);
}
static int is_cjk_enclosed(uint32_t c) { return in_range(c, 0x3200, 0x3F22); }
/* TercomTokenizer.ASIAN_PUNCT and FULL_WIDTH_PUNCT */
static int is_asian_punct(uint32_t c)
{
    return c == 0x3001 || c == 0x3002 || in_range(c, 0x3008, 0x3011) ||
           in_range(c, 0x3014, 0x301F) || in_range(c, 0xFF61, 0xFF65) || c == 0x30FB;
}
static int is_full_width_punct(uint32_t c)
{
    return c == 0xFF0E || c == 0xFF0C || c == 0xFF1F || c == 0xFF1A || c == 0xFF1B || c == 0xFF01 ||
           c == 0xFF02 || c == 0xFF08 || c == 0xFF09;
}
static int is_western_punct(uint32_t c)
{
    return c > 0 && c < 0x80 && strchr(".,?:;!\"()", (int)c) != NULL;
}
static int is_non_digit(uint32_t c) { return !(c >= '0' && c <= '9'); }
static int is_digit(uint32_t c) { return c >= '0' && c <= '9'; }
static int is_period_comma(uint32_t c) { return c == '.' || c == ','; }
static int is_dash(uint32_t c) { return c == '-'; }

static void remove_if(mt_cpbuf *s, mt_cp_pred pred)
{
    size_t k = 0;
    for (size_t i = 0; i < s->n; i++)
        if (!pred(s->cp[i])) s->cp[k++] = s->cp[i];
    s->n = k;
}

/* _normalize_general_and_western. Its "'s$" -> " 's" rule never fires: the line was padded
 * with a final space and holds no '\n' any more, so nothing ends in "'s". */
static void normalize_western(mt_cpbuf *s)
{
    mt_tok_replace_all(s, "\n-", "");
    mt_tok_replace_all(s, "\n", " ");
    mt_tok_replace_all(s, "&quot;", "\"");
    mt_tok_replace_all(s, "&amp;", "&");
    mt_tok_replace_all(s, "&lt;", "<");
    mt_tok_replace_all(s, "&gt;", ">");
    mt_cpbuf padded = {0};
    mt_cpbuf_push(&padded, ' ');
    for (size_t i = 0; i < s->n; i++) mt_cpbuf_push(&padded, s->cp[i]);
    mt_cpbuf_push(&padded, ' ');
    mt_cpbuf_free(s);
    *s = padded;
    mt_tok_pad(s, mt_tok_is_13a_symbol);
    mt_tok_replace_all(s, "'s ", " 's ");
    mt_tok_pair(s, is_non_digit, is_period_comma, 0);
    mt_tok_pair(s, is_period_comma, is_non_digit, 1);
    mt_tok_pair(s, is_digit, is_dash, 0);
}

/* _normalize_asian. Its three kana rules only match a line that starts with kana, and the
 * western normalization that always runs first starts every line with a space. */
static void normalize_asian(mt_cpbuf *s)
{
    mt_tok_pad(s, is_cjk_ideograph);
    mt_tok_pad(s, is_cjk_stroke_radical);
    mt_tok_pad(s, is_cjk_compat);
    mt_tok_pad(s, is_cjk_enclosed);
    mt_tok_pad(s, is_asian_punct);
    mt_tok_pad(s, is_full_width_punct);
}

/* TER._preprocess_segment: rstrip, then TercomTokenizer (lowercase, normalize, remove
 * punctuation, collapse whitespace). Tokens joined by single spaces are appended to *out. */
static int tercom_codepoints(mt_cpbuf *out, const char *line, const mt_ter_opts *o)
{
    mt_cpbuf s = {0};
    if (mt_utf8_decode(&s, line, strlen(line)) < 0) {
        mt_cpbuf_free(&s);
        return -1;
    }
    s.n = mt_py_rstrip_len(s.cp, s.n);
    if (!o->case_sensitive && s.n > 0) {
        char *stripped = mt_utf8_encode(s.cp, s.n, NULL, NULL);
        char *lowered = mt_lowercase(stripped);
        free(stripped);
        s.n = 0;
        int rc = mt_utf8_decode(&s, lowered, strlen(lowered));
        free(lowered);
        if (rc < 0) {
            mt_cpbuf_free(&s);
            return -1;
        }
    }
    if (o->normalized) {
        normalize_western(&s);
        if (o->asian_support) normalize_asian(&s);
    }
    if (o->no_punct) {
        remove_if(&s, is_western_punct);
        if (o->asian_support) {
            remove_if(&s, is_asian_punct);
            remove_if(&s, is_full_width_punct);
        }
    }
    mt_tok_split_join(out, s.cp, s.n);
    mt_cpbuf_free(&s);
    return 0;
}

char *mt_tokenize_tercom(const char *line, const mt_ter_opts *opts)
{
    mt_cpbuf toks = {0};
    char *s = NULL;
    if (tercom_codepoints(&toks, line, opts) == 0) s = mt_utf8_encode(toks.cp, toks.n, NULL, NULL);
    mt_cpbuf_free(&toks);
    return s;
}

/* ------------------------------------------------------------------ words as ids */

/* A tokenized sentence: its words as spans of the joined text, and as ids that are equal
 * exactly when the words are (ids are shared by the hypothesis and its references). */
typedef struct {
    char *text; /* tokens joined by single spaces */
    size_t n; /* words */
    size_t *start, *len; /* (n) */
    int *id; /* (n) */
} ter_words;

static void ter_words_free(ter_words *w)
{
    free(w->text);
    free(w->start);
    free(w->len);
    free(w->id);
}

static int ter_words_read(ter_words *w, const char *line, const mt_ter_opts *o)
{
    memset(w, 0, sizeof *w);
    if (!(w->text = mt_tokenize_tercom(line, o))) return -1;
    size_t len = strlen(w->text);
    w->start = mt_xmalloc((len / 2 + 1) * sizeof *w->start);
    w->len = mt_xmalloc((len / 2 + 1) * sizeof *w->len);
    w->id = mt_xmalloc((len / 2 + 1) * sizeof *w->id);
    for (size_t i = 0; i < len;) {
        w->start[w->n] = i;
        while (i < len && w->text[i] != ' ') i++;
        w->len[w->n] = i - w->start[w->n];
        w->n++;
        i++;
    }
    return 0;
}

typedef struct {
    const char *s;
    size_t len;
    int *id; /* where the word's id goes */
} word_ref;

static int word_ref_cmp(const void *a, const void *b)
{
    const word_ref *x = a, *y = b;
    size_t m = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->s, y->s, m);
    if (c) return c;
    return (x->len > y->len) - (x->len < y->len);
}

/* Numbers the distinct words of sentences w[0..n). */
static void assign_word_ids(ter_words *w, size_t n)
{
    size_t total = 0;
    for (size_t k = 0; k < n; k++) total += w[k].n;
    word_ref *all = mt_xmalloc((total + 1) * sizeof *all);
    size_t m = 0;
    for (size_t k = 0; k < n; k++)
        for (size_t i = 0; i < w[k].n; i++)
            all[m++] = (word_ref){w[k].text + w[k].start[i], w[k].len[i], &w[k].id[i]};
    qsort(all, m, sizeof *all, word_ref_cmp);
    int id = -1;
    for (size_t i = 0; i < m; i++) {
        if (i == 0 || word_ref_cmp(&all[i - 1], &all[i]) != 0) id++;
        *all[i].id = id;
    }
    free(all);
}

/* ------------------------------------------------------------------ beam edit distance */

/* The edit distance matrix against one reference, for hypotheses of one length nh. */
typedef struct {
    const int *ref; /* (nr) */
    size_t nr, nh;
    int64_t *cost; /* (nh + 1, nr + 1) */
    char *op; /* (nh + 1, nr + 1) */
    int *rows_of; /* (nh) the hypothesis whose rows 1..rows_valid the matrix holds */
    size_t rows_valid;
    size_t beam; /* w */
    double ratio; /* nr / nh */
} ter_matrix;

static void ter_matrix_init(ter_matrix *m, const int *ref, size_t nr, size_t nh)
{
    m->ref = ref;
    m->nr = nr;
    m->nh = nh;
    size_t cells = (nh + 1) * (nr + 1);
    m->cost = mt_xmalloc(cells * sizeof *m->cost);
    m->op = mt_xmalloc(cells);
    m->rows_of = mt_xmalloc((nh + 1) * sizeof *m->rows_of);
    m->rows_valid = 0;
    for (size_t j = 0; j <= nr; j++) { /* row 0: insert the first j reference words */
        m->cost[j] = (int64_t)j;
        m->op[j] = OP_INS;
    }
    m->ratio = nh ? (double)nr / (double)nh : 1.0;
    m->beam = TER_BEAM_WIDTH;
    if (TER_BEAM_WIDTH < m->ratio / 2) m->beam = (size_t)ceil(m->ratio / 2 + TER_BEAM_WIDTH);
}

static void ter_matrix_free(ter_matrix *m)
{
    free(m->cost);
    free(m->op);
    free(m->rows_of);
}

/* Edit distance of hyp[0..nh) to the reference; the matrix then holds all of its rows. */
static int64_t beam_edit_distance(ter_matrix *m, const int *hyp)
{
    size_t nh = m->nh, nr = m->nr, W = nr + 1;
    size_t keep = 0;
    while (keep < m->rows_valid && m->rows_of[keep] == hyp[keep]) keep++;
    for (size_t i = keep + 1; i <= nh; i++) {
        int64_t *c = m->cost + i * W, *up = c - W;
        char *o = m->op + i * W;
        for (size_t j = 0; j <= nr; j++) c[j] = TER_INF, o[j] = OP_UNSET;
        int64_t diag = (int64_t)floor((double)i * m->ratio);
        int64_t lo = diag - (int64_t)m->beam, hi = diag + (int64_t)m->beam;
        size_t min_j = lo < 0 ? 0 : (size_t)lo;
        size_t max_j = hi < (int64_t)W ? (size_t)hi : W;
        if (i == nh) max_j = W;
        for (size_t j = min_j; j < max_j; j++) {
            if (j == 0) {
                c[0] = up[0] + 1, o[0] = OP_DEL;
                continue;
            }
            int same = hyp[i - 1] == m->ref[j - 1];
            int64_t sub = up[j - 1] + (same ? 0 : 1), del = up[j] + 1, ins = c[j - 1] + 1;
            if (c[j] > sub) c[j] = sub, o[j] = same ? OP_MATCH : OP_SUB;
            if (c[j] > del) c[j] = del, o[j] = OP_DEL;
            if (c[j] > ins) c[j] = ins, o[j] = OP_INS;
        }
        m->rows_of[i - 1] = hyp[i - 1];
    }
    m->rows_valid = nh;
    return m->cost[nh * W + nr];
}

/* The alignment of the hypothesis whose matrix was computed last, read off the backtrace:
 * align[r] = the hypothesis position reference word r is aligned to (-1: before the first),
 * hyp_err[h] / ref_err[r] = 1 where the word is not matched. */
static void backtrace_alignment(const ter_matrix *m, int *align, int *hyp_err, int *ref_err)
{
    size_t W = m->nr + 1, n_ops = 0;
    char *ops = mt_xmalloc(m->nh + m->nr + 1);
    for (size_t i = m->nh, j = m->nr; i > 0 || j > 0;) {
        char op = m->op[i * W + j];
        ops[n_ops++] = op;
        if (op == OP_MATCH || op == OP_SUB) i--, j--;
        else if (op == OP_INS) j--;
        else i--;
    }
    /* Walk forward. A hypothesis-word deletion is, from the reference's side, an extra
     * hypothesis word; a reference-word insertion is a reference word aligned to the
     * hypothesis position reached so far. */
    int h = -1, r = -1;
    while (n_ops > 0) {
        char op = ops[--n_ops];
        if (op == OP_MATCH || op == OP_SUB) {
            h++, r++;
            align[r] = h;
            hyp_err[h] = ref_err[r] = op == OP_SUB;
        } else if (op == OP_DEL) {
            hyp_err[++h] = 1;
        } else {
            r++;
            align[r] = h;
            ref_err[r] = 1;
        }
    }
    free(ops);
}

/* _perform_shift: words[start, start+len) moved before position target (Python slices). */
static void perform_shift(int *out, const int *w, size_t n, size_t start, size_t len, size_t target)
{
    size_t k = 0;
#define COPY(a, b) \
    for (size_t x = (a); x < (b); x++) out[k++] = w[x]
    if (target < start) {
        COPY(0, target);
        COPY(start, start + len);
        COPY(target, start);
        COPY(start + len, n);
    } else if (target > start + len) {
        COPY(0, start);
        COPY(start + len, target);
        COPY(start, start + len);
        COPY(target, n);
    } else {
        size_t mid = len + target < n ? len + target : n;
        COPY(0, start);
        COPY(start + len, mid);
        COPY(start, start + len);
        COPY(mid, n);
    }
#undef COPY
}

static int count_ones(const int *v, size_t from, size_t to)
{
    int s = 0;
    for (size_t i = from; i < to; i++) s += v[i];
    return s;
}

/* Candidates are ranked by (gain, length, -start, -target), the largest first. */
typedef struct {
    int64_t gain;
    size_t len, start, target;
} shift_rank;

static int rank_better(const shift_rank *a, const shift_rank *b)
{
    if (a->gain != b->gain) return a->gain > b->gain;
    if (a->len != b->len) return a->len > b->len;
    if (a->start != b->start) return a->start < b->start;
    return a->target < b->target;
}

/* One round of _shift: the best shift of hyp (into best_hyp), its gain in *gain (0 and
 * best_hyp = hyp when there is none). *checked counts the candidates tried so far. */
static void best_shift(ter_matrix *m, const int *hyp, int *best_hyp, int *scratch, int64_t *gain,
                       int *checked)
{
    size_t nh = m->nh, nr = m->nr;
    const int *ref = m->ref;
    int64_t before = beam_edit_distance(m, hyp);
    int *align = mt_xmalloc((nr + 1) * sizeof *align);
    int *hyp_err = mt_xcalloc(nh + 1, sizeof *hyp_err);
    int *ref_err = mt_xcalloc(nr + 1, sizeof *ref_err);
    backtrace_alignment(m, align, hyp_err, ref_err);

    shift_rank best = {0};
    int have_best = 0;
    memcpy(best_hyp, hyp, nh * sizeof *hyp);
    for (size_t sh = 0; sh < nh && *checked < TER_MAX_SHIFT_CANDIDATES; sh++) {
        for (size_t sr = 0; sr < nr && *checked < TER_MAX_SHIFT_CANDIDATES; sr++) {
            if ((sh > sr ? sh - sr : sr - sh) > TER_MAX_SHIFT_DIST) continue;
            for (size_t len = 1; len <= TER_MAX_SHIFT_SIZE && sh + len <= nh && sr + len <= nr &&
                                 hyp[sh + len - 1] == ref[sr + len - 1];
                 len++) {
                if (count_ones(hyp_err, sh, sh + len) == 0) continue;
                if (count_ones(ref_err, sr, sr + len) == 0) continue;
                if ((int)sh <= align[sr] && align[sr] < (int)(sh + len)) continue;
                long prev = -1;
                for (long k = -1; k < (long)len; k++) {
                    long at = (long)sr + k;
                    size_t target = at < 0 ? 0 : (size_t)(align[at] + 1);
                    if ((long)target == prev) continue;
                    prev = (long)target;
                    perform_shift(scratch, hyp, nh, sh, len, target);
                    shift_rank c = {before - beam_edit_distance(m, scratch), len, sh, target};
                    ++*checked;
                    if (!have_best || rank_better(&c, &best)) {
                        best = c;
                        have_best = 1;
                        memcpy(best_hyp, scratch, nh * sizeof *scratch);
                    }
                }
                if (*checked >= TER_MAX_SHIFT_CANDIDATES) break;
            }
        }
    }
    *gain = have_best ? best.gain : 0;
    free(align);
    free(hyp_err);
    free(ref_err);
}

/* translation_edit_rate: the edits of hyp against ref (shifts + final edit distance). */
static int64_t ter_edits(const int *hyp, size_t nh, const int *ref, size_t nr)
{
    if (nr == 0) return (int64_t)nh;
    ter_matrix m;
    ter_matrix_init(&m, ref, nr, nh);
    int *cur = mt_xmalloc((nh + 1) * sizeof *cur);
    int *next = mt_xmalloc((nh + 1) * sizeof *next);
    int *scratch = mt_xmalloc((nh + 1) * sizeof *scratch);
    memcpy(cur, hyp, nh * sizeof *hyp);
    int64_t shifts = 0;
    int checked = 0;
    for (;;) {
        int64_t gain;
        best_shift(&m, cur, next, scratch, &gain, &checked);
        if (checked >= TER_MAX_SHIFT_CANDIDATES || gain <= 0) break;
        shifts++;
        int *t = cur;
        cur = next;
        next = t;
    }
    int64_t edits = shifts + beam_edit_distance(&m, cur);
    free(cur);
    free(next);
    free(scratch);
    ter_matrix_free(&m);
    return edits;
}

/* ------------------------------------------------------------------ the metric */

int mt_ter_segment_stats(mt_ter_stats *out, const char *hyp, const char *const *refs, size_t n_refs,
                         const mt_ter_opts *opts)
{
    if (n_refs == 0) return mt_error("TER needs at least one reference");
    ter_words *w = mt_xcalloc(n_refs + 1, sizeof *w); /* w[0]: hypothesis, w[1..]: references */
    int rc = 0;
    if (ter_words_read(&w[0], hyp, opts) < 0) rc = mt_error_context("hypothesis");
    for (size_t r = 0; r < n_refs && rc == 0; r++)
        if (ter_words_read(&w[r + 1], refs[r], opts) < 0)
            rc = mt_error_context("reference %zu", r + 1);
    if (rc == 0) {
        assign_word_ids(w, n_refs + 1);
        int64_t best = TER_INF, ref_words = 0;
        for (size_t r = 1; r <= n_refs; r++) {
            int64_t e = ter_edits(w[0].id, w[0].n, w[r].id, w[r].n);
            if (e < best) best = e;
            ref_words += (int64_t)w[r].n;
        }
        out->edits = (double)best;
        out->ref_len = (double)ref_words / (double)n_refs;
    }
    for (size_t k = 0; k <= n_refs; k++) ter_words_free(&w[k]);
    free(w);
    return rc;
}

void mt_ter_stats_add(mt_ter_stats *acc, const mt_ter_stats *s)
{
    acc->edits += s->edits;
    acc->ref_len += s->ref_len;
}

double mt_ter_from_stats(const mt_ter_stats *s)
{
    double rate;
    if (s->ref_len > 0) rate = s->edits / s->ref_len;
    else if (s->edits > 0) rate = 1.0; /* empty references, non-empty hypotheses */
    else rate = 0.0;
    return 100 * rate;
}

int mt_ter_corpus(double *score, const char *const *hyps, size_t n, const char *const *const *refs,
                  size_t n_refs, const mt_ter_opts *opts)
{
    if (n_refs == 0) return mt_error("TER needs at least one reference");
    const char **seg_refs = mt_xcalloc(n_refs, sizeof *seg_refs);
    mt_ter_stats sum = {0};
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        for (size_t r = 0; r < n_refs; r++) seg_refs[r] = refs[r][i];
        mt_ter_stats s;
        if (mt_ter_segment_stats(&s, hyps[i], seg_refs, n_refs, opts) < 0)
            rc = mt_error_context("segment %zu", i + 1);
        else mt_ter_stats_add(&sum, &s);
    }
    free(seg_refs);
    if (rc == 0) *score = mt_ter_from_stats(&sum);
    return rc;
}

int mt_ter_sentence(double *score, const char *hyp, const char *const *refs, size_t n_refs,
                    const mt_ter_opts *opts)
{
    mt_ter_stats s;
    if (mt_ter_segment_stats(&s, hyp, refs, n_refs, opts) < 0) return -1;
    *score = mt_ter_from_stats(&s);
    return 0;
}

void mt_ter_signature(char *out, size_t out_len, const mt_ter_opts *o, size_t n_refs,
                      int short_form)
{
    snprintf(out, out_len,
             short_form ? "#:%zu|c:%s|t:tercom|nr:%s|pn:%s|as:%s|v:%s"
                        : "nrefs:%zu|case:%s|tok:tercom|norm:%s|punct:%s|asian:%s|version:%s",
             n_refs, o->case_sensitive ? "mixed" : "lc", o->normalized ? "yes" : "no",
             o->no_punct ? "no" : "yes", o->asian_support ? "yes" : "no", MT_SACREBLEU_VERSION);
}

void mt_ter_format(char *out, size_t out_len, double score, const char *signature, int width)
{
    int sig = signature && signature[0];
    snprintf(out, out_len, "TER%s%s = %.*f", sig ? "|" : "", sig ? signature : "", width, score);
}
