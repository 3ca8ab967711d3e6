/* TER against values that sacreBLEU 2.6.0 itself produced (tests/fixtures/metrics/ter.json,
 * made by make_ter_tok_fixtures.py): the tercom tokenizer string for string, per-segment
 * statistics exactly, corpus scores, signatures and printed lines byte for byte; the tokenizer
 * under all 16 combinations of TER's options, the scores under six. */
#include "test_util.h"

#include "mtlab/error.h"
#include "mtlab/metrics.h"

#include <jansson.h>

#define FIXTURE "tests/fixtures/metrics/ter.json"

#define JSTR(o, k) json_string_value(json_object_get((o), (k)))
#define JNUM(o, k) json_number_value(json_object_get((o), (k)))

static json_t *load_fixture(void)
{
    json_error_t err;
    json_t *j = json_load_file(FIXTURE, 0, &err);
    if (!j) fail_msg("%s:%d: %s", FIXTURE, err.line, err.text);
    assert_string_equal(JSTR(j, "sacrebleu_version"), MT_SACREBLEU_VERSION);
    return j;
}

/* "1010" -> normalized, no_punct, asian_support, case_sensitive */
static mt_ter_opts opts_from_key(const char *key)
{
    assert_int_equal(strlen(key), 4);
    mt_ter_opts o = mt_ter_defaults();
    o.normalized = key[0] == '1';
    o.no_punct = key[1] == '1';
    o.asian_support = key[2] == '1';
    o.case_sensitive = key[3] == '1';
    return o;
}

static void assert_same_text(const char *got, const char *want, const char *what)
{
    if (strcmp(got, want) != 0) fail_msg("%s:\n  got  '%s'\n  want '%s'", what, got, want);
}

static void test_tercom_tokenizer_matches_sacrebleu(void **state)
{
    (void)state;
    json_t *j = load_fixture(), *set;
    size_t k, checked = 0;
    json_array_foreach(json_object_get(j, "tokens"), k, set)
    {
        mt_ter_opts o = opts_from_key(JSTR(set, "opts"));
        json_t *pair;
        size_t i;
        json_array_foreach(json_object_get(set, "pairs"), i, pair)
        {
            const char *in = json_string_value(json_array_get(pair, 0));
            char *got = mt_tokenize_tercom(in, &o);
            assert_non_null(got);
            char what[64];
            snprintf(what, sizeof what, "tercom[%s] of string %zu", JSTR(set, "opts"), i);
            assert_same_text(got, json_string_value(json_array_get(pair, 1)), what);
            free(got);
            checked++;
        }
    }
    assert_int_equal(k, 16);
    assert_true(checked >= 16 * 300);
    json_decref(j);
}

/* Every segment under every option set: the edits and the average reference length exactly. */
static void test_segment_stats_match_sacrebleu(void **state)
{
    (void)state;
    json_t *j = load_fixture(), *seg;
    size_t i, checked = 0;
    json_array_foreach(json_object_get(j, "segments"), i, seg)
    {
        json_t *refs_j = json_object_get(seg, "refs");
        size_t n_refs = json_array_size(refs_j);
        const char *refs[8];
        assert_true(n_refs >= 1 && n_refs <= 8);
        for (size_t r = 0; r < n_refs; r++) refs[r] = json_string_value(json_array_get(refs_j, r));
        const char *key;
        json_t *want;
        json_object_foreach(json_object_get(seg, "stats"), key, want)
        {
            mt_ter_opts o = opts_from_key(key);
            mt_ter_stats s;
            assert_int_equal(mt_ter_segment_stats(&s, JSTR(seg, "hyp"), refs, n_refs, &o), 0);
            double edits = json_number_value(json_array_get(want, 0));
            double ref_len = json_number_value(json_array_get(want, 1));
            if (s.edits != edits || s.ref_len != ref_len)
                fail_msg("%s [%s]: edits %.17g ref_len %.17g, sacreBLEU says %.17g %.17g",
                         JSTR(seg, "name"), key, s.edits, s.ref_len, edits, ref_len);
            checked++;
        }
    }
    assert_true(i >= 500);
    assert_true(checked >= 500 * 6);
    json_decref(j);
}

/* The segments of a corpus, looked up by name. */
static json_t *segment_named(json_t *segments, const char *name)
{
    json_t *seg;
    size_t i;
    json_array_foreach(segments, i, seg) if (!strcmp(JSTR(seg, "name"), name)) return seg;
    fail_msg("no segment '%s'", name);
    return NULL;
}

static void test_corpus_scores_signatures_and_lines(void **state)
{
    (void)state;
    json_t *j = load_fixture(), *segments = json_object_get(j, "segments"), *cs;
    size_t k;
    json_array_foreach(json_object_get(j, "corpora"), k, cs)
    {
        json_t *names = json_object_get(cs, "segments");
        size_t n = json_array_size(names);
        json_t *first = segment_named(segments, json_string_value(json_array_get(names, 0)));
        size_t n_refs = json_array_size(json_object_get(first, "refs"));
        const char **hyps = calloc(n, sizeof *hyps);
        const char **streams[8];
        for (size_t r = 0; r < n_refs; r++) streams[r] = calloc(n, sizeof *streams[r]);
        for (size_t i = 0; i < n; i++) {
            json_t *seg = segment_named(segments, json_string_value(json_array_get(names, i)));
            hyps[i] = JSTR(seg, "hyp");
            for (size_t r = 0; r < n_refs; r++)
                streams[r][i] = json_string_value(json_array_get(json_object_get(seg, "refs"), r));
        }
        mt_ter_opts o = opts_from_key(JSTR(cs, "opts"));
        char what[128], sig[160], line[256];
        snprintf(what, sizeof what, "%s [%s]", JSTR(cs, "name"), JSTR(cs, "opts"));
        double score;
        assert_int_equal(
            mt_ter_corpus(&score, hyps, n, (const char *const *const *)streams, n_refs, &o), 0);
        if (fabs(score - JNUM(cs, "score")) > 1e-9)
            fail_msg("%s: TER %.17g, sacreBLEU says %.17g", what, score, JNUM(cs, "score"));
        mt_ter_signature(sig, sizeof sig, &o, n_refs, 1);
        assert_same_text(sig, JSTR(cs, "short_signature"), what);
        mt_ter_format(line, sizeof line, score, sig, 2);
        assert_same_text(line, JSTR(cs, "line_short"), what);
        mt_ter_signature(sig, sizeof sig, &o, n_refs, 0);
        assert_same_text(sig, JSTR(cs, "signature"), what);
        mt_ter_format(line, sizeof line, score, sig, 2);
        assert_same_text(line, JSTR(cs, "line"), what);
        mt_ter_format(line, sizeof line, score, sig, 1);
        assert_same_text(line, JSTR(cs, "line_width_1"), what);
        mt_ter_format(line, sizeof line, score, NULL, 2);
        assert_same_text(line, JSTR(cs, "line_no_signature"), what);
        free(hyps);
        for (size_t r = 0; r < n_refs; r++) free(streams[r]);
    }
    assert_true(k >= 5 * 6);
    json_decref(j);
}

/* The whole Bible test split as `sacrebleu REF -i HYP -m ter [--ter-normalized
 * --ter-case-sensitive] -f text -w 2` prints it. */
static void test_bible_matches_sacrebleu_command(void **state)
{
    (void)state;
    json_t *j = load_fixture();
    mt_text_lines hyp, ref;
    assert_int_equal(mt_text_lines_read(&hyp, "tests/fixtures/metrics/bible/test.apertium.en"), 0);
    assert_int_equal(mt_text_lines_read(&ref, "tests/fixtures/metrics/bible/test.en"), 0);
    assert_int_equal(hyp.n, 919);
    assert_int_equal(ref.n, hyp.n);
    const char *const *refs[] = {(const char *const *)ref.lines};
    json_t *cli = json_object_get(j, "cli");
    for (size_t k = 0; k < 2; k++) {
        json_t *run = json_array_get(cli, k);
        mt_ter_opts o = mt_ter_defaults();
        o.normalized = o.case_sensitive = k == 1;
        assert_true((strstr(JSTR(run, "command"), "--ter-normalized") != NULL) == o.normalized);
        double score;
        assert_int_equal(mt_ter_corpus(&score, (const char *const *)hyp.lines, hyp.n, refs, 1, &o),
                         0);
        char sig[160], line[256];
        mt_ter_signature(sig, sizeof sig, &o, 1, 0);
        mt_ter_format(line, sizeof line, score, sig, 2);
        strcat(line, "\n");
        assert_same_text(line, JSTR(run, "output"), JSTR(run, "command"));
    }
    mt_text_lines_free(&hyp);
    mt_text_lines_free(&ref);
    json_decref(j);
}

/* Small cases worked by hand. */
static void test_hand_checked_cases(void **state)
{
    (void)state;
    mt_ter_opts o = mt_ter_defaults();
    mt_ter_stats s;
    /* "a b c" -> "a c b d": shifting "b" after "c" (1) and inserting "d" (1) */
    assert_int_equal(mt_ter_segment_stats(&s, "a b c", (const char *[]){"a c b d"}, 1, &o), 0);
    assert_true(s.edits == 2 && s.ref_len == 4);
    /* a rotation of 8 words is one shift of a 4-word block */
    assert_int_equal(
        mt_ter_segment_stats(&s, "e f g h a b c d", (const char *[]){"a b c d e f g h"}, 1, &o), 0);
    assert_true(s.edits == 1 && s.ref_len == 8);
    /* several references: the fewest edits, the average length (2 + 5) / 2 */
    assert_int_equal(mt_ter_segment_stats(&s, "A B", (const char *[]){"a b", "x a b y z"}, 2, &o),
                     0);
    assert_true(s.edits == 0 && s.ref_len == 3.5);
    /* case_sensitive keeps "A" apart from "a" */
    o.case_sensitive = 1;
    assert_int_equal(mt_ter_segment_stats(&s, "A B", (const char *[]){"a b"}, 1, &o), 0);
    assert_true(s.edits == 2 && s.ref_len == 2);
    /* empty references: every hypothesis word is an edit */
    o = mt_ter_defaults();
    assert_int_equal(mt_ter_segment_stats(&s, "a b c", (const char *[]){""}, 1, &o), 0);
    assert_true(s.edits == 3 && s.ref_len == 0);
    assert_true(mt_ter_from_stats(&s) == 100.0);
    assert_true(mt_ter_from_stats(&(mt_ter_stats){0, 0}) == 0.0);
    assert_true(mt_ter_from_stats(&(mt_ter_stats){1, 4}) == 25.0);

    char line[128], sig[128];
    mt_ter_signature(sig, sizeof sig, &o, 1, 0);
    assert_string_equal(sig, "nrefs:1|case:lc|tok:tercom|norm:no|punct:yes|asian:no|version:2.6.0");
    mt_ter_format(line, sizeof line, 25.925, "", 2);
    assert_string_equal(line, "TER = 25.93");
}

static void test_invalid_input_is_an_error(void **state)
{
    (void)state;
    mt_ter_opts o = mt_ter_defaults();
    mt_ter_stats s;
    assert_int_equal(mt_ter_segment_stats(&s, "a", (const char *[]){"b"}, 0, &o), -1);
    assert_non_null(strstr(mt_last_error(), "at least one reference"));
    const char *hyps[] = {"fine", "bad \xff byte"};
    const char *ref_stream[] = {"fine", "fine"};
    const char *const *refs[] = {ref_stream};
    double score;
    assert_int_equal(mt_ter_corpus(&score, hyps, 2, refs, 1, &o), -1);
    assert_non_null(strstr(mt_last_error(), "segment 2"));
    assert_non_null(strstr(mt_last_error(), "hypothesis"));
    assert_non_null(strstr(mt_last_error(), "invalid UTF-8 at byte 4"));
    const char *bad_ref[] = {"fine", "\xc3("};
    const char *const *refs2[] = {ref_stream, bad_ref};
    const char *good[] = {"fine", "fine"};
    assert_int_equal(mt_ter_corpus(&score, good, 2, refs2, 2, &o), -1);
    assert_non_null(strstr(mt_last_error(), "reference 2"));
    assert_null(mt_tokenize_tercom("\xe2\x82", &o));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tercom_tokenizer_matches_sacrebleu),
        cmocka_unit_test(test_segment_stats_match_sacrebleu),
        cmocka_unit_test(test_corpus_scores_signatures_and_lines),
        cmocka_unit_test(test_bible_matches_sacrebleu_command),
        cmocka_unit_test(test_hand_checked_cases),
        cmocka_unit_test(test_invalid_input_is_an_error),
    };
    return cmocka_run_group_tests_name("ter", tests, NULL, NULL);
}
