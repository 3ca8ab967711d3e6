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
static int is_period_comma(uint32_t c) { return c == '.' || c == ','; }

/* Rule a's class: {|}~  [\]^_`  space!"#$%&  ()*+  :;<=>?@  / */
static int is_13a_symbol(uint32_t c)
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

/* Python's str.replace(pat, rep): every non-overlapping occurrence, left to right. */
static void replace_all(mt_cpbuf *s, const char *pat, const char *rep)
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

/* The two-character rules b, c, d as one re.sub pass each. */
enum pair_rule { AFTER_NON_DIGIT, BEFORE_NON_DIGIT, DASH_AFTER_DIGIT };

static int pair_matches(enum pair_rule r, uint32_t x, uint32_t y)
{
    switch (r) {
    case AFTER_NON_DIGIT: return !is_digit(x) && is_period_comma(y);
    case BEFORE_NON_DIGIT: return is_period_comma(x) && !is_digit(y);
    case DASH_AFTER_DIGIT: return is_digit(x) && y == '-';
    }
    return 0;
}

static void pair_pass(mt_cpbuf *s, enum pair_rule r)
{
    mt_cpbuf out = {0};
    size_t i = 0;
    while (i < s->n) {
        if (i + 1 < s->n && pair_matches(r, s->cp[i], s->cp[i + 1])) {
            uint32_t x = s->cp[i], y = s->cp[i + 1];
            if (r == BEFORE_NON_DIGIT) mt_cpbuf_push(&out, ' '); /* ' \1 \2' */
            mt_cpbuf_push(&out, x);
            mt_cpbuf_push(&out, ' ');
            mt_cpbuf_push(&out, y);
            if (r != BEFORE_NON_DIGIT) mt_cpbuf_push(&out, ' '); /* '\1 \2 ' */
            i += 2; /* resume after the match, as re.sub does */
        } else {
            mt_cpbuf_push(&out, s->cp[i++]);
        }
    }
    mt_cpbuf_free(s);
    *s = out;
}

void mt_tok13a_codepoints(mt_cpbuf *out, const uint32_t *in, size_t n)
{
    mt_cpbuf s = {0};
    for (size_t i = 0; i < n; i++) mt_cpbuf_push(&s, in[i]);
    replace_all(&s, "<skipped>", "");
    replace_all(&s, "-\n", "");
    replace_all(&s, "\n", " ");
    if (contains(&s, '&')) {
        replace_all(&s, "&quot;", "\"");
        replace_all(&s, "&amp;", "&");
        replace_all(&s, "&lt;", "<");
        replace_all(&s, "&gt;", ">");
    }

    /* ' ' + line + ' ', then rule a */
    mt_cpbuf spaced = {0};
    mt_cpbuf_push(&spaced, ' ');
    for (size_t i = 0; i < s.n; i++) {
        if (is_13a_symbol(s.cp[i])) {
            mt_cpbuf_push(&spaced, ' ');
            mt_cpbuf_push(&spaced, s.cp[i]);
            mt_cpbuf_push(&spaced, ' ');
        } else {
            mt_cpbuf_push(&spaced, s.cp[i]);
        }
    }
    mt_cpbuf_push(&spaced, ' ');
    mt_cpbuf_free(&s);

    pair_pass(&spaced, AFTER_NON_DIGIT);
    pair_pass(&spaced, BEFORE_NON_DIGIT);
    pair_pass(&spaced, DASH_AFTER_DIGIT);

    /* ' '.join(line.split()) */
    int in_token = 0, any = 0;
    for (size_t i = 0; i < spaced.n; i++) {
        uint32_t c = spaced.cp[i];
        if (mt_is_py_space(c)) {
            in_token = 0;
            continue;
        }
        if (!in_token && any) mt_cpbuf_push(out, ' ');
        mt_cpbuf_push(out, c);
        in_token = any = 1;
    }
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
