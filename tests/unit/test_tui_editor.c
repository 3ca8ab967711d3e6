/* The source editor: UTF-8 editing by whole characters (accents, wide CJK characters,
 * combining marks), cleaning of typed and pasted text, the cap with its report, soft wrapping
 * and cursor movement over wrapped rows, segments. */
#include "test_util.h"

#include <locale.h>

#include "tui/editor.h"
#include "mtlab/utf8.h"
#include "common/columns.h"

static int setup(void **state)
{
    (void)state;
    /* widths come from wcwidth, which needs a UTF-8 LC_CTYPE */
    return setlocale(LC_CTYPE, "C.UTF-8") ? 0 : -1;
}

static void test_utf8_decode_rejects_bad_sequences(void **state)
{
    (void)state;
    uint32_t cp;
    assert_int_equal(tui_utf8_decode("\xc3\xb1", 2, &cp), 2);
    assert_int_equal(cp, 0xF1);
    assert_int_equal(tui_utf8_decode("\xe4\xb8\xad", 3, &cp), 3);
    assert_int_equal(cp, 0x4E2D);
    assert_int_equal(tui_utf8_decode("\xf0\x9f\x98\x80", 4, &cp), 4);
    assert_int_equal(cp, 0x1F600);
    assert_int_equal(tui_utf8_decode("\xc0\xaf", 2, &cp), 0); /* overlong '/' */
    assert_int_equal(tui_utf8_decode("\xed\xa0\x80", 3, &cp), 0); /* surrogate */
    assert_int_equal(tui_utf8_decode("\xe4\xb8", 2, &cp), 0); /* truncated */
    assert_int_equal(tui_utf8_decode("\xff", 1, &cp), 0);
    assert_int_equal(cp, MT_UTF8_REPLACEMENT);
    char buf[4];
    assert_int_equal(mt_utf8_put(0x20AC, buf), 3);
    assert_memory_equal(buf, "\xe2\x82\xac", 3);
    assert_int_equal(mt_utf8_put(0xD800, buf), 0);
}

static void test_widths(void **state)
{
    (void)state;
    assert_int_equal(tui_text_width_z("Jesús"), 5);
    assert_int_equal(tui_text_width_z("中文"), 4);
    assert_int_equal(tui_text_width_z("e\xcc\x81"), 1); /* e + combining acute */
    int cols;
    /* a wide character that does not fit stays out whole */
    assert_int_equal(tui_text_fit("ab中c", 6, 3, &cols), 2);
    assert_int_equal(cols, 2);
    /* a combining mark stays with its base */
    assert_int_equal(tui_text_fit("ae\xcc\x81x", 5, 2, &cols), 4);
    assert_int_equal(cols, 2);
}

static void test_typing_and_deleting_whole_characters(void **state)
{
    (void)state;
    tui_editor e;
    tui_editor_init(&e, 1000);
    const uint32_t text[] = {'G', 0xE9, 'n', 'e', 's', 'i', 's', ' ', 0x4E2D, 0x6587};
    for (size_t i = 0; i < sizeof text / sizeof text[0]; i++)
        assert_int_equal(tui_editor_insert_char(&e, text[i]), 0);
    assert_string_equal(e.text, "Génesis 中文");
    assert_int_equal(e.cursor, e.len);
    tui_editor_backspace(&e); /* removes 文, all three bytes */
    assert_string_equal(e.text, "Génesis 中");
    tui_editor_home(&e);
    tui_editor_right(&e);
    tui_editor_delete(&e); /* é */
    assert_string_equal(e.text, "Gnesis 中");
    tui_editor_left(&e);
    tui_editor_left(&e); /* stops at the start */
    assert_int_equal(e.cursor, 0);
    /* a decomposed é (e + U+0301) is one step and one deletion */
    tui_editor_set_text(&e, "ae\xcc\x81z");
    tui_editor_home(&e);
    tui_editor_right(&e);
    tui_editor_right(&e);
    assert_int_equal(e.cursor, 4);
    tui_editor_backspace(&e);
    assert_string_equal(e.text, "az");
    tui_editor_free(&e);
}

static void test_paste_is_cleaned_and_is_one_edit(void **state)
{
    (void)state;
    tui_editor e;
    tui_editor_init(&e, 1000);
    unsigned long v0 = e.version;
    const char paste[] = "Dios\r\ndijo:\tluz\x07\rfin \xff!";
    size_t replaced = 99;
    assert_int_equal(tui_editor_insert(&e, paste, sizeof paste - 1, &replaced), 0);
    assert_int_equal(replaced, 1);
    assert_int_equal(e.version, v0 + 1);
    assert_string_equal(e.text, "Dios\ndijo: luz\nfin \xef\xbf\xbd!");
    tui_segment *segs;
    assert_int_equal(tui_editor_segments(&e, &segs), 3);
    assert_int_equal(segs[2].line, 2);
    free(segs);
    /* an invalid byte in a multi-line paste: it becomes U+FFFD, every line after it stays */
    tui_editor_set_text(&e, "");
    const char bad[] = "Primera linea\nSegunda \xe9 linea\nTercera \xe2\x82 linea\n\xed\xa0\x80";
    assert_int_equal(tui_editor_insert(&e, bad, sizeof bad - 1, &replaced), 0);
    assert_int_equal(replaced, 1 + 2 + 3);
    assert_string_equal(e.text,
                        "Primera linea\nSegunda \xef\xbf\xbd linea\nTercera \xef\xbf\xbd linea\n"
                        "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
    assert_int_equal(mt_utf8_invalid_offset(e.text, e.len), e.len);
    tui_editor_free(&e);
}

/* A paste of invalid bytes only: each becomes the three bytes of U+FFFD, the most the repair
 * can grow a text (a buffer sized for less overflows, which ASan sees). */
static void test_paste_of_only_invalid_bytes(void **state)
{
    (void)state;
    static const size_t lengths[] = {1, 2, 3, 4, 5, 31, 4096, 100000};
    for (size_t t = 0; t < sizeof lengths / sizeof lengths[0]; t++) {
        size_t n = lengths[t];
        for (int kind = 0; kind < 2; kind++) {
            /* 0xff never starts a character; 0x80 is a continuation byte with nothing before */
            char *paste = malloc(n);
            memset(paste, kind ? 0x80 : 0xff, n);
            tui_editor e;
            tui_editor_init(&e, 3 * n + 16);
            size_t replaced = 0;
            assert_int_equal(tui_editor_insert(&e, paste, n, &replaced), 0);
            assert_int_equal(replaced, n);
            assert_int_equal(e.len, 3 * n);
            for (size_t i = 0; i < n; i++) assert_memory_equal(e.text + 3 * i, "\xef\xbf\xbd", 3);
            assert_int_equal(mt_utf8_invalid_offset(e.text, e.len), e.len);
            tui_editor_free(&e);
            free(paste);
        }
    }
}

static void test_cap_reports_what_did_not_fit(void **state)
{
    (void)state;
    tui_editor e;
    tui_editor_init(&e, 9);
    /* 8 bytes fit; "ñ" would straddle the limit and is dropped whole, with what follows */
    size_t dropped = tui_editor_insert(&e, "abcdefghñz", 11, NULL);
    assert_string_equal(e.text, "abcdefgh");
    assert_int_equal(dropped, 3);
    assert_int_equal(tui_editor_insert_char(&e, 'x'), 0);
    assert_int_equal(tui_editor_insert_char(&e, 'y'), -1);
    assert_int_equal(e.len, 9);
    assert_string_equal(e.text, "abcdefghx");
    tui_editor_free(&e);
}

static void test_wrap_at_spaces_and_inside_long_words(void **state)
{
    (void)state;
    tui_editor e;
    tui_editor_init(&e, 1000);
    tui_editor_set_text(&e, "el cielo azul\nsupercalifragilistico\n\n中文中文中");
    tui_vrow *rows;
    int n = tui_editor_wrap(&e, 8, &rows, NULL, NULL);
    const char *want[] = {"el ",   "cielo ", "azul",     "supercal", "ifragili",
                          "stico", "",       "中文中文", "中"};
    assert_int_equal(n, 9);
    for (int i = 0; i < n; i++) {
        char buf[64];
        snprintf(buf, sizeof buf, "%.*s", (int)(rows[i].end - rows[i].start),
                 e.text + rows[i].start);
        assert_string_equal(buf, want[i]);
        assert_true(tui_text_width(e.text + rows[i].start, rows[i].end - rows[i].start) <= 8);
    }
    assert_int_equal(rows[8].line, 3);
    free(rows);
    tui_editor_free(&e);
}

static void test_cursor_moves_over_wrapped_rows(void **state)
{
    (void)state;
    tui_editor e;
    tui_editor_init(&e, 1000);
    tui_editor_set_text(&e, "abcdef ghijkl\nxy");
    tui_vrow *rows;
    int r, c;
    e.cursor = 2; /* "ab|c" */
    tui_editor_wrap(&e, 7, &rows, &r, &c);
    free(rows);
    assert_int_equal(r, 0);
    assert_int_equal(c, 2);
    tui_editor_down(&e, 7); /* to "gh|i" on the wrapped row */
    assert_int_equal(e.cursor, 9);
    tui_editor_down(&e, 7); /* the short last line: its end */
    assert_int_equal(e.cursor, 16);
    tui_editor_up(&e, 7); /* the goal column 2 is kept */
    assert_int_equal(e.cursor, 9);
    tui_editor_down(&e, 7);
    tui_editor_down(&e, 7); /* past the last row: the end of the text */
    assert_int_equal(e.cursor, e.len);
    /* the end of a full wrapped row shows the cursor at the start of the next one */
    e.cursor = 7;
    tui_editor_wrap(&e, 7, &rows, &r, &c);
    free(rows);
    assert_int_equal(r, 1);
    assert_int_equal(c, 0);
    assert_int_equal(tui_editor_cursor_line(&e), 0);
    tui_editor_end(&e);
    tui_editor_right(&e);
    assert_int_equal(tui_editor_cursor_line(&e), 1);
    tui_editor_free(&e);
}

static void test_segments_skip_blank_lines(void **state)
{
    (void)state;
    tui_editor e;
    tui_editor_init(&e, 1000);
    tui_editor_set_text(&e, "  uno  \n   \n\ndos\n");
    tui_segment *segs;
    int n = tui_editor_segments(&e, &segs);
    assert_int_equal(n, 2);
    assert_int_equal(segs[0].end - segs[0].start, 3);
    assert_memory_equal(e.text + segs[0].start, "uno", 3);
    assert_int_equal(segs[1].line, 3);
    free(segs);
    tui_editor_set_text(&e, "");
    assert_int_equal(tui_editor_segments(&e, &segs), 0);
    assert_null(segs);
    tui_editor_free(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_utf8_decode_rejects_bad_sequences),
        cmocka_unit_test(test_widths),
        cmocka_unit_test(test_typing_and_deleting_whole_characters),
        cmocka_unit_test(test_paste_is_cleaned_and_is_one_edit),
        cmocka_unit_test(test_paste_of_only_invalid_bytes),
        cmocka_unit_test(test_cap_reports_what_did_not_fit),
        cmocka_unit_test(test_wrap_at_spaces_and_inside_long_words),
        cmocka_unit_test(test_cursor_moves_over_wrapped_rows),
        cmocka_unit_test(test_segments_skip_blank_lines),
    };
    return cmocka_run_group_tests_name("tui_editor", tests, setup, NULL);
}
