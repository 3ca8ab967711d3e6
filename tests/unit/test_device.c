/* CUDA wiring: the build always links; without a device the GPU test skips with the reason. */
#include "test_util.h"
#include "math/elementwise.h"
#include "mtlab/device.h"
#include "mtlab/error.h"

static void test_device_count_never_fails(void **state)
{
    (void)state;
    char why[256] = "";
    int n = mt_cuda_devices(why, sizeof why);
    assert_true(n >= 0);
    if (n == 0) assert_true(why[0] != '\0'); /* "no GPU" always comes with its reason */
}

static void test_cuda_silu_matches_cpu(void **state)
{
    (void)state;
    char why[256] = "";
    if (mt_cuda_devices(why, sizeof why) == 0) {
        print_message("skip: no CUDA device (%s)\n", why);
        skip();
    }
    enum { N = 1000 };
    float x[N], y[N];
    for (int i = 0; i < N; i++) x[i] = -30.0f + 60.0f * (float)i / (N - 1);
    for (int i = 0; i < N; i++) y[i] = NAN;                  /* poison: unwritten elements fail */
    assert_int_equal(mt_cuda_silu_check(y, x, N), 0);
    for (int i = 0; i < N; i++) assert_true(fabsf(y[i] - mt_siluf(x[i])) <= 1e-6f * (1 + fabsf(x[i])));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_device_count_never_fails),
        cmocka_unit_test(test_cuda_silu_matches_cpu),
    };
    return cmocka_run_group_tests_name("device", tests, NULL, NULL);
}
