/* The error line: whatever a message quotes (a piece of a file, a parser's text), what
 * mt_last_error() holds is one line, its control characters written as \xNN. */
#include "test_util.h"

#include "mtlab/error.h"

static void test_message_is_one_line(void **state)
{
    (void)state;
    assert_int_equal(mt_error("piece '%s' at %d", "<\n\t\r\x7f>", 4), -1);
    assert_string_equal(mt_last_error(), "piece '<\\x0a\\x09\\x0d\\x7f>' at 4");
    mt_error_context("file %s", "a\nb");
    assert_string_equal(mt_last_error(), "file a\\x0ab: piece '<\\x0a\\x09\\x0d\\x7f>' at 4");
    /* UTF-8 stays as it is */
    mt_error("%s", "Jerusalén ✓");
    assert_string_equal(mt_last_error(), "Jerusalén ✓");
    /* a long message of control characters is cut whole escapes, still one line */
    char many[3000];
    memset(many, '\n', sizeof many - 1);
    many[sizeof many - 1] = '\0';
    mt_error("%s", many);
    size_t n = strlen(mt_last_error());
    assert_true(n > 900 && n < 1024);
    assert_int_equal(n % 4, 0);
    assert_null(strchr(mt_last_error(), '\n'));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_message_is_one_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
