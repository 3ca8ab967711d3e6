/* `mtlab tokenizer train` never replaces a model file unless asked (--force), and writes it
 * atomically: a trained model appears whole under its name, or the old one stays. */
#include "test_util.h"
#include "cli/commands.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static char tmp[256], data[300];

static test_captured train(const char *out, const char *vocab, const char *extra)
{
    return test_run_command(&cmd_tokenizer,
                            (const char *const[]){"train", "--data", data, "--vocab", vocab,
                                                  "--threads", "1", "--out", out,
                                                  extra ? extra : NULL, NULL});
}

/* The names in dir, sorted, space-separated. */
static void names_in(char *out, size_t len, const char *dir)
{
    struct dirent **list;
    int n = scandir(dir, &list, NULL, alphasort);
    assert_true(n >= 0);
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        if (list[i]->d_name[0] != '.' || strlen(list[i]->d_name) > 2) {
            strncat(out, list[i]->d_name, len - strlen(out) - 2);
            strcat(out, " ");
        }
        free(list[i]);
    }
    free(list);
}

static void test_refuses_an_existing_model(void **state)
{
    (void)state;
    char out[400], model[420], names[1000], want[600];
    snprintf(out, sizeof out, "%s/tok", tmp);
    snprintf(model, sizeof model, "%s.model", out);
    test_captured r = train(out, "100", NULL);
    if (r.rc) fail_msg("%s", r.err);
    test_captured_free(&r);
    size_t n100;
    char *first = test_read_file(model, &n100);
    assert_non_null(first);

    /* a second run is refused before training, naming the file and --force; the file stays */
    r = train(out, "120", NULL);
    assert_int_equal(r.rc, 1);
    snprintf(want, sizeof want, "%s: already exists; not overwritten (--force replaces it)", model);
    if (!strstr(r.err, want)) fail_msg("expected '%s' in: %s", want, r.err);
    test_captured_free(&r);
    size_t n;
    char *same = test_read_file(model, &n);
    assert_int_equal(n, n100);
    assert_memory_equal(same, first, n);
    free(same);

    /* --force replaces it, and leaves nothing else behind */
    r = train(out, "120", "--force");
    if (r.rc) fail_msg("%s", r.err);
    assert_non_null(strstr(r.out, "tok.model: 120 pieces"));
    test_captured_free(&r);
    char *other = test_read_file(model, &n);
    assert_false(n == n100 && !memcmp(other, first, n));
    free(other);
    free(first);
    names_in(names, sizeof names, tmp);
    assert_string_equal(names, "data tok.model tok.vocab ");

    /* --separate: one existing model refuses the run before either is trained */
    char es[420];
    snprintf(es, sizeof es, "%s/sep.es.model", tmp);
    test_write_file(es, "x", 1);
    snprintf(out, sizeof out, "%s/sep", tmp);
    r = train(out, "100", "--separate");
    assert_int_equal(r.rc, 1);
    assert_non_null(
        strstr(r.err, "sep.es.model: already exists; not overwritten (--force replaces it)"));
    test_captured_free(&r);
    names_in(names, sizeof names, tmp);
    assert_string_equal(names, "data sep.es.model tok.model tok.vocab ");

    /* what a FIFO or a directory is, is said, forced or not: it is no model file to replace */
    snprintf(es, sizeof es, "%s/dir.model", tmp);
    assert_int_equal(mkdir(es, 0755), 0);
    snprintf(out, sizeof out, "%s/dir", tmp);
    r = train(out, "100", "--force");
    assert_int_equal(r.rc, 1);
    assert_non_null(strstr(r.err, "dir.model: is a directory, not a file"));
    test_captured_free(&r);
}

static void test_usage_names_force(void **state)
{
    (void)state;
    test_captured r =
        test_run_command(&cmd_tokenizer, (const char *const[]){"train", "--out", NULL});
    assert_int_equal(r.rc, 2);
    assert_non_null(strstr(r.err, "[--force]"));
    test_captured_free(&r);
}

static int setup(void **state)
{
    (void)state;
    if (test_make_tmpdir(tmp, sizeof tmp, "tokenizer_out") != 0) return -1;
    snprintf(data, sizeof data, "%s/data", tmp);
    if (mkdir(data, 0755) != 0) return -1;
    static const char *const sides[][2] = {{"tests/fixtures/tokenizer/corpus.es", "train.es"},
                                           {"tests/fixtures/tokenizer/corpus.en", "train.en"}};
    for (int s = 0; s < 2; s++) {
        size_t n;
        char *text = test_read_file(sides[s][0], &n), path[400];
        if (!text) return -1;
        snprintf(path, sizeof path, "%s/%s", data, sides[s][1]);
        test_write_file(path, text, n);
        free(text);
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return test_remove_tree(tmp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refuses_an_existing_model),
        cmocka_unit_test(test_usage_names_force),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
