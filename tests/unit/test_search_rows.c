/* The searches' row helpers (engine/decode/search.c): the vectorised argmax and log-sum-exp
 * against their plain loops, and each live row's pick shared among threads against them. */
#include "test_util.h"

#include <omp.h>

#include "decode/search.h"
#include "mtlab/decode.h"
#include "mtlab/model.h"
#include "mtlab/rng.h"

/* mt_argmax and mt_logsumexp (vectorised) against their plain loops on rows of 1 to 8,001
 * logits, skip at every kind of place or none, with the maximum tied at several places (in one
 * lane of the one-pass argmax, in neighbouring lanes, in the tail), one value everywhere, -inf
 * logits and a skip holding the largest value: the same index, the lse within float rounding */
static void test_row_helpers_match_naive(void **state)
{
    (void)state;
    static const int lens[] = {1, 2, 7, 16, 17, 31, 32, 33, 100, 8000, 8001};
    mt_rng rng;
    mt_rng_init(&rng, 42, 0);
    float *x = malloc(8001 * sizeof *x);
    int rows = 0;
    double worst = 0.0;
    for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
        int n = lens[li];
        int skips[] = {-1, 0, n / 2, n - 1, n};
        for (int si = 0; si < 5; si++)
            for (int kind = 0; kind < 6; kind++) {
                int skip = skips[si];
                if (n == 1 && (skip == 0 || skip == n - 1)) continue; /* nothing left to pick */
                for (int v = 0; v < n; v++) x[v] = (float)(mt_rng_uniform(&rng) * 20.0 - 10.0);
                if (kind == 1) /* the maximum tied at three places */
                    for (int t = 0; t < 3; t++) x[(int)(mt_rng_uniform(&rng) * n)] = 12.5f;
                if (kind == 2) /* -inf logits, as a masked vocabulary gives */
                    for (int v = 1; v < n; v += 3) x[v] = -INFINITY;
                if (kind == 3 && skip >= 0 && skip < n) x[skip] = 50.0f; /* skip is the largest */
                if (kind == 4) /* one value everywhere: the first index but skip */
                    for (int v = 0; v < n; v++) x[v] = 1.5f;
                if (kind == 5) /* tied in the same lane of 16, in the next, and in the tail */
                    for (int v = n / 3; v < n; v += 16) x[v] = x[v + 1 < n ? v + 1 : v] = 11.0f;
                int32_t fast = mt_argmax(x, n, skip), ref = naive_argmax(x, n, skip);
                if (fast != ref)
                    fail_msg("n %d skip %d kind %d: argmax %d, naive %d", n, skip, kind, fast, ref);
                assert_true(fast != skip);
                double a = mt_logsumexp(x, n, skip), b = naive_logsumexp(x, n, skip);
                if (isnan(b)) { /* every logit left is -inf (n 2, skip 0): no number either way */
                    assert_true(isnan(a));
                    continue;
                }
                double err = fabs(a - b) / (1.0 + fabs(b));
                if (err > 1e-6)
                    fail_msg("n %d skip %d kind %d: lse %.9f, naive %.9f", n, skip, kind, a, b);
                worst = err > worst ? err : worst;
                rows++;
            }
    }
    print_message("row helpers: %d rows, argmax identical, lse within %.1e of the double loop "
                  "(bound 1e-6)\n",
                  rows, worst);
    free(x);
}

/* mt_decode_pick_rows, on one thread and on two (16 rows of 9,000 logits: enough to share),
 * gives every row the token and log-probability of mt_argmax and mt_logsumexp on that row, bit
 * for bit, with mtlab's vocabulary (n_gen below V, <pad> never generated) and generate()'s */
static void test_pick_rows_any_threads(void **state)
{
    (void)state;
    enum { ROWS = 16, WIDE = 9000 };
    mt_model_config cfg; /* a small model: only its vocabulary's reserved ids matter here */
    assert_int_equal(mt_model_preset(&cfg, "transformer-small"), 0);
    cfg.vocab_size = 64, cfg.d_model = 32, cfg.n_layers = cfg.n_encoder_layers = 1;
    cfg.n_heads = 4, cfg.ffn_dim = 64;
    mt_model *m = mt_model_create(&cfg, mt_backend_cpu(), 3);
    assert_non_null(m);
    int never = mt_model_config_never_generated(mt_model_get_config(m));
    mt_rng rng;
    mt_rng_init(&rng, 7, 0);
    float *x = malloc((size_t)ROWS * WIDE * sizeof *x);
    for (size_t i = 0; i < (size_t)ROWS * WIDE; i++)
        x[i] = (float)(mt_rng_uniform(&rng) * 20.0 - 10.0);
    x[3 * WIDE + never] = 40.0f; /* never generated, even where it is the largest */
    int max_threads = omp_get_max_threads();
    for (int hf = 0; hf < 2; hf++)
        for (int threads = 1; threads <= 2; threads++) {
            omp_set_num_threads(threads);
            mt_decode_ctx c = {.m = m, .V = WIDE, .n_gen = WIDE - 100, .logits = x, .hf = hf};
            int32_t tok[ROWS];
            double lp[ROWS];
            mt_decode_pick_rows(&c, ROWS, tok, lp);
            for (int r = 0; r < ROWS; r++) {
                const float *row = x + (size_t)r * WIDE;
                int32_t want = mt_argmax(row, c.n_gen, never);
                double lse = hf ? mt_logsumexp(row, WIDE, -1) : mt_logsumexp(row, c.n_gen, never);
                assert_int_equal(tok[r], want);
                assert_true(tok[r] != never && tok[r] < c.n_gen);
                assert_memory_equal(&lp[r], &(double){(double)row[want] - lse}, sizeof(double));
            }
        }
    omp_set_num_threads(max_threads);
    print_message("pick rows: %d rows of %d logits, one thread and two, both semantics: the "
                  "single-row helpers' tokens and log-probabilities bit for bit\n",
                  ROWS, WIDE);
    free(x);
    mt_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_row_helpers_match_naive),
        cmocka_unit_test(test_pick_rows_any_threads),
    };
    return cmocka_run_group_tests_name("search_rows", tests, NULL, NULL);
}
