/* CUDA wiring: the build always links; without a device the GPU test skips with the reason. */
#include "test_util.h"
#include "cuda_check.h"
#include "backend/cpu/cpu_ops.h"
#include "math/elementwise.h"
#include "mtlab/backend.h"
#include "mtlab/device.h"
#include "mtlab/error.h"

#include <string.h>

/* 1 when a shared library whose name contains `name` is mapped into this process */
static int mapped(const char *name)
{
    FILE *f = fopen("/proc/self/maps", "r");
    assert_non_null(f);
    char line[1024];
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) found = strstr(line, name) != NULL;
    fclose(f);
    return found;
}

/* The CPU path maps no CUDA library (cudart and cuBLAS cost ~200 MB of RSS at load); asking for
 * a CUDA device loads the backend (in a build with CUDA), device or not. Runs first. */
static void test_cuda_loaded_only_when_asked(void **state)
{
    (void)state;
    const mt_backend *cpu = mt_backend_for("cpu", 0);
    assert_non_null(cpu);
    float *x = cpu->alloc(4 * sizeof *x);
    cpu->free(x);
    assert_false(mapped("libcudart"));
    assert_false(mapped("libcublas"));
    char why[256] = "";
    mt_cuda_devices(why, sizeof why);
#if MTLAB_HAVE_CUDA
    assert_true(mapped("libmtlab-cuda"));
    assert_true(mapped("libcudart"));
#else
    assert_false(mapped("libcudart"));
#endif
}

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
    const mt_backend *be = cuda_or_skip(0);
    if (!be) return;
    enum { N = 1000 };
    float x[N], y[N];
    for (int i = 0; i < N; i++) x[i] = -30.0f + 60.0f * (float)i / (N - 1);
    for (int i = 0; i < N; i++) y[i] = NAN; /* poison: unwritten elements fail */
    float *dx = be->alloc(sizeof x), *dy = be->alloc(sizeof y);
    assert_true(dx && dy);
    be->upload(dx, x, sizeof x);
    be->upload(dy, y, sizeof y);
    be->act_forward(MT_ACT_SILU, dy, dx, N);
    be->download(y, dy, sizeof y);
    be->free(dx);
    be->free(dy);
    for (int i = 0; i < N; i++)
        assert_true(fabsf(y[i] - mt_siluf(x[i])) <= 1e-6f * (1 + fabsf(x[i])));
}

/* Device names: cpu always works; the rest either give a CUDA backend or say exactly why not. */
/* The CPU names its BLAS kernels, and the hint appears exactly when the CPU runs wider ones
 * than are loaded, naming both and the variable that chooses them. */
static void test_cpu_blas_kernels(void **state)
{
    (void)state;
    const char *core = mt_cpu_blas_core();
    assert_non_null(core);
    assert_true(strlen(core) > 0);
    char hint[512] = "";
    const char *best = mt_cpu_blas_best_core();
    int h = mt_cpu_blas_hint(hint, sizeof hint);
    assert_int_equal(h, best != NULL);
    if (h) {
        assert_non_null(strstr(hint, core));
        assert_non_null(strstr(hint, best));
        assert_non_null(strstr(hint, "OPENBLAS_CORETYPE="));
    }
}

/* mtlab's own kernels are named: the few-row products' by this CPU's widest vectors, the int8
 * one as MTLAB_INT8_KERNEL forces it or as the CPU allows. */
static void test_cpu_own_kernels(void **state)
{
    (void)state;
    char line[256];
    mt_cpu_features f = mt_cpu_features_now();
    const char *got = mt_cpu_own_kernels(line, sizeof line);
    assert_ptr_equal(got, line);
    assert_non_null(strstr(line, f.avx512     ? "few-row products avx512"
                                 : f.avx2_fma ? "few-row products avx2"
                                              : "few-row products none"));
    setenv("MTLAB_INT8_KERNEL", "ref", 1);
    mt_cpu_own_kernels(line, sizeof line);
    assert_non_null(strstr(line, ", int8 ref"));
    setenv("MTLAB_INT8_KERNEL", "no-such-kernel", 1);
    mt_cpu_own_kernels(line, sizeof line);
    assert_non_null(strstr(line, "int8 none (MTLAB_INT8_KERNEL=no-such-kernel"));
    unsetenv("MTLAB_INT8_KERNEL");
    mt_cpu_own_kernels(line, sizeof line);
    __builtin_cpu_init();
    int vnni = f.avx512 && __builtin_cpu_supports("avx512vnni");
    assert_non_null(strstr(line, vnni ? ", int8 avx512-vnni" : ", int8 "));
}

/* Which BLAS runs which products: MTLAB_SGEMM is unset here, so the line names every library
 * the rule uses on this CPU, OpenBLAS's loaded core and BLIS's version and kernels (`mtlab devices`
 * with the variable set: tests/e2e/cli.sh). */
static void test_cpu_products(void **state)
{
    (void)state;
    unsetenv("MTLAB_SGEMM"); /* read once, on the first product or this call */
    char line[512];
    assert_ptr_equal(mt_cpu_products(line, sizeof line), line);
    char want[128];
    int level = cpu_sgemm_packed_cpu();
    if (level == CPU_PACKED_AVX512) {
        /* an AVX-512 CPU with full-rate 512-bit multiply-adds: the packed kernel's AVX-512 tiles
         * nearly everywhere, BLIS nowhere */
        assert_non_null(strstr(line, "mtlab's packed avx512 kernel: x W^T"));
        snprintf(want, sizeof want, "OpenBLAS (%s kernels): small", mt_cpu_blas_core());
        assert_non_null(strstr(line, " kernels): none"));
    } else if (level == CPU_PACKED_AVX2) {
        /* an AVX2 CPU without AVX-512: the packed kernel where OpenBLAS was */
        assert_non_null(strstr(line, "mtlab's packed avx2 kernel: x W^T"));
        snprintf(want, sizeof want, "OpenBLAS (%s kernels): small", mt_cpu_blas_core());
    } else {
        snprintf(want, sizeof want, "OpenBLAS (%s kernels): x W^T", mt_cpu_blas_core());
    }
    assert_non_null(strstr(line, want));
    assert_non_null(strstr(line, "; BLIS "));
    /* BLIS named with its products, or with none where its kernels are narrower than the CPU's
     * multiply-adds (cpu_blis_full_rate) */
    if (level != CPU_PACKED_AVX512)
        assert_non_null(strstr(line, cpu_blis_full_rate() ? " kernels): weight gradients"
                                                          : " kernels): none ("));
    assert_null(strstr(line, "MTLAB_SGEMM"));
}

/* The core chosen from the CPU's features: the widest they allow, and only over a narrower one
 * (OpenBLAS 0.3.21 gives a Xeon with AVX-512 Prescott's SSE3 kernels, Zen 4 Haswell's). */
static void test_blas_core_from_features(void **state)
{
    (void)state;
    const mt_cpu_features sse = {0, 0, 0}, avx2 = {1, 0, 0}, avx512 = {1, 1, 0}, bf16 = {1, 1, 1};
    static const struct {
        int features; /* 0 sse, 1 avx2, 2 avx512, 3 avx512 + bf16 */
        const char *loaded, *want;
    } cases[] = {
        {3, "Prescott", "Cooperlake"}, {2, "Prescott", "SkylakeX"},
        {1, "Prescott", "Haswell"},    {0, "Prescott", NULL},
        {3, "Haswell", "Cooperlake"},  {2, "Zen", "SkylakeX"},
        {1, "Haswell", NULL},          {1, "Zen", NULL},
        {3, "SkylakeX", NULL},         {2, "Cooperlake", NULL},
        {3, "SapphireRapids", NULL},   {1, "Nehalem", "Haswell"},
        {3, "unknown", "Cooperlake"},  {0, "unknown", NULL},
    };
    const mt_cpu_features *f[] = {&sse, &avx2, &avx512, &bf16};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *got = mt_blas_core_for(*f[cases[i].features], cases[i].loaded);
        if (!cases[i].want) {
            if (got) fail_msg("case %zu: %s -> %s, expected none", i, cases[i].loaded, got);
        } else if (!got || strcmp(got, cases[i].want)) {
            fail_msg("case %zu: %s -> %s, expected %s", i, cases[i].loaded, got ? got : "none",
                     cases[i].want);
        }
    }
}

static void test_backend_for_names(void **state)
{
    (void)state;
    assert_ptr_equal(mt_backend_for("cpu", 0), mt_backend_cpu());
    assert_ptr_equal(mt_backend_for(NULL, 1), mt_backend_cpu());
    const char *bad[] = {"gpu", "cuda:", "cuda:x", "cuda:-1", "cuda:0x", "cudax", "CPU", ""};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        mt_clear_error();
        assert_null(mt_backend_for(bad[i], 0));
        assert_non_null(strstr(mt_last_error(), bad[i][0] ? bad[i] : "''"));
    }
    char why[256] = "";
    if (mt_cuda_devices(why, sizeof why) == 0) {
        mt_clear_error();
        assert_null(mt_backend_for("cuda", 0));
        assert_non_null(strstr(mt_last_error(), "cuda:0: "));
        mt_clear_error();
        assert_null(mt_backend_for("cuda:3", 1));
        assert_non_null(strstr(mt_last_error(), "cuda:3: "));
    } else {
        const mt_backend *be = mt_backend_for("cuda:0", 0);
        assert_non_null(be);
        assert_string_equal(be->name, "cuda:0");
        assert_int_equal(be->host_memory, 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cuda_loaded_only_when_asked),
        cmocka_unit_test(test_device_count_never_fails),
        cmocka_unit_test(test_cuda_silu_matches_cpu),
        cmocka_unit_test(test_backend_for_names),
        cmocka_unit_test(test_cpu_blas_kernels),
        cmocka_unit_test(test_blas_core_from_features),
        cmocka_unit_test(test_cpu_own_kernels),
        cmocka_unit_test(test_cpu_products),
    };
    return cmocka_run_group_tests_name("device", tests, NULL, NULL);
}
