/* Python's str.lower(), which sacreBLEU's --lowercase applies before tokenizing.
 *
 * Python lowercases with Unicode's full mappings. For CPython 3.11 (Unicode 14) those equal
 * glibc's C.UTF-8 towlower (same Unicode version) except in two places, handled here:
 *   U+0130 'İ' -> "i\u0307" (the only unconditional one-to-many lowercase mapping);
 *   U+03A3 'Σ' -> 'ς' in the Final_Sigma context: after a cased character and not before
 *   one, case-ignorable characters skipped on both sides; otherwise 'σ'.
 * tests/unit/test_metrics.c checks every code point against a fixture made by Python. */
#include "eval/codepoints.h"
#include "eval/unicode_case.h"
#include "mtlab/error.h"
#include "mtlab/metrics.h"

#include <locale.h>
#include <pthread.h>
#include <string.h>
#include <wctype.h>

static locale_t utf8_locale;
static pthread_once_t utf8_locale_once = PTHREAD_ONCE_INIT;

static void open_utf8_locale(void)
{
    /* newlocale, not setlocale: the program's own locale stays untouched. */
    utf8_locale = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
}

static int case_ignorable(uint32_t c)
{
    return mt_cp_in_ranges(mt_case_ignorable, mt_case_ignorable_count, c);
}

static int cased(uint32_t c) { return mt_cp_in_ranges(mt_cased, mt_cased_count, c); }

/* Final_Sigma: \p{cased} \p{case-ignorable}* U+03A3 !(\p{case-ignorable}* \p{cased}) */
static int final_sigma(const uint32_t *s, size_t n, size_t i)
{
    size_t j = i;
    while (j > 0 && case_ignorable(s[j - 1])) j--;
    if (j == 0 || !cased(s[j - 1])) return 0;
    j = i + 1;
    while (j < n && case_ignorable(s[j])) j++;
    return j == n || !cased(s[j]);
}

char *mt_lowercase(const char *text)
{
    pthread_once(&utf8_locale_once, open_utf8_locale);
    if (utf8_locale == (locale_t)0) {
        mt_error("lowercasing needs the C.UTF-8 locale, which this system lacks");
        return NULL;
    }
    mt_cpbuf in = {0}, out = {0};
    if (mt_utf8_decode(&in, text, strlen(text)) < 0) {
        mt_cpbuf_free(&in);
        return NULL;
    }
    for (size_t i = 0; i < in.n; i++) {
        uint32_t c = in.cp[i];
        if (c == 0x130) {
            mt_cpbuf_push(&out, 'i');
            mt_cpbuf_push(&out, 0x307);
        } else if (c == 0x3A3) {
            mt_cpbuf_push(&out, final_sigma(in.cp, in.n, i) ? 0x3C2 : 0x3C3);
        } else {
            mt_cpbuf_push(&out, (uint32_t)towlower_l((wint_t)c, utf8_locale));
        }
    }
    char *s = mt_utf8_encode(out.cp, out.n, NULL, NULL);
    mt_cpbuf_free(&in);
    mt_cpbuf_free(&out);
    return s;
}
