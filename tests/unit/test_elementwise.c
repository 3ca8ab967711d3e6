/* The shared __host__ __device__ elementwise math against double-precision formulas. */
#include "test_util.h"
#include "math/elementwise.h"

static double rel(double a, double b) { return fabs(a - b) / (fabs(b) + 1e-30); }

static void test_silu_softplus(void **state)
{
    (void)state;
    double worst = 0;
    for (int i = 0; i <= 4000; i++) {
        double x = -40.0 + 80.0 * i / 4000.0;
        double s = 1.0 / (1.0 + exp(-x));
        double sp = x <= 20.0 ? log1p(exp(x)) : x;
        double gs = s * (1 + x * (1 - s));
        float xf = (float)x;
        if (fabs(x * s) > 1e-30) worst = fmax(worst, rel(mt_siluf(xf), x * s));
        worst = fmax(worst, rel(mt_softplusf(xf), sp));
        assert_true(fabs(mt_silu_gradf(xf) - gs) < 1e-6);
        assert_true(fabs(mt_softplus_gradf(xf) - (x <= 20.0 ? s : 1.0)) < 1e-6);
    }
    print_message("elementwise: worst relative error %.3g\n", worst);
    assert_true(worst < 1e-5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_silu_softplus),
    };
    return cmocka_run_group_tests_name("elementwise", tests, NULL, NULL);
}
