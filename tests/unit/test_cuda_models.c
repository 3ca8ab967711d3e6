/* Whole models on CUDA against the CPU: for each of the seven architectures (tiny sizes), the
 * logits of a padded batch, one training step with dropout (loss, every gradient, parameters
 * after AdamW), incremental decoding with a beam reorder, the probe maps and the attributions
 * of one translation (tests/unit/model_parity.h). fp32
 * mode holds to the bounds below (other summation orders, atomics in the reductions); bf16
 * matrix products to the looser ones. Without a device the tests skip (cuda_check.h). */
#include "test_util.h"
#include "cuda_check.h"
#include "model_parity.h"

#include "mtlab/error.h"

typedef struct {
    double logits, loss, grads, params, probes, attr;
} bounds;

static const bounds fp32 = {1e-4, 1e-5, 1e-3, 1e-4, 1e-4, 1e-3};
static const bounds bf16 = {5e-2, 1e-2, 1e-1, 1e-3, 5e-2, 1e-1};

/* every preset is measured and printed before the first one over its bounds fails the test */
static void check_all(const mt_backend *be, const bounds *b)
{
    const char *over = NULL;
    const char *const *presets = mt_model_arch_list(); /* every architecture of the registry */
    for (size_t i = 0; presets[i]; i++) {
        parity_report r = model_parity(be, presets[i], 0);
        if (!(r.logits <= b->logits && r.loss <= b->loss && r.grads <= b->grads &&
              r.params <= b->params && r.probes <= b->probes && r.attr <= b->attr)) {
            print_error("%s on %s over its bounds: logits %.3g (bound %.0e), loss %.3g (%.0e), "
                        "grads %.3g (%.0e), params %.3g (%.0e), probes %.3g (%.0e), "
                        "attributions %.3g (%.0e)\n",
                        presets[i], be->name, r.logits, b->logits, r.loss, b->loss, r.grads,
                        b->grads, r.params, b->params, r.probes, b->probes, r.attr, b->attr);
            if (!over) over = presets[i];
        }
    }
    if (over) fail_msg("%s (and any printed above) over the bounds on %s", over, be->name);
}

static void test_models_fp32(void **state)
{
    (void)state;
    const mt_backend *be = cuda_or_skip(0);
    if (be) check_all(be, &fp32);
}

/* the same thread's backend switched to bf16 matrix products, then back */
static void test_models_bf16(void **state)
{
    (void)state;
    const mt_backend *be = cuda_or_skip(1);
    if (!be) return;
    check_all(be, &bf16);
    cuda_or_skip(0);
}

/* precision bf16 (weights rounded to bf16 once, tensor-core products) against fp32 on the CPU;
 * and int8, which has no CUDA kernels, refused with a message */
static void test_models_bf16_weights(void **state)
{
    (void)state;
    const mt_backend *be = cuda_or_skip(0);
    if (!be) return;
    const char *over = NULL;
    const char *const *presets = mt_model_arch_list(); /* every architecture of the registry */
    for (size_t i = 0; presets[i]; i++) {
        double rel = model_precision_parity(be, presets[i], MT_PRECISION_BF16);
        print_message("  %-13s bf16 weights: logits relative error %.3g (bound %.0e)\n", presets[i],
                      rel, bf16.logits);
        if (!(rel <= bf16.logits) && !over) over = presets[i];
    }
    if (over) fail_msg("%s (and any printed above) over the bound in precision bf16", over);
    mt_model_config c;
    tiny_model_config(&c, "mamba", 0.0f);
    mt_model *m = mt_model_create(&c, be, 1);
    assert_non_null(m);
    assert_int_equal(mt_model_set_precision(m, MT_PRECISION_INT8), -1);
    assert_non_null(strstr(mt_last_error(), "no int8 linear layers"));
    assert_int_equal(mt_model_precision(m), MT_PRECISION_FP32);
    mt_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_models_fp32),
        cmocka_unit_test(test_models_bf16),
        cmocka_unit_test(test_models_bf16_weights),
    };
    return cmocka_run_group_tests_name("cuda_models", tests, NULL, NULL);
}
