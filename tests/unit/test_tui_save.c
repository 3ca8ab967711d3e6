/* Ctrl-S's files: the TSV table (escaped tabs, newlines and backslashes; an empty cell for a
 * segment a pane has not translated) and the JSON lines (null and finished=false there), and
 * file names that never replace an existing file. */
#include "test_util.h"

#include <jansson.h>
#include <unistd.h>

#include "tui/save.h"

static char *slurp(FILE *f)
{
    long n = ftell(f);
    rewind(f);
    char *s = calloc((size_t)n + 1, 1);
    assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
    return s;
}

static void test_table_and_lines(void **state)
{
    (void)state;
    char *sources[] = {"Sea la luz", "Dijo\tDios"};
    char *a_hyps[] = {"Let there be light", "God said \\ \"yes\""};
    char *b_hyps[] = {"Be light", NULL};
    unsigned char a_final[] = {1, 1}, b_final[] = {1, 0};
    tui_save_column cols[] = {
        {"mamba-small", "models/mamba-small", "greedy", a_hyps, a_final, 2},
        {"retnet-small", "models/retnet-small", "beam 5", b_hyps, b_final, 2},
    };
    FILE *tsv = tmpfile(), *jsonl = tmpfile();
    assert_int_equal(tui_write_translations(tsv, jsonl, sources, 2, cols, 2), 0);
    char *t = slurp(tsv), *j = slurp(jsonl);
    assert_string_equal(t, "source\tmamba-small (greedy)\tretnet-small (beam 5)\n"
                           "Sea la luz\tLet there be light\tBe light\n"
                           "Dijo\\tDios\tGod said \\\\ \"yes\"\t\n");
    /* two lines, each an object that parses back */
    char *second = strchr(j, '\n') + 1;
    assert_non_null(second);
    json_error_t err;
    json_t *row = json_loadb(second, strlen(second), 0, &err);
    assert_non_null(row);
    assert_int_equal(json_integer_value(json_object_get(row, "segment")), 2);
    assert_string_equal(json_string_value(json_object_get(row, "source")), "Dijo\tDios");
    json_t *outs = json_object_get(row, "translations");
    assert_int_equal(json_array_size(outs), 2);
    json_t *a = json_array_get(outs, 0), *b = json_array_get(outs, 1);
    assert_string_equal(json_string_value(json_object_get(a, "translation")), "God said \\ \"yes\"");
    assert_true(json_is_true(json_object_get(a, "finished")));
    assert_string_equal(json_string_value(json_object_get(b, "search")), "beam 5");
    assert_true(json_is_null(json_object_get(b, "translation")));
    assert_true(json_is_false(json_object_get(b, "finished")));
    json_decref(row);
    free(t);
    free(j);
    fclose(tsv);
    fclose(jsonl);
}

static void test_names_never_overwrite(void **state)
{
    (void)state;
    char dir[256], t1[512], j1[512], t2[512], j2[512];
    assert_int_equal(test_make_tmpdir(dir, sizeof dir, "save"), 0);
    FILE *a, *b, *c, *d;
    assert_int_equal(tui_create_save_files(dir, &a, &b, t1, j1, sizeof t1), 0);
    assert_non_null(strstr(t1, "/mtlab-translations-"));
    assert_int_equal(strcmp(t1 + strlen(t1) - 4, ".tsv"), 0);
    assert_int_equal(strcmp(j1 + strlen(j1) - 6, ".jsonl"), 0);
    fputs("first", a);
    fclose(a);
    fclose(b);
    /* the same second again: another name, the first file untouched */
    assert_int_equal(tui_create_save_files(dir, &c, &d, t2, j2, sizeof t2), 0);
    assert_string_not_equal(t2, t1);
    assert_string_not_equal(j2, j1);
    fclose(c);
    fclose(d);
    FILE *f = fopen(t1, "r");
    char buf[16] = "";
    assert_non_null(fgets(buf, sizeof buf, f));
    fclose(f);
    assert_string_equal(buf, "first");
    /* a directory that cannot be written is an error naming the file */
    assert_int_equal(tui_create_save_files("/nonexistent-dir", &c, &d, t2, j2, sizeof t2), -1);
    assert_int_equal(test_remove_tree(dir), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_and_lines),
        cmocka_unit_test(test_names_never_overwrite),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
