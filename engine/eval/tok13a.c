/* sacreBLEU's "13a" tokenizer (tokenizers/tokenizer_13a.py + tokenizer_re.py), the
 * mteval-v13a.pl tokenization used by WMT:
 *   1. '<skipped>' -> '', '-\n' -> '', '\n' -> ' '
 *   2. if the line has '&': '&quot;' -> '"', '&amp;' -> '&', '&lt;' -> '<', '&gt;' -> '>'
 *   3. line = ' ' + line + ' '
 *   4. four regex substitutions, each one full Python re.sub pass:
 *        a. ([\{-\~\[-\` -\&\(-\+\:-\@\/])  -> ' \1 '    ASCII punctuation and symbols
 *        b. ([^0-9])([\.,])                 -> '\1 \2 '  '.' ',' after a non-digit
 *        c. ([\.,])([^0-9])                 -> ' \1 \2'  '.' ',' before a non-digit
 *        d. ([0-9])(-)                      -> '\1 \2 '  '-' after a digit
 *   5. ' '.join(line.split())
 * re.sub scans left to right and, after a match, resumes *after* the matched characters, so
 * "a.,b" splits differently from what overlapping matches would give; each pass below copies
 * that scan. [^0-9] is any code point but the ASCII digits (non-ASCII letters and spaces too).
 * Every string operation is a Python str operation, so the work is on code points. */
#include "eval/tok13a.h"

#include "mtlab/metrics.h"

#include <stdlib.h>
#include <string.h>

static int is_digit(uint32_t c) { return c >= '0' && c <= '9'; }
static int is_non_digit(uint32_t c) { return !is_digit(c); }
static int is_period_comma(uint32_t c) { return c == '.' || c == ','; }
static int is_dash(uint32_t c) { return c == '-'; }

/* Rule a's class: {|}~  [\]^_`  space!"#$%&  ()*+  :;<=>?@  / */
int mt_tok_is_13a_symbol(uint32_t c)
{
    return (c >= 0x7B && c <= 0x7E) || (c >= 0x5B && c <= 0x60) || (c >= 0x20 && c <= 0x26) ||
           (c >= 0x28 && c <= 0x2B) || (c >= 0x3A && c <= 0x40) || c == '/';
}

static void push_ascii(mt_cpbuf *b, const char *s)
{
    for (; *s; s++) mt_cpbuf_push(b, (unsigned char)*s);
}

static int matches_at(const mt_cpbuf *s, size_t i, const char *pat)
{
    size_t k = strlen(pat);
    if (i + k > s->n) return 0;
    for (size_t j = 0; j < k; j++)
        if (s->cp[i + j] != (unsigned char)pat[j]) return 0;
    return 1;
}

void mt_tok_replace_all(mt_cpbuf *s, const char *pat, const char *rep)
{
    mt_cpbuf out = {0};
    size_t k = strlen(pat);
    for (size_t i = 0; i < s->n;) {
        if (matches_at(s, i, pat)) {
            push_ascii(&out, rep);
            i += k;
        } else {
            mt_cpbuf_push(&out, s->cp[i++]);
        }
    }
    mt_cpbuf_free(s);
    *s = out;
}

static int contains(const mt_cpbuf *s, uint32_t c)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->cp[i] == c) return 1;
    return 0;
}

void mt_tok_pad(mt_cpbuf *s, mt_cp_pred is_sep)
{
    mt_cpbuf out = {0};
    for (size_t i = 0; i < s->n; i++) {
        if (is_sep(s->cp[i])) {
            mt_cpbuf_push(&out, ' ');
            mt_cpbuf_push(&out, s->cp[i]);
            mt_cpbuf_push(&out, ' ');
        } else {
            mt_cpbuf_push(&out, s->cp[i]);
        }
    }
    mt_cpbuf_free(s);
    *s = out;
}

void mt_tok_pair(mt_cpbuf *s, mt_cp_pred first, mt_cp_pred second, int space_before)
{
    mt_cpbuf out = {0};
    size_t i = 0;
    while (i < s->n) {
        if (i + 1 < s->n && first(s->cp[i]) && second(s->cp[i + 1])) {
            if (space_before) mt_cpbuf_push(&out, ' '); /* ' \1 \2' */
            mt_cpbuf_push(&out, s->cp[i]);
            mt_cpbuf_push(&out, ' ');
            mt_cpbuf_push(&out, s->cp[i + 1]);
            if (!space_before) mt_cpbuf_push(&out, ' '); /* '\1 \2 ' */
            i += 2; /* resume after the match, as re.sub does */
        } else {
            mt_cpbuf_push(&out, s->cp[i++]);
        }
    }
    mt_cpbuf_free(s);
    *s = out;
}

void mt_tok_split_join(mt_cpbuf *out, const uint32_t *in, size_t n)
{
    int in_token = 0, any = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t c = in[i];
        if (mt_is_py_space(c)) {
            in_token = 0;
            continue;
        }
        if (!in_token && any) mt_cpbuf_push(out, ' ');
        mt_cpbuf_push(out, c);
        in_token = any = 1;
    }
}

void mt_tok_13a_rules(mt_cpbuf *s)
{
    mt_tok_pad(s, mt_tok_is_13a_symbol);
    mt_tok_pair(s, is_non_digit, is_period_comma, 0);
    mt_tok_pair(s, is_period_comma, is_non_digit, 1);
    mt_tok_pair(s, is_digit, is_dash, 0);
}

void mt_tok_regexp_codepoints(mt_cpbuf *out, const uint32_t *in, size_t n)
{
    mt_cpbuf s = {0};
    for (size_t i = 0; i < n; i++) mt_cpbuf_push(&s, in[i]);
    mt_tok_13a_rules(&s);
    mt_tok_split_join(out, s.cp, s.n);
    mt_cpbuf_free(&s);
}

void mt_tok13a_codepoints(mt_cpbuf *out, const uint32_t *in, size_t n)
{
    mt_cpbuf s = {0};
    for (size_t i = 0; i < n; i++) mt_cpbuf_push(&s, in[i]);
    mt_tok_replace_all(&s, "<skipped>", "");
    mt_tok_replace_all(&s, "-\n", "");
    mt_tok_replace_all(&s, "\n", " ");
    if (contains(&s, '&')) {
        mt_tok_replace_all(&s, "&quot;", "\"");
        mt_tok_replace_all(&s, "&amp;", "&");
        mt_tok_replace_all(&s, "&lt;", "<");
        mt_tok_replace_all(&s, "&gt;", ">");
    }
    mt_cpbuf spaced = {0}; /* ' ' + line + ' ' */
    mt_cpbuf_push(&spaced, ' ');
    for (size_t i = 0; i < s.n; i++) mt_cpbuf_push(&spaced, s.cp[i]);
    mt_cpbuf_push(&spaced, ' ');
    mt_tok_regexp_codepoints(out, spaced.cp, spaced.n);
    mt_cpbuf_free(&s);
    mt_cpbuf_free(&spaced);
}

char *mt_tokenize_13a(const char *line)
{
    mt_cpbuf in = {0}, out = {0};
    if (mt_utf8_decode(&in, line, strlen(line)) < 0) {
        mt_cpbuf_free(&in);
        return NULL;
    }
    mt_tok13a_codepoints(&out, in.cp, in.n);
    char *s = mt_utf8_encode(out.cp, out.n, NULL, NULL);
    mt_cpbuf_free(&in);
    mt_cpbuf_free(&out);
    return s;
}
