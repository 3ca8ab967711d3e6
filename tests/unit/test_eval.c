/* Evaluation around the metrics: length buckets, the translator interface and its Apertium
 * system, the progress bar, and `mtlab eval` end to end with its error messages. The Apertium
 * tests skip with the reason when apertium or its spa-eng mode is not installed. */
#include "test_util.h"
#include "cli/commands.h"
#include "common/eval_run.h"
#include "common/progress.h"
#include "mtlab/buckets.h"
#include "mtlab/comet.h"
#include "mtlab/error.h"
#include "mtlab/metrics.h"
#include "mtlab/significance.h"
#include "mtlab/translator.h"

#include <dirent.h>
#include <fcntl.h>
#include <jansson.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------------ buckets */

static void test_bucket_bounds(void **state)
{
    (void)state;
    const size_t len[] = {0, 1, 32, 33, 64, 65, 128, 129, 256, 257, 100000};
    const int bucket[] = {0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4};
    for (size_t i = 0; i < sizeof len / sizeof len[0]; i++)
        assert_int_equal(mt_length_bucket(len[i]), bucket[i]);
    assert_string_equal(mt_length_bucket_name(0), "1-32");
    assert_string_equal(mt_length_bucket_name(4), "257+");
    size_t n;
    assert_int_equal(mt_whitespace_tokens("  a  b\tc\xc2\xa0"
                                          "d\n",
                                          &n),
                     0); /* U+00A0 splits, as str.split() */
    assert_int_equal(n, 4);
    assert_int_equal(mt_whitespace_tokens("", &n), 0);
    assert_int_equal(n, 0);
    assert_int_equal(mt_whitespace_tokens("a \xff", &n), -1);
}

/* Lengths in whitespace tokens, or in pieces of a tokenizer; a bad text is named by index. */
static void test_source_lengths(void **state)
{
    (void)state;
    const char *const texts[] = {"Y dijo Dios:  Sea la luz", "", "uno"};
    size_t len[3], bad = 99;
    assert_int_equal(mt_source_lengths(len, texts, 3, NULL, &bad), 0);
    assert_int_equal(len[0], 6);
    assert_int_equal(len[1], 0);
    assert_int_equal(len[2], 1);
    mt_tokenizer *tok = mt_tokenizer_load("models/mamba-small/tokenizer.model");
    assert_non_null(tok);
    assert_int_equal(mt_source_lengths(len, texts, 3, tok, &bad), 0);
    for (int i = 0; i < 3; i++) {
        int *ids;
        size_t n;
        assert_int_equal(mt_tokenizer_encode(tok, texts[i], &ids, &n), 0);
        free(ids);
        assert_int_equal(len[i], n);
    }
    assert_true(len[0] > 6); /* pieces, not words */
    const char *const broken[] = {"bien", "mal \xff"};
    assert_int_equal(mt_source_lengths(len, broken, 2, tok, &bad), -1);
    assert_int_equal(bad, 1);
    assert_string_equal(mt_last_error(), "invalid UTF-8 at byte 4 (0xFF)");
    bad = 99;
    assert_int_equal(mt_source_lengths(len, broken, 2, NULL, &bad), -1);
    assert_int_equal(bad, 1);
    assert_string_equal(mt_last_error(), "invalid UTF-8 at byte 4 (0xFF)");
    mt_tokenizer_free(tok);
}

static void test_bucket_scores_sum_segment_stats(void **state)
{
    (void)state;
    const char *refs[] = {"the cat sat on the mat", "a dog ran far away from home",
                          "one two three four", "it is raining again today"};
    const char *hyps[] = {"the cat sat on the mat", "a dog ran away from the house",
                          "one two three five", "it rains today"};
    const size_t lengths[] = {6, 40, 7, 300};
    mt_bucket_score b[MT_LENGTH_BUCKETS];
    assert_int_equal(mt_bucket_scores(b, lengths, hyps, refs, 4), 0);
    assert_int_equal(b[0].segments, 2);
    assert_int_equal(b[0].src_tokens, 13);
    assert_int_equal(b[1].segments, 1);
    assert_int_equal(b[3].segments, 0);
    assert_true(b[3].bleu_score == 0.0 && b[3].chrf_score == 0.0);
    assert_int_equal(b[4].segments, 1);
    /* bucket 0 = corpus scores of segments 0 and 2 together (summed statistics) */
    const char *h0[] = {hyps[0], hyps[2]}, *r0[] = {refs[0], refs[2]};
    const char *const *const streams[1] = {r0};
    mt_bleu_opts bo = mt_bleu_defaults();
    mt_chrf_opts co = mt_chrf_defaults();
    mt_bleu_score bleu;
    double chrf;
    assert_int_equal(mt_bleu_corpus(&bleu, h0, 2, streams, 1, &bo), 0);
    assert_int_equal(mt_chrf_corpus(&chrf, h0, 2, streams, 1, &co), 0);
    assert_true(fabs(b[0].bleu_score - bleu.score) < 1e-9);
    assert_true(fabs(b[0].chrf_score - chrf) < 1e-9);
    assert_true(b[0].bleu_score > 50.0 && b[0].bleu_score < 100.0);
    const char *bad[] = {"ok", "\xc3"};
    assert_int_equal(mt_bucket_scores(b, lengths, bad, refs, 2), -1);
    assert_non_null(strstr(mt_last_error(), "segment 2"));
}

/* ------------------------------------------------------------------ progress bar */

static void test_progress_format(void **state)
{
    (void)state;
    cli_progress p = {0};
    snprintf(p.label, sizeof p.label, "eval x");
    p.total = 200;
    p.done = 50;
    p.started = 100.0;
    char line[256];
    cli_progress_format(line, sizeof line, &p, 110.0, 60); /* 5/s, 150 left -> 30 s */
    assert_string_equal(line, "eval x [====>               ]  25%  50/200  5.0/s  ETA 0:30");
    assert_int_equal(strlen(line), 59);
    cli_progress_format(line, sizeof line, &p, 110.0, 30); /* too narrow for a bar */
    assert_string_equal(line, "eval x  25%  50/200  5.0/s  ETA 0:30");
    p.total = 0;
    cli_progress_format(line, sizeof line, &p, 110.0, 80);
    assert_string_equal(line, "eval x  50  5.0/s");
}

/* ------------------------------------------------------------------ translators */

static int apertium_missing(void)
{
    char *modes = mt_apertium_modes();
    if (!modes) {
        print_message("skip: %s\n", mt_last_error());
        return 1;
    }
    int has = strstr(modes, "spa-eng") != NULL;
    if (!has) print_message("skip: apertium has no spa-eng mode (installed: %s)\n", modes);
    free(modes);
    return !has;
}

typedef struct {
    int lines_ended;
    char seen[3];
} piece_log;

static int log_piece(void *user, size_t line, const char *text, int end_of_line)
{
    (void)text;
    piece_log *log = user;
    assert_true(line < 3);
    if (end_of_line) {
        log->lines_ended++;
        log->seen[line] = 1;
    }
    return 0;
}

static void test_apertium_three_lines(void **state)
{
    (void)state;
    if (apertium_missing()) skip();
    mt_translator *t = mt_translator_open("apertium:spa-eng", NULL);
    assert_non_null(t);
    assert_string_equal(mt_translator_name(t), "apertium:spa-eng");
    assert_string_equal(mt_translator_kind(t), "apertium");
    const char *src[] = {"Hola mundo.", "", "Y dijo David: la casa es grande."};
    char *hyps[3];
    piece_log log = {0};
    assert_int_equal(mt_translator_translate(t, hyps, src, 3, log_piece, &log), 0);
    assert_string_equal(hyps[0], "Hello World.");
    assert_string_equal(hyps[1], "");
    assert_non_null(strstr(hyps[2], "David"));
    assert_non_null(strstr(hyps[2], "house"));
    assert_int_equal(log.lines_ended, 3);
    assert_true(log.seen[0] && log.seen[1] && log.seen[2]);
    const mt_translate_stats *st = mt_translator_last_stats(t);
    assert_int_equal(st->sentences, 3);
    assert_int_equal(st->src_tokens, 2 + 0 + 7);
    assert_true(st->hyp_tokens >= 5);
    assert_true(st->seconds > 0.0);
    assert_true(st->peak_bytes > 1024 * 1024); /* a real process ran */
    assert_non_null(st->memory_kind);
    for (int i = 0; i < 3; i++) free(hyps[i]);
    /* a source line with a line break would shift every later line */
    const char *broken[] = {"uno\ndos"};
    assert_int_equal(mt_translator_translate(t, hyps, broken, 1, NULL, NULL), -1);
    assert_non_null(strstr(mt_last_error(), "source line 1: contains a line break"));
    mt_translator_close(t);
}

static void test_translator_open_errors(void **state)
{
    (void)state;
    assert_null(mt_translator_open("no/such/thing", NULL));
    assert_non_null(strstr(mt_last_error(), "no/such/thing: not a system"));
    char dir[] = "/tmp/mtlab_test_eval_XXXXXX";
    assert_non_null(mkdtemp(dir));
    assert_null(mt_translator_open(dir, NULL));
    assert_non_null(strstr(mt_last_error(), "not a model bundle (no config.json)"));
    char config[128];
    snprintf(config, sizeof config, "%s/config.json", dir);
    FILE *f = fopen(config, "w");
    assert_non_null(f);
    fputs("{}\n", f);
    fclose(f);
    assert_null(mt_translator_open(dir, NULL));
    assert_non_null(strstr(mt_last_error(), dir)); /* the loader names the broken bundle */
    unlink(config);
    rmdir(dir);
    if (apertium_missing()) return;
    assert_null(mt_translator_open("apertium:es-en", NULL));
    assert_non_null(strstr(mt_last_error(), "apertium mode 'es-en' is not installed (installed: "));
    assert_non_null(strstr(mt_last_error(), "spa-eng"));
}

/* Pieces streamed by a bundle translator, per line. */
typedef struct {
    char text[2][512];
    int ended[2];
} pieces;

static int collect_piece(void *user, size_t line, const char *text, int end_of_line)
{
    pieces *p = user;
    assert_true(line < 2);
    assert_false(p->ended[line]);
    strncat(p->text[line], text, sizeof p->text[line] - strlen(p->text[line]) - 1);
    p->ended[line] = end_of_line;
    return 0;
}

static void test_bundle_translator_streams(void **state)
{
    (void)state;
    const char *dirs[] = {"tests/fixtures/models/mamba", "tests/fixtures/models/marian"};
    const char *src[] = {"a b c", "b a"};
    for (int d = 0; d < 2; d++) {
        for (int beam = 1; beam <= 3; beam += 2) {
            mt_translate_opts o = mt_translate_defaults();
            o.beam = beam;
            mt_translator *t = mt_translator_open(dirs[d], &o);
            if (!t) fail_msg("%s", mt_last_error());
            assert_string_equal(mt_translator_kind(t), "bundle");
            char *hyps[2];
            pieces p = {0};
            assert_int_equal(mt_translator_translate(t, hyps, src, 2, collect_piece, &p), 0);
            for (int i = 0; i < 2; i++) {
                assert_true(p.ended[i]);
                assert_string_equal(p.text[i], hyps[i]); /* pieces add up to the hypothesis */
                free(hyps[i]);
            }
            assert_true(mt_translator_last_stats(t)->peak_bytes > 0);
            mt_translator_close(t);
        }
    }
}

/* ------------------------------------------------------------------ mtlab eval */

typedef struct {
    char dir[64];
} workdir;

static void put(const workdir *w, const char *name, const char *text)
{
    char path[128];
    snprintf(path, sizeof path, "%s/%s", w->dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* Runs `mtlab eval ARGS...` (paths relative to the work dir are given whole by the caller)
 * with stdout and stderr captured into out and err. Returns the exit status. */
static int run_eval(const workdir *w, char *out, size_t out_len, char *err, size_t err_len,
                    char **args, int n)
{
    char out_path[128], err_path[128];
    snprintf(out_path, sizeof out_path, "%s/stdout", w->dir);
    snprintf(err_path, sizeof err_path, "%s/stderr", w->dir);
    fflush(stdout);
    fflush(stderr);
    int saved_out = dup(STDOUT_FILENO), saved_err = dup(STDERR_FILENO);
    int fo = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644),
        fe = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fo >= 0 && fe >= 0);
    dup2(fo, STDOUT_FILENO);
    dup2(fe, STDERR_FILENO);
    char *argv[32] = {"eval"};
    for (int i = 0; i < n; i++) argv[i + 1] = args[i];
    int rc = cmd_eval.run(n + 1, argv);
    fflush(stdout);
    fflush(stderr);
    dup2(saved_out, STDOUT_FILENO);
    dup2(saved_err, STDERR_FILENO);
    close(saved_out);
    close(saved_err);
    close(fo);
    close(fe);
    const char *paths[2] = {out_path, err_path};
    char *bufs[2] = {out, err};
    size_t lens[2] = {out_len, err_len};
    for (int k = 0; k < 2; k++) {
        FILE *f = fopen(paths[k], "r");
        assert_non_null(f);
        size_t got = fread(bufs[k], 1, lens[k] - 1, f);
        bufs[k][got] = '\0';
        fclose(f);
        unlink(paths[k]);
    }
    return rc;
}

static int setup_workdir(void **state)
{
    workdir *w = calloc(1, sizeof *w);
    snprintf(w->dir, sizeof w->dir, "/tmp/mtlab_test_eval_XXXXXX");
    if (!mkdtemp(w->dir)) return -1;
    put(w, "src.es", "Y dijo David á Saúl.\nJerusalén es grande.\nLa casa de Israel.\n");
    put(w, "ref.en", "And David said to Saul.\nJerusalem is great.\nThe house of Israel.\n");
    put(w, "short.en", "And David said to Saul.\nJerusalem is great.\n");
    put(w, "bad.en", "And David said to Saul.\nJerusal\xe9m is great.\nThe house of Israel.\n");
    put(w, "empty.en", "");
    put(w, "train.es", "Israel salió.\nDavid vino.\nIsrael fué.\n");
    put(w, "train.en", "Israel went out.\nDavid came.\nIsrael went.\n");
    *state = w;
    return 0;
}

static int teardown_workdir(void **state)
{
    workdir *w = *state;
    DIR *d = opendir(w->dir);
    if (!d) return -1;
    for (struct dirent *e; (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char path[512];
        snprintf(path, sizeof path, "%s/%s", w->dir, e->d_name);
        unlink(path);
    }
    closedir(d);
    int rc = rmdir(w->dir);
    free(w);
    return rc;
}

#define PATH(var, name) \
    char var[128];      \
    snprintf(var, sizeof var, "%s/%s", w->dir, name)

static void expect_eval_error(const workdir *w, char **args, int n, const char *message)
{
    char out[4096], err[4096];
    int rc = run_eval(w, out, sizeof out, err, sizeof err, args, n);
    if (rc == 0 || !strstr(err, message))
        fail_msg("rc %d, stderr '%s', expected '%s'", rc, err, message);
}

static void test_eval_input_errors(void **state)
{
    workdir *w = *state;
    PATH(src, "src.es");
    PATH(ref, "ref.en");
    PATH(shortref, "short.en");
    PATH(bad, "bad.en");
    PATH(empty, "empty.en");
    char msg[256];
    snprintf(msg, sizeof msg, "%s has 3 lines but %s has 2", src, shortref);
    expect_eval_error(w, (char *[]){"-m", "apertium:spa-eng", "--src", src, "--ref", shortref}, 6,
                      msg);
    snprintf(msg, sizeof msg, "%s:2: invalid UTF-8 at byte 7", bad);
    expect_eval_error(w, (char *[]){"-m", "apertium:spa-eng", "--src", src, "--ref", bad}, 6, msg);
    snprintf(msg, sizeof msg, "%s is empty", empty);
    expect_eval_error(w, (char *[]){"-m", "apertium:spa-eng", "--src", src, "--ref", empty}, 6,
                      msg);
    expect_eval_error(
        w, (char *[]){"-m", "apertium:spa-eng", "--src", src, "--ref", "/nonexistent/ref.en"}, 6,
        "/nonexistent/ref.en: No such file or directory");
    expect_eval_error(w, (char *[]){"-m", w->dir, "--src", src, "--ref", ref}, 6,
                      "not a model bundle");
    expect_eval_error(w, (char *[]){"--src", src, "--ref", ref}, 4, "usage: mtlab eval");
    expect_eval_error(w,
                      (char *[]){"-m", "apertium:spa-eng", "--src", src, "--ref", ref, "--stats",
                                 "x", "--train-src", src, "--train-ref", ref},
                      12, "either --stats or --train-src/--train-ref");
    expect_eval_error(
        w, (char *[]){"-m", "apertium:spa-eng", "--src", src, "--ref", ref, "--beam", "0"}, 8,
        "mtlab eval: --beam takes a whole number from 1 to 256, not '0'");
    if (apertium_missing()) return;
    expect_eval_error(w, (char *[]){"-m", "apertium:es-en", "--src", src, "--ref", ref}, 6,
                      "apertium mode 'es-en' is not installed (installed: ");
}

static void test_eval_apertium_table_and_json(void **state)
{
    workdir *w = *state;
    if (apertium_missing()) skip();
    PATH(src, "src.es");
    PATH(ref, "ref.en");
    PATH(tsrc, "train.es");
    PATH(tref, "train.en");
    PATH(json, "report.json");
    PATH(stats, "stats.tsv");
    char out[8192], err[4096];
    int rc =
        run_eval(w, out, sizeof out, err, sizeof err,
                 (char *[]){"-m", "apertium:spa-eng", "--src", src, "--ref", ref, "--train-src",
                            tsrc, "--train-ref", tref, "--save-stats", stats, "--json", json},
                 14);
    if (rc != 0) fail_msg("mtlab eval failed: %s", err);
    assert_non_null(strstr(out, "apertium:spa-eng"));
    assert_non_null(strstr(
        out,
        "BLEU:    nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:" MT_SACREBLEU_VERSION));
    assert_non_null(strstr(out, "NE recall frequent (0 ent, 0 occ)"));
    assert_non_null(strstr(out, "(3 pairs, 2 entities)"));

    json_error_t jerr;
    json_t *root = json_load_file(json, 0, &jerr);
    if (!root) fail_msg("%s: %s", json, jerr.text);
    assert_int_equal(json_integer_value(json_object_get(root, "segments")), 3);
    json_t *sys = json_array_get(json_object_get(root, "systems"), 0);
    assert_string_equal(json_string_value(json_object_get(sys, "name")), "apertium:spa-eng");
    double bleu = json_real_value(json_object_get(sys, "bleu"));
    assert_true(bleu > 0.0 && bleu <= 100.0);
    /* David (in 1 training pair: regular), Israel (2: regular); Jerusalem is Jerusalén in the
     * source, Saul is Saúl: not copyable. Apertium copies both names. */
    json_t *regular = json_object_get(json_object_get(sys, "ne_recall"), "regular");
    assert_int_equal(json_integer_value(json_object_get(regular, "entities")), 2);
    assert_true(json_real_value(json_object_get(regular, "recall")) == 1.0);
    json_t *b0 = json_array_get(json_object_get(sys, "length_buckets"), 0);
    assert_int_equal(json_integer_value(json_object_get(b0, "segments")), 3);
    json_t *cost = json_object_get(sys, "cost");
    assert_int_equal(json_integer_value(json_object_get(cost, "sentences")), 3);
    assert_true(json_integer_value(json_object_get(cost, "peak_bytes")) > 0);
    json_decref(root);

    /* the saved statistics give the same bins when read back with --stats */
    rc = run_eval(
        w, out, sizeof out, err, sizeof err,
        (char *[]){"-m", "apertium:spa-eng", "--src", src, "--ref", ref, "--stats", stats}, 8);
    if (rc != 0) fail_msg("mtlab eval --stats failed: %s", err);
    assert_non_null(strstr(out, "NE recall regular  (2 ent, 2 occ)"));
    /* no lexicon (Apertium is no bundle): the translated-aware rows are left out, and said so */
    assert_null(strstr(out, "NE +tr.   all"));
    assert_non_null(strstr(out, "NE +tr.: no entity lexicon"));

    /* with a lexicon, Saul (Saúl) and Jerusalem (Jerusalén, opening its sentence) join David
     * and Israel; the paper's rows stay as they were */
    PATH(lexicon, "lexicon.tsv");
    put(w, "lexicon.tsv",
        "# mtlab entity_lexicon 1\n# "
        "pairs=3\nSaúl\tSaul\t0.9500\t3\nJerusalén\tJerusalem\t0.9900\t3\n");
    rc = run_eval(w, out, sizeof out, err, sizeof err,
                  (char *[]){"-m", "apertium:spa-eng", "--src", src, "--ref", ref, "--stats", stats,
                             "--lexicon", lexicon, "--json", json},
                  12);
    if (rc != 0) fail_msg("mtlab eval --lexicon failed: %s", err);
    assert_non_null(strstr(out, "NE recall regular  (2 ent, 2 occ)"));
    assert_non_null(strstr(out, "NE +tr.   all      (4 ent, 4 occ)"));
    root = json_load_file(json, 0, &jerr);
    if (!root) fail_msg("%s: %s", json, jerr.text);
    sys = json_array_get(json_object_get(root, "systems"), 0);
    json_t *all = json_object_get(json_object_get(sys, "ne_recall_translated"), "all");
    assert_int_equal(json_integer_value(json_object_get(all, "entities")), 4);
    assert_true(json_integer_value(json_object_get(all, "hits")) >=
                2); /* David and Israel at least */
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(root, "entities"), "lexicon")), lexicon);
    json_decref(root);
}

/* The entity recogniser follows the target language of the first system (Apertium's mode here),
 * --tgt-lang or --data's manifest, never the reference's file name: "ref.txt" used to read as
 * generic. */
static void test_eval_target_language(void **state)
{
    workdir *w = *state;
    if (apertium_missing()) skip();
    PATH(src, "src.es");
    put(w, "ref.txt",
        "In the beginning God created the heavens and the earth.\nDavid said.\nIsrael went.\n");
    PATH(ref, "ref.txt");
    char out[8192], err[4096];
    int rc = run_eval(w, out, sizeof out, err, sizeof err,
                      (char *[]){"-m", "apertium:spa-eng", "--src", src, "--ref", ref}, 6);
    if (rc != 0) fail_msg("mtlab eval failed: %s", err);
    assert_non_null(strstr(out, "NE:    english recogniser"));
    rc = run_eval(
        w, out, sizeof out, err, sizeof err,
        (char *[]){"-m", "apertium:spa-eng", "--src", src, "--ref", ref, "--tgt-lang", "de"}, 8);
    if (rc != 0) fail_msg("mtlab eval failed: %s", err);
    assert_non_null(strstr(out, "NE:    generic recogniser"));
    put(w, "manifest.json",
        "{\"format\": \"mtlab-dataset 1\", \"src_lang\": \"es\", \"tgt_lang\": \"fr\"}");
    rc = run_eval(
        w, out, sizeof out, err, sizeof err,
        (char *[]){"-m", "apertium:spa-eng", "--src", src, "--ref", ref, "--data", w->dir}, 8);
    if (rc != 0) fail_msg("mtlab eval failed: %s", err);
    assert_non_null(strstr(out, "NE:    generic recogniser"));
    expect_eval_error(
        w, (char *[]){"-m", "apertium:spa-eng", "--src", src, "--ref", ref, "--tgt-lang", "x_y"}, 8,
        "target language: language 'x_y': not a BCP-47 tag");
}

/* Two systems: each is tested against the first on BLEU, chrF2 and chrF2++ with the paired
 * bootstrap, the same figures mt_sig_paired gives for their hypotheses; --paired ar and none. */
static void test_eval_paired_test(void **state)
{
    workdir *w = *state;
    PATH(src, "src.es");
    PATH(ref, "ref.en");
    put(w, "src.es", "a b c\nb a\nc c a b\na\nb b c a c\nc a\n");
    put(w, "ref.en", "a b c\nb a c\nc a b\na b\nb c a c\nc b a\n");
    const char *tests[] = {NULL, "ar", "none"};
    for (int t = 0; t < 3; t++) {
        eval_request req = {
            .systems = {"tests/fixtures/models/mamba", "tests/fixtures/models/marian"},
            .n_systems = 2,
            .src = src,
            .ref = ref,
            .beam = 1,
            .keep_hyps = 1,
            .paired = tests[t]};
        eval_outcome out;
        if (eval_run(&req, &out) != 0) fail_msg("%s", mt_last_error());
        const eval_report *r = &out.report;
        assert_int_equal(r->paired,
                         t == 2 ? 0 : 1 + (t == 1 ? MT_SIG_RANDOMIZATION : MT_SIG_BOOTSTRAP));
        assert_false(r->systems[0].sig[EVAL_BLEU].has_p);
        if (t == 2) {
            assert_false(r->systems[1].sig[EVAL_BLEU].has_p);
            eval_outcome_free(&out);
            continue;
        }
        /* recompute from the kept hypotheses */
        mt_bleu_opts bo = mt_bleu_defaults();
        mt_chrf_opts cpp = mt_chrfpp_defaults();
        char name[32];
        mt_sig_metric m[2] = {mt_sig_bleu_metric(&bo), mt_sig_chrf_metric(&cpp, name, sizeof name)};
        int which[2] = {EVAL_BLEU, EVAL_CHRFPP};
        for (int k = 0; k < 2; k++) {
            double *rows[2];
            for (int s = 0; s < 2; s++) {
                rows[s] = calloc(r->segments * m[k].n_stats, sizeof(double));
                for (size_t i = 0; i < r->segments; i++) {
                    const char *refs[1] = {out.ref.lines[i]};
                    if (k == 0) {
                        mt_bleu_stats b;
                        assert_int_equal(mt_bleu_segment_stats(&b, out.hyps[s][i], refs, 1, &bo),
                                         0);
                        mt_sig_bleu_row(rows[s] + i * m[k].n_stats, &b);
                    } else {
                        mt_chrf_stats c;
                        assert_int_equal(mt_chrf_segment_stats(&c, out.hyps[s][i], refs, 1, &cpp),
                                         0);
                        mt_sig_chrf_row(rows[s] + i * m[k].n_stats, &c);
                    }
                }
            }
            mt_sig_opts o = mt_sig_defaults(t == 1 ? MT_SIG_RANDOMIZATION : MT_SIG_BOOTSTRAP);
            mt_sig_result want[2];
            assert_int_equal(
                mt_sig_paired(want, (const double *const *)rows, 2, r->segments, &m[k], &o), 0);
            const mt_sig_result *got = &r->systems[1].sig[which[k]];
            assert_true(got->has_p);
            assert_true(got->p == want[1].p);
            assert_int_equal(got->has_ci, want[1].has_ci);
            if (got->has_ci) assert_true(got->mean == want[1].mean && got->ci == want[1].ci);
            free(rows[0]);
            free(rows[1]);
        }
        eval_outcome_free(&out);
    }
    char *bad[] = {"-m",       "tests/fixtures/models/mamba",
                   "-m",       "tests/fixtures/models/marian",
                   "--src",    src,
                   "--ref",    ref,
                   "--paired", "t"};
    expect_eval_error(w, bad, 10, "paired test 't': give bs");
}

/* --comet DIR: each system's COMET is the mean of its segments' scores (those mt_comet_score
 * gives for its kept hypotheses), tested against the first system as mtlab score's paired tests
 * do (x 100); a COMET row and its p row in the table, "comet" in the JSON; a model that cannot
 * be read stops eval before any system translates. */
#define COMET_MODEL "tests/fixtures/comet/model"
static void test_eval_comet(void **state)
{
    workdir *w = *state;
    PATH(src, "src.es");
    PATH(ref, "ref.en");
    eval_request req = {.systems = {"tests/fixtures/models/mamba", "tests/fixtures/models/marian"},
                        .n_systems = 2,
                        .src = src,
                        .ref = ref,
                        .beam = 1,
                        .keep_hyps = 1,
                        .comet = COMET_MODEL};
    eval_outcome out;
    if (eval_run(&req, &out) != 0) fail_msg("%s", mt_last_error());
    const eval_report *r = &out.report;
    assert_string_equal(r->comet_model, COMET_MODEL);
    mt_comet *m = mt_comet_open(COMET_MODEL, mt_backend_cpu());
    assert_non_null(m);
    size_t n = r->segments;
    float *seg = calloc(n, sizeof *seg);
    double *rows[2];
    for (int s = 0; s < 2; s++) {
        assert_int_equal(mt_comet_score(m, (const char *const *)out.src.lines,
                                        (const char *const *)out.hyps[s],
                                        (const char *const *)out.ref.lines, n, seg),
                         0);
        double sum = 0;
        rows[s] = calloc(n * MT_SIG_COMET_STATS, sizeof(double));
        for (size_t i = 0; i < n; i++) {
            sum += seg[i];
            mt_sig_comet_row(rows[s] + i * MT_SIG_COMET_STATS, seg[i]);
        }
        assert_true(r->systems[s].comet == sum / (double)n);
    }
    mt_sig_metric sm = mt_sig_comet_metric();
    mt_sig_opts o = mt_sig_defaults(MT_SIG_BOOTSTRAP);
    mt_sig_result want[2];
    assert_int_equal(mt_sig_paired(want, (const double *const *)rows, 2, n, &sm, &o), 0);
    const mt_sig_result *got = &r->systems[1].sig[EVAL_COMET];
    assert_true(got->has_p && got->p == want[1].p && got->mean == want[1].mean &&
                got->ci == want[1].ci);
    assert_false(r->systems[0].sig[EVAL_COMET].has_p);
    free(rows[0]);
    free(rows[1]);
    free(seg);
    mt_comet_free(m);
    eval_outcome_free(&out);

    /* the command: a COMET row of 4 decimals, its p row, and the JSON */
    static char text[65536], err[4096];
    PATH(json, "eval.json");
    char *args[] = {"-m",      "tests/fixtures/models/mamba",
                    "-m",      "tests/fixtures/models/marian",
                    "--src",   src,
                    "--ref",   ref,
                    "--beam",  "1",
                    "--comet", COMET_MODEL,
                    "--json",  json};
    int rc = run_eval(w, text, sizeof text, err, sizeof err, args, 14);
    if (rc != 0) fail_msg("exit %d: %s", rc, err);
    const char *row = strstr(text, "\nCOMET ");
    assert_non_null(row);
    assert_non_null(strstr(text, "\n  p vs first, COMET "));
    assert_non_null(strstr(text, "COMET:   model " COMET_MODEL));
    json_error_t jerr;
    json_t *j = json_load_file(json, 0, &jerr);
    assert_non_null(j);
    assert_string_equal(json_string_value(json_object_get(j, "comet_model")), COMET_MODEL);
    json_t *sys1 = json_array_get(json_object_get(j, "systems"), 1);
    assert_true(json_is_real(json_object_get(sys1, "comet")));
    json_t *sig = json_object_get(json_object_get(sys1, "significance"), "comet");
    assert_true(json_is_real(json_object_get(sig, "p_value")));
    char cell[32];
    snprintf(cell, sizeof cell, "%.4f", json_real_value(json_object_get(sys1, "comet")));
    assert_non_null(strstr(row, cell));
    json_decref(j);
    /* without --comet: no COMET row, "comet": null */
    char *plain[] = {
        "-m", "tests/fixtures/models/mamba", "--src", src, "--ref", ref, "--beam", "1", "--json",
        json};
    assert_int_equal(run_eval(w, text, sizeof text, err, sizeof err, plain, 10), 0);
    assert_null(strstr(text, "COMET"));
    j = json_load_file(json, 0, &jerr);
    assert_true(
        json_is_null(json_object_get(json_array_get(json_object_get(j, "systems"), 0), "comet")));
    json_decref(j);
    char *bad[] = {"-m",      "tests/fixtures/models/mamba", "--src", src, "--ref", ref,
                   "--comet", "/nonexistent/comet"};
    expect_eval_error(w, bad, 8, "/nonexistent/comet");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bucket_bounds),
        cmocka_unit_test(test_source_lengths),
        cmocka_unit_test(test_bucket_scores_sum_segment_stats),
        cmocka_unit_test(test_progress_format),
        cmocka_unit_test(test_apertium_three_lines),
        cmocka_unit_test(test_translator_open_errors),
        cmocka_unit_test(test_bundle_translator_streams),
        cmocka_unit_test_setup_teardown(test_eval_input_errors, setup_workdir, teardown_workdir),
        cmocka_unit_test_setup_teardown(test_eval_apertium_table_and_json, setup_workdir,
                                        teardown_workdir),
        cmocka_unit_test_setup_teardown(test_eval_target_language, setup_workdir, teardown_workdir),
        cmocka_unit_test_setup_teardown(test_eval_paired_test, setup_workdir, teardown_workdir),
        cmocka_unit_test_setup_teardown(test_eval_comet, setup_workdir, teardown_workdir),
    };
    return cmocka_run_group_tests_name("eval", tests, NULL, NULL);
}
