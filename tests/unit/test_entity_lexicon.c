/* The bilingual entity lexicon (docs/metrics.md §8) learned from a small fixture corpus
 * (tests/fixtures/entities/lexicon_train.{es,en}), the source detector that uses it, the fate
 * of a name in a translation (copied, translated, dropped), the translated-aware recall, the
 * lexicon file and its errors, and the lexicon shipped with models/transformer-small. */
#include "test_util.h"

#include "entity_spans.h"

#include <math.h>
#include <unistd.h>

#include "mtlab/entities.h"
#include "mtlab/error.h"
#include "mtlab/metrics.h"

#define FIXTURE "tests/fixtures/entities/lexicon_train"

static mt_entity_lexicon *fixture_lexicon(void)
{
    mt_text_lines src = {0}, tgt = {0};
    if (mt_text_lines_read(&src, FIXTURE ".es") != 0 ||
        mt_text_lines_read(&tgt, FIXTURE ".en") != 0)
        fail_msg("%s", mt_last_error());
    assert_int_equal(src.n, tgt.n);
    mt_entity_lexicon *l = mt_entity_lexicon_build(
        (const char *const *)src.lines, (const char *const *)tgt.lines, src.n, NULL, NULL);
    if (!l) fail_msg("%s", mt_last_error());
    mt_text_lines_free(&src);
    mt_text_lines_free(&tgt);
    return l;
}

/* The forms of a name as "A|B", "" when it has none. */
static void forms_of(char *out, size_t len, const mt_entity_lexicon *l, const char *name)
{
    const char *const *forms;
    size_t n = mt_entity_lexicon_forms(l, name, strlen(name), &forms, NULL, NULL);
    out[0] = '\0';
    for (size_t k = 0; k < n; k++) {
        size_t used = strlen(out);
        snprintf(out + used, len - used, "%s%s", k ? "|" : "", forms[k]);
    }
}

static void test_lexicon_learns_forms(void **state)
{
    (void)state;
    mt_entity_lexicon *l = fixture_lexicon();
    char got[128];
    static const char *const pairs[][2] = {
        {"Dios", "God"},      {"Juan", "John"},    {"Moisés", "Moses"}, {"Roma", "Rome"},
        {"Pedro", "Peter"},   {"Marta", "Martha"}, {"Jesús", "Jesus"},  {"España", "Spain"},
        {"Israel", "Israel"}, /* verbatim identity counts too */
    };
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        forms_of(got, sizeof got, l, pairs[i][0]);
        if (strcmp(got, pairs[i][1]) != 0)
            fail_msg("%s: forms '%s', expected '%s'", pairs[i][0], got, pairs[i][1]);
    }
    /* capitalised only at a sentence start, and written in lower case: not a name */
    assert_false(mt_entity_lexicon_is_name(l, "Banco", 5));
    assert_false(mt_entity_lexicon_is_name(l, "Entonces", 8));
    assert_int_equal(mt_entity_lexicon_names(l), 9);
    assert_int_equal(mt_entity_lexicon_pairs(l), 23);
    /* ordinary words: written in lower case, looked up in any case */
    static const char *const ordinary[] = {"que",   "Que",    "banco", "Banco",
                                           "MONTE", "pueblo", "habló"};
    for (size_t i = 0; i < sizeof ordinary / sizeof ordinary[0]; i++)
        if (!mt_entity_lexicon_is_word(l, ordinary[i], strlen(ordinary[i])))
            fail_msg("'%s' is not an ordinary word", ordinary[i]);
    /* names, words never written in lower case, one letter: not ordinary words */
    static const char *const not_ordinary[] = {"Dios",     "Marta", "Entonces", "Cuando",
                                               "Valencia", "y",     "a"};
    for (size_t i = 0; i < sizeof not_ordinary / sizeof not_ordinary[0]; i++)
        if (mt_entity_lexicon_is_word(l, not_ordinary[i], strlen(not_ordinary[i])))
            fail_msg("'%s' is an ordinary word", not_ordinary[i]);
    const char *const *forms;
    const double *dice;
    const size_t *pairs_with;
    assert_int_equal(mt_entity_lexicon_forms(l, "Dios", 4, &forms, &dice, &pairs_with), 1);
    assert_true(fabs(dice[0] - 1.0) < 1e-12); /* 2 * 4 / (4 + 4) */
    assert_int_equal(pairs_with[0], 4);
    mt_entity_lexicon_free(l);
}

static void test_detector_with_corpus(void **state)
{
    (void)state;
    mt_entity_lexicon *l = fixture_lexicon();
    char got[128];
    /* names of the corpus are names at the start of a sentence too */
    test_detected_entities(got, sizeof got, "Marta lloró. Pedro salió. Jesús habló.", l);
    assert_string_equal(got, "Marta|Pedro|Jesús");
    test_detected_entities(got, sizeof got, "Marta lloró. Pedro salió. Jesús habló.", NULL);
    assert_string_equal(got, "");
    test_detected_entities(got, sizeof got, "Pedro y Juan fueron a Roma", l);
    assert_string_equal(got, "Pedro|Juan|Roma");
    /* numbers are not names */
    test_detected_entities(got, sizeof got, "En 2015 vino Israel.", l);
    assert_string_equal(got, "Israel");
    /* punctuation splits; a sentence-initial word the corpus does not call a name is none */
    test_detected_entities(got, sizeof got, "Banco, España", l);
    assert_string_equal(got, "España");
    test_detected_entities(got, sizeof got, "Vino el Banco, España.", l);
    assert_string_equal(got, "España");
    test_detected_entities(got, sizeof got, "Vino el Banco, España.", NULL);
    assert_string_equal(got, "Banco|España");
    /* verses joined into a paragraph: a capitalised ordinary word of the corpus inside a
     * sentence is none; a capitalised word the corpus never saw is a name */
    test_detected_entities(got, sizeof got, "Y subió al monte, Que era bueno, Cuando vino Valencia",
                           l);
    assert_string_equal(got, "Cuando|Valencia");
    test_detected_entities(got, sizeof got, "Y subió al monte, Que era bueno, Cuando vino Valencia",
                           NULL);
    assert_string_equal(got, "Que|Cuando|Valencia");
    /* a repeated name is found every time (the workbench lists it once, with a count) */
    test_detected_entities(got, sizeof got, "Dios dijo: Dios es Dios.", l);
    assert_string_equal(got, "Dios|Dios|Dios");
    mt_entity_lexicon_free(l);
}

static mt_entity_fate fate(const char *hyp, const char *name, const mt_entity_lexicon *l,
                           const char **form)
{
    *form = NULL;
    return mt_entity_fate_in(hyp, name, strlen(name), l, form);
}

static void test_fates(void **state)
{
    (void)state;
    mt_entity_lexicon *l = fixture_lexicon();
    const char *form;
    /* every pane wrote God: translated, not dropped */
    const char *panes[] = {"God said: God is God.", "And God spoke.", "God"};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(fate(panes[i], "Dios", l, &form), MT_ENTITY_TRANSLATED);
        assert_string_equal(form, "God");
    }
    const char *hyp = "Peter and John went to Rome";
    assert_int_equal(fate(hyp, "Pedro", l, &form), MT_ENTITY_TRANSLATED);
    assert_string_equal(form, "Peter");
    assert_int_equal(fate(hyp, "Juan", l, &form), MT_ENTITY_TRANSLATED);
    assert_string_equal(form, "John");
    assert_int_equal(fate(hyp, "Roma", l, &form), MT_ENTITY_TRANSLATED);
    assert_string_equal(form, "Rome");
    assert_int_equal(fate("And Moses spoke.", "Moisés", l, &form), MT_ENTITY_TRANSLATED);
    assert_int_equal(fate("And Moisés spoke.", "Moisés", l, &form), MT_ENTITY_COPIED);
    assert_null(form);
    assert_int_equal(fate("And Israel went.", "Israel", l, &form), MT_ENTITY_COPIED);
    assert_int_equal(fate("And he spoke.", "Moisés", l, &form), MT_ENTITY_DROPPED);
    /* without a lexicon a name is copied or dropped */
    assert_int_equal(fate("And Moses spoke.", "Moisés", NULL, &form), MT_ENTITY_DROPPED);
    mt_entity_lexicon_free(l);
}

static void test_translated_aware_recall(void **state)
{
    (void)state;
    mt_entity_lexicon *l = fixture_lexicon();
    const char *src[] = {"Y habló Dios a Moisés.", "Y vino Israel."};
    const char *ref[] = {"And God spoke to Moses.", "And Israel came."};
    mt_ne_testset paper, ts;
    assert_int_equal(mt_ne_testset_build(&paper, src, ref, 2, MT_NER_ENGLISH, NULL), 0);
    assert_int_equal(mt_ne_testset_build_translated(&ts, src, ref, 2, MT_NER_ENGLISH, NULL, l), 0);
    assert_int_equal(paper.n_names, 1); /* Israel: the only copyable one */
    assert_int_equal(ts.n_names, 3); /* God, Moses, Israel */
    assert_int_equal(ts.train_count[0], 4); /* God: pairs with Dios and God in the lexicon */
    const char *translated[] = {"And God spoke to Moses.", "And Israel came."};
    const char *copied[] = {"And Dios spoke to Moisés.", "And Israel came."};
    const char *dropped[] = {"And he spoke to him.", "And they came."};
    mt_ne_recall r;
    mt_ne_recall_score(&r, &ts, translated, NULL);
    assert_int_equal(r.hits_all, 3);
    mt_ne_recall_score(&r, &ts, copied, NULL);
    assert_int_equal(r.hits_all, 3);
    mt_ne_recall_score(&r, &ts, dropped, NULL);
    assert_int_equal(r.hits_all, 0);
    /* the paper's verbatim recall is as it was: God and Moses are not in its test set */
    mt_ne_recall_score(&r, &paper, translated, NULL);
    assert_int_equal(r.entities_all, 1);
    assert_int_equal(r.hits_all, 1);
    mt_ne_testset_free(&paper);
    mt_ne_testset_free(&ts);
    mt_entity_lexicon_free(l);
}

/* An entity's training count is the largest any of its occurrences gives: God is first kept as
 * a lexicon form of Dios (4 pairs: regular), then copied verbatim where the statistics know it
 * (no statistics: 0). The second occurrence must not lower the first's count, or a regular
 * entity lands in "unseen". */
static void test_translated_count_keeps_maximum(void **state)
{
    (void)state;
    mt_entity_lexicon *l = fixture_lexicon();
    const char *src[] = {"Y habló Dios.", "Y vino God."};
    const char *ref[] = {"And God spoke.", "And God came."};
    const char *hyp[] = {"And God spoke.", "And he came."};
    mt_ne_testset ts;
    assert_int_equal(mt_ne_testset_build_translated(&ts, src, ref, 2, MT_NER_ENGLISH, NULL, l), 0);
    assert_int_equal(ts.n_names, 1);
    assert_string_equal(ts.names[0], "God");
    assert_int_equal(ts.train_count[0], 4);
    mt_ne_recall r;
    mt_ne_recall_score(&r, &ts, hyp, NULL);
    assert_int_equal(r.entities[MT_NE_REGULAR], 1);
    assert_int_equal(r.entities[MT_NE_UNSEEN], 0);
    assert_true(fabs(r.recall[MT_NE_REGULAR] - 0.5) < 1e-12);
    mt_ne_testset_free(&ts);
    /* the other order: the verbatim occurrence first, then the translated one raises the count */
    const char *src2[] = {src[1], src[0]}, *ref2[] = {ref[1], ref[0]};
    assert_int_equal(mt_ne_testset_build_translated(&ts, src2, ref2, 2, MT_NER_ENGLISH, NULL, l),
                     0);
    assert_int_equal(ts.train_count[0], 4);
    mt_ne_testset_free(&ts);
    mt_entity_lexicon_free(l);
}

/* A name with no candidate form (a corpus of a few hundred pairs has many) is kept without
 * forms; sorting its empty candidate list passed qsort a null pointer (UBSan stopped the trainer
 * on tests/fixtures/de-en). */
static void test_name_without_candidates(void **state)
{
    (void)state;
    const char *src[] = {"Dijo Pedro algo.", "Y vino Pedro."};
    const char *tgt[] = {"Something was said.", "And he came."};
    mt_entity_lexicon *l = mt_entity_lexicon_build(src, tgt, 2, NULL, NULL);
    if (!l) fail_msg("%s", mt_last_error());
    assert_int_equal(mt_entity_lexicon_pairs(l), 2);
    mt_entity_lexicon_free(l);
}

static void temp_path(char *out, size_t len, const char *name)
{
    snprintf(out, len, "/tmp/mtlab_test_lexicon_%d_%s", (int)getpid(), name);
}

static void test_file_round_trip(void **state)
{
    (void)state;
    char path[256], got[128];
    temp_path(path, sizeof path, "lexicon.tsv");
    mt_entity_lexicon *l = fixture_lexicon();
    size_t words = mt_entity_lexicon_words(l);
    assert_true(words > 40);
    assert_int_equal(mt_entity_lexicon_write(l, path), 0);
    mt_entity_lexicon_free(l);
    char *text = test_read_file(path, NULL);
    char head[64];
    snprintf(head, sizeof head,
             "# mtlab entity_lexicon 2\n# pairs=23 words=%zu\nDios\tGod\t1.0000\t4\n", words);
    assert_non_null(strstr(text, head));
    /* the words after the names, bytewise */
    assert_non_null(strstr(text, "\nIsrael\tIsrael\t1.0000\t2\nal\nallí\namó\nbanco\n"));
    free(text);
    l = mt_entity_lexicon_read(path);
    if (!l) fail_msg("%s", mt_last_error());
    forms_of(got, sizeof got, l, "Roma");
    assert_string_equal(got, "Rome");
    assert_int_equal(mt_entity_lexicon_names(l), 9);
    assert_int_equal(mt_entity_lexicon_words(l), words);
    assert_true(mt_entity_lexicon_is_word(l, "Que", 3));
    mt_entity_lexicon_free(l);
    /* a file of version 1 has names only: no ordinary words, the detector as before */
    test_write_text(path, "# mtlab entity_lexicon 1\n# pairs=10\nDios\tGod\t0.9\t3\n");
    l = mt_entity_lexicon_read(path);
    if (!l) fail_msg("%s", mt_last_error());
    assert_int_equal(mt_entity_lexicon_words(l), 0);
    test_detected_entities(got, sizeof got, "Dios dijo, Que vino Valencia", l);
    assert_string_equal(got, "Dios|Que|Valencia");
    mt_entity_lexicon_free(l);
    /* a name with no form is still a name */
    test_write_text(path, "# mtlab entity_lexicon 1\n# pairs=10\nBanco\t\t0\t3\n");
    l = mt_entity_lexicon_read(path);
    if (!l) fail_msg("%s", mt_last_error());
    assert_true(mt_entity_lexicon_is_name(l, "Banco", 5));
    forms_of(got, sizeof got, l, "Banco");
    assert_string_equal(got, "");
    mt_entity_lexicon_free(l);
    unlink(path);
}

static void expect_error(const char *text, const char *message)
{
    char path[256];
    temp_path(path, sizeof path, "bad.tsv");
    test_write_text(path, text);
    assert_null(mt_entity_lexicon_read(path));
    if (!strstr(mt_last_error(), message))
        fail_msg("error '%s' lacks '%s'", mt_last_error(), message);
    unlink(path);
}

static void test_file_errors(void **state)
{
    (void)state;
    expect_error("# mtlab corpus_stats 1\n", ":1: not an entity lexicon");
    expect_error("# mtlab entity_lexicon 1\n# pairs=x\n", ":2: expected '# pairs=N words=M'");
    expect_error("# mtlab entity_lexicon 1\n", "header ends after one line");
    expect_error("# mtlab entity_lexicon 2\n# pairs=10 words=x\n",
                 ":2: expected '# pairs=N words=M'");
    expect_error("# mtlab entity_lexicon 2\n# pairs=10 words=3\nque\n",
                 "the header counts 3 words but the file lists 1 (cut short?)");
    /* rows after a good header: the names' lines, then the ordinary words (one per line, in
     * lower case, once) */
    static const char *const rows[][2] = {
        {"Dios\tGod\n", ":3: expected SOURCE<TAB>TARGET<TAB>DICE<TAB>COUNT"},
        {"Dios\tGod\t1.5\t3\n", ":3: dice '1.5' is not a number from 0 to 1"},
        {"Dios\tGod\t0.9\t11\n", ":3: count 11 is outside 1..10"},
        {"Dios\tGod\t0.9\t3\nDios\tGod\t0.8\t2\n", ":4: 'Dios' -> 'God' is listed twice"},
        {"Di\xe9s\tGod\t0.9\t3\n", ":3: invalid UTF-8"},
        {"que\nQue\n", ":4: word 'Que' is not in lower case"},
        {"que\nque\n", ":4: word 'que' is listed twice"},
        {"dos palabras\n", ":3: expected one word, or SOURCE<TAB>TARGET<TAB>DICE<TAB>COUNT"},
    };
    char text[256];
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        snprintf(text, sizeof text, "# mtlab entity_lexicon 1\n# pairs=10\n%s", rows[i][0]);
        expect_error(text, rows[i][1]);
    }
}

/* The lexicon shipped with a bundle, learned from the Bible training split. */
static void test_shipped_lexicon(void **state)
{
    (void)state;
    const char *path = "models/transformer-small/entity_lexicon.tsv";
    if (access(path, R_OK) != 0) skip();
    mt_entity_lexicon *l = mt_entity_lexicon_read(path);
    if (!l) fail_msg("%s", mt_last_error());
    static const char *const pairs[][2] = {
        {"Dios", "God"},  {"Juan", "John"},    {"Moisés", "Moses"}, {"Pedro", "Peter"},
        {"Roma", "Rome"}, {"Marta", "Martha"}, {"Jesús", "Jesus"},  {"Israel", "Israel"},
    };
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        const char *const *forms;
        size_t n = mt_entity_lexicon_forms(l, pairs[i][0], strlen(pairs[i][0]), &forms, NULL, NULL);
        if (n == 0 || strcmp(forms[0], pairs[i][1]) != 0)
            fail_msg("%s: best form '%s', expected '%s'", pairs[i][0], n ? forms[0] : "",
                     pairs[i][1]);
    }
    char got[128];
    test_detected_entities(got, sizeof got, "Marta lloró. Pedro y Juan fueron a Roma en 2015.", l);
    assert_string_equal(got, "Marta|Pedro|Juan|Roma");
    /* three verses of test.para8 joined at commas: the verse-opening Que and En are ordinary
     * words of the Bible, Assuero, Susán and Persia its names */
    test_detected_entities(
        got, sizeof got,
        "Y aconteció en los días de Assuero, Que en aquellos días, asentado que fué el rey "
        "Assuero en la silla de su reino, la cual estaba en Susán capital del reino, En el "
        "tercer año de su reinado, teniendo delante de él la fuerza de Persia",
        l);
    assert_string_equal(got, "Assuero|Assuero|Susán|Persia");
    mt_entity_lexicon_free(l);
}

/* Names of several words are one name (docs/metrics.md §5.4), with the Bible's lexicon: its
 * ordinary words (país, nueva, costa) still make a name when capitalised together, particles
 * join, a verse-opening ordinary word before a known name stays out; the fate of such a name
 * is its words' fates together. */
static void test_multiword_names(void **state)
{
    (void)state;
    const char *path = "models/transformer-small/entity_lexicon.tsv";
    if (access(path, R_OK) != 0) skip();
    mt_entity_lexicon *l = mt_entity_lexicon_read(path);
    if (!l) fail_msg("%s", mt_last_error());
    char got[256];
    test_detected_entities(got, sizeof got,
                           "Ayer Pedro Sánchez habló con Ursula von der Leyen en Bruselas.", l);
    assert_string_equal(got, "Pedro Sánchez|Ursula von der Leyen|Bruselas");
    test_detected_entities(got, sizeof got,
                           "Lo publicó El País, y António Costa viajó a Nueva York.", l);
    assert_string_equal(got, "El País|António Costa|Nueva York");
    test_detected_entities(got, sizeof got, "Pedro Sánchez llegó. Y fueron, Entonces Jesús dijo",
                           l);
    assert_string_equal(got, "Pedro Sánchez|Jesús");
    /* without a corpus, a sentence-opening word is left out of the name */
    test_detected_entities(got, sizeof got, "Pedro Sánchez llegó con Ana de la Vega.", NULL);
    assert_string_equal(got, "Sánchez|Ana|Vega");
    const char *form;
    assert_int_equal(fate("Pedro Sánchez arrived", "Pedro Sánchez", l, &form), MT_ENTITY_COPIED);
    assert_int_equal(fate("Peter Sánchez arrived", "Pedro Sánchez", l, &form),
                     MT_ENTITY_TRANSLATED);
    assert_string_equal(form, "Peter");
    assert_int_equal(fate("Sánchez arrived", "Pedro Sánchez", l, &form), MT_ENTITY_DROPPED);
    assert_int_equal(fate("Peter arrived", "Pedro Sánchez", l, &form), MT_ENTITY_DROPPED);
    assert_int_equal(fate("The Country said", "El País", l, &form), MT_ENTITY_DROPPED);
    mt_entity_lexicon_free(l);

    /* the lexicon learns a name of several words as one, with its form of several words */
    static const char *const src[] = {
        "Ayer Pedro Sánchez habló en Madrid.", "Hoy vino Pedro Sánchez a Roma.",
        "Y dijo Pedro Sánchez que sí.", "Luego Pedro calló.", "Y vio Pedro el mar."};
    static const char *const tgt[] = {
        "Yesterday Peter Sánchez spoke in Madrid.", "Today Peter Sánchez came to Rome.",
        "And Peter Sánchez said yes.", "Then Peter was silent.", "And Peter saw the sea."};
    mt_entity_lexicon *small = mt_entity_lexicon_build(src, tgt, 5, NULL, NULL);
    assert_non_null(small);
    forms_of(got, sizeof got, small, "Pedro Sánchez");
    assert_string_equal(got, "Peter Sánchez");
    forms_of(got, sizeof got, small,
             "Pedro"); /* a one-word name keeps one-word forms, best first */
    assert_string_equal(got, "Peter|Sánchez");
    assert_int_equal(fate("Then Peter Sánchez came", "Pedro Sánchez", small, &form),
                     MT_ENTITY_TRANSLATED);
    assert_string_equal(form, "Peter Sánchez");
    test_detected_entities(got, sizeof got, "Luego vino Pedro Sánchez.", small);
    assert_string_equal(got, "Pedro Sánchez");
    mt_entity_lexicon_free(small);

    /* the reference-side recognisers join through particles too */
    static const struct {
        const char *text;
        mt_ner_lang lang;
        const char *want;
    } refs[] = {
        {"He met Ursula von der Leyen and Vincent van Gogh.", MT_NER_ENGLISH,
         "Ursula von der Leyen|Vincent van Gogh"},
        {"Habló con Ursula von der Leyen hoy.", MT_NER_GENERIC, "Ursula von der Leyen"},
        {"the God of Israel", MT_NER_ENGLISH, "God|Israel"},
        {"a van Gogh", MT_NER_GENERIC, "Gogh"},
    };
    for (size_t i = 0; i < sizeof refs / sizeof refs[0]; i++) {
        mt_text_span *spans;
        size_t n;
        assert_int_equal(mt_entities_find(&spans, &n, refs[i].text, refs[i].lang), 0);
        got[0] = '\0';
        for (size_t k = 0; k < n; k++) {
            size_t used = strlen(got);
            snprintf(got + used, sizeof got - used, "%s%.*s", k ? "|" : "",
                     (int)(spans[k].end - spans[k].start), refs[i].text + spans[k].start);
        }
        free(spans);
        assert_string_equal(got, refs[i].want);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lexicon_learns_forms),
        cmocka_unit_test(test_detector_with_corpus),
        cmocka_unit_test(test_fates),
        cmocka_unit_test(test_translated_aware_recall),
        cmocka_unit_test(test_translated_count_keeps_maximum),
        cmocka_unit_test(test_file_round_trip),
        cmocka_unit_test(test_file_errors),
        cmocka_unit_test(test_shipped_lexicon),
        cmocka_unit_test(test_name_without_candidates),
        cmocka_unit_test(test_multiword_names),
    };
    return cmocka_run_group_tests_name("entity_lexicon", tests, NULL, NULL);
}
