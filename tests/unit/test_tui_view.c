/* The pure pieces of the panes: entity marks (recalled highlighted and listed with a check,
 * dropped listed with a cross, in UTF-8 and in ASCII), styled text, number formats. */
#include "test_util.h"

#include <locale.h>

#include "mtlab/entities.h"
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

static void test_recalled_and_dropped(void **state)
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
    tui_mark_recalled(&st, base, hyp, src, spans, n);
    tui_styled_addz(&st, "\n", TUI_C_TEXT);
    assert_int_equal(tui_entity_line(&st, hyp, src, spans, n, tui_glyphs_for(1)), 1);
    assert_string_equal(st.text, "1 And Ibáñez saw Ibáñez, good.\n"
                                 "  ✓ recalled: Ibáñez   ✗ dropped: Ah, Cádiz");
    /* both occurrences in the translation are marked, nothing else */
    assert_int_equal(st.style[base + 4], TUI_C_RECALLED);
    assert_int_equal(st.style[base + 17], TUI_C_RECALLED); /* "And Ibáñez saw " is 17 bytes */
    assert_int_equal(st.style[base + 0], TUI_C_TEXT);
    assert_int_equal(style_of(&st, "saw"), TUI_C_TEXT);
    assert_int_equal(style_of(&st, "✓ recalled: "), TUI_C_RECALLED);
    assert_int_equal(style_of(&st, "✗ dropped: "), TUI_C_DROPPED);
    assert_int_equal(style_of(&st, "Cádiz"), TUI_C_DROPPED);
    tui_styled_free(&st);

    /* ASCII symbols; all dropped; no entities at all adds nothing */
    tui_styled_init(&st);
    assert_int_equal(tui_entity_line(&st, "nothing", src, spans, n, tui_glyphs_for(0)), 0);
    assert_string_equal(st.text, "  x dropped: Ah, Ibáñez, Cádiz");
    tui_styled_free(&st);
    tui_styled_init(&st);
    assert_int_equal(tui_entity_line(&st, "x", src, spans, 0, tui_glyphs_for(1)), 0);
    assert_int_equal(st.len, 0);
    tui_styled_free(&st);
    free(spans);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_recalled_and_dropped),
        cmocka_unit_test(test_styled_text_grows_and_marks),
        cmocka_unit_test(test_formats),
    };
    return cmocka_run_group_tests_name("tui_view", tests, setup, NULL);
}
