/* `mtlab score` run with the arguments of sacreBLEU commands whose output the fixtures recorded
 * (tests/fixtures/metrics/ter.json's "cli", tokenizers.json's Bible scores): TER with its
 * options, BLEU with every --tokenize, chrF++ through --chrf-word-order, byte for byte as
 * `sacrebleu REF -i HYP ... -f text -w 2` printed them; and the new options' bad uses. */
#include "test_util.h"

#include "cli/commands.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#define JSTR(o, k) json_string_value(json_object_get((o), (k)))
#define HYP "tests/fixtures/metrics/bible/test.apertium.en"
#define REF "tests/fixtures/metrics/bible/test.en"

static json_t *load(const char *path)
{
    json_error_t err;
    json_t *j = json_load_file(path, 0, &err);
    if (!j) fail_msg("%s:%d: %s", path, err.line, err.text);
    return j;
}

static void expect_output(const char *const *args, const char *want, const char *what)
{
    test_captured c = test_run_command(&cmd_score, args);
    if (c.rc != 0) fail_msg("%s: exit %d, stderr:\n%s", what, c.rc, c.err);
    if (strcmp(c.out, want)) fail_msg("%s:\nmtlab:\n%ssacreBLEU:\n%s", what, c.out, want);
    test_captured_free(&c);
}

/* `sacrebleu REF -i HYP OPTIONS -f text -w 2` as `mtlab score --ref REF --hyp HYP OPTIONS`:
 * every option but the output format's is sacreBLEU's own name. */
static void test_ter_commands_match_sacrebleu(void **state)
{
    (void)state;
    json_t *j = load("tests/fixtures/metrics/ter.json"), *cli = json_object_get(j, "cli"), *run;
    size_t k;
    assert_true(json_array_size(cli) >= 3);
    json_array_foreach(cli, k, run)
    {
        char *cmd = strdup(JSTR(run, "command"));
        const char *args[32];
        size_t n = 0;
        char *save = NULL, *w = strtok_r(cmd, " ", &save);
        assert_string_equal(w, "sacrebleu");
        args[n++] = "--ref";
        args[n++] = strtok_r(NULL, " ", &save);
        while ((w = strtok_r(NULL, " ", &save))) {
            if (!strcmp(w, "-f") || !strcmp(w, "-w")) {
                const char *v = strtok_r(NULL, " ", &save);
                assert_string_equal(v, !strcmp(w, "-f") ? "text" : "2");
                continue;
            }
            assert_true(n < 31);
            args[n++] = w;
        }
        args[n] = NULL;
        expect_output(args, JSTR(run, "output"), JSTR(run, "command"));
        free(cmd);
    }
    json_decref(j);
}

/* `sacrebleu REF -i HYP -m bleu --tokenize T [-lc] -w 2`, T every tokenizer, flores101 and
 * flores200 with the models the fixture names. */
static void test_tokenize_matches_sacrebleu(void **state)
{
    (void)state;
    json_t *j = load("tests/fixtures/metrics/tokenizers.json"),
           *scores = json_object_get(j, "scores"), *s;
    json_t *models = json_object_get(j, "flores_models");
    size_t k, n_bible = 0;
    json_array_foreach(scores, k, s)
    {
        if (strcmp(JSTR(s, "corpus"), "bible")) continue;
        const char *tok = JSTR(s, "tokenizer"), *model = JSTR(models, tok);
        const char *args[16] = {"--hyp", HYP, "--ref", REF, "-m", "bleu", "--tokenize", tok};
        size_t n = 8;
        if (model) {
            args[n++] = "--spm";
            args[n++] = model;
        }
        if (json_is_true(json_object_get(s, "lowercase"))) args[n++] = "-lc";
        args[n] = NULL;
        char want[512], what[128];
        snprintf(want, sizeof want, "%s\n", JSTR(s, "line"));
        snprintf(what, sizeof what, "--tokenize %s%s", tok,
                 json_is_true(json_object_get(s, "lowercase")) ? " -lc" : "");
        expect_output(args, want, what);
        n_bible++;
    }
    assert_int_equal(n_bible, 14); /* 7 tokenizers, with and without -lc */
    json_decref(j);
}

/* sacreBLEU prints one system's metrics (and the systems table's columns without a paired test)
 * in the sorted order of their names, whatever order -m gave, each once. */
static void test_metrics_print_in_sacrebleus_order(void **state)
{
    (void)state;
    json_t *j = load("tests/fixtures/metrics/ter.json");
    json_t *run = json_array_get(json_object_get(j, "cli"), 2);
    assert_non_null(strstr(JSTR(run, "command"), "-m bleu chrf ter --chrf-word-order 2"));
    expect_output((const char *[]){"--hyp", HYP, "--ref", REF, "-m", "ter", "chrf", "bleu", "ter",
                                   "--chrf-word-order", "2", NULL},
                  JSTR(run, "output"), "-m ter chrf bleu ter");
    json_decref(j);
    test_captured c = test_run_command(
        &cmd_score, (const char *[]){"-i", HYP, REF, "--ref", REF, "-m", "ter", "bleu", NULL});
    assert_int_equal(c.rc, 0);
    const char *bleu = strstr(c.out, "BLEU"), *ter = strstr(c.out, "TER");
    assert_true(bleu && ter && bleu < ter);
    test_captured_free(&c);
}

static void expect_refusal(const char *const *args, const char *needle)
{
    test_captured c = test_run_command(&cmd_score, args);
    assert_int_not_equal(c.rc, 0);
    if (!strstr(c.err, needle)) fail_msg("no '%s' in:\n%s", needle, c.err);
    test_captured_free(&c);
}

static void test_bad_options_are_refused(void **state)
{
    (void)state;
    expect_refusal((const char *[]){"--hyp", HYP, "--ref", REF, "--tokenize", "ko-mecab", NULL},
                   "unknown tokenizer 'ko-mecab'");
    expect_refusal((const char *[]){"--hyp", HYP, "--ref", REF, "--tokenize", "flores200", NULL},
                   "--tokenize flores200 needs --spm FILE");
    expect_refusal((const char *[]){"--hyp", HYP, "--ref", REF, "--spm", "x.model", NULL},
                   "--spm FILE goes with --tokenize flores101 or flores200");
    expect_refusal((const char *[]){"--hyp", HYP, "--ref", REF, "--tokenize", "flores101", "--spm",
                                    "no/such.model", NULL},
                   "no/such.model");
    expect_refusal((const char *[]){"--hyp", HYP, "--ref", REF, "--chrf-word-order", "x", NULL},
                   "--chrf-word-order takes a count");
    expect_refusal((const char *[]){"--hyp", HYP, "--ref", REF, "-m", "terr", NULL},
                   "unknown metric 'terr' (bleu, chrf, chrf++, ter, comet)");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ter_commands_match_sacrebleu),
        cmocka_unit_test(test_tokenize_matches_sacrebleu),
        cmocka_unit_test(test_metrics_print_in_sacrebleus_order),
        cmocka_unit_test(test_bad_options_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
