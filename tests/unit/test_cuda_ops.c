/* Every CUDA operation against the CPU backend (the reference) on random inputs from a fixed
 * seed, so every run checks the same values (MTLAB_TEST_SEED=S draws others; the seed is
 * printed), at several shapes including
 * odd sizes, B = 1, T = 1 and lengths that are not a multiple of any tile. Forward outputs are
 * poisoned with NaN first so an element a kernel forgets to write fails; gradients start from
 * the same random values on both sides so accumulation (+=) is checked too. Each check prints
 * its relative error max|gpu - cpu| / max(max|cpu|, 1): fp32 below 1e-5, bf16 matrix products
 * below 1e-2. Without a device every test skips with the reason (cuda_check.h). */
#include "test_util.h"
#include "cuda_check.h"

#include "mtlab/error.h"
#include "mtlab/rng.h"

#define TOL_FP32 1e-5
#define TOL_BF16 1e-2

static const mt_backend *cpu, *gpu;
static mt_rng rng;

/* ---------------------------------------------------------------- paired buffers
 * h: the CPU side (host memory), d: the same values in CUDA memory. */
typedef struct {
    float *h, *d;
    size_t n;
} pair;

static pair make(size_t n)
{
    pair p = {.h = malloc((n ? n : 1) * sizeof(float)),
              .d = gpu->alloc((n ? n : 1) * sizeof(float)),
              .n = n};
    assert_non_null(p.h);
    assert_non_null(p.d);
    return p;
}

static void push(pair p) { gpu->upload(p.d, p.h, p.n * sizeof(float)); }

/* U(-scale, scale) on both sides */
static pair rnd(size_t n, float scale)
{
    pair p = make(n);
    for (size_t i = 0; i < n; i++) p.h[i] = scale * (2.0f * mt_rng_uniform(&rng) - 1.0f);
    push(p);
    return p;
}

/* NaN on both sides: an output every element of which the operation must write */
static pair poison(size_t n)
{
    pair p = make(n);
    for (size_t i = 0; i < n; i++) p.h[i] = NAN;
    push(p);
    return p;
}

static void drop(pair p)
{
    free(p.h);
    gpu->free(p.d);
}

/* max|gpu - cpu| / max(max|cpu|, 1); infinite when NaN appears on one side only */
static double diff(pair p)
{
    float *g = malloc((p.n ? p.n : 1) * sizeof *g);
    gpu->download(g, p.d, p.n * sizeof *g);
    double d = 0.0, s = 1.0;
    for (size_t i = 0; i < p.n; i++) {
        if (isnan(g[i]) != isnan(p.h[i])) {
            d = INFINITY;
            break;
        }
        if (isnan(g[i])) continue;
        d = fmax(d, fabs((double)g[i] - p.h[i]));
        s = fmax(s, fabs((double)p.h[i]));
    }
    free(g);
    return d / s;
}

/* 1 when n floats at two device addresses hold the same bits */
static int same_bits(const float *a, const float *b, size_t n)
{
    float *x = malloc((n ? n : 1) * sizeof *x), *y = malloc((n ? n : 1) * sizeof *y);
    assert_non_null(x);
    assert_non_null(y);
    gpu->download(x, a, n * sizeof *x);
    gpu->download(y, b, n * sizeof *y);
    int same = memcmp(x, y, n * sizeof *x) == 0;
    free(x), free(y);
    return same;
}

typedef struct {
    int32_t *h, *d;
    size_t n;
} ipair;

static ipair ids(size_t n, int below)
{
    ipair p = {.h = malloc((n ? n : 1) * sizeof(int32_t)),
               .d = gpu->alloc((n ? n : 1) * sizeof(int32_t)),
               .n = n};
    assert_non_null(p.d);
    for (size_t i = 0; i < n; i++) p.h[i] = (int32_t)mt_rng_below(&rng, (uint64_t)below);
    gpu->upload(p.d, p.h, n * sizeof(int32_t));
    return p;
}

static void idrop(ipair p)
{
    free(p.h);
    gpu->free(p.d);
}

typedef struct {
    uint8_t *h, *d;
    size_t n;
} mpair;

/* a padding mask: about one element in four is 0 */
static mpair mask(size_t n)
{
    mpair p = {.h = malloc(n ? n : 1), .d = gpu->alloc(n ? n : 1), .n = n};
    assert_non_null(p.d);
    for (size_t i = 0; i < n; i++) p.h[i] = mt_rng_below(&rng, 4) != 0;
    gpu->upload(p.d, p.h, n);
    return p;
}

static void mdrop(mpair p)
{
    free(p.h);
    gpu->free(p.d);
}

static void report(const char *what, double rel, double tol)
{
    print_message("  %-58s relative error %.3g (bound %.0e)\n", what, rel, tol);
    if (!(rel <= tol)) fail_msg("%s: relative error %.3g above %.0e", what, rel, tol);
}

static int setup(void **state)
{
    (void)state;
    cpu = mt_backend_cpu();
    const char *s = getenv("MTLAB_TEST_SEED");
    uint64_t seed = s ? strtoull(s, NULL, 10) : 1;
    print_message("cuda ops: seed %llu (MTLAB_TEST_SEED=S draws other inputs)\n",
                  (unsigned long long)seed);
    mt_rng_init(&rng, seed, 0);
    return 0;
}

/* Every test starts here: the fp32 backend, or a skip without a device. */
#define NEED_GPU()                            \
    do {                                      \
        (void)state;                          \
        if (!(gpu = cuda_or_skip(0))) return; \
    } while (0)

/* ---------------------------------------------------------------- matrix products */
static double gemm_case(int ta, int tb, int m, int n, int k, float beta)
{
    int lda = (ta ? m : k) + 1, ldb = (tb ? k : n) + 2, ldc = n + 3;
    pair a = rnd((size_t)(ta ? k : m) * lda, 1.0f), b = rnd((size_t)(tb ? n : k) * ldb, 1.0f);
    pair c = beta == 0.0f ? poison((size_t)m * ldc) : rnd((size_t)m * ldc, 1.0f);
    cpu->gemm(ta, tb, m, n, k, 0.75f, a.h, lda, b.h, ldb, beta, c.h, ldc);
    gpu->gemm(ta, tb, m, n, k, 0.75f, a.d, lda, b.d, ldb, beta, c.d, ldc);
    /* the padding columns of c stay as they were: NaN on both sides when poisoned */
    double r = diff(c);
    drop(a), drop(b), drop(c);
    return r;
}

static void test_gemm(void **state)
{
    NEED_GPU();
    const int shapes[][3] = {{1, 1, 1},     {7, 5, 3},    {64, 64, 64},
                             {33, 129, 65}, {1, 300, 97}, {250, 1, 31}};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
        for (int t = 0; t < 4; t++)
            for (int acc = 0; acc < 2; acc++) {
                char what[96];
                snprintf(what, sizeof what, "gemm %dx%dx%d trans %d%d beta %d", shapes[s][0],
                         shapes[s][1], shapes[s][2], t >> 1, t & 1, acc);
                report(what,
                       gemm_case(t >> 1, t & 1, shapes[s][0], shapes[s][1], shapes[s][2],
                                 acc ? 0.5f : 0.0f),
                       TOL_FP32);
            }
    /* strided batches */
    const int m = 9, n = 13, k = 17, batch = 5;
    size_t sa = (size_t)m * k + 4, sb = (size_t)k * n + 2, sc = (size_t)m * n + 1;
    pair a = rnd(sa * batch, 1.0f), b = rnd(sb * batch, 1.0f), c = rnd(sc * batch, 1.0f);
    cpu->gemm_batched(0, 1, m, n, k, 1.0f, a.h, k, sa, b.h, k, sb, 1.0f, c.h, n, sc, batch);
    gpu->gemm_batched(0, 1, m, n, k, 1.0f, a.d, k, sa, b.d, k, sb, 1.0f, c.d, n, sc, batch);
    report("gemm_batched 5 x 9x13x17 trans 01 beta 1", diff(c), TOL_FP32);
    drop(a), drop(b), drop(c);
}

/* x W^T with few rows (decoding's shape, the CUDA backend's own kernel up to 16 rows): aligned
 * rows and strides take its 16-byte loads, odd ones its scalar loads; poisoned outputs with
 * beta 0 must all be written; a strided batch as well */
static double rows_case(int m, int n, int k, int ld_pad, float beta, int batch)
{
    int ld = k + ld_pad, ldc = n + ld_pad;
    size_t sa = (size_t)m * ld + ld_pad, sb = (size_t)n * ld + ld_pad,
           sc = (size_t)m * ldc + ld_pad;
    pair a = rnd(sa * batch, 1.0f), b = rnd(sb * batch, 1.0f);
    pair c = beta == 0.0f ? poison(sc * batch) : rnd(sc * batch, 1.0f);
    cpu->gemm_batched(0, 1, m, n, k, 0.75f, a.h, ld, sa, b.h, ld, sb, beta, c.h, ldc, sc, batch);
    gpu->gemm_batched(0, 1, m, n, k, 0.75f, a.d, ld, sa, b.d, ld, sb, beta, c.d, ldc, sc, batch);
    double r = diff(c);
    drop(a), drop(b), drop(c);
    return r;
}

static void test_gemm_rows(void **state)
{
    NEED_GPU();
    const int shapes[][3] = {{1, 1, 4},        {1, 2048, 2048}, {3, 37, 260},
                             {5, 301, 1028},   {8, 8192, 512},  {9, 130, 12},
                             {16, 2052, 4096}, {16, 1, 3},      {12, 33, 7}};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
        for (int pi = 0; pi < 3; pi++) /* row strides k + 0, 1 and 4 */
            for (int acc = 0; acc < 2; acc++) {
                int pad = (int[]){0, 1, 4}[pi];
                char what[96];
                snprintf(what, sizeof what, "gemm rows %dx%dx%d ld pad %d beta %d", shapes[s][0],
                         shapes[s][1], shapes[s][2], pad, acc);
                report(
                    what,
                    rows_case(shapes[s][0], shapes[s][1], shapes[s][2], pad, acc ? 0.5f : 0.0f, 1),
                    TOL_FP32);
            }
    report("gemm rows batched 3 x 16x67x132 beta 1", rows_case(16, 67, 132, 4, 1.0f, 3), TOL_FP32);
    report("gemm rows batched 2 x 7x40x33 beta 0", rows_case(7, 40, 33, 1, 0.0f, 2), TOL_FP32);
}

/* the same thread's backend switched to bf16 inputs, then back to fp32 */
static void test_gemm_bf16(void **state)
{
    (void)state;
    if (!(gpu = cuda_or_skip(1))) return;
    const int m = 77, n = 130, k = 257;
    pair a = rnd((size_t)m * k, 1.0f), b = rnd((size_t)k * n, 1.0f), c = poison((size_t)m * n);
    cpu->gemm(0, 0, m, n, k, 1.0f, a.h, k, b.h, n, 0.0f, c.h, n);
    gpu->gemm(0, 0, m, n, k, 1.0f, a.d, k, b.d, n, 0.0f, c.d, n);
    double rel = diff(c);
    drop(a), drop(b), drop(c);
    gpu = cuda_or_skip(0);
    report("gemm bf16 inputs, fp32 accumulate 77x130x257", rel, TOL_BF16);
}

/* precision bf16's linear layer: rows row0 .. row0 + OC of a rows x C bf16 weight copy, with a
 * bias or without, against fp32 on the CPU, for each count of rows of x in bts (-1 ends the
 * list); a second call on the same inputs must give the same bits (the split-k path's partial
 * sums are added in a fixed order, and its tickets are back at zero), and so must a third with
 * the ranges added by qrows_combine_kernel */
static void bf16_linear_case(int rows, int C, int row0, int OC, int with_bias, const int *bts)
{
    pair w = rnd((size_t)rows * C, 1.0f), bias = rnd((size_t)OC, 1.0f);
    mt_qmatrix q;
    assert_int_equal(gpu->qmatrix_make(&q, MT_QMATRIX_BF16, w.d, rows, C), 0);
    for (; *bts > 0; bts++) {
        const int bt = *bts, few = bt <= 16 && C % 8 == 0;
        /* x at offset 1 is not 16-byte aligned: the few-rows kernel then takes it converted to
         * bf16 first instead of rounding the fp32 rows as it loads them */
        for (int off = 0; off <= few; off++) {
            const size_t n = (size_t)bt * OC;
            pair x = rnd((size_t)bt * C + off, 1.0f), out = poison(n);
            cpu->gemm(0, 1, bt, OC, C, 1.0f, x.h + off, C, w.h + (size_t)row0 * C, C, 0.0f, out.h,
                      OC);
            if (with_bias) cpu->bias_add(out.h, bias.h, (size_t)bt, OC);
            const float *b = with_bias ? bias.d : NULL;
            gpu->qlinear_forward(out.d, x.d + off, &q, row0, b, (size_t)bt, OC);
            char what[128];
            snprintf(what, sizeof what, "bf16 linear rows %d..%d of %dx%d, %d rows of x%s, %s",
                     row0, row0 + OC, rows, C, bt,
                     !few  ? ""
                     : off ? " (tensor cores, x converted)"
                           : " (tensor cores, x fp32)",
                     with_bias ? "bias" : "no bias");
            report(what, diff(out), TOL_BF16);
            float *first = malloc(n * sizeof *first), *again = malloc(n * sizeof *again);
            assert_non_null(first);
            assert_non_null(again);
            gpu->download(first, out.d, n * sizeof *first);
            gpu->qlinear_forward(out.d, x.d + off, &q, row0, b, (size_t)bt, OC);
            gpu->download(again, out.d, n * sizeof *again);
            if (memcmp(first, again, n * sizeof *first) != 0)
                fail_msg("%s: a second call gave other bits", what);
            /* a split k's ranges added by a second kernel, the reference, give the same bits as
             * the kernel's own last block per tile */
            setenv("MTLAB_CUDA_QROWS_COMBINE", "kernel", 1);
            gpu->qlinear_forward(out.d, x.d + off, &q, row0, b, (size_t)bt, OC);
            unsetenv("MTLAB_CUDA_QROWS_COMBINE");
            gpu->download(again, out.d, n * sizeof *again);
            if (memcmp(first, again, n * sizeof *first) != 0)
                fail_msg("%s: the combine kernel gave other bits", what);
            free(first), free(again);
            drop(x), drop(out);
        }
    }
    gpu->qmatrix_free(&q);
    drop(w), drop(bias);
}

/* decoding's few rows (the tensor-core kernel: 1-8 rows, 9-16 rows, weight tiles of 8 rows cut
 * by OC, k not a multiple of its 32-wide chunks, the widest blocks on 4,300 weight rows; x
 * read as fp32 and, unaligned, converted first), a prefill's many (cuBLAS), and C = 12, which
 * the few-rows kernel leaves to cuBLAS. Then the layers' own shapes, which take the other
 * plans of qrows_plan_for (kernels/cuda_gemm.cu) on a device of more than 64 multiprocessors:
 * k split over blocks (x_proj's 160 x 4096 whole and its rows 128..144; 2048 x 2048 in 3
 * ranges of 22, 22 and 20 chunks on 132 multiprocessors; k 4104, 129 chunks in ranges of 9,
 * its last chunk a quarter full), warp groups on other tiles for a short k (dt_proj's 4096 x
 * 128: 2 groups; k 40: 4 groups, the last block's past the weight rows), each with and
 * without bias */
static void test_bf16_linear(void **state)
{
    NEED_GPU();
    const int all[] = {1, 2, 5, 8, 9, 13, 16, 17, 129, 257, -1}, few[] = {1, 8, 16, -1};
    const int layer[] = {1, 9, 16, -1}, ends[] = {1, 16, -1};
    bf16_linear_case(70, 136, 9, 50, 1, all);
    bf16_linear_case(300, 200, 3, 257, 1, few);
    bf16_linear_case(4300, 64, 0, 4300, 1, few);
    bf16_linear_case(40, 12, 5, 33, 1, few);
    for (int b = 0; b <= 1; b++) {
        bf16_linear_case(160, 4096, 128, 16, b, layer);
        bf16_linear_case(160, 4096, 0, 160, b, layer);
        bf16_linear_case(4096, 128, 0, 4096, b, layer);
        bf16_linear_case(2048, 2048, 0, 2048, b, ends);
        bf16_linear_case(40, 4104, 3, 37, b, layer);
        bf16_linear_case(300, 40, 1, 299, b, layer);
    }
    mt_qmatrix q;
    pair w = rnd(16, 1.0f);
    assert_int_equal(gpu->qmatrix_make(&q, MT_QMATRIX_INT8, w.d, 4, 4), -1);
    drop(w);
}

/* ---------------------------------------------------------------- elementwise */
static void test_elementwise(void **state)
{
    NEED_GPU();
    const size_t sizes[] = {1, 7, 1000, 65537};
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        size_t n = sizes[s];
        char what[96];
        pair x = rnd(n, 4.0f), y = rnd(n, 4.0f), out = poison(n), g = rnd(n, 1.0f);
        pair d1 = rnd(n, 1.0f), d2 = rnd(n, 1.0f);
        double worst = 0.0;

        cpu->fill(out.h, n, 0.25f), gpu->fill(out.d, n, 0.25f), worst = fmax(worst, diff(out));
        cpu->scale(d1.h, n, -1.5f), gpu->scale(d1.d, n, -1.5f), worst = fmax(worst, diff(d1));
        cpu->axpy(d1.h, x.h, n, 0.3f), gpu->axpy(d1.d, x.d, n, 0.3f), worst = fmax(worst, diff(d1));
        cpu->add(out.h, x.h, y.h, n), gpu->add(out.d, x.d, y.d, n), worst = fmax(worst, diff(out));
        cpu->mul(out.h, x.h, y.h, n), gpu->mul(out.d, x.d, y.d, n), worst = fmax(worst, diff(out));
        cpu->mul_backward(d1.h, d2.h, g.h, x.h, y.h, n),
            gpu->mul_backward(d1.d, d2.d, g.d, x.d, y.d, n);
        worst = fmax(worst, fmax(diff(d1), diff(d2)));
        snprintf(what, sizeof what, "fill/scale/axpy/add/mul/mul_backward n=%zu", n);
        report(what, worst, TOL_FP32);

        const mt_act acts[] = {MT_ACT_RELU, MT_ACT_SILU, MT_ACT_SOFTPLUS, MT_ACT_GELU, MT_ACT_TANH};
        const char *names[] = {"relu", "silu", "softplus", "gelu", "tanh"};
        for (int a = 0; a < 5; a++) {
            pair o = poison(n);
            cpu->act_forward(acts[a], o.h, x.h, n), gpu->act_forward(acts[a], o.d, x.d, n);
            double w = diff(o);
            cpu->act_backward(acts[a], d1.h, g.h, x.h, n),
                gpu->act_backward(acts[a], d1.d, g.d, x.d, n);
            w = fmax(w, diff(d1));
            snprintf(what, sizeof what, "act %s forward/backward n=%zu", names[a], n);
            report(what, w, TOL_FP32);
            drop(o);
        }
        pair o = poison(n);
        cpu->gate_forward(o.h, x.h, y.h, n), gpu->gate_forward(o.d, x.d, y.d, n);
        worst = diff(o);
        cpu->gate_backward(d1.h, d2.h, g.h, x.h, y.h, n),
            gpu->gate_backward(d1.d, d2.d, g.d, x.d, y.d, n);
        worst = fmax(worst, fmax(diff(d1), diff(d2)));
        snprintf(what, sizeof what, "gate value*SiLU(gate) forward/backward n=%zu", n);
        report(what, worst, TOL_FP32);
        drop(x), drop(y), drop(out), drop(g), drop(d1), drop(d2), drop(o);
    }
}

static void test_rows(void **state)
{
    NEED_GPU();
    const int shapes[][2] = {{1, 1}, {3, 7}, {17, 1000}, {5, 8000}, {300, 33}};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        int rows = shapes[s][0], cols = shapes[s][1];
        size_t n = (size_t)rows * cols;
        char what[96];
        pair x = rnd(n, 3.0f), b = rnd((size_t)cols, 1.0f), db = rnd((size_t)cols, 1.0f),
             o = poison(n);
        mpair m = mask((size_t)rows);
        double w = 0.0;
        cpu->copy2d(o.h, cols, x.h, cols, rows, cols),
            gpu->copy2d(o.d, cols, x.d, cols, rows, cols);
        w = fmax(w, diff(o));
        cpu->mask_rows(o.h, m.h, rows, cols), gpu->mask_rows(o.d, m.d, rows, cols),
            w = fmax(w, diff(o));
        cpu->bias_add(o.h, b.h, rows, cols), gpu->bias_add(o.d, b.d, rows, cols),
            w = fmax(w, diff(o));
        cpu->bias_backward(db.h, x.h, rows, cols), gpu->bias_backward(db.d, x.d, rows, cols),
            w = fmax(w, diff(db));
        cpu->softmax(o.h, x.h, rows, cols), gpu->softmax(o.d, x.d, rows, cols),
            w = fmax(w, diff(o));
        cpu->log_softmax(o.h, x.h, rows, cols), gpu->log_softmax(o.d, x.d, rows, cols),
            w = fmax(w, diff(o));
        snprintf(what, sizeof what, "copy2d/mask_rows/bias/softmax/log_softmax %dx%d", rows, cols);
        report(what, w, TOL_FP32);

        /* argmax and the host reductions */
        int32_t *ah = malloc((size_t)rows * sizeof *ah), *ag = malloc((size_t)rows * sizeof *ag);
        int32_t *ad = gpu->alloc((size_t)rows * sizeof *ad);
        cpu->argmax_rows(ah, x.h, rows, cols), gpu->argmax_rows(ad, x.d, rows, cols);
        gpu->download(ag, ad, (size_t)rows * sizeof *ag);
        assert_memory_equal(ah, ag, (size_t)rows * sizeof *ah);
        double s1 = cpu->sum(x.h, n), s2 = gpu->sum(x.d, n);
        double q1 = cpu->sum_squares(x.h, n), q2 = gpu->sum_squares(x.d, n);
        snprintf(what, sizeof what, "sum/sum_squares n=%zu (argmax identical)", n);
        /* sqrt(n * sum x^2) bounds sum |x|, the scale of the rounding either order makes */
        report(what,
               fmax(fabs(s1 - s2) / fmax(sqrt(q1 * (double)n), 1.0), fabs(q1 - q2) / fmax(q1, 1.0)),
               TOL_FP32);
        free(ah), free(ag), gpu->free(ad);

        /* index_select: rows of a state picked, repeated and reordered */
        ipair idx = ids((size_t)rows, rows);
        pair sel = poison(n);
        cpu->index_select(sel.h, x.h, (size_t)cols, idx.h, rows, (size_t)cols);
        gpu->index_select(sel.d, x.d, (size_t)cols, idx.d, rows, (size_t)cols);
        snprintf(what, sizeof what, "index_select %dx%d", rows, cols);
        report(what, diff(sel), 0.0);
        /* and the first half of each picked row, packed (a KV cache's filled positions) */
        cpu->index_select(sel.h, x.h, (size_t)cols, idx.h, rows, (size_t)(cols / 2));
        gpu->index_select(sel.d, x.d, (size_t)cols, idx.d, rows, (size_t)(cols / 2));
        snprintf(what, sizeof what, "index_select %dx%d of rows %d apart", rows, cols / 2, cols);
        report(what, diff(sel), 0.0);
        drop(x), drop(b), drop(db), drop(o), drop(sel), mdrop(m), idrop(idx);
    }
}

/* ---------------------------------------------------------------- norms, embeddings, positions */
static void test_norms(void **state)
{
    NEED_GPU();
    const int shapes[][2] = {{1, 1}, {5, 16}, {37, 513}, {130, 2048}};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        size_t N = (size_t)shapes[s][0];
        int C = shapes[s][1];
        size_t n = N * (size_t)C;
        char what[96];
        pair x = rnd(n, 2.0f), w = rnd((size_t)C, 1.5f), b = rnd((size_t)C, 1.0f),
             dout = rnd(n, 1.0f);
        pair out = poison(n), mean = poison(N), rstd = poison(N);
        pair dx = rnd(n, 1.0f), dw = rnd((size_t)C, 1.0f), dbias = rnd((size_t)C, 1.0f);
        cpu->layernorm_forward(out.h, mean.h, rstd.h, x.h, w.h, b.h, N, C, 1e-5f);
        gpu->layernorm_forward(out.d, mean.d, rstd.d, x.d, w.d, b.d, N, C, 1e-5f);
        double e = fmax(diff(out), fmax(diff(mean), diff(rstd)));
        cpu->layernorm_backward(dx.h, dw.h, dbias.h, dout.h, x.h, w.h, mean.h, rstd.h, N, C);
        gpu->layernorm_backward(dx.d, dw.d, dbias.d, dout.d, x.d, w.d, mean.d, rstd.d, N, C);
        e = fmax(e, fmax(diff(dx), fmax(diff(dw), diff(dbias))));
        snprintf(what, sizeof what, "layernorm forward/backward %zux%d", N, C);
        report(what, e, TOL_FP32);

        cpu->rmsnorm_forward(out.h, rstd.h, x.h, w.h, N, C, 1e-5f);
        gpu->rmsnorm_forward(out.d, rstd.d, x.d, w.d, N, C, 1e-5f);
        e = fmax(diff(out), diff(rstd));
        cpu->rmsnorm_backward(dx.h, dw.h, dout.h, x.h, w.h, rstd.h, N, C);
        gpu->rmsnorm_backward(dx.d, dw.d, dout.d, x.d, w.d, rstd.d, N, C);
        e = fmax(e, fmax(diff(dx), diff(dw)));
        /* weight NULL means 1 */
        cpu->rmsnorm_forward(out.h, rstd.h, x.h, NULL, N, C, 1e-6f);
        gpu->rmsnorm_forward(out.d, rstd.d, x.d, NULL, N, C, 1e-6f);
        e = fmax(e, diff(out));
        snprintf(what, sizeof what, "rmsnorm forward/backward %zux%d", N, C);
        report(what, e, TOL_FP32);
        drop(x), drop(w), drop(b), drop(dout), drop(out), drop(mean), drop(rstd), drop(dx),
            drop(dw), drop(dbias);
    }
}

static void test_embeddings_positions(void **state)
{
    NEED_GPU();
    const int Vv = 301, C = 24, B = 3, T = 11, P = 40, H = 3, Dh = 8;
    size_t N = (size_t)B * T;
    ipair id = ids(N, Vv);
    pair table = rnd((size_t)Vv * C, 1.0f), out = poison(N * C), dout = rnd(N * C, 1.0f);
    pair dtable = rnd((size_t)Vv * C, 1.0f);
    cpu->embedding_forward(out.h, id.h, table.h, N, C, 2.5f);
    gpu->embedding_forward(out.d, id.d, table.d, N, C, 2.5f);
    double e = diff(out);
    cpu->embedding_backward(dtable.h, dout.h, id.h, N, C, 2.5f);
    gpu->embedding_backward(dtable.d, dout.d, id.d, N, C, 2.5f);
    report("embedding forward/backward (repeated ids accumulate)", fmax(e, diff(dtable)), TOL_FP32);

    pair sin = poison((size_t)P * C), dsin = rnd((size_t)P * C, 1.0f);
    cpu->sinusoid_fill(sin.h, P, C), gpu->sinusoid_fill(sin.d, P, C);
    e = diff(sin);
    cpu->positions_add(out.h, sin.h, B, T, C, 5), gpu->positions_add(out.d, sin.d, B, T, C, 5);
    e = fmax(e, diff(out));
    cpu->positions_backward(dsin.h, dout.h, B, T, C, 5),
        gpu->positions_backward(dsin.d, dout.d, B, T, C, 5);
    report("sinusoid_fill, positions_add/backward at pos0 5", fmax(e, diff(dsin)), TOL_FP32);

    for (int inter = 0; inter < 2; inter++)
        for (int rot = Dh / 2; rot <= Dh; rot += Dh / 2) {
            pair x = rnd((size_t)B * T * H * Dh, 1.0f), f = rnd((size_t)rot / 2, 1.0f);
            ipair pos = ids((size_t)B * T, 50);
            cpu->rope_forward(x.h, NULL, B, T, H, Dh, rot, 3, f.h, inter);
            gpu->rope_forward(x.d, NULL, B, T, H, Dh, rot, 3, f.d, inter);
            e = diff(x);
            cpu->rope_forward(x.h, pos.h, B, T, H, Dh, rot, 0, f.h, inter);
            gpu->rope_forward(x.d, pos.d, B, T, H, Dh, rot, 0, f.d, inter);
            e = fmax(e, diff(x));
            cpu->rope_backward(x.h, pos.h, B, T, H, Dh, rot, 0, f.h, inter);
            gpu->rope_backward(x.d, pos.d, B, T, H, Dh, rot, 0, f.d, inter);
            char what[96];
            snprintf(what, sizeof what, "rope forward/backward %s rot_dim %d of %d",
                     inter ? "interleaved" : "rotate-half", rot, Dh);
            report(what, fmax(e, diff(x)), TOL_FP32);
            drop(x), drop(f), idrop(pos);
        }
    idrop(id), drop(table), drop(out), drop(dout), drop(dtable), drop(sin), drop(dsin);
}

/* ---------------------------------------------------------------- attention */
typedef struct {
    int B, H, Tq, Tk, Dh, causal, window, masked, cache;
} attn_case;

static void attention_case(const attn_case *c, double tol)
{
    int C = c->H * c->Dh, Tmax = c->cache ? c->Tk + 5 : c->Tk;
    mt_attn_desc d = {.B = c->B,
                      .H = c->H,
                      .Tq = c->Tq,
                      .Tk = c->Tk,
                      .Dh = c->Dh,
                      .kv_bstride = (size_t)Tmax * C,
                      .causal = c->causal,
                      .q_pos0 = c->causal ? c->Tk - c->Tq : 0,
                      .window = c->window,
                      .mask_bstride = (size_t)Tmax,
                      .scale = 1.0f / sqrtf((float)c->Dh)};
    size_t nq = (size_t)c->B * c->Tq * C, nk = (size_t)c->B * Tmax * C;
    size_t na = (size_t)c->B * c->H * c->Tq * c->Tk;
    pair q = rnd(nq, 1.5f), k = rnd(nk, 1.5f), v = rnd(nk, 1.0f), out = poison(nq),
         att = poison(na);
    mpair m = mask((size_t)c->B * Tmax);
    mt_attn_desc dh = d, dd = d;
    dh.key_mask = c->masked ? m.h : NULL;
    dd.key_mask = c->masked ? m.d : NULL;
    cpu->attention_forward(out.h, att.h, q.h, k.h, v.h, &dh);
    gpu->attention_forward(out.d, att.d, q.d, k.d, v.d, &dd);
    double e = fmax(diff(out), diff(att));
    /* without probabilities (the decoding path) */
    pair out2 = poison(nq);
    cpu->attention_forward(out2.h, NULL, q.h, k.h, v.h, &dh);
    gpu->attention_forward(out2.d, NULL, q.d, k.d, v.d, &dd);
    e = fmax(e, diff(out2));
    pair dout = rnd(nq, 1.0f), dq = rnd(nq, 1.0f), dk = rnd(nk, 1.0f), dv = rnd(nk, 1.0f),
         datt = poison(na);
    cpu->attention_backward(dq.h, dk.h, dv.h, datt.h, dout.h, q.h, k.h, v.h, att.h, &dh);
    gpu->attention_backward(dq.d, dk.d, dv.d, datt.d, dout.d, q.d, k.d, v.d, att.d, &dd);
    e = fmax(e, fmax(diff(dq), fmax(diff(dk), diff(dv))));
    char what[120];
    snprintf(what, sizeof what, "attention B%d H%d Tq%d Tk%d Dh%d%s%s%s%s%s", c->B, c->H, c->Tq,
             c->Tk, c->Dh, c->causal ? " causal" : "", c->window ? " window" : "",
             c->masked ? " masked" : "", c->cache ? " cache" : "",
             tol == TOL_BF16 ? " bf16 products" : "");
    report(what, e, tol);
    drop(q), drop(k), drop(v), drop(out), drop(att), drop(out2), drop(dout), drop(dq), drop(dk),
        drop(dv);
    drop(datt), mdrop(m);
}

static void test_attention(void **state)
{
    NEED_GPU();
    const attn_case cases[] = {
        {1, 1, 1, 1, 1, 0, 0, 0, 0},
        {2, 3, 7, 7, 8, 1, 0, 1, 0},
        {2, 2, 33, 33, 16, 1, 4, 0, 0},
        {3, 2, 5, 19, 32, 0, 0, 1, 0},
        {2, 4, 1, 70, 64, 1, 0, 1, 1},
        {1, 8, 1, 130, 64, 1, 64, 0, 1},
        {2, 2, 129, 129, 64, 1, 0, 1, 0},
        {1, 2, 3, 200, 128, 1, 0, 0, 1},
        /* one query (decoding; out2 takes the split-key kernel): 4 chunks of 256 keys at Table
         * 4's shape, 47 chunks of 64, cross-attention over a masked source with Dh 5, Dh 200
         * with a window that leaves whole chunks invisible, Dh 300 (the tiled kernel) */
        {16, 16, 1, 1024, 128, 1, 0, 1, 1},
        {1, 2, 1, 3000, 64, 1, 0, 0, 1},
        {3, 2, 1, 500, 5, 0, 0, 1, 0},
        {2, 3, 1, 300, 200, 1, 40, 0, 1},
        {1, 1, 1, 70, 300, 1, 0, 0, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) attention_case(&cases[i], TOL_FP32);
    /* the backward's products in the bf16 mode (one pointer-array batch over rows and heads) */
    if (!(gpu = cuda_or_skip(1))) return;
    const attn_case wide = {5, 3, 21, 40, 48, 0, 0, 1, 1};
    const attn_case odd = {3, 2, 9, 11, 5, 1, 0, 1, 0}; /* heads 10 bytes apart in bf16 */
    attention_case(&wide, TOL_BF16);
    attention_case(&odd, TOL_BF16);
    attention_case(&cases[6], TOL_BF16);
    gpu = cuda_or_skip(0);
}

/* ---------------------------------------------------------------- retention */
static void test_retention(void **state)
{
    NEED_GPU();
    const int shapes[][5] = {
        {1, 1, 1, 1, 1}, {2, 2, 9, 8, 16}, {1, 4, 67, 16, 32}, {3, 3, 130, 8, 8}};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        int B = shapes[s][0], H = shapes[s][1], T = shapes[s][2], Dk = shapes[s][3],
            Dv = shapes[s][4];
        float gamma[MT_RETENTION_MAX_HEADS];
        for (int h = 0; h < H; h++) gamma[h] = 1.0f - powf(2.0f, -5.0f - (float)h);
        mpair m = mask((size_t)B * T);
        for (int b = 0; b < B; b++) m.h[(size_t)b * T + T - 1] = 1; /* a real last token */
        gpu->upload(m.d, m.h, m.n);
        mt_retention_desc dh = {
            .B = B, .H = H, .T = T, .Dk = Dk, .Dv = Dv, .gamma = gamma, .key_mask = m.h};
        mt_retention_desc dd = dh;
        dd.key_mask = m.d;
        size_t nq = (size_t)B * T * H * Dk, nv = (size_t)B * T * H * Dv, na = (size_t)B * H * T * T;
        pair q = rnd(nq, 1.0f), k = rnd(nq, 1.0f), v = rnd(nv, 1.0f), out = poison(nv),
             att = poison(na);
        pair r = poison((size_t)B * H * T);
        cpu->retention_forward(out.h, att.h, r.h, q.h, k.h, v.h, &dh);
        gpu->retention_forward(out.d, att.d, r.d, q.d, k.d, v.d, &dd);
        double e = fmax(diff(out), fmax(diff(att), diff(r)));
        pair dout = rnd(nv, 1.0f), dq = rnd(nq, 1.0f), dk = rnd(nq, 1.0f), dv = rnd(nv, 1.0f),
             datt = poison(na);
        cpu->retention_backward(dq.h, dk.h, dv.h, datt.h, dout.h, q.h, k.h, v.h, att.h, r.h, &dh);
        gpu->retention_backward(dq.d, dk.d, dv.d, datt.d, dout.d, q.d, k.d, v.d, att.d, r.d, &dd);
        e = fmax(e, fmax(diff(dq), fmax(diff(dk), diff(dv))));
        /* recurrent form: the state after all T positions, then one more step */
        size_t nkv = (size_t)B * H * Dk * Dv;
        pair kv = poison(nkv), st = poison((size_t)B * H);
        mt_retention_desc fh = dh, fd = dd;
        cpu->retention_state_fill(kv.h, st.h, k.h, v.h, &fh);
        gpu->retention_state_fill(kv.d, st.d, k.d, v.d, &fd);
        e = fmax(e, fmax(diff(kv), diff(st)));
        mt_retention_desc sh = {.B = B, .H = H, .T = 1, .Dk = Dk, .Dv = Dv, .gamma = gamma};
        pair q1 = rnd((size_t)B * H * Dk, 1.0f), k1 = rnd((size_t)B * H * Dk, 1.0f);
        pair v1 = rnd((size_t)B * H * Dv, 1.0f), o1 = poison((size_t)B * H * Dv);
        cpu->retention_step(o1.h, kv.h, st.h, q1.h, k1.h, v1.h, &sh);
        gpu->retention_step(o1.d, kv.d, st.d, q1.d, k1.d, v1.d, &sh);
        e = fmax(e, fmax(diff(o1), fmax(diff(kv), diff(st))));
        char what[96];
        snprintf(what, sizeof what, "retention B%d H%d T%d Dk%d Dv%d parallel/backward/recurrent",
                 B, H, T, Dk, Dv);
        report(what, e, TOL_FP32);
        drop(q), drop(k), drop(v), drop(out), drop(att), drop(r), drop(dout), drop(dq), drop(dk),
            drop(dv);
        drop(datt), drop(kv), drop(st), drop(q1), drop(k1), drop(v1), drop(o1), mdrop(m);
    }
}

/* ---------------------------------------------------------------- conv1d and the selective scan */
static void test_conv1d(void **state)
{
    NEED_GPU();
    const int shapes[][4] = {{1, 1, 1, 4}, {2, 9, 13, 4}, {3, 130, 256, 4}, {1, 3, 5, 7}};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        int B = shapes[s][0], T = shapes[s][1], C = shapes[s][2], K = shapes[s][3];
        size_t n = (size_t)B * T * C;
        pair x = rnd(n, 1.0f), w = rnd((size_t)C * K, 1.0f), b = rnd((size_t)C, 1.0f),
             out = poison(n);
        cpu->conv1d_forward(out.h, x.h, w.h, b.h, B, T, C, K),
            gpu->conv1d_forward(out.d, x.d, w.d, b.d, B, T, C, K);
        double e = diff(out);
        cpu->conv1d_forward(out.h, x.h, w.h, NULL, B, T, C, K),
            gpu->conv1d_forward(out.d, x.d, w.d, NULL, B, T, C, K);
        e = fmax(e, diff(out));
        pair dout = rnd(n, 1.0f), dx = rnd(n, 1.0f), dw = rnd((size_t)C * K, 1.0f),
             db = rnd((size_t)C, 1.0f);
        cpu->conv1d_backward(dx.h, dw.h, db.h, dout.h, x.h, w.h, B, T, C, K);
        gpu->conv1d_backward(dx.d, dw.d, db.d, dout.d, x.d, w.d, B, T, C, K);
        e = fmax(e, fmax(diff(dx), fmax(diff(dw), diff(db))));
        pair state_ = poison((size_t)B * C * K), x1 = rnd((size_t)B * C, 1.0f),
             o1 = poison((size_t)B * C);
        cpu->conv1d_state_fill(state_.h, x.h, B, T, C, K),
            gpu->conv1d_state_fill(state_.d, x.d, B, T, C, K);
        e = fmax(e, diff(state_));
        cpu->conv1d_step(o1.h, state_.h, x1.h, w.h, b.h, B, C, K);
        gpu->conv1d_step(o1.d, state_.d, x1.d, w.d, b.d, B, C, K);
        e = fmax(e, fmax(diff(o1), diff(state_)));
        /* the next step with its SiLU in the same kernel (conv1d_step_silu): against the CPU's
         * two operations, and bit for bit against the GPU's two from a copy of the state */
        const size_t bc = (size_t)B * C, nst = bc * K;
        pair x2 = rnd(bc, 1.0f), o2 = poison(bc), u2 = poison(bc), o3 = poison(bc), u3 = poison(bc);
        float *st3 = gpu->alloc(nst * sizeof *st3);
        assert_non_null(st3);
        gpu->copy(st3, state_.d, nst * sizeof *st3);
        cpu->conv1d_step(o2.h, state_.h, x2.h, w.h, b.h, B, C, K);
        cpu->act_forward(MT_ACT_SILU, u2.h, o2.h, bc);
        assert_non_null(gpu->conv1d_step_silu);
        gpu->conv1d_step_silu(o2.d, u2.d, state_.d, x2.d, w.d, b.d, B, C, K);
        e = fmax(e, fmax(diff(o2), fmax(diff(u2), diff(state_))));
        gpu->conv1d_step(o3.d, st3, x2.d, w.d, b.d, B, C, K);
        gpu->act_forward(MT_ACT_SILU, u3.d, o3.d, bc);
        if (!same_bits(o2.d, o3.d, bc) || !same_bits(u2.d, u3.d, bc) ||
            !same_bits(state_.d, st3, nst))
            fail_msg("conv1d_step_silu B%d C%d K%d: other bits than conv1d_step and SiLU", B, C, K);
        gpu->free(st3);
        char what[96];
        snprintf(what, sizeof what, "conv1d B%d T%d C%d K%d forward/backward/state/step(+SiLU)", B,
                 T, C, K);
        report(what, e, TOL_FP32);
        drop(x), drop(w), drop(b), drop(out), drop(dout), drop(dx), drop(dw), drop(db),
            drop(state_), drop(x1), drop(o1), drop(x2), drop(o2), drop(u2), drop(o3), drop(u3);
    }
}

/* One scan case on the kernel MTLAB_CUDA_SCAN names (kernels/cuda_scan.cu; unset: the parallel
 * one where it takes the shape): forward with and without h0 and h_last, backward with every
 * gradient and with only du, ddt, then a step from the final state and one more with its gate.
 * Returns the largest relative error. */
static double scan_case(int B, int T, int D, int N)
{
    size_t nu = (size_t)B * T * D, nb = (size_t)B * T * N, nh = (size_t)B * D * N;
    pair u = rnd(nu, 1.0f), dt = rnd(nu, 2.0f), A_log = rnd((size_t)D * N, 1.0f),
         Bm = rnd(nb, 1.0f);
    pair Cm = rnd(nb, 1.0f), Ds = rnd((size_t)D, 1.0f), dtb = rnd((size_t)D, 1.0f);
    mt_scan_args ah = {u.h, dt.h, A_log.h, Bm.h, Cm.h, Ds.h, dtb.h, B, T, D, N, NULL, NULL};
    mt_scan_args ad = {u.d, dt.d, A_log.d, Bm.d, Cm.d, Ds.d, dtb.d, B, T, D, N, NULL, NULL};
    pair y = poison(nu), hl = poison(nh);
    cpu->scan_forward(y.h, hl.h, &ah), gpu->scan_forward(y.d, hl.d, &ad);
    double e = fmax(diff(y), diff(hl));
    /* from a given state (a prefill in chunks), with and without h_last */
    pair h0 = rnd(nh, 1.0f), y0 = poison(nu), hl0 = poison(nh);
    mt_scan_args ah0 = ah, ad0 = ad;
    ah0.h0 = h0.h, ad0.h0 = h0.d;
    cpu->scan_forward(y0.h, hl0.h, &ah0), gpu->scan_forward(y0.d, hl0.d, &ad0);
    e = fmax(e, fmax(diff(y0), diff(hl0)));
    cpu->scan_forward(y0.h, NULL, &ah0), gpu->scan_forward(y0.d, NULL, &ad0);
    e = fmax(e, diff(y0));
    pair dy = rnd(nu, 1.0f), du = rnd(nu, 1.0f), ddt = rnd(nu, 1.0f), dA = rnd((size_t)D * N, 1.0f);
    pair dB = rnd(nb, 1.0f), dC = rnd(nb, 1.0f), dD = rnd((size_t)D, 1.0f),
         ddb = rnd((size_t)D, 1.0f);
    mt_scan_grads gh = {du.h, ddt.h, dA.h, dB.h, dC.h, dD.h, ddb.h};
    mt_scan_grads gd = {du.d, ddt.d, dA.d, dB.d, dC.d, dD.d, ddb.d};
    cpu->scan_backward(&gh, dy.h, &ah), gpu->scan_backward(&gd, dy.d, &ad);
    e = fmax(e, fmax(fmax(diff(du), diff(ddt)), fmax(diff(dA), diff(dB))));
    e = fmax(e, fmax(diff(dC), fmax(diff(dD), diff(ddb))));
    /* optional gradients left out; h0 is the forward's only, which backward ignores */
    mt_scan_grads gh2 = {du.h, ddt.h, NULL, NULL, NULL, NULL, NULL};
    mt_scan_grads gd2 = {du.d, ddt.d, NULL, NULL, NULL, NULL, NULL};
    cpu->scan_backward(&gh2, dy.h, &ah0), gpu->scan_backward(&gd2, dy.d, &ad0);
    e = fmax(e, fmax(diff(du), diff(ddt)));
    /* one recurrent step from the final state */
    mt_scan_args sh = ah, sd = ad;
    sh.T = sd.T = 1;
    pair y1 = poison((size_t)B * D);
    cpu->scan_step(y1.h, hl.h, &sh), gpu->scan_step(y1.d, hl.d, &sd);
    e = fmax(e, fmax(diff(y1), diff(hl)));
    /* the next step with its gate in the same kernel (scan_step_gate): against the CPU's two
     * operations, and bit for bit against the GPU's two from a copy of the state */
    const size_t bd = (size_t)B * D;
    pair z = rnd(bd, 2.0f), y2 = poison(bd), yg2 = poison(bd), y3 = poison(bd), yg3 = poison(bd);
    float *h3 = gpu->alloc(nh * sizeof *h3);
    assert_non_null(h3);
    gpu->copy(h3, hl.d, nh * sizeof *h3);
    cpu->scan_step(y2.h, hl.h, &sh), cpu->gate_forward(yg2.h, y2.h, z.h, bd);
    assert_non_null(gpu->scan_step_gate);
    gpu->scan_step_gate(y2.d, yg2.d, hl.d, z.d, &sd);
    e = fmax(e, fmax(diff(y2), fmax(diff(yg2), diff(hl))));
    gpu->scan_step(y3.d, h3, &sd), gpu->gate_forward(yg3.d, y3.d, z.d, bd);
    if (!same_bits(y2.d, y3.d, bd) || !same_bits(yg2.d, yg3.d, bd) || !same_bits(hl.d, h3, nh))
        fail_msg("scan_step_gate B%d D%d N%d: other bits than scan_step and the gate", B, D, N);
    gpu->free(h3);
    drop(z), drop(y2), drop(yg2), drop(y3), drop(yg3);
    drop(u), drop(dt), drop(A_log), drop(Bm), drop(Cm), drop(Ds), drop(dtb), drop(y), drop(hl),
        drop(dy);
    drop(du), drop(ddt), drop(dA), drop(dB), drop(dC), drop(dD), drop(ddb), drop(y1), drop(h0),
        drop(y0), drop(hl0);
    return e;
}

/* Every case on both kernels: the parallel one (chunks of 64 steps in 8 segments, states in
 * groups of 16 forward and 8 backward, blocks of 32 channels, N up to 64) and the sequential
 * reference. The long cases cross chunks, end inside a segment or a chunk (T 1000, 300, 65),
 * leave lanes past D (17, 33, 96) and states past a group (N 1, 40); N 100 is beyond the
 * parallel kernel and takes the sequential one under both names. */
static void test_scan(void **state)
{
    NEED_GPU();
    const int shapes[][4] = {
        {1, 1, 1, 1},      {2, 7, 5, 4},      {2, 65, 64, 16},  {1, 300, 96, 16}, {3, 33, 17, 40},
        {1, 2048, 64, 16}, {3, 1000, 33, 16}, {2, 1000, 40, 1}, {3, 200, 70, 40}, {1, 70, 9, 100}};
    const char *kernels[] = {"parallel", "sequential"};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
        for (int k = 0; k < 2; k++) {
            int B = shapes[s][0], T = shapes[s][1], D = shapes[s][2], N = shapes[s][3];
            if (k) setenv("MTLAB_CUDA_SCAN", "sequential", 1);
            double e = scan_case(B, T, D, N);
            unsetenv("MTLAB_CUDA_SCAN");
            char what[96];
            snprintf(what, sizeof what, "selective scan B%d T%d D%d N%d %s", B, T, D, N,
                     kernels[k]);
            report(what, e, TOL_FP32);
        }
}

/* ---------------------------------------------------------------- loss, dropout, AdamW */
static void test_loss_dropout_adamw(void **state)
{
    NEED_GPU();
    const int shapes[][2] = {{1, 2}, {7, 40}, {33, 8000}};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        size_t N = (size_t)shapes[s][0];
        int Vv = shapes[s][1];
        pair logits = rnd(N * Vv, 5.0f), losses = poison(N), lse = poison(N),
             dl = rnd(N * Vv, 1.0f);
        ipair t = ids(N, Vv);
        t.h[0] = -100; /* an ignored row */
        gpu->upload(t.d, t.h, N * sizeof(int32_t));
        double e = 0.0;
        for (int ls = 0; ls < 2; ls++) {
            float sm = ls ? 0.1f : 0.0f;
            cpu->cross_entropy_forward(losses.h, lse.h, logits.h, t.h, N, Vv, -100, sm);
            gpu->cross_entropy_forward(losses.d, lse.d, logits.d, t.d, N, Vv, -100, sm);
            e = fmax(e, fmax(diff(losses), diff(lse)));
            cpu->cross_entropy_backward(dl.h, logits.h, lse.h, t.h, N, Vv, -100, sm, 0.25f);
            gpu->cross_entropy_backward(dl.d, logits.d, lse.d, t.d, N, Vv, -100, sm, 0.25f);
            e = fmax(e, diff(dl));
            /* the in-place training form, on a copy of the logits */
            cpu->copy(dl.h, logits.h, N * Vv * sizeof(float));
            gpu->copy(dl.d, logits.d, N * Vv * sizeof(float));
            cpu->cross_entropy_fused(losses.h, dl.h, t.h, N, Vv, -100, sm, 0.25f);
            gpu->cross_entropy_fused(losses.d, dl.d, t.d, N, Vv, -100, sm, 0.25f);
            e = fmax(e, fmax(diff(losses), diff(dl)));
        }
        char what[96];
        snprintf(what, sizeof what,
                 "cross_entropy forward/backward/fused %zux%d (smoothing 0, 0.1)", N, Vv);
        report(what, e, TOL_FP32);
        drop(logits), drop(losses), drop(lse), drop(dl), idrop(t);
    }
    /* dropout masks are the same counter-based draws on both sides: identical results, for one
     * row keyed from its start and for 13 rows of 7691 keyed from their ends */
    const size_t n = 100003;
    pair x = rnd(n, 1.0f), out = poison(n), dx = rnd(n, 1.0f);
    double e = 0.0;
    const size_t shapes_rows[2] = {1, 13}, shapes_len[2] = {n, 7691};
    for (int k = 0; k < 2; k++) {
        mt_dropout d = {.p = 0.3f, .seed = 42, .step = 7, .site = 3, .row0 = 5, .align_end = k};
        size_t rows = shapes_rows[k], len = shapes_len[k];
        cpu->dropout_forward(out.h, x.h, rows, len, &d),
            gpu->dropout_forward(out.d, x.d, rows, len, &d);
        e = fmax(e, diff(out));
        cpu->dropout_backward(dx.h, x.h, rows, len, &d),
            gpu->dropout_backward(dx.d, x.d, rows, len, &d);
        e = fmax(e, diff(dx));
    }
    report("dropout forward/backward p 0.3 n=100003 (1 x 100003, 13 x 7691 from the end)", e,
           TOL_FP32);
    drop(x), drop(out), drop(dx);

    const size_t np = 70001;
    pair p = rnd(np, 1.0f), g = rnd(np, 0.1f), m = rnd(np, 0.01f), v = make(np);
    for (size_t i = 0; i < np; i++) v.h[i] = 1e-4f * mt_rng_uniform(&rng);
    push(v);
    mpair dm = mask(np);
    mt_adamw_hparams h = {
        .lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.98f, .eps = 1e-8f, .weight_decay = 0.01f};
    for (int step = 1; step <= 3; step++) {
        cpu->adamw_step(p.h, g.h, m.h, v.h, step == 2 ? NULL : dm.h, np, &h, step);
        gpu->adamw_step(p.d, g.d, m.d, v.d, step == 2 ? NULL : dm.d, np, &h, step);
    }
    report("adamw 3 steps n=70001 (with and without a decay mask)",
           fmax(diff(p), fmax(diff(m), diff(v))), TOL_FP32);
    drop(p), drop(g), drop(m), drop(v), mdrop(dm);
}

/* ---------------------------------------------------------------- memory */
static void test_out_of_memory_is_an_error(void **state)
{
    NEED_GPU();
    void *p = gpu->alloc((size_t)1 << 50); /* a petabyte: no device has it */
    assert_null(p);
    print_message("  out of memory reads: %s\n", mt_last_error());
    assert_non_null(strstr(mt_last_error(), "cuda:0"));
    /* and the backend still works afterwards */
    pair a = rnd(10, 1.0f);
    cpu->scale(a.h, 10, 2.0f), gpu->scale(a.d, 10, 2.0f);
    report("scale after a failed allocation", diff(a), 0.0);
    drop(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gemm),
        cmocka_unit_test(test_gemm_rows),
        cmocka_unit_test(test_gemm_bf16),
        cmocka_unit_test(test_bf16_linear),
        cmocka_unit_test(test_elementwise),
        cmocka_unit_test(test_rows),
        cmocka_unit_test(test_norms),
        cmocka_unit_test(test_embeddings_positions),
        cmocka_unit_test(test_attention),
        cmocka_unit_test(test_retention),
        cmocka_unit_test(test_conv1d),
        cmocka_unit_test(test_scan),
        cmocka_unit_test(test_loss_dropout_adamw),
        cmocka_unit_test(test_out_of_memory_is_an_error),
    };
    return cmocka_run_group_tests_name("cuda_ops", tests, setup, NULL);
}
