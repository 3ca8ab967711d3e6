/* mt_tokenizer_label: a token as a map's axis or a token list shows it, the same way for every
 * tokenizer kind. Byte-level BPE (the neox_hf and mamba_hf fixtures' tokenizer.json: GPT-2's
 * byte-to-character pieces, "Ġ" for a space, "Ċ" for a newline) and sentencepiece
 * (models/transformer-small: "▁" for a word's start). */
#include "test_util.h"

#include "mtlab/error.h"
#include "mtlab/tokenizer.h"
#include "mtlab/utf8.h"

static const char *const byte_level[] = {"tests/fixtures/neox_hf/st/tokenizer.json",
                                         "tests/fixtures/mamba_hf/st/tokenizer.json"};

/* The label of the token spelled piece (which the vocabulary must hold). */
static const char *label_of(const mt_tokenizer *tok, const char *piece, char *out, size_t len)
{
    int id = mt_tokenizer_piece_to_id(tok, piece);
    if (id < 0) fail_msg("no token '%s'", piece);
    return mt_tokenizer_label(tok, id, out, len);
}

static void expect(const mt_tokenizer *tok, const char *piece, const char *want)
{
    char got[64];
    label_of(tok, piece, got, sizeof got);
    if (strcmp(got, want)) fail_msg("'%s': label '%s', want '%s'", piece, got, want);
}

static void test_byte_level_pieces(void **state)
{
    (void)state;
    for (int f = 0; f < 2; f++) {
        mt_tokenizer *tok = mt_tokenizer_load(byte_level[f]);
        if (!tok) fail_msg("%s", mt_last_error());
        /* the bytes mapped back, a word's leading space left out as sentencepiece's mark is */
        expect(tok, "\u0120the", "the"); /* Ġthe */
        expect(tok, "\u0120\u00c3\u00a1", "\u00e1"); /* " á": Ġ then the bytes C3 A1 */
        expect(tok, "e", "e");
        /* a space alone, a newline, a tab: visible */
        expect(tok, "\u0120", "\u2423"); /* ␣ */
        expect(tok, "\u010a", "\u240a"); /* Ċ: ␊ */
        expect(tok, "\u0109", "\u2409"); /* ĉ: ␉ */
        /* a piece of a character (its first byte alone): that byte as sentencepiece spells
         * byte pieces */
        expect(tok, "\u00c3", "<0xC3>"); /* Ã: byte C3 */
        expect(tok, "\u00e2", "<0xE2>"); /* â: byte E2 */
        /* special and added tokens as spelled */
        expect(tok, "<|endoftext|>", "<|endoftext|>");
        expect(tok, "<sep>", "<sep>");
        /* every id has a label, none with a raw control byte or an invalid sequence */
        char got[64];
        for (int id = 0; id < mt_tokenizer_vocab_size(tok); id++) {
            mt_tokenizer_label(tok, id, got, sizeof got);
            assert_true(got[0] != '\0');
            for (const char *c = got; *c; c++) assert_true((unsigned char)*c >= 0x20);
            size_t n = strlen(got), at = 0;
            uint32_t cp;
            for (int l; at < n; at += (size_t)l)
                assert_true((l = mt_utf8_next(got + at, n - at, &cp)) > 0);
        }
        /* out of range; a short buffer cuts on a character's boundary */
        assert_string_equal(mt_tokenizer_label(tok, 100000, got, sizeof got), "?");
        assert_string_equal(label_of(tok, "<|endoftext|>", got, 5), "<|en");
        assert_string_equal(label_of(tok, "\u0120\u00c3\u00a1", got, 2), "");
        assert_string_equal(label_of(tok, "\u0120\u00c3\u00a1", got, 3), "\u00e1");
        mt_tokenizer_free(tok);
    }
}

static void test_sentencepiece_pieces(void **state)
{
    (void)state;
    mt_tokenizer *tok = mt_tokenizer_load("models/transformer-small/tokenizer.model");
    if (!tok) fail_msg("%s", mt_last_error());
    expect(tok, "\u2581Dios", "Dios"); /* the word-start mark left out */
    expect(tok, "\u2581", "\u2423"); /* alone: ␣ */
    expect(tok, "<eos>", "<eos>");
    char got[64];
    assert_string_equal(mt_tokenizer_label(tok, -1, got, sizeof got), "?");
    mt_tokenizer_free(tok);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_byte_level_pieces),
        cmocka_unit_test(test_sentencepiece_pieces),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
