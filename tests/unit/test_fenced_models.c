/* Every architecture on the fenced backend (tests/unit/fenced_backend.h): the engine reaches
 * backend memory only through the backend, so what a GPU backend needs from the model code is
 * checked on every machine. Same arithmetic as the CPU backend, so everything is bit-identical:
 * logits, loss, gradients, the AdamW step, incremental decoding, greedy and beam results. */
#include "test_util.h"

#include <stdio.h>
#include <string.h>
#include "fenced_backend.h"
#include "model_parity.h"

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

/* Bit-identical to the CPU, and the pure Mamba's decoding steps were recorded and replayed
 * (its parity run decodes with steps of unchanging rows, a beam reorder among them); no other
 * architecture's steps are position-free, so none records. */
static void test_every_architecture_runs_fenced(void **state)
{
    (void)state;
    fenced_graph_counts_take();
    const char *const *presets = mt_model_arch_list(); /* every architecture of the registry */
    for (size_t i = 0; presets[i]; i++) {
        parity_report r = model_parity(fenced_backend(), presets[i], 1);
        assert_true(r.logits == 0.0 && r.loss == 0.0 && r.grads == 0.0 && r.params == 0.0 &&
                    r.probes == 0.0 && r.attr == 0.0);
        fenced_graph_counts c = fenced_graph_counts_take();
        printf("%-14s recorded %d, replayed %d, failed %d\n", presets[i], c.recorded, c.replayed,
               c.failed);
        assert_int_equal(c.failed, 0);
        if (!strcmp(presets[i], "mamba")) {
            assert_true(c.recorded >= 1);
            assert_true(c.replayed >= 3 * c.recorded);
        } else {
            assert_int_equal(c.recorded, 0);
            assert_int_equal(c.replayed, 0);
        }
    }
}

/* When recording fails (an operation the backend cannot record; nothing recorded runs), the
 * steps run op by op and the results do not change. */
static void test_failed_recordings_fall_back(void **state)
{
    (void)state;
    fenced_graph_counts_take();
    fenced_fail_recordings(1);
    parity_report r = model_parity(fenced_backend(), "mamba", 1);
    fenced_fail_recordings(0);
    fenced_graph_counts c = fenced_graph_counts_take();
    assert_true(r.logits == 0.0 && r.probes == 0.0);
    assert_true(c.failed >= 1);
    assert_int_equal(c.recorded, 0);
    assert_int_equal(c.replayed, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fenced_pointers_fault_on_the_host),
        cmocka_unit_test(test_every_architecture_runs_fenced),
        cmocka_unit_test(test_failed_recordings_fall_back),
    };
    return cmocka_run_group_tests_name("fenced_models", tests, NULL, NULL);
}
