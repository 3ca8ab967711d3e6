/* BLEU, chrF, chrF++, the 13a tokenizer, lowercasing and `mtlab score`, against values that
 * sacreBLEU 2.6.0 itself produced (tests/fixtures/metrics/make_fixtures.py): scores to 1e-9,
 * printed lines and the command's output byte for byte. */
#include "test_util.h"

#include "cli/commands.h"
#include "eval/ngram_counter.h"
#include "mtlab/error.h"
#include "mtlab/metrics.h"

#include <jansson.h>
#include <unistd.h>

#define FIXTURES "tests/fixtures/metrics/"
#define TOL 1e-9

/* Field readers for the fixtures: string, number, integer, bool of object o's key k. */
#define JSTR(o, k) json_string_value(json_object_get((o), (k)))
#define JNUM(o, k) json_number_value(json_object_get((o), (k)))
#define JINT(o, k) json_integer_value(json_object_get((o), (k)))
#define JTRUE(o, k) json_is_true(json_object_get((o), (k)))
/* ...and element i of the array at key k */
#define JNUM_AT(o, k, i) json_number_value(json_array_get(json_object_get((o), (k)), (i)))
#define JINT_AT(o, k, i) json_integer_value(json_array_get(json_object_get((o), (k)), (i)))

static json_t *load_fixture(const char *path)
{
    json_error_t err;
    json_t *j = json_load_file(path, 0, &err);
    if (!j) fail_msg("%s:%d: %s", path, err.line, err.text);
    assert_string_equal(JSTR(j, "sacrebleu_version"), MT_SACREBLEU_VERSION);
    return j;
}

static void assert_close(double got, double want, const char *what, const char *case_name)
{
    if (!(fabs(got - want) <= TOL))
        fail_msg("%s: %s is %.17g, sacreBLEU says %.17g", case_name, what, got, want);
}

static void assert_same_text(const char *got, const char *want, const char *case_name)
{
    if (strcmp(got, want) != 0) fail_msg("%s:\n  got  '%s'\n  want '%s'", case_name, got, want);
}

/* ------------------------------------------------------------------ 13a tokenizer */

static void check_token_pairs(json_t *pairs)
{
    size_t i;
    json_t *pair;
    assert_true(json_array_size(pairs) > 0);
    json_array_foreach(pairs, i, pair)
    {
        const char *in = json_string_value(json_array_get(pair, 0));
        const char *want = json_string_value(json_array_get(pair, 1));
        char *got = mt_tokenize_13a(in);
        assert_non_null(got);
        if (strcmp(got, want) != 0) fail_msg("13a('%s'):\n  got  '%s'\n  want '%s'", in, got, want);
        free(got);
    }
}

static void test_tok13a_tricky_strings(void **state)
{
    (void)state;
    json_t *j = load_fixture(FIXTURES "tok13a.json");
    check_token_pairs(json_object_get(j, "tricky"));
    json_decref(j);
}

/* Property test: thousands of random strings of punctuation, digits, Unicode whitespace,
 * entities, '<skipped>', '-\n', scripts and emoji, token for token as sacreBLEU splits them. */
static void test_tok13a_random_strings_match_python(void **state)
{
    (void)state;
    json_t *j = load_fixture(FIXTURES "tok13a.json");
    json_t *random = json_object_get(j, "random");
    assert_true(json_array_size(random) >= 4000);
    check_token_pairs(random);
    json_decref(j);
}

static void test_tok13a_rescans_after_each_match(void **state)
{
    (void)state;
    /* re.sub resumes after a match: in "..1" rule b consumes ". ." (the space and the first
     * '.'), so the second '.' is never seen after a non-digit and stays glued to the '1';
     * overlapping matches would give ". . 1". */
    char *t = mt_tokenize_13a("..1 x,,5 1-2-3 a.,b");
    assert_string_equal(t, ". .1 x , ,5 1 - 2 - 3 a . , b");
    free(t);
}

/* ------------------------------------------------------------------ lowercasing */

static size_t put_utf8(char *d, uint32_t c)
{
    if (c < 0x80) {
        d[0] = (char)c;
        return 1;
    }
    if (c < 0x800) {
        d[0] = (char)(0xC0 | (c >> 6));
        d[1] = (char)(0x80 | (c & 0x3F));
        return 2;
    }
    if (c < 0x10000) {
        d[0] = (char)(0xE0 | (c >> 12));
        d[1] = (char)(0x80 | ((c >> 6) & 0x3F));
        d[2] = (char)(0x80 | (c & 0x3F));
        return 3;
    }
    d[0] = (char)(0xF0 | (c >> 18));
    d[1] = (char)(0x80 | ((c >> 12) & 0x3F));
    d[2] = (char)(0x80 | ((c >> 6) & 0x3F));
    d[3] = (char)(0x80 | (c & 0x3F));
    return 4;
}

/* changed[k] is [code point, its lowercase] */
static uint32_t changed_code_point(json_t *changed, size_t k)
{
    return (uint32_t)json_integer_value(json_array_get(json_array_get(changed, k), 0));
}

/* Every code point (but NUL, surrogates and the context-dependent 'Σ') in one string: its
 * lowercase must be Python's lowercase of each character, in order. */
static void test_lowercase_every_code_point(void **state)
{
    (void)state;
    json_t *j = load_fixture(FIXTURES "lowercase.json");
    json_t *changed = json_object_get(j, "changed");
    assert_true(json_array_size(changed) > 1000);
    size_t n_changed = json_array_size(changed), k = 0;
    char *in = malloc(4 * 0x110000 + 1), *want = malloc(8 * 0x110000 + 1);
    size_t li = 0, lw = 0;
    for (uint32_t c = 1; c < 0x110000; c++) {
        if ((c >= 0xD800 && c < 0xE000) || c == 0x3A3) continue;
        li += put_utf8(in + li, c);
        /* "changed" is sorted by code point: walk it alongside */
        while (k < n_changed && changed_code_point(changed, k) < c) k++;
        if (k < n_changed && changed_code_point(changed, k) == c) {
            const char *low = json_string_value(json_array_get(json_array_get(changed, k), 1));
            memcpy(want + lw, low, strlen(low));
            lw += strlen(low);
        } else {
            lw += put_utf8(want + lw, c);
        }
    }
    in[li] = want[lw] = '\0';
    char *got = mt_lowercase(in);
    assert_non_null(got);
    assert_int_equal(strlen(got), lw);
    assert_memory_equal(got, want, lw);
    free(got);
    free(in);
    free(want);
    json_decref(j);
}

/* Final sigma contexts ("ΟΔΟΣ" -> "οδος" with 'ς'), 'İ' -> "i̇", and random strings. */
static void test_lowercase_strings_match_python(void **state)
{
    (void)state;
    json_t *j = load_fixture(FIXTURES "lowercase.json");
    size_t i;
    json_t *pair;
    json_array_foreach(json_object_get(j, "strings"), i, pair)
    {
        const char *in = json_string_value(json_array_get(pair, 0));
        char *got = mt_lowercase(in);
        assert_non_null(got);
        assert_same_text(got, json_string_value(json_array_get(pair, 1)), in);
        free(got);
    }
    json_decref(j);
}

/* ------------------------------------------------------------------ scores from sacreBLEU */

typedef struct {
    const char **hyps; /* (n) */
    const char ***refs; /* (n_refs)(n) */
    const char *const *const *streams; /* refs, as the metrics API takes them */
    size_t n, n_refs;
} corpus;

static corpus corpus_from(json_t *scores, const char *name)
{
    json_t *c = json_object_get(json_object_get(scores, "corpora"), name);
    assert_non_null(c);
    json_t *hyps = json_object_get(c, "hyps"), *refs = json_object_get(c, "refs");
    corpus out = {.n = json_array_size(hyps), .n_refs = json_array_size(refs)};
    out.hyps = calloc(out.n, sizeof *out.hyps);
    out.refs = calloc(out.n_refs, sizeof *out.refs);
    for (size_t i = 0; i < out.n; i++) out.hyps[i] = json_string_value(json_array_get(hyps, i));
    for (size_t r = 0; r < out.n_refs; r++) {
        out.refs[r] = calloc(out.n, sizeof *out.refs[r]);
        json_t *stream = json_object_get(c, "refs");
        for (size_t i = 0; i < out.n; i++)
            out.refs[r][i] = json_string_value(json_array_get(json_array_get(stream, r), i));
    }
    out.streams = (const char *const *const *)out.refs;
    return out;
}

static void corpus_free(corpus *c)
{
    for (size_t r = 0; r < c->n_refs; r++) free(c->refs[r]);
    free(c->refs);
    free(c->hyps);
}

static mt_bleu_opts bleu_opts_from(json_t *cs)
{
    mt_bleu_opts o = mt_bleu_defaults();
    const char *smooth = JSTR(cs, "smooth");
    o.smooth = !strcmp(smooth, "floor")   ? MT_SMOOTH_FLOOR
               : !strcmp(smooth, "add-k") ? MT_SMOOTH_ADD_K
               : !strcmp(smooth, "none")  ? MT_SMOOTH_NONE
                                          : MT_SMOOTH_EXP;
    json_t *v = json_object_get(cs, "smooth_value");
    if (json_is_number(v)) o.smooth_value = json_number_value(v);
    o.lowercase = JTRUE(cs, "lowercase");
    o.effective_order = JTRUE(cs, "effective_order");
    return o;
}

static mt_chrf_opts chrf_opts_from(json_t *cs)
{
    mt_chrf_opts o = {
        .char_order = (int)JINT(cs, "char_order"),
        .word_order = (int)JINT(cs, "word_order"),
        .beta = (int)JINT(cs, "beta"),
        .lowercase = JTRUE(cs, "lowercase"),
        .whitespace = JTRUE(cs, "whitespace"),
        .eps_smoothing = JTRUE(cs, "eps_smoothing"),
    };
    return o;
}

static void check_bleu(const mt_bleu_score *s, json_t *want, const char *sig, const char *name)
{
    assert_close(s->score, JNUM(want, "score"), "score", name);
    assert_close(s->bp, JNUM(want, "bp"), "bp", name);
    assert_close(s->ratio, JNUM(want, "ratio"), "ratio", name);
    for (int n = 0; n < MT_BLEU_MAX_ORDER; n++) {
        assert_close(s->precisions[n], JNUM_AT(want, "precisions", n), "precision", name);
        assert_int_equal(s->counts[n], JINT_AT(want, "counts", n));
        assert_int_equal(s->totals[n], JINT_AT(want, "totals", n));
    }
    assert_int_equal(s->sys_len, JINT(want, "sys_len"));
    assert_int_equal(s->ref_len, JINT(want, "ref_len"));
    char line[512];
    mt_bleu_format(line, sizeof line, s, sig, 2);
    assert_same_text(line, JSTR(want, "line"), name);
    mt_bleu_format(line, sizeof line, s, NULL, 2);
    assert_same_text(line, JSTR(want, "line_no_signature"), name);
    mt_bleu_format(line, sizeof line, s, sig, 1);
    assert_same_text(line, JSTR(want, "line_width_1"), name);
}

static void run_bleu_case(json_t *scores, json_t *cs)
{
    const char *name = JSTR(cs, "name");
    corpus c = corpus_from(scores, JSTR(cs, "corpus"));
    mt_bleu_opts o = bleu_opts_from(cs);
    char sig[160];
    mt_bleu_signature(sig, sizeof sig, &o, c.n_refs, 1);
    assert_same_text(sig, JSTR(cs, "short_signature"), name);
    mt_bleu_signature(sig, sizeof sig, &o, c.n_refs, 0);
    assert_same_text(sig, JSTR(cs, "signature"), name);
    json_t *expected = json_object_get(cs, "expected");
    mt_bleu_score s;
    if (!strcmp(JSTR(cs, "level"), "corpus")) {
        assert_int_equal(mt_bleu_corpus(&s, c.hyps, c.n, c.streams, c.n_refs, &o), 0);
        check_bleu(&s, json_array_get(expected, 0), sig, name);
    } else {
        assert_int_equal(json_array_size(expected), c.n);
        const char **seg_refs = calloc(c.n_refs, sizeof *seg_refs);
        for (size_t i = 0; i < c.n; i++) {
            for (size_t r = 0; r < c.n_refs; r++) seg_refs[r] = c.refs[r][i];
            assert_int_equal(mt_bleu_sentence(&s, c.hyps[i], seg_refs, c.n_refs, &o), 0);
            check_bleu(&s, json_array_get(expected, i), sig, name);
        }
        free(seg_refs);
    }
    corpus_free(&c);
}

static void check_chrf(double score, const mt_chrf_opts *o, json_t *want, const char *sig,
                       const char *name)
{
    assert_close(score, JNUM(want, "score"), "score", name);
    char line[512];
    mt_chrf_format(line, sizeof line, score, o, sig, 2);
    assert_same_text(line, JSTR(want, "line"), name);
    mt_chrf_format(line, sizeof line, score, o, NULL, 2);
    assert_same_text(line, JSTR(want, "line_no_signature"), name);
}

static void run_chrf_case(json_t *scores, json_t *cs)
{
    const char *name = JSTR(cs, "name");
    corpus c = corpus_from(scores, JSTR(cs, "corpus"));
    mt_chrf_opts o = chrf_opts_from(cs);
    char sig[160];
    mt_chrf_signature(sig, sizeof sig, &o, c.n_refs, 1);
    assert_same_text(sig, JSTR(cs, "short_signature"), name);
    mt_chrf_signature(sig, sizeof sig, &o, c.n_refs, 0);
    assert_same_text(sig, JSTR(cs, "signature"), name);
    json_t *expected = json_object_get(cs, "expected");
    double score;
    if (!strcmp(JSTR(cs, "level"), "corpus")) {
        assert_int_equal(mt_chrf_corpus(&score, c.hyps, c.n, c.streams, c.n_refs, &o), 0);
        check_chrf(score, &o, json_array_get(expected, 0), sig, name);
    } else {
        const char **seg_refs = calloc(c.n_refs, sizeof *seg_refs);
        for (size_t i = 0; i < c.n; i++) {
            for (size_t r = 0; r < c.n_refs; r++) seg_refs[r] = c.refs[r][i];
            assert_int_equal(mt_chrf_sentence(&score, c.hyps[i], seg_refs, c.n_refs, &o), 0);
            check_chrf(score, &o, json_array_get(expected, i), sig, name);
        }
        free(seg_refs);
    }
    corpus_free(&c);
}

/* Every corpus (curly quotes, numbers, entities, <skipped>, empty lines, several references,
 * length ties, short segments...) x every smoothing, lowercase, effective order, corpus and
 * sentence level; chrF, chrF++, whitespace, eps smoothing, other orders and beta. */
static void test_scores_match_sacrebleu(void **state)
{
    (void)state;
    json_t *j = load_fixture(FIXTURES "scores.json");
    size_t i, n_bleu = 0, n_chrf = 0;
    json_t *cs;
    json_array_foreach(json_object_get(j, "cases"), i, cs)
    {
        if (!strcmp(JSTR(cs, "metric"), "bleu")) {
            run_bleu_case(j, cs);
            n_bleu++;
        } else {
            run_chrf_case(j, cs);
            n_chrf++;
        }
    }
    assert_true(n_bleu >= 100 && n_chrf >= 100);
    json_decref(j);
}

/* Per-segment statistics summed by the caller give the corpus score (how buckets use them). */
static void test_segment_stats_sum_to_corpus(void **state)
{
    (void)state;
    json_t *j = load_fixture(FIXTURES "scores.json");
    corpus c = corpus_from(j, "basic_two_refs");
    mt_bleu_opts bo = mt_bleu_defaults();
    mt_chrf_opts co = mt_chrfpp_defaults();
    mt_bleu_stats bsum = {0};
    mt_chrf_stats csum = {0};
    const char *seg_refs[2];
    for (size_t i = 0; i < c.n; i++) {
        for (size_t r = 0; r < c.n_refs; r++) seg_refs[r] = c.refs[r][i];
        mt_bleu_stats bs;
        mt_chrf_stats cst;
        assert_int_equal(mt_bleu_segment_stats(&bs, c.hyps[i], seg_refs, c.n_refs, &bo), 0);
        assert_int_equal(mt_chrf_segment_stats(&cst, c.hyps[i], seg_refs, c.n_refs, &co), 0);
        mt_bleu_stats_add(&bsum, &bs);
        mt_chrf_stats_add(&csum, &cst);
    }
    mt_bleu_score from_sum, corpus_score;
    mt_bleu_from_stats(&from_sum, &bsum, &bo);
    assert_int_equal(mt_bleu_corpus(&corpus_score, c.hyps, c.n, c.streams, c.n_refs, &bo), 0);
    assert_true(from_sum.score == corpus_score.score && from_sum.score > 0);
    double chrf_corpus;
    assert_int_equal(mt_chrf_corpus(&chrf_corpus, c.hyps, c.n, c.streams, c.n_refs, &co), 0);
    assert_true(mt_chrf_from_stats(&csum, &co) == chrf_corpus && chrf_corpus > 0);
    assert_int_equal(csum.n_orders, 8);
    corpus_free(&c);
    json_decref(j);
}

/* With several references, sacreBLEU keeps the statistics of the first reference with the best
 * segment F-score: on a tie (here "abc" matches neither reference, F = 0 against both) a later
 * reference must not replace it, or the corpus sums change. The expected values are sacreBLEU
 * 2.6.0's, from:
 *   python3 -c "from sacrebleu.metrics import CHRF; h=['abc','Sea la luz']; \
 *     r=[['xyz','Sea la luz'],['uvwxyz','Sea la luz']]; \
 *     print(repr(CHRF().corpus_score(h,r).score),
 * repr(CHRF(word_order=2).corpus_score(h,r).score))" which
 * prints 89.36988936988938 88.90241702741703 (with the references swapped, 67.19819495953145: the
 * order matters, so the first of the tied references must win). */
static void test_chrf_tie_keeps_first_reference(void **state)
{
    (void)state;
    const char *hyps[] = {"abc", "Sea la luz"};
    const char *ref1[] = {"xyz", "Sea la luz"}, *ref2[] = {"uvwxyz", "Sea la luz"};
    const char *const *refs[] = {ref1, ref2};
    const char *const *swapped[] = {ref2, ref1};
    mt_chrf_opts chrf = mt_chrf_defaults(), chrfpp = mt_chrfpp_defaults();
    double score;
    assert_int_equal(mt_chrf_corpus(&score, hyps, 2, refs, 2, &chrf), 0);
    assert_close(score, 89.36988936988938, "chrF2", "tied references");
    assert_int_equal(mt_chrf_corpus(&score, hyps, 2, refs, 2, &chrfpp), 0);
    assert_close(score, 88.90241702741703, "chrF2++", "tied references");
    assert_int_equal(mt_chrf_corpus(&score, hyps, 2, swapped, 2, &chrf), 0);
    assert_close(score, 67.19819495953145, "chrF2", "tied references, swapped");
    /* the segment's statistics are the first reference's: "xyz" has 3 character unigrams */
    mt_chrf_stats s;
    const char *seg_refs[] = {"xyz", "uvwxyz"};
    assert_int_equal(mt_chrf_segment_stats(&s, "abc", seg_refs, 2, &chrf), 0);
    assert_int_equal(s.ref[0], 3);
}

static void test_invalid_input_is_an_error(void **state)
{
    (void)state;
    /* bad lead byte, overlong '/', surrogate U+D800, above U+10FFFF, truncated euro sign */
    const char *bad[] = {"ab\xff", "\xc0\xaf", "x\xed\xa0\x80", "\xf4\x90\x80\x80", "\xe2\x82"};
    const size_t at[] = {2, 0, 1, 0, 0};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_null(mt_tokenize_13a(bad[i]));
        char want[64];
        snprintf(want, sizeof want, "invalid UTF-8 at byte %zu", at[i]);
        assert_non_null(strstr(mt_last_error(), want));
        assert_null(mt_lowercase(bad[i]));
    }
    char *ok = mt_tokenize_13a("\xf4\x8f\xbf\xbf"); /* U+10FFFF is valid */
    assert_non_null(ok);
    free(ok);

    const char *hyps[] = {"fine", "bad \xff"}, *ref0[] = {"fine", "fine"};
    const char *const *refs[] = {ref0};
    mt_bleu_opts bo = mt_bleu_defaults();
    mt_bleu_score s;
    assert_int_equal(mt_bleu_corpus(&s, hyps, 2, refs, 1, &bo), -1);
    assert_string_equal(mt_last_error(), "segment 2: hypothesis: invalid UTF-8 at byte 4 (0xFF)");
    const char *ref1[] = {"fine", "bad \xc3"}, *const * refs1[] = {ref0, ref1};
    const char *good[] = {"fine", "fine"};
    mt_chrf_opts co = mt_chrf_defaults();
    double score;
    assert_int_equal(mt_chrf_corpus(&score, good, 2, refs1, 2, &co), -1);
    assert_string_equal(mt_last_error(), "segment 2: reference 2: invalid UTF-8 at byte 4 (0xC3)");
    assert_int_equal(mt_bleu_corpus(&s, good, 2, refs, 0, &bo), -1);
    co.char_order = 0;
    assert_int_equal(mt_chrf_corpus(&score, good, 2, refs, 1, &co), -1);
    assert_non_null(strstr(mt_last_error(), "orders"));
}

static void test_ngram_counter(void **state)
{
    (void)state;
    mt_ngram_counter a = {0}, b = {0};
    char keys[5000][8];
    for (int i = 0; i < 5000; i++) {
        snprintf(keys[i], sizeof keys[i], "k%d", i);
        mt_ngram_add(&a, keys[i], strlen(keys[i]), i % 3 + 1);
    }
    mt_ngram_add(&a, "k7", 2, 10);
    assert_int_equal(a.used, 5000);
    assert_int_equal(mt_ngram_get(&a, "k7", 2), 12);
    assert_int_equal(mt_ngram_get(&a, "k4999", 5), 2);
    assert_int_equal(mt_ngram_get(&a, "k5000", 5), 0);
    assert_int_equal(mt_ngram_get(&b, "k1", 2), 0);
    mt_ngram_max(&b, "k7", 2, 3);
    mt_ngram_max(&b, "k7", 2, 1);
    mt_ngram_max(&b, "k1", 2, 5);
    assert_int_equal(b.total, 8);
    /* clipped: min(12, 3) + min(2, 5) */
    assert_int_equal(mt_ngram_clipped_matches(&a, &b), 5);
    mt_ngram_counter_free(&a);
    mt_ngram_counter_free(&b);
}

/* ------------------------------------------------------------------ mtlab score */

typedef test_captured captured;

/* Runs `mtlab score ARGS` in this process with stdout and stderr captured. */
static captured run_score(const char *const *args) { return test_run_command(&cmd_score, args); }

static void captured_free(captured *c) { test_captured_free(c); }

static void write_lines(const char *path, const char *const *lines, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    for (size_t i = 0; i < n; i++) fprintf(f, "%s\n", lines[i]);
    fclose(f);
}

/* The command prints what `sacrebleu REF -i HYP -m bleu chrf -f text -w 2` (and the JSON
 * format, chrF++, -lc with floor smoothing) printed for the same files. */
static void test_score_command_prints_like_sacrebleu(void **state)
{
    (void)state;
    json_t *j = load_fixture(FIXTURES "scores.json");
    char dir[] = "/tmp/mtlab_test_metrics_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char hyp[64], ref[2][64];
    snprintf(hyp, sizeof hyp, "%s/hyp.txt", dir);
    size_t i;
    json_t *cli;
    json_array_foreach(json_object_get(j, "cli"), i, cli)
    {
        const char *name = JSTR(cli, "corpus");
        corpus c = corpus_from(j, name);
        write_lines(hyp, c.hyps, c.n);
        for (size_t r = 0; r < c.n_refs; r++) {
            snprintf(ref[r], sizeof ref[r], "%s/ref%zu.txt", dir, r);
            write_lines(ref[r], c.refs[r], c.n);
        }
        struct {
            const char *key, *args[8];
        } runs[] = {
            {"text_bleu_chrf", {"-m", "bleu", "chrf", NULL}},
            {"json_bleu_chrf", {"-m", "bleu,chrf", "--json", NULL}},
            {"text_chrfpp", {"-m", "chrf++", NULL}},
            {"text_bleu_lc_floor", {"-m", "bleu", "--lowercase", "--smooth", "floor", NULL}},
        };
        for (size_t k = 0; k < sizeof runs / sizeof runs[0]; k++) {
            const char *args[16] = {"--hyp", hyp};
            size_t na = 2;
            for (size_t r = 0; r < c.n_refs; r++) args[na++] = "--ref", args[na++] = ref[r];
            for (const char *const *a = runs[k].args; *a; a++) args[na++] = *a;
            args[na] = NULL;
            captured out = run_score(args);
            assert_int_equal(out.rc, 0);
            assert_string_equal(out.err, "");
            assert_same_text(out.out, JSTR(cli, runs[k].key), runs[k].key);
            captured_free(&out);
        }
        corpus_free(&c);
    }
    remove(hyp);
    remove(ref[0]);
    remove(ref[1]);
    rmdir(dir);
    json_decref(j);
}

static void expect_failure(const char *const *args, int rc, const char *message)
{
    captured c = run_score(args);
    assert_int_equal(c.rc, rc);
    assert_string_equal(c.out, "");
    if (!strstr(c.err, message)) fail_msg("stderr '%s' lacks '%s'", c.err, message);
    captured_free(&c);
}

static void test_score_command_errors(void **state)
{
    (void)state;
    char dir[] = "/tmp/mtlab_test_metrics_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char hyp[64], ref[64], bad[64], empty[64], missing[64];
    snprintf(hyp, sizeof hyp, "%s/hyp.txt", dir);
    snprintf(ref, sizeof ref, "%s/ref.en", dir);
    snprintf(bad, sizeof bad, "%s/bad.txt", dir);
    snprintf(empty, sizeof empty, "%s/empty.txt", dir);
    snprintf(missing, sizeof missing, "%s/missing.txt", dir);
    test_write_text(hyp, "the first line here\nthe second line here\nand a third one\n");
    test_write_text(ref, "one\ntwo\nthree\nfour");
    test_write_text(bad, "one\ntwo\nfive \xe2\x82\n");
    test_write_text(empty, "");
    char msg[256];

    snprintf(msg, sizeof msg, "mtlab: %s has 3 lines but %s has 4\n", hyp, ref);
    expect_failure((const char *[]){"--hyp", hyp, "--ref", ref, NULL}, 1, msg);
    snprintf(msg, sizeof msg, "mtlab: %s:3: invalid UTF-8 at byte 5 (0xE2)\n", bad);
    expect_failure((const char *[]){"--hyp", hyp, "--ref", bad, NULL}, 1, msg);
    snprintf(msg, sizeof msg, "mtlab: %s is empty", empty);
    expect_failure((const char *[]){"--hyp", empty, "--ref", ref, NULL}, 1, msg);
    snprintf(msg, sizeof msg, "mtlab: %s: No such file or directory\n", missing);
    expect_failure((const char *[]){"--hyp", missing, "--ref", ref, NULL}, 1, msg);
    expect_failure((const char *[]){"--hyp", hyp, NULL}, 2, "usage: mtlab score");
    expect_failure((const char *[]){"--hyp", hyp, "--ref", hyp, "-m", "wer", NULL}, 2,
                   "unknown metric 'wer'");
    expect_failure((const char *[]){"--hyp", hyp, "--ref", hyp, "--smooth", "max", NULL}, 2,
                   "unknown smoothing 'max'");

    /* a hypothesis scored against itself is perfect */
    captured c = run_score((const char *[]){"--hyp", hyp, "--ref", hyp, "-m", "bleu", NULL});
    assert_int_equal(c.rc, 0);
    assert_non_null(strstr(c.out, "|tok:13a|smooth:exp|version:2.6.0 = 100.00 100.0/100.0/"));
    captured_free(&c);
    remove(hyp), remove(ref), remove(bad), remove(empty);
    rmdir(dir);
}

/* ------------------------------------------------------------------ the Bible test split */

/* Apertium's translation of data/bible/test.es against data/bible/test.en (committed as
 * fixtures): the library's scores and the command's output against sacreBLEU's. */
static void test_bible_apertium_matches_sacrebleu(void **state)
{
    (void)state;
    json_t *j = load_fixture(FIXTURES "bible/scores.json");
    const char *hyp = JSTR(j, "hyp_file");
    const char *ref = JSTR(j, "ref_file");
    mt_text_lines h, r;
    assert_int_equal(mt_text_lines_read(&h, hyp), 0);
    assert_int_equal(mt_text_lines_read(&r, ref), 0);
    assert_int_equal(h.n, JINT(j, "lines"));
    assert_int_equal(r.n, h.n);
    const char *const *refs[] = {(const char *const *)r.lines};
    const char *const *hyps = (const char *const *)h.lines;
    size_t i;
    json_t *cs;
    json_array_foreach(json_object_get(j, "cases"), i, cs)
    {
        const char *name = JSTR(cs, "name");
        json_t *want = json_array_get(json_object_get(cs, "expected"), 0);
        char sig[160];
        if (!strcmp(JSTR(cs, "metric"), "bleu")) {
            mt_bleu_opts o = bleu_opts_from(cs);
            mt_bleu_score s;
            assert_int_equal(mt_bleu_corpus(&s, hyps, h.n, refs, 1, &o), 0);
            mt_bleu_signature(sig, sizeof sig, &o, 1, 0);
            check_bleu(&s, want, sig, name);
        } else {
            mt_chrf_opts o = chrf_opts_from(cs);
            double score;
            assert_int_equal(mt_chrf_corpus(&score, hyps, h.n, refs, 1, &o), 0);
            mt_chrf_signature(sig, sizeof sig, &o, 1, 0);
            check_chrf(score, &o, want, sig, name);
        }
    }
    captured c =
        run_score((const char *[]){"--hyp", hyp, "--ref", ref, "-m", "bleu", "chrf", NULL});
    assert_int_equal(c.rc, 0);
    assert_same_text(c.out, JSTR(j, "text_bleu_chrf"), "mtlab score on the Bible");
    captured_free(&c);
    mt_text_lines_free(&h);
    mt_text_lines_free(&r);
    json_decref(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tok13a_tricky_strings),
        cmocka_unit_test(test_tok13a_random_strings_match_python),
        cmocka_unit_test(test_tok13a_rescans_after_each_match),
        cmocka_unit_test(test_lowercase_every_code_point),
        cmocka_unit_test(test_lowercase_strings_match_python),
        cmocka_unit_test(test_scores_match_sacrebleu),
        cmocka_unit_test(test_segment_stats_sum_to_corpus),
        cmocka_unit_test(test_chrf_tie_keeps_first_reference),
        cmocka_unit_test(test_invalid_input_is_an_error),
        cmocka_unit_test(test_ngram_counter),
        cmocka_unit_test(test_score_command_prints_like_sacrebleu),
        cmocka_unit_test(test_score_command_errors),
        cmocka_unit_test(test_bible_apertium_matches_sacrebleu),
    };
    return cmocka_run_group_tests_name("metrics", tests, NULL, NULL);
}
