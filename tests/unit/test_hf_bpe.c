/* Byte-level BPE from tokenizer.json (engine/tokenizer/hf_bpe*.c) against PyPI's `tokenizers`:
 * tests/fixtures/hf_tokenizer/make_fixtures.py trained three tokenizers (GPT-NeoX's layout,
 * GPT-2's, and NFKC + Split + ignore_merges) and wrote the ids `tokenizers` gives 10,700 lines
 * (Bible verses in Spanish and English, then emoji, combining marks, runs of white space,
 * digits, CJK, added tokens inside text); every id must be the same here. Then round trips,
 * look-ups, and the refusals: every unsupported part and every disagreement with the
 * vocabulary is an error naming the file and the key. */
#include "test_util.h"
#include "mtlab/error.h"
#include "mtlab/tokenizer.h"
#include "tokenizer/hf_bpe.h"

#include <utf8proc.h>

#define FIXTURES "tests/fixtures/hf_tokenizer/"

/* The lines of a fixture file, NUL-terminated in place; with unescape, \\ \n \r \t undone. */
typedef struct {
    char *buf;
    char **line;
    size_t n;
} lines;

static lines read_lines(const char *path, int unescape)
{
    lines l = {0};
    size_t len;
    l.buf = test_read_file(path, &len);
    if (!l.buf) fail_msg("cannot read %s", path);
    size_t cap = 0;
    for (char *p = l.buf; p < l.buf + len;) {
        char *nl = memchr(p, '\n', (size_t)(l.buf + len - p));
        if (!nl) fail_msg("%s: last line without a newline", path);
        *nl = '\0';
        if (l.n == cap) l.line = realloc(l.line, (cap = cap ? 2 * cap : 1024) * sizeof *l.line);
        l.line[l.n++] = p;
        if (unescape) {
            char *o = p;
            for (char *s = p; *s; s++) {
                if (*s != '\\') {
                    *o++ = *s;
                    continue;
                }
                s++;
                *o++ = *s == 'n' ? '\n' : *s == 'r' ? '\r' : *s == 't' ? '\t' : *s;
            }
            *o = '\0';
        }
        p = nl + 1;
    }
    return l;
}

static void free_lines(lines *l)
{
    free(l->buf);
    free(l->line);
}

static mt_tokenizer *load(const char *name)
{
    char path[128];
    snprintf(path, sizeof path, FIXTURES "%s.json", name);
    mt_tokenizer *tok = mt_tokenizer_load(path);
    if (!tok) fail_msg("%s", mt_last_error());
    return tok;
}

/* The hf_bpe behind an mt_tokenizer, for decode with the special tokens kept. */
static hf_bpe *load_bpe(const char *name)
{
    char path[128];
    snprintf(path, sizeof path, FIXTURES "%s.json", name);
    size_t len;
    char *json = test_read_file(path, &len);
    assert_non_null(json);
    hf_bpe *t = hf_bpe_load_bytes(json, len, path);
    free(json);
    if (!t) fail_msg("%s", mt_last_error());
    return t;
}

/* Every line's ids equal the ones `tokenizers` wrote (NAME.ids covers the last lines). */
static size_t check_ids(const char *name)
{
    lines text = read_lines(FIXTURES "lines.txt", 1);
    char path[128];
    snprintf(path, sizeof path, FIXTURES "%s.ids", name);
    lines want = read_lines(path, 0);
    assert_true(want.n <= text.n);
    mt_tokenizer *tok = load(name);
    size_t first = text.n - want.n, mismatches = 0;
    for (size_t i = 0; i < want.n; i++) {
        const char *line = text.line[first + i];
        int *ids;
        size_t n;
        if (mt_tokenizer_encode(tok, line, &ids, &n) != 0)
            fail_msg("line %zu: %s", first + i + 1, mt_last_error());
        char got[65536];
        size_t o = 0;
        for (size_t k = 0; k < n && o < sizeof got - 16; k++)
            o += (size_t)snprintf(got + o, sizeof got - o, k ? " %d" : "%d", ids[k]);
        got[o] = '\0';
        if (strcmp(got, want.line[i]) != 0 && mismatches++ < 5)
            print_error("%s line %zu \"%s\":\n  mtlab:      %s\n  tokenizers: %s\n", name,
                        first + i + 1, line, got, want.line[i]);
        free(ids);
    }
    mt_tokenizer_free(tok);
    free_lines(&text);
    free_lines(&want);
    assert_int_equal(mismatches, 0);
    return want.n;
}

static void test_neox_ids_match_tokenizers(void **state)
{
    (void)state;
    assert_true(check_ids("neox") >= 10000);
}

static void test_gpt2_ids_match_tokenizers(void **state)
{
    (void)state;
    assert_true(check_ids("gpt2") >= 3000);
}

static void test_split_ids_match_tokenizers(void **state)
{
    (void)state;
    assert_true(check_ids("split") >= 3000);
}

/* decode(ids, skip_special_tokens=False) of the hard cases, as `tokenizers` wrote it. */
static void check_decode(const char *name)
{
    lines text = read_lines(FIXTURES "lines.txt", 1);
    char path[128];
    snprintf(path, sizeof path, FIXTURES "%s.decoded", name);
    lines want = read_lines(path, 1);
    hf_bpe *t = load_bpe(name);
    size_t first = text.n - want.n, mismatches = 0;
    for (size_t i = 0; i < want.n; i++) {
        int *ids;
        size_t n;
        const char *line = text.line[first + i];
        assert_int_equal(hf_bpe_encode(t, line, strlen(line), &ids, &n), 0);
        char *back = hf_bpe_decode(t, ids, n, 0);
        assert_non_null(back);
        if (strcmp(back, want.line[i]) != 0 && mismatches++ < 5)
            print_error("%s line %zu: decoded \"%s\", tokenizers \"%s\"\n", name, first + i + 1,
                        back, want.line[i]);
        free(back);
        free(ids);
    }
    hf_bpe_free(t);
    free_lines(&text);
    free_lines(&want);
    assert_int_equal(mismatches, 0);
}

static void test_decode_matches_tokenizers(void **state)
{
    (void)state;
    check_decode("neox");
    check_decode("gpt2");
    check_decode("split");
}

/* decode(encode(x)) == x: for GPT-2's layout on every line, for NeoX's (NFC) on every line
 * that is NFC already. Special tokens are kept here; mt_tokenizer_decode leaves them out. */
static void test_round_trip(void **state)
{
    (void)state;
    lines text = read_lines(FIXTURES "lines.txt", 1);
    static const char *const NAMES[] = {"gpt2", "neox"};
    for (int k = 0; k < 2; k++) {
        hf_bpe *t = load_bpe(NAMES[k]);
        size_t checked = 0;
        for (size_t i = 0; i < text.n; i++) {
            const char *x = text.line[i];
            if (k == 1) {
                char *nfc = (char *)utf8proc_NFC((const utf8proc_uint8_t *)x);
                int same = nfc && strcmp(nfc, x) == 0;
                free(nfc);
                if (!same) continue;
            }
            int *ids;
            size_t n;
            assert_int_equal(hf_bpe_encode(t, x, strlen(x), &ids, &n), 0);
            char *back = hf_bpe_decode(t, ids, n, 0);
            if (strcmp(back, x) != 0)
                fail_msg("%s line %zu: \"%s\" came back as \"%s\"", NAMES[k], i + 1, x, back);
            free(back);
            free(ids);
            checked++;
        }
        assert_true(checked >= (k == 0 ? text.n : 10000));
        hf_bpe_free(t);
    }
    free_lines(&text);
}

/* mt_tokenizer_decode leaves the special tokens out, as `tokenizers` does by default; the
 * normalized, non-special added tokens (runs of spaces) stay. */
static void test_decode_skips_special_tokens(void **state)
{
    (void)state;
    mt_tokenizer *tok = load("neox");
    int *ids;
    size_t n;
    const char *text = "God<|endoftext|>     God<|padding|>";
    assert_int_equal(mt_tokenizer_encode(tok, text, &ids, &n), 0);
    assert_int_equal(ids[1], mt_tokenizer_piece_to_id(tok, "<|endoftext|>"));
    assert_int_equal(ids[2], mt_tokenizer_piece_to_id(tok, "     ")); /* an added token */
    assert_int_equal(ids[n - 1], mt_tokenizer_piece_to_id(tok, "<|padding|>"));
    char *back = mt_tokenizer_decode(tok, ids, n);
    assert_string_equal(back, "God     God");
    free(back);
    free(ids);
    mt_tokenizer_free(tok);
}

static void test_lookups(void **state)
{
    (void)state;
    mt_tokenizer *tok = load("neox");
    int V = mt_tokenizer_vocab_size(tok);
    assert_int_equal(V, 3000 + 23); /* the trained vocabulary and 23 runs of spaces */
    for (int id = 0; id < V; id++) {
        const char *piece = mt_tokenizer_id_to_piece(tok, id);
        assert_non_null(piece);
        assert_int_equal(mt_tokenizer_piece_to_id(tok, piece), id);
    }
    assert_string_equal(mt_tokenizer_id_to_piece(tok, 0), "<|endoftext|>");
    assert_null(mt_tokenizer_id_to_piece(tok, -1));
    assert_null(mt_tokenizer_id_to_piece(tok, V));
    assert_int_equal(mt_tokenizer_piece_to_id(tok, "no-such-piece"), -1);
    assert_int_equal(mt_tokenizer_piece_to_id(tok, NULL), -1);
    assert_true(mt_tokenizer_piece_to_id(tok, "ĠGod") > 0); /* byte-level spelling */
    int bad[2] = {5, V};
    assert_null(mt_tokenizer_decode(tok, bad, 2));
    assert_non_null(strstr(mt_last_error(), "cannot decode id 3023 (position 1)"));
    mt_tokenizer_free(tok);
}

/* \s in the pre-tokenizer's expression is Unicode's White_Space, as in onig: PCRE2's \s also
 * takes U+180E (MONGOLIAN VOWEL SEPARATOR), which would split " \u180e" from "x" differently
 * (`tokenizers` gives [7, 0] here: " \u180e" is one word). */
static void test_white_space_is_onig_white_space(void **state)
{
    (void)state;
    static const char JSON[] =
        "{\"model\":{\"type\":\"BPE\",\"vocab\":{\"x\":0,\"\u0120\":1,\"\u00e1\":2,\"\u0142\":3,"
        "\"\u0130\":4,\"\u0120\u00e1\":5,\"\u0120\u00e1\u0142\":6,\"\u0120\u00e1\u0142\u0130\":7},"
        "\"merges\":[\"\u0120 \u00e1\",\"\u0120\u00e1 \u0142\",\"\u0120\u00e1\u0142 \u0130\"]},"
        "\"pre_tokenizer\":{\"type\":\"ByteLevel\",\"add_prefix_space\":false},"
        "\"decoder\":{\"type\":\"ByteLevel\"}}";
    mt_tokenizer *tok = mt_tokenizer_load_bytes(JSON, strlen(JSON), "ws.json");
    if (!tok) fail_msg("%s", mt_last_error());
    int *ids;
    size_t n;
    assert_int_equal(mt_tokenizer_encode(tok, " \xe1\xa0\x8ex", &ids, &n), 0);
    assert_int_equal(n, 2);
    assert_int_equal(ids[0], 7);
    assert_int_equal(ids[1], 0);
    free(ids);
    mt_tokenizer_free(tok);
}

/* ---------------------------------------------------------------- refusals */

/* A small valid tokenizer.json with one part replaced: "%s" marks where. */
static const char BASE[] = "{\"added_tokens\":[%s],\n"
                           " \"normalizer\":%s,\n"
                           " \"pre_tokenizer\":%s,\n"
                           " \"post_processor\":%s,\n"
                           " \"decoder\":%s,\n"
                           " \"model\":{\"type\":\"%s\",\"dropout\":%s,\"unk_token\":%s,\n"
                           "   \"vocab\":{%s},\n"
                           "   \"merges\":[%s]}}";

typedef struct {
    const char *added, *normalizer, *pre, *post, *decoder, *type, *dropout, *unk, *vocab, *merges;
} parts;

static const parts GOOD = {
    "{\"id\":3,\"content\":\"<|endoftext|>\",\"special\":true,\"normalized\":false}",
    "{\"type\":\"NFC\"}",
    "{\"type\":\"ByteLevel\",\"add_prefix_space\":false}",
    "{\"type\":\"TemplateProcessing\",\"special_tokens\":{\"<|endoftext|>\":{\"id\":\"<|endoftext|>"
    "\","
    "\"ids\":[3],\"tokens\":[\"<|endoftext|>\"]}}}",
    "{\"type\":\"ByteLevel\"}",
    "BPE",
    "null",
    "null",
    "\"a\":0,\"b\":1,\"ab\":2,\"<|endoftext|>\":3",
    "\"a b\"",
};

static char *render(parts p)
{
    size_t cap = 4096;
    char *s = malloc(cap);
    snprintf(s, cap, BASE, p.added, p.normalizer, p.pre, p.post, p.decoder, p.type, p.dropout,
             p.unk, p.vocab, p.merges);
    return s;
}

static void expect_refusal(const char *json, const char *expected)
{
    char dir[64], path[128];
    assert_int_equal(test_make_tmpdir(dir, sizeof dir, "hfbpe"), 0);
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    test_write_text(path, json);
    mt_clear_error();
    mt_tokenizer *tok = mt_tokenizer_load(path);
    if (tok) fail_msg("accepted, expected \"%s\"", expected);
    const char *err = mt_last_error();
    if (strncmp(err, path, strlen(path)) != 0 || !strstr(err, expected))
        fail_msg("expected \"%s: ...%s...\", got \"%s\"", path, expected, err);
    test_remove_tree(dir);
}

static void test_small_file_loads(void **state)
{
    (void)state;
    char *json = render(GOOD);
    mt_tokenizer *tok = mt_tokenizer_load_bytes(json, strlen(json), "small.json");
    if (!tok) fail_msg("%s", mt_last_error());
    int *ids;
    size_t n;
    assert_int_equal(mt_tokenizer_encode(tok, "ab<|endoftext|>ba", &ids, &n), 0);
    assert_int_equal(n, 4);
    assert_int_equal(ids[0], 2);
    assert_int_equal(ids[1], 3);
    assert_int_equal(ids[2], 1);
    assert_int_equal(ids[3], 0);
    free(ids);
    mt_tokenizer_free(tok);
    free(json);
}

static void test_refusals_name_file_and_key(void **state)
{
    (void)state;
    struct {
        parts p;
        const char *expected;
    } cases[20];
    size_t n = 0;
#define CASE(field, value, msg)    \
    do {                           \
        cases[n].p = GOOD;         \
        cases[n].p.field = value;  \
        cases[n++].expected = msg; \
    } while (0)
    CASE(type, "WordPiece", "model.type 'WordPiece' is not supported");
    CASE(dropout, "0.1", "model.dropout: BPE dropout is not supported");
    CASE(unk, "\"<unk>\"", "model.unk_token: \"<unk>\" is not in model.vocab");
    CASE(normalizer, "{\"type\":\"Lowercase\"}", "normalizer.type 'Lowercase' is not supported");
    CASE(pre, "{\"type\":\"Whitespace\"}", "pre_tokenizer.type 'Whitespace' is not supported");
    CASE(pre,
         "{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"ByteLevel\"},{\"type\":\"Digits\"}]"
         "}",
         "pre_tokenizer.pretokenizers[1].type 'Digits' is not supported");
    CASE(pre, "{\"type\":\"Split\",\"pattern\":{\"Regex\":\"(a\"},\"behavior\":\"Isolated\"}",
         "pre_tokenizer.pattern.Regex: the regular expression does not compile");
    CASE(pre, "{\"type\":\"Split\",\"pattern\":{\"String\":\" \"},\"behavior\":\"Contiguous\"}",
         "pre_tokenizer.behavior 'Contiguous' is not supported");
    CASE(decoder, "{\"type\":\"WordPiece\"}", "decoder.type 'WordPiece' is not supported");
    CASE(merges, "\"a c\"", "model.merges[0]: the token \"c\" is not in model.vocab");
    CASE(vocab, "\"a\":0,\"b\":1,\"<|endoftext|>\":3",
         "model.merges[0]: the merged token \"ab\" is not in model.vocab");
    CASE(vocab, "\"a\":0,\"b\":0,\"ab\":2,\"<|endoftext|>\":3", "is also the token");
    CASE(vocab, "\"a\":0,\"b\":1,\"ab\":2,\"<|endoftext|>\":3,\"x\":5",
         "model.vocab: no token has id 4 (ids run 0..5)");
    CASE(added, "{\"id\":5,\"content\":\"<|endoftext|>\",\"special\":true}",
         "added_tokens[0].id: \"<|endoftext|>\" has id 5, but model.vocab gives it id 3");
    CASE(added, "{\"id\":0,\"content\":\"<pad>\",\"special\":true}",
         "added_tokens[0].id: id 0 of \"<pad>\" is already the token \"a\"");
    CASE(post,
         "{\"type\":\"TemplateProcessing\",\"special_tokens\":{\"<|endoftext|>\":{\"ids\":[1],"
         "\"tokens\":[\"<|endoftext|>\"]}}}",
         "post_processor.special_tokens[\"<|endoftext|>\"].ids[0]: \"<|endoftext|>\" is id 1 here, "
         "but the vocabulary gives it 3");
    CASE(post, "{\"type\":\"BertProcessing\",\"sep\":[\"<|endoftext|>\",3],\"cls\":[\"a\",7]}",
         "post_processor.cls: \"a\" is id 7 here, but the vocabulary gives it 0");
#undef CASE
    assert_true(n <= sizeof cases / sizeof cases[0]);
    for (size_t i = 0; i < n; i++) {
        char *json = render(cases[i].p);
        expect_refusal(json, cases[i].expected);
        free(json);
    }
    expect_refusal("{\"model\": ", "tokenizer.json:1:");
    expect_refusal("{\"model\": {}, \"model\": {}}", "duplicate object key");
    expect_refusal("{\"version\": \"1.0\"}", "model: missing");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_neox_ids_match_tokenizers),
        cmocka_unit_test(test_gpt2_ids_match_tokenizers),
        cmocka_unit_test(test_split_ids_match_tokenizers),
        cmocka_unit_test(test_decode_matches_tokenizers),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_decode_skips_special_tokens),
        cmocka_unit_test(test_lookups),
        cmocka_unit_test(test_small_file_loads),
        cmocka_unit_test(test_white_space_is_onig_white_space),
        cmocka_unit_test(test_refusals_name_file_and_key),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
