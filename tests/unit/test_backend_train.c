/* Training operations of the CPU backend: the Philox generator (published known answers),
 * host random streams, counter-based dropout (reproducible, recomputable masks) and AdamW
 * against a step computed by hand in double precision. */
#include "test_util.h"
#include "math/philox.h"
#include "mtlab/backend.h"
#include "mtlab/rng.h"

static const mt_backend *be;

static int setup(void **state)
{
    (void)state;
    be = mt_backend_cpu();
    return 0;
}

/* Random123 kat_vectors: counter (4 words), key (2 words) -> output (4 words) */
static void test_philox_known_answers(void **state)
{
    (void)state;
    static const uint32_t kat[3][10] = {
        {0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
        {~0u, ~0u, ~0u, ~0u, ~0u, ~0u, 0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd},
        {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0, 0xd16cfe09,
         0x94fdcceb, 0x5001e420, 0x24126ea1},
    };
    for (int i = 0; i < 3; i++) {
        uint32_t out[4];
        mt_philox4x32(out, kat[i][0], kat[i][1], kat[i][2], kat[i][3], kat[i][4], kat[i][5]);
        for (int j = 0; j < 4; j++) assert_int_equal(out[j], kat[i][6 + j]);
    }
}

static void test_rng_streams(void **state)
{
    (void)state;
    mt_rng a, b, c;
    mt_rng_init(&a, 42, 1);
    mt_rng_init(&b, 42, 1);
    mt_rng_init(&c, 42, 2);
    int same_c = 0;
    for (int i = 0; i < 1000; i++) {
        uint32_t x = mt_rng_u32(&a);
        assert_int_equal(x, mt_rng_u32(&b));
        same_c += x == mt_rng_u32(&c);
    }
    assert_true(same_c < 3); /* another stream is another sequence */
    enum { N = 200000 };
    double sum_u = 0, sum_n = 0, sum_n2 = 0;
    int hist[10] = {0};
    for (int i = 0; i < N; i++) {
        double u = mt_rng_uniform_double(&a), z = mt_rng_normal(&a);
        float f = mt_rng_uniform(&a);
        assert_true(u >= 0.0 && u < 1.0 && f >= 0.0f && f < 1.0f);
        sum_u += u, sum_n += z, sum_n2 += z * z;
        hist[mt_rng_below(&a, 10)]++;
    }
    printf("rng: uniform mean %.4f, normal mean %.4f var %.4f over %d draws\n", sum_u / N,
           sum_n / N, sum_n2 / N, N);
    assert_true(fabs(sum_u / N - 0.5) < 0.005);
    assert_true(fabs(sum_n / N) < 0.01 && fabs(sum_n2 / N - 1.0) < 0.015);
    for (int k = 0; k < 10; k++) assert_true(abs(hist[k] - N / 10) < 600); /* ~4.5 sigma */
}

/* The scalar formula of element j of row b (mt_dropout, backend.h). */
static float dropout_ref(float x, size_t b, size_t j, size_t row_len, const mt_dropout *d)
{
    uint32_t key = mt_dropout_key(j, row_len, d->align_end);
    int keep = mt_dropout_uniform(d->seed, d->step, d->site, d->row0 + (uint32_t)b, key) >= d->p;
    return keep ? x * (1.0f / (1.0f - d->p)) : 0.0f;
}

static void test_dropout_reproducible(void **state)
{
    (void)state;
    enum { N = 100000 };
    float *x = malloc(N * 4), *a = malloc(N * 4), *b = malloc(N * 4), *c = malloc(N * 4);
    float *dx = calloc(N, 4);
    for (int i = 0; i < N; i++) x[i] = 1.0f + (float)(i % 7);
    const float p = 0.3f;
    mt_dropout d = {.p = p, .seed = 1234, .step = 5, .site = 2};
    be->dropout_forward(a, x, 1, N, &d);
    be->dropout_forward(b, x, 1, N, &d);
    assert_memory_equal(a, b, N * sizeof(float)); /* same (seed, step, site, row): same mask */
    mt_dropout next = d;
    next.step = 6;
    be->dropout_forward(c, x, 1, N, &next);
    /* every element is the scalar formula: the vectorised draws are Philox's, element by element
     * (what the CUDA kernel computes too) */
    for (int i = 0; i < N; i++) assert_true(a[i] == dropout_ref(x[i], 0, (size_t)i, N, &d));
    int kept = 0, differ = 0;
    for (int i = 0; i < N; i++) {
        kept += a[i] != 0.0f;
        differ += (a[i] != 0.0f) != (c[i] != 0.0f);
        if (a[i] != 0.0f) assert_true(a[i] == x[i] * (1.0f / (1.0f - p)));
    }
    printf("dropout: p = 0.3 kept %.4f of %d; next step changes %.4f of the mask\n",
           (double)kept / N, N, (double)differ / N);
    assert_true(fabs((double)kept / N - 0.7) < 0.006);
    assert_true(fabs((double)differ / N - 0.42) < 0.01); /* independent masks: 2 p (1 - p) */
    mt_dropout other = d;
    other.site = 3;
    be->dropout_forward(c, x, 1, N, &other); /* another site, another mask */
    assert_true(memcmp(a, c, N * sizeof(float)) != 0);
    /* backward recomputes the forward mask: dx = mask * 1/(1-p) exactly where kept */
    float *ones = malloc(N * 4);
    for (int i = 0; i < N; i++) ones[i] = 1.0f;
    be->dropout_backward(dx, ones, 1, N, &d);
    for (int i = 0; i < N; i++) assert_true((dx[i] != 0.0f) == (a[i] != 0.0f));
    /* lengths that end inside a Philox block and inside a chunk of the CPU's loop, rows keyed
     * from their start and from their end (whose first key is inside a block) */
    for (int align_end = 0; align_end < 2; align_end++)
        for (int len = 1; len <= 4103; len += 1367) {
            mt_dropout r = {
                .p = p, .seed = 99, .step = 7, .site = 1, .row0 = 4, .align_end = align_end};
            size_t rows = N / (size_t)len < 3 ? N / (size_t)len : 3;
            be->dropout_forward(c, x, rows, (size_t)len, &r);
            for (size_t i = 0; i < rows * (size_t)len; i++)
                assert_true(c[i] ==
                            dropout_ref(x[i], i / (size_t)len, i % (size_t)len, (size_t)len, &r));
        }
    /* in place works */
    memcpy(c, x, N * sizeof(float));
    be->dropout_forward(c, c, 1, N, &d);
    assert_memory_equal(a, c, N * sizeof(float));
    free(x), free(a), free(b), free(c), free(dx), free(ones);
}

/* Every p keeps exactly the elements the scalar formula keeps, forward and backward: the vector
 * path compares each draw with an integer threshold (cpu_train.c dropout_threshold), the formula
 * a float with p. p 0 and 1, one just above 0, one just below 1, and p whose 2^24 multiples fall
 * between draws; signed inputs; a row whose keys start inside a Philox block (align_end). */
static void test_dropout_thresholds(void **state)
{
    (void)state;
    enum { N = 3 * 4096 + 77 };
    float *x = malloc(N * 4), *y = malloc(N * 4), *dx = malloc(N * 4);
    for (int i = 0; i < N; i++) x[i] = (float)(i % 11) - 5.0f + 0.25f;
    const float ps[] = {0.0f, 1e-9f, 0.1f, 0.3f, 0.5f, 0.9999999f, 1.0f};
    for (size_t k = 0; k < sizeof ps / sizeof *ps; k++)
        for (int align_end = 0; align_end < 2; align_end++) {
            mt_dropout d = {.p = ps[k], .seed = 77, .step = 3, .site = 5, .align_end = align_end};
            be->dropout_forward(y, x, 1, N, &d);
            for (int i = 0; i < N; i++) dx[i] = 0.5f;
            be->dropout_backward(dx, x, 1, N, &d);
            int kept = 0;
            for (int i = 0; i < N; i++) {
                float want = dropout_ref(x[i], 0, (size_t)i, N, &d);
                assert_true(y[i] == want);
                assert_true(dx[i] == 0.5f + want);
                kept += want != 0.0f;
            }
            if (ps[k] == 0.0f) assert_int_equal(kept, N);
            if (ps[k] == 1.0f) assert_int_equal(kept, 0);
        }
    /* p at a draw itself keeps its element (u >= p), and the float just above it drops it: the
     * threshold sits on the exact boundary, for elements at every place in a Philox block */
    for (int i = 1000; i < 1008; i++) {
        mt_dropout d = {.seed = 77, .step = 3, .site = 5};
        float u = mt_dropout_uniform(d.seed, d.step, d.site, 0, mt_dropout_key((size_t)i, N, 0));
        d.p = u;
        be->dropout_forward(y, x, 1, N, &d);
        assert_true(y[i] != 0.0f);
        d.p = nextafterf(u, 1.0f);
        be->dropout_forward(y, x, 1, N, &d);
        assert_true(y[i] == 0.0f);
    }
    free(x), free(y), free(dx);
}

/* A row's mask is its own wherever the row sits: rows 1..2 of a batch called alone as rows
 * 1..2 (row0 = 1) draw what they drew in the batch, and a left-padded row (align_end) keeps
 * the masks of its tokens when the padding in front of it grows. */
static void test_dropout_masks_follow_rows(void **state)
{
    (void)state;
    enum { ROWS = 3, LEN = 1030, PAD = 13 };
    float x[ROWS * (LEN + PAD)], whole[ROWS * LEN], part[2 * LEN], padded[LEN + PAD];
    for (int i = 0; i < ROWS * (LEN + PAD); i++) x[i] = 1.0f + (float)(i % 5);
    for (int align_end = 0; align_end < 2; align_end++) {
        mt_dropout d = {.p = 0.5f, .seed = 3, .step = 11, .site = 8, .align_end = align_end};
        be->dropout_forward(whole, x, ROWS, LEN, &d);
        mt_dropout tail = d;
        tail.row0 = 1;
        be->dropout_forward(part, x + LEN, 2, LEN, &tail);
        assert_memory_equal(part, whole + LEN, sizeof part);
        be->dropout_forward(part, x + LEN, 2, LEN, &d); /* as rows 0..1: other masks */
        assert_true(memcmp(part, whole + LEN, sizeof part) != 0);
        /* row 0 with PAD elements in front: its LEN elements keep their masks from the end */
        memcpy(padded + PAD, x, LEN * sizeof(float));
        for (int i = 0; i < PAD; i++) padded[i] = 0.0f;
        be->dropout_forward(padded, padded, 1, LEN + PAD, &d);
        int same = !memcmp(padded + PAD, whole, LEN * sizeof(float));
        assert_int_equal(same, align_end);
    }
}

/* The in-place training form equals forward + backward into zeroed gradients, bit for bit:
 * with and without smoothing, ignored rows included, a vocabulary that is no multiple of a
 * vector. */
static void test_cross_entropy_fused(void **state)
{
    (void)state;
    enum { R = 6, V = 1003 };
    const int32_t targets[R] = {3, -100, 1002, 0, 500, -100};
    float *logits = malloc(R * V * 4), *fused = malloc(R * V * 4), *dlogits = malloc(R * V * 4);
    float losses[R], lse[R], fused_losses[R];
    for (int i = 0; i < R * V; i++) logits[i] = 4.0f * sinf(0.37f * (float)i) + (float)(i % 5);
    for (int k = 0; k < 2; k++) {
        float smoothing = k ? 0.1f : 0.0f, scale = 0.25f;
        memset(dlogits, 0, R * V * 4);
        be->cross_entropy_forward(losses, lse, logits, targets, R, V, -100, smoothing);
        be->cross_entropy_backward(dlogits, logits, lse, targets, R, V, -100, smoothing, scale);
        memcpy(fused, logits, R * V * 4);
        be->cross_entropy_fused(fused_losses, fused, targets, R, V, -100, smoothing, scale);
        assert_memory_equal(fused_losses, losses, sizeof losses);
        assert_memory_equal(fused, dlogits, R * V * 4);
        assert_true(fused_losses[0] > 0.0f && fused_losses[1] == 0.0f);
    }
    free(logits), free(fused), free(dlogits);
}

/* Two AdamW steps against the torch.optim.AdamW update written out in double. */
static void test_adamw_step(void **state)
{
    (void)state;
    enum { N = 6 };
    float p[N] = {0.5f, -1.0f, 2.0f, 0.0f, -0.25f, 3.0f};
    float m[N] = {0}, v[N] = {0};
    uint8_t decay[N] = {1, 1, 0, 1, 0, 1};
    const float g1[N] = {0.1f, -0.2f, 0.3f, 0.0f, 1.0f, -2.0f};
    const float g2[N] = {-0.1f, 0.4f, 0.3f, 0.5f, -1.0f, 0.0f};
    mt_adamw_hparams h = {
        .lr = 1e-2f, .beta1 = 0.9f, .beta2 = 0.98f, .eps = 1e-8f, .weight_decay = 0.1f};
    double pd[N], md[N] = {0}, vd[N] = {0};
    for (int i = 0; i < N; i++) pd[i] = p[i];
    for (int step = 1; step <= 2; step++) {
        const float *g = step == 1 ? g1 : g2;
        be->adamw_step(p, g, m, v, decay, N, &h, step);
        for (int i = 0; i < N; i++) {
            if (decay[i]) pd[i] *= 1.0 - (double)h.lr * h.weight_decay;
            md[i] = h.beta1 * md[i] + (1.0 - h.beta1) * g[i];
            vd[i] = h.beta2 * vd[i] + (1.0 - h.beta2) * (double)g[i] * g[i];
            double mhat = md[i] / (1.0 - pow(h.beta1, step)),
                   vhat = vd[i] / (1.0 - pow(h.beta2, step));
            pd[i] -= h.lr * mhat / (sqrt(vhat) + h.eps);
        }
    }
    double worst = 0.0;
    for (int i = 0; i < N; i++) worst = fmax(worst, fabs(p[i] - pd[i]));
    printf("adamw: two steps vs hand-computed, max abs error %.2e (bound 1e-6)\n", worst);
    assert_true(worst < 1e-6);
    /* the first step moves every parameter with a gradient by about lr */
    assert_float_equal(pd[0], 0.5 * (1 - 1e-3) - 1e-2, 1e-2 + 1e-4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_philox_known_answers),
        cmocka_unit_test(test_rng_streams),
        cmocka_unit_test(test_dropout_reproducible),
        cmocka_unit_test(test_dropout_thresholds),
        cmocka_unit_test(test_dropout_masks_follow_rows),
        cmocka_unit_test(test_cross_entropy_fused),
        cmocka_unit_test(test_adamw_step),
    };
    return cmocka_run_group_tests_name("backend_train", tests, setup, NULL);
}
