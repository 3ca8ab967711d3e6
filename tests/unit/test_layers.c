/* The basic layers: each fp32 forward against a double-precision reference written here from
 * the formula, and each fp32 backward against finite differences of that reference
 * (tests/unit/grad_check.h), on small random shapes with the CPU backend.
 * Bounds: forward 1e-5 relative to the output scale; gradients 1e-5 relative error per
 * tensor (the printed figures are about 1e-8 .. 1e-7), and a 1% error is caught. */
#include "test_util.h"
#include "grad_check.h"
#include "math/philox.h"
#include "mtlab/layers.h"

#define BOUND 1e-5
#define SAMPLES 48

static const mt_backend *be;

static int setup(void **state)
{
    (void)state;
    be = mt_backend_cpu();
    return 0;
}

static double *to_double(const float *x, size_t n)
{
    double *y = malloc(n * sizeof *y);
    for (size_t i = 0; i < n; i++) y[i] = x[i];
    return y;
}

/* max |a - b| / max |b| */
static double forward_error(const float *a, const double *b, size_t n)
{
    double diff = 0.0, scale = 1e-30;
    for (size_t i = 0; i < n; i++)
        diff = fmax(diff, fabs(a[i] - b[i])), scale = fmax(scale, fabs(b[i]));
    return diff / scale;
}

static double project_d(const double *out, const double *r, size_t n)
{
    double acc = 0.0;
    for (size_t i = 0; i < n; i++) acc += out[i] * r[i];
    return acc;
}

/* y (rows, out) = x (rows, in) W^T + b */
static void linear_d(double *y, const double *x, const double *W, const double *b, size_t rows,
                     int in, int out)
{
    for (size_t i = 0; i < rows; i++)
        for (int o = 0; o < out; o++) {
            double acc = b ? b[o] : 0.0;
            for (int c = 0; c < in; c++) acc += W[(size_t)o * in + c] * x[i * in + c];
            y[i * out + o] = acc;
        }
}

static double act_d(mt_act act, double x)
{
    switch (act) {
    case MT_ACT_RELU: return x > 0 ? x : 0;
    case MT_ACT_SILU: return x / (1 + exp(-x));
    case MT_ACT_SOFTPLUS: return x <= 20 ? log1p(exp(x)) : x;
    case MT_ACT_GELU: return 0.5 * x * (1 + erf(x / sqrt(2.0)));
    case MT_ACT_TANH: return tanh(x);
    }
    return x;
}

/* ---------------------------------------------------------------- linear */
typedef struct {
    size_t N;
    int C, OC;
    double *x, *w, *b, *out, *r;
} linear_ref;

static double linear_ref_loss(void *p)
{
    linear_ref *m = p;
    linear_d(m->out, m->x, m->w, m->b, m->N, m->C, m->OC);
    return project_d(m->out, m->r, m->N * m->OC);
}

/* mt_linear_forward_parts: each part's columns are the whole product's, in int8 bit for bit (a
 * backend without qlinear_forward_parts runs one product a part; each output is one row's dot
 * product) and in fp32 within rounding (the kernel a product takes depends on its width) */
static void test_linear_forward_parts(void **state)
{
    (void)state;
    mt_rng rng;
    mt_rng_init(&rng, 3, 0);
    const size_t N = 5;
    const int C = 64, cols[] = {9, 16, 1, 22}, OC = 48;
    float *x = gc_random(N * C, &rng, 1.0f), *w = gc_random((size_t)(OC + 3) * C, &rng, 0.5f);
    float *b = gc_random(OC, &rng, 0.5f), *whole = calloc(N * OC, 4), *out[4];
    mt_out_parts parts = {4, {0}, {0}};
    for (int p = 0; p < 4; p++) out[p] = calloc(N * cols[p], 4), parts.out[p] = out[p];
    memcpy(parts.cols, cols, sizeof cols);
    mt_qweights *qw = mt_qweights_new(be);
    assert_int_equal(mt_qweights_add(qw, MT_QMATRIX_INT8, w, OC + 3, C), 0);
    mt_backend int8 = *be;
    int8.qweights = qw;
    const mt_backend *backends[] = {be, &int8};
    for (int k = 0; k < 2; k++) {
        const float *rows = w + (size_t)3 * C; /* a row range of the registered matrix */
        mt_linear_forward(backends[k], whole, x, rows, b, N, C, OC);
        mt_linear_forward_parts(backends[k], &parts, x, rows, b, N, C);
        for (int p = 0, c0 = 0; p < 4; c0 += cols[p++])
            for (size_t i = 0; i < N; i++) {
                if (k) assert_memory_equal(out[p] + i * cols[p], whole + i * OC + c0, cols[p] * 4);
                for (int j = 0; j < cols[p]; j++)
                    assert_float_equal(out[p][i * cols[p] + j], whole[i * OC + c0 + j],
                                       1e-6f * (1.0f + fabsf(whole[i * OC + c0 + j])));
            }
    }
    mt_qweights_free(qw);
    for (int p = 0; p < 4; p++) free(out[p]);
    free(x), free(w), free(b), free(whole);
}

static void test_linear_grad(void **state)
{
    (void)state;
    mt_rng rng;
    mt_rng_init(&rng, 1, 0);
    size_t N = 6;
    int C = 7, OC = 5;
    float *x = gc_random(N * C, &rng, 1.0f), *w = gc_random((size_t)OC * C, &rng, 0.5f);
    float *b = gc_random(OC, &rng, 0.5f), *out = calloc(N * OC, 4),
          *r = gc_random(N * OC, &rng, 1.0f);
    float *dx = calloc(N * C, 4), *dw = calloc((size_t)OC * C, 4), *db = calloc(OC, 4);
    /* gradients accumulate: pre-load 1 and take it off afterwards */
    for (size_t i = 0; i < N * C; i++) dx[i] = 1.0f;
    mt_linear_forward(be, out, x, w, b, N, C, OC);
    mt_linear_backward(be, &(mt_weight_grads){dx, dw, db}, r, x, w, N, C, OC);
    for (size_t i = 0; i < N * C; i++) dx[i] -= 1.0f;
    linear_ref m = {N,
                    C,
                    OC,
                    to_double(x, N * C),
                    to_double(w, (size_t)OC * C),
                    to_double(b, OC),
                    calloc(N * OC, 8),
                    to_double(r, N * OC)};
    linear_ref_loss(&m);
    assert_true(forward_error(out, m.out, N * OC) < 1e-5);
    assert_true(gc_report("layers", "linear dx",
                          gc_rel_error(m.x, N * C, dx, linear_ref_loss, &m, SAMPLES), BOUND));
    assert_true(gc_report("layers", "linear dweight",
                          gc_rel_error(m.w, (size_t)OC * C, dw, linear_ref_loss, &m, SAMPLES),
                          BOUND));
    assert_true(gc_report("layers", "linear dbias",
                          gc_rel_error(m.b, OC, db, linear_ref_loss, &m, SAMPLES), BOUND));
    /* the checker itself: one element of a gradient off by 1% must fail the bound */
    dw[4] *= 1.01f;
    double rel = gc_rel_error(m.w, (size_t)OC * C, dw, linear_ref_loss, &m, SAMPLES);
    printf("layers: a 1%% error in one dweight element reads as %.2e\n", rel);
    assert_true(rel > 10 * BOUND);
    free(x), free(w), free(b), free(out), free(r), free(dx), free(dw), free(db);
    free(m.x), free(m.w), free(m.b), free(m.out), free(m.r);
}

/* ---------------------------------------------------------------- embedding + tied logits */
typedef struct {
    size_t N;
    int C, V;
    const int32_t *ids;
    double scale, *table, *bias, *h, *logits, *r;
} embed_ref;

/* h = scale * table[ids] ; logits = h table^T + bias: the table gets both gradients */
static double embed_ref_loss(void *p)
{
    embed_ref *m = p;
    for (size_t i = 0; i < m->N; i++)
        for (int c = 0; c < m->C; c++)
            m->h[i * m->C + c] = m->scale * m->table[(size_t)m->ids[i] * m->C + c];
    linear_d(m->logits, m->h, m->table, m->bias, m->N, m->C, m->V);
    return project_d(m->logits, m->r, m->N * m->V);
}

static void test_embedding_tied_grad(void **state)
{
    (void)state;
    mt_rng rng;
    mt_rng_init(&rng, 2, 0);
    enum { N = 7, C = 6, V = 9 };
    const int32_t ids[N] = {3, 1, 3, 8, 0, 3, 5}; /* repeated ids accumulate */
    float *table = gc_random(V * C, &rng, 0.5f), *bias = gc_random(V, &rng, 0.5f);
    float *h = calloc(N * C, 4), *logits = calloc(N * V, 4), *r = gc_random(N * V, &rng, 1.0f);
    float *dtable = calloc(V * C, 4), *dbias = calloc(V, 4), *dh = calloc(N * C, 4);
    mt_embedding_forward(be, h, ids, table, N, C, 2.0f);
    mt_tied_logits_forward(be, logits, h, table, bias, N, C, V);
    mt_tied_logits_backward(be, &(mt_weight_grads){dh, dtable, dbias}, r, h, table, N, C, V);
    mt_embedding_backward(be, dtable, dh, ids, N, C, 2.0f);
    embed_ref m = {N,
                   C,
                   V,
                   ids,
                   2.0,
                   to_double(table, V * C),
                   to_double(bias, V),
                   calloc(N * C, 8),
                   calloc(N * V, 8),
                   to_double(r, N * V)};
    embed_ref_loss(&m);
    assert_true(forward_error(logits, m.logits, N * V) < 1e-5);
    assert_true(gc_report("layers", "embedding+tied dtable",
                          gc_rel_error(m.table, V * C, dtable, embed_ref_loss, &m, 64), BOUND));
    assert_true(gc_report("layers", "tied logits dbias",
                          gc_rel_error(m.bias, V, dbias, embed_ref_loss, &m, 64), BOUND));
    free(table), free(bias), free(h), free(logits), free(r), free(dtable), free(dbias), free(dh);
    free(m.table), free(m.bias), free(m.h), free(m.logits), free(m.r);
}

/* ---------------------------------------------------------------- LayerNorm, RMSNorm */
typedef struct {
    size_t N;
    int C, rms, affine;
    double *x, *w, *b, *out, *r;
} norm_ref;

/* LayerNorm: (x - mean) / sqrt(var + eps) * w + b ; RMSNorm: x / sqrt(mean(x^2) + eps) * w */
static double norm_ref_loss(void *p)
{
    norm_ref *m = p;
    for (size_t i = 0; i < m->N; i++) {
        const double *x = m->x + i * m->C;
        double mean = 0.0, var = 0.0;
        for (int c = 0; c < m->C; c++) mean += x[c] / m->C;
        for (int c = 0; c < m->C; c++)
            var += m->rms ? x[c] * x[c] / m->C : (x[c] - mean) * (x[c] - mean) / m->C;
        for (int c = 0; c < m->C; c++) {
            double n = (m->rms ? x[c] : x[c] - mean) / sqrt(var + 1e-5);
            m->out[i * m->C + c] = m->affine ? n * m->w[c] + (m->rms ? 0.0 : m->b[c]) : n;
        }
    }
    return project_d(m->out, m->r, m->N * m->C);
}

static void norm_check(int rms, int affine, const char *name)
{
    mt_rng rng;
    mt_rng_init(&rng, 3, (uint64_t)(rms * 2 + affine));
    enum { N = 5, C = 12 };
    float *x = gc_random(N * C, &rng, 2.0f), *w = gc_random(C, &rng, 1.0f),
          *b = gc_random(C, &rng, 1.0f);
    float *out = calloc(N * C, 4), *mean = calloc(N, 4), *rstd = calloc(N, 4),
          *r = gc_random(N * C, &rng, 1.0f);
    float *dx = calloc(N * C, 4), *dw = calloc(C, 4), *db = calloc(C, 4);
    const float *wp = affine ? w : NULL;
    if (rms) {
        mt_rmsnorm_forward(be, out, rstd, x, wp, &(mt_norm_call){N, C, 1e-5f});
        mt_rmsnorm_backward(be, &(mt_weight_grads){dx, affine ? dw : NULL, NULL}, r, x, wp, rstd,
                            &(mt_norm_call){.BT = N, .C = C});
    } else {
        mt_layernorm_forward(be, out, mean, rstd, x, wp, affine ? b : NULL,
                             &(mt_norm_call){N, C, 1e-5f});
        mt_layernorm_backward(be, &(mt_weight_grads){dx, affine ? dw : NULL, affine ? db : NULL}, r,
                              x, wp, mean, rstd, &(mt_norm_call){.BT = N, .C = C});
    }
    norm_ref m = {N,
                  C,
                  rms,
                  affine,
                  to_double(x, N * C),
                  to_double(w, C),
                  to_double(b, C),
                  calloc(N * C, 8),
                  to_double(r, N * C)};
    norm_ref_loss(&m);
    assert_true(forward_error(out, m.out, N * C) < 1e-5);
    char label[64];
    snprintf(label, sizeof label, "%s dx", name);
    assert_true(
        gc_report("layers", label, gc_rel_error(m.x, N * C, dx, norm_ref_loss, &m, 60), BOUND));
    if (affine) {
        snprintf(label, sizeof label, "%s dweight", name);
        assert_true(
            gc_report("layers", label, gc_rel_error(m.w, C, dw, norm_ref_loss, &m, 60), BOUND));
        if (!rms) {
            snprintf(label, sizeof label, "%s dbias", name);
            assert_true(
                gc_report("layers", label, gc_rel_error(m.b, C, db, norm_ref_loss, &m, 60), BOUND));
        }
    }
    free(x), free(w), free(b), free(out), free(mean), free(rstd), free(r), free(dx), free(dw),
        free(db);
    free(m.x), free(m.w), free(m.b), free(m.out), free(m.r);
}

static void test_norm_grads(void **state)
{
    (void)state;
    norm_check(0, 1, "layernorm");
    norm_check(0, 0, "layernorm (no affine)");
    norm_check(1, 1, "rmsnorm");
    norm_check(1, 0, "rmsnorm (no weight)");
}

/* ---------------------------------------------------------------- dropout */
typedef struct {
    size_t n, row_len;
    mt_dropout drop;
    double *x, *out, *r;
} drop_ref;

static double drop_ref_loss(void *p)
{
    drop_ref *m = p;
    for (size_t i = 0; i < m->n; i++) {
        size_t b = i / m->row_len;
        uint32_t key = mt_dropout_key(i - b * m->row_len, m->row_len, m->drop.align_end);
        int keep = mt_dropout_uniform(m->drop.seed, m->drop.step, m->drop.site,
                                      m->drop.row0 + (uint32_t)b, key) >= m->drop.p;
        m->out[i] = keep ? m->x[i] / (1.0 - m->drop.p) : 0.0;
    }
    return project_d(m->out, m->r, m->n);
}

static void test_dropout_grad(void **state)
{
    (void)state;
    mt_rng rng;
    mt_rng_init(&rng, 4, 0);
    enum { N = 200, ROW = 50 }; /* 4 rows, keyed as rows 2..5 of a step, from their ends */
    mt_dropout drop = {.p = 0.3f, .seed = 99, .step = 7, .site = 3, .row0 = 2, .align_end = 1};
    float *x = gc_random(N, &rng, 1.0f), *out = calloc(N, 4), *r = gc_random(N, &rng, 1.0f),
          *dx = calloc(N, 4);
    mt_dropout_forward(be, out, x, N / ROW, ROW, &drop);
    mt_dropout_backward(be, dx, r, N / ROW, ROW, &drop);
    int dropped = 0;
    for (int i = 0; i < N; i++) dropped += out[i] == 0.0f;
    assert_true(dropped > 30 && dropped < 90); /* ~60 of 200 at p = 0.3 */
    drop_ref m = {N, ROW, drop, to_double(x, N), calloc(N, 8), to_double(r, N)};
    drop_ref_loss(&m);
    assert_true(forward_error(out, m.out, N) < 1e-6);
    assert_true(
        gc_report("layers", "dropout dx", gc_rel_error(m.x, N, dx, drop_ref_loss, &m, N), BOUND));
    /* p = 0 is the identity both ways */
    mt_dropout off = {0};
    mt_dropout_forward(be, out, x, N / ROW, ROW, &off);
    assert_memory_equal(out, x, N * 4);
    free(x), free(out), free(r), free(dx), free(m.x), free(m.out), free(m.r);
}

/* ---------------------------------------------------------------- FFN and gated MLP */
/* A block's parameters as one float block and its double copy; the specs give the tensors. */
typedef struct {
    size_t N;
    int C, F, gated;
    mt_act act;
    const float *fbase;
    mt_ffn_params fp;
    mt_gated_mlp_params gp;
    double *pd, *x, *out, *r, *h1, *h2;
} mlp_ref;

#define DREF(ptr) ((ptr) ? m->pd + ((ptr)-m->fbase) : NULL)

/* FFN: fc2(act(fc1 x)) ; gated: down(value(x) * SiLU(gate(x))) */
static double mlp_ref_loss(void *p)
{
    mlp_ref *m = p;
    size_t nf = m->N * m->F;
    if (m->gated) {
        linear_d(m->h1, m->x, DREF(m->gp.value_w), DREF(m->gp.value_b), m->N, m->C, m->F);
        linear_d(m->h2, m->x, DREF(m->gp.gate_w), DREF(m->gp.gate_b), m->N, m->C, m->F);
        for (size_t i = 0; i < nf; i++) m->h1[i] *= act_d(MT_ACT_SILU, m->h2[i]);
        linear_d(m->out, m->h1, DREF(m->gp.down_w), DREF(m->gp.down_b), m->N, m->F, m->C);
    } else {
        linear_d(m->h1, m->x, DREF(m->fp.fc1_w), DREF(m->fp.fc1_b), m->N, m->C, m->F);
        for (size_t i = 0; i < nf; i++) m->h1[i] = act_d(m->act, m->h1[i]);
        linear_d(m->out, m->h1, DREF(m->fp.fc2_w), DREF(m->fp.fc2_b), m->N, m->F, m->C);
    }
    return project_d(m->out, m->r, m->N * m->C);
}

static void mlp_check(const mt_ffn_config *fcfg, const mt_gated_mlp_config *gcfg, const char *name)
{
    mt_rng rng;
    mt_rng_init(&rng, 5, gcfg ? 1 : 0);
    size_t N = 6;
    int C = gcfg ? gcfg->C : fcfg->C, F = gcfg ? gcfg->F : fcfg->F;
    size_t np = gcfg ? mt_gated_mlp_params_count(gcfg) : mt_ffn_params_count(fcfg);
    size_t na = gcfg ? mt_gated_mlp_acts_count(gcfg, N) : mt_ffn_acts_count(fcfg, N);
    mt_tensor_spec specs[8];
    int nt = gcfg ? mt_gated_mlp_tensors(gcfg, specs) : mt_ffn_tensors(fcfg, specs);
    assert_int_equal(mt_tensors_numel(specs, nt), np);
    float *x = gc_random(N * C, &rng, 1.0f), *params = gc_random(np, &rng, 0.4f);
    float *acts = calloc(na, 4), *dacts = calloc(na, 4), *grads = calloc(np, 4);
    float *out = calloc(N * C, 4), *r = gc_random(N * C, &rng, 1.0f), *dx = calloc(N * C, 4);
    mlp_ref m = {.N = N,
                 .C = C,
                 .F = F,
                 .gated = gcfg != NULL,
                 .act = fcfg ? fcfg->act : MT_ACT_SILU,
                 .fbase = params};
    if (gcfg) {
        mt_gated_mlp_params g;
        mt_gated_mlp_acts a, da;
        assert_ptr_equal(mt_gated_mlp_params_point(&m.gp, params, gcfg), params + np);
        mt_gated_mlp_params_point(&g, grads, gcfg);
        assert_ptr_equal(mt_gated_mlp_acts_point(&a, acts, gcfg, N), acts + na);
        mt_gated_mlp_acts_point(&da, dacts, gcfg, N);
        mt_gated_mlp_forward(be, out, &a, x, &m.gp, gcfg, N);
        mt_gated_mlp_backward(be, &(mt_gated_mlp_grads){dx, &g, &da}, r, &a, x, &m.gp, gcfg, N);
    } else {
        mt_ffn_params g;
        mt_ffn_acts a, da;
        assert_ptr_equal(mt_ffn_params_point(&m.fp, params, fcfg), params + np);
        mt_ffn_params_point(&g, grads, fcfg);
        assert_ptr_equal(mt_ffn_acts_point(&a, acts, fcfg, N), acts + na);
        mt_ffn_acts_point(&da, dacts, fcfg, N);
        if (fcfg->act == MT_ACT_RELU) /* keep fc1 outputs 0.3+ away from ReLU's kink */
            for (int i = 0; i < F; i++) m.fp.fc1_b[i] = i % 2 ? 0.5f : -0.5f;
        mt_ffn_forward(be, out, &a, x, &m.fp, fcfg, N);
        mt_ffn_backward(be, &(mt_ffn_grads){dx, &g, &da}, r, &a, x, &m.fp, fcfg, N);
    }
    m.pd = to_double(params, np), m.x = to_double(x, N * C), m.r = to_double(r, N * C);
    m.out = calloc(N * C, 8), m.h1 = calloc(N * F, 8), m.h2 = calloc(N * F, 8);
    mlp_ref_loss(&m);
    assert_true(forward_error(out, m.out, N * C) < 1e-5);
    char label[80];
    snprintf(label, sizeof label, "%s dx", name);
    assert_true(
        gc_report("layers", label, gc_rel_error(m.x, N * C, dx, mlp_ref_loss, &m, SAMPLES), BOUND));
    size_t off = 0;
    for (int t = 0; t < nt; t++) {
        size_t n = mt_tensor_numel(&specs[t]);
        snprintf(label, sizeof label, "%s %s", name, specs[t].name);
        assert_true(gc_report("layers", label,
                              gc_rel_error(m.pd + off, n, grads + off, mlp_ref_loss, &m, SAMPLES),
                              BOUND));
        off += n;
    }
    free(x), free(params), free(acts), free(dacts), free(grads), free(out), free(r), free(dx);
    free(m.pd), free(m.x), free(m.r), free(m.out), free(m.h1), free(m.h2);
}

static void test_ffn_grads(void **state)
{
    (void)state;
    mt_ffn_config relu = {.C = 6, .F = 10, .act = MT_ACT_RELU, .bias = 1};
    mlp_check(&relu, NULL, "ffn relu");
    mt_ffn_config silu = {.C = 6, .F = 10, .act = MT_ACT_SILU, .bias = 0};
    mlp_check(&silu, NULL, "ffn silu");
    mt_ffn_config gelu = {.C = 6, .F = 10, .act = MT_ACT_GELU, .bias = 1};
    mlp_check(&gelu, NULL, "ffn gelu");
}

static void test_gated_mlp_grads(void **state)
{
    (void)state;
    mt_gated_mlp_config llama = {.C = 6, .F = 9, .layout = MT_GATED_LLAMA};
    mlp_check(NULL, &llama, "gated llama");
    mt_gated_mlp_config retnet = {.C = 6, .F = 9, .layout = MT_GATED_RETNET};
    mlp_check(NULL, &retnet, "gated retnet");
    mt_gated_mlp_config fc1 = {.C = 6, .F = 9, .bias = 1, .layout = MT_GATED_FC1};
    mlp_check(NULL, &fc1, "gated fc1");
}

/* fc1 layout: value_w and gate_w are the two halves of one (2F, C) fc1.weight */
static void test_gated_layouts(void **state)
{
    (void)state;
    mt_gated_mlp_config cfg = {.C = 4, .F = 3, .bias = 1, .layout = MT_GATED_FC1};
    mt_tensor_spec specs[6];
    assert_int_equal(mt_gated_mlp_tensors(&cfg, specs), 4);
    assert_string_equal(specs[0].name, "fc1.weight");
    assert_int_equal(specs[0].shape[0], 6);
    float block[64];
    mt_gated_mlp_params p;
    mt_gated_mlp_params_point(&p, block, &cfg);
    assert_ptr_equal(p.gate_w, p.value_w + 12);
    assert_ptr_equal(p.value_b, block + 24);
    assert_ptr_equal(p.gate_b, p.value_b + 3);
    mt_gated_mlp_config llama = {.C = 4, .F = 3, .layout = MT_GATED_LLAMA};
    assert_int_equal(mt_gated_mlp_tensors(&llama, specs), 3);
    assert_string_equal(specs[0].name, "gate_proj.weight");
    assert_string_equal(specs[1].name, "up_proj.weight");
    assert_string_equal(specs[2].name, "down_proj.weight");
    mt_gated_mlp_params_point(&p, block, &llama);
    assert_ptr_equal(p.gate_w, block);
    assert_ptr_equal(p.value_w, block + 12);
    assert_null(p.value_b);
}

/* ---------------------------------------------------------------- cross-entropy */
typedef struct {
    size_t N;
    int V;
    double smoothing;
    const int32_t *targets;
    double *logits;
} ce_ref;

/* sum over non-ignored rows of (1 - eps)(lse - x_target) + eps (lse - mean_j x_j) */
static double ce_ref_loss(void *p)
{
    ce_ref *m = p;
    double total = 0.0;
    for (size_t i = 0; i < m->N; i++) {
        if (m->targets[i] == 0) continue;
        const double *x = m->logits + i * m->V;
        double mx = -INFINITY, z = 0.0, mean = 0.0;
        for (int j = 0; j < m->V; j++) mx = fmax(mx, x[j]), mean += x[j] / m->V;
        for (int j = 0; j < m->V; j++) z += exp(x[j] - mx);
        double lse = mx + log(z);
        total += (1 - m->smoothing) * (lse - x[m->targets[i]]) + m->smoothing * (lse - mean);
    }
    return total;
}

static void test_cross_entropy(void **state)
{
    (void)state;
    mt_rng rng;
    mt_rng_init(&rng, 6, 0);
    enum { N = 6, V = 8 };
    const int32_t targets[N] = {2, 0, 7, 0, 4, 1}; /* 0 = PAD is ignored */
    for (int smooth = 0; smooth < 2; smooth++) {
        float eps = smooth ? 0.1f : 0.0f;
        float *logits = gc_random(N * V, &rng, 3.0f), *losses = calloc(N, 4), *lse = calloc(N, 4);
        float *dlogits = calloc(N * V, 4);
        double total = mt_cross_entropy_forward(be, losses, lse, logits, targets,
                                                &(mt_loss_call){.BT = N, .V = V, .smoothing = eps});
        mt_cross_entropy_backward(be, dlogits, logits, lse, targets,
                                  &(mt_loss_call){N, V, 0, eps, 1.0f});
        ce_ref m = {N, V, eps, targets, to_double(logits, N * V)};
        double want = ce_ref_loss(&m);
        assert_true(fabs(total - want) < 1e-6 * fabs(want));
        assert_true(losses[1] == 0.0f && losses[3] == 0.0f);
        for (int j = 0; j < V; j++) assert_true(dlogits[1 * V + j] == 0.0f); /* ignored row */
        assert_true(gc_report("layers", smooth ? "cross-entropy (smooth 0.1)" : "cross-entropy",
                              gc_rel_error(m.logits, N * V, dlogits, ce_ref_loss, &m, 64), BOUND));
        free(logits), free(losses), free(lse), free(dlogits), free(m.logits);
    }
}

/* ---------------------------------------------------------------- positions */
static void test_sinusoid_marian_layout(void **state)
{
    (void)state;
    enum { P = 5, C = 6 };
    float table[P * C];
    mt_sinusoid_table(be, table, P, C);
    /* HF: angle(p, j) = p / 10000^(2 floor(j/2) / C); sin of even j first, then cos of odd j */
    for (int p = 0; p < P; p++)
        for (int i = 0; i < C / 2; i++) {
            double angle = p / pow(10000.0, 2.0 * i / C);
            assert_float_equal(table[p * C + i], sin(angle), 1e-7);
            assert_float_equal(table[p * C + C / 2 + i], cos(angle), 1e-7);
        }
    assert_float_equal(table[0 * C + 3], 1.0f, 0.0f); /* cos(0) */
    assert_float_equal(table[1 * C + 0], 0.84147098f, 1e-7); /* sin(1) */
    float out[2 * 3 * C] = {0};
    mt_positions_add(be, out, table, 2, 3, C, 2);
    assert_memory_equal(out + 3 * C, table + 2 * C, 3 * C * sizeof(float)); /* batch row 1 */
}

static void test_rope_inv_freq(void **state)
{
    (void)state;
    float f[4];
    mt_rope_inv_freq(f, 8, 10000.0f, MT_ROPE_LLAMA);
    assert_float_equal(f[0], 1.0f, 0.0f);
    assert_float_equal(f[1], 0.1f, 1e-8); /* 10000^(-2/8) */
    assert_float_equal(f[3], 1e-3f, 1e-10); /* 10000^(-6/8) */
    mt_rope_inv_freq(f, 8, 10000.0f, MT_ROPE_RETNET);
    assert_float_equal(f[3], 1e-4f, 1e-11); /* linspace(0, 1) ends at 10000^-1 */
    assert_float_equal(f[1], (float)pow(10000.0, -1.0 / 3.0), 1e-8);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_linear_forward_parts), cmocka_unit_test(test_linear_grad),
        cmocka_unit_test(test_embedding_tied_grad),  cmocka_unit_test(test_norm_grads),
        cmocka_unit_test(test_dropout_grad),         cmocka_unit_test(test_ffn_grads),
        cmocka_unit_test(test_gated_mlp_grads),      cmocka_unit_test(test_gated_layouts),
        cmocka_unit_test(test_cross_entropy),        cmocka_unit_test(test_sinusoid_marian_layout),
        cmocka_unit_test(test_rope_inv_freq),
    };
    return cmocka_run_group_tests_name("layers", tests, setup, NULL);
}
