/* Attention's tile product and softmax rows (cpu_gemm_tiles.c) on each instruction set this CPU
 * has, against naive_gemm_tiles and the softmax in double (the other products:
 * test_backend_gemm.c).
 * Tolerances are stated per test as relative errors. */
#include "test_util.h"
#include "grad_check.h"
#include "backend/cpu/cpu_ops.h"

#include <math.h>
#include <sys/mman.h>
#include <unistd.h>

/* ---------------------------------------------------------------- tile product */
/* n floats that end where a page no access is allowed to begins: a read past them faults */
typedef struct {
    char *map;
    size_t len;
} guarded;

static float *guarded_floats(guarded *g, size_t n)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE), bytes = n * sizeof(float);
    g->len = (bytes + page - 1) / page * page + page;
    g->map = mmap(NULL, g->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(g->map != MAP_FAILED);
    assert_int_equal(mprotect(g->map + g->len - page, page, PROT_NONE), 0);
    return (float *)(g->map + g->len - page - bytes);
}

/* One tile product (cpu_gemm_tiles) against naive_gemm_tiles: A by rows or transposed, B rows
 * of N floats and more (never a multiple of 16 beyond N) whose last row ends at a page that
 * faults when read (the product reads no column from N on), beta 0 (over NaN) and 1, each
 * causal bound with A zero where the bound says it is; under
 * CPU_TILE_COLS_TO only the columns a row may see are compared, the others must be 0 or the
 * product's value. Returns the worst relative error. */
static double tiles_case(mt_rng *rng, cpu_rows_isa isa, int M, int N, int K, int trans,
                         cpu_tile_limit limit, int off, int beta)
{
    int ldb = N + (N % 3 == 0 ? 5 : 0), ldc = N + 5, lda = (trans ? M : K) + 3;
    float *a = gc_random((size_t)(trans ? K : M) * lda, rng, 1.0f);
    guarded gb;
    size_t nb = (size_t)(K - 1) * ldb + N; /* the last row ends at its Nth column */
    float *b = guarded_floats(&gb, nb);
    for (size_t i = 0; i < nb; i++) b[i] = (float)(mt_rng_uniform_double(rng) * 2.0 - 1.0);
    for (int r = 0; r < M; r++)
        for (int k = 0; k < K; k++) {
            int zero = (limit == CPU_TILE_K_TO && k > off + r) ||
                       (limit == CPU_TILE_K_FROM && k < r - off);
            if (zero) a[trans ? (size_t)k * lda + r : (size_t)r * lda + k] = 0.0f;
        }
    float *c1 = gc_random((size_t)M * ldc, rng, 1.0f);
    if (!beta)
        for (size_t i = 0; i < (size_t)M * ldc; i++) c1[i] = NAN;
    float *c2 = test_copy_floats(c1, (size_t)M * ldc), *c3 = test_copy_floats(c1, (size_t)M * ldc);
    cpu_tile_args t = {.M = M,
                       .N = N,
                       .K = K,
                       .alpha = 0.7f,
                       .a = a,
                       .a_row = trans ? 1 : (size_t)lda,
                       .a_k = trans ? (size_t)lda : 1,
                       .b = b,
                       .ldb = ldb,
                       .c = c1,
                       .ldc = ldc,
                       .beta = beta,
                       .limit = limit,
                       .off = off};
    assert_int_equal(cpu_gemm_tiles(isa, &t), 1);
    t.c = c2;
    naive_gemm_tiles(&t);
    t.c = c3, t.limit = CPU_TILE_ALL; /* what an unbounded product gives, for COLS_TO */
    naive_gemm_tiles(&t);
    double diff = 0.0, scale = 1e-30;
    for (int r = 0; r < M; r++)
        for (int c = 0; c < ldc; c++) {
            size_t i = (size_t)r * ldc + c;
            if (c >= N) { /* past N: untouched */
                assert_true(isnan(c1[i]) ? isnan(c2[i]) : c1[i] == c2[i]);
                continue;
            }
            assert_false(isnan(c1[i]));
            if (limit == CPU_TILE_COLS_TO && c > off + r) {
                assert_true(c1[i] == 0.0f ||
                            fabs((double)c1[i] - c3[i]) <= 1e-5 * fmax(1.0, fabs(c3[i])));
                continue;
            }
            diff = fmax(diff, fabs((double)c1[i] - c2[i]));
            scale = fmax(scale, fabs((double)c2[i]));
        }
    free(a), free(c1), free(c2), free(c3);
    munmap(gb.map, gb.len);
    return diff / scale;
}

static void test_gemm_tiles_vs_naive(void **state)
{
    (void)state;
    static const int Ms[] = {1, 3, 8, 13, 64, 70}, Ns[] = {1, 7, 16, 24, 40, 64, 65, 100},
                     Ks[] = {1, 5, 24, 64, 77};
    static const struct {
        cpu_rows_isa isa;
        const char *name;
    } kernels[] = {{CPU_ROWS_AVX2, "avx2"}, {CPU_ROWS_AVX512, "avx512"}};
    for (size_t ki = 0; ki < sizeof kernels / sizeof *kernels; ki++) {
        cpu_rows_isa isa = kernels[ki].isa;
        if (!cpu_gemm_rows_supported(isa)) {
            printf("backend: tile product, %s kernel: not on this CPU\n", kernels[ki].name);
            continue;
        }
        mt_rng rng;
        mt_rng_init(&rng, 12, 0);
        double worst = 0.0;
        int cases = 0;
        for (size_t mi = 0; mi < sizeof Ms / sizeof *Ms; mi++)
            for (size_t ni = 0; ni < sizeof Ns / sizeof *Ns; ni++)
                for (size_t k = 0; k < sizeof Ks / sizeof *Ks; k++)
                    for (int limit = CPU_TILE_ALL; limit <= CPU_TILE_K_FROM; limit++, cases++) {
                        int M = Ms[mi], N = Ns[ni], K = Ks[k], off = (int)(cases % 3) * 2 - 1;
                        worst = fmax(worst, tiles_case(&rng, isa, M, N, K, cases % 2,
                                                       (cpu_tile_limit)limit, off, cases / 2 % 2));
                    }
        printf("backend: tile product, %s (%d cases) max relative error %.2e (bound 1e-6)\n",
               kernels[ki].name, cases, worst);
        assert_true(worst < 1e-6);
    }
}

/* The tile path's softmax rows (cpu_tiles_softmax_row, cpu_tiles_softmax_backward_row) on each
 * instruction set this CPU has, against the softmax in double: rows of 1 to 70 keys, spans and
 * key masks of every kind, rows with no visible key all 0, a NaN score passed over where the
 * span or mask hides it. */
static void test_attention_softmax_rows(void **state)
{
    (void)state;
    static const struct {
        cpu_rows_isa isa;
        const char *name;
    } sets[] = {{CPU_ROWS_AVX2, "avx2"}, {CPU_ROWS_AVX512, "avx512"}};
    for (size_t si = 0; si < sizeof sets / sizeof *sets; si++) {
        if (!cpu_gemm_rows_supported(sets[si].isa)) {
            printf("backend: softmax rows, %s: not on this CPU\n", sets[si].name);
            continue;
        }
        mt_rng rng;
        mt_rng_init(&rng, 13, 0);
        double worst = 0.0, worst_back = 0.0;
        int empty = 0;
        for (int rep = 0; rep < 400; rep++) {
            int n = 1 + (int)mt_rng_below(&rng, 70);
            int lo = (int)mt_rng_below(&rng, (uint64_t)n + 1);
            int hi = lo + (int)mt_rng_below(&rng, (uint64_t)(n - lo) + 1);
            uint8_t km[80];
            for (int j = 0; j < n; j++) km[j] = mt_rng_below(&rng, 4) != 0;
            const uint8_t *mask = rep % 3 ? km : NULL;
            float *s = gc_random((size_t)n, &rng, 6.0f), *ds = gc_random((size_t)n, &rng, 1.0f);
            if (lo > 0) s[lo - 1] = NAN; /* hidden: outside the span */
            double ref[80], top = -INFINITY, sum = 0.0;
            for (int j = lo; j < hi; j++)
                if (!mask || mask[j]) top = fmax(top, s[j]);
            for (int j = 0; j < n; j++) {
                int vis = j >= lo && j < hi && (!mask || mask[j]);
                ref[j] = vis ? exp((double)s[j] - top) : 0.0;
                sum += ref[j];
            }
            assert_int_equal(cpu_tiles_softmax_row(sets[si].isa, s, n, lo, hi, mask), 1);
            empty += top == -INFINITY;
            double dot = 0.0;
            for (int j = 0; j < n; j++) {
                double p = top == -INFINITY ? 0.0 : ref[j] / sum;
                if (p == 0.0) assert_true(s[j] == 0.0f);
                worst = fmax(worst, fabs((double)s[j] - p));
                dot += (double)s[j] * ds[j];
            }
            float *ds2 = test_copy_floats(ds, (size_t)n);
            assert_int_equal(cpu_tiles_softmax_backward_row(sets[si].isa, ds2, s, n), 1);
            for (int j = 0; j < n; j++) {
                double want = (double)s[j] * (ds[j] - dot);
                worst_back = fmax(worst_back, fabs((double)ds2[j] - want) / fmax(1.0, fabs(want)));
            }
            free(s), free(ds), free(ds2);
        }
        printf("backend: softmax rows, %s: 400 rows (%d with no visible key), max error %.2e, "
               "backward %.2e (bound 1e-6)\n",
               sets[si].name, empty, worst, worst_back);
        assert_true(empty > 0 && worst < 1e-6 && worst_back < 1e-6);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gemm_tiles_vs_naive),
        cmocka_unit_test(test_attention_softmax_rows),
    };
    return cmocka_run_group_tests_name("gemm_tiles", tests, NULL, NULL);
}
