/* int8 linear layers (docs/quantization.md): every kernel this CPU runs against the reference
 * (bit-exact floats, odd sizes, rows 1 and 16, windows of channels, the extremes of the
 * range), the packed layout, the quantization round trip, an int8 linear against fp32, the weight
 * lookup by address, and every architecture's logits in int8 against fp32 (forward, prefill and
 * steps). */
#include "test_util.h"
#include "model_parity.h"

#include "backend/cpu/cpu_ops.h"
#include "mtlab/error.h"
#include "omp_regions.h"
#include "mtlab/runner.h"
#include "mtlab/layers.h"
#include "mtlab/model.h"
#include "mtlab/rng.h"

#include <omp.h>
#include <pthread.h>

#define V TINY_MODEL_VOCAB

static const char *const fast_kernels[] = {"avx2", "avx512-vnni"};

/* n int8 values in [-127, 127] (extreme: all +-127, the largest products), rows of C
 * zero padded to ld */
static int8_t *random_rows(mt_rng *rng, int rows, int C, int ld, int extreme)
{
    int8_t *q = calloc((size_t)rows * ld, 1);
    for (int r = 0; r < rows; r++)
        for (int k = 0; k < C; k++) {
            uint32_t u = (uint32_t)(mt_rng_uniform(rng) * 255.0f);
            q[(size_t)r * ld + k] = extreme ? (u & 1 ? 127 : -127) : (int8_t)((int)(u % 255) - 127);
        }
    return q;
}

/* A packed matrix (cpu_ops.h's layout) of the given int8 rows (rows, ld), with its sums and
 * the given scales: what cpu_qmatrix_make makes from floats, from chosen integers. */
static mt_qmatrix pack(const int8_t *rows_q, int rows, int C, int ld, const float *scale)
{
    int padded = (rows + CPU_INT8_BLOCK - 1) / CPU_INT8_BLOCK * CPU_INT8_BLOCK;
    mt_qmatrix q = {.kind = MT_QMATRIX_INT8, .rows = rows, .cols = C, .ld = ld};
    q.q = calloc((size_t)padded * ld, 1);
    q.scale = malloc((size_t)padded * sizeof *q.scale);
    q.sum = calloc((size_t)padded, sizeof *q.sum);
    for (int r = 0; r < padded; r++) {
        q.scale[r] = r < rows ? scale[r] : 1.0f;
        for (int k = 0; r < rows && k < ld; k++) {
            q.q[cpu_int8_at(ld, r, k)] = rows_q[(size_t)r * ld + k];
            q.sum[r] += rows_q[(size_t)r * ld + k];
        }
    }
    return q;
}

static void unpack_free(mt_qmatrix *q) { free(q->q), free(q->scale), free(q->sum); }

/* out (M, N + 3) of kernel k on channels j0 .. j0+N: x shifted to u8 where the kernel wants */
static void product(const cpu_int8_kernel *k, float *out, const int8_t *x, const float *xs, int M,
                    const mt_qmatrix *w, int j0, int N, const float *bias)
{
    size_t n = (size_t)M * w->ld;
    int8_t *xk = malloc(n);
    for (size_t i = 0; i < n; i++) xk[i] = k->x_unsigned ? (int8_t)(x[i] ^ 0x80) : x[i];
    cpu_int8_call c = {.out = out,
                       .ldo = (size_t)N + 3,
                       .xq = xk,
                       .xs = xs,
                       .M = M,
                       .w = w,
                       .j0 = j0,
                       .N = N,
                       .bias = bias};
    k->product(&c);
    free(xk);
}

/* Every fast kernel against the reference: the same floats bit for bit (the int32 sums are
 * exact, the dequantization one order of operations), at odd sizes, rows 1 and 16, windows of
 * channels that start and end inside a block (Mamba's row slices), with and without a bias,
 * and at the extremes +-127; nothing outside the window is written. */
static void test_kernels_match_reference_exactly(void **state)
{
    (void)state;
    const cpu_int8_kernel *ref = cpu_int8_kernel_named("ref");
    assert_non_null(ref);
    const int Ms[] = {1, 2, 3, 16, 17, 70}, Ns[] = {1, 5, 8, 16, 17, 33, 70, 130},
              Cs[] = {1, 7, 63, 64, 65, 130, 300};
    mt_rng rng;
    mt_rng_init(&rng, 11, 0);
    int ran = 0;
    for (size_t f = 0; f < sizeof fast_kernels / sizeof *fast_kernels; f++) {
        const cpu_int8_kernel *k = cpu_int8_kernel_named(fast_kernels[f]);
        if (!k) {
            printf("  (this CPU does not run the %s kernel)\n", fast_kernels[f]);
            continue;
        }
        ran++;
        for (size_t a = 0; a < 6; a++)
            for (size_t b = 0; b < 8; b++)
                for (size_t c = 0; c < 7; c++)
                    for (int extreme = 0; extreme < 2; extreme++) {
                        int M = Ms[a], N = Ns[b], C = Cs[c], ld = cpu_int8_ld(C), ldc = N + 3;
                        /* the window starts at 0, or inside the second block */
                        int j0 = (int)(b + c + extreme) % 2 ? 0 : 19, rows = j0 + N + 2;
                        int8_t *x = random_rows(&rng, M, C, ld, extreme);
                        int8_t *wq = random_rows(&rng, rows, C, ld, extreme);
                        float *xs = malloc((size_t)M * sizeof *xs),
                              *scale = malloc((size_t)rows * sizeof *scale),
                              *bias = malloc((size_t)N * sizeof *bias);
                        for (int m = 0; m < M; m++) xs[m] = 0.01f + mt_rng_uniform(&rng);
                        for (int j = 0; j < rows; j++) scale[j] = 0.01f + mt_rng_uniform(&rng);
                        for (int j = 0; j < N; j++) bias[j] = mt_rng_uniform(&rng) - 0.5f;
                        mt_qmatrix w = pack(wq, rows, C, ld, scale);
                        float *want = malloc((size_t)M * ldc * sizeof *want);
                        float *got = malloc((size_t)M * ldc * sizeof *got);
                        for (size_t i = 0; i < (size_t)M * ldc; i++) want[i] = got[i] = -7.0f;
                        const float *bs = (a + b) % 2 ? bias : NULL;
                        product(ref, want, x, xs, M, &w, j0, N, bs);
                        product(k, got, x, xs, M, &w, j0, N, bs);
                        for (int m = 0; m < M; m++)
                            for (int j = 0; j < ldc; j++)
                                if (memcmp(&got[m * ldc + j], &want[m * ldc + j], sizeof(float)))
                                    fail_msg("%s M=%d N=%d C=%d j0=%d bias=%d row %d column %d: "
                                             "%.9g, reference %.9g",
                                             k->name, M, N, C, j0, bs != NULL, m, j,
                                             got[m * ldc + j], want[m * ldc + j]);
                        for (int m = 0; m < M; m++)
                            for (int j = N; j < ldc; j++) assert_true(got[m * ldc + j] == -7.0f);
                        unpack_free(&w);
                        free(x), free(wq), free(xs), free(scale), free(bias), free(want), free(got);
                    }
    }
    printf("  %d fast kernel(s) checked against the reference\n", ran);
}

/* the reference itself against products written out by hand (scales 1: the sums as floats) */
static void test_reference_kernel_by_hand(void **state)
{
    (void)state;
    int8_t x[2 * 64] = {0}, w[3 * 64] = {0};
    x[0] = 1, x[1] = -2, x[2] = 127;
    x[64] = -127, x[65] = -127;
    w[0] = 3, w[1] = 4, w[2] = -1;
    w[64] = 127, w[65] = 127;
    w[128 + 63] = 5;
    const float ones[3] = {1, 1, 1}, bias[3] = {0.5f, 0, -1};
    mt_qmatrix q = pack(w, 3, 64, 64, ones);
    float out[2 * 6];
    product(cpu_int8_kernel_named("ref"), out, x, ones, 2, &q, 0, 3, bias);
    const float want[6] = {3 - 8 - 127 + 0.5f, 127 - 254,      -1,
                           -381 - 508 + 0.5f,  -2 * 127 * 127, -1};
    for (int i = 0; i < 6; i++) assert_float_equal(out[(i / 3) * 6 + i % 3], want[i], 0.0);
    unpack_free(&q);
}

/* The packed layout: 4 consecutive k of 16 channels per 64 bytes, blocks of 16 channels
 * ld * 16 bytes apart */
static void test_packed_layout(void **state)
{
    (void)state;
    assert_int_equal(cpu_int8_at(128, 0, 0), 0);
    assert_int_equal(cpu_int8_at(128, 0, 3), 3);
    assert_int_equal(cpu_int8_at(128, 0, 4), 64);
    assert_int_equal(cpu_int8_at(128, 1, 0), 4);
    assert_int_equal(cpu_int8_at(128, 15, 127), 31 * 64 + 15 * 4 + 3);
    assert_int_equal(cpu_int8_at(128, 17, 5), 16 * 128 + 64 + 4 + 1);
}

static void test_quantize_round_trip(void **state)
{
    (void)state;
    mt_rng rng;
    mt_rng_init(&rng, 5, 0);
    const int Cs[] = {1, 7, 64, 65, 300};
    for (size_t c = 0; c < 5; c++) {
        int C = Cs[c], ld = cpu_int8_ld(C);
        assert_int_equal(ld % MT_INT8_ALIGN, 0);
        assert_true(ld >= C && ld < C + MT_INT8_ALIGN);
        float *x = malloc((size_t)C * sizeof *x);
        int8_t *q = malloc((size_t)ld);
        float amax = 0;
        for (int k = 0; k < C; k++) {
            x[k] = 3.0f * (mt_rng_uniform(&rng) - 0.5f);
            amax = fmaxf(amax, fabsf(x[k]));
        }
        memset(q, 0x55, (size_t)ld);
        float s = cpu_int8_quantize_row(q, x, C, ld);
        assert_float_equal(s, amax / 127.0f, 1e-9);
        int saw_extreme = 0;
        for (int k = 0; k < C; k++) {
            assert_true(q[k] >= -127 && q[k] <= 127);
            /* round to nearest: the dequantized value is within half a step */
            assert_true(fabsf(x[k] - s * (float)q[k]) <= 0.5f * s * (1.0f + 1e-5f));
            saw_extreme |= q[k] == 127 || q[k] == -127;
        }
        assert_true(saw_extreme);
        for (int k = C; k < ld; k++) assert_int_equal(q[k], 0);
        /* an all-zero row: scale 1, all zero */
        memset(x, 0, (size_t)C * sizeof *x);
        assert_float_equal(cpu_int8_quantize_row(q, x, C, ld), 1.0f, 0.0);
        for (int k = 0; k < ld; k++) assert_int_equal(q[k], 0);
        free(x), free(q);
    }
}

/* Every kernel's own quantizer gives cpu_int8_quantize_row's scale and bytes (+ 128 for a
 * kernel that reads u8), padding included, at odd widths and at the edges: zeros, a NaN (0),
 * an infinity (inv 0: the row is 0 but for a NaN there), a largest value so small that
 * 127 / amax is infinite (the clamp), and halves (a largest value of 127, so inv is 1 and
 * -3.5 .. 3.5 round to even). */
static void test_kernel_quantizers_match(void **state)
{
    (void)state;
    const char *const names[] = {"ref", "avx2", "avx512-vnni"};
    const int Cs[] = {1, 7, 16, 17, 64, 65, 192, 300};
    mt_rng rng;
    mt_rng_init(&rng, 13, 0);
    for (size_t n = 0; n < 3; n++) {
        const cpu_int8_kernel *k = cpu_int8_kernel_named(names[n]);
        if (!k) continue;
        for (size_t c = 0; c < 8; c++)
            for (int edge = 0; edge < 6; edge++) {
                int C = Cs[c], ld = cpu_int8_ld(C);
                float *x = malloc((size_t)C * sizeof *x);
                for (int i = 0; i < C; i++) x[i] = 4.0f * (mt_rng_uniform(&rng) - 0.5f);
                if (edge == 1) memset(x, 0, (size_t)C * sizeof *x);
                if (edge == 2) x[C / 2] = NAN;
                if (edge == 3) x[C - 1] = -INFINITY;
                if (edge == 4)
                    for (int i = 0; i < C; i++) x[i] *= 1e-38f;
                if (edge == 5) {
                    for (int i = 0; i < C; i++) x[i] = (float)(i % 8) - 3.5f;
                    x[0] = 127.0f;
                }
                int8_t *want = malloc((size_t)ld), *got = malloc((size_t)ld);
                memset(got, 0x55, (size_t)ld);
                float sw = cpu_int8_quantize_row(want, x, C, ld);
                float sg = k->quantize_row(got, x, C, ld);
                assert_memory_equal(&sg, &sw, sizeof sw);
                for (int i = 0; i < ld; i++) {
                    int8_t e = k->x_unsigned ? (int8_t)(want[i] ^ 0x80) : want[i];
                    if (got[i] != e)
                        fail_msg("%s C=%d edge %d byte %d: %d, want %d", k->name, C, edge, i,
                                 got[i], e);
                }
                free(x), free(want), free(got);
            }
    }
}

static void test_qmatrix_rows_and_sums(void **state)
{
    (void)state;
    const mt_backend *be = mt_backend_cpu();
    float w[3 * 5] = {1, -2, 0.5f, 0, 0, 0, 0, 0, 0, 0, -0.25f, 0.125f, 0, 0, 0.25f};
    mt_qmatrix q;
    assert_int_equal(be->qmatrix_make(&q, MT_QMATRIX_INT8, w, 3, 5), 0);
    assert_int_equal(q.rows, 3);
    assert_int_equal(q.cols, 5);
    assert_int_equal(q.ld, 64);
    assert_float_equal(q.scale[0], 2.0f / 127.0f, 1e-9);
    assert_int_equal(q.q[cpu_int8_at(64, 0, 0)], 64); /* 1 / (2/127) = 63.5, rounded to even */
    assert_int_equal(q.q[cpu_int8_at(64, 0, 1)], -127);
    assert_int_equal(q.q[cpu_int8_at(64, 0, 2)], 32);
    assert_float_equal(q.scale[1], 1.0f, 0.0);
    assert_int_equal(q.sum[1], 0);
    assert_int_equal(q.q[cpu_int8_at(64, 2, 0)], -127);
    assert_int_equal(q.q[cpu_int8_at(64, 2, 1)], 64);
    assert_int_equal(q.q[cpu_int8_at(64, 2, 4)], 127);
    assert_int_equal(q.sum[0], 64 - 127 + 32);
    assert_int_equal(q.sum[2], -127 + 64 + 127);
    /* the padding to a whole block of channels: zero rows, scale 1, sum 0 */
    for (int r = 3; r < CPU_INT8_BLOCK; r++) {
        assert_float_equal(q.scale[r], 1.0f, 0.0);
        assert_int_equal(q.sum[r], 0);
        for (int k = 0; k < 64; k++) assert_int_equal(q.q[cpu_int8_at(64, r, k)], 0);
    }
    be->qmatrix_free(&q);
}

/* An int8 linear against the fp32 one: the error of two roundings, each at most half a step
 * of 1/127 of the row's or channel's largest value, summed over C terms. */
static void test_qlinear_close_to_fp32(void **state)
{
    (void)state;
    const mt_backend *be = mt_backend_cpu();
    mt_rng rng;
    mt_rng_init(&rng, 9, 0);
    const int shapes[][3] = {{1, 256, 256}, {16, 256, 1000}, {5, 65, 17}, {3, 7, 3}};
    for (size_t s = 0; s < 4; s++) {
        int BT = shapes[s][0], C = shapes[s][1], OC = shapes[s][2];
        float *x = malloc((size_t)BT * C * sizeof *x), *w = malloc((size_t)OC * C * sizeof *w);
        float *b = malloc((size_t)OC * sizeof *b);
        float *want = malloc((size_t)BT * OC * sizeof *want),
              *got = malloc((size_t)BT * OC * sizeof *got);
        for (size_t i = 0; i < (size_t)BT * C; i++) x[i] = mt_rng_uniform(&rng) - 0.5f;
        for (size_t i = 0; i < (size_t)OC * C; i++) w[i] = 0.1f * (mt_rng_uniform(&rng) - 0.5f);
        for (int i = 0; i < OC; i++) b[i] = mt_rng_uniform(&rng);
        mt_linear_forward(be, want, x, w, b, (size_t)BT, C, OC);
        mt_qmatrix q;
        assert_int_equal(be->qmatrix_make(&q, MT_QMATRIX_INT8, w, OC, C), 0);
        be->qlinear_forward(got, x, &q, 0, b, (size_t)BT, OC);
        /* per output: |err| <= sum_k (|x_k| dw + |w_k| dx + dx dw), dx = 0.5/127 max|x| ... */
        double bound = C * (0.5 * 0.05 / 127.0 * 0.5 + 0.5 * 0.5 / 127.0 * 0.05 + 1e-6);
        for (size_t i = 0; i < (size_t)BT * OC; i++)
            if (fabs(got[i] - want[i]) > bound)
                fail_msg("BT=%d C=%d OC=%d: output %zu off by %g (bound %g)", BT, C, OC, i,
                         fabs(got[i] - want[i]), bound);
        be->qmatrix_free(&q);
        free(x), free(w), free(b), free(want), free(got);
    }
}

/* Every kernel through the whole product (quantization, chunks, threads, dequantization)
 * gives the naive backend's floats exactly: only the order of the integer sums differs
 * between them. The second shape is a matrix of more than 2 MiB, where the kernels ask for
 * weights ahead, at the few rows of batch-1 decoding. */
static void test_qlinear_same_with_every_kernel(void **state)
{
    (void)state;
    mt_rng rng;
    mt_rng_init(&rng, 3, 0);
    const int shapes[][4] = {{70, 130, 150, 7}, {2, 520, 4150, 21}}; /* BT, C, OC, row0 */
    for (size_t s = 0; s < 2; s++) {
        int BT = shapes[s][0], C = shapes[s][1], OC = shapes[s][2], row0 = shapes[s][3],
            rows = OC + row0 + 13;
        float *x = malloc((size_t)BT * C * sizeof *x), *w = malloc((size_t)rows * C * sizeof *w);
        float *want = malloc((size_t)BT * OC * sizeof *want),
              *got = malloc((size_t)BT * OC * sizeof *got);
        float *b = malloc((size_t)OC * sizeof *b);
        for (size_t i = 0; i < (size_t)BT * C; i++) x[i] = (float)mt_rng_normal(&rng);
        for (size_t i = 0; i < (size_t)rows * C; i++) w[i] = (float)mt_rng_normal(&rng);
        for (int i = 0; i < OC; i++) b[i] = (float)mt_rng_normal(&rng);
        mt_qmatrix q;
        assert_int_equal(mt_backend_cpu()->qmatrix_make(&q, MT_QMATRIX_INT8, w, rows, C), 0);
        mt_backend_cpu_naive()->qlinear_forward(want, x, &q, row0, b, (size_t)BT, OC);
        for (size_t f = 0; f < sizeof fast_kernels / sizeof *fast_kernels; f++) {
            if (!cpu_int8_kernel_named(fast_kernels[f])) continue;
            setenv("MTLAB_INT8_KERNEL", fast_kernels[f], 1);
            mt_backend_cpu()->qlinear_forward(got, x, &q, row0, b, (size_t)BT, OC);
            assert_memory_equal(got, want, (size_t)BT * OC * sizeof *got);
        }
        unsetenv("MTLAB_INT8_KERNEL");
        mt_backend_cpu()->qmatrix_free(&q);
        free(x), free(w), free(want), free(got), free(b);
    }
}

/* 16 rows of x (C) and an (OC, C) matrix quantized by the CPU backend, uniform in
 * [-0.5, 0.5), seeded, and room for two results (16, OC) */
typedef struct {
    float *x, *w, *out[2];
    mt_qmatrix q;
} qfixture;

static qfixture qfixture_make(uint64_t seed, int C, int OC)
{
    qfixture f = {
        .x = malloc((size_t)16 * C * sizeof *f.x),
        .w = malloc((size_t)OC * C * sizeof *f.w),
        .out = {malloc((size_t)16 * OC * sizeof(float)), malloc((size_t)16 * OC * sizeof(float))}};
    mt_rng rng;
    mt_rng_init(&rng, seed, 0);
    for (int i = 0; i < 16 * C; i++) f.x[i] = mt_rng_uniform(&rng) - 0.5f;
    for (size_t i = 0; i < (size_t)OC * C; i++) f.w[i] = mt_rng_uniform(&rng) - 0.5f;
    assert_int_equal(mt_backend_cpu()->qmatrix_make(&f.q, MT_QMATRIX_INT8, f.w, OC, C), 0);
    return f;
}

static void qfixture_free(qfixture *f)
{
    mt_backend_cpu()->qmatrix_free(&f->q);
    free(f->x), free(f->w), free(f->out[0]), free(f->out[1]);
}

/* An int8 product shares its work among threads only where there are threads to share it and
 * enough work: at one thread none does (libgomp ends even a team of one with a system call, and
 * the pool's job costs a hand-over), at two a
 * batch-16 vocabulary projection and a batch-1 FFN projection (768 x 192) do and a batch-1
 * d_model projection (192 x 192) does not; the floats are the same either way. */
static void test_qlinear_forks_only_where_it_pays(void **state)
{
    (void)state;
    const mt_backend *be = mt_backend_cpu();
    const int C = 192, V8 = 8000, F = 768;
    /* each product's output channels: the vocabulary at 16 rows, F and C at one row */
    const int rows[3] = {16, 1, 1}, channels[3] = {V8, F, C};
    const long want[3] = {1, 1, 0}; /* teams at two threads */
    qfixture f = qfixture_make(17, C, V8);
    float small[2][768 + 192]; /* the one-row products, F then C */
    int saved = omp_get_max_threads();
    for (int threads = 1; threads <= 2; threads++) {
        omp_set_num_threads(threads);
        for (int p = 0; p < 3; p++) {
            float *out = p == 0 ? f.out[threads - 1] : small[threads - 1] + (p == 2 ? F : 0);
            long before = thread_teams();
            be->qlinear_forward(out, f.x, &f.q, 0, NULL, (size_t)rows[p], channels[p]);
            long teams = thread_teams() - before;
            print_message("%d thread(s), %d x %d x %d: %ld team(s)\n", threads, rows[p], C,
                          channels[p], teams);
            assert_int_equal(teams, threads == 1 ? 0 : want[p]);
        }
    }
    omp_set_num_threads(saved);
    assert_memory_equal(f.out[0], f.out[1], (size_t)16 * V8 * sizeof(float));
    assert_memory_equal(small[0], small[1], sizeof small[0]);
    qfixture_free(&f);
}

/* An int8 product's quantized rows and scales live in the calling thread's scratch
 * (cpu_scratch): the buffers a product grew are the ones the next product takes, a smaller
 * one and one as large alike, so a decoding step's products allocate nothing after the
 * first step; the floats are the ones a first call gives. */
static void test_qlinear_keeps_its_buffers(void **state)
{
    (void)state;
    const mt_backend *be = mt_backend_cpu();
    const int C = 200, OC = 300;
    qfixture f = qfixture_make(23, C, OC);
    float *first = f.out[0], *again = f.out[1];
    be->qlinear_forward(first, f.x, &f.q, 0, NULL, 16, OC);
    size_t x_bytes = cpu_scratch_bytes(CPU_SCRATCH_INT8_X),
           s_bytes = cpu_scratch_bytes(CPU_SCRATCH_INT8_SCALES);
    assert_true(x_bytes >= (size_t)16 * f.q.ld);
    assert_true(s_bytes >= 16 * sizeof(float));
    void *x_buf = cpu_scratch(CPU_SCRATCH_INT8_X, 1),
         *s_buf = cpu_scratch(CPU_SCRATCH_INT8_SCALES, 1);
    be->qlinear_forward(again, f.x, &f.q, 0, NULL, 1, OC);
    be->qlinear_forward(again, f.x, &f.q, 0, NULL, 16, OC);
    assert_int_equal(cpu_scratch_bytes(CPU_SCRATCH_INT8_X), x_bytes);
    assert_int_equal(cpu_scratch_bytes(CPU_SCRATCH_INT8_SCALES), s_bytes);
    assert_ptr_equal(cpu_scratch(CPU_SCRATCH_INT8_X, 1), x_buf);
    assert_ptr_equal(cpu_scratch(CPU_SCRATCH_INT8_SCALES, 1), s_buf);
    assert_memory_equal(first, again, (size_t)16 * OC * sizeof *first);
    qfixture_free(&f);
}

/* Threads of the caller's own (two decoders on two threads) each quantize into their own
 * buffers: products run at once on both give each thread's floats, as one thread alone does. */
typedef struct {
    const mt_qmatrix *q;
    const float *x;
    float *out;
    int BT, OC, calls;
} qlinear_job;

static void *qlinear_thread(void *arg)
{
    qlinear_job *j = arg;
    for (int i = 0; i < j->calls; i++)
        mt_backend_cpu()->qlinear_forward(j->out, j->x, j->q, 0, NULL, (size_t)j->BT, j->OC);
    return NULL;
}

static void test_qlinear_threads_own_buffers(void **state)
{
    (void)state;
    const mt_backend *be = mt_backend_cpu();
    mt_rng rng;
    mt_rng_init(&rng, 29, 0);
    const int C = 256, OC = 512, BT[2] = {16, 3};
    float *w = malloc((size_t)OC * C * sizeof *w);
    for (int i = 0; i < OC * C; i++) w[i] = mt_rng_uniform(&rng) - 0.5f;
    mt_qmatrix q;
    assert_int_equal(be->qmatrix_make(&q, MT_QMATRIX_INT8, w, OC, C), 0);
    float *x[2], *want[2], *got[2];
    for (int t = 0; t < 2; t++) {
        x[t] = malloc((size_t)BT[t] * C * sizeof *x[t]);
        want[t] = malloc((size_t)BT[t] * OC * sizeof *want[t]);
        got[t] = malloc((size_t)BT[t] * OC * sizeof *got[t]);
        for (int i = 0; i < BT[t] * C; i++) x[t][i] = mt_rng_uniform(&rng) - 0.5f;
        be->qlinear_forward(want[t], x[t], &q, 0, NULL, (size_t)BT[t], OC);
    }
    pthread_t th[2];
    qlinear_job jobs[2];
    for (int t = 0; t < 2; t++) {
        jobs[t] = (qlinear_job){&q, x[t], got[t], BT[t], OC, 200};
        assert_int_equal(pthread_create(&th[t], NULL, qlinear_thread, &jobs[t]), 0);
    }
    for (int t = 0; t < 2; t++) {
        assert_int_equal(pthread_join(th[t], NULL), 0);
        assert_memory_equal(got[t], want[t], (size_t)BT[t] * OC * sizeof *got[t]);
        free(x[t]), free(want[t]), free(got[t]);
    }
    be->qmatrix_free(&q);
    free(w);
}

static void test_forced_kernel_must_exist(void **state)
{
    (void)state;
    setenv("MTLAB_INT8_KERNEL", "avx9000", 1);
    float w[4] = {1, 2, 3, 4};
    mt_qmatrix q;
    assert_int_equal(mt_backend_cpu()->qmatrix_make(&q, MT_QMATRIX_INT8, w, 2, 2), -1);
    assert_non_null(strstr(mt_last_error(),
                           "MTLAB_INT8_KERNEL=avx9000: not a kernel this CPU runs (it runs: ref"));
    unsetenv("MTLAB_INT8_KERNEL");
}

static void test_qweights_find_by_address(void **state)
{
    (void)state;
    float block[1000] = {0};
    mt_qweights *qw = mt_qweights_new(mt_backend_cpu());
    assert_int_equal(mt_qweights_add(qw, MT_QMATRIX_INT8, block + 500, 10, 8),
                     0); /* out of order on purpose */
    assert_int_equal(mt_qweights_add(qw, MT_QMATRIX_INT8, block + 4, 6, 4), 0);
    assert_int_equal(mt_qweights_add(qw, MT_QMATRIX_INT8, block + 100, 3, 16), 0);
    assert_int_equal(mt_qweights_count(qw), 3);
    int row0 = -1;
    const mt_qmatrix *q = mt_qweights_find(qw, block + 4, 4, &row0);
    assert_non_null(q);
    assert_int_equal(q->rows, 6);
    assert_int_equal(row0, 0);
    q = mt_qweights_find(qw, block + 500 + 3 * 8, 8, &row0); /* a row range (Mamba's splits) */
    assert_non_null(q);
    assert_int_equal(q->rows, 10);
    assert_int_equal(row0, 3);
    assert_null(mt_qweights_find(qw, block + 500 + 3, 8, &row0)); /* not a row start */
    assert_null(mt_qweights_find(qw, block + 500, 4, &row0)); /* another width */
    assert_null(mt_qweights_find(qw, block + 28, 4, &row0)); /* past its rows */
    assert_null(mt_qweights_find(qw, block + 999, 8, &row0)); /* past everything */
    assert_null(mt_qweights_find(qw, block, 4, &row0)); /* before everything */
    assert_int_equal(mt_qweights_bytes(qw), (6 + 3 + 10) * (64 + 8));
    mt_qweights_free(qw);
}

static void test_precision_names(void **state)
{
    (void)state;
    mt_precision p = MT_PRECISION_INT8;
    assert_int_equal(mt_precision_parse("fp32", &p), 0);
    assert_int_equal(p, MT_PRECISION_FP32);
    assert_int_equal(mt_precision_parse("int8", &p), 0);
    assert_int_equal(p, MT_PRECISION_INT8);
    assert_string_equal(mt_precision_name(p), "int8");
    assert_int_equal(mt_precision_parse("bf16", &p), 0);
    assert_int_equal(p, MT_PRECISION_BF16);
    assert_string_equal(mt_precision_name(p), "bf16");
    assert_int_equal(mt_runner_precision_flags("bf16"), MT_RUNNER_BF16);
    assert_int_equal(mt_runner_precision(MT_RUNNER_BF16), MT_PRECISION_BF16);
    assert_int_equal(mt_runner_precision((unsigned)mt_runner_precision_flags("int8")),
                     MT_PRECISION_INT8);
    assert_int_equal(mt_runner_precision(MT_RUNNER_STATS), MT_PRECISION_FP32);
    assert_int_equal(mt_precision_parse("INT8", &p), -1);
    assert_string_equal(mt_last_error(), "unknown precision 'INT8' (fp32, int8 or bf16)");
    assert_int_equal(mt_precision_parse(NULL, &p), -1);
}

static mt_model *create(const char *preset, uint64_t seed);

/* bf16 weights are a CUDA device's: on the CPU the switch fails with a message that says so,
 * naming the tensor, and the model keeps running in its precision (int8 here) */
static void test_bf16_refused_on_the_cpu(void **state)
{
    (void)state;
    mt_model *m = create("transformer", 5);
    assert_int_equal(mt_model_set_precision(m, MT_PRECISION_INT8), 0);
    size_t bytes = mt_model_int8_bytes(m);
    assert_int_equal(mt_model_set_precision(m, MT_PRECISION_BF16), -1);
    assert_non_null(strstr(mt_last_error(), "no bf16 linear layers"));
    assert_non_null(strstr(mt_last_error(), "in bf16"));
    assert_int_equal(mt_model_precision(m), MT_PRECISION_INT8);
    assert_int_equal(mt_model_int8_bytes(m), bytes);
    mt_model_free(m);
}

/* ---------------------------------------------------------------- whole models */
/* Every parameter moved by U(-0.1, 0.1) (as in test_models_arch_decode.c): logits of order 1
 * that exercise every tensor. */
static mt_model *create(const char *preset, uint64_t seed)
{
    mt_model_config c;
    tiny_model_config(&c, preset, 0.0f);
    mt_model *m = mt_model_create(&c, mt_backend_cpu(), seed);
    if (!m) fail_msg("%s: %s", preset, mt_last_error());
    float *p = mt_model_params(m);
    tiny_model_perturb(p, mt_model_param_block_size(m), seed);
    return m;
}

enum { B = 2, T = 9, S = 7 };
static const int32_t ids[B * T] = {
    17, 23, 5, 32, 9, 2, 9, 31, 33, 0, 0, 30, 8, 2, 35, 12, 7, 19,
};
static const int32_t src[B * S] = {
    12, 7, 19, 21, 13, 1, 1, 30, 8, 2, 35, 1, 0, 0,
};

/* worst |a - b| over the rows' logits relative to the largest |b|, and how many positions
 * pick the same top token */
static double compare_logits(const float *a, const float *b, size_t rows, int *agree)
{
    double worst = 0, big = 0;
    *agree = 0;
    for (size_t r = 0; r < rows; r++) {
        int ia = 0, ib = 0;
        for (int v = 0; v < V; v++) {
            size_t i = r * V + v;
            worst = fmax(worst, fabs(a[i] - b[i]));
            big = fmax(big, fabs(b[i]));
            if (a[i] > a[r * V + ia]) ia = v;
            if (b[i] > b[r * V + ib]) ib = v;
        }
        *agree += ia == ib;
    }
    return worst / big;
}

/* Tiny models (C = 16) have few terms per dot product to average rounding out, so their int8
 * error is larger than a real model's: 5% of the largest logit, and the same top token at
 * 80% of positions, hold for all seven with room; the shipped models' BLEU is measured in
 * docs/quantization.md §5. */
#define INT8_REL_TOL 0.05
#define INT8_TOP1_MIN 0.8

static void check_forward(const char *preset)
{
    mt_model *m = create(preset, 21);
    int encdec = mt_model_is_encdec(m);
    mt_batch b = {.B = B, .T = T, .ids = ids, .S = encdec ? S : 0, .src = encdec ? src : NULL};
    size_t n = (size_t)B * T * V;
    float *fp = malloc(n * sizeof *fp), *q8 = malloc(n * sizeof *q8),
          *back = malloc(n * sizeof *back);
    assert_int_equal(mt_model_forward(m, &b, fp), 0);
    assert_int_equal(mt_model_set_precision(m, MT_PRECISION_INT8), 0);
    assert_int_equal(mt_model_precision(m), MT_PRECISION_INT8);
    assert_true(mt_model_int8_bytes(m) > 0);
    assert_int_equal(mt_model_forward(m, &b, q8), 0);
    int agree;
    double rel = compare_logits(q8, fp, (size_t)B * T, &agree);
    printf("  %-13s forward: rel %.4f, top-1 %d/%d\n", preset, rel, agree, B * T);
    assert_true(rel > 0.0); /* the int8 path ran */
    assert_true(rel < INT8_REL_TOL);
    assert_true(agree >= INT8_TOP1_MIN * B * T);
    /* training needs fp32 */
    double loss;
    assert_int_equal(mt_model_forward_backward(m, &b, &(mt_step_opts){0}, 0.0f, &loss, NULL), -1);
    assert_non_null(strstr(mt_last_error(), "training needs fp32"));
    /* back to fp32: the same logits as before, exactly */
    assert_int_equal(mt_model_set_precision(m, MT_PRECISION_FP32), 0);
    assert_int_equal(mt_model_int8_bytes(m), 0);
    assert_int_equal(mt_model_forward(m, &b, back), 0);
    assert_memory_equal(back, fp, n * sizeof *fp);
    free(fp), free(q8), free(back);
    mt_model_free(m);
}

/* Prefill, then three steps, in both precisions: the decoding paths (KV caches, Mamba and
 * retention steps, the output projection on B rows) run their linears in int8 too. */
static void decode_logits(mt_model *m, float *out, int steps)
{
    int encdec = mt_model_is_encdec(m);
    const int P = encdec ? 1 : T;
    int32_t prompt[B * T];
    for (int i = 0; i < B * P; i++) prompt[i] = encdec ? 2 : ids[i];
    mt_batch b = {.B = B, .T = P, .ids = prompt, .S = encdec ? S : 0, .src = encdec ? src : NULL};
    mt_decode_state *st = mt_decode_state_new(m, B, P + steps, S);
    assert_non_null(st);
    assert_int_equal(mt_model_prefill(m, st, &b, out), 0);
    for (int s = 1; s <= steps; s++) {
        const int32_t tok[B] = {(int32_t)(5 + s), (int32_t)(11 + 2 * s)};
        assert_int_equal(mt_model_step(m, st, tok, out + (size_t)s * B * V), 0);
    }
    mt_decode_state_free(st);
}

static void check_decode(const char *preset)
{
    enum { STEPS = 3 };
    mt_model *m = create(preset, 23);
    size_t n = (size_t)(STEPS + 1) * B * V;
    float *fp = malloc(n * sizeof *fp), *q8 = malloc(n * sizeof *q8);
    decode_logits(m, fp, STEPS);
    assert_int_equal(mt_model_set_precision(m, MT_PRECISION_INT8), 0);
    decode_logits(m, q8, STEPS);
    int agree;
    double rel = compare_logits(q8, fp, (size_t)(STEPS + 1) * B, &agree);
    printf("  %-13s decode:  rel %.4f, top-1 %d/%d\n", preset, rel, agree, (STEPS + 1) * B);
    assert_true(rel > 0.0);
    assert_true(rel < INT8_REL_TOL);
    assert_true(agree >= INT8_TOP1_MIN * (STEPS + 1) * B);
    free(fp), free(q8);
    mt_model_free(m);
}

static void test_every_architecture_int8_close_to_fp32(void **state)
{
    (void)state;
    const char *const *presets = mt_model_arch_list(); /* every architecture of the registry */
    for (size_t i = 0; presets[i]; i++) {
        check_forward(presets[i]);
        check_decode(presets[i]);
    }
}

/* fp32 panels (mt_model_set_fp32_panels, docs/decoding.md §9.3): the same precision read from
 * another layout, so forward and decoding logits match plain fp32 to float rounding (2-18 rows
 * here, the panel kernel's range); they go with training, give way to int8 and come back with
 * fp32; freed on request (plain fp32 again, bit for bit); declined without error under
 * MTLAB_FP32_PANELS=off and on the naive table. */
#define PANELS_REL_TOL 1e-5

static void check_panels(const char *preset)
{
    enum { STEPS = 3 };
    mt_model *m = create(preset, 29);
    int encdec = mt_model_is_encdec(m), made = cpu_panels_supported();
    mt_batch b = {.B = B, .T = T, .ids = ids, .S = encdec ? S : 0, .src = encdec ? src : NULL};
    size_t nf = (size_t)B * T * V, nd = (size_t)(STEPS + 1) * B * V;
    float *fp = malloc(nf * sizeof *fp), *pf = malloc(nf * sizeof *pf);
    float *dfp = malloc(nd * sizeof *dfp), *dpf = malloc(nd * sizeof *dpf);
    assert_int_equal(mt_model_forward(m, &b, fp), 0);
    decode_logits(m, dfp, STEPS);
    assert_int_equal(mt_model_fp32_panel_bytes(m), 0);
    assert_int_equal(mt_model_set_fp32_panels(m, 1), 0);
    assert_int_equal(mt_model_precision(m), MT_PRECISION_FP32);
    assert_int_equal(mt_model_int8_bytes(m), 0);
    assert_true(made ? mt_model_fp32_panel_bytes(m) > 0 : mt_model_fp32_panel_bytes(m) == 0);
    long ran = cpu_panels_products();
    assert_int_equal(mt_model_forward(m, &b, pf), 0);
    decode_logits(m, dpf, STEPS);
    ran = cpu_panels_products() - ran;
    int agree, dagree;
    double rel = compare_logits(pf, fp, (size_t)B * T, &agree);
    double drel = compare_logits(dpf, dfp, (size_t)(STEPS + 1) * B, &dagree);
    printf("  %-13s panels:  %.1f KiB, %ld products on them, forward rel %.2e, decode rel %.2e\n",
           preset, (double)mt_model_fp32_panel_bytes(m) / 1024.0, ran, rel, drel);
    assert_true(rel < PANELS_REL_TOL && drel < PANELS_REL_TOL);
    /* the kernel ran (its sums can match OpenBLAS's bit for bit: both add in k order) */
    assert_true(made ? ran > 0 : ran == 0);
    /* int8 replaces them, fp32 brings them back */
    assert_int_equal(mt_model_set_precision(m, MT_PRECISION_INT8), 0);
    assert_int_equal(mt_model_fp32_panel_bytes(m), 0);
    assert_true(mt_model_int8_bytes(m) > 0);
    assert_int_equal(mt_model_set_precision(m, MT_PRECISION_FP32), 0);
    assert_true(made ? mt_model_fp32_panel_bytes(m) > 0 : mt_model_fp32_panel_bytes(m) == 0);
    /* freed on request: plain fp32, the same floats as before */
    assert_int_equal(mt_model_set_fp32_panels(m, 0), 0);
    assert_int_equal(mt_model_fp32_panel_bytes(m), 0);
    assert_int_equal(mt_model_forward(m, &b, pf), 0);
    assert_memory_equal(pf, fp, nf * sizeof *fp);
    /* training drops them and the request with them */
    assert_int_equal(mt_model_set_fp32_panels(m, 1), 0);
    double loss;
    assert_int_equal(mt_model_forward_backward(m, &b, &(mt_step_opts){0}, 0.0f, &loss, NULL), 0);
    assert_int_equal(mt_model_fp32_panel_bytes(m), 0);
    assert_int_equal(mt_model_set_precision(m, MT_PRECISION_INT8), 0);
    assert_int_equal(mt_model_set_precision(m, MT_PRECISION_FP32), 0);
    assert_int_equal(mt_model_fp32_panel_bytes(m), 0);
    /* declined: the switch off, then the naive table */
    setenv("MTLAB_FP32_PANELS", "off", 1);
    assert_int_equal(mt_model_set_fp32_panels(m, 1), 0);
    assert_int_equal(mt_model_fp32_panel_bytes(m), 0);
    unsetenv("MTLAB_FP32_PANELS");
    mt_model_free(m);
    mt_model_config c;
    tiny_model_config(&c, preset, 0.0f);
    m = mt_model_create(&c, mt_backend_cpu_naive(), 29);
    assert_non_null(m);
    assert_int_equal(mt_model_set_fp32_panels(m, 1), 0);
    assert_int_equal(mt_model_fp32_panel_bytes(m), 0);
    mt_model_free(m);
    free(fp), free(pf), free(dfp), free(dpf);
}

static void test_every_architecture_fp32_panels(void **state)
{
    (void)state;
    const char *const *presets = mt_model_arch_list();
    for (size_t i = 0; presets[i]; i++) check_panels(presets[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kernels_match_reference_exactly),
        cmocka_unit_test(test_reference_kernel_by_hand),
        cmocka_unit_test(test_packed_layout),
        cmocka_unit_test(test_quantize_round_trip),
        cmocka_unit_test(test_kernel_quantizers_match),
        cmocka_unit_test(test_qmatrix_rows_and_sums),
        cmocka_unit_test(test_qlinear_close_to_fp32),
        cmocka_unit_test(test_qlinear_same_with_every_kernel),
        cmocka_unit_test(test_qlinear_forks_only_where_it_pays),
        cmocka_unit_test(test_qlinear_keeps_its_buffers),
        cmocka_unit_test(test_qlinear_threads_own_buffers),
        cmocka_unit_test(test_forced_kernel_must_exist),
        cmocka_unit_test(test_qweights_find_by_address),
        cmocka_unit_test(test_precision_names),
        cmocka_unit_test(test_bf16_refused_on_the_cpu),
        cmocka_unit_test(test_every_architecture_int8_close_to_fp32),
        cmocka_unit_test(test_every_architecture_fp32_panels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
