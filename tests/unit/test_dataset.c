/* Datasets (mtlab/dataset.h): the cleaning of a line, the import's readers, filters, splits and
 * manifest, the manifest's reader and the old-directory default, and `mtlab data import`'s
 * options. */
#include "test_util.h"
#include "cli/commands.h"
#include "data/sha256.h"
#include "mtlab/dataset.h"
#include "mtlab/backend.h"
#include "mtlab/error.h"
#include "mtlab/model.h"
#include "mtlab/tokenizer.h"

#include <jansson.h>
#include <unistd.h>

static void assert_clean(const char *in, const char *want, int want_flags)
{
    int flags = -1;
    char *got = mt_text_clean(in, strlen(in), &flags);
    if (!got) fail_msg("'%s': %s", in, mt_last_error());
    assert_string_equal(got, want);
    assert_int_equal(flags, want_flags);
    free(got);
}

static void test_clean(void **state)
{
    (void)state;
    assert_clean("Guten Tag.", "Guten Tag.", 0);
    assert_clean("  a \t b  ", "a b", MT_CLEAN_CONTROL); /* a tab is a control character */
    assert_clean("pu\xcc\x88nktlich", "p\xc3\xbcnktlich", MT_CLEAN_NFC); /* u + U+0308 -> ü */
    assert_clean("Bus\a ist\x7f voll", "Bus ist voll", MT_CLEAN_CONTROL);
    assert_clean("\xef\xbb\xbfHallo", "Hallo", MT_CLEAN_CONTROL); /* a byte order mark */
    assert_clean("a\xc2\xa0:\xe3\x80\x80"
                 "b",
                 "a : b", 0); /* Unicode spaces -> ' ' */
    assert_clean("\xc2\x85x", "x", MT_CLEAN_CONTROL); /* NEL, a C1 control */
    assert_clean("\xe2\x80\x8d", "\xe2\x80\x8d", 0); /* ZWJ (Cf) stays */
    assert_null(mt_text_clean("ab\xff", 3, NULL));
    assert_string_equal(mt_last_error(), "invalid UTF-8 at byte 3");
}

static void test_sha256(void **state)
{
    (void)state;
    sha256_ctx c;
    char hex[65];
    sha256_init(&c);
    sha256_hex(&c, hex);
    assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    sha256_init(&c);
    sha256_update(&c, "abc", 3);
    sha256_hex(&c, hex);
    assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    /* 56 bytes: the padding needs a second block; fed in two pieces across the block edge */
    const char *m = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    sha256_init(&c);
    sha256_update(&c, m, 30);
    sha256_update(&c, m + 30, strlen(m) - 30);
    sha256_hex(&c, hex);
    assert_string_equal(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

static void test_lang_check(void **state)
{
    (void)state;
    const char *good[] = {"de", "en", "gsw", "pt-BR", "zh-Hant", "sr-Latn-RS", "es-419"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        if (mt_lang_check(good[i]) < 0) fail_msg("%s: %s", good[i], mt_last_error());
    const char *bad[] = {"", "d", "de_DE", "de-", "-de", "d3", "englishlanguage", "de--x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(mt_lang_check(bad[i]), -1);
        assert_non_null(strstr(mt_last_error(), "not a BCP-47 tag"));
    }
}

typedef struct {
    char lines[8][256];
    size_t n;
} bad_lines;

static void on_bad(void *ud, const char *file, size_t line, const char *problem)
{
    bad_lines *b = ud;
    if (b->n < 8)
        snprintf(b->lines[b->n++], sizeof b->lines[0], "%s:%zu: %s", strrchr(file, '/') + 1, line,
                 problem);
}

static char *file_in(const char *dir, const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return test_read_file(path, NULL);
}

/* Two aligned files and a TSV, concatenated: every filter counted, bad lines reported by file
 * and line, the split drawn with the seed, the manifest naming all of it. */
static void test_import(void **state)
{
    (void)state;
    char tmp[256], path[6][512], out[600];
    assert_int_equal(test_make_tmpdir(tmp, sizeof tmp, "dataset"), 0);
    const char *names[] = {"a.de", "a.en", "b.tsv", "v.de", "v.en", "out"};
    for (int i = 0; i < 6; i++) snprintf(path[i], sizeof path[i], "%s/%s", tmp, names[i]);
    test_write_text(path[0],
                    "Eins.\nZwei.\n\nDrei.\nZwei.\nVier \xff.\nJa.\nF\xc3\xbcnf.\nSechs.\n");
    test_write_text(
        path[1],
        "One.\nTwo.\nx\nThree.\nTwo.\nFour.\nYes, of course, certainly, yes.\nFive.\nSix.\r\n");
    test_write_text(
        path[2],
        "1\tSieben.\tSeven.\nnur eins\n2\tAcht.\tEight.\n3\tNeun.\tNine.\n4\tSechs.\tSix.\n");
    test_write_text(path[3], "Sechs.\n");
    test_write_text(path[4], "Six.\n");
    mt_import_source src[2] = {{path[0], path[1], 0, 0}, {path[2], NULL, 2, 3}};
    bad_lines bad = {0};
    mt_import_opts o = {.sources = src,
                        .n_sources = 2,
                        .src_lang = "de",
                        .tgt_lang = "en",
                        .valid_files = {path[3], path[4]},
                        .test_n = 2,
                        .seed = 7,
                        .bad_line = on_bad,
                        .ud = &bad};
    mt_import_counts c;
    snprintf(out, sizeof out, "%s/ds", tmp);
    if (mt_dataset_import(&o, out, &c) < 0) fail_msg("%s", mt_last_error());
    assert_int_equal(c.read, 14);
    assert_int_equal(c.bad_line, 2);
    assert_int_equal(bad.n, 2);
    assert_string_equal(bad.lines[0], "a.de:6: invalid UTF-8 at byte 6");
    assert_string_equal(bad.lines[1], "b.tsv:2: 1 column, no column 3");
    assert_int_equal(c.empty, 1);
    assert_int_equal(c.ratio, 1);
    assert_int_equal(c.duplicate, 1);
    assert_int_equal(c.overlap, 2); /* Sechs./Six. of both sources is the given valid pair */
    assert_int_equal(c.kept, 7); /* Eins Zwei Drei Fünf Sieben Acht Neun */
    assert_int_equal(c.split[0], 5);
    assert_int_equal(c.split[1], 1);
    assert_int_equal(c.split[2], 2);

    char *train_de = file_in(out, "train.de"), *test_de = file_in(out, "test.de"),
         *keys = file_in(out, "train.keys");
    assert_non_null(train_de);
    assert_non_null(keys);
    char *valid = file_in(out, "valid.en");
    assert_string_equal(valid, "Six.\n");
    /* the same seed draws the same test pairs; train keeps the sources' order */
    mt_import_counts c2;
    char out2[620];
    snprintf(out2, sizeof out2, "%s/ds2", tmp);
    if (mt_dataset_import(&o, out2, &c2) < 0) fail_msg("%s", mt_last_error());
    char *test2 = file_in(out2, "test.de");
    assert_string_equal(test_de, test2);
    o.seed = 8;
    if (mt_dataset_import(&o, out2, &c2) < 0) fail_msg("%s", mt_last_error());
    free(test2);
    test2 = file_in(out2, "test.de");
    assert_string_not_equal(test_de, test2);
    free(test2);

    mt_dataset d;
    if (mt_dataset_open(&d, out) < 0) fail_msg("%s", mt_last_error());
    assert_string_equal(d.src_lang, "de");
    assert_string_equal(d.tgt_lang, "en");
    assert_int_equal(d.has_manifest, 1);
    char p[600];
    assert_int_equal(mt_dataset_path(&d, "valid", 1, p, sizeof p), 0);
    assert_string_equal(strrchr(p, '/'), "/valid.en");

    snprintf(p, sizeof p, "%s/manifest.json", out);
    json_error_t err;
    json_t *m = json_load_file(p, 0, &err);
    assert_non_null(m);
    json_t *f = json_object_get(m, "filters");
    assert_int_equal(json_integer_value(json_object_get(f, "read")), 14);
    assert_int_equal(json_integer_value(json_object_get(f, "bad_line")), 2);
    assert_int_equal(json_integer_value(json_object_get(f, "overlap")), 2);
    assert_int_equal(json_integer_value(json_object_get(f, "nfc_changed")), 0);
    json_t *sources = json_object_get(m, "sources");
    assert_int_equal(json_array_size(sources), 2);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(sources, 1), "lines")), 5);
    json_t *tr = json_object_get(json_object_get(m, "splits"), "train");
    assert_int_equal(json_integer_value(json_object_get(tr, "pairs")), (json_int_t)c.split[0]);
    json_t *facts = json_object_get(json_object_get(m, "files"), "valid.en");
    assert_string_equal(
        json_string_value(json_object_get(facts, "sha256")),
        "597faa7f210f571dc78fb670aefbe08d79cdb6de73d629ce047e1417c753a791" /* "Six.\n" */);
    json_decref(m);
    free(train_de);
    free(test_de);
    free(keys);
    free(valid);
    test_remove_tree(tmp);
}

/* Errors that name what is wrong: misaligned files, a bad line in a given test file, splits
 * that leave nothing to train on, equal languages. */
static void test_import_errors(void **state)
{
    (void)state;
    char tmp[256], a[512], b[512], out[600];
    assert_int_equal(test_make_tmpdir(tmp, sizeof tmp, "dataset"), 0);
    snprintf(a, sizeof a, "%s/x.de", tmp);
    snprintf(b, sizeof b, "%s/x.en", tmp);
    snprintf(out, sizeof out, "%s/ds", tmp);
    test_write_text(a, "Eins.\nZwei.\nDrei.\n");
    test_write_text(b, "One.\nTwo.\n");
    mt_import_source src = {a, b, 0, 0};
    mt_import_opts o = {.sources = &src, .n_sources = 1, .src_lang = "de", .tgt_lang = "en"};
    mt_import_counts c;
    assert_int_equal(mt_dataset_import(&o, out, &c), -1);
    assert_non_null(strstr(mt_last_error(), "x.de has 3 lines but"));
    assert_non_null(strstr(mt_last_error(), "x.en has 2: the two files must be line-aligned"));
    test_write_text(b, "One.\nTwo.\nThree.\n");
    o.tgt_lang = "de";
    assert_int_equal(mt_dataset_import(&o, out, &c), -1);
    assert_non_null(strstr(mt_last_error(), "languages must differ"));
    o.tgt_lang = "en_US";
    assert_int_equal(mt_dataset_import(&o, out, &c), -1);
    assert_non_null(strstr(mt_last_error(), "'en_US': not a BCP-47 tag"));
    o.tgt_lang = "en";
    o.valid_n = 2;
    o.test_n = 1;
    assert_int_equal(mt_dataset_import(&o, out, &c), -1);
    assert_non_null(strstr(mt_last_error(), "would leave no training pair of the 3 kept"));
    o.valid_n = o.test_n = 0;
    char ta[512], tb[512];
    snprintf(ta, sizeof ta, "%s/t.de", tmp);
    snprintf(tb, sizeof tb, "%s/t.en", tmp);
    test_write_text(ta, "Gut.\nSchlecht \xc3.\n");
    test_write_text(tb, "Good.\nBad.\n");
    o.test_files[0] = ta;
    o.test_files[1] = tb;
    assert_int_equal(mt_dataset_import(&o, out, &c), -1);
    assert_non_null(strstr(mt_last_error(), "line 2: a line of the given test files"));
    assert_non_null(strstr(mt_last_error(), "invalid UTF-8 at byte 10"));
    assert_int_equal(access(out, F_OK), -1); /* nothing was written */
    test_remove_tree(tmp);
}

/* A directory from before manifests (the Bible's data/bible) reads as es/en; a manifest with a
 * bad language is an error naming the key; a directory with neither says what to run. */
static void test_open(void **state)
{
    (void)state;
    char tmp[256], p[600];
    assert_int_equal(test_make_tmpdir(tmp, sizeof tmp, "dataset"), 0);
    mt_dataset d;
    assert_int_equal(mt_dataset_open(&d, tmp), -1);
    assert_non_null(strstr(mt_last_error(),
                           "not a dataset (no manifest.json; make one with `mtlab data import`"));
    snprintf(p, sizeof p, "%s/train.es", tmp);
    test_write_text(p, "Hola.\n");
    snprintf(p, sizeof p, "%s/train.en", tmp);
    test_write_text(p, "Hello.\n");
    if (mt_dataset_open(&d, tmp) < 0) fail_msg("%s", mt_last_error());
    assert_string_equal(d.src_lang, "es");
    assert_string_equal(d.tgt_lang, "en");
    assert_int_equal(d.has_manifest, 0);
    snprintf(p, sizeof p, "%s/manifest.json", tmp);
    test_write_text(p, "{\"format\": \"mtlab-dataset 1\", \"src_lang\": \"en\", \"tgt_lang\": 3}");
    assert_int_equal(mt_dataset_open(&d, tmp), -1);
    assert_non_null(
        strstr(mt_last_error(), "manifest.json: key 'tgt_lang' must be a language tag"));
    test_write_text(
        p, "{\"format\": \"mtlab-dataset 1\", \"src_lang\": \"en\", \"tgt_lang\": \"es\"}");
    if (mt_dataset_open(&d, tmp) < 0) fail_msg("%s", mt_last_error());
    assert_string_equal(d.src_lang, "en"); /* the reverse direction of the same files */
    assert_string_equal(d.tgt_lang, "es");
    test_remove_tree(tmp);
}

/* `mtlab data`: an unknown subcommand is named; import's options are checked by name. */
static void test_cli(void **state)
{
    (void)state;
    test_captured r = test_run_command(&cmd_data, (const char *const[]){"frob", NULL});
    assert_int_equal(r.rc, 2);
    assert_non_null(strstr(r.err, "unknown subcommand 'frob' (known: bible, import)"));
    test_captured_free(&r);
    r = test_run_command(&cmd_data, (const char *const[]){"import", "/tmp/x", "--src", "a", NULL});
    assert_int_equal(r.rc, 1);
    assert_non_null(strstr(r.err, "--src a has no --tgt to pair with"));
    test_captured_free(&r);
    r = test_run_command(&cmd_data, (const char *const[]){"import", "/tmp/x", "--tsv", "a",
                                                          "--columns", "2,2", NULL});
    assert_non_null(strstr(r.err, "--columns takes two different column numbers"));
    test_captured_free(&r);
    r = test_run_command(&cmd_data, (const char *const[]){"import", "/tmp/x", "--tsv", "a",
                                                          "--src-lang", "de", NULL});
    assert_non_null(strstr(r.err, "give the languages: --src-lang L --tgt-lang L"));
    test_captured_free(&r);
    r = test_run_command(
        &cmd_data, (const char *const[]){"import", "/tmp/x", "--tsv", "a", "--valid", "1.5", NULL});
    assert_non_null(
        strstr(r.err, "--valid takes a count of pairs or a fraction between 0 and 1, not '1.5'"));
    test_captured_free(&r);
    r = test_run_command(&cmd_data,
                         (const char *const[]){"import", "/tmp/x", "--tsv", "a", "--valid", "5",
                                               "--valid-files", "s", "t", NULL});
    assert_non_null(strstr(r.err, "give the valid split once"));
    test_captured_free(&r);
    r = test_run_command(
        &cmd_data, (const char *const[]){"import", "/tmp/x", "--tsv", "a", "--frob", "1", NULL});
    assert_non_null(strstr(r.err, "unknown option '--frob'"));
    test_captured_free(&r);
}

/* `mtlab tokenizer train --data DIR` on a de-en dataset: its languages from the manifest (it
 * looked for DIR/train.es before), DIR/spm.model by default, --separate one per language. */
static void test_tokenizer_train(void **state)
{
    (void)state;
    char tmp[256], dir[300];
    assert_int_equal(test_make_tmpdir(tmp, sizeof tmp, "dataset"), 0);
    snprintf(dir, sizeof dir, "%s/deen", tmp);
    test_captured r = test_run_command(
        &cmd_data, (const char *const[]){"import", dir, "--tsv", "tests/fixtures/de-en/pairs.tsv",
                                         "--src-lang", "de", "--tgt-lang", "en", "--valid", "40",
                                         "--test", "40", NULL});
    if (r.rc) fail_msg("%s", r.err);
    assert_non_null(strstr(r.out, "split           338 train / 40 valid / 40 test pairs"));
    test_captured_free(&r);
    r = test_run_command(&cmd_tokenizer, (const char *const[]){"train", "--data", dir, "--vocab",
                                                               "150", "--threads", "1", NULL});
    if (r.rc) fail_msg("%s", r.err);
    assert_non_null(strstr(r.out, "spm.model: 150 pieces (unigram, joint de+en"));
    assert_non_null(strstr(r.out, "train.de: "));
    test_captured_free(&r);
    r = test_run_command(
        &cmd_tokenizer, (const char *const[]){"train", "--data", dir, "--vocab", "100", "--threads",
                                              "1", "--separate", "--user-symbols", "<x>", NULL});
    if (r.rc) fail_msg("%s", r.err);
    assert_non_null(strstr(r.out, "spm.de.model: 100 pieces (unigram, de only"));
    assert_non_null(strstr(r.out, "spm.en.model: 100 pieces (unigram, en only"));
    test_captured_free(&r);
    char model[400];
    snprintf(model, sizeof model, "%s/spm.en.model", dir);
    mt_tokenizer *tok = mt_tokenizer_load(model);
    assert_non_null(tok);
    assert_true(mt_tokenizer_piece_to_id(tok, "<x>") > MT_UNK_ID); /* a user symbol is one piece */
    mt_tokenizer_free(tok);
    test_remove_tree(tmp);
}

/* A bundle's config.json records the direction the trainer gives its model (mtlab.src_lang,
 * mtlab.tgt_lang) and reads it back; a bundle without them (every one made before) reads as the
 * Bible's es -> en with langs_recorded 0; a bad tag is an error naming the key. */
static void test_bundle_langs(void **state)
{
    (void)state;
    char tmp[256], dir[300], path[400];
    assert_int_equal(test_make_tmpdir(tmp, sizeof tmp, "dataset"), 0);
    char spm[300];
    if (test_train_fixture_tokenizer(tmp, 100, 1) < 0) fail_msg("%s", mt_last_error());
    snprintf(spm, sizeof spm, "%s/spm.model", tmp);
    mt_model_config cfg;
    assert_int_equal(mt_model_preset(&cfg, "transformer-small"), 0);
    cfg.vocab_size = 100;
    cfg.d_model = 16;
    cfg.n_layers = cfg.n_encoder_layers = 1;
    cfg.ffn_dim = 32;
    cfg.n_heads = 2;
    for (int recorded = 0; recorded < 2; recorded++) {
        snprintf(cfg.src_lang, sizeof cfg.src_lang, "%s", recorded ? "de" : "");
        snprintf(cfg.tgt_lang, sizeof cfg.tgt_lang, "%s", recorded ? "pt-BR" : "");
        cfg.langs_recorded = recorded;
        mt_model *m = mt_model_create(&cfg, mt_backend_cpu(), 1);
        assert_non_null(m);
        snprintf(dir, sizeof dir, "%s/b%d", tmp, recorded);
        if (mt_model_save(m, dir, spm, MT_DT_F32) < 0) fail_msg("%s", mt_last_error());
        mt_model_free(m);
        m = mt_model_load(dir, mt_backend_cpu(), 0);
        if (!m) fail_msg("%s", mt_last_error());
        const mt_model_config *c = mt_model_get_config(m);
        assert_string_equal(c->src_lang, recorded ? "de" : "es");
        assert_string_equal(c->tgt_lang, recorded ? "pt-BR" : "en");
        assert_int_equal(c->langs_recorded, recorded);
        mt_model_free(m);
    }
    snprintf(path, sizeof path, "%s/config.json", dir);
    char *text = test_read_file(path, NULL);
    char *at = strstr(text, "\"pt-BR\"");
    assert_non_null(at);
    memcpy(at, "\"pt_BR\"", 7);
    test_write_text(path, text);
    free(text);
    assert_null(mt_model_load(dir, mt_backend_cpu(), 0));
    assert_non_null(strstr(mt_last_error(), "key 'mtlab.tgt_lang'"));
    test_remove_tree(tmp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_clean),         cmocka_unit_test(test_sha256),
        cmocka_unit_test(test_lang_check),    cmocka_unit_test(test_import),
        cmocka_unit_test(test_import_errors), cmocka_unit_test(test_open),
        cmocka_unit_test(test_cli),           cmocka_unit_test(test_tokenizer_train),
        cmocka_unit_test(test_bundle_langs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
