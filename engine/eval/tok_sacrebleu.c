/* The tokenizers sacreBLEU offers BLEU (--tokenize), besides 13a (tok13a.c):
 *   none       the line unchanged
 *   char       " ".join(line): every character, spaces included, separated by spaces
 *   intl       mteval-v14's international tokenization, three regex.sub passes, then
 *              ' '.join(line.split()):
 *                (\P{N})(\p{P}) -> '\1 \2 '   punctuation after a non-number
 *                (\p{P})(\P{N}) -> ' \1 \2'   punctuation before a non-number
 *                (\p{S})        -> ' \1 '     every symbol
 *              (Unicode classes as the regex module has them, unicode_tok_tables.c)
 *   zh         line.strip(), each character of TokenizerZh's ranges padded with spaces, then
 *              the 13a rules without 13a's entity handling and padding (mt_tok_regexp_codepoints)
 *   flores101, flores200
 *              " ".join(EncodeAsPieces(line)) with the SentencePiece model given (spm_pieces.cc)
 *   ja-mecab   MeCab's words of line.strip(), stripped (tok_mecab.c)
 * ko-mecab is left out: its dictionary (mecab-ko-dic) is not a Debian package. */
#include "eval/tok_sacrebleu.h"

#include "eval/tok13a.h"
#include "eval/unicode_tok.h"
#include "mtlab/error.h"

#include <stdlib.h>
#include <string.h>

static const char *const TOKENIZER_NAMES[MT_BLEU_TOK_COUNT] = {
    [MT_BLEU_TOK_13A] = "13a",
    [MT_BLEU_TOK_NONE] = "none",
    [MT_BLEU_TOK_INTL] = "intl",
    [MT_BLEU_TOK_CHAR] = "char",
    [MT_BLEU_TOK_ZH] = "zh",
    [MT_BLEU_TOK_FLORES101] = "flores101",
    [MT_BLEU_TOK_FLORES200] = "flores200",
    [MT_BLEU_TOK_JA_MECAB] = "ja-mecab",
};

const char *mt_bleu_tokenize_name(mt_bleu_tokenize t)
{
    return (unsigned)t < MT_BLEU_TOK_COUNT ? TOKENIZER_NAMES[t] : NULL;
}

int mt_bleu_tokenize_parse(const char *name, mt_bleu_tokenize *out)
{
    char choices[128] = "";
    for (int t = 0; t < MT_BLEU_TOK_COUNT; t++) {
        if (strcmp(name, TOKENIZER_NAMES[t]) == 0) {
            *out = (mt_bleu_tokenize)t;
            return 0;
        }
        if (t) strcat(choices, ", ");
        strcat(choices, TOKENIZER_NAMES[t]);
    }
    return mt_error("unknown tokenizer '%s' (%s)", name, choices);
}

static int is_punct(uint32_t c) { return mt_cp_in_ranges(mt_intl_punct, mt_intl_punct_count, c); }
static int is_symbol(uint32_t c)
{
    return mt_cp_in_ranges(mt_intl_symbol, mt_intl_symbol_count, c);
}
static int is_not_number(uint32_t c)
{
    return !mt_cp_in_ranges(mt_intl_number, mt_intl_number_count, c);
}
static int is_zh_char(uint32_t c) { return mt_cp_in_ranges(mt_zh_chars, mt_zh_chars_count, c); }

static void copy_into(mt_cpbuf *s, const uint32_t *in, size_t n)
{
    for (size_t i = 0; i < n; i++) mt_cpbuf_push(s, in[i]);
}

static void tokenize_intl(mt_cpbuf *out, const uint32_t *in, size_t n)
{
    mt_cpbuf s = {0};
    copy_into(&s, in, n);
    mt_tok_pair(&s, is_not_number, is_punct, 0);
    mt_tok_pair(&s, is_punct, is_not_number, 1);
    mt_tok_pad(&s, is_symbol);
    mt_tok_split_join(out, s.cp, s.n);
    mt_cpbuf_free(&s);
}

static void tokenize_zh(mt_cpbuf *out, const uint32_t *in, size_t n)
{
    size_t a = 0;
    while (a < n && mt_is_py_space(in[a])) a++;
    n = a + mt_py_rstrip_len(in + a, n - a);
    mt_cpbuf s = {0};
    copy_into(&s, in + a, n - a);
    mt_tok_pad(&s, is_zh_char);
    mt_tok_regexp_codepoints(out, s.cp, s.n);
    mt_cpbuf_free(&s);
}

static int tokenize_spm(mt_cpbuf *out, mt_bleu_tokenize t, const mt_spm_pieces *spm,
                        const uint32_t *in, size_t n)
{
    if (!spm) return mt_error("tokenizer %s needs a SentencePiece model file", TOKENIZER_NAMES[t]);
    char *text = mt_utf8_encode(in, n, NULL, NULL);
    char *pieces = mt_spm_pieces_encode(spm, text);
    free(text);
    if (!pieces) return -1;
    int rc = mt_utf8_decode(out, pieces, strlen(pieces));
    free(pieces);
    return rc;
}

int mt_sacre_tokenize_codepoints(mt_cpbuf *out, mt_bleu_tokenize t, const mt_spm_pieces *spm,
                                 const uint32_t *in, size_t n)
{
    switch (t) {
    case MT_BLEU_TOK_13A: mt_tok13a_codepoints(out, in, n); return 0;
    case MT_BLEU_TOK_NONE: copy_into(out, in, n); return 0;
    case MT_BLEU_TOK_INTL: tokenize_intl(out, in, n); return 0;
    case MT_BLEU_TOK_ZH: tokenize_zh(out, in, n); return 0;
    case MT_BLEU_TOK_CHAR:
        for (size_t i = 0; i < n; i++) {
            if (i) mt_cpbuf_push(out, ' ');
            mt_cpbuf_push(out, in[i]);
        }
        return 0;
    case MT_BLEU_TOK_FLORES101:
    case MT_BLEU_TOK_FLORES200: return tokenize_spm(out, t, spm, in, n);
    case MT_BLEU_TOK_JA_MECAB: return mt_mecab_tokenize(out, in, n);
    case MT_BLEU_TOK_COUNT: break;
    }
    return mt_error("tokenizer %d out of range", (int)t);
}

char *mt_tokenize_sacrebleu(mt_bleu_tokenize t, const mt_spm_pieces *spm, const char *line)
{
    mt_cpbuf in = {0}, out = {0};
    char *s = NULL;
    if (mt_utf8_decode(&in, line, strlen(line)) == 0 &&
        mt_sacre_tokenize_codepoints(&out, t, spm, in.cp, in.n) == 0)
        s = mt_utf8_encode(out.cp, out.n, NULL, NULL);
    mt_cpbuf_free(&in);
    mt_cpbuf_free(&out);
    return s;
}
