/* mt_tokenizer_find_token: the one token a person means by a text they type (a contrast token),
 * for every tokenizer kind: its piece as the vocabulary spells it, the word-initial form of the
 * text ("Ġof" for "of" in byte-level BPE, "▁Dios" for "Dios" in sentencepiece), a token whose
 * label (mt_tokenizer_label) is the text, the text's one token; else an error naming the text
 * and how it splits. Byte-level BPE: the neox_hf and mamba_hf fixtures' tokenizer.json;
 * sentencepiece: models/transformer-small. */
#include "test_util.h"

#include "mtlab/error.h"
#include "mtlab/tokenizer.h"

static const char *const byte_level[] = {"tests/fixtures/neox_hf/st/tokenizer.json",
                                         "tests/fixtures/mamba_hf/st/tokenizer.json"};

/* The token text names is the one the vocabulary spells piece. */
static void expect_piece(const mt_tokenizer *tok, const char *text, const char *piece)
{
    int id = mt_tokenizer_find_token(tok, text);
    if (id < 0) fail_msg("'%s': %s", text, mt_last_error());
    const char *got = mt_tokenizer_id_to_piece(tok, id);
    if (!got || strcmp(got, piece)) fail_msg("'%s': token '%s', want '%s'", text, got, piece);
    assert_int_equal(id, mt_tokenizer_piece_to_id(tok, piece));
}

/* text names no one token: -1, and the error says so, as want does. */
static void expect_refused(const mt_tokenizer *tok, const char *text, const char *want)
{
    mt_error("none yet");
    assert_int_equal(mt_tokenizer_find_token(tok, text), -1);
    if (strcmp(mt_last_error(), want))
        fail_msg("'%s': '%s', want '%s'", text, mt_last_error(), want);
}

static void test_byte_level(void **state)
{
    (void)state;
    for (int f = 0; f < 2; f++) {
        mt_tokenizer *tok = mt_tokenizer_load(byte_level[f]);
        if (!tok) fail_msg("%s", mt_last_error());
        /* a piece as the vocabulary spells it (a CSV's header, a map's pieces) */
        expect_piece(tok, "\u0120of", "\u0120of");
        expect_piece(tok, "her", "her"); /* a word's inside: there is such a token */
        expect_piece(tok, "\u0120her", "\u0120her");
        expect_piece(tok, "<|endoftext|>", "<|endoftext|>");
        expect_piece(tok, "<sep>", "<sep>");
        /* a word as a reader types it: the token of ' ' + the word ("of" alone is no token) */
        expect_piece(tok, "of", "\u0120of");
        expect_piece(tok, "God", "\u0120God");
        expect_piece(tok, "Dios", "\u0120Dios");
        /* "á" is the byte-level spelling of byte E1 alone (label <0xE1>), but typed it means
         * the character: bytes C3 A1, as a word " á" -> "ĠÃ¡" */
        expect_piece(tok, "\u00e1", "\u0120\u00c3\u00a1");
        expect_piece(tok, "<0xE1>", "\u00e1"); /* that byte by its label */
        /* tokens by their labels: a newline, a space, a byte of a split character */
        expect_piece(tok, "\u240a", "\u010a"); /* ␊: Ċ */
        expect_piece(tok, "\u2423", "\u0120"); /* ␣: Ġ */
        expect_piece(tok, "<0xC3>", "\u00c3");
        /* not one token: said, with how it splits */
        expect_refused(tok, "Zorvald",
                       "'Zorvald' is 5 tokens (Z or v al d), not one token of this vocabulary");
        expect_refused(tok, "Amados",
                       "'Amados' is 4 tokens (A m ad os), not one token of this vocabulary");
        expect_refused(tok, "", "'' is no token of this vocabulary");
        mt_tokenizer_free(tok);
    }
}

static void test_sentencepiece(void **state)
{
    (void)state;
    mt_tokenizer *tok = mt_tokenizer_load("models/transformer-small/tokenizer.model");
    if (!tok) fail_msg("%s", mt_last_error());
    expect_piece(tok, "\u2581Dios", "\u2581Dios");
    expect_piece(tok, "Dios", "\u2581Dios"); /* "Dios" alone is no piece: the word's */
    expect_piece(tok, "of", "\u2581of");
    expect_piece(tok, "\u00e1", "\u00e1"); /* a piece as spelled */
    expect_piece(tok, "<eos>", "<eos>");
    expect_piece(tok, "<unk>", "<unk>"); /* the unknown piece itself, not "unknown" */
    expect_piece(tok, "\u2423", "\u2581"); /* ␣: the word mark alone, by its label */
    expect_refused(tok, "Zorvald",
                   "'Zorvald' is 5 tokens (\u2581Zo r v al d), not one token of this vocabulary");
    expect_refused(tok, "Dios y",
                   "'Dios y' is 2 tokens (\u2581Dios \u2581y), not one token of this vocabulary");
    mt_tokenizer_free(tok);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_byte_level),
        cmocka_unit_test(test_sentencepiece),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
