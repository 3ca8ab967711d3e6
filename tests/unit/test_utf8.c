/* The one UTF-8 decoder/encoder (mtlab/utf8.h) against an oracle: a byte string is one
 * well-formed character exactly when some scalar value encodes to it, so every 1-, 2- and
 * 3-byte string (and all 4-byte strings with a lead byte F0..F4 and arbitrary tails on a
 * grid) is decoded and compared with the encodings of all scalar values. */
#include "test_util.h"
#include "mtlab/utf8.h"

/* 1 when s[0..n) is exactly the encoding of a scalar value (by the naive bit layout), which is
 * then in *cp: decode the bits without checks, re-encode, compare. */
static int oracle(const unsigned char *s, int n, uint32_t *cp)
{
    static const unsigned char lead_mark[] = {0, 0x00, 0xC0, 0xE0, 0xF0};
    static const unsigned char lead_mask[] = {0, 0x80, 0xE0, 0xF0, 0xF8};
    if ((s[0] & lead_mask[n]) != lead_mark[n]) return 0;
    uint32_t c = s[0] & (uint32_t)(0x7F >> (n == 1 ? 0 : n));
    for (int k = 1; k < n; k++) {
        if ((s[k] & 0xC0) != 0x80) return 0;
        c = c << 6 | (s[k] & 0x3Fu);
    }
    /* the shortest form of c, which must be a scalar value */
    int shortest = c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
    if (shortest != n || (c >= 0xD800 && c <= 0xDFFF) || c > 0x10FFFF) return 0;
    *cp = c;
    return 1;
}

static void check(const unsigned char *s, int n)
{
    uint32_t want = 0, got = 0xABCDEF;
    int ok = oracle(s, n, &want);
    int k = mt_utf8_next((const char *)s, (size_t)n, &got);
    /* a valid shorter prefix is a different character; compare whole-string validity */
    int whole = k == n;
    if (whole != ok)
        fail_msg("%d-byte string %02X %02X %02X %02X: decoder %d, oracle %d", n, s[0],
                 n > 1 ? s[1] : 0, n > 2 ? s[2] : 0, n > 3 ? s[3] : 0, k, ok);
    if (ok) assert_int_equal(got, want);
    if (k == 0) assert_int_equal(got, 0xABCDEF); /* left unchanged */
}

static void test_every_short_string(void **state)
{
    (void)state;
    unsigned char s[4];
    for (int a = 0; a < 256; a++) {
        s[0] = (unsigned char)a;
        check(s, 1);
        for (int b = 0; b < 256; b++) {
            s[1] = (unsigned char)b;
            check(s, 2);
            for (int c = 0; c < 256; c++) {
                s[2] = (unsigned char)c;
                check(s, 3);
            }
        }
    }
    for (int a = 0xF0; a < 0x100; a++)
        for (int b = 0x70; b < 0xD0; b++)
            for (int c = 0x70; c < 0xD0; c += 7)
                for (int d = 0x70; d < 0xD0; d += 5) {
                    s[0] = (unsigned char)a, s[1] = (unsigned char)b;
                    s[2] = (unsigned char)c, s[3] = (unsigned char)d;
                    check(s, 4);
                }
}

/* Every scalar value round-trips; surrogates and values above U+10FFFF are refused. */
static void test_round_trip_and_refusals(void **state)
{
    (void)state;
    char buf[4];
    for (uint32_t c = 0; c <= 0x10FFFF; c++) {
        int n = mt_utf8_put(c, buf);
        if (c >= 0xD800 && c <= 0xDFFF) {
            assert_int_equal(n, 0);
            continue;
        }
        uint32_t back;
        if (n < 1 || mt_utf8_next(buf, (size_t)n, &back) != n || back != c)
            fail_msg("U+%04X does not round-trip (%d bytes)", (unsigned)c, n);
        /* every strict prefix is truncated, never a character */
        for (int p = 1; p < n; p++) assert_int_equal(mt_utf8_next(buf, (size_t)p, &back), 0);
    }
    assert_int_equal(mt_utf8_put(0x110000, buf), 0);
    uint32_t c;
    assert_int_equal(mt_utf8_next("", 0, &c), 0);
}

static void test_invalid_offset(void **state)
{
    (void)state;
    const char good[] = "a\xC3\xB1o \xE2\x80\x94 \xF0\x9F\x98\x80";
    assert_int_equal(mt_utf8_invalid_offset(good, sizeof good - 1), sizeof good - 1);
    assert_int_equal(mt_utf8_invalid_offset("ab\0c", 4), 4); /* NUL is valid */
    assert_int_equal(mt_utf8_invalid_offset("ab\xC3", 3), 2); /* truncated */
    assert_int_equal(mt_utf8_invalid_offset("x\xED\xA0\x80y", 5), 1); /* surrogate */
    assert_int_equal(mt_utf8_invalid_offset("\xC0\xAF", 2), 0); /* overlong '/' */
    assert_int_equal(mt_utf8_invalid_offset("ok\x80", 3), 2); /* stray continuation */
}

/* The lossy reading against an oracle built from every scalar value's encoding: the set of
 * proper prefixes of well-formed sequences. For every 1-, 2- and 3-byte string the bytes read
 * as one U+FFFD must be a maximal subpart: a prefix of some well-formed sequence (or a single
 * byte) that the next byte no longer extends; and a string is "incomplete" exactly when it is
 * such a proper prefix. */
static unsigned char *prefix_bits; /* bit (len-1)<<24 | bytes: a proper prefix of length len */
static size_t prefix_index(const unsigned char *s, int n)
{
    size_t v = 0;
    for (int i = 0; i < n; i++) v = v << 8 | s[i];
    return (size_t)(n - 1) << 24 | v;
}
static int is_prefix(const unsigned char *s, int n)
{
    size_t i = prefix_index(s, n);
    return prefix_bits[i >> 3] >> (i & 7) & 1;
}

static void check_lossy(const unsigned char *s, int n)
{
    uint32_t cp = 0;
    int strict = mt_utf8_next((const char *)s, (size_t)n, &cp);
    int k = mt_utf8_next_lossy((const char *)s, (size_t)n, &cp);
    if (strict > 0) {
        assert_int_equal(k, strict);
        assert_int_equal(mt_utf8_incomplete((const char *)s, (size_t)n), 0);
        return;
    }
    int ok = cp == MT_UTF8_REPLACEMENT && k >= 1 && k <= n && (k == 1 || is_prefix(s, k)) &&
             (k == n || !is_prefix(s, k + 1));
    if (!ok || mt_utf8_incomplete((const char *)s, (size_t)n) != is_prefix(s, n))
        fail_msg("%d-byte string %02X %02X %02X: read %d bytes as U+%04X, incomplete %d", n, s[0],
                 n > 1 ? s[1] : 0, n > 2 ? s[2] : 0, k, (unsigned)cp,
                 mt_utf8_incomplete((const char *)s, (size_t)n));
}

static void test_lossy_reads_maximal_subparts(void **state)
{
    (void)state;
    prefix_bits = calloc((size_t)3 << 21, 1);
    char buf[4];
    for (uint32_t c = 0x80; c <= 0x10FFFF; c++) {
        int n = mt_utf8_put(c, buf);
        for (int p = 1; p < n; p++) {
            size_t i = prefix_index((const unsigned char *)buf, p);
            prefix_bits[i >> 3] |= (unsigned char)(1u << (i & 7));
        }
    }
    unsigned char s[3];
    for (int a = 0; a < 256; a++) {
        s[0] = (unsigned char)a;
        check_lossy(s, 1);
        for (int b = 0; b < 256; b++) {
            s[1] = (unsigned char)b;
            check_lossy(s, 2);
            for (int c = 0; c < 256; c++) {
                s[2] = (unsigned char)c;
                check_lossy(s, 3);
            }
        }
    }
    free(prefix_bits);
}

/* The cases a user pastes, by name: nothing after an invalid byte is lost. */
static void test_repair(void **state)
{
    (void)state;
    static const struct {
        const char *in, *out;
        size_t replaced;
    } cases[] = {
        {"Segunda \xE9 linea\nTercera", "Segunda \xEF\xBF\xBD linea\nTercera", 1}, /* Latin-1 */
        {"a\xE2\x82x", "a\xEF\xBF\xBDx", 2}, /* truncated: one U+FFFD */
        {"\xC0\xAF", "\xEF\xBF\xBD\xEF\xBF\xBD", 2}, /* overlong '/' */
        {"\xE0\x80\xAF", "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD", 3}, /* overlong, 3 bytes */
        {"\xED\xA0\x80z", "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBDz", 3}, /* surrogate */
        {"\x80\x80ok", "\xEF\xBF\xBD\xEF\xBF\xBDok", 2}, /* lone continuations */
        {"\xF4\x90\x80\x80", "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD",
         4}, /* > U+10FFFF */
        {"fin\xF0\x9F\x98", "fin\xEF\xBF\xBD", 3}, /* truncated at the end */
        {"ni\xC3\xB1o \xF0\x9F\x98\x80", "ni\xC3\xB1o \xF0\x9F\x98\x80", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n = strlen(cases[i].in), replaced = 99;
        char out[64];
        size_t m = mt_utf8_repair(cases[i].in, n, out, &replaced);
        assert_int_equal(m, strlen(cases[i].out));
        assert_memory_equal(out, cases[i].out, m);
        assert_int_equal(replaced, cases[i].replaced);
    }
    assert_int_equal(mt_utf8_incomplete("\xF0\x9F\x98", 3), 1);
    assert_int_equal(mt_utf8_incomplete("\xF0\x9F\x98\x80", 4), 0);
    assert_int_equal(mt_utf8_incomplete("\xED\xA0", 2), 0);
    assert_int_equal(mt_utf8_incomplete("", 0), 0);
}

static void test_prev(void **state)
{
    (void)state;
    const char s[] = "a\xC3\xB1\xE2\x80\x94\xF0\x9F\x98\x80"; /* a ñ — 😀 at 0, 1, 3, 6 */
    const size_t starts[] = {0, 1, 3, 6, sizeof s - 1};
    for (size_t k = 1; k < sizeof starts / sizeof starts[0]; k++)
        for (size_t end = starts[k - 1] + 1; end <= starts[k]; end++)
            assert_int_equal(mt_utf8_prev(s, end), starts[k - 1]);
    assert_int_equal(mt_utf8_prev(s, 0), 0);
    assert_int_equal(mt_utf8_prev("\x80\x80", 2), 0); /* no lead byte: stops at the start */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_short_string),
        cmocka_unit_test(test_round_trip_and_refusals),
        cmocka_unit_test(test_invalid_offset),
        cmocka_unit_test(test_lossy_reads_maximal_subparts),
        cmocka_unit_test(test_repair),
        cmocka_unit_test(test_prev),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
