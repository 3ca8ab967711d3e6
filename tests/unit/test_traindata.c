/* Training data: corpus loading errors, CAT-N examples, token-budget batch plans, lr schedule. */
#include "test_util.h"
#include "mtlab/error.h"
#include "mtlab/files.h"
#include "mtlab/train.h"
#include "mtlab/traindata.h"

#include <unistd.h>

static void test_batch_plan_budget_and_coverage(void **state)
{
    (void)state;
    enum { N = 500 };
    int len[N];
    for (int i = 0; i < N; i++) len[i] = 3 + (i * 37) % 90;
    mt_batch_plan p;
    mt_batch_plan_build(&p, len, N, 400, 7, 0);
    int seen[N] = {0};
    size_t total = 0;
    for (size_t b = 0; b < p.n_batches; b++) {
        int longest = 0;
        for (int r = 0; r < p.rows[b]; r++) {
            uint32_t e = p.order[p.start[b] + (size_t)r];
            seen[e]++;
            if (len[e] > longest) longest = len[e];
        }
        assert_int_equal(longest, p.longest[b]);
        /* every batch within budget, except a lone example that alone exceeds it */
        assert_true((size_t)p.rows[b] * (size_t)longest <= 400 || p.rows[b] == 1);
        total += (size_t)p.rows[b];
    }
    assert_int_equal(total, N);
    for (int i = 0; i < N; i++) assert_int_equal(seen[i], 1);

    /* same seed and epoch: same plan; another epoch: another order */
    mt_batch_plan q, r;
    mt_batch_plan_build(&q, len, N, 400, 7, 0);
    mt_batch_plan_build(&r, len, N, 400, 7, 1);
    assert_int_equal(q.n_batches, p.n_batches);
    assert_memory_equal(q.order, p.order, N * sizeof *p.order);
    assert_true(memcmp(r.order, p.order, N * sizeof *p.order) != 0);
    mt_batch_plan_free(&p);
    mt_batch_plan_free(&q);
    mt_batch_plan_free(&r);
}

/* Encoder-decoder and decoder-only plans from one max_tokens hold about the same sentence pairs
 * per batch: a decoder-only row packs both sides, and its budget is twice as large. */
static void test_batch_budget_same_pairs(void **state)
{
    (void)state;
    enum { N = 2000 };
    mt_corpus c = {0};
    int sl[N], tl[N], len[2][N];
    for (int i = 0; i < N; i++) sl[i] = 10 + (i * 13) % 40, tl[i] = sl[i] + (i % 7) - 3;
    c.n = N;
    c.src_len = sl;
    c.tgt_len = tl;
    mt_examples e;
    mt_examples_build(&e, &c, 1, 0, 0.5, 0, 1, 0);
    size_t batches[2], same_budget_batches = 0;
    for (int encdec = 0; encdec < 2; encdec++) {
        for (int i = 0; i < N; i++)
            len[encdec][i] = mt_example_packed_len(&e, (size_t)i, encdec, 1);
        mt_batch_plan p;
        mt_batch_plan_build(&p, len[encdec], N, mt_batch_budget(1024, encdec), 3, 0);
        batches[encdec] = p.n_batches;
        mt_batch_plan_free(&p);
    }
    mt_batch_plan p;
    mt_batch_plan_build(&p, len[0], N, 1024, 3, 0); /* decoder-only rows on the one-side budget */
    same_budget_batches = p.n_batches;
    mt_batch_plan_free(&p);
    mt_examples_free(&e);
    double ratio = (double)batches[0] / (double)batches[1];
    printf("batches per epoch: encoder-decoder %zu, decoder-only %zu (ratio %.3f; on the one-side "
           "budget %zu)\n",
           batches[1], batches[0], ratio, same_budget_batches);
    assert_true(ratio > 0.9 && ratio < 1.1);
    assert_true((double)same_budget_batches / (double)batches[1] > 1.8);
    assert_int_equal(mt_batch_budget(4096, 1), 4096);
    assert_int_equal(mt_batch_budget(4096, 0), 8192);
}

static void test_examples_catn(void **state)
{
    (void)state;
    enum { N = 200 };
    mt_corpus c = {0};
    c.n = N;
    int sl[N], tl[N];
    for (int i = 0; i < N; i++) sl[i] = 5 + i % 7, tl[i] = 6 + i % 5;
    c.src_len = sl;
    c.tgt_len = tl;

    mt_examples plain;
    mt_examples_build(&plain, &c, 1, 0, 0.5, 0, 1, 0);
    for (int i = 0; i < N; i++) {
        assert_int_equal(plain.n_parts[i], 1);
        assert_int_equal(plain.parts[plain.start[i]], i);
    }
    mt_examples_free(&plain);

    mt_examples cat;
    mt_examples_build(&cat, &c, 5, 0, 0.5, 0, 1, 0);
    int joined = 0;
    for (int i = 0; i < N; i++) {
        assert_true(cat.n_parts[i] == 1 || cat.n_parts[i] == 5);
        assert_int_equal(cat.parts[cat.start[i]], i); /* each pair leads its own example */
        int s = 0, t = 0;
        for (int k = 0; k < cat.n_parts[i]; k++) {
            s += sl[cat.parts[cat.start[i] + (size_t)k]];
            t += tl[cat.parts[cat.start[i] + (size_t)k]];
        }
        assert_int_equal(s, cat.src_len[i]);
        assert_int_equal(t, cat.tgt_len[i]);
        joined += cat.n_parts[i] > 1;
    }
    /* keep_p = 0.5 over 200 pairs: about half are joined */
    assert_true(joined > 70 && joined < 130);
    mt_examples_free(&cat);

    /* cat_min 2 of cat_n 6: each join's size is drawn from 2..6, every size turns up, the sums
     * hold, and the same (seed, epoch) draws the same epoch */
    mt_examples range, again;
    mt_examples_build(&range, &c, 6, 2, 0.5, 0, 1, 3);
    mt_examples_build(&again, &c, 6, 2, 0.5, 0, 1, 3);
    int sizes[7] = {0};
    for (int i = 0; i < N; i++) {
        int k = range.n_parts[i];
        assert_true(k >= 1 && k <= 6);
        sizes[k]++;
        int s = 0;
        for (int j = 0; j < k; j++) s += sl[range.parts[range.start[i] + (size_t)j]];
        assert_int_equal(s, range.src_len[i]);
        assert_int_equal(again.n_parts[i], k);
        assert_memory_equal(again.parts + again.start[i], range.parts + range.start[i],
                            (size_t)k * sizeof *range.parts);
    }
    for (int k = 2; k <= 6; k++) assert_true(sizes[k] > 5); /* about 20 each */
    assert_true(sizes[1] > 70 && sizes[1] < 130);
    mt_examples_free(&range);
    mt_examples_free(&again);

    /* keep_p is the probability that a pair stays alone: 0 joins every pair, 1 none, 0.9 about
     * one in ten (a rule read the wrong way round reads 0.5 the same) */
    int keep_joined[3] = {0};
    const double keeps[3] = {0.0, 1.0, 0.9};
    for (int k = 0; k < 3; k++) {
        mt_examples e;
        mt_examples_build(&e, &c, 4, 0, keeps[k], 0, 7, 0);
        for (int i = 0; i < N; i++) keep_joined[k] += e.n_parts[i] > 1;
        mt_examples_free(&e);
    }
    assert_int_equal(keep_joined[0], N);
    assert_int_equal(keep_joined[1], 0);
    assert_true(keep_joined[2] > 5 && keep_joined[2] < 40);

    /* a length cap that no joined example fits: nothing is joined */
    mt_examples capped;
    mt_examples_build(&capped, &c, 5, 0, 0.0, 12, 1, 0);
    for (int i = 0; i < N; i++) assert_int_equal(capped.n_parts[i], 1);
    mt_examples_free(&capped);
}

static void test_lr_schedule(void **state)
{
    (void)state;
    assert_float_equal(mt_lr_inverse_sqrt(1e-3, 1000, 4000), 2.5e-4, 1e-12);
    assert_float_equal(mt_lr_inverse_sqrt(1e-3, 4000, 4000), 1e-3, 1e-12);
    assert_float_equal(mt_lr_inverse_sqrt(1e-3, 16000, 4000), 5e-4, 1e-12);
    assert_float_equal(mt_lr_inverse_sqrt(1e-3, 30000, 0), 5e-4, 1e-12);
}

static void test_corpus_load_errors(void **state)
{
    (void)state;
    mt_tokenizer *tok = mt_tokenizer_load("tests/fixtures/models/mamba/tokenizer.model");
    if (!tok) fail_msg("%s", mt_last_error());
    char dir[] = "/tmp/mtlab_traindata_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char a[300], b[300];
    snprintf(a, sizeof a, "%s/a.es", dir);
    snprintf(b, sizeof b, "%s/b.en", dir);
    mt_corpus c;

    test_write_text(a, "uno\ndos\n");
    test_write_text(b, "one\n");
    assert_int_equal(mt_corpus_load(&c, a, b, tok, 0), -1);
    assert_non_null(strstr(mt_last_error(), "has 1 lines but"));

    test_write_text(b, "one\n\n");
    assert_int_equal(mt_corpus_load(&c, a, b, tok, 0), -1);
    assert_non_null(strstr(mt_last_error(), ":2: empty line"));

    test_write_text(b, "one\nt\xc3\x28o\n");
    assert_int_equal(mt_corpus_load(&c, a, b, tok, 0), -1);
    assert_non_null(strstr(mt_last_error(), "b.en:2"));
    assert_non_null(strstr(mt_last_error(), "invalid UTF-8"));

    test_write_text(b, "one\ntwo\n");
    assert_int_equal(mt_corpus_load(&c, a, b, tok, 2), 0);
    assert_int_equal(c.n, 2);
    for (size_t i = 0; i < c.n; i++) assert_true(c.src_len[i] > 0 && c.src_len[i] <= 2);
    mt_corpus_free(&c);

    test_write_text(a, "");
    test_write_text(b, "");
    assert_int_equal(mt_corpus_load(&c, a, b, tok, 0), -1);
    assert_non_null(strstr(mt_last_error(), "no lines"));

    /* one line limit for every reader (mtlab/files.h), applied while reading, not after */
    size_t n = MT_LINE_MAX_BYTES + 2;
    char *long_line = malloc(n);
    memset(long_line, 'a', n - 1);
    long_line[n - 1] = '\n';
    test_write_text(a, "uno\n");
    test_write_file(b, long_line, n);
    free(long_line);
    assert_int_equal(mt_corpus_load(&c, a, b, tok, 0), -1);
    char want[400];
    snprintf(want, sizeof want, "%s:1: line longer than the %zu-byte limit", b, MT_LINE_MAX_BYTES);
    if (!strstr(mt_last_error(), want)) fail_msg("expected '%s' in: %s", want, mt_last_error());

    unlink(a);
    unlink(b);
    rmdir(dir);
    mt_tokenizer_free(tok);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_batch_plan_budget_and_coverage),
        cmocka_unit_test(test_batch_budget_same_pairs),
        cmocka_unit_test(test_examples_catn),
        cmocka_unit_test(test_lr_schedule),
        cmocka_unit_test(test_corpus_load_errors),
    };
    return cmocka_run_group_tests_name("traindata", tests, NULL, NULL);
}
