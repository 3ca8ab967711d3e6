/* BLEU's tokenizers (13a, none, intl, char, zh, flores101, flores200) against sacreBLEU 2.6.0
 * itself (tests/fixtures/metrics/tokenizers.json, made by make_ter_tok_fixtures.py): each
 * tokenizer's output string for string, and corpus BLEU with each, its signature and printed
 * line byte for byte. The flores tokenizers run with the SentencePiece models the fixture names.
 * ja-mecab the same way against tests/fixtures/metrics/ja_mecab.json (make_ja_mecab.py), with
 * the dictionary make builds (BUILD/mecab-ipadic). */
#include "test_util.h"

#include "mtlab/error.h"
#include "mtlab/metrics.h"

#include <jansson.h>

#define FIXTURE "tests/fixtures/metrics/tokenizers.json"
#define JA_FIXTURE "tests/fixtures/metrics/ja_mecab.json"

#define JSTR(o, k) json_string_value(json_object_get((o), (k)))
#define JNUM(o, k) json_number_value(json_object_get((o), (k)))

static json_t *fixture, *ja_fixture;
static mt_spm_pieces *flores[2]; /* flores101, flores200 */

static int setup(void **state)
{
    (void)state;
    json_error_t err;
    fixture = json_load_file(FIXTURE, 0, &err);
    if (!fixture) {
        fprintf(stderr, "%s:%d: %s\n", FIXTURE, err.line, err.text);
        return -1;
    }
    if (!(ja_fixture = json_load_file(JA_FIXTURE, 0, &err))) {
        fprintf(stderr, "%s:%d: %s\n", JA_FIXTURE, err.line, err.text);
        return -1;
    }
    json_t *models = json_object_get(fixture, "flores_models");
    const char *names[2] = {"flores101", "flores200"};
    for (int k = 0; k < 2; k++) {
        if (!(flores[k] = mt_spm_pieces_load(JSTR(models, names[k])))) {
            fprintf(stderr, "%s\n", mt_last_error());
            return -1;
        }
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    for (int k = 0; k < 2; k++) mt_spm_pieces_free(flores[k]);
    json_decref(fixture);
    json_decref(ja_fixture);
    return 0;
}

static const mt_spm_pieces *model_for(mt_bleu_tokenize t)
{
    return t == MT_BLEU_TOK_FLORES101 ? flores[0] : t == MT_BLEU_TOK_FLORES200 ? flores[1] : NULL;
}

static mt_bleu_tokenize tokenizer_named(const char *name)
{
    mt_bleu_tokenize t;
    if (mt_bleu_tokenize_parse(name, &t) < 0) fail_msg("%s", mt_last_error());
    return t;
}

static void assert_same_text(const char *got, const char *want, const char *what)
{
    if (strcmp(got, want) != 0) fail_msg("%s:\n  got  '%s'\n  want '%s'", what, got, want);
}

static void test_tokenizers_match_sacrebleu(void **state)
{
    (void)state;
    json_t *set;
    size_t k;
    json_array_foreach(json_object_get(fixture, "tokenizers"), k, set)
    {
        mt_bleu_tokenize t = tokenizer_named(JSTR(set, "tokenizer"));
        assert_string_equal(mt_bleu_tokenize_name(t), JSTR(set, "signature"));
        json_t *pairs = json_object_get(set, "pairs"), *pair;
        assert_true(json_array_size(pairs) >= 300);
        size_t i;
        json_array_foreach(pairs, i, pair)
        {
            const char *in = json_string_value(json_array_get(pair, 0));
            char *got = mt_tokenize_sacrebleu(t, model_for(t), in);
            if (!got) fail_msg("%s: %s", JSTR(set, "tokenizer"), mt_last_error());
            char what[64];
            snprintf(what, sizeof what, "%s of string %zu", JSTR(set, "tokenizer"), i);
            assert_same_text(got, json_string_value(json_array_get(pair, 1)), what);
            free(got);
        }
    }
    assert_int_equal(k, MT_BLEU_TOK_JA_MECAB); /* all but ja-mecab, whose fixture is its own */
}

typedef struct {
    const char **hyps;
    const char **streams[4];
    size_t n, n_refs;
    mt_text_lines files[2]; /* the Bible's hypothesis and reference files */
} corpus;

static const char **strings_of(json_t *a)
{
    const char **s = calloc(json_array_size(a) + 1, sizeof *s);
    for (size_t i = 0; i < json_array_size(a); i++) s[i] = json_string_value(json_array_get(a, i));
    return s;
}

static corpus corpus_named(const char *name)
{
    corpus c = {0};
    if (!strcmp(name, "bible")) {
        json_t *b = json_object_get(fixture, "bible");
        assert_int_equal(mt_text_lines_read(&c.files[0], JSTR(b, "hyp_file")), 0);
        assert_int_equal(mt_text_lines_read(&c.files[1], JSTR(b, "ref_file")), 0);
        c.n = c.files[0].n;
        c.n_refs = 1;
        c.hyps = calloc(c.n, sizeof *c.hyps);
        c.streams[0] = calloc(c.n, sizeof *c.streams[0]);
        for (size_t i = 0; i < c.n; i++) {
            c.hyps[i] = c.files[0].lines[i];
            c.streams[0][i] = c.files[1].lines[i];
        }
        return c;
    }
    json_t *j = json_object_get(json_object_get(fixture, "corpora"), name);
    assert_non_null(j);
    c.hyps = strings_of(json_object_get(j, "hyps"));
    c.n = json_array_size(json_object_get(j, "hyps"));
    json_t *refs = json_object_get(j, "refs");
    c.n_refs = json_array_size(refs);
    assert_true(c.n_refs >= 1 && c.n_refs <= 4);
    for (size_t r = 0; r < c.n_refs; r++) c.streams[r] = strings_of(json_array_get(refs, r));
    return c;
}

static void corpus_free(corpus *c)
{
    free(c->hyps);
    for (size_t r = 0; r < c->n_refs; r++) free(c->streams[r]);
    mt_text_lines_free(&c->files[0]);
    mt_text_lines_free(&c->files[1]);
}

static void test_bleu_with_each_tokenizer_matches_sacrebleu(void **state)
{
    (void)state;
    json_t *cs;
    size_t k;
    json_array_foreach(json_object_get(fixture, "scores"), k, cs)
    {
        corpus c = corpus_named(JSTR(cs, "corpus"));
        mt_bleu_opts o = mt_bleu_defaults();
        o.tokenize = tokenizer_named(JSTR(cs, "tokenizer"));
        o.spm = model_for(o.tokenize);
        o.lowercase = json_is_true(json_object_get(cs, "lowercase"));
        char what[96], sig[160], line[512];
        snprintf(what, sizeof what, "%s, %s%s", JSTR(cs, "corpus"), JSTR(cs, "tokenizer"),
                 o.lowercase ? ", lowercase" : "");
        mt_bleu_score s;
        if (mt_bleu_corpus(&s, c.hyps, c.n, (const char *const *const *)c.streams, c.n_refs, &o) <
            0)
            fail_msg("%s: %s", what, mt_last_error());
        if (fabs(s.score - JNUM(cs, "score")) > 1e-9)
            fail_msg("%s: BLEU %.17g, sacreBLEU says %.17g", what, s.score, JNUM(cs, "score"));
        mt_bleu_signature(sig, sizeof sig, &o, c.n_refs, 0);
        assert_same_text(sig, JSTR(cs, "signature"), what);
        mt_bleu_format(line, sizeof line, &s, sig, 2);
        assert_same_text(line, JSTR(cs, "line"), what);
        mt_bleu_signature(sig, sizeof sig, &o, c.n_refs, 1);
        assert_same_text(sig, JSTR(cs, "short_signature"), what);
        mt_bleu_format(line, sizeof line, &s, sig, 1);
        assert_same_text(line, JSTR(cs, "line_width_1"), what);
        corpus_free(&c);
    }
    assert_true(k >= 3 * MT_BLEU_TOK_JA_MECAB * 2);
}

/* Runs first: the process's MeCab tagger is made on first success only, so a dictionary that
 * is missing, or is not sacreBLEU's, is refused with its path and nothing is cached. Debian's
 * own compiled ipadic (mecab-ipadic) has the one entry more that sacreBLEU refuses. */
static void test_ja_mecab_refuses_other_dictionaries(void **state)
{
    (void)state;
    setenv("MTLAB_MECAB_DIC", "tests/fixtures/metrics/no-such-dic", 1);
    assert_null(mt_tokenize_sacrebleu(MT_BLEU_TOK_JA_MECAB, NULL, "日本語"));
    assert_non_null(strstr(mt_last_error(), "ja-mecab: tests/fixtures/metrics/no-such-dic: "));
    setenv("MTLAB_MECAB_DIC", "/var/lib/mecab/dic/ipadic", 1);
    assert_null(mt_tokenize_sacrebleu(MT_BLEU_TOK_JA_MECAB, NULL, "日本語"));
    assert_string_equal(
        mt_last_error(),
        "ja-mecab: /var/lib/mecab/dic/ipadic: a dictionary of 392127 entries; "
        "sacreBLEU's ja-mecab needs the IPA dictionary of 392126 and no user dictionary");
    unsetenv("MTLAB_MECAB_DIC");
}

static void test_ja_mecab_matches_sacrebleu(void **state)
{
    (void)state;
    assert_int_equal(JNUM(ja_fixture, "dictionary_size"), 392126);
    json_t *pairs = json_object_get(ja_fixture, "pairs"), *pair;
    assert_true(json_array_size(pairs) >= 1000);
    size_t i;
    json_array_foreach(pairs, i, pair)
    {
        const char *in = json_string_value(json_array_get(pair, 0));
        char *got = mt_tokenize_sacrebleu(MT_BLEU_TOK_JA_MECAB, NULL, in);
        if (!got) fail_msg("ja-mecab of string %zu: %s", i, mt_last_error());
        char what[64];
        snprintf(what, sizeof what, "ja-mecab of string %zu", i);
        assert_same_text(got, json_string_value(json_array_get(pair, 1)), what);
        free(got);
    }
    /* 令和 is two words in sacreBLEU's dictionary (one in Debian's, which adds the era) */
    char *reiwa = mt_tokenize_sacrebleu(MT_BLEU_TOK_JA_MECAB, NULL, "\u3000令和元年\n");
    assert_string_equal(reiwa, "令 和 元年");
    free(reiwa);

    json_t *cs;
    size_t k;
    json_array_foreach(json_object_get(ja_fixture, "scores"), k, cs)
    {
        json_t *j = json_object_get(json_object_get(ja_fixture, "corpora"), JSTR(cs, "corpus"));
        const char **hyps = strings_of(json_object_get(j, "hyps"));
        const char **streams[2] = {0};
        size_t n_refs = json_array_size(json_object_get(j, "refs"));
        assert_true(n_refs >= 1 && n_refs <= 2);
        for (size_t r = 0; r < n_refs; r++)
            streams[r] = strings_of(json_array_get(json_object_get(j, "refs"), r));
        mt_bleu_opts o = mt_bleu_defaults();
        o.tokenize = MT_BLEU_TOK_JA_MECAB;
        o.lowercase = json_is_true(json_object_get(cs, "lowercase"));
        char what[96], sig[160], line[512];
        snprintf(what, sizeof what, "ja-mecab, %s%s", JSTR(cs, "corpus"),
                 o.lowercase ? ", lowercase" : "");
        mt_bleu_score s;
        if (mt_bleu_corpus(&s, hyps, json_array_size(json_object_get(j, "hyps")),
                           (const char *const *const *)streams, n_refs, &o) < 0)
            fail_msg("%s: %s", what, mt_last_error());
        if (fabs(s.score - JNUM(cs, "score")) > 1e-9)
            fail_msg("%s: BLEU %.17g, sacreBLEU says %.17g", what, s.score, JNUM(cs, "score"));
        mt_bleu_signature(sig, sizeof sig, &o, n_refs, 0);
        assert_same_text(sig, JSTR(cs, "signature"), what);
        mt_bleu_format(line, sizeof line, &s, sig, 2);
        assert_same_text(line, JSTR(cs, "line"), what);
        mt_bleu_signature(sig, sizeof sig, &o, n_refs, 1);
        assert_same_text(sig, JSTR(cs, "short_signature"), what);
        free(hyps);
        for (size_t r = 0; r < n_refs; r++) free(streams[r]);
    }
    assert_int_equal(k, 4);
}

static void test_names_and_errors(void **state)
{
    (void)state;
    for (int t = 0; t < MT_BLEU_TOK_COUNT; t++) {
        mt_bleu_tokenize back;
        assert_int_equal(mt_bleu_tokenize_parse(mt_bleu_tokenize_name((mt_bleu_tokenize)t), &back),
                         0);
        assert_int_equal(back, t);
    }
    assert_null(mt_bleu_tokenize_name(MT_BLEU_TOK_COUNT));
    mt_bleu_tokenize t;
    assert_int_equal(mt_bleu_tokenize_parse("ko-mecab", &t), -1);
    assert_string_equal(mt_last_error(),
                        "unknown tokenizer 'ko-mecab' "
                        "(13a, none, intl, char, zh, flores101, flores200, ja-mecab)");

    /* the default stays 13a */
    mt_bleu_opts o = mt_bleu_defaults();
    assert_int_equal(o.tokenize, MT_BLEU_TOK_13A);
    char sig[160];
    mt_bleu_signature(sig, sizeof sig, &o, 1, 0);
    assert_string_equal(sig, "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0");

    /* a flores tokenizer without its model is an error, not 13a */
    o.tokenize = MT_BLEU_TOK_FLORES200;
    mt_bleu_score s;
    assert_int_equal(mt_bleu_sentence(&s, "a b", (const char *[]){"a b"}, 1, &o), -1);
    assert_non_null(strstr(mt_last_error(), "tokenizer flores200 needs a SentencePiece model"));
    assert_null(mt_tokenize_sacrebleu(MT_BLEU_TOK_FLORES101, NULL, "x"));

    assert_null(mt_spm_pieces_load("tests/fixtures/metrics/no-such.model"));
    assert_non_null(strstr(mt_last_error(), "tests/fixtures/metrics/no-such.model"));
    assert_null(mt_spm_pieces_load(FIXTURE));
    assert_non_null(strstr(mt_last_error(), FIXTURE));

    assert_null(mt_tokenize_sacrebleu(MT_BLEU_TOK_INTL, NULL, "bad \xff"));
    assert_null(mt_spm_pieces_encode(flores[1], "bad \xff"));
    assert_non_null(strstr(mt_last_error(), "invalid UTF-8 at byte 4"));
}

/* Hand-checked behaviour the fixture also covers, spelled out. */
static void test_tokenizer_rules(void **state)
{
    (void)state;
    struct {
        mt_bleu_tokenize t;
        const char *in, *want;
    } cases[] = {
        /* intl: punctuation splits unless next to a number; a final "5." keeps its dot */
        {MT_BLEU_TOK_INTL, "Hello, world! 1,000.5 in 1990.", "Hello , world ! 1,000.5 in 1990."},
        {MT_BLEU_TOK_INTL, "«Sí» $5 €3", "« Sí » $ 5 € 3"},
        /* char: whitespace characters are tokens too (BLEU then drops them by splitting) */
        {MT_BLEU_TOK_CHAR, "ab c", "a b   c"},
        {MT_BLEU_TOK_NONE, " a\t b ", " a\t b "},
        /* zh: CJK characters one by one; sacreBLEU's range bug also splits U+2001..U+2A6D */
        {MT_BLEU_TOK_ZH, "中文text，好", "中 文 text ， 好"},
        {MT_BLEU_TOK_ZH, "a—b…c", "a — b … c"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *got = mt_tokenize_sacrebleu(cases[i].t, NULL, cases[i].in);
        assert_non_null(got);
        assert_same_text(got, cases[i].want, cases[i].in);
        free(got);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ja_mecab_refuses_other_dictionaries), /* before any tagger is made */
        cmocka_unit_test(test_tokenizers_match_sacrebleu),
        cmocka_unit_test(test_ja_mecab_matches_sacrebleu),
        cmocka_unit_test(test_bleu_with_each_tokenizer_matches_sacrebleu),
        cmocka_unit_test(test_names_and_errors),
        cmocka_unit_test(test_tokenizer_rules),
    };
    return cmocka_run_group_tests_name("bleu_tokenizers", tests, setup, teardown);
}
