/* The CPU backend shares an operation among threads only where it pays (backend/cpu/cpu_par.h):
 * a decoding step's small operations enter no OpenMP region and hand no job to the pool
 * (backend/cpu/cpu_pool.h), at one thread nothing does, and large operations still share their
 * work at two threads. Regions are counted by wrapping libgomp's GOMP_parallel, which every
 * `omp parallel` (an `if (0)` one included) compiles to, and jobs by the pool's own count
 * (thread_teams, omp_regions.h). */
#include "test_util.h"
#include "grad_check.h"
#include "mtlab/backend.h"
#include "mtlab/error.h"
#include "omp_regions.h"
#include "backend/cpu/cpu_pool.h"
#include "mtlab/model.h"
#include "mtlab/layers.h"
#include "backend/cpu/cpu_ops.h"

#include <omp.h>

/* The regions one call of each operation enters, at `threads` threads, on a decoding step's
 * sizes (batch 1, C 192, FFN 768, 4 heads, 33 cached keys, a vocabulary of 8000) or on sizes
 * on 128 rows. */
static long step_ops_regions(int threads, int scale)
{
    const mt_backend *be = mt_backend_cpu();
    mt_rng rng;
    mt_rng_init(&rng, 7, 0);
    const int C = 192, F = 768, H = 4, V = 8000;
    int B = scale, Tk = 33;
    float *x = gc_random((size_t)B * F, &rng, 1.0f), *y = gc_random((size_t)B * F, &rng, 1.0f);
    float *w = gc_random((size_t)F, &rng, 1.0f), *bias = gc_random((size_t)F, &rng, 1.0f);
    float *logits = gc_random((size_t)B * V, &rng, 1.0f), *p = calloc((size_t)B * V, 4);
    float *k = gc_random((size_t)B * Tk * C, &rng, 1.0f),
          *v = gc_random((size_t)B * Tk * C, &rng, 1.0f);
    float *table = gc_random((size_t)(Tk + 1) * C, &rng, 1.0f), *stats = calloc((size_t)2 * B, 4);
    int32_t ids[128] = {0}, best[128];
    omp_set_num_threads(threads);
    long before = thread_teams();
    be->bias_add(y, bias, (size_t)B, C);
    be->add(y, y, x, (size_t)B * C);
    be->axpy(y, x, (size_t)B * C, 0.5f);
    be->scale(y, (size_t)B * C, 0.5f);
    be->mul(y, y, x, (size_t)B * C);
    be->act_forward(MT_ACT_RELU, y, x, (size_t)B * F);
    be->gate_forward(y, x, x, (size_t)B * C);
    be->layernorm_forward(y, stats, stats + B, x, w, bias, (size_t)B, C, 1e-5f);
    be->rmsnorm_forward(y, stats, x, w, (size_t)B, C, 1e-5f);
    be->embedding_forward(y, ids, table, (size_t)B, C, 1.0f);
    be->positions_add(y, table, B, 1, C, Tk);
    be->argmax_rows(best, logits, (size_t)B, V);
    be->softmax(p, logits, (size_t)B, V);
    be->log_softmax(p, logits, (size_t)B, V);
    mt_attn_desc d = {.B = B, .H = H, .Tq = 1, .Tk = Tk, .Dh = C / H, .scale = 0.1f};
    be->attention_forward(y, NULL, x, k, v, &d);
    long n = thread_teams() - before;
    free(x), free(y), free(w), free(bias), free(logits), free(p), free(k), free(v), free(table);
    free(stats);
    return n;
}

static void test_small_ops_enter_no_region(void **state)
{
    (void)state;
    int saved = omp_get_max_threads();
    long two = step_ops_regions(2, 1), one = step_ops_regions(1, 1);
    long large_one = step_ops_regions(1, 128), large_two = step_ops_regions(2, 128);
    omp_set_num_threads(saved);
    print_message("teams of a step's 15 operations: %ld at 2 threads, %ld at 1; 128 "
                  "rows: %ld at 1 thread, %ld at 2\n",
                  two, one, large_one, large_two);
    assert_int_equal(two, 0);
    assert_int_equal(one, 0);
    assert_int_equal(large_one, 0);
    assert_int_equal(large_two, 15); /* large ones still share their work */
}

/* One row by a matrix: forks at two threads from 2^15 multiply-adds on (a 192 x 192 layer), not
 * below (128 x 192), never at one thread. Only on CPUs whose few-row kernel takes one row
 * (AVX-512). */
static void test_one_row_products(void **state)
{
    (void)state;
    if (!cpu_gemm_rows_supported(CPU_ROWS_AVX512)) {
        print_message("skipped: no AVX-512 on this CPU\n");
        return;
    }
    const mt_backend *be = mt_backend_cpu();
    mt_rng rng;
    mt_rng_init(&rng, 3, 0);
    float *x = gc_random(768, &rng, 1.0f), *w = gc_random((size_t)8000 * 192, &rng, 1.0f);
    float *y = calloc(8000, 4);
    int saved = omp_get_max_threads();
    omp_set_num_threads(2);
    long before = thread_teams();
    be->gemm(0, 1, 1, 128, 192, 1.0f, x, 192, w, 192, 0.0f, y, 128);
    long small = thread_teams() - before;
    before = thread_teams();
    be->gemm(0, 1, 1, 192, 192, 1.0f, x, 192, w, 192, 0.0f, y, 192);
    be->gemm(0, 1, 1, 192, 768, 1.0f, x, 768, w, 768, 0.0f, y, 192);
    be->gemm(0, 1, 1, 8000, 192, 1.0f, x, 192, w, 192, 0.0f, y, 8000);
    long large = thread_teams() - before;
    omp_set_num_threads(1);
    before = thread_teams();
    be->gemm(0, 1, 1, 8000, 192, 1.0f, x, 192, w, 192, 0.0f, y, 8000);
    long large_one = thread_teams() - before;
    omp_set_num_threads(saved);
    print_message("teams at 2 threads: %ld for 1 x 128 x 192, %ld for 1 x 192 x 192, 1 x 192 x "
                  "768 and 1 x 8000 x 192 (%ld for the last at 1 thread)\n",
                  small, large, large_one);
    assert_int_equal(small, 0);
    assert_int_equal(large, 3);
    assert_int_equal(large_one, 0);
    free(x), free(w), free(y);
}

/* The OpenMP regions and pool jobs of 3 decoding steps of a Mamba mixer of mamba-small's shape
 * (C 192, d_inner 384) after a prefill of 2 tokens, at batch B and `threads` threads */
static void mamba_step_teams(int B, int threads, long *regions, long *jobs)
{
    mt_mamba_config cfg;
    mt_mamba_config_default(&cfg, 192);
    mt_rng rng;
    mt_rng_init(&rng, 11, 0);
    mt_mamba_params p;
    float *params = gc_random(mt_mamba_params_count(&cfg), &rng, 0.1f);
    mt_mamba_params_point(&p, params, &cfg);
    float *acts = calloc(mt_mamba_acts_count(&cfg, B, 2), 4);
    float *st = calloc(mt_mamba_state_count(&cfg, B), 4);
    float *x = gc_random((size_t)B * 2 * 192, &rng, 1.0f), *y = calloc((size_t)B * 2 * 192, 4);
    mt_mamba_acts a;
    mt_mamba_state s;
    mt_mamba_state_point(&s, st, &cfg, B);
    mt_mamba_acts_point(&a, acts, &cfg, B, 2);
    const mt_backend *be = mt_backend_cpu();
    int saved = omp_get_max_threads();
    omp_set_num_threads(threads);
    mt_mamba_forward(be, y, &a, x, &p, &(mt_mamba_call){.cfg = &cfg, .B = B, .T = 2, .state = &s});
    mt_mamba_acts_point(&a, acts, &cfg, B, 1);
    long r0 = omp_regions(), j0 = cpu_pool_jobs();
    for (int t = 0; t < 3; t++) mt_mamba_step(be, y, &a, x, &p, &cfg, &s, B);
    *regions = omp_regions() - r0;
    *jobs = cpu_pool_jobs() - j0;
    omp_set_num_threads(saved);
    free(params), free(acts), free(st), free(x), free(y);
}

/* A Mamba decoding step at two threads is four pool jobs and no OpenMP region: the backend's
 * mamba_step shares the channels of in_proj, conv and SiLU, then x_proj and dt_proj (at batch 1
 * x_proj's rows, and dt_proj's channels go with the next job), then the scan and gate, then
 * out_proj's rows, each phase one job whose parts a thread takes as it comes
 * free, where the operations one by one made two regions at batch 1 (in_proj and out_proj) and
 * four at batch 4 (x and z, the scan, out_proj), with the small operations between them on one
 * thread; none at one thread. Batch 1 only on CPUs whose few-row kernel takes one row. */
static void test_mamba_step_is_four_jobs(void **state)
{
    (void)state;
    int one_row = cpu_gemm_rows_part(1, 0, 0, 768, 192, 1.0f, NULL, 192, NULL, 192, NULL, 768);
    long r1 = 0, j1 = 12, r4, j4, r_one, j_one;
    if (one_row) mamba_step_teams(1, 2, &r1, &j1);
    mamba_step_teams(4, 2, &r4, &j4);
    mamba_step_teams(4, 1, &r_one, &j_one);
    print_message("3 mamba-small-shaped mixer steps: %ld regions and %ld jobs at batch 1, %ld and "
                  "%ld at batch 4 (2 threads), %ld and %ld at batch 4, 1 thread%s\n",
                  r1, j1, r4, j4, r_one, j_one,
                  one_row ? "" : " (batch 1 skipped: the few-row kernel takes no single row)");
    assert_int_equal(r1, 0);
    assert_int_equal(j1, 12);
    assert_int_equal(r4, 0);
    assert_int_equal(j4, 12);
    assert_int_equal(r_one + j_one, 0);
}

/* The regions and jobs of decoding 2 rows of a fixture model at one thread: a prefill (for
 * Marian the encoder and the cross-attention caches too) and 5 steps. */
static long decode_regions(const char *name, const mt_batch *b)
{
    char dir[128];
    snprintf(dir, sizeof dir, "tests/fixtures/models/%s", name);
    mt_model *m = mt_model_load(dir, mt_backend_cpu(), 0);
    if (!m) fail_msg("%s", mt_last_error());
    int saved = omp_get_max_threads();
    omp_set_num_threads(1);
    long before = thread_teams();
    mt_decode_state *st = mt_decode_state_new(m, 2, b->T + 6, b->S);
    assert_non_null(st);
    float *logits = malloc((size_t)2 * mt_model_get_config(m)->vocab_size * sizeof(float));
    assert_int_equal(mt_model_prefill(m, st, b, logits), 0);
    int32_t next[2] = {11, 20};
    for (int t = 0; t < 5; t++) assert_int_equal(mt_model_step(m, st, next, logits), 0);
    long n = thread_teams() - before;
    omp_set_num_threads(saved);
    free(logits);
    mt_decode_state_free(st);
    mt_model_free(m);
    return n;
}

/* At one thread nothing forks, in any unit a fixture has: attention, cross-attention and FFN
 * (marian), Mamba's conv and scan (mamba), rotary attention and the gated MLP (llama). */
static void test_decode_at_one_thread_enters_no_region(void **state)
{
    (void)state;
    const int32_t src[2 * 7] = {17, 23, 5, 42, 9, 61, 1, 30, 8, 55, 12, 1, 0, 0};
    const int32_t start[2] = {3, 3};
    const int32_t prompt[2 * 5] = {17, 23, 5, 42, 2, 0, 30, 8, 55, 2};
    mt_batch enc_dec = {.B = 2, .T = 1, .ids = start, .S = 7, .src = src};
    mt_batch dec_only = {.B = 2, .T = 5, .ids = prompt};
    long marian = decode_regions("marian", &enc_dec), mamba = decode_regions("mamba", &dec_only);
    long llama = decode_regions("llama", &dec_only);
    print_message("regions and jobs of a prefill and 5 steps at one thread: %ld marian, %ld mamba, "
                  "%ld llama\n",
                  marian, mamba, llama);
    assert_int_equal(marian, 0);
    assert_int_equal(mamba, 0);
    assert_int_equal(llama, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_ops_enter_no_region),
        cmocka_unit_test(test_one_row_products),
        cmocka_unit_test(test_decode_at_one_thread_enters_no_region),
        cmocka_unit_test(test_mamba_step_is_four_jobs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
