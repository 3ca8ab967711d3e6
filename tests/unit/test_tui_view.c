/* The pure pieces of the panes: entity marks (copied and translated names highlighted and
 * listed with their symbols, dropped ones listed with a cross, each name once with a count, in
 * UTF-8 and in ASCII), styled text, number formats. */
#include "test_util.h"

#include <locale.h>

#include "mtlab/entities.h"
#include "mtlab/bundle.h"
#include "mtlab/error.h"
#include "mtlab/metrics.h"
#include "tui/format.h"
#include "tui/marks.h"

static int setup(void **state)
{
    (void)state;
    return setlocale(LC_CTYPE, "C.UTF-8") ? 0 : -1;
}

/* The meaning of the bytes of st that spell needle (its first occurrence). */
static int style_of(const tui_styled *st, const char *needle)
{
    const char *p = strstr(st->text, needle);
    if (!p) fail_msg("'%s' not in '%s'", needle, st->text);
    size_t at = (size_t)(p - st->text);
    for (size_t i = 1; i < strlen(needle); i++)
        if (st->style[at + i] != st->style[at]) fail_msg("'%s' has mixed styles", needle);
    return st->style[at];
}

static void test_copied_and_dropped(void **state)
{
    (void)state;
    const char *src = "Y vio Ah que Ibáñez era bueno en Cádiz.";
    mt_text_span *spans;
    size_t n;
    assert_int_equal(mt_source_entities(&spans, &n, src, NULL), 0);
    assert_int_equal(n, 3); /* Ah, Ibáñez, Cádiz */
    const char *hyp = "And Ibáñez saw Ibáñez, good.";
    tui_styled st;
    tui_styled_init(&st);
    tui_styled_addz(&st, "1 ", TUI_C_DIM);
    size_t base = st.len;
    tui_styled_addz(&st, hyp, TUI_C_TEXT);
    tui_mark_entities(&st, base, hyp, src, spans, n, NULL);
    tui_styled_addz(&st, "\n", TUI_C_TEXT);
    assert_int_equal(tui_entity_line(&st, hyp, src, spans, n, NULL, tui_glyphs_for(1)), 1);
    assert_string_equal(st.text, "1 And Ibáñez saw Ibáñez, good.\n"
                                 "  ✓ copied: Ibáñez\n  ✗ dropped: Ah, Cádiz");
    /* both occurrences in the translation are marked, nothing else */
    assert_int_equal(st.style[base + 4], TUI_C_RECALLED);
    assert_int_equal(st.style[base + 17], TUI_C_RECALLED); /* "And Ibáñez saw " is 17 bytes */
    assert_int_equal(st.style[base + 0], TUI_C_TEXT);
    assert_int_equal(style_of(&st, "saw"), TUI_C_TEXT);
    assert_int_equal(style_of(&st, "✓ copied: "), TUI_C_RECALLED);
    assert_int_equal(style_of(&st, "✗ dropped: "), TUI_C_DROPPED);
    assert_int_equal(style_of(&st, "Cádiz"), TUI_C_DROPPED);
    tui_styled_free(&st);

    /* ASCII symbols; all dropped; no entities at all adds nothing */
    tui_styled_init(&st);
    assert_int_equal(tui_entity_line(&st, "nothing", src, spans, n, NULL, tui_glyphs_for(0)), 0);
    assert_string_equal(st.text, "  x dropped: Ah, Ibáñez, Cádiz");
    tui_styled_free(&st);
    tui_styled_init(&st);
    assert_int_equal(tui_entity_line(&st, "x", src, spans, 0, NULL, tui_glyphs_for(1)), 0);
    assert_int_equal(st.len, 0);
    tui_styled_free(&st);
    free(spans);
}

static mt_entity_lexicon *fixture_lexicon(void)
{
    mt_text_lines src = {0}, tgt = {0};
    if (mt_text_lines_read(&src, "tests/fixtures/entities/lexicon_train.es") != 0 ||
        mt_text_lines_read(&tgt, "tests/fixtures/entities/lexicon_train.en") != 0)
        fail_msg("%s", mt_last_error());
    mt_entity_lexicon *l = mt_entity_lexicon_build(
        (const char *const *)src.lines, (const char *const *)tgt.lines, src.n, NULL, NULL);
    mt_text_lines_free(&src);
    mt_text_lines_free(&tgt);
    return l;
}

/* The entity line of hyp for src, with the fixture corpus's lexicon. */
static void entity_line(char *out, size_t len, const char *src, const char *hyp,
                        const mt_entity_lexicon *l, int utf8)
{
    mt_text_span *spans;
    size_t n;
    assert_int_equal(mt_source_entities(&spans, &n, src, l), 0);
    tui_styled st;
    tui_styled_init(&st);
    tui_entity_line(&st, hyp, src, spans, n, l, tui_glyphs_for(utf8));
    snprintf(out, len, "%s", st.text);
    tui_styled_free(&st);
    free(spans);
}

static void test_translated_names(void **state)
{
    (void)state;
    mt_entity_lexicon *l = fixture_lexicon();
    assert_non_null(l);
    char got[256];
    /* three panes that all wrote God: translated, listed once with its count, never dropped */
    const char *panes[] = {"God said: God is God.", "God spoke: God, God.", "And God said it."};
    for (int i = 0; i < 3; i++) {
        entity_line(got, sizeof got, "Dios dijo: Dios es Dios.", panes[i], l, 1);
        assert_string_equal(got, "  ⇄ translated: Dios→God ×3");
    }
    entity_line(got, sizeof got, "Pedro y Juan fueron a Roma", "Peter and John went to Rome", l, 1);
    assert_string_equal(got, "  ⇄ translated: Pedro→Peter, Juan→John, Roma→Rome");
    entity_line(got, sizeof got, "Y habló Moisés a Israel e Israel oyó.", "And Moses spoke.", l, 0);
    assert_string_equal(got, "  ~ translated: Moisés->Moses\n  x dropped: Israel x2");
    entity_line(got, sizeof got, "Marta lloró. Jesús habló.", "Marta wept. Jesus spoke.", l, 1);
    assert_string_equal(got, "  ✓ copied: Marta\n  ⇄ translated: Jesús→Jesus");

    /* the form found is highlighted as translated in the translation */
    const char *src = "Y habló Moisés.", *hyp = "And Moses spoke.";
    mt_text_span *spans;
    size_t n;
    assert_int_equal(mt_source_entities(&spans, &n, src, l), 0);
    tui_styled st;
    tui_styled_init(&st);
    tui_styled_addz(&st, hyp, TUI_C_TEXT);
    tui_mark_entities(&st, 0, hyp, src, spans, n, l);
    tui_entity_line(&st, hyp, src, spans, n, l, tui_glyphs_for(1));
    assert_int_equal(st.style[4], TUI_C_TRANSLATED);
    assert_int_equal(st.style[0], TUI_C_TEXT);
    assert_int_equal(style_of(&st, "⇄ translated: "), TUI_C_TRANSLATED);
    tui_styled_free(&st);
    free(spans);
    mt_entity_lexicon_free(l);
}

static void test_styled_text_grows_and_marks(void **state)
{
    (void)state;
    tui_styled st;
    tui_styled_init(&st);
    for (int i = 0; i < 1000; i++) tui_styled_addz(&st, "abc", (tui_meaning)(i % 3));
    assert_int_equal(st.len, 3000);
    assert_int_equal(st.style[2999], 999 % 3);
    tui_styled_mark(&st, 2990, 5000, TUI_C_ERROR); /* clamped to the text */
    assert_int_equal(st.style[2999], TUI_C_ERROR);
    assert_int_equal(st.style[2989], 996 % 3);
    assert_int_equal(strlen(st.text), 3000);
    tui_styled_free(&st);
}

static void test_formats(void **state)
{
    (void)state;
    char b[32];
    tui_format_count(b, sizeof b, 812);
    assert_string_equal(b, "812");
    tui_format_count(b, sizeof b, 52500);
    assert_string_equal(b, "52.5K");
    tui_format_count(b, sizeof b, 7524000);
    assert_string_equal(b, "7.52M");
    tui_format_count(b, sizeof b, 77100000);
    assert_string_equal(b, "77.1M");
    tui_format_count(b, sizeof b, 999600);
    assert_string_equal(b, "1.00M");
    tui_format_bytes(b, sizeof b, 512);
    assert_string_equal(b, "512 B");
    tui_format_bytes(b, sizeof b, 6144);
    assert_string_equal(b, "6.00 KiB");
    tui_format_bytes(b, sizeof b, 3u << 29);
    assert_string_equal(b, "1.50 GiB");
    tui_format_seconds(b, sizeof b, 0.0304);
    assert_string_equal(b, "30 ms");
    tui_format_seconds(b, sizeof b, 12.34);
    assert_string_equal(b, "12.3 s");
}

/* A pane is titled with its bundle's directory name, a run's best or checkpoint bundle with
 * the run's name. */
/* Narrow panes shorten the statistics' labels, then drop whole items: a unit is never cut. */
static void test_stats_fit_without_cutting_units(void **state)
{
    (void)state;
    char b[160];
    tui_stats s = {0.830, 29, (size_t)(2.59 * 1048576), 1, 445, 0};
    const char *sep = " \xc2\xb7 ";
    assert_int_equal(tui_format_stats(b, sizeof b, &s, sep, 80), 49);
    assert_string_equal(b, "830 ms · 34.9 tok/s · state 2.59 MiB · 445 cached");
    tui_format_stats(b, sizeof b, &s, sep, 45);
    assert_string_equal(b, "830 ms · 35 t/s · state 2.59 MiB · 445 cached");
    tui_format_stats(b, sizeof b, &s, sep, 36);
    assert_string_equal(b, "830 ms · 34.9 tok/s · state 2.59 MiB");
    tui_format_stats(b, sizeof b, &s, sep, 32);
    assert_string_equal(b, "830 ms · 35 t/s · state 2.59 MiB");
    /* narrower: the model's state stays longer than the rate */
    tui_format_stats(b, sizeof b, &s, sep, 30);
    assert_string_equal(b, "830 ms · state 2.59 MiB");
    tui_format_stats(b, sizeof b, &s, sep, 16);
    assert_string_equal(b, "830 ms");
    tui_format_stats(b, sizeof b, &s, sep, 7);
    assert_string_equal(b, "830 ms");
    assert_int_equal(tui_format_stats(b, sizeof b, &s, sep, 5), 0);
    assert_string_equal(b, "");
    /* every width: what is shown fits and ends in a whole unit */
    for (int w = 0; w < 60; w++) {
        int cols = tui_format_stats(b, sizeof b, &s, sep, w);
        assert_true(cols <= w);
        size_t n = strlen(b);
        assert_true(n == 0 || !strcmp(b + n - 2, "ms") || !strcmp(b + n - 2, "/s") ||
                    !strcmp(b + n - 3, "MiB") || !strcmp(b + n - 6, "cached"));
    }
    /* the model's state and the working set, each named */
    tui_stats w = {0.830, 29, 12 * 1024, 1, 0, 9 * 1048576};
    tui_format_stats(b, sizeof b, &w, sep, 80);
    assert_string_equal(b, "830 ms · 34.9 tok/s · state 12.0 KiB · working set 9.00 MiB");
    tui_format_stats(b, sizeof b, &w, sep, 50);
    assert_string_equal(b, "830 ms · 35 t/s · state 12.0 KiB · work 9.00 MiB");
    /* a fast pane's rate shortens to thousands, so its working set stays where a slow one's does */
    tui_stats f = {0.010, 116, 6 * 1024, 1, 0, (size_t)(1.10 * 1048576)};
    tui_format_stats(b, sizeof b, &f, sep, 48);
    assert_string_equal(b, "10 ms · 12k t/s · state 6.00 KiB · work 1.10 MiB");
    /* all from the cache */
    tui_stats c = {0, 0, 0, 0, 446, 0};
    tui_format_stats(b, sizeof b, &c, sep, 40);
    assert_string_equal(b, "446 cached");
    tui_format_search(b, sizeof b, 1);
    assert_string_equal(b, "greedy");
    tui_format_search(b, sizeof b, 5);
    assert_string_equal(b, "beam 5");
}

static void test_bundle_names(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"models/mamba-small", "mamba-small"},
        {"models/mamba-small/", "mamba-small"},
        {"runs/tiny/best", "tiny"},
        {"runs/tiny/best/", "tiny"},
        {"/abs/runs/r2/checkpoint", "r2"},
        {"best", "best"},
        {"./best", "best"},
        {"/best", "best"},
        {"runs/bestest", "bestest"},
        {"runs/x/checkpoints", "checkpoints"},
        {"tiny//best", "tiny"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char name[64];
        mt_bundle_name(name, sizeof name, cases[i][0]);
        if (strcmp(name, cases[i][1]))
            fail_msg("%s -> '%s', want '%s'", cases[i][0], name, cases[i][1]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_copied_and_dropped),
        cmocka_unit_test(test_translated_names),
        cmocka_unit_test(test_styled_text_grows_and_marks),
        cmocka_unit_test(test_formats),
        cmocka_unit_test(test_stats_fit_without_cutting_units),
        cmocka_unit_test(test_bundle_names),
    };
    return cmocka_run_group_tests_name("tui_view", tests, setup, NULL);
}
