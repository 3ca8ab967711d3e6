/* The CPU backend's matrix products against the naive reference backend: the backend's own
 * choice (few-row kernel, sgemv, OpenBLAS or BLIS by shape), each BLAS library on its own, the
 * shape rule that picks between them, BLIS's bits across thread counts, the few-row kernels
 * (cpu_gemm_rows.c) and the fp32 panels (cpu_gemm_panels.c, cpu_panel_tiles.c) on their own
 * (attention's tile product: test_gemm_tiles.c).
 * Tolerances are stated per test as relative errors. */
#include "test_util.h"
#include "grad_check.h"
#include "mtlab/backend.h"
#include "backend/cpu/cpu_ops.h"

#include <omp.h>
#include <pthread.h>
#include <stdatomic.h>

static const mt_backend *fast, *naive;

static int setup(void **state)
{
    (void)state;
    fast = mt_backend_cpu();
    naive = mt_backend_cpu_naive();
    unsetenv("MTLAB_SGEMM"); /* the shape rule, which test_gemm_libraries_vs_naive checks */
    return 0;
}

/* ---------------------------------------------------------------- gemm */
static cpu_rows_isa packed_isa; /* the packed kernel's tiles under test; NONE: its own pick */

/* The product under test: the backend's (lib < 0: its own kernels, sgemv, or the BLAS its shape
 * rule picks) or one library's sgemm (cpu_sgemm_with). */
static void gemm_by(int lib, int ta, int tb, int m, int n, int k, float alpha, const float *a,
                    int lda, const float *b, int ldb, float beta, float *c, int ldc)
{
    if (lib < 0) fast->gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    else if (lib == CPU_SGEMM_PACKED && packed_isa != CPU_ROWS_NONE)
        assert_int_equal(
            cpu_gemm_packed_with(packed_isa, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc),
            1);
    else cpu_sgemm_with((cpu_sgemm_lib)lib, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

/* One (m, n, k) product in all four transposes, at strides wider than the matrices; returns
 * the worst relative error against the naive backend and checks that beta 0 ignores NaN. */
static double gemm_case_by(int lib, mt_rng *rng, int m, int n, int k)
{
    const int pad = 3;
    double worst = 0.0;
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            int lda = (ta ? m : k) + pad, ldb = (tb ? k : n) + pad, ldc = n + pad;
            float *a = gc_random((size_t)(ta ? k : m) * lda, rng, 1.0f);
            float *b = gc_random((size_t)(tb ? n : k) * ldb, rng, 1.0f);
            float *c1 = gc_random((size_t)m * ldc, rng, 1.0f),
                  *c2 = test_copy_floats(c1, (size_t)m * ldc);
            gemm_by(lib, ta, tb, m, n, k, 0.7f, a, lda, b, ldb, 0.3f, c1, ldc);
            naive->gemm(ta, tb, m, n, k, 0.7f, a, lda, b, ldb, 0.3f, c2, ldc);
            worst = fmax(worst, max_rel(c1, c2, (size_t)m * ldc));
            /* beta = 0 ignores whatever c held, NaN included */
            for (size_t i = 0; i < (size_t)m * ldc; i++) c1[i] = c2[i] = NAN;
            gemm_by(lib, ta, tb, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c1, ldc);
            naive->gemm(ta, tb, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c2, ldc);
            for (int i = 0; i < m; i++)
                for (int j = 0; j < n; j++) {
                    assert_false(isnan(c1[i * ldc + j]));
                    assert_true(fabsf(c1[i * ldc + j] - c2[i * ldc + j]) <
                                1e-5f * fmaxf(1.0f, fabsf(c2[i * ldc + j])));
                }
            free(a), free(b), free(c1), free(c2);
        }
    return worst;
}

static double gemm_case(mt_rng *rng, int m, int n, int k) { return gemm_case_by(-1, rng, m, n, k); }

static void test_gemm_vs_naive(void **state)
{
    (void)state;
    mt_rng rng;
    mt_rng_init(&rng, 10, 0);
    /* a general shape, then one output row and one output column (the matrix-vector paths) */
    double worst = gemm_case(&rng, 13, 11, 17);
    worst = fmax(worst, gemm_case(&rng, 1, 11, 17));
    worst = fmax(worst, gemm_case(&rng, 13, 1, 17));
    printf("backend: gemm (3 shapes, 4 transposes, strides, alpha/beta) max relative error %.2e "
           "(bound 1e-6)\n",
           worst);
    assert_true(worst < 1e-6);
    /* batched: 3 problems at strides larger than the matrices */
    float *a = gc_random(3 * 300, &rng, 1.0f), *b = gc_random(3 * 300, &rng, 1.0f);
    float *c1 = gc_random(3 * 200, &rng, 1.0f), *c2 = test_copy_floats(c1, 600);
    fast->gemm_batched(0, 1, 8, 9, 10, 1.0f, a, 10, 300, b, 10, 300, 1.0f, c1, 9, 200, 3);
    naive->gemm_batched(0, 1, 8, 9, 10, 1.0f, a, 10, 300, b, 10, 300, 1.0f, c2, 9, 200, 3);
    printf("backend: gemm_batched max relative error %.2e (bound 1e-6)\n", max_rel(c1, c2, 600));
    assert_true(max_rel(c1, c2, 600) < 1e-6);
    free(a), free(b), free(c1), free(c2);
}

/* The three sgemm paths behind the CPU backend (OpenBLAS, BLIS, the packed kernel), each on its
 * own, then the backend on shapes its rule sends to each; and the rule itself, shape class by
 * shape class, as cpu_gemm.c's comment gives it. */
static void test_gemm_libraries_vs_naive(void **state)
{
    (void)state;
    mt_rng rng;
    mt_rng_init(&rng, 11, 0);
    static const char *const name[] = {"OpenBLAS", "BLIS", "packed"};
    for (int lib = CPU_SGEMM_OPENBLAS; lib <= CPU_SGEMM_PACKED; lib++) {
        if (lib == CPU_SGEMM_PACKED && !cpu_gemm_packed_supported()) continue;
        double worst = gemm_case_by(lib, &rng, 13, 11, 17);
        worst = fmax(worst, gemm_case_by(lib, &rng, 1, 11, 17));
        worst = fmax(worst, gemm_case_by(lib, &rng, 37, 45, 70));
        printf("backend: %s sgemm (3 shapes, 4 transposes, strides, alpha/beta) max relative "
               "error %.2e (bound 1e-6)\n",
               name[lib], worst);
        assert_true(worst < 1e-6);
    }
    /* through the backend: big enough for the rule to send the gradients' products to BLIS (or
     * the packed kernel, at two threads on an AVX2 CPU) */
    assert_int_equal(cpu_sgemm_pick_shape(0, 1, 1, 1, 0, 150, 120, 130), CPU_SGEMM_BLIS);
    double worst = gemm_case(&rng, 150, 120, 130);
    printf("backend: gemm at 150 x 120 x 130 (the libraries by the rule) max relative error "
           "%.2e (bound 1e-6)\n",
           worst);
    assert_true(worst < 1e-6);

    /* The rule on an AVX-512 CPU (packed 0) at one thread and two: thin k and small products
     * on OpenBLAS, */
    for (int t = 1; t <= 2; t++) {
        assert_int_equal(cpu_sgemm_pick_shape(0, 1, t, 0, 1, 4096, 384, 12), CPU_SGEMM_OPENBLAS);
        assert_int_equal(cpu_sgemm_pick_shape(0, 1, t, 1, 0, 4096, 384, 31), CPU_SGEMM_OPENBLAS);
        assert_int_equal(cpu_sgemm_pick_shape(0, 1, t, 1, 0, 64, 42, 64), CPU_SGEMM_OPENBLAS);
        assert_int_equal(cpu_sgemm_pick_shape(0, 1, t, 0, 0, 64, 64, 42), CPU_SGEMM_OPENBLAS);
        /* weight gradients (trans_a) on BLIS, */
        assert_int_equal(cpu_sgemm_pick_shape(0, 1, t, 1, 0, 168, 672, 4096), CPU_SGEMM_BLIS);
        assert_int_equal(cpu_sgemm_pick_shape(0, 1, t, 1, 0, 8000, 168, 262), CPU_SGEMM_BLIS);
        /* input gradients on BLIS through the vocabulary (k >= 4096), else on OpenBLAS, */
        assert_int_equal(cpu_sgemm_pick_shape(0, 1, t, 0, 0, 262, 168, 8000), CPU_SGEMM_BLIS);
        assert_int_equal(cpu_sgemm_pick_shape(0, 1, t, 0, 0, 4096, 168, 672), CPU_SGEMM_OPENBLAS);
        assert_int_equal(cpu_sgemm_pick_shape(0, 1, t, 0, 0, 4096, 168, 4095), CPU_SGEMM_OPENBLAS);
        /* x W^T on OpenBLAS, and any product with at most 32 output columns on BLIS */
        assert_int_equal(cpu_sgemm_pick_shape(0, 1, t, 0, 1, 4096, 672, 168), CPU_SGEMM_OPENBLAS);
        assert_int_equal(cpu_sgemm_pick_shape(0, 1, t, 0, 1, 262, 8000, 168), CPU_SGEMM_OPENBLAS);
        assert_int_equal(cpu_sgemm_pick_shape(0, 1, t, 0, 1, 4096, 33, 384), CPU_SGEMM_OPENBLAS);
        assert_int_equal(cpu_sgemm_pick_shape(0, 1, t, 0, 1, 4096, 32, 384), CPU_SGEMM_BLIS);
        assert_int_equal(cpu_sgemm_pick_shape(0, 1, t, 0, 1, 4096, 12, 384), CPU_SGEMM_BLIS);
        assert_int_equal(cpu_sgemm_pick_shape(0, 1, t, 0, 0, 4096, 12, 384), CPU_SGEMM_BLIS);
    }
    /* On an AVX2 CPU (packed 1): the packed kernel where OpenBLAS was, small products aside, */
    for (int t = 1; t <= 2; t++) {
        assert_int_equal(cpu_sgemm_pick_shape(1, 1, t, 0, 0, 64, 64, 42), CPU_SGEMM_OPENBLAS);
        assert_int_equal(cpu_sgemm_pick_shape(1, 1, t, 0, 1, 4096, 384, 12), CPU_SGEMM_PACKED);
        assert_int_equal(cpu_sgemm_pick_shape(1, 1, t, 0, 1, 4096, 672, 168), CPU_SGEMM_PACKED);
        assert_int_equal(cpu_sgemm_pick_shape(1, 1, t, 0, 0, 4096, 168, 672), CPU_SGEMM_PACKED);
        /* BLIS keeping the thin outputs and the vocabulary's input gradients, */
        assert_int_equal(cpu_sgemm_pick_shape(1, 1, t, 0, 1, 4096, 32, 384), CPU_SGEMM_BLIS);
        assert_int_equal(cpu_sgemm_pick_shape(1, 1, t, 0, 0, 262, 168, 8000), CPU_SGEMM_BLIS);
    }
    /* On an AVX-512 CPU whose 512-bit multiply-adds run at full rate (packed 2): at two threads
     * every product big enough on the packed kernel, thin ones and a vocabulary's included; at
     * one, OpenBLAS keeps the thin gradients */
    for (int b = 0; b <= 1; b++) {
        assert_int_equal(cpu_sgemm_pick_shape(2, b, 1, 0, 0, 64, 64, 42), CPU_SGEMM_OPENBLAS);
        assert_int_equal(cpu_sgemm_pick_shape(2, b, 2, 0, 0, 64, 64, 42), CPU_SGEMM_OPENBLAS);
        assert_int_equal(cpu_sgemm_pick_shape(2, b, 2, 0, 1, 262, 8000, 168), CPU_SGEMM_PACKED);
        assert_int_equal(cpu_sgemm_pick_shape(2, b, 2, 0, 0, 4096, 384, 12), CPU_SGEMM_PACKED);
        assert_int_equal(cpu_sgemm_pick_shape(2, b, 2, 1, 0, 16, 384, 4096), CPU_SGEMM_PACKED);
        assert_int_equal(cpu_sgemm_pick_shape(2, b, 1, 0, 1, 262, 8000, 168), CPU_SGEMM_PACKED);
        assert_int_equal(cpu_sgemm_pick_shape(2, b, 1, 0, 1, 262, 4095, 168), CPU_SGEMM_PACKED);
        assert_int_equal(cpu_sgemm_pick_shape(2, b, 1, 0, 1, 4096, 12, 384), CPU_SGEMM_PACKED);
        assert_int_equal(cpu_sgemm_pick_shape(2, b, 1, 0, 1, 4096, 384, 12), CPU_SGEMM_PACKED);
        assert_int_equal(cpu_sgemm_pick_shape(2, b, 1, 0, 0, 4096, 384, 16), CPU_SGEMM_OPENBLAS);
        assert_int_equal(cpu_sgemm_pick_shape(2, b, 1, 0, 0, 4096, 12, 384), CPU_SGEMM_OPENBLAS);
        assert_int_equal(cpu_sgemm_pick_shape(2, b, 1, 1, 0, 16, 384, 4096), CPU_SGEMM_OPENBLAS);
        assert_int_equal(cpu_sgemm_pick_shape(2, b, 1, 1, 0, 384, 12, 4096), CPU_SGEMM_OPENBLAS);
        assert_int_equal(cpu_sgemm_pick_shape(2, b, 1, 1, 0, 168, 672, 4096), CPU_SGEMM_PACKED);
        assert_int_equal(cpu_sgemm_pick_shape(2, b, 1, 0, 0, 262, 168, 8000), CPU_SGEMM_PACKED);
        assert_int_equal(cpu_sgemm_pick_shape(2, b, 1, 0, 0, 4096, 33, 384), CPU_SGEMM_PACKED);
    }
    /* and the weight gradients on BLIS at one thread, on the packed kernel at two (packed 1) */
    assert_int_equal(cpu_sgemm_pick_shape(1, 1, 1, 1, 0, 168, 672, 4096), CPU_SGEMM_BLIS);
    assert_int_equal(cpu_sgemm_pick_shape(1, 1, 2, 1, 0, 168, 672, 4096), CPU_SGEMM_PACKED);
    assert_int_equal(cpu_sgemm_pick_shape(1, 1, 2, 1, 0, 8000, 168, 262), CPU_SGEMM_PACKED);
    /* where BLIS's kernels are narrower than the CPU's multiply-adds (blis 0), what it took stays
     * on OpenBLAS (or the packed kernel) */
    for (int t = 1; t <= 2; t++) {
        assert_int_equal(cpu_sgemm_pick_shape(0, 0, t, 1, 0, 168, 672, 4096), CPU_SGEMM_OPENBLAS);
        assert_int_equal(cpu_sgemm_pick_shape(0, 0, t, 0, 0, 262, 168, 8000), CPU_SGEMM_OPENBLAS);
        assert_int_equal(cpu_sgemm_pick_shape(0, 0, t, 0, 1, 4096, 12, 384), CPU_SGEMM_OPENBLAS);
        assert_int_equal(cpu_sgemm_pick_shape(1, 0, t, 0, 1, 4096, 32, 384), CPU_SGEMM_PACKED);
    }
    assert_int_equal(cpu_sgemm_pick_shape(1, 0, 1, 1, 0, 168, 672, 4096), CPU_SGEMM_PACKED);
    /* this CPU's answer: BLIS's kernels as wide as the CPU's, or 512-bit multiply-adds no faster
     * than 256-bit ones (timed: about 2 on a Xeon with two 512-bit units, about 1 on a Zen 4) */
    double gain = cpu_fma512_gain();
    printf("backend: BLIS's kernels %d-bit, this core's 512-bit multiply-adds %.2fx its 256-bit "
           "ones: BLIS %s\n",
           cpu_blis_width(), gain, cpu_blis_full_rate() ? "takes its shapes" : "takes none");
    assert_true(gain > 0.5 && gain < 2.5);
    assert_int_equal(cpu_blis_full_rate(), cpu_blis_width() >= 512 || gain < 1.5);

    /* MTLAB_SGEMM unset here: the rule decides, for this CPU and thread count */
    assert_int_equal(cpu_sgemm_forced(), -1);
    int before = omp_get_max_threads();
    omp_set_num_threads(1);
    int level = cpu_sgemm_packed_cpu();
    assert_int_equal(cpu_sgemm_pick(1, 0, 168, 672, 4096), level == CPU_PACKED_AVX512
                                                               ? CPU_SGEMM_PACKED
                                                           : cpu_blis_full_rate() ? CPU_SGEMM_BLIS
                                                           : level                ? CPU_SGEMM_PACKED
                                                                   : CPU_SGEMM_OPENBLAS);
    /* the packed kernel's tiles on this CPU: AVX-512 where its multiply-adds run at full rate */
    assert_int_equal(level, !cpu_gemm_packed_supported()                ? CPU_PACKED_NONE
                            : !cpu_gemm_rows_supported(CPU_ROWS_AVX512) ? CPU_PACKED_AVX2
                            : cpu_fma512_gain() >= 1.5                  ? CPU_PACKED_AVX512
                                                                        : CPU_PACKED_NONE);
    assert_int_equal(cpu_sgemm_pick(0, 1, 4096, 672, 168),
                     cpu_sgemm_packed_cpu() ? CPU_SGEMM_PACKED : CPU_SGEMM_OPENBLAS);
    omp_set_num_threads(before);
}

/* The timed gain (cpu_fma512_gain) picks the product kernels, so every process must reach the
 * same side of 1.5 on one machine, busy or not: timed again 20 times while two threads (one a
 * core here) multiply beside it, each answer falls where the process's first one did. */
static atomic_int load_stop;

static void *multiply_until_stopped(void *arg)
{
    (void)arg;
    omp_set_num_threads(1);
    enum { D = 192 };
    float *a = calloc((size_t)D * D, sizeof(float)), *b = calloc((size_t)D * D, sizeof(float)),
          *c = calloc((size_t)D * D, sizeof(float));
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(c);
    for (int i = 0; i < D * D; i++) a[i] = b[i] = (float)(i % 7) * 0.125f;
    while (!atomic_load(&load_stop)) fast->gemm(0, 0, D, D, D, 1.0f, a, D, b, D, 0.0f, c, D);
    free(a);
    free(b);
    free(c);
    return NULL;
}

static void test_fma512_gain_under_load(void **state)
{
    (void)state;
    int full = cpu_fma512_gain() >= 1.5;
    atomic_store(&load_stop, 0);
    pthread_t load[2];
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&load[i], NULL, multiply_until_stopped, NULL), 0);
    double lo = 1e9, hi = 0.0;
    int same = 0;
    for (int r = 0; r < 20; r++) {
        double g = cpu_fma512_gain_measure();
        lo = g < lo ? g : lo;
        hi = g > hi ? g : hi;
        same += (g >= 1.5) == full;
    }
    atomic_store(&load_stop, 1);
    for (int i = 0; i < 2; i++) assert_int_equal(pthread_join(load[i], NULL), 0);
    printf("backend: 512-bit multiply-adds %.2fx 256-bit ones idle, %.2f-%.2fx in 20 timings under "
           "load\n",
           cpu_fma512_gain(), lo, hi);
    assert_int_equal(same, 20);
}

/* BLIS splits no sum across threads: the same product gives the same bits at one thread and at
 * two, and again on a second call (training runs stay reproducible at any thread count). */
static void test_gemm_blis_bits_across_threads(void **state)
{
    (void)state;
    mt_rng rng;
    mt_rng_init(&rng, 12, 0);
    const int m = 96, n = 80, k = 300;
    float *a = gc_random((size_t)k * m, &rng, 1.0f), *b = gc_random((size_t)k * n, &rng, 1.0f);
    float *c[3];
    int threads[3] = {1, 2, 2};
    int before = omp_get_max_threads();
    for (int i = 0; i < 3; i++) {
        c[i] = calloc((size_t)m * n, sizeof *c[i]);
        omp_set_num_threads(threads[i]);
        cpu_sgemm_with(CPU_SGEMM_BLIS, 1, 0, m, n, k, 1.0f, a, m, b, n, 0.0f, c[i], n);
    }
    omp_set_num_threads(before);
    assert_memory_equal(c[0], c[1], (size_t)m * n * sizeof *c[0]);
    assert_memory_equal(c[1], c[2], (size_t)m * n * sizeof *c[0]);
    for (int i = 0; i < 3; i++) free(c[i]);
    free(a), free(b);
}

/* mtlab's packed kernel (cpu_gemm_packed.c) on its own, with each set of tiles this CPU runs
 * (AVX2: 6 x 16; AVX-512: 6 x 16 to 6 x 64, a last one masked): short last tiles in m and n, k in
 * several blocks (KC 256: 600 as three of 200), rows in several blocks (MC 144) and shrunk blocks
 * for two threads, columns in two blocks (NC 4096, and 2,016 where 130 rows of k make 1 MiB of
 * panels), every transpose at strides wider than the
 * matrices, alpha, beta and beta 0 over NaN (gemm_case_by), a transposed op(A) both read where it
 * lies and copied into panels (rows wider than TRANS_A_IN_PLACE_MAX); then the same bits at one
 * thread and at two, as training at any thread count relies on, and from a transposed op(A) read
 * either way. */
static void test_gemm_packed_vs_naive(void **state)
{
    (void)state;
    if (!cpu_gemm_packed_supported()) {
        printf("backend: packed sgemm: not on this CPU (AVX2 + FMA)\n");
        skip();
    }
    static const int shapes[][3] = {{13, 11, 17},    {1, 11, 17},    {6, 16, 1},    {37, 45, 70},
                                    {150, 120, 130}, {300, 33, 600}, {7, 4100, 5},  {12, 96, 257},
                                    {20, 200, 40},   {1100, 20, 30}, {9, 2100, 130}};
    static const char *const isa_name[] = {"", "avx2", "avx512"};
    for (packed_isa = CPU_ROWS_AVX2; packed_isa <= CPU_ROWS_AVX512; packed_isa++) {
        if (!cpu_gemm_rows_supported(packed_isa)) {
            printf("backend: packed sgemm, %s tiles: not on this CPU\n", isa_name[packed_isa]);
            continue;
        }
        mt_rng rng;
        mt_rng_init(&rng, 13, 0);
        double worst = 0.0;
        for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++)
            worst = fmax(worst, gemm_case_by(CPU_SGEMM_PACKED, &rng, shapes[i][0], shapes[i][1],
                                             shapes[i][2]));
        printf("backend: packed sgemm, %s tiles (%zu shapes, 4 transposes, strides, alpha/beta) "
               "max relative error %.2e (bound 1e-6)\n",
               isa_name[packed_isa], sizeof shapes / sizeof *shapes, worst);
        assert_true(worst < 1e-6);

        /* one thread and two: the same floats, bit for bit, in every transpose, C split by rows
         * (taller than wide) and by columns, and by rows with k in nine blocks and a last panel
         * of 2 columns */
        static const int split[][3] = {{299, 70, 520}, {70, 299, 520}, {150, 130, 2100}};
        int before = omp_get_max_threads();
        for (int s = 0; s < 3; s++) {
            const int m = split[s][0], n = split[s][1], k = split[s][2];
            float *a = gc_random((size_t)m * k, &rng, 1.0f),
                  *b = gc_random((size_t)n * k, &rng, 1.0f);
            float *c0 = gc_random((size_t)m * n, &rng, 1.0f);
            for (int ta = 0; ta < 2; ta++)
                for (int tb = 0; tb < 2; tb++) {
                    float *c[2];
                    for (int t = 0; t < 2; t++) {
                        c[t] = test_copy_floats(c0, (size_t)m * n);
                        omp_set_num_threads(t + 1);
                        assert_int_equal(cpu_gemm_packed_with(packed_isa, ta, tb, m, n, k, 0.5f, a,
                                                              ta ? m : k, b, tb ? k : n, 1.0f, c[t],
                                                              n),
                                         1);
                    }
                    assert_memory_equal(c[0], c[1], (size_t)m * n * sizeof *c[0]);
                    free(c[0]), free(c[1]);
                }
            free(a), free(b), free(c0);
        }
        omp_set_num_threads(before);

        /* a transposed op(A) read where it lies by the AVX-512 tiles (rows 42 floats apart) and
         * copied into panels (the same values 1100 apart; the AVX2 tiles copy both): the same
         * floats, bit for bit */
        {
            const int m = 40, n = 50, k = 300, wide = 1100;
            float *a = gc_random((size_t)k * (m + 2), &rng, 1.0f),
                  *aw = calloc((size_t)k * wide, sizeof(float));
            float *b = gc_random((size_t)k * n, &rng, 1.0f),
                  *c0 = gc_random((size_t)m * n, &rng, 1.0f);
            for (int p = 0; p < k; p++)
                memcpy(aw + (size_t)p * wide, a + (size_t)p * (m + 2), sizeof(float) * m);
            float *c1 = test_copy_floats(c0, (size_t)m * n),
                  *c2 = test_copy_floats(c0, (size_t)m * n);
            assert_int_equal(
                cpu_gemm_packed_with(packed_isa, 1, 0, m, n, k, 0.5f, a, m + 2, b, n, 1.0f, c1, n),
                1);
            assert_int_equal(
                cpu_gemm_packed_with(packed_isa, 1, 0, m, n, k, 0.5f, aw, wide, b, n, 1.0f, c2, n),
                1);
            assert_memory_equal(c1, c2, (size_t)m * n * sizeof *c1);
            free(a), free(aw), free(b), free(c0), free(c1), free(c2);
        }
    }
    packed_isa = CPU_ROWS_NONE;
}

/* A weight gradient over k of 2,048 and more (cpu_gemm_packed.c gemm_halves): the floats of its
 * two halves of k summed apart (the first with alpha and beta into C, the second from zero) and
 * then added, bit for bit, on each instruction set; within float rounding of naive_gemm; beta 0
 * over NaN in C. */
static void test_gemm_packed_k_halves(void **state)
{
    (void)state;
    if (!cpu_gemm_packed_supported()) skip();
    const int m = 37, n = 45, k = 2100, h = k / 2, lda = m + 3, ldb = n + 2, ldc = n + 5;
    for (cpu_rows_isa isa = CPU_ROWS_AVX2; isa <= CPU_ROWS_AVX512; isa++) {
        if (!cpu_gemm_rows_supported(isa)) continue;
        mt_rng rng;
        mt_rng_init(&rng, 21, 0);
        float *a = gc_random((size_t)k * lda, &rng, 1.0f),
              *b = gc_random((size_t)k * ldb, &rng, 1.0f);
        float *c0 = gc_random((size_t)m * ldc, &rng, 1.0f);
        float *got = test_copy_floats(c0, (size_t)m * ldc),
              *want = test_copy_floats(c0, (size_t)m * ldc);
        float *naive_c = test_copy_floats(c0, (size_t)m * ldc),
              *second = calloc((size_t)m * n, sizeof(float));
        assert_non_null(second);
        assert_int_equal(
            cpu_gemm_packed_with(isa, 1, 0, m, n, k, 0.7f, a, lda, b, ldb, 0.3f, got, ldc), 1);
        assert_int_equal(
            cpu_gemm_packed_with(isa, 1, 0, m, n, h, 0.7f, a, lda, b, ldb, 0.3f, want, ldc), 1);
        assert_int_equal(cpu_gemm_packed_with(isa, 1, 0, m, n, k - h, 0.7f, a + (size_t)h * lda,
                                              lda, b + (size_t)h * ldb, ldb, 0.0f, second, n),
                         1);
        for (int i = 0; i < m; i++)
            for (int j = 0; j < n; j++) want[(size_t)i * ldc + j] += second[(size_t)i * n + j];
        assert_memory_equal(got, want, (size_t)m * ldc * sizeof *got);
        naive->gemm(1, 0, m, n, k, 0.7f, a, lda, b, ldb, 0.3f, naive_c, ldc);
        double e = max_rel(got, naive_c, (size_t)m * ldc);
        for (size_t i = 0; i < (size_t)m * ldc; i++) got[i] = NAN;
        assert_int_equal(
            cpu_gemm_packed_with(isa, 1, 0, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, got, ldc), 1);
        for (int i = 0; i < m; i++)
            for (int j = 0; j < n; j++) assert_false(isnan(got[(size_t)i * ldc + j]));
        printf(
            "backend: packed sgemm, k in halves (%d x %d x %d, %s tiles): max relative error %.2e "
            "(bound 1e-6), the halves' own floats\n",
            m, n, k, isa == CPU_ROWS_AVX512 ? "avx512" : "avx2", e);
        assert_true(e < 1e-6);
        free(a), free(b), free(c0), free(got), free(want), free(naive_c), free(second);
    }
}

/* Decoding's x W^T for few rows (cpu_gemm_rows.c): through the backend (whichever kernel this
 * CPU picks, or OpenBLAS), then each kernel this CPU runs on its own: every tile shape and its
 * short last tiles, panels made as w is read (8 to 128 rows with AVX-512), K with and without a
 * partial vector, strides wider than the rows, one row by a large matrix, and products split
 * between threads. */
static double gemm_rows_case(mt_rng *rng, int isa, int m, int n, int k)
{
    int lda = k + 2, ldb = k + 5, ldc = n + 1;
    float *a = gc_random((size_t)m * lda, rng, 1.0f), *b = gc_random((size_t)n * ldb, rng, 1.0f);
    float *c1 = gc_random((size_t)m * ldc, rng, 1.0f), *c2 = test_copy_floats(c1, (size_t)m * ldc);
    if (isa == CPU_ROWS_NONE) fast->gemm(0, 1, m, n, k, 0.7f, a, lda, b, ldb, 0.0f, c1, ldc);
    else assert_int_equal(cpu_gemm_rows_with(isa, m, n, k, 0.7f, a, lda, b, ldb, c1, ldc), 1);
    naive->gemm(0, 1, m, n, k, 0.7f, a, lda, b, ldb, 0.0f, c2, ldc);
    double e = max_rel(c1, c2, (size_t)m * ldc);
    free(a), free(b), free(c1), free(c2);
    return e;
}

static void test_gemm_rows_vs_naive(void **state)
{
    (void)state;
    static const int Ms[] = {1,  2,  3,  4,  5,  7,  8,  11, 12,  13,
                             16, 24, 32, 33, 35, 39, 40, 62, 100, 128},
                     Ns[] = {1, 5, 64, 67, 80}, Ks[] = {3, 64, 67, 80, 257};
    static const struct {
        int isa;
        const char *name;
    } kernels[] = {
        {CPU_ROWS_NONE, "backend"}, {CPU_ROWS_AVX2, "avx2"}, {CPU_ROWS_AVX512, "avx512"}};
    for (size_t ki = 0; ki < sizeof kernels / sizeof *kernels; ki++) {
        int isa = kernels[ki].isa;
        if (isa != CPU_ROWS_NONE && !cpu_gemm_rows_supported(isa)) {
            printf("backend: gemm x W^T for few rows, %s kernel: not on this CPU\n",
                   kernels[ki].name);
            continue;
        }
        mt_rng rng;
        mt_rng_init(&rng, 11, 0);
        double worst = gemm_rows_case(&rng, isa, 32, 1027, 67);
        /* the AVX-512 kernel's most rows (128) through the backend too */
        worst = fmax(worst, gemm_rows_case(&rng, isa, 128, 67, 1024));
        /* one row by a matrix of 2^22 floats or more: the backend's one-row case */
        worst = fmax(worst, gemm_rows_case(&rng, isa, 1, 16400, 257));
        int cases = 2;
        for (size_t mi = 0; mi < sizeof Ms / sizeof *Ms; mi++)
            for (size_t ni = 0; ni < sizeof Ns / sizeof *Ns; ni++)
                for (size_t k = 0; k < sizeof Ks / sizeof *Ks; k++, cases++)
                    worst = fmax(worst, gemm_rows_case(&rng, isa, Ms[mi], Ns[ni], Ks[k]));
        /* 4e-6, as for the panels' plain loops: from 8 rows on the AVX-512 kernel sums each
         * output in k order, one chain of 1024 multiply-adds in the deepest case (1.7e-6) */
        printf("backend: gemm x W^T for few rows, %s (%d shapes) max relative error %.2e "
               "(bound 4e-6)\n",
               kernels[ki].name, cases, worst);
        assert_true(worst < 4e-6);
    }
}

/* A row's floats do not depend on the rows beside it in the AVX-512 kernel, within each of its
 * two ways: up to 7 rows, the last 1 to 3 rows of a product take 2 x 8 tiles after its 4 x 4
 * tiles and come out as the same floats as in a 4 x 4 tile (the same row four times); from 8
 * rows on (panels made as w is read, tiles of 1 to 12 rows), every row comes out as in a
 * product of 8 rows that holds it 8 times, at any thread count. */
static void test_gemm_rows_tail_bits(void **state)
{
    (void)state;
    if (!cpu_gemm_rows_supported(CPU_ROWS_AVX512)) {
        printf("backend: gemm rows tail: no AVX-512 kernel on this CPU\n");
        return;
    }
    enum { N = 75, K = 131 };
    mt_rng rng;
    mt_rng_init(&rng, 12, 0);
    float *w = gc_random((size_t)N * K, &rng, 1.0f);
    int before = omp_get_max_threads(), checked = 0;
    for (int M = 5; M <= 41; M += 1) {
        omp_set_num_threads(M % 2 ? 1 : 2);
        float *x = gc_random((size_t)M * K, &rng, 1.0f), *y = malloc(sizeof(float) * M * N);
        float *xr = malloc(sizeof(float) * 8 * K), *yr = malloc(sizeof(float) * 8 * N);
        assert_int_equal(cpu_gemm_rows_with(CPU_ROWS_AVX512, M, N, K, 0.7f, x, K, w, K, y, N), 1);
        int copies = M < 8 ? 4 : 8, from = M < 8 ? M - M % 4 : 0;
        for (int r = from; r < M; r++, checked++) {
            for (int i = 0; i < copies; i++) memcpy(xr + (size_t)i * K, x + (size_t)r * K, K * 4);
            assert_int_equal(
                cpu_gemm_rows_with(CPU_ROWS_AVX512, copies, N, K, 0.7f, xr, K, w, K, yr, N), 1);
            for (int i = 0; i < copies; i++)
                assert_memory_equal(yr + (size_t)i * N, y + (size_t)r * N, N * sizeof(float));
        }
        free(x), free(y), free(xr), free(yr);
    }
    omp_set_num_threads(before);
    printf("backend: gemm rows, a row's floats beside others: %d rows checked\n", checked);
    free(w);
}

/* cpu_gemm_rows_part: a product taken in column ranges (as the fused Mamba step's threads take
 * it, cpu_mamba_step.c) gives the floats of the whole product, for every way of the kernel
 * (one row, the tiles, panels made as w is read) and ranges that start anywhere. */
static void test_gemm_rows_part_bits(void **state)
{
    (void)state;
    static const int Ms[] = {1, 3, 6, 8, 17, 128};
    enum { N = 203, K = 150 };
    mt_rng rng;
    mt_rng_init(&rng, 14, 0);
    float *w = gc_random((size_t)N * K, &rng, 1.0f);
    int ranges = 0;
    for (size_t mi = 0; mi < sizeof Ms / sizeof *Ms; mi++) {
        int M = Ms[mi];
        float *x = gc_random((size_t)M * K, &rng, 1.0f);
        float *whole = malloc(sizeof(float) * M * N), *parts = malloc(sizeof(float) * M * N);
        if (!cpu_gemm_rows(M, N, K, 1.0f, x, K, w, K, whole, N)) {
            printf("backend: gemm rows in parts: %d rows not taken by this CPU's kernel\n", M);
            free(x), free(whole), free(parts);
            continue;
        }
        for (int trial = 0; trial < 6; trial++) {
            int a = 1 + (int)mt_rng_below(&rng, N - 2);
            int b = a + (int)mt_rng_below(&rng, (uint64_t)(N - a));
            int cut[4] = {0, a, b, N};
            for (int p = 0; p < 3; p++, ranges++)
                assert_int_equal(
                    cpu_gemm_rows_part(M, cut[p], cut[p + 1], N, K, 1.0f, x, K, w, K, parts, N), 1);
            assert_memory_equal(whole, parts, sizeof(float) * M * N);
        }
        free(x), free(whole), free(parts);
    }
    printf("backend: gemm rows in parts: %d column ranges, the floats of the whole product\n",
           ranges);
    free(w);
}

/* ---------------------------------------------------------------- fp32 panels
 * The f32p copy (cpu_gemm_panels.c): its layout element by element, the plain loops over it
 * and each kernel this CPU runs (AVX2, AVX-512) against naive_gemm on the matrix it was made
 * from, at every window of output channels (row0, OC) of a matrix of 2 panels and a part, with
 * and without bias, for every tile of rows (AVX2: 1 to 6, two panels at once for 2-3 rows,
 * balanced tiles up to 39 rows; AVX-512: 1 to 12 rows against two panels or the last one,
 * balanced tiles up to 128 rows), K with and without whole vectors; the same floats at one and
 * two threads; and the backend's qlinear_forward for the kind, which for 1 row or more than
 * cpu_panels_max_m() runs the fp32 product itself. */
static void panels_reference(float *out, const float *x, const float *w, int row0,
                             const float *bias, int M, int OC, int K)
{
    naive->gemm(0, 1, M, OC, K, 1.0f, x, K, w + (size_t)row0 * K, K, 0.0f, out, OC);
    if (bias) naive->bias_add(out, bias, (size_t)M, OC);
}

static void test_gemm_panels_vs_naive(void **state)
{
    (void)state;
    enum { N = 37, K = 13 };
    mt_rng rng;
    mt_rng_init(&rng, 13, 0);
    float *w = gc_random((size_t)N * K, &rng, 1.0f), *bias = gc_random(N, &rng, 1.0f);
    mt_qmatrix q;
    assert_int_equal(cpu_panels_make(&q, w, N, K), 0);
    assert_int_equal(q.kind, MT_QMATRIX_F32P);
    assert_ptr_equal(q.f32, w);
    for (int p = 0; p < 3; p++)
        for (int k = 0; k < K; k++)
            for (int j = 0; j < CPU_PANEL; j++) {
                int r = p * CPU_PANEL + j;
                float want = r < N ? w[(size_t)r * K + k] : 0.0f;
                assert_true(q.panels[((size_t)p * K + k) * CPU_PANEL + j] == want);
            }
    static const int Ms[] = {1, 2, 3, 4, 5, 6, 7, 8, 11, 12, 13, 16, 17, 25, 39};
    static const cpu_rows_isa isas[] = {CPU_ROWS_AVX2, CPU_ROWS_AVX512};
    static const char *const isa_names[] = {"AVX2", "AVX-512"};
    int fast_kernel = cpu_panels_supported();
    double worst_naive = 0, worst[2] = {0, 0};
    int windows = 0;
    for (size_t mi = 0; mi < sizeof Ms / sizeof *Ms; mi++) {
        int M = Ms[mi];
        float *x = gc_random((size_t)M * K, &rng, 1.0f);
        float *want = malloc(sizeof(float) * M * N), *got = malloc(sizeof(float) * M * N);
        for (int row0 = 0; row0 < N; row0++)
            for (int OC = 1; row0 + OC <= N; OC++)
                for (int b = 0; b < 2; b++, windows++) {
                    const float *bs = b ? bias + row0 : NULL;
                    panels_reference(want, x, w, row0, bs, M, OC, K);
                    naive_panels_forward(got, x, &q, row0, bs, M, OC);
                    worst_naive = fmax(worst_naive, max_rel(got, want, (size_t)M * OC));
                    for (int ii = 0; ii < 2; ii++) {
                        if (!fast_kernel || !cpu_gemm_rows_supported(isas[ii])) continue;
                        for (int i = 0; i < M * OC; i++) got[i] = NAN;
                        cpu_panels_product_with(isas[ii], got, x, &q, row0, bs, M, OC);
                        /* every output written (max_rel passes over a NaN left in place) */
                        for (int i = 0; i < M * OC; i++) assert_false(isnan(got[i]));
                        worst[ii] = fmax(worst[ii], max_rel(got, want, (size_t)M * OC));
                    }
                }
        free(x), free(want), free(got);
    }
    cpu_panels_free(&q);
    /* relative to the largest output of a window: a window of one output near a cancellation
     * of 13 terms (with the bias) sits a little above float rounding; a wrong channel, row or k
     * is off by about 1 */
    printf("backend: fp32 panels, %d windows: plain loops max relative error %.2e", windows,
           worst_naive);
    for (int ii = 0; ii < 2; ii++)
        if (fast_kernel && cpu_gemm_rows_supported(isas[ii]))
            printf(", %s kernel %.2e", isa_names[ii], worst[ii]);
        else printf(", %s kernel not on this CPU", isa_names[ii]);
    printf(" (bound 4e-6)\n");
    assert_true(worst_naive < 4e-6);
    assert_true(worst[0] < 4e-6 && worst[1] < 4e-6);
    free(w), free(bias);
    if (!fast_kernel) return;

    /* larger: K with whole vectors and a part, channels shared between two threads, and the
     * same floats on one thread */
    static const int Ks[] = {64, 67, 257}, Ns2[] = {67, 1027};
    static const int Ms2[] = {2, 3, 16, 39, 64, 128};
    int saved = omp_get_max_threads();
    double worst2[2] = {0, 0};
    for (int ii = 0; ii < 2; ii++) {
        if (!cpu_gemm_rows_supported(isas[ii])) continue;
        for (size_t ki = 0; ki < sizeof Ks / sizeof *Ks; ki++)
            for (size_t ni = 0; ni < sizeof Ns2 / sizeof *Ns2; ni++)
                for (size_t mi = 0; mi < sizeof Ms2 / sizeof *Ms2; mi++) {
                    int k = Ks[ki], n = Ns2[ni], M = Ms2[mi];
                    float *wb = gc_random((size_t)n * k, &rng, 1.0f),
                          *bb = gc_random(n, &rng, 1.0f);
                    float *x = gc_random((size_t)M * k, &rng, 1.0f);
                    float *want = malloc(sizeof(float) * M * n),
                          *one = malloc(sizeof(float) * M * n),
                          *two = malloc(sizeof(float) * M * n);
                    assert_int_equal(cpu_panels_make(&q, wb, n, k), 0);
                    panels_reference(want, x, wb, 0, bb, M, n, k);
                    omp_set_num_threads(1);
                    cpu_panels_product_with(isas[ii], one, x, &q, 0, bb, M, n);
                    omp_set_num_threads(2);
                    cpu_panels_product_with(isas[ii], two, x, &q, 0, bb, M, n);
                    omp_set_num_threads(saved);
                    worst2[ii] = fmax(worst2[ii], max_rel(one, want, (size_t)M * n));
                    assert_memory_equal(one, two, sizeof(float) * M * n);
                    cpu_panels_free(&q);
                    free(wb), free(bb), free(x), free(want), free(one), free(two);
                }
        printf("backend: fp32 panels, %s kernel at K 64-257, N up to 1027, 2-128 rows, 1 and 2 "
               "threads: max relative error %.2e (bound 1e-6), the same floats at both\n",
               isa_names[ii], worst2[ii]);
        assert_true(worst2[ii] < 1e-6);
    }

    /* through the backend table: the CPU's makes the kind, the naive table declines it (1, no
     * copy); qlinear_forward of 1 row and of more rows than the kernel takes is the fp32 gemm
     * itself, bit for bit, and 2..cpu_panels_max_m() rows the kernel */
    enum { NB = 80, KB = 96 };
    float *wq = gc_random((size_t)NB * KB, &rng, 1.0f), *bq = gc_random(NB, &rng, 1.0f);
    assert_int_equal(naive->qmatrix_make(&q, MT_QMATRIX_F32P, wq, NB, KB), 1);
    assert_null(q.panels);
    assert_int_equal(fast->qmatrix_make(&q, MT_QMATRIX_F32P, wq, NB, KB), 0);
    int max_m = cpu_panels_max_m();
    const int rows[] = {1, 2, max_m, max_m + 1, max_m + 31};
    for (size_t ri = 0; ri < sizeof rows / sizeof *rows; ri++) {
        int M = rows[ri];
        float *x = gc_random((size_t)M * KB, &rng, 1.0f);
        float *got = malloc(sizeof(float) * M * NB), *want = malloc(sizeof(float) * M * NB);
        fast->qlinear_forward(got, x, &q, 16, bq, (size_t)M, NB - 16 - 5);
        if (M == 1 || M > max_m) {
            fast->gemm(0, 1, M, NB - 21, KB, 1.0f, x, KB, wq + (size_t)16 * KB, KB, 0.0f, want,
                       NB - 21);
            fast->bias_add(want, bq, (size_t)M, NB - 21);
            assert_memory_equal(got, want, sizeof(float) * M * (NB - 21));
        } else {
            panels_reference(want, x, wq, 16, bq, M, NB - 21, KB);
            assert_true(max_rel(got, want, (size_t)M * (NB - 21)) < 1e-6);
        }
        free(x), free(got), free(want);
    }
    fast->qmatrix_free(&q);
    assert_null(q.panels);
    free(wq), free(bq);
}

/* The packed kernel reading the panels as its packed W^T (cpu_gemm_packed_panels) gives the
 * floats of the kernel packing W itself (cpu_gemm_packed(0, 1, ...)), bit for bit, over rows
 * past one block (MC 144), columns past one block (NC 4096) and not whole panels, k in one and
 * in several blocks, from a panel past the first, one thread and two (rows split and columns
 * split); and the backend table's f32p product of more rows than the panel kernel takes is the
 * fp32 gemm itself where the packed kernel takes it. */
static void test_gemm_packed_panels_bits(void **state)
{
    (void)state;
    if (!cpu_gemm_packed_supported()) {
        printf("backend: packed kernel on ready panels: no AVX2 + FMA here, skipped\n");
        return;
    }
    static const int shapes[][3] = {{40, 67, 13}, {150, 33, 600}, {45, 4100, 96}, {300, 1027, 257}};
    mt_rng rng;
    mt_rng_init(&rng, 29, 0);
    int saved = omp_get_max_threads(), cases = 0;
    for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++) {
        int m = shapes[si][0], n = shapes[si][1], k = shapes[si][2], skip = 2; /* panels skipped */
        int rows = n + skip * CPU_PANEL;
        float *w = gc_random((size_t)rows * k, &rng, 1.0f),
              *x = gc_random((size_t)m * k, &rng, 1.0f);
        float *want = malloc(sizeof(float) * m * n), *got = malloc(sizeof(float) * m * n);
        mt_qmatrix q;
        assert_int_equal(cpu_panels_make(&q, w, rows, k), 0);
        const float *w0 = w + (size_t)skip * CPU_PANEL * k;
        const float *p0 = q.panels + (size_t)skip * CPU_PANEL * k;
        for (int threads = 1; threads <= 2; threads++, cases++) {
            omp_set_num_threads(threads);
            assert_int_equal(cpu_gemm_packed(0, 1, m, n, k, 1.0f, x, k, w0, k, 0.0f, want, n), 1);
            for (int i = 0; i < m * n; i++) got[i] = NAN;
            assert_int_equal(cpu_gemm_packed_panels(m, n, k, x, k, p0, got, n), 1);
            if (memcmp(got, want, sizeof(float) * m * n))
                fail_msg("%d x %d x %d at %d threads: the ready panels' product differs", m, n, k,
                         threads);
        }
        omp_set_num_threads(saved);
        cpu_panels_free(&q);
        free(w), free(x), free(want), free(got);
    }
    /* through the table: 64 x 272 x 256 is past the shape rule's small products (2^21) */
    enum { MB = 64, NB = 288, KB = 256 };
    float *wq = gc_random((size_t)NB * KB, &rng, 1.0f), *bq = gc_random(NB, &rng, 1.0f);
    float *x = gc_random((size_t)MB * KB, &rng, 1.0f);
    float *got = malloc(sizeof(float) * MB * NB), *want = malloc(sizeof(float) * MB * NB);
    mt_qmatrix q;
    if (fast->qmatrix_make(&q, MT_QMATRIX_F32P, wq, NB, KB) == 0) {
        fast->qlinear_forward(got, x, &q, 16, bq, MB, NB - 16);
        fast->gemm(0, 1, MB, NB - 16, KB, 1.0f, x, KB, wq + (size_t)16 * KB, KB, 0.0f, want,
                   NB - 16);
        fast->bias_add(want, bq, MB, NB - 16);
        assert_memory_equal(got, want, sizeof(float) * MB * (NB - 16));
        fast->qmatrix_free(&q);
    }
    printf("backend: packed kernel on ready panels, %d shapes x threads: the same floats as "
           "packing W, and through the backend table\n",
           cases);
    free(wq), free(bq), free(x), free(got), free(want);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gemm_vs_naive),
        cmocka_unit_test(test_gemm_libraries_vs_naive),
        cmocka_unit_test(test_fma512_gain_under_load),
        cmocka_unit_test(test_gemm_blis_bits_across_threads),
        cmocka_unit_test(test_gemm_packed_vs_naive),
        cmocka_unit_test(test_gemm_packed_k_halves),
        cmocka_unit_test(test_gemm_rows_vs_naive),
        cmocka_unit_test(test_gemm_rows_tail_bits),
        cmocka_unit_test(test_gemm_rows_part_bits),
        cmocka_unit_test(test_gemm_panels_vs_naive),
        cmocka_unit_test(test_gemm_packed_panels_bits),
    };
    return cmocka_run_group_tests_name("backend_gemm", tests, setup, NULL);
}
