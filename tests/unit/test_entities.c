/* Named entities: the recognisers, the source filter, training statistics and their file, the
 * recall bins and their averaging, the source-side detector, and the English recogniser's
 * agreement with a reference tagger on the Bible valid+test references
 * (tests/fixtures/entities/make_reference.py). */
#include "test_util.h"

#include "entity_spans.h"
#include "mtlab/entities.h"
#include "mtlab/error.h"

#include <jansson.h>
#include <unistd.h>

#define REFERENCE_FIXTURE "tests/fixtures/entities/bible_reference.json"

/* The entities of text as one string, "A|B|C", for compact assertions. */
static void found(char *out, size_t len, const char *text, mt_ner_lang lang)
{
    mt_text_span *spans;
    size_t n;
    assert_int_equal(mt_entities_find(&spans, &n, text, lang), 0);
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        size_t used = strlen(out);
        snprintf(out + used, len - used, "%s%.*s", i ? "|" : "",
                 (int)(spans[i].end - spans[i].start), text + spans[i].start);
    }
    free(spans);
}

#define assert_entities(text, lang, expected)     \
    do {                                          \
        char got_[512];                           \
        found(got_, sizeof got_, (text), (lang)); \
        assert_string_equal(got_, (expected));    \
    } while (0)

static void test_english_names_not_sentence_words(void **state)
{
    (void)state;
    assert_entities("And David said to Saul, “Let no man fail because of him.”", MT_NER_ENGLISH,
                    "David|Saul");
    assert_entities("“Behold, Moab is my washpot.”", MT_NER_ENGLISH, "Moab");
    assert_entities("Lot went out. Then Abraham rose early.", MT_NER_ENGLISH, "Lot|Abraham");
    assert_entities("I will go. O Israel, hear!", MT_NER_ENGLISH, "Israel");
    assert_entities("THE SONG OF SONGS", MT_NER_ENGLISH, "");
    assert_entities("", MT_NER_ENGLISH, "");
}

static void test_english_multiword_titles_possessives(void **state)
{
    (void)state;
    assert_entities("Paul, an apostle of Jesus Christ, wrote to Titus.", MT_NER_ENGLISH,
                    "Paul|Jesus Christ|Titus");
    assert_entities("The Lord Yahweh says this.", MT_NER_ENGLISH, "Lord|Yahweh");
    assert_entities("They served King David’s son at Beth-shemesh.", MT_NER_ENGLISH,
                    "King David|Beth");
    /* at the start of a sentence "King" is an ordinary word */
    assert_entities("King Saul went home.", MT_NER_ENGLISH, "Saul");
    assert_entities("The Levites and the Egyptians went back to Egypt.", MT_NER_ENGLISH, "Egypt");
    assert_entities("a Jew, a Greek and Zenas", MT_NER_ENGLISH, "Zenas");
}

static void test_generic_recogniser(void **state)
{
    (void)state;
    assert_entities("Y dijo David á Saúl: No desmaye ninguno.", MT_NER_GENERIC, "David|Saúl");
    assert_entities("Él fué á Jerusalén. Después vino Pablo Apóstol.", MT_NER_GENERIC,
                    "Jerusalén|Pablo Apóstol");
    /* spans are byte offsets: "Ñuño" starts after the two-byte "é" */
    mt_text_span *spans;
    size_t n;
    assert_int_equal(mt_entities_find(&spans, &n, "té con Ñuño", MT_NER_GENERIC), 0);
    assert_int_equal(n, 1);
    assert_int_equal(spans[0].start, 8);
    assert_int_equal(spans[0].end, 14);
    free(spans);
}

static void test_invalid_utf8_is_an_error(void **state)
{
    (void)state;
    mt_text_span *spans;
    size_t n;
    assert_int_equal(mt_entities_find(&spans, &n, "David \xff Saul", MT_NER_ENGLISH), -1);
    assert_non_null(strstr(mt_last_error(), "invalid UTF-8 at byte 6"));
    mt_entity_set set;
    assert_int_equal(mt_entities_copyable(&set, "bad \xc3", "David", MT_NER_ENGLISH), -1);
    assert_non_null(strstr(mt_last_error(), "source: invalid UTF-8 at byte 4"));
}

static void test_ner_lang_names(void **state)
{
    (void)state;
    mt_ner_lang lang;
    assert_int_equal(mt_ner_lang_parse("english", &lang), 0);
    assert_int_equal(lang, MT_NER_ENGLISH);
    assert_int_equal(mt_ner_lang_parse("generic", &lang), 0);
    assert_int_equal(lang, MT_NER_GENERIC);
    assert_int_equal(mt_ner_lang_parse("klingon", &lang), -1);
    assert_non_null(strstr(mt_last_error(), "known: english, generic"));
    assert_int_equal(mt_ner_lang_for_code("en"), MT_NER_ENGLISH);
    assert_int_equal(mt_ner_lang_for_code("es"), MT_NER_GENERIC);
}

static void test_source_filter(void **state)
{
    (void)state;
    mt_entity_set set;
    /* Saul is spelt Saúl in the source: not copyable. David twice: kept once. */
    assert_int_equal(mt_entities_copyable(&set, "Y dijo David á Saúl en Jerusalem, y David fué",
                                          "And David said to Saul in Jerusalem, and David went",
                                          MT_NER_ENGLISH),
                     0);
    assert_int_equal(set.n, 2);
    assert_string_equal(set.names[0], "David");
    assert_string_equal(set.names[1], "Jerusalem");
    mt_entity_set_free(&set);
    /* case-sensitive substring, as the paper's `ne in src`: "Dan" is in "Daniel" */
    assert_int_equal(mt_entities_copyable(&set, "Daniel y DAVID", "Dan and David", MT_NER_ENGLISH),
                     0);
    assert_int_equal(set.n, 1);
    assert_string_equal(set.names[0], "Dan");
    mt_entity_set_free(&set);
    assert_true(mt_text_contains("Jerusalén", "Jerusal", 7));
    assert_false(mt_text_contains("abc", "", 0));
}

static void test_bins(void **state)
{
    (void)state;
    assert_int_equal(mt_ne_bin(0), MT_NE_UNSEEN);
    assert_int_equal(mt_ne_bin(1), MT_NE_REGULAR);
    assert_int_equal(mt_ne_bin(15), MT_NE_REGULAR);
    assert_int_equal(mt_ne_bin(16), MT_NE_FREQUENT);
    assert_int_equal(mt_ne_bin(100000), MT_NE_FREQUENT);
    assert_string_equal(mt_ne_bin_name(MT_NE_UNSEEN), "unseen");
    assert_string_equal(mt_ne_bin_name(MT_NE_FREQUENT), "frequent");
}

/* Training corpus: Israel copyable in 16 pairs (one of them naming it twice: counted once),
 * Moab in 15, Saul never (Saúl in the source). */
static mt_corpus_stats *tiny_training_stats(void)
{
    enum { N = 32 };
    const char *src[N], *ref[N];
    size_t n = 0;
    for (int i = 0; i < 15; i++) src[n] = "Israel salió", ref[n++] = "Israel went out";
    src[n] = "Israel e Israel", ref[n++] = "Israel and Israel";
    for (int i = 0; i < 15; i++) src[n] = "Moab vino", ref[n++] = "Moab came";
    src[n] = "Saúl", ref[n++] = "Saul";
    mt_corpus_stats *s = mt_corpus_stats_build(src, ref, n, MT_NER_ENGLISH, NULL, NULL);
    assert_non_null(s);
    return s;
}

static void test_stats_counts_pairs(void **state)
{
    (void)state;
    mt_corpus_stats *s = tiny_training_stats();
    assert_int_equal(mt_corpus_stats_pairs(s), 32);
    assert_int_equal(mt_corpus_stats_entities(s), 2);
    assert_int_equal(mt_corpus_stats_count(s, "Israel", 6), 16);
    assert_int_equal(mt_corpus_stats_count(s, "Moab", 4), 15);
    assert_int_equal(mt_corpus_stats_count(s, "Saul", 4), 0);
    mt_corpus_stats_free(s);
}

/* Recall by hand:
 *   Israel (16 pairs, frequent): s1 hit, s2 miss, s3 hit  -> 2/3
 *   Moab   (15, regular):        s1 hit                   -> 1
 *   Edom   (0, unseen):          s3 hit, s4 miss ("edom") -> 1/2
 *   Gad    (0, unseen):          s5 hit                   -> 1   (Asher is "Aser" in the source)
 * bins: frequent 2/3, regular 1, unseen (1/2 + 1)/2 = 3/4; all (2/3 + 1 + 1/2 + 1)/4 = 19/24. */
static void test_recall_bins_by_hand(void **state)
{
    (void)state;
    mt_corpus_stats *stats = tiny_training_stats();
    const char *src[] = {"Israel y Moab", "Israel fué", "Edom é Israel", "Edom", "Gad y Aser"};
    const char *ref[] = {"Israel and Moab", "Israel went", "Edom and Israel", "Edom",
                         "Gad and Asher"};
    const char *hyp[] = {"Israel and Moab", "They went", "Edom and Israel", "edom", "Gad"};
    mt_ne_testset ts;
    assert_int_equal(mt_ne_testset_build(&ts, src, ref, 5, MT_NER_ENGLISH, stats), 0);
    assert_int_equal(ts.n_names, 4);
    mt_ne_recall r;
    unsigned char hits[16];
    mt_ne_recall_score(&r, &ts, hyp, hits);
    assert_int_equal(r.entities[MT_NE_FREQUENT], 1);
    assert_int_equal(r.entities[MT_NE_REGULAR], 1);
    assert_int_equal(r.entities[MT_NE_UNSEEN], 2);
    assert_int_equal(r.occurrences[MT_NE_FREQUENT], 3);
    assert_int_equal(r.occurrences[MT_NE_UNSEEN], 3);
    assert_true(fabs(r.recall[MT_NE_FREQUENT] - 2.0 / 3.0) < 1e-12);
    assert_true(fabs(r.recall[MT_NE_REGULAR] - 1.0) < 1e-12);
    assert_true(fabs(r.recall[MT_NE_UNSEEN] - 0.75) < 1e-12);
    assert_true(fabs(r.recall_all - 19.0 / 24.0) < 1e-12);
    assert_int_equal(r.entities_all, 4);
    assert_int_equal(r.occurrences_all, 7);
    assert_int_equal(r.hits_all, 5);
    /* per-occurrence hits in test-set order: s1 Israel Moab, s2 Israel, s3 Edom Israel, s4 Edom, s5
     * Gad */
    assert_int_equal(ts.first[5], 7);
    const unsigned char expected[7] = {1, 1, 0, 1, 1, 0, 1};
    assert_memory_equal(hits, expected, 7);
    mt_ne_testset_free(&ts);

    /* without statistics every entity is unseen */
    assert_int_equal(mt_ne_testset_build(&ts, src, ref, 5, MT_NER_ENGLISH, NULL), 0);
    mt_ne_recall_score(&r, &ts, hyp, NULL);
    assert_int_equal(r.entities[MT_NE_UNSEEN], 4);
    assert_true(fabs(r.recall[MT_NE_UNSEEN] - 19.0 / 24.0) < 1e-12);
    mt_ne_testset_free(&ts);
    mt_corpus_stats_free(stats);
}

static void temp_path(char *out, size_t len, const char *name)
{
    snprintf(out, len, "/tmp/mtlab_test_entities_%d_%s", (int)getpid(), name);
}

static void test_stats_file_round_trip(void **state)
{
    (void)state;
    char path[256];
    temp_path(path, sizeof path, "stats.tsv");
    mt_corpus_stats *s = tiny_training_stats();
    assert_int_equal(mt_corpus_stats_write(s, path), 0);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char text[256] = "";
    size_t got = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[got] = '\0';
    assert_string_equal(text,
                        "# mtlab corpus_stats 1\n# pairs=32 ner=english\nIsrael\t16\nMoab\t15\n");
    mt_corpus_stats *back = mt_corpus_stats_read(path);
    assert_non_null(back);
    assert_int_equal(mt_corpus_stats_pairs(back), 32);
    assert_int_equal(mt_corpus_stats_entities(back), 2);
    assert_int_equal(mt_corpus_stats_lang(back), MT_NER_ENGLISH);
    assert_int_equal(mt_corpus_stats_count(back, "Israel", 6), 16);
    assert_int_equal(mt_corpus_stats_count(back, "Moab", 4), 15);
    mt_corpus_stats_free(back);
    mt_corpus_stats_free(s);
    unlink(path);
}

/* A malformed file is one clear line naming the file and line. */
static void expect_stats_error(const char *content, const char *message)
{
    char path[256];
    temp_path(path, sizeof path, "bad.tsv");
    test_write_text(path, content);
    assert_null(mt_corpus_stats_read(path));
    char expected[512];
    snprintf(expected, sizeof expected, "%s%s", path, message);
    if (strncmp(mt_last_error(), expected, strlen(expected)) != 0)
        fail_msg("got '%s', expected it to start with '%s'", mt_last_error(), expected);
    unlink(path);
}

static void test_stats_file_errors(void **state)
{
    (void)state;
    const char *head = "# mtlab corpus_stats 1\n# pairs=10 ner=english\n";
    char text[256];
    expect_stats_error("", ": empty file");
    expect_stats_error("Israel\t3\n", ":1: not a corpus_stats file");
    expect_stats_error("# mtlab corpus_stats 1\n# pairs=x\n",
                       ":2: expected '# pairs=N ner=english|generic'");
    snprintf(text, sizeof text, "%sIsrael 3\n", head);
    expect_stats_error(text, ":3: expected ENTITY<TAB>COUNT");
    snprintf(text, sizeof text, "%sIsrael\t3x\n", head);
    expect_stats_error(text, ":3: count '3x' is not a non-negative integer");
    snprintf(text, sizeof text, "%sIsrael\t11\n", head);
    expect_stats_error(text, ":3: count 11 for 'Israel' is outside 1..10");
    snprintf(text, sizeof text, "%sIsrael\t3\nMoab\t2\nIsrael\t1\n", head);
    expect_stats_error(text, ":5: 'Israel' is listed twice");
    snprintf(text, sizeof text, "%sIsr\xe9l\t3\n", head);
    expect_stats_error(text, ":3: invalid UTF-8 at byte 3");
    char missing[256];
    temp_path(missing, sizeof missing, "missing.tsv");
    assert_null(mt_corpus_stats_read(missing));
    assert_non_null(strstr(mt_last_error(), "No such file or directory"));
}

/* Without a lexicon (test_entity_lexicon.c has the cases with one): single name-shaped words
 * away from a sentence start; numbers are not names. */
static void test_source_detector(void **state)
{
    (void)state;
    char got[256];
    test_detected_entities(got, sizeof got,
                           "Y dijo David á Saúl: 3 cosas en Jerusalén Nueva, año 1909.", NULL);
    assert_string_equal(got, "David|Saúl|Jerusalén Nueva"); /* two capitalised words: one name */
    test_detected_entities(got, sizeof got, "Israel salió. Moab vino.", NULL);
    assert_string_equal(got, "");
    mt_text_span *spans;
    size_t n;
    assert_int_equal(mt_source_entities(&spans, &n, "\xc3\x28", NULL), -1);
}

/* Entity-set agreement with the reference tagger, micro-averaged over sentences:
 * precision = sum |ours & ref| / sum |ours|, recall = sum |ours & ref| / sum |ref|; on the raw
 * reference-side sets and on the copyable ones (kept when verbatim in the source), which are
 * what recall is computed on. */
typedef struct {
    size_t both, ours, ref;
} agreement;

static int listed_in(const char *const *list, size_t n, const char *s)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(list[i], s)) return 1;
    return 0;
}

static void agree_one(agreement *a, const char *src, const char *refs, json_t *ref_entities,
                      int copyable)
{
    enum { MAX = 128 };
    const char *mine[MAX], *theirs[MAX];
    char *owned[MAX];
    size_t n_mine = 0, n_theirs = 0, n_owned = 0;
    mt_text_span *spans;
    size_t n;
    assert_int_equal(mt_entities_find(&spans, &n, refs, MT_NER_ENGLISH), 0);
    for (size_t i = 0; i < n && n_owned < MAX; i++) {
        size_t len = spans[i].end - spans[i].start;
        char *e = strndup(refs + spans[i].start, len);
        owned[n_owned++] = e;
        if (copyable && !mt_text_contains(src, e, len)) continue;
        if (!listed_in(mine, n_mine, e)) mine[n_mine++] = e;
    }
    free(spans);
    for (size_t i = 0; i < json_array_size(ref_entities) && n_theirs < MAX; i++) {
        const char *e = json_string_value(json_array_get(ref_entities, i));
        assert_non_null(e);
        if (copyable && !mt_text_contains(src, e, strlen(e))) continue;
        if (!listed_in(theirs, n_theirs, e)) theirs[n_theirs++] = e;
    }
    for (size_t i = 0; i < n_mine; i++) a->both += (size_t)listed_in(theirs, n_theirs, mine[i]);
    a->ours += n_mine;
    a->ref += n_theirs;
    for (size_t i = 0; i < n_owned; i++) free(owned[i]);
}

static void test_agreement_with_reference_tagger(void **state)
{
    (void)state;
    json_error_t err;
    json_t *root = json_load_file(REFERENCE_FIXTURE, 0, &err);
    if (!root) fail_msg("%s:%d: %s", REFERENCE_FIXTURE, err.line, err.text);
    assert_int_equal(json_array_size(root), 673 + 919); /* Bible valid + test */
    agreement raw = {0}, copy = {0};
    for (size_t i = 0; i < json_array_size(root); i++) {
        json_t *item = json_array_get(root, i);
        const char *src = json_string_value(json_object_get(item, "src"));
        const char *ref = json_string_value(json_object_get(item, "ref"));
        json_t *ents = json_object_get(item, "entities");
        assert_true(src && ref && json_is_array(ents));
        agree_one(&raw, src, ref, ents, 0);
        agree_one(&copy, src, ref, ents, 1);
    }
    json_decref(root);
    double raw_p = (double)raw.both / (double)raw.ours, raw_r = (double)raw.both / (double)raw.ref;
    double copy_p = (double)copy.both / (double)copy.ours,
           copy_r = (double)copy.both / (double)copy.ref;
    print_message("agreement with the reference tagger: copyable P %.4f R %.4f (%zu/%zu/%zu), "
                  "raw P %.4f R %.4f (%zu/%zu/%zu)\n",
                  copy_p, copy_r, copy.both, copy.ours, copy.ref, raw_p, raw_r, raw.both, raw.ours,
                  raw.ref);
    /* The figures reached when the recogniser was written; a change must not lower them. */
    assert_true(copy_p >= 0.940);
    assert_true(copy_r >= 0.984);
    assert_true(raw_p >= 0.870);
    assert_true(raw_r >= 0.858);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_english_names_not_sentence_words),
        cmocka_unit_test(test_english_multiword_titles_possessives),
        cmocka_unit_test(test_generic_recogniser),
        cmocka_unit_test(test_invalid_utf8_is_an_error),
        cmocka_unit_test(test_ner_lang_names),
        cmocka_unit_test(test_source_filter),
        cmocka_unit_test(test_bins),
        cmocka_unit_test(test_stats_counts_pairs),
        cmocka_unit_test(test_recall_bins_by_hand),
        cmocka_unit_test(test_stats_file_round_trip),
        cmocka_unit_test(test_stats_file_errors),
        cmocka_unit_test(test_source_detector),
        cmocka_unit_test(test_agreement_with_reference_tagger),
    };
    return cmocka_run_group_tests_name("entities", tests, NULL, NULL);
}
