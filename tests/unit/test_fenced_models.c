/* Every architecture on the fenced backend (tests/unit/fenced_backend.h): the engine reaches
 * backend memory only through the backend, so what a GPU backend needs from the model code is
 * checked on every machine. Same arithmetic as the CPU backend, so everything is bit-identical:
 * logits, loss, gradients, the AdamW step, incremental decoding, greedy and beam results. */
#include "test_util.h"
#include "fenced_backend.h"
#include "model_parity.h"

static const char *const presets[] = {
    "transformer", "transformer++", "retnet", "mamba", "mamba-mha", "mamba-local", "mamba-encdec",
};

static void test_fenced_pointers_fault_on_the_host(void **state)
{
    (void)state;
    const mt_backend *be = fenced_backend();
    float *p = be->alloc(16 * sizeof(float)), host[16];
    assert_non_null(p);
    assert_true(((uintptr_t)p >> 62) & 1); /* not an address the host can use */
    for (int i = 0; i < 16; i++) host[i] = (float)i;
    be->upload(p, host, sizeof host);
    be->scale(p + 4, 8, 2.0f);
    float back[16];
    be->download(back, p, sizeof back);
    for (int i = 0; i < 16; i++) assert_true(back[i] == (i >= 4 && i < 12 ? 2.0f * i : (float)i));
    be->free(p);
}

static void test_every_architecture_runs_fenced(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof presets / sizeof *presets; i++) {
        parity_report r = model_parity(fenced_backend(), presets[i], 1);
        assert_true(r.logits == 0.0 && r.loss == 0.0 && r.grads == 0.0 && r.params == 0.0 && r.probes == 0.0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fenced_pointers_fault_on_the_host),
        cmocka_unit_test(test_every_architecture_runs_fenced),
    };
    return cmocka_run_group_tests_name("fenced_models", tests, NULL, NULL);
}
