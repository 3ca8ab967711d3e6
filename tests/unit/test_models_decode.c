/* Incremental decoding against the parallel forward: a prefill followed by single steps must
 * give the logits the full-sequence forward gives at the same positions (KV caches for the
 * transformer, the recurrent conv + ssm state for Mamba), including left-padded prompts and
 * beam reordering. Fixture models from tests/fixtures/models/. */
#include "test_util.h"
#include "decode_steps.h"

#include "mtlab/error.h"
#include "mtlab/model.h"

#define FIXTURES "tests/fixtures/models"
#define V 64
/* fp32, the same math in a different order (recurrent scan vs parallel scan, one query vs all) */
#define STEP_TOL 1e-4f

static mt_model *load(const char *name)
{
    char dir[256];
    snprintf(dir, sizeof dir, "%s/%s", FIXTURES, name);
    mt_model *m = mt_model_load(dir, mt_backend_cpu(), 0);
    if (!m) fail_msg("%s", mt_last_error());
    return m;
}

static void test_mamba_steps_match_parallel(void **state)
{
    (void)state;
    mt_model *m = load("mamba");
    /* the fixture's batch: a full row and a left-padded one, `src <sep> tgt </s>` */
    const int32_t ids[2 * 9] = {17, 23, 5, 42, 2, 9, 61, 33, 1, 0, 0, 0, 30, 8, 2, 55, 12, 1};
    float full[2 * 9 * V];
    mt_batch b = {.B = 2, .T = 9, .ids = ids};
    assert_int_equal(mt_model_forward(m, &b, full), 0);
    float d1 = decode_vs_parallel(m, ids, 1, 9, 1, NULL, 0, full);
    float d5 = decode_vs_parallel(m, ids, 2, 9, 5, NULL, 0, full);
    float d2 = decode_vs_parallel(m, ids, 1, 9, 2, NULL, 0, full); /* prompt shorter than conv */
    print_message("mamba recurrent steps vs parallel forward: max |diff| %.3g (prefill 1), %.3g "
                  "(prefill 5, left-padded batch), %.3g (prefill 2) (tolerance %.0e)\n",
                  d1, d5, d2, STEP_TOL);
    assert_true(d1 < STEP_TOL && d5 < STEP_TOL && d2 < STEP_TOL);
    mt_model_free(m);
}

static void test_transformer_steps_match_parallel(void **state)
{
    (void)state;
    mt_model *m = load("marian");
    const int32_t src[2 * 7] = {17, 23, 5, 42, 9, 61, 1, 30, 8, 55, 12, 1, 0, 0};
    const int32_t tgt[2 * 6] = {3, 11, 48, 7, 33, 1, 3, 20, 6, 59, 14, 1};
    float full[2 * 6 * V];
    mt_batch b = {.B = 2, .T = 6, .ids = tgt, .S = 7, .src = src};
    assert_int_equal(mt_model_forward(m, &b, full), 0);
    float d1 = decode_vs_parallel(m, tgt, 2, 6, 1, src, 7, full);
    float d3 = decode_vs_parallel(m, tgt, 2, 6, 3, src, 7, full);
    print_message("transformer KV-cache steps vs parallel forward: max |diff| %.3g (prefill <s>), "
                  "%.3g (prefill 3) (tolerance %.0e)\n",
                  d1, d3, STEP_TOL);
    assert_true(d1 < STEP_TOL && d3 < STEP_TOL);
    mt_model_free(m);
}

static void test_beam_reorder(void **state)
{
    (void)state;
    mt_model *m = load("mamba");
    const int32_t ids[2 * 9] = {17, 23, 5, 42, 2, 9, 61, 33, 1, 0, 0, 0, 30, 8, 2, 55, 12, 1};
    float d_mamba = reorder_vs_parallel(m, ids, 9, 6, NULL, 0);
    mt_model_free(m);
    m = load("marian");
    const int32_t src[2 * 7] = {17, 23, 5, 42, 9, 61, 1, 30, 8, 55, 12, 1, 0, 0};
    const int32_t tgt[2 * 6] = {3, 11, 48, 7, 33, 1, 3, 20, 6, 59, 14, 1};
    float d_marian = reorder_vs_parallel(m, tgt, 6, 3, src, 7);
    mt_model_free(m);
    print_message("reordered beams vs parallel forward: max |diff| %.3g (mamba), %.3g (marian)\n",
                  d_mamba, d_marian);
    assert_true(d_mamba < STEP_TOL && d_marian < STEP_TOL);
}

static void test_decode_misuse_is_an_error(void **state)
{
    (void)state;
    mt_model *m = load("mamba");
    mt_decode_state *st = mt_decode_state_new(m, 1, 3, 0);
    assert_non_null(st);
    float logits[V];
    int32_t tok = 5, prompt[4] = {5, 6, 2, 7};
    assert_int_equal(mt_model_step(m, st, &tok, logits), -1);
    assert_non_null(strstr(mt_last_error(), "before prefill"));
    mt_batch too_long = {.B = 1, .T = 4, .ids = prompt};
    assert_int_equal(mt_model_prefill(m, st, &too_long, logits), -1);
    assert_non_null(strstr(mt_last_error(), "exceed"));
    mt_batch ok = {.B = 1, .T = 3, .ids = prompt};
    assert_int_equal(mt_model_prefill(m, st, &ok, logits), 0);
    assert_int_equal(mt_model_step(m, st, &tok, logits), -1);
    assert_non_null(strstr(mt_last_error(), "full"));
    mt_decode_state_free(st);
    assert_null(mt_decode_state_new(m, 0, 3, 0));
    mt_model_free(m);

    m = load("marian");
    assert_null(mt_decode_state_new(m, 1, 65, 4)); /* beyond max_position_embeddings 64 */
    assert_non_null(strstr(mt_last_error(), "max_position_embeddings"));
    mt_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mamba_steps_match_parallel),
        cmocka_unit_test(test_transformer_steps_match_parallel),
        cmocka_unit_test(test_beam_reorder),
        cmocka_unit_test(test_decode_misuse_is_an_error),
    };
    return cmocka_run_group_tests_name("models_decode", tests, NULL, NULL);
}
