/* The CUDA backend's matrix products, elementwise and row operations, norms, embeddings and
 * positions, the loss, dropout and AdamW, and its memory errors, each against the CPU backend
 * (the reference) on random inputs at several shapes including odd sizes, B = 1, T = 1 and
 * lengths that are not a multiple of any tile; gradients start from the same random values on
 * both sides so accumulation (+=) is checked too. The buffers, seed and bounds: cuda_pairs.h;
 * attention, retention, conv1d and the scan: test_cuda_seq_ops.c. */
#include "cuda_pairs.h"

#include "mtlab/error.h"

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
/* qlinear_forward_parts: one product whose columns land part by part in their own buffers gives
 * the bits of qlinear_forward over the whole range (the few-rows kernel with its split k closed
 * by its last block or by the combine kernel, and cuBLAS past 16 rows) */
static void bf16_parts_case(int rows, int C, int row0, const int *cols, int nparts, int with_bias,
                            const int *bts)
{
    int OC = 0;
    for (int p = 0; p < nparts; p++) OC += cols[p];
    pair w = rnd((size_t)rows * C, 1.0f), bias = rnd((size_t)OC, 1.0f);
    mt_qmatrix q;
    assert_int_equal(gpu->qmatrix_make(&q, MT_QMATRIX_BF16, w.d, rows, C), 0);
    for (; *bts > 0; bts++) {
        const int bt = *bts;
        const size_t n = (size_t)bt * OC;
        pair x = rnd((size_t)bt * C, 1.0f), whole = poison(n);
        const float *b = with_bias ? bias.d : NULL;
        gpu->qlinear_forward(whole.d, x.d, &q, row0, b, (size_t)bt, OC);
        float *want = malloc(n * sizeof *want), *got = malloc(n * sizeof *got);
        assert_non_null(want);
        assert_non_null(got);
        gpu->download(want, whole.d, n * sizeof *want);
        for (int combine = 0; combine <= 1; combine++) {
            mt_out_parts parts = {nparts, {0}, {0}};
            pair out[MT_OUT_PARTS_MAX];
            for (int p = 0; p < nparts; p++) {
                out[p] = poison((size_t)bt * cols[p]);
                parts.out[p] = out[p].d, parts.cols[p] = cols[p];
            }
            if (combine) setenv("MTLAB_CUDA_QROWS_COMBINE", "kernel", 1);
            gpu->qlinear_forward_parts(&parts, x.d, &q, row0, b, (size_t)bt);
            unsetenv("MTLAB_CUDA_QROWS_COMBINE");
            for (int p = 0, c0 = 0; p < nparts; c0 += cols[p++]) {
                float *h = malloc((size_t)bt * cols[p] * sizeof *h);
                assert_non_null(h);
                gpu->download(h, out[p].d, (size_t)bt * cols[p] * sizeof *h);
                for (int i = 0; i < bt; i++)
                    memcpy(got + (size_t)i * OC + c0, h + (size_t)i * cols[p], cols[p] * sizeof *h);
                free(h), drop(out[p]);
            }
            if (memcmp(want, got, n * sizeof *got) != 0)
                fail_msg("bf16 linear rows %d.. of %dx%d in %d parts, %d rows of x%s: other bits "
                         "than one buffer",
                         row0, rows, C, nparts, bt, combine ? " (combine kernel)" : "");
        }
        printf("  bf16 linear rows %d..%d of %dx%d in %d parts, %d rows of x, %s: the bits of one "
               "buffer\n",
               row0, row0 + OC, rows, C, nparts, bt, with_bias ? "bias" : "no bias");
        free(want), free(got), drop(x), drop(whole);
    }
    gpu->qmatrix_free(&q);
    drop(w), drop(bias);
}

static void test_bf16_linear_parts(void **state)
{
    NEED_GPU();
    assert_non_null(gpu->qlinear_forward_parts);
    const int bts[] = {1, 9, 16, 17, 40, -1};
    const int x_proj[] = {128, 16, 16}, in_proj[] = {512, 512}, odd[] = {3, 40, 1, 29};
    bf16_parts_case(160, 4096, 0, x_proj, 3, 0, bts); /* split k, 5 tiles */
    bf16_parts_case(1024, 256, 0, in_proj, 2, 1, bts);
    bf16_parts_case(300, 200, 7, odd, 4, 1, bts);
}

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
    /* the plans forced by MTLAB_CUDA_QROWS_PLAN (bench's timing switch) compute the same product */
    const char *plans[] = {"1:1", "2:3", "4:2", "4:40", NULL};
    for (const char **pl = plans; *pl; pl++) {
        setenv("MTLAB_CUDA_QROWS_PLAN", *pl, 1);
        printf("  MTLAB_CUDA_QROWS_PLAN=%s:\n", *pl);
        bf16_linear_case(520, 1024, 0, 520, 1, ends);
    }
    unsetenv("MTLAB_CUDA_QROWS_PLAN");
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
        cmocka_unit_test(test_bf16_linear_parts),
        cmocka_unit_test(test_elementwise),
        cmocka_unit_test(test_rows),
        cmocka_unit_test(test_norms),
        cmocka_unit_test(test_embeddings_positions),
        cmocka_unit_test(test_loss_dropout_adamw),
        cmocka_unit_test(test_out_of_memory_is_an_error),
    };
    return cmocka_run_group_tests_name("cuda_ops", tests, cuda_pairs_setup, NULL);
}
