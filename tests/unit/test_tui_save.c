/* Ctrl-S's files: the TSV table (escaped tabs, newlines and backslashes; an empty cell for a
 * segment a pane has not translated) and the JSON lines (null and finished=false there), and
 * file names that never replace an existing file. */
#include "test_util.h"

#include <jansson.h>
#include <unistd.h>

#include "mtlab/error.h"
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
        {"mamba-small",
         "models/mamba-small",
         "greedy",
         a_hyps,
         a_final,
         2,
         {1, 2.0, 50, 4096, 8192}},
        {"retnet-small", "models/retnet-small", "beam 5", b_hyps, b_final, 2, {0}},
    };
    FILE *tsv = tmpfile(), *jsonl = tmpfile();
    assert_int_equal(tui_write_translations(tsv, jsonl, sources, 2, cols, 2, NULL), 0);
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
    assert_string_equal(json_string_value(json_object_get(a, "translation")),
                        "God said \\ \"yes\"");
    assert_true(json_is_true(json_object_get(a, "finished")));
    assert_string_equal(json_string_value(json_object_get(b, "search")), "beam 5");
    assert_true(json_is_null(json_object_get(b, "translation")));
    assert_true(json_is_false(json_object_get(b, "finished")));
    /* the request's figures where the pane had them, null where it had none */
    json_t *ra = json_object_get(a, "request");
    assert_true(json_real_value(json_object_get(ra, "seconds")) == 2.0);
    assert_int_equal(json_integer_value(json_object_get(ra, "tokens")), 50);
    assert_true(json_real_value(json_object_get(ra, "tokens_per_s")) == 25.0);
    assert_int_equal(json_integer_value(json_object_get(ra, "model_state_bytes")), 4096);
    assert_int_equal(json_integer_value(json_object_get(ra, "working_set_bytes")), 8192);
    assert_true(json_is_null(json_object_get(b, "request")));
    json_decref(row);
    free(t);
    free(j);
    fclose(tsv);
    fclose(jsonl);
}

/* Each translation's verdict on each source name: copied, translated (with the form the
 * lexicon gives) or dropped, in the JSON lines and in one TSV column per pane. */
static void test_entity_verdicts(void **state)
{
    (void)state;
    char *sources[] = {"Y dijo Dios a Moisés y a Aarón"};
    char *hyps[] = {"And God said to Moses"};
    unsigned char final[] = {1};
    tui_save_column col = {"m", "models/m", "greedy", hyps, final, 1, {0}};
    mt_text_span spans[] = {{7, 11}, {14, 21}, {26, 32}};
    const mt_text_span *seg_spans[] = {spans};
    size_t n_spans[] = {3};
    char dir[256], path[300];
    assert_int_equal(test_make_tmpdir(dir, sizeof dir, "save-lexicon"), 0);
    snprintf(path, sizeof path, "%s/entity_lexicon.tsv", dir);
    test_write_text(path, "# mtlab entity_lexicon 2\n# pairs=10 words=0\n"
                          "Dios\tGod\t0.9\t10\nMoisés\tMoses\t0.9\t10\n");
    mt_entity_lexicon *lex = mt_entity_lexicon_read(path);
    if (!lex) fail_msg("%s", mt_last_error());
    tui_save_entities ents = {seg_spans, n_spans, lex};
    FILE *tsv = tmpfile(), *jsonl = tmpfile();
    assert_int_equal(tui_write_translations(tsv, jsonl, sources, 1, &col, 1, &ents), 0);
    char *t = slurp(tsv), *j = slurp(jsonl);
    assert_string_equal(t, "source\tm (greedy)\tm names\n"
                           "Y dijo Dios a Moisés y a Aarón\tAnd God said to Moses\t"
                           "translated Dios→God; translated Moisés→Moses; dropped Aarón\n");
    json_error_t err;
    json_t *row = json_loadb(j, strlen(j), 0, &err);
    assert_non_null(row);
    json_t *names =
        json_object_get(json_array_get(json_object_get(row, "translations"), 0), "names");
    assert_int_equal(json_array_size(names), 3);
    json_t *dios = json_array_get(names, 0), *aaron = json_array_get(names, 2);
    assert_string_equal(json_string_value(json_object_get(dios, "name")), "Dios");
    assert_string_equal(json_string_value(json_object_get(dios, "verdict")), "translated");
    assert_string_equal(json_string_value(json_object_get(dios, "as")), "God");
    assert_string_equal(json_string_value(json_object_get(aaron, "verdict")), "dropped");
    assert_true(json_is_null(json_object_get(aaron, "as")));
    json_decref(row);
    mt_entity_lexicon_free(lex);
    test_remove_tree(dir);
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
        cmocka_unit_test(test_entity_verdicts),
        cmocka_unit_test(test_names_never_overwrite),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
