/* The sentencepiece wrapper: a small joint model is trained once per run (into a mkdtemp
 * directory) from tests/fixtures/tokenizer/corpus.{es,en}, then loaded, probed and abused. */
#include "test_util.h"
#include "mtlab/error.h"
#include "mtlab/tokenizer.h"
#include "tokenizer/corpus_reader.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <unistd.h>

#define FIXTURES "tests/fixtures/tokenizer/"
enum { TEST_VOCAB = 300 }; /* the fixture corpus supports at most ~390 pieces */

static const char *const CORPUS[] = {FIXTURES "corpus.es", FIXTURES "corpus.en"};

struct fixture {
    char dir[64]; /* mkdtemp directory, removed at the end */
    char model_path[128]; /* dir/spm.model */
    mt_tokenizer *tok;
};

static void path_in(const struct fixture *fx, const char *name, char *out, size_t cap)
{
    snprintf(out, cap, "%s/%s", fx->dir, name);
}

static mt_tokenizer_train_opts fixture_opts(const char *prefix)
{
    return (mt_tokenizer_train_opts){
        .inputs = CORPUS,
        .n_inputs = 2,
        .model_prefix = prefix,
        .vocab_size = TEST_VOCAB,
        .character_coverage = 1.0,
        .num_threads = 2,
        .seed = 7,
    };
}

static int setup(void **state)
{
    struct fixture *fx = calloc(1, sizeof *fx);
    snprintf(fx->dir, sizeof fx->dir, "/tmp/mtlab-tok-XXXXXX");
    if (!mkdtemp(fx->dir)) return -1;
    char prefix[128];
    path_in(fx, "spm", prefix, sizeof prefix);
    path_in(fx, "spm.model", fx->model_path, sizeof fx->model_path);
    mt_tokenizer_train_opts o = fixture_opts(prefix);
    if (mt_tokenizer_train(&o) != 0) {
        fprintf(stderr, "training failed: %s\n", mt_last_error());
        return -1;
    }
    fx->tok = mt_tokenizer_load(fx->model_path);
    if (!fx->tok) {
        fprintf(stderr, "load failed: %s\n", mt_last_error());
        return -1;
    }
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *fx = *state;
    mt_tokenizer_free(fx->tok);
    DIR *d = opendir(fx->dir);
    for (struct dirent *e; d && (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        char p[512];
        snprintf(p, sizeof p, "%s/%s", fx->dir, e->d_name);
        unlink(p);
    }
    if (d) closedir(d);
    rmdir(fx->dir);
    free(fx);
    return 0;
}

static void assert_error_contains(const char *needle)
{
    const char *msg = mt_last_error();
    if (!strstr(msg, needle)) fail_msg("error \"%s\" does not contain \"%s\"", msg, needle);
}

/* ---------------------------------------------------------------- training */

static void test_train_sets_reserved_ids(void **state)
{
    struct fixture *fx = *state;
    const char *expected[] = {"<pad>", "<eos>", "<sep>", "<bos>", "<unk>"};
    assert_int_equal(mt_tokenizer_vocab_size(fx->tok), TEST_VOCAB);
    for (int id = 0; id <= MT_UNK_ID; id++) {
        assert_string_equal(mt_tokenizer_id_to_piece(fx->tok, id), expected[id]);
        assert_int_equal(mt_tokenizer_piece_to_id(fx->tok, expected[id]), id);
    }
    char vocab_path[128];
    path_in(fx, "spm.vocab", vocab_path, sizeof vocab_path);
    size_t len;
    char *vocab = test_read_file(vocab_path, &len);
    assert_non_null(vocab);
    assert_true(strncmp(vocab, "<pad>\t0\n<eos>\t0\n<sep>\t0\n<bos>\t0\n<unk>\t0\n", 40) == 0);
    free(vocab);
}

static void test_train_is_deterministic_and_seeded(void **state)
{
    struct fixture *fx = *state;
    char prefix[128], model[128];
    path_in(fx, "det", prefix, sizeof prefix);
    path_in(fx, "det.model", model, sizeof model);
    mt_tokenizer_train_opts o = fixture_opts(prefix);
    o.max_sentences = 400; /* of 640 lines: the seed decides which */
    size_t len_a, len_b, len_c;

    assert_int_equal(mt_tokenizer_train(&o), 0);
    char *a = test_read_file(model, &len_a);
    assert_int_equal(mt_tokenizer_train(&o), 0);
    char *b = test_read_file(model, &len_b);
    o.seed = 8;
    assert_int_equal(mt_tokenizer_train(&o), 0);
    char *c = test_read_file(model, &len_c);

    assert_non_null(a);
    assert_true(len_a > 1000);
    assert_int_equal(len_a, len_b);
    assert_memory_equal(a, b, len_a);
    assert_true(len_a != len_c || memcmp(a, c, len_a) != 0);
    free(a);
    free(b);
    free(c);
}

/* sentencepiece logs every EM iteration to stderr unless told not to. */
static void test_train_is_quiet(void **state)
{
    struct fixture *fx = *state;
    char prefix[128], log_path[128];
    path_in(fx, "quiet", prefix, sizeof prefix);
    path_in(fx, "stderr.txt", log_path, sizeof log_path);
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    int log_fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(saved >= 0 && log_fd >= 0);
    dup2(log_fd, STDERR_FILENO);
    mt_tokenizer_train_opts o = fixture_opts(prefix);
    int rc = mt_tokenizer_train(&o);
    o.verbose = 1;
    path_in(fx, "loud", prefix, sizeof prefix);
    off_t quiet_size = lseek(log_fd, 0, SEEK_CUR);
    int rc_loud = mt_tokenizer_train(&o);
    off_t loud_size = lseek(log_fd, 0, SEEK_CUR);
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    close(log_fd);
    assert_int_equal(rc, 0);
    assert_int_equal(rc_loud, 0);
    assert_int_equal(quiet_size, 0);
    assert_true(loud_size > 1000);
}

static void test_train_errors_name_the_file(void **state)
{
    struct fixture *fx = *state;
    char prefix[128], bad_path[128], missing[128];
    path_in(fx, "err", prefix, sizeof prefix);
    path_in(fx, "bad.txt", bad_path, sizeof bad_path);
    path_in(fx, "missing.txt", missing, sizeof missing);
    mt_tokenizer_train_opts o = fixture_opts(prefix);

    const char *with_missing[] = {CORPUS[0], missing};
    o.inputs = with_missing;
    assert_int_equal(mt_tokenizer_train(&o), -1);
    assert_error_contains(missing);
    assert_error_contains("No such file");

    test_write_file(bad_path, "bien\r\nmal \xC3(\n", 13);
    const char *with_bad[] = {bad_path};
    o.inputs = with_bad;
    o.n_inputs = 1;
    assert_int_equal(mt_tokenizer_train(&o), -1);
    assert_error_contains(":2: invalid UTF-8 at byte 4");
    assert_error_contains(bad_path);

    o = fixture_opts(prefix);
    o.vocab_size = 5000; /* far more pieces than 640 short lines hold */
    assert_int_equal(mt_tokenizer_train(&o), -1);
    assert_error_contains("err.model");
    assert_error_contains("Vocabulary size too high");
    assert_null(strstr(mt_last_error(), ".cc(")); /* no library source locations */

    o.vocab_size = 3;
    assert_int_equal(mt_tokenizer_train(&o), -1);
    assert_error_contains("reserved ids");

    o = fixture_opts("/nonexistent-dir/spm");
    assert_int_equal(mt_tokenizer_train(&o), -1);
    assert_error_contains("/nonexistent-dir/spm.model: cannot write to /nonexistent-dir");
}

/* ---------------------------------------------------------------- the training text reader */

static void test_corpus_reader_samples_exactly_and_by_seed(void **state)
{
    (void)state;
    const char *es[] = {CORPUS[0]};
    corpus_reader *all = corpus_reader_open(es, 1, 1000, 1);
    assert_non_null(all);
    assert_int_equal(corpus_reader_total_lines(all), 320);
    assert_int_equal(corpus_reader_selected_lines(all), 320);
    const char *line;
    size_t len, n = 0;
    while (corpus_reader_next(all, &line, &len) == 1) {
        if (n == 0)
            assert_string_equal(line, "¡Cuidado con el escalón! El pingüino sigue en Cádiz.");
        assert_int_equal(strlen(line), len); /* newline stripped */
        n++;
    }
    assert_int_equal(n, 320);
    corpus_reader_close(all);

    static char picks[3][50][128]; /* zeroed, so whole rows compare */
    unsigned seeds[3] = {11, 11, 12};
    for (int run = 0; run < 3; run++) {
        corpus_reader *r = corpus_reader_open(CORPUS, 2, 50, seeds[run]);
        assert_non_null(r);
        assert_int_equal(corpus_reader_total_lines(r), 640);
        size_t got = 0;
        while (corpus_reader_next(r, &line, &len) == 1) {
            assert_true(got < 50);
            snprintf(picks[run][got++], 128, "%s", line);
        }
        assert_int_equal(got, 50);
        corpus_reader_close(r);
    }
    assert_memory_equal(picks[0], picks[1], sizeof picks[0]);
    assert_true(memcmp(picks[0], picks[2], sizeof picks[0]) != 0);
}

static void test_corpus_reader_rejects_bad_lines(void **state)
{
    struct fixture *fx = *state;
    char path[128];
    path_in(fx, "lines.txt", path, sizeof path);
    const char *one[] = {path};

    test_write_file(path, "uno\ndos\x00tres\n", 13);
    assert_null(corpus_reader_open(one, 1, 10, 0));
    assert_error_contains(":2: NUL byte at byte 3");

    size_t big = CORPUS_MAX_LINE_BYTES + 10;
    char *long_line = malloc(big);
    memset(long_line, 'a', big);
    test_write_file(path, long_line, big);
    free(long_line);
    assert_null(corpus_reader_open(one, 1, 10, 0));
    assert_error_contains(
        ":1: line longer than the 65536-byte limit (one sentence per line expected");

    test_write_file(path, "", 0);
    assert_null(corpus_reader_open(one, 1, 10, 0));
    assert_error_contains("no text");
}

/* ---------------------------------------------------------------- encode / decode */

static void assert_round_trip(const mt_tokenizer *tok, const char *text)
{
    int *ids;
    size_t n;
    if (mt_tokenizer_encode(tok, text, &ids, &n) != 0) fail_msg("encode: %s", mt_last_error());
    assert_true(n > 0);
    for (size_t i = 0; i < n; i++)
        if (ids[i] == MT_UNK_ID) fail_msg("\"%s\": token %zu is <unk>", text, i);
    char *back = mt_tokenizer_decode(tok, ids, n);
    assert_non_null(back);
    assert_string_equal(back, text);
    free(back);
    free(ids);
}

static void test_round_trip_spanish_and_english(void **state)
{
    struct fixture *fx = *state;
    /* None of these lines is in the corpus; every character is. */
    const char *sentences[] = {
        "¿Dónde está el pingüino de Begoña?",
        "¡Qué alegría! Ibáñez leyó 1.234 páginas en Logroño.",
        "“Aquí no hay nadie”, susurró la señora Núñez, y esperó 12,5 minutos.",
        "El músico respondió: ‘sí’. ¡Ánimo!",
        "Where is the penguin? “It is never too late”, said José in Cádiz.",
        "In 1909, the engineer counted 987 sheep at 7:45 on Wednesday.",
        "a",
    };
    for (size_t i = 0; i < sizeof sentences / sizeof *sentences; i++)
        assert_round_trip(fx->tok, sentences[i]);
}

static void test_pieces_look_like_sentencepiece(void **state)
{
    struct fixture *fx = *state;
    int *ids;
    size_t n;
    assert_int_equal(mt_tokenizer_encode(fx->tok, "El pingüino", &ids, &n), 0);
    assert_true(n >= 2);
    const char *first = mt_tokenizer_id_to_piece(fx->tok, ids[0]);
    assert_true(strncmp(first, "\xE2\x96\x81", 3) == 0); /* "▁" marks a word start */
    free(ids);
    for (int id = 0; id < TEST_VOCAB; id++)
        assert_int_equal(mt_tokenizer_piece_to_id(fx->tok, mt_tokenizer_id_to_piece(fx->tok, id)),
                         id);
    assert_int_equal(mt_tokenizer_piece_to_id(fx->tok, "no-such-piece"), MT_UNK_ID);
    assert_int_equal(mt_tokenizer_piece_to_id(fx->tok, NULL), MT_UNK_ID);

    assert_int_equal(mt_tokenizer_encode(fx->tok, "", &ids, &n), 0);
    assert_int_equal(n, 0);
    free(ids);
}

static void test_unknown_characters_map_to_unk(void **state)
{
    struct fixture *fx = *state;
    int *ids;
    size_t n;
    /* CJK, a snowman and U+10FFFF: valid UTF-8 never seen in training. */
    assert_int_equal(mt_tokenizer_encode(fx->tok, "el 漢 río ☃ \xF4\x8F\xBF\xBF", &ids, &n), 0);
    size_t unk = 0;
    for (size_t i = 0; i < n; i++) unk += ids[i] == MT_UNK_ID;
    assert_int_equal(unk, 3);
    char *back = mt_tokenizer_decode(fx->tok, ids, n);
    assert_non_null(back);
    assert_non_null(strstr(back, "el"));
    assert_non_null(strstr(back, "río"));
    free(back);
    free(ids);
}

static void test_invalid_utf8_is_rejected_with_offset(void **state)
{
    struct fixture *fx = *state;
    static const struct {
        const char *text;
        const char *where;
    } cases[] = {
        {"abc\xC3(", "byte 3 (0xC3)"}, /* lead byte without continuation */
        {"ok \xC0\xAF", "byte 3 (0xC0)"}, /* overlong '/' */
        {"\xED\xA0\x80", "byte 0 (0xED)"}, /* UTF-16 surrogate U+D800 */
        {"añ\xF4\x90\x80\x80", "byte 3 (0xF4)"}, /* U+110000, past Unicode */
        {"x\x80", "byte 1 (0x80)"}, /* stray continuation byte */
        {"truncado \xE2\x80", "byte 9 (0xE2)"}, /* cut off at the end */
        {"\xE0\x80\x80", "byte 0 (0xE0)"}, /* overlong NUL */
        {"\xFF", "byte 0 (0xFF)"},
    };
    static int poison;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int *ids = &poison;
        size_t n = 99;
        mt_clear_error();
        assert_int_equal(mt_tokenizer_encode(fx->tok, cases[i].text, &ids, &n), -1);
        assert_null(ids);
        assert_int_equal(n, 0);
        assert_error_contains("invalid UTF-8");
        assert_error_contains(cases[i].where);
    }
}

static void test_decode_skips_reserved_ids(void **state)
{
    struct fixture *fx = *state;
    const char *text = "¿Por qué José no vino?";
    int *ids;
    size_t n;
    assert_int_equal(mt_tokenizer_encode(fx->tok, text, &ids, &n), 0);
    int framed[64];
    size_t m = 0;
    framed[m++] = MT_BOS_ID;
    for (size_t i = 0; i < n; i++) framed[m++] = ids[i];
    framed[m++] = MT_SEP_ID;
    framed[m++] = MT_EOS_ID;
    framed[m++] = MT_PAD_ID;
    framed[m++] = MT_PAD_ID;
    char *back = mt_tokenizer_decode(fx->tok, framed, m);
    assert_non_null(back);
    assert_string_equal(back, text);
    free(back);
    free(ids);

    int only_reserved[] = {MT_PAD_ID, MT_EOS_ID, MT_SEP_ID, MT_BOS_ID};
    back = mt_tokenizer_decode(fx->tok, only_reserved, 4);
    assert_string_equal(back, "");
    free(back);
    back = mt_tokenizer_decode(fx->tok, NULL, 0);
    assert_string_equal(back, "");
    free(back);
}

static void test_out_of_range_ids_do_not_crash(void **state)
{
    struct fixture *fx = *state;
    const int bad[] = {-1, TEST_VOCAB, TEST_VOCAB + 1, INT_MAX, INT_MIN};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_null(mt_tokenizer_id_to_piece(fx->tok, bad[i]));
        int ids[] = {10, 11, bad[i]};
        mt_clear_error();
        assert_null(mt_tokenizer_decode(fx->tok, ids, 3));
        char needle[64];
        snprintf(needle, sizeof needle, "cannot decode id %d (position 2)", bad[i]);
        assert_error_contains(needle);
        assert_error_contains(fx->model_path);
    }
    assert_non_null(mt_tokenizer_id_to_piece(fx->tok, TEST_VOCAB - 1));
}

/* ---------------------------------------------------------------- loading */

static void test_load_missing_file(void **state)
{
    (void)state;
    assert_null(mt_tokenizer_load(FIXTURES "no-such.model"));
    assert_error_contains(FIXTURES "no-such.model: No such file or directory");
}

static void test_load_corrupt_files(void **state)
{
    struct fixture *fx = *state;
    size_t len;
    char *good = test_read_file(fx->model_path, &len);
    assert_non_null(good);
    char path[128];
    path_in(fx, "broken.model", path, sizeof path);

    struct {
        const void *data;
        size_t len;
        const char *says;
    } cases[] = {
        {"", 0, "empty"},
        {"hello, I am not a model\n", 24, "not a sentencepiece model"},
        {good, len / 2, "not a sentencepiece model"}, /* truncated */
        {good + 7, len - 7, "not a sentencepiece model"}, /* misaligned */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        test_write_file(path, cases[i].data, cases[i].len);
        mt_clear_error();
        assert_null(mt_tokenizer_load(path));
        assert_true(strncmp(mt_last_error(), path, strlen(path)) == 0);
        assert_error_contains(cases[i].says);
    }
    free(good);

    assert_null(mt_tokenizer_load(fx->dir)); /* a directory */
    assert_error_contains(fx->dir);
}

static void test_load_refuses_other_id_layouts(void **state)
{
    (void)state;
    assert_null(mt_tokenizer_load(FIXTURES "foreign_ids.model"));
    assert_error_contains(FIXTURES "foreign_ids.model: not an mtlab tokenizer: id 0 is '<unk>'");
    assert_null(mt_tokenizer_load(FIXTURES "sep_user_defined.model"));
    assert_error_contains("sep_user_defined.model: not an mtlab tokenizer: id 2 '<sep>' is not "
                          "marked as a control symbol");
}

static void test_load_bytes_matches_load(void **state)
{
    struct fixture *fx = *state;
    size_t len;
    char *bytes = test_read_file(fx->model_path, &len);
    mt_tokenizer *tok = mt_tokenizer_load_bytes(bytes, len, "bundle/tokenizer.model");
    free(bytes); /* the tokenizer keeps its own copy */
    assert_non_null(tok);
    assert_int_equal(mt_tokenizer_vocab_size(tok), TEST_VOCAB);

    const char *text = "Anoche, la profesora Muñoz ganó 45 euros en Málaga.";
    int *a, *b;
    size_t na, nb;
    assert_int_equal(mt_tokenizer_encode(fx->tok, text, &a, &na), 0);
    assert_int_equal(mt_tokenizer_encode(tok, text, &b, &nb), 0);
    assert_int_equal(na, nb);
    assert_memory_equal(a, b, na * sizeof *a);
    free(a);
    free(b);
    mt_tokenizer_free(tok);

    assert_null(mt_tokenizer_load_bytes("\x0a\x05garbage", 9, "bundle/tokenizer.model"));
    assert_error_contains("bundle/tokenizer.model: not a sentencepiece model");

    /* a piece starting with a NUL byte: sentencepiece's trie builder throws from inside the
     * load (found by tests/fuzz/fuzz_tokenizer.c); refused like any bad model, and nothing
     * leaks (the san build's LeakSanitizer checks) */
    static const unsigned char nul_piece[] = {
        0x0a, 0x0e, 0x0a, 0x05, 0x3c, 0x75, 0x6e, 0x6b, 0x3e, 0x15, 0x00, 0x00, 0x00, 0x00, 0x18,
        0x02, 0x0a, 0x0c, 0x0a, 0x03, 0x00, 0x38, 0x81, 0x15, 0xa2, 0x95, 0x32, 0x00, 0x32, 0x00};
    assert_null(mt_tokenizer_load_bytes(nul_piece, sizeof nul_piece, "bundle/tokenizer.model"));
    assert_error_contains("bundle/tokenizer.model: not a sentencepiece model (");
    /* a reserved id holding "<" and newlines (found by fuzz_tokenizer): the message quotes the
     * piece on one line, its control bytes escaped */
    static const unsigned char newline_piece[] = {
        0x0a, 0x0e, 0x0a, 0x05, 0x3c, 0x70, 0x61, 0x64, 0x3e, 0x15, 0x00, 0x00, 0x00, 0x00,
        0x18, 0x03, 0x0a, 0x0e, 0x0a, 0x05, 0x3c, 0x65, 0x6f, 0x73, 0x3e, 0x15, 0x00, 0x00,
        0x00, 0x00, 0x18, 0x03, 0x0a, 0x0e, 0x0a, 0x05, 0x3c, 0x73, 0x65, 0x70, 0x3e, 0x15,
        0x00, 0x00, 0x00, 0x00, 0x18, 0x03, 0x0a, 0x0e, 0x0a, 0x05, 0x3c, 0x62, 0x6f, 0x73,
        0x3e, 0x15, 0x00, 0x00, 0x00, 0x00, 0x18, 0x03, 0x0a, 0x0e, 0x0a, 0x05, 0x3c, 0x0a,
        0x0a, 0x0a, 0x0a, 0x15, 0x00, 0x00, 0x00, 0x00, 0x18, 0x02, 0x0a, 0x0d, 0x0a, 0x06,
        0xe2, 0x96, 0x81, 0x61, 0x75, 0x74, 0x75, 0x6d, 0x6e, 0x2c, 0x15, 0x20, 0xb0, 0xad,
        0x79, 0x12, 0x00, 0x18, 0x01, 0x20, 0x01, 0x32, 0x00};
    assert_null(
        mt_tokenizer_load_bytes(newline_piece, sizeof newline_piece, "bundle/tokenizer.model"));
    assert_error_contains("id 4 is '<\\x0a\\x0a\\x0a\\x0a', expected the reserved piece '<unk>'");
    assert_null(strchr(mt_last_error(), '\n'));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_train_sets_reserved_ids),
        cmocka_unit_test(test_train_is_deterministic_and_seeded),
        cmocka_unit_test(test_train_is_quiet),
        cmocka_unit_test(test_train_errors_name_the_file),
        cmocka_unit_test(test_corpus_reader_samples_exactly_and_by_seed),
        cmocka_unit_test(test_corpus_reader_rejects_bad_lines),
        cmocka_unit_test(test_round_trip_spanish_and_english),
        cmocka_unit_test(test_pieces_look_like_sentencepiece),
        cmocka_unit_test(test_unknown_characters_map_to_unk),
        cmocka_unit_test(test_invalid_utf8_is_rejected_with_offset),
        cmocka_unit_test(test_decode_skips_reserved_ids),
        cmocka_unit_test(test_out_of_range_ids_do_not_crash),
        cmocka_unit_test(test_load_missing_file),
        cmocka_unit_test(test_load_corrupt_files),
        cmocka_unit_test(test_load_refuses_other_id_layouts),
        cmocka_unit_test(test_load_bytes_matches_load),
    };
    return cmocka_run_group_tests_name("tokenizer", tests, setup, teardown);
}
