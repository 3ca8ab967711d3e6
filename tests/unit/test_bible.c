/* The Bible corpus builder: cleaning real mod2imp output (fixtures cut from the actual dumps by
 * tests/fixtures/bible/make_fixtures.py), RV1909 capitals, the join and exclusion list, the book
 * split, 8-verse windows, complete chapters, the written files, and the error messages. */
#include "test_util.h"
#include "mtlab/bible.h"
#include "mtlab/error.h"

#include <dirent.h>
#include <unistd.h>

#define ES_FIXTURE "tests/fixtures/bible/spaRV1909eb.imp"
#define EN_FIXTURE "tests/fixtures/bible/engWEB2015eb.imp"

static void read_fixture(const char *path, mt_verse_list *list)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    if (mt_imp_read(f, path, list) < 0) fail_msg("%s", mt_last_error());
    fclose(f);
}

static const mt_verse *find(const mt_verse_list *list, const char *key)
{
    for (size_t i = 0; i < list->n; i++)
        if (strcmp(list->items[i].key, key) == 0) return &list->items[i];
    fail_msg("no verse %s", key);
    return NULL;
}

static const char *text_of(const mt_verse_list *list, const char *key)
{
    return find(list, key)->text;
}

/* mt_osis_to_text on a string; returns the malloc'd result or NULL. */
static char *clean(const char *osis) { return mt_osis_to_text(osis, strlen(osis)); }

static void assert_clean(const char *osis, const char *expected)
{
    char *got = clean(osis);
    if (!got) fail_msg("%s: %s", osis, mt_last_error());
    assert_string_equal(got, expected);
    free(got);
}

static void assert_clean_fails(const char *osis, const char *message)
{
    char *got = clean(osis);
    assert_null(got);
    assert_string_equal(mt_last_error(), message);
}

/* mt_imp_read on an in-memory stream named "test.imp"; returns its result. */
static int read_text(const char *text, mt_verse_list *list)
{
    FILE *f = fmemopen((void *)text, strlen(text), "r");
    assert_non_null(f);
    int rc = mt_imp_read(f, "test.imp", list);
    fclose(f);
    return rc;
}

static void add_verse(mt_verse_list *list, const char *book, int chapter, int verse,
                      const char *text)
{
    char key[96];
    snprintf(key, sizeof key, "%s %d:%d", book, chapter, verse);
    if (list->n == list->cap) {
        list->cap = list->cap ? 2 * list->cap : 64;
        list->items = realloc(list->items, list->cap * sizeof *list->items);
        assert_non_null(list->items);
    }
    list->items[list->n++] = (mt_verse){strdup(key), strdup(book), chapter, verse, strdup(text), 0};
}

/* ---------------------------------------------------------------- real mod2imp output */

static void test_fixture_keys_and_intros(void **state)
{
    (void)state;
    mt_verse_list es = {0};
    read_fixture(ES_FIXTURE, &es);
    /* 18 entries in the fixture, 3 of them verse-0 introductions; the two headings dropped */
    assert_int_equal(es.n, 15);
    assert_string_equal(es.items[0].key, "Genesis 1:1");
    assert_string_equal(es.items[0].book, "Genesis");
    assert_int_equal(es.items[0].chapter, 1);
    assert_int_equal(es.items[0].verse, 1);
    const mt_verse *last = &es.items[es.n - 1];
    assert_string_equal(last->book, "Revelation of John");
    assert_int_equal(last->chapter, 22);
    assert_int_equal(last->verse, 21);
    for (size_t i = 0; i < es.n; i++) assert_true(es.items[i].verse > 0 && es.items[i].chapter > 0);
    assert_string_equal(text_of(&es, "Numbers 12:16"), ""); /* empty in RV1909 */
    mt_verse_list_free(&es);
}

static void test_clean_web_notes_titles_end_of_book(void **state)
{
    (void)state;
    mt_verse_list en = {0};
    read_fixture(EN_FIXTURE, &en);
    assert_int_equal(en.n, 15);
    /* the footnote "God<note>..(Elohim)</note><w>created" goes without gluing the words */
    assert_string_equal(text_of(&en, "Genesis 1:1"),
                        "In the beginning, God created the heavens and the earth.");
    assert_string_equal(
        text_of(&en, "Genesis 4:1"),
        "The man knew Eve his wife. She conceived, and gave birth to Cain, and said, "
        "\u201cI have gotten a man with Yahweh\u2019s help.\u201d");
    /* canonical psalm heading kept, notes and poetry markup gone */
    assert_string_equal(
        text_of(&en, "Psalms 3:1"),
        "A Psalm by David, when he fled from Absalom his son. Yahweh, how my adversaries have "
        "increased! Many are those who rise up against me.");
    assert_string_equal(
        text_of(&en, "Psalms 3:2"),
        "Many there are who say of my soul, \u201cThere is no help for him in God.\u201d Selah.");
    assert_string_equal(
        text_of(&en, "Matthew 4:10"),
        "Then Jesus said to him, \u201cGet behind me, Satan! For it is written, \u2018You shall "
        "worship the Lord your God, and you shall serve him only.\u2019\u201d");
    /* everything after the end-of-book marker (the glossary) is cut */
    assert_string_equal(text_of(&en, "Revelation of John 22:21"),
                        "The grace of the Lord Jesus Christ be with all the saints. Amen.");
    assert_string_equal(
        text_of(&en, "Jude 1:25"),
        "to God our Savior, who alone is wise, be glory and majesty, dominion and power, both now "
        "and forever. Amen.");
    mt_verse_list_free(&en);
}

static void test_clean_rv1909_added_words(void **state)
{
    (void)state;
    mt_verse_list es = {0};
    read_fixture(ES_FIXTURE, &es);
    /* "FUÉ</w><transChange>á mí</transChange><w>palabra": the added words get their spaces */
    assert_string_equal(text_of(&es, "Zechariah 8:1"),
                        "Y FUÉ á mí palabra de Jehová de los ejércitos, diciendo:");
    /* "díjo</w><transChange>le</transChange>": an enclitic pronoun stays attached */
    assert_string_equal(
        text_of(&es, "I Kings 3:5"),
        "Y aparecióse Jehová á Salomón en Gabaón una noche en sueños, y díjole Dios: Pide lo que "
        "quisieres que yo te dé.");
    assert_string_equal(text_of(&es, "Genesis 1:1"),
                        "EN el principio crió Dios los cielos y la tierra.");
    assert_string_equal(text_of(&es, "Psalms 3:2"),
                        "Muchos dicen de mi vida: No hay para él salud en Dios. (Selah.)");
    mt_verse_list_free(&es);
}

static void test_restore_chapter_capitals(void **state)
{
    (void)state;
    mt_verse_list es = {0};
    read_fixture(ES_FIXTURE, &es);
    const char *verse2 = "Y la tierra estaba desordenada y vacía, y las tinieblas estaban sobre la "
                         "haz del abismo, y "
                         "el Espíritu de Dios se movía sobre la haz de las aguas.";
    assert_string_equal(text_of(&es, "Genesis 1:2"), verse2);
    /* every verse of the fixture whose chapter starts there and has a capitals word */
    assert_int_equal(mt_restore_chapter_caps(&es), 8);
    assert_string_equal(text_of(&es, "Genesis 1:1"),
                        "En el principio crió Dios los cielos y la tierra.");
    assert_true(find(&es, "Genesis 1:1")->caps_restored);
    assert_string_equal(text_of(&es, "Genesis 1:2"), verse2); /* not a chapter's first verse */
    assert_false(find(&es, "Genesis 1:2")->caps_restored);
    assert_string_equal(text_of(&es, "Genesis 4:1"),
                        "Y conoció Adam á su mujer Eva, la cual concibió y parió á Caín, y dijo: "
                        "Adquirido he varón "
                        "por Jehová.");
    /* after a psalm heading; "¡OH" starts an exclamation, so keeps its capital */
    assert_string_equal(
        text_of(&es, "Psalms 3:1"),
        "Salmo de David, cuando huía de delante de Absalom su hijo. ¡Oh Jehová, cuánto se han "
        "multiplicado mis enemigos! muchos se levantan contra mí.");
    /* the acrostic label stays; the word after it is the chapter's first */
    assert_string_equal(
        text_of(&es, "Psalms 119:1"),
        "ALEPH. Bienaventurados los perfectos de camino; los que andan en la ley de Jehová.");
    /* a capitals run: "Y Á SUS" */
    assert_string_equal(text_of(&es, "Luke 17:1"), "Y á sus discípulos dice: Imposible es que no "
                                                   "vengan escándalos; mas ¡ay de aquél por quien "
                                                   "vienen!");
    /* a name: written "Achâb" mid-sentence in 18:1, so "ACHAB" keeps its capital */
    assert_string_equal(
        text_of(&es, "I Kings 19:1"),
        "Y Achab dió la nueva á Jezabel de todo lo que Elías había hecho, de como había muerto á "
        "cuchillo á todos los profetas.");
    assert_string_equal(text_of(&es, "Zechariah 8:1"),
                        "Y fué á mí palabra de Jehová de los ejércitos, diciendo:");
    mt_verse_list_free(&es);
}

static void test_restore_section_opening(void **state)
{
    (void)state;
    mt_verse_list es = {0};
    add_verse(&es, "Luke", 1, 4, "Para que conozcas la verdad.");
    add_verse(&es, "Luke", 1, 5, "HUBO en los días de Herodes un sacerdote.");
    add_verse(&es, "Luke", 1, 6, "Y hubo gozo. HE. Enséñame, oh Jehová.");
    add_verse(&es, "Luke", 1, 7, "HE. Enséñame, oh Jehová.");
    add_verse(&es, "Luke", 1, 8, "TEKEL: Pesado has sido.");
    add_verse(&es, "Luke", 1, 9, "JAH, si mirares.");
    add_verse(&es, "Luke", 1, 10, "MEM tu ley amo."); /* the shape, but never written "mem" */
    /* Luke 1:4 opens the chapter here but has no capitals; only 1:5 has the section shape */
    assert_int_equal(mt_restore_chapter_caps(&es), 1);
    assert_string_equal(es.items[1].text, "Hubo en los días de Herodes un sacerdote.");
    assert_string_equal(es.items[3].text, "HE. Enséñame, oh Jehová.");
    assert_string_equal(es.items[4].text, "TEKEL: Pesado has sido.");
    assert_string_equal(es.items[5].text, "JAH, si mirares.");
    assert_string_equal(es.items[6].text, "MEM tu ley amo.");
    mt_verse_list_free(&es);
}

/* ---------------------------------------------------------------- the cleaning rules, one by one
 */

static void test_osis_rules(void **state)
{
    (void)state;
    assert_clean("<title type=\"main\">Book heading</title> Text", "Text");
    assert_clean("<title canonical=\"true\" type=\"psalm\">A Psalm.</title> Text", "A Psalm. Text");
    assert_clean("word<note type=\"x\"><reference>1:1</reference> or <hi type=\"b\">bold "
                 "<w>x</w></hi></note>. Next",
                 "word. Next");
    assert_clean("said,<note>n</note>and", "said, and");
    assert_clean("a &amp; b &lt;c&gt; &quot;d&quot; &#233;&#xE9;", "a & b <c> \"d\" éé");
    assert_clean("  a \t b  <lb/>  ", "a b");
    assert_clean("a&#10;b\x01 &#x7F;c", "a b c");
    assert_clean("end.<div eID=\"b1\" type=\"book\"/> <title>Glossary</title> more", "end.");
    assert_clean("<div sID=\"b1\" type=\"book\"/>Start", "Start");
    assert_clean("rock.\u201d</q><w>Then</w>", "rock.\u201d Then");
    /* the words before and after added text are separate; only enclitics attach */
    assert_clean("<w>la cual</w> <w>Josué</w><transChange type=\"added\">los</transChange> "
                 "<w>circuncidó</w>",
                 "la cual Josué los circuncidó");
    assert_clean("<w>no</w><transChange type=\"added\">lo</transChange> <w>hizo</w>", "no lo hizo");
    assert_clean("<w>Dad</w><transChange type=\"added\">me</transChange> <w>varones</w>",
                 "Dadme varones");
    assert_clean("<w>oyéndo</w><transChange type=\"added\">lo</transChange> <w>Jesús</w>",
                 "oyéndolo Jesús");
    assert_clean("<w>y</w> <w>di</w><transChange type=\"added\">les</transChange>", "y diles");
    assert_clean("", "");
}

static void test_osis_errors(void **state)
{
    (void)state;
    assert_clean_fails("abc <w lemma", "byte 4: unterminated tag");
    assert_clean_fails("a &nbsp; b", "byte 2: unknown entity '&nbsp;'");
    assert_clean_fails("a & b", "byte 2: '&' not followed by an entity name and ';'");
    assert_clean_fails("x <note>footnote", "byte 2: <note> never closed");
    assert_clean_fails("ok \xC3(", "byte 3: invalid UTF-8");
    assert_clean_fails("<w lemma=strong>x</w>", "byte 3: malformed attribute in tag <w>");
}

static void test_imp_errors(void **state)
{
    (void)state;
    /* each case reads into a fresh list (a failed read may leave the verses read so far) */
    mt_verse_list list = {0};
    assert_int_equal(read_text("$$$Genesis 1\n<w>x</w>\n", &list), -1);
    assert_string_equal(mt_last_error(),
                        "test.imp: line 1: malformed key '$$$Genesis 1' (expected '$$$Book C:V')");
    mt_verse_list_free(&list);
    assert_int_equal(read_text("$$$Genesis 1:1\nIn the\n$$$Genesis 1:2\nab\xff\n", &list), -1);
    assert_string_equal(mt_last_error(), "test.imp: line 4: byte 2: invalid UTF-8");
    mt_verse_list_free(&list);
    assert_int_equal(read_text("$$$Genesis 1:1\n$$$Genesis 1:2\nx\n", &list), -1);
    assert_string_equal(mt_last_error(),
                        "test.imp: line 1: key 'Genesis 1:1' has no text line after it");
    mt_verse_list_free(&list);
    assert_int_equal(read_text("$$$Genesis 1:1\na\n$$$Genesis 1:1\nb\n", &list), -1);
    assert_string_equal(mt_last_error(), "test.imp: line 3: duplicate key 'Genesis 1:1'");
    mt_verse_list_free(&list);
    assert_int_equal(read_text("hello\n", &list), -1);
    assert_string_equal(mt_last_error(),
                        "test.imp: line 1: expected a '$$$Book C:V' key line, got 'hello'");
    mt_verse_list_free(&list);
    assert_int_equal(read_text("$$$Genesis 1:1\nfoo <w\n", &list), -1);
    assert_string_equal(mt_last_error(),
                        "test.imp: line 2 (Genesis 1:1): byte 4: unterminated tag");
    mt_verse_list_free(&list);
    assert_int_equal(read_text("$$$Genesis 1:x\nfoo\n", &list), -1);
    mt_verse_list_free(&list);
    assert_int_equal(read_text("$$$Genesis 99999:1\nfoo\n", &list), -1);
    mt_verse_list_free(&list);
    assert_int_equal(
        read_text("$$$[ Module Heading ]\n\n$$$Ruth 1:0\nintro\n$$$Ruth 1:1\n<w>x</w>\n\n", &list),
        0);
    assert_int_equal(list.n, 1);
    assert_string_equal(list.items[0].text, "x");
    mt_verse_list_free(&list);
}

/* ---------------------------------------------------------------- exclusions, split, join */

static void test_exclusion_list(void **state)
{
    (void)state;
    mt_exclusions ex;
    const char *good =
        "# comment\nNumbers 12:16\tes_empty\n\nI Samuel 24:1\tversification_shift_chapter\r\n";
    assert_int_equal(mt_exclusions_parse(good, strlen(good), "x.tsv", &ex), 0);
    assert_int_equal(ex.n, 2);
    assert_string_equal(ex.keys[1], "I Samuel 24:1");
    assert_string_equal(ex.reasons[1], "versification_shift_chapter");
    assert_int_equal(ex.lines[1], 4);
    mt_exclusions_free(&ex);
    const char *no_tab = "Numbers 12:16 es_empty\n";
    assert_int_equal(mt_exclusions_parse(no_tab, strlen(no_tab), "x.tsv", &ex), -1);
    assert_string_equal(mt_last_error(), "x.tsv: line 1: expected KEY<TAB>REASON");
    const char *bad_key = "Ruth 1:1\ta\nRuth one\tb\n";
    assert_int_equal(mt_exclusions_parse(bad_key, strlen(bad_key), "x.tsv", &ex), -1);
    assert_string_equal(mt_last_error(),
                        "x.tsv: line 2: malformed key 'Ruth one' (expected 'Book C:V')");
    const char *dup = "Ruth 1:1\ta\nRuth 1:2\ta\nRuth 1:1\tb\n";
    assert_int_equal(mt_exclusions_parse(dup, strlen(dup), "x.tsv", &ex), -1);
    assert_string_equal(mt_last_error(),
                        "x.tsv: line 3: duplicate key 'Ruth 1:1' (first on line 1)");
    assert_int_equal(mt_exclusions_load("tests/fixtures/bible/no_such.tsv", &ex), -1);
    assert_non_null(strstr(mt_last_error(), "no_such.tsv: No such file or directory"));
    /* the project's list: 408 keys */
    assert_int_equal(mt_exclusions_load("scripts/data/bible_exclude.tsv", &ex), 0);
    assert_int_equal(ex.n, 408);
    mt_exclusions_free(&ex);
}

static void test_split_by_book(void **state)
{
    (void)state;
    assert_int_equal(mt_bible_split_of("Ruth"), MT_SPLIT_VALID);
    assert_int_equal(mt_bible_split_of("I Peter"), MT_SPLIT_VALID);
    assert_int_equal(mt_bible_split_of("Jude"), MT_SPLIT_VALID);
    assert_int_equal(mt_bible_split_of("Esther"), MT_SPLIT_TEST);
    assert_int_equal(mt_bible_split_of("I John"), MT_SPLIT_TEST);
    assert_int_equal(mt_bible_split_of("Philippians"), MT_SPLIT_TEST);
    assert_int_equal(mt_bible_split_of("II Peter"), MT_SPLIT_TRAIN);
    assert_int_equal(mt_bible_split_of("II John"), MT_SPLIT_TRAIN);
    assert_int_equal(mt_bible_split_of("John"), MT_SPLIT_TRAIN);
    assert_int_equal(mt_bible_split_of("Matthew"), MT_SPLIT_TRAIN);
    assert_int_equal(mt_bible_split_of("II Kings"), MT_SPLIT_TRAIN);
    assert_string_equal(mt_split_name(MT_SPLIT_VALID), "valid");
}

static void test_join_fixtures_with_exclusions(void **state)
{
    (void)state;
    mt_verse_list es = {0}, en = {0};
    read_fixture(ES_FIXTURE, &es);
    read_fixture(EN_FIXTURE, &en);
    mt_exclusions ex;
    const char *list = "Numbers 12:16\tes_empty\nPsalms 3:2\tdp_not_1to1\n";
    assert_int_equal(mt_exclusions_parse(list, strlen(list), "fixture.tsv", &ex), 0);
    mt_bible_corpus c;
    if (mt_bible_build(&es, &en, &ex, &c) < 0) fail_msg("%s", mt_last_error());
    assert_int_equal(c.n_common, 15);
    assert_int_equal(c.n_excluded, 2);
    assert_int_equal(c.n_pairs, 13);
    assert_int_equal(c.split_pairs[MT_SPLIT_VALID], 1); /* Jude 1:25 */
    assert_int_equal(c.split_pairs[MT_SPLIT_TRAIN], 12);
    for (size_t i = 0; i < c.n_pairs; i++) {
        assert_string_equal(c.pairs[i].es->key, c.pairs[i].en->key);
        assert_string_not_equal(c.pairs[i].es->key, "Psalms 3:2");
        assert_string_not_equal(c.pairs[i].es->key, "Numbers 12:16");
    }
    assert_string_equal(c.pairs[2].es->key, "Genesis 4:1"); /* module order kept */
    assert_string_equal(c.pairs[11].es->key, "Jude 1:25");
    assert_int_equal(c.pairs[11].split, MT_SPLIT_VALID);
    mt_bible_corpus_free(&c);
    mt_exclusions_free(&ex);

    /* an empty verse that the list does not exclude */
    const char *short_list = "Psalms 3:2\tdp_not_1to1\n";
    assert_int_equal(mt_exclusions_parse(short_list, strlen(short_list), "fixture.tsv", &ex), 0);
    assert_int_equal(mt_bible_build(&es, &en, &ex, &c), -1);
    assert_string_equal(mt_last_error(), "Numbers 12:16: the Spanish text is empty but the key is "
                                         "not in the exclusion list fixture.tsv");
    mt_exclusions_free(&ex);
    /* an excluded key that matches no verse: the list and the modules have drifted apart */
    const char *stale = "Numbers 12:16\tes_empty\nGenesis 50:27\tdp_not_1to1\n";
    assert_int_equal(mt_exclusions_parse(stale, strlen(stale), "fixture.tsv", &ex), 0);
    assert_int_equal(mt_bible_build(&es, &en, &ex, &c), -1);
    assert_string_equal(
        mt_last_error(),
        "fixture.tsv: line 2: excluded key 'Genesis 50:27' is not a verse of either module");
    mt_exclusions_free(&ex);
    mt_verse_list_free(&es);
    mt_verse_list_free(&en);
}

/* ---------------------------------------------------------------- runs and chapters */

static void test_windows(void **state)
{
    (void)state;
    mt_verse_list es = {0};
    for (int v = 1; v <= 20; v++)
        if (v != 12) add_verse(&es, "Micah", 1, v, "x"); /* 1..11 and 13..20: two runs */
    for (int v = 1; v <= 9; v++) add_verse(&es, "Micah", 2, v, "x"); /* 9 verses: one window */
    for (int v = 4; v <= 7; v++) add_verse(&es, "Micah", 3, v, "x"); /* 3:4-7 and 4:8-11 number */
    for (int v = 8; v <= 11; v++) add_verse(&es, "Micah", 4, v, "x"); /* on, but are two chapters */
    mt_pair pairs[64];
    for (size_t i = 0; i < es.n; i++)
        pairs[i] = (mt_pair){&es.items[i], &es.items[i], MT_SPLIT_TEST};
    mt_span spans[64];
    size_t n = mt_bible_windows(pairs, es.n, 8, spans);
    assert_int_equal(n, 3);
    assert_int_equal(spans[0].first, 0); /* Micah 1:1-8 */
    assert_int_equal(spans[0].count, 8);
    assert_int_equal(spans[1].first, 11); /* Micah 1:13-20 */
    assert_int_equal(es.items[spans[1].first].verse, 13);
    assert_int_equal(spans[2].first, 19); /* Micah 2:1-8 */
    assert_string_equal(es.items[spans[2].first].key, "Micah 2:1");
    assert_int_equal(mt_bible_windows(pairs, es.n, 4, spans), 8); /* 2 + 2 + 2 + 1 + 1 */
    mt_verse_list_free(&es);
}

/* Esther 1: 10 verses, complete. Esther 2: 9 verses, verse 5 excluded. Esther 3: 8 verses but
 * the English module has a 9th. Titus 1: 3 verses, complete (the English module's empty 1:4
 * carries no text to miss). Ruth 1:1 alone, and Tobit, which only the English module has. */
/* A verse with text "es LABEL" / "en LABEL" in the lists that are not NULL. */
static void add_labelled(mt_verse_list *es, mt_verse_list *en, const char *book, int chapter,
                         int verse, const char *label)
{
    char text[64];
    snprintf(text, sizeof text, "es %s", label);
    if (es) add_verse(es, book, chapter, verse, text);
    snprintf(text, sizeof text, "en %s", label);
    if (en) add_verse(en, book, chapter, verse, text);
}

static void synthetic_corpus(mt_verse_list *es, mt_verse_list *en, mt_exclusions *ex)
{
    char label[32];
    for (int v = 1; v <= 10; v++) {
        snprintf(label, sizeof label, "1.%d", v);
        add_labelled(es, en, "Esther", 1, v, label);
    }
    for (int v = 1; v <= 9; v++) {
        snprintf(label, sizeof label, "2.%d", v);
        add_labelled(es, en, "Esther", 2, v, label);
    }
    for (int v = 1; v <= 9; v++) {
        snprintf(label, sizeof label, "3.%d", v);
        add_labelled(v <= 8 ? es : NULL, en, "Esther", 3, v, label);
    }
    for (int v = 1; v <= 3; v++) {
        snprintf(label, sizeof label, "T%d", v);
        add_labelled(es, en, "Titus", 1, v, label);
    }
    add_verse(en, "Titus", 1, 4, "");
    add_labelled(es, en, "Ruth", 1, 1, "R1");
    add_verse(en, "Tobit", 1, 1, "only in WEB");
    const char *list = "Esther 2:5\tdp_not_1to1\n";
    assert_int_equal(mt_exclusions_parse(list, strlen(list), "synthetic.tsv", ex), 0);
}

static void test_complete_chapters(void **state)
{
    (void)state;
    mt_verse_list es = {0}, en = {0};
    mt_exclusions ex;
    synthetic_corpus(&es, &en, &ex);
    mt_bible_corpus c;
    if (mt_bible_build(&es, &en, &ex, &c) < 0) fail_msg("%s", mt_last_error());
    assert_int_equal(c.n_en_only, 3); /* Esther 3:9, Titus 1:4 and Tobit 1:1 */
    assert_int_equal(c.n_pairs, 10 + 8 + 8 + 3 + 1);
    assert_int_equal(c.split_pairs[MT_SPLIT_TEST], 29);
    assert_int_equal(c.split_pairs[MT_SPLIT_VALID], 1);
    assert_int_equal(c.n_chapters[MT_SPLIT_TEST], 2); /* Esther 1 and Titus 1 */
    assert_string_equal(c.pairs[c.chapters[MT_SPLIT_TEST][0].first].es->key, "Esther 1:1");
    assert_int_equal(c.chapters[MT_SPLIT_TEST][0].count, 10);
    assert_string_equal(c.pairs[c.chapters[MT_SPLIT_TEST][1].first].es->key, "Titus 1:1");
    assert_int_equal(c.n_chapters[MT_SPLIT_VALID], 1); /* Ruth 1, one verse here */
    /* runs of 8: Esther 1:1-8, 2:6-9 too short, 3:1-8 */
    assert_int_equal(c.n_para[MT_SPLIT_TEST], 2);
    assert_string_equal(c.pairs[c.para[MT_SPLIT_TEST][1].first].es->key, "Esther 3:1");
    mt_bible_corpus_free(&c);
    mt_exclusions_free(&ex);
    mt_verse_list_free(&es);
    mt_verse_list_free(&en);
}

/* ---------------------------------------------------------------- written files */

static char *slurp(const char *dir, const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) fail_msg("cannot open %s", path);
    char *buf = calloc(1, 1 << 16);
    assert_non_null(buf);
    size_t n = fread(buf, 1, (1 << 16) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static void assert_file(const char *dir, const char *name, const char *expected)
{
    char *got = slurp(dir, name);
    assert_string_equal(got, expected);
    free(got);
}

static void test_write_files(void **state)
{
    (void)state;
    mt_verse_list es = {0}, en = {0};
    mt_exclusions ex;
    synthetic_corpus(&es, &en, &ex);
    mt_bible_corpus c;
    if (mt_bible_build(&es, &en, &ex, &c) < 0) fail_msg("%s", mt_last_error());
    char tmpl[] = "/tmp/mtlab_test_bible_XXXXXX";
    assert_non_null(mkdtemp(tmpl));
    char dir[600];
    snprintf(dir, sizeof dir, "%s/out/bible", tmpl); /* parents are created */
    if (mt_bible_write(&c, NULL, dir) < 0) fail_msg("%s", mt_last_error());
    assert_file(dir, "valid.es", "es R1\n");
    assert_file(dir, "valid.en", "en R1\n");
    assert_file(dir, "valid.keys", "Ruth 1:1\n");
    assert_file(dir, "train.es", "");
    char *test_keys = slurp(dir, "test.keys");
    assert_true(strncmp(test_keys, "Esther 1:1\nEsther 1:2\n", 22) == 0);
    assert_null(strstr(test_keys, "Esther 2:5\n"));
    free(test_keys);
    assert_file(dir, "test.para8.keys", "Esther 1:1-8\nEsther 3:1-8\n");
    assert_file(dir, "test.para8.es",
                "es 1.1 es 1.2 es 1.3 es 1.4 es 1.5 es 1.6 es 1.7 es 1.8\n"
                "es 3.1 es 3.2 es 3.3 es 3.4 es 3.5 es 3.6 es 3.7 es 3.8\n");
    assert_file(dir, "test.chapter.keys", "Esther 1\nTitus 1\n");
    assert_file(dir, "test.chapter.en",
                "en 1.1 en 1.2 en 1.3 en 1.4 en 1.5 en 1.6 en 1.7 en 1.8 en 1.9 en 1.10\nen T1 en "
                "T2 en T3\n");
    assert_file(dir, "valid.para8.es", "");

    /* same bytes on a second run, and no temporary file left behind */
    char *first = slurp(dir, "test.es");
    if (mt_bible_write(&c, NULL, dir) < 0) fail_msg("%s", mt_last_error());
    char *second = slurp(dir, "test.es");
    assert_string_equal(first, second);
    free(first);
    free(second);
    DIR *d = opendir(dir);
    assert_non_null(d);
    size_t files = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.' && (!e->d_name[1] || (e->d_name[1] == '.' && !e->d_name[2])))
            continue;
        assert_null(strstr(e->d_name, ".tmp-"));
        char path[900];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        assert_int_equal(unlink(path), 0);
        files++;
    }
    closedir(d);
    assert_int_equal(files, 19); /* with manifest.json */
    assert_int_equal(rmdir(dir), 0);
    char out[700];
    snprintf(out, sizeof out, "%s/out", tmpl);
    assert_int_equal(rmdir(out), 0);
    assert_int_equal(rmdir(tmpl), 0);

    /* an output path that cannot be a directory */
    assert_int_equal(mt_bible_write(&c, NULL, "/dev/null/bible"), -1);
    assert_non_null(strstr(mt_last_error(), "/dev/null"));
    mt_bible_corpus_free(&c);
    mt_exclusions_free(&ex);
    mt_verse_list_free(&es);
    mt_verse_list_free(&en);
}

/* Sets the text of a verse the lists hold (the corpus's pairs point at it). */
static void set_text(mt_verse_list *list, const char *key, const char *text)
{
    mt_verse *v = (mt_verse *)find(list, key);
    free(v->text);
    v->text = strdup(text);
}

/* test.names: only test verses with a name on both sides, every such name substituted from the
 * gazetteer on both sides, the same files on every run, and a names list eval can read. */
static void test_write_names(void **state)
{
    (void)state;
    mt_verse_list es = {0}, en = {0};
    mt_exclusions ex;
    synthetic_corpus(&es, &en, &ex);
    set_text(&es, "Esther 1:2", "Y Mardoqueo habló á Ester en Susa.");
    set_text(&en, "Esther 1:2", "Mordecai spoke to Esther in Susa.");
    set_text(&es, "Esther 3:4", "Ester, Ester y Hegai.");
    set_text(&en, "Esther 3:4", "Esther, Esther and Hegai.");
    set_text(&es, "Ruth 1:1", "Rut y Noemí en Moab."); /* valid split: never in test.names */
    set_text(&en, "Ruth 1:1", "Ruth and Naomi in Moab.");
    for (int v = 1; v <= 3; v++) { /* their labels "T1".. are shaped like names */
        char key[32];
        snprintf(key, sizeof key, "Titus 1:%d", v);
        set_text(&es, key, "es");
        set_text(&en, key, "en");
    }
    mt_bible_corpus c;
    if (mt_bible_build(&es, &en, &ex, &c) < 0) fail_msg("%s", mt_last_error());
    mt_gazetteer g = {.names = (char *[]){"Aachen", "Boise"}, .n = 2};
    mt_bible_names names;
    if (mt_bible_names_build(&names, &c, &g) < 0) fail_msg("%s", mt_last_error());
    assert_int_equal(names.n, 2);
    assert_int_equal(names.first[2], 2);
    assert_string_equal(names.from[0], "Susa");
    assert_string_equal(names.from[1], "Hegai");
    char want[128];
    snprintf(want, sizeof want, "Y Mardoqueo habló á Ester en %s.", names.to[0]);
    assert_string_equal(names.es[0], want);
    snprintf(want, sizeof want, "Esther, Esther and %s.", names.to[1]);
    assert_string_equal(names.en[1], want);

    char tmpl[] = "/tmp/mtlab_test_names_XXXXXX";
    assert_non_null(mkdtemp(tmpl));
    if (mt_bible_write(&c, &names, tmpl) < 0) fail_msg("%s", mt_last_error());
    assert_file(tmpl, "test.names.keys", "Esther 1:2\nEsther 3:4\n");
    snprintf(want, sizeof want, "# mtlab names 1\n# segments=2\n1\t%s\tSusa\n2\t%s\tHegai\n",
             names.to[0], names.to[1]);
    assert_file(tmpl, "test.names.tsv", want);
    char path[700];
    snprintf(path, sizeof path, "%s/test.names.tsv", tmpl);
    mt_names_list l;
    if (mt_names_list_read(&l, path) < 0) fail_msg("%s", mt_last_error());
    assert_int_equal(l.n_segments, 2);
    mt_names_list_free(&l);

    /* the draws are fixed: a second build substitutes the same names */
    mt_bible_names again;
    if (mt_bible_names_build(&again, &c, &g) < 0) fail_msg("%s", mt_last_error());
    assert_ptr_equal(again.to[0], names.to[0]);
    assert_ptr_equal(again.to[1], names.to[1]);
    mt_bible_names_free(&again);

    /* a gazetteer with too few names for a verse is an error naming the verse */
    set_text(&en, "Esther 1:2", "Mordecai spoke to Esther in Susa, Mardoqueo and Ester.");
    mt_gazetteer one = {.names = (char *[]){"Aachen"}, .n = 1};
    assert_int_equal(mt_bible_names_build(&again, &c, &one), -1);
    assert_non_null(strstr(mt_last_error(), "Esther 1:2"));
    assert_non_null(strstr(mt_last_error(), "too few names"));

    static const char *const ext[] = {"es", "en", "keys", "tsv"};
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/test.names.%s", tmpl, ext[i]);
        assert_int_equal(unlink(path), 0);
    }
    DIR *d = opendir(tmpl);
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        snprintf(path, sizeof path, "%s/%s", tmpl, e->d_name);
        unlink(path);
    }
    closedir(d);
    assert_int_equal(rmdir(tmpl), 0);
    mt_bible_names_free(&names);
    mt_bible_corpus_free(&c);
    mt_exclusions_free(&ex);
    mt_verse_list_free(&es);
    mt_verse_list_free(&en);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixture_keys_and_intros),
        cmocka_unit_test(test_clean_web_notes_titles_end_of_book),
        cmocka_unit_test(test_clean_rv1909_added_words),
        cmocka_unit_test(test_restore_chapter_capitals),
        cmocka_unit_test(test_restore_section_opening),
        cmocka_unit_test(test_osis_rules),
        cmocka_unit_test(test_osis_errors),
        cmocka_unit_test(test_imp_errors),
        cmocka_unit_test(test_exclusion_list),
        cmocka_unit_test(test_split_by_book),
        cmocka_unit_test(test_join_fixtures_with_exclusions),
        cmocka_unit_test(test_windows),
        cmocka_unit_test(test_complete_chapters),
        cmocka_unit_test(test_write_files),
        cmocka_unit_test(test_write_names),
    };
    return cmocka_run_group_tests_name("bible", tests, NULL, NULL);
}
