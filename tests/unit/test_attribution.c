/* Gradient attribution (mtlab/attribution.h) on tiny random models of every architecture of
 * the registry: saliency and input x gradient against central finite differences of the
 * engine's own log-probs (mt_attribution_logprobs), integrated gradients' completeness at 64
 * steps (<pad> baseline), contrastive rows against the difference of two
 * single-token attributions, the greedy hypothesis, one forward shared by identical copies, and
 * the errors. */
#include "test_util.h"

#include "model_parity.h"
#include "models/attribution_pass.h"
#include "models/model_internal.h"
#include "mtlab/attribution.h"
#include "mtlab/decode.h"
#include "mtlab/error.h"
#include "mtlab/model.h"
#include "mtlab/runner.h"
#include "mtlab/tokenizer.h"

static mt_model *tiny_on(const char *arch, uint64_t seed, const mt_backend *be)
{
    mt_model_config c;
    tiny_model_config(&c, arch, 0.0f);
    mt_model *m = mt_model_create(&c, be, seed);
    if (!m) fail_msg("%s: %s", arch, mt_last_error());
    tiny_model_perturb(mt_model_params(m), mt_model_param_block_size(m), seed);
    return m;
}

static mt_model *tiny(const char *arch, uint64_t seed)
{
    return tiny_on(arch, seed, mt_backend_cpu());
}

static const int32_t src[] = {5, 6, 7, 8, 9};
static const int32_t hyp[] = {11, 12, 13, 14};
#define N_SRC 5
#define N_HYP 4

static mt_attribution attribute(mt_model *m, const int32_t *h, mt_attr_method method,
                                mt_attr_baseline baseline, int32_t contrast, const char *arch)
{
    mt_attr_opts o;
    mt_attr_opts_init(&o);
    o.method = method;
    o.baseline = baseline;
    o.contrast = contrast;
    /* one rule for every integrand: the adaptive one places each row's nodes by its own
     * integrand, so a contrast's row is the difference of two others only up to their errors */
    o.rule = MT_ATTR_RULE_GAUSS_LEGENDRE;
    mt_attribution a;
    if (mt_attribute(m, src, N_SRC, h, N_HYP, &o, &a))
        fail_msg("%s %s: %s", arch, mt_attr_method_name(method), mt_last_error());
    return a;
}

/* Central differences of every row's log-prob along delta = +-h * dir at column col. */
static void fd_rows(mt_model *m, int col, const float *dir, int C, float h, double *out, int rows)
{
    float *delta = calloc((size_t)C, sizeof *delta);
    double plus[N_HYP + 1], minus[N_HYP + 1];
    for (int c = 0; c < C; c++) delta[c] = h * dir[c];
    mt_attr_point point = {1.0f, col, delta};
    assert_int_equal(mt_attribution_logprobs(m, src, N_SRC, hyp, N_HYP, NULL, &point, plus), 0);
    for (int c = 0; c < C; c++) delta[c] = -h * dir[c];
    assert_int_equal(mt_attribution_logprobs(m, src, N_SRC, hyp, N_HYP, NULL, &point, minus), 0);
    for (int j = 0; j < rows; j++) out[j] = (plus[j] - minus[j]) / (2.0 * h);
    free(delta);
}

/* |analytic - fd| <= 2e-3 + 2e-2 |fd|: fp32 forward passes with h = 1e-2 */
static void expect_close(double analytic, double fd, const char *what, const char *arch, int j,
                         int col, double *worst)
{
    double err = fabs(analytic - fd), tol = 2e-3 + 2e-2 * fabs(fd);
    double rel = err / (fabs(fd) > 1e-3 ? fabs(fd) : 1e-3);
    if (rel > *worst) *worst = rel;
    if (err > tol)
        fail_msg("%s %s row %d column %d: analytic %.6g, finite differences %.6g", arch, what, j,
                 col, analytic, fd);
}

static void test_gradients_match_finite_differences(void **state)
{
    (void)state;
    for (const char *const *arch = mt_model_arch_list(); *arch; arch++) {
        mt_model *m = tiny(*arch, 41);
        int C = mt_model_get_config(m)->d_model;
        mt_attribution ixg =
            attribute(m, hyp, MT_ATTR_INPUT_X_GRADIENT, MT_ATTR_BASELINE_ZERO, -1, *arch);
        mt_attribution sal = attribute(m, hyp, MT_ATTR_SALIENCY, MT_ATTR_BASELINE_ZERO, -1, *arch);
        assert_int_equal(ixg.rows, N_HYP + 1);
        assert_int_equal(ixg.cols, sal.cols);
        double worst_ixg = 0.0, worst_sal = 0.0, fd[N_HYP + 1];
        float *unit = calloc((size_t)C, sizeof *unit);
        double *sq = calloc((size_t)(N_HYP + 1), sizeof *sq);
        for (int col = 0; col < ixg.cols; col++) {
            fd_rows(m, col, ixg.inputs + (size_t)col * C, C, 1e-3f, fd, ixg.rows);
            for (int j = 0; j < ixg.rows; j++)
                expect_close(ixg.values[(size_t)j * ixg.cols + col], fd[j], "input x gradient",
                             *arch, j, col, &worst_ixg);
            memset(sq, 0, (size_t)(N_HYP + 1) * sizeof *sq);
            for (int c = 0; c < C; c++) {
                unit[c] = 1.0f;
                fd_rows(m, col, unit, C, 5e-4f, fd, sal.rows);
                unit[c] = 0.0f;
                for (int j = 0; j < sal.rows; j++) sq[j] += fd[j] * fd[j];
            }
            for (int j = 0; j < sal.rows; j++)
                expect_close(sal.values[(size_t)j * sal.cols + col], sqrt(sq[j]), "saliency", *arch,
                             j, col, &worst_sal);
        }
        printf("%-14s input x gradient and saliency vs finite differences: worst relative "
               "error %.2e, %.2e over %d x %d cells\n",
               *arch, worst_ixg, worst_sal, ixg.rows, ixg.cols);
        free(unit);
        free(sq);
        mt_attribution_free(&ixg);
        mt_attribution_free(&sal);
        mt_model_free(m);
    }
}

/* Target-side columns after the position a row is predicted from get nothing. */
static void test_causal_columns_are_zero(void **state)
{
    (void)state;
    for (const char *const *arch = mt_model_arch_list(); *arch; arch++) {
        mt_model *m = tiny(*arch, 42);
        mt_attribution a = attribute(m, hyp, MT_ATTR_SALIENCY, MT_ATTR_BASELINE_ZERO, -1, *arch);
        int prompt = mt_model_is_encdec(m) ? 1 : N_SRC + 1;
        int first_target_col = a.cols - (prompt + N_HYP); /* the decoder sequence's first */
        assert_int_equal(a.n_src, N_SRC + 1);
        for (int j = 0; j < a.rows; j++)
            for (int col = first_target_col; col < a.cols; col++) {
                int pos = col - first_target_col, from = prompt - 1 + j;
                float v = a.values[(size_t)j * a.cols + col];
                if (pos > from) assert_true(v == 0.0f);
                if (pos <= from && v == 0.0f)
                    fail_msg("%s row %d column %d: no gradient", *arch, j, col);
            }
        mt_attribution_free(&a);
        mt_model_free(m);
    }
}

/* One backward of the stacks over a batch of two rows from a fixed output gradient, with or
 * without mt_pass input_grads_only: the gradients of the embedding outputs into dx (B, T, C)
 * and dxs (B, S, C), the weight gradients into gw (the model's gradient block). */
static void stacks_backward(mt_model *m, int input_grads_only, float *dx, float *dxs, float *gw)
{
    const mt_backend *be = m->be;
    int encdec = m->arch->encdec, C = m->cfg.d_model, B = 2;
    int32_t ids[2 * (N_SRC + N_HYP)], srcs[2 * (N_SRC + 1)];
    int T = encdec ? N_HYP : N_SRC + N_HYP, S = encdec ? N_SRC + 1 : 0;
    for (int r = 0; r < B; r++) {
        for (int t = 0; t < T; t++)
            ids[r * T + t] = encdec ? hyp[t] : (t < N_SRC ? src[t] : hyp[t - N_SRC]);
        for (int t = 0; t < S; t++) srcs[r * S + t] = t < N_SRC ? src[(t + r) % N_SRC] : 1;
    }
    mt_batch b = {.B = B, .T = T, .ids = ids, .S = S, .src = encdec ? srcs : NULL};
    assert_int_equal(mt_model_prepare(m, &b), 0);
    assert_non_null(mt_model_run_stacks(m, NULL));
    size_t BT = (size_t)B * T, NS = (size_t)B * S,
           n_scratch = mt_stack_scratch_count(&m->dec, B, T, S);
    if (encdec && mt_stack_scratch_count(&m->enc, B, S, 0) > n_scratch)
        n_scratch = mt_stack_scratch_count(&m->enc, B, S, 0);
    float *host = malloc(BT * C * sizeof *host);
    for (size_t i = 0; i < BT * C; i++) host[i] = (float)sin(0.37 * (double)i);
    float *dout = be->alloc(BT * C * sizeof(float)), *ddx = be->alloc(BT * C * sizeof(float));
    float *dmem = be->alloc((NS ? NS : 1) * C * sizeof(float));
    float *ddxs = be->alloc((NS ? NS : 1) * C * sizeof(float));
    float *scratch = be->alloc(n_scratch * sizeof(float));
    be->upload(dout, host, BT * C * sizeof(float));
    be->memzero(dmem, (NS ? NS : 1) * C * sizeof(float));
    assert_non_null(mt_model_grads(m));
    mt_model_zero_grad(m);
    const float *mem = NULL; /* the encoder's output, as mt_stack_forward returned it */
    if (encdec)
        mem = m->enc.final_norm_tensor >= 0 ? m->enc_acts.fn_out : m->enc_acts.xs[m->enc.n_units];
    mt_pass dec = {.B = B,
                   .T = T,
                   .S = S,
                   .mem = mem,
                   .dmem = dmem,
                   .mask = m->d_mask,
                   .mem_mask = m->d_src_mask,
                   .input_grads_only = input_grads_only};
    mt_stack_backward(m, &m->dec, &m->dec_acts, ddx, dout, &dec, scratch);
    be->download(dx, ddx, BT * C * sizeof(float));
    if (encdec) {
        mt_pass enc = {.B = B, .T = S, .mask = m->d_src_mask, .input_grads_only = input_grads_only};
        mt_stack_backward(m, &m->enc, &m->enc_acts, ddxs, dmem, &enc, scratch);
        be->download(dxs, ddxs, NS * C * sizeof(float));
    }
    be->download(gw, m->grads, mt_model_param_block_size(m) * sizeof(float));
    be->free(dout);
    be->free(ddx);
    be->free(dmem);
    be->free(ddxs);
    be->free(scratch);
    free(host);
}

/* mt_pass input_grads_only skips the weight matrices' products: the gradients of the inputs
 * are the same bit for bit, and fewer weight gradients are made (for every architecture). */
static void test_input_grads_only(void **state)
{
    (void)state;
    for (const char *const *arch = mt_model_arch_list(); *arch; arch++) {
        mt_model *m = tiny(*arch, 47);
        size_t n = (size_t)2 * (N_SRC + N_HYP + 1) * mt_model_get_config(m)->d_model;
        size_t P = mt_model_param_block_size(m);
        float *dx[2], *dxs[2], *gw[2];
        for (int k = 0; k < 2; k++) {
            dx[k] = calloc(n, sizeof(float));
            dxs[k] = calloc(n, sizeof(float));
            gw[k] = calloc(P, sizeof(float));
            stacks_backward(m, k, dx[k], dxs[k], gw[k]);
        }
        if (memcmp(dx[0], dx[1], n * sizeof(float)) || memcmp(dxs[0], dxs[1], n * sizeof(float)))
            fail_msg("%s: input gradients differ with input_grads_only", *arch);
        size_t made[2] = {0, 0};
        for (int k = 0; k < 2; k++)
            for (size_t i = 0; i < P; i++) made[k] += gw[k][i] != 0.0f;
        printf("%-14s input_grads_only: input gradients identical; weight gradients made %zu of "
               "%zu (all: %zu)\n",
               *arch, made[1], P, made[0]);
        if (made[1] * 2 > made[0])
            fail_msg("%s: input_grads_only still makes %zu of %zu weight gradients", *arch, made[1],
                     made[0]);
        for (int k = 0; k < 2; k++) {
            free(dx[k]);
            free(dxs[k]);
            free(gw[k]);
        }
        mt_model_free(m);
    }
}

/* Integrated gradients' completeness at `steps` steps of rule within tol (relative, every
 * row); the attribution into *out when out is not NULL. */
static double completeness(const char *arch, int steps, mt_attr_rule rule, double tol,
                           mt_attribution *out)
{
    mt_model *m = tiny(arch, 43);
    mt_attr_opts o;
    mt_attr_opts_init(&o);
    o.method = MT_ATTR_INTEGRATED_GRADIENTS;
    o.steps = steps;
    o.rule = rule;
    mt_attribution a;
    if (mt_attribute(m, src, N_SRC, hyp, N_HYP, &o, &a)) fail_msg("%s: %s", arch, mt_last_error());
    assert_int_equal(a.steps, steps);
    assert_int_equal(a.rule, rule);
    assert_non_null(a.logp_baseline);
    double worst = 0.0;
    for (int j = 0; j < a.rows; j++) {
        double sum = mt_attribution_row_sum(&a, j), change = a.logp[j] - a.logp_baseline[j];
        double rel = fabs(sum - change) / fabs(change);
        if (rel > worst) worst = rel;
        if (rel > tol)
            fail_msg("%s, %d steps (%s), row %d: attributions sum to %.6g, log-prob changes by "
                     "%.6g",
                     arch, steps, mt_attr_rule_name(rule), j, sum, change);
    }
    printf("%-14s integrated gradients, %4d steps, %-14s <pad> baseline: worst completeness "
           "error %.2e\n",
           arch, steps, mt_attr_rule_name(rule), worst);
    if (out) *out = a;
    else mt_attribution_free(&a);
    mt_model_free(m);
    return worst;
}

/* The largest difference of two attributions' values, relative to the largest value of b. */
static double values_apart(const mt_attribution *a, const mt_attribution *b)
{
    double most = 0.0, apart = 0.0;
    for (size_t i = 0; i < (size_t)a->rows * a->cols; i++) {
        if (fabs(b->values[i]) > most) most = fabs(b->values[i]);
        if (fabs(a->values[i] - b->values[i]) > apart) apart = fabs(a->values[i] - b->values[i]);
    }
    return apart / most;
}

/* Within 1% at 64 steps for every architecture with the adaptive rule. The transformer's ReLU
 * FFN makes the path's integrand jump, where the plain Gauss-Legendre rule (the naive
 * reference) misses by 1.5% at 64 steps; the adaptive rule's values agree with its at 256
 * within 1% of the largest (the same integral, not rescaled rows). */
static void test_integrated_gradients_complete(void **state)
{
    (void)state;
    for (const char *const *arch = mt_model_arch_list(); *arch; arch++) {
        mt_attribution adaptive, reference;
        double worst = completeness(*arch, 64, MT_ATTR_RULE_ADAPTIVE, 0.01, &adaptive);
        double naive = completeness(*arch, 64, MT_ATTR_RULE_GAUSS_LEGENDRE, 1.0, NULL);
        completeness(*arch, 256, MT_ATTR_RULE_GAUSS_LEGENDRE, 0.01, &reference);
        double apart = values_apart(&adaptive, &reference);
        printf("%-14s adaptive at 64 steps vs Gauss-Legendre at 256: values apart by %.2e of the "
               "largest\n",
               *arch, apart);
        assert_true(apart < 0.01);
        if (!strcmp(*arch, "transformer")) assert_true(worst < naive);
        mt_attribution_free(&adaptive);
        mt_attribution_free(&reference);
    }
}

/* Row j with contrast b equals row j for y_j minus row j of a hypothesis with b at j (the row
 * sees only the positions before its own token). */
static void test_contrast_is_the_difference(void **state)
{
    (void)state;
    const int32_t foil = 20;
    const mt_attr_method methods[] = {MT_ATTR_INPUT_X_GRADIENT, MT_ATTR_INTEGRATED_GRADIENTS};
    for (const char *const *arch = mt_model_arch_list(); *arch; arch++) {
        mt_model *m = tiny(*arch, 44);
        for (size_t k = 0; k < 2; k++) {
            mt_attribution both = attribute(m, hyp, methods[k], MT_ATTR_BASELINE_ZERO, foil, *arch);
            mt_attribution mine = attribute(m, hyp, methods[k], MT_ATTR_BASELINE_ZERO, -1, *arch);
            for (int j = 0; j < N_HYP; j++) {
                int32_t other[N_HYP];
                memcpy(other, hyp, sizeof other);
                other[j] = foil;
                mt_attribution theirs =
                    attribute(m, other, methods[k], MT_ATTR_BASELINE_ZERO, -1, *arch);
                assert_float_equal(both.logp[j], mine.logp[j] - theirs.logp[j], 1e-4);
                for (int col = 0; col < both.cols; col++) {
                    double want = (double)mine.values[(size_t)j * mine.cols + col] -
                                  theirs.values[(size_t)j * theirs.cols + col];
                    double got = both.values[(size_t)j * both.cols + col];
                    if (fabs(got - want) > 1e-4 + 1e-4 * fabs(want))
                        fail_msg("%s %s row %d column %d: contrast %.7g, difference %.7g", *arch,
                                 mt_attr_method_name(methods[k]), j, col, got, want);
                }
                mt_attribution_free(&theirs);
            }
            mt_attribution_free(&both);
            mt_attribution_free(&mine);
        }
        mt_model_free(m);
    }
}

/* No hypothesis: the model's greedy translation, <eos> the last row. */
static void test_greedy_hypothesis(void **state)
{
    (void)state;
    for (const char *const *arch = mt_model_arch_list(); *arch; arch++) {
        mt_model *m = tiny(*arch, 45);
        mt_hypothesis want;
        assert_int_equal(mt_decode_greedy_naive(m, src, N_SRC, 8, 1.0f, &want), 0);
        mt_attr_opts o;
        mt_attr_opts_init(&o);
        o.max_new_tokens = 8;
        o.method = MT_ATTR_INPUT_X_GRADIENT;
        mt_attribution a;
        assert_int_equal(mt_attribute(m, src, N_SRC, NULL, 0, &o, &a), 0);
        assert_int_equal(a.rows, want.n_ids + 1);
        for (int j = 0; j < want.n_ids; j++) assert_int_equal(a.row_ids[j], want.ids[j]);
        assert_int_equal(a.row_ids[want.n_ids], mt_model_get_config(m)->eos_id);
        assert_null(a.logp_baseline);
        mt_attribution_free(&a);
        mt_hypothesis_clear(&want);
        mt_model_free(m);
    }
}

/* The bundles transformers loads against PyTorch autograd on the same bundle
 * (tests/fixtures/attribution/make_fixture.py for MarianMTModel, make_decoder_only.py for
 * MambaForCausalLM and LlamaForCausalLM): each row within 1e-4 of the row's largest reference
 * value. */
static int32_t *read_ids(FILE *f, const char *key, int *n)
{
    char word[32];
    assert_int_equal(fscanf(f, "%31s", word), 1);
    assert_string_equal(word, key);
    int32_t *ids = calloc(256, sizeof *ids);
    *n = 0;
    int c;
    while ((c = fgetc(f)) != '\n' && c != EOF) {
        if (c == ' ') continue;
        ungetc(c, f);
        assert_true(*n < 256 && fscanf(f, "%d", &ids[*n]) == 1);
        (*n)++;
    }
    return ids;
}

static void matches_pytorch(const char *fixture, const char *bundle)
{
    char path[256];
    snprintf(path, sizeof path, "tests/fixtures/attribution/%s", fixture);
    FILE *f = fopen(path, "r");
    if (!f) fail_msg("%s: cannot open", path);
    char line[512];
    assert_non_null(fgets(line, sizeof line, f)); /* the comment */
    int n_src, n_hyp;
    int32_t *fsrc = read_ids(f, "src", &n_src), *fhyp = read_ids(f, "hyp", &n_hyp);
    mt_model *m = mt_model_load(bundle, mt_backend_cpu(), 0);
    if (!m) fail_msg("%s", mt_last_error());
    const mt_attr_method methods[] = {MT_ATTR_INPUT_X_GRADIENT, MT_ATTR_SALIENCY};
    for (int k = 0; k < 2; k++) {
        char name[32];
        int rows, cols;
        assert_int_equal(fscanf(f, "%31s %d %d", name, &rows, &cols), 3);
        assert_string_equal(name, mt_attr_method_name(methods[k]));
        mt_attr_opts o;
        mt_attr_opts_init(&o);
        o.method = methods[k];
        mt_attribution a;
        if (mt_attribute(m, fsrc, n_src, fhyp, n_hyp, &o, &a)) fail_msg("%s", mt_last_error());
        assert_int_equal(a.rows, rows);
        assert_int_equal(a.cols, cols);
        double worst = 0.0;
        for (int j = 0; j < rows; j++) {
            double ref[64], most = 0.0, err = 0.0;
            assert_true(cols <= 64);
            for (int c = 0; c < cols; c++) {
                assert_int_equal(fscanf(f, "%lf", &ref[c]), 1);
                if (fabs(ref[c]) > most) most = fabs(ref[c]);
            }
            for (int c = 0; c < cols; c++) {
                double d = fabs(a.values[(size_t)j * cols + c] - ref[c]);
                if (d > err) err = d;
            }
            if (err / most > worst) worst = err / most;
            if (err > 1e-4 * most)
                fail_msg("%s %s row %d: off by %.3g of its largest value %.4g", bundle, name, j,
                         err, most);
        }
        printf("%s %s vs PyTorch autograd: worst row error %.2e of the row's largest value\n",
               bundle, name, worst);
        mt_attribution_free(&a);
    }
    fclose(f);
    free(fsrc);
    free(fhyp);
    mt_model_free(m);
}

static void test_transformer_small_matches_pytorch(void **state)
{
    (void)state;
    matches_pytorch("transformer_small.txt", "models/transformer-small");
}

static void test_decoder_only_match_pytorch(void **state)
{
    (void)state;
    matches_pytorch("mamba_hf.txt", "tests/fixtures/mamba_hf/st");
    matches_pytorch("transformer_pp_small.txt", "models/transformer++-small");
    matches_pytorch("mamba_small.txt", "models/mamba-small");
}

/* A decoder-only model with a text prompt template (a hub Mamba, tests/fixtures/mamba_hf/st:
 * "{src}<sep>") holds its separator in the encoded source: the attribution's inputs are the
 * encoded source and the hypothesis, no <sep> appended (as decoding and the probes take it). */
static void test_prompt_template(void **state)
{
    (void)state;
    mt_runner *r = mt_runner_open("tests/fixtures/mamba_hf/st", "cpu", 0);
    if (!r) fail_msg("%s", mt_last_error());
    int *src_ids, *hyp_ids;
    size_t n_src, n_hyp;
    assert_int_equal(mt_source_encode(r->model, r->tok, "hola mundo", &src_ids, &n_src), 0);
    assert_int_equal(mt_tokenizer_encode(r->tok, "hello world", &hyp_ids, &n_hyp), 0);
    int32_t s32[64], h32[64];
    assert_true(n_src < 64 && n_hyp < 64);
    for (size_t i = 0; i < n_src; i++) s32[i] = src_ids[i];
    for (size_t i = 0; i < n_hyp; i++) h32[i] = hyp_ids[i];
    mt_attr_opts o;
    mt_attr_opts_init(&o);
    o.method = MT_ATTR_INPUT_X_GRADIENT;
    mt_attribution a;
    assert_int_equal(mt_attribute(r->model, s32, (int)n_src, h32, (int)n_hyp, &o, &a), 0);
    assert_int_equal(a.n_src, (int)n_src);
    assert_int_equal(a.cols, (int)(n_src + n_hyp));
    for (size_t i = 0; i < n_src; i++) assert_int_equal(a.col_ids[i], s32[i]);
    assert_int_equal(a.rows, (int)n_hyp + 1);
    mt_attribution_free(&a);
    free(src_ids);
    free(hyp_ids);
    mt_runner_close(r);
}

/* A cancel flag stops the attribution between passes: set before, nothing runs; set by a
 * backend whose alloc sets it at its second call (inside the first pass), mt_attribute stops
 * before the next pass, with no result and fewer allocations than a whole run makes. */
static atomic_int *cancel_at_pass_flag;
static int cancel_at_pass_count;
static const mt_backend *cancel_cpu;
static void *cancel_at_second_alloc(size_t n)
{
    if (++cancel_at_pass_count == 2) atomic_store(cancel_at_pass_flag, 1);
    return cancel_cpu->alloc(n);
}

static void test_cancel(void **state)
{
    (void)state;
    atomic_int cancel;
    atomic_init(&cancel, 1);
    mt_model *m = tiny("mamba", 48);
    mt_attr_opts o;
    mt_attr_opts_init(&o);
    o.method = MT_ATTR_INTEGRATED_GRADIENTS;
    o.cancel = &cancel;
    mt_attribution a;
    /* set before: nothing runs, neither the greedy decode nor a pass */
    assert_int_equal(mt_attribute(m, src, N_SRC, NULL, 0, &o, &a), -1);
    assert_string_equal(mt_last_error(), "attribution cancelled");
    assert_null(a.values);
    assert_int_equal(mt_attribute(m, src, N_SRC, hyp, N_HYP, &o, &a), -1);
    assert_null(a.values);
    mt_model_free(m);

    cancel_cpu = mt_backend_cpu();
    mt_backend counting = *cancel_cpu;
    counting.alloc = cancel_at_second_alloc;
    mt_model_config c;
    tiny_model_config(&c, "mamba", 0.0f);
    m = mt_model_create(&c, &counting, 48);
    assert_non_null(m);
    atomic_store(&cancel, 0);
    cancel_at_pass_flag = &cancel;
    cancel_at_pass_count = 0;
    o.steps = 64; /* 5 rows x 64 steps: several passes */
    assert_int_equal(mt_attribute(m, src, N_SRC, hyp, N_HYP, &o, &a), -1);
    assert_string_equal(mt_last_error(), "attribution cancelled");
    assert_null(a.values);
    int with_cancel = cancel_at_pass_count;
    /* the same without a cancel flag runs every pass */
    atomic_store(&cancel, 0);
    o.cancel = NULL;
    cancel_at_pass_count = 0;
    assert_int_equal(mt_attribute(m, src, N_SRC, hyp, N_HYP, &o, &a), 0);
    printf("cancelled in the first pass: %d allocations, %d uncancelled\n", with_cancel,
           cancel_at_pass_count);
    assert_true(with_cancel < cancel_at_pass_count);
    mt_attribution_free(&a);
    mt_model_free(m);
}

static int allocations;
static void *counting_alloc(size_t n)
{
    allocations++;
    return mt_backend_cpu()->alloc(n);
}

/* The passes reuse their buffers: the allocations of an attribution do not grow with its
 * passes (each allocation is zero-filled page by page: 10-15% of the time when every pass
 * made its own, docs/attribution.md §4). */
static int attribution_allocations(int steps)
{
    mt_backend counting = *mt_backend_cpu();
    counting.alloc = counting_alloc;
    mt_model *m = tiny_on("transformer", 49, &counting);
    mt_attr_opts o;
    mt_attr_opts_init(&o);
    o.method = MT_ATTR_INTEGRATED_GRADIENTS;
    o.rule = MT_ATTR_RULE_GAUSS_LEGENDRE;
    o.steps = steps;
    mt_attribution a;
    allocations = 0;
    assert_int_equal(mt_attribute(m, src, N_SRC, hyp, N_HYP, &o, &a), 0);
    int n = allocations;
    mt_attribution_free(&a);
    mt_model_free(m);
    return n;
}

static void test_allocations_do_not_grow_with_passes(void **state)
{
    (void)state;
    int few = attribution_allocations(8), many = attribution_allocations(512);
    printf("allocations of an attribution: %d at 8 steps, %d at 512\n", few, many);
    assert_int_equal(few, many);
}

static size_t norm_rows;
static void counting_layernorm(float *out, float *mean, float *rstd, const float *x,
                               const float *weight, const float *bias, size_t BT, int C, float eps)
{
    norm_rows += BT;
    mt_backend_cpu()->layernorm_forward(out, mean, rstd, x, weight, bias, BT, C, eps);
}
static void counting_rmsnorm(float *out, float *rstd, const float *x, const float *weight,
                             size_t BT, int C, float eps)
{
    norm_rows += BT;
    mt_backend_cpu()->rmsnorm_forward(out, rstd, x, weight, BT, C, eps);
}

/* The CPU backend with the norm forwards counting their rows in norm_rows */
static const mt_backend *norm_counting(void)
{
    static mt_backend counting;
    counting = *mt_backend_cpu();
    counting.layernorm_forward = counting_layernorm;
    counting.rmsnorm_forward = counting_rmsnorm;
    return &counting;
}

/* The evaluations ev (n, one pass) with the copies at one path point sharing a forward and
 * with each copy running its own (q->shared_forward 0, the reference): the values (each
 * evaluation's row) within 1e-5 of the row's largest, the log-probs within 1e-5; the rows the
 * forwards normed into used (shared, own). */
static void shared_against_own(const char *arch, attr_seq *q, mt_attr_method method,
                               const attr_eval *ev, int n, size_t used[2])
{
    int cols = q->S + q->T;
    double logp[2][2 * N_HYP], *out[2];
    for (int own = 0; own < 2; own++) {
        q->shared_forward = !own;
        out[own] = calloc((size_t)n * cols, sizeof **out);
        norm_rows = 0;
        assert_int_equal(
            attr_gradient_passes(q, method, ev, n, &(attr_sink){NULL, out[own], logp[own]}, NULL),
            0);
        used[own] = norm_rows;
    }
    q->shared_forward = 1;
    double worst = 0.0;
    for (int i = 0; i < n; i++) {
        double most = 0.0, apart = 0.0;
        for (int c = 0; c < cols; c++) {
            double ref = out[1][(size_t)i * cols + c], got = out[0][(size_t)i * cols + c];
            most = fmax(most, fabs(ref));
            apart = fmax(apart, fabs(got - ref));
        }
        worst = fmax(worst, apart / most);
        if (apart > 1e-5 * most || fabs(logp[0][i] - logp[1][i]) > 1e-5)
            fail_msg("%s %s, evaluation %d (row %d at %g): shared forward %.3g of the row's "
                     "largest value from each copy's own (log-prob %.9g, %.9g)",
                     arch, mt_attr_method_name(method), i, ev[i].j, ev[i].alpha, apart / most,
                     logp[0][i], logp[1][i]);
    }
    printf("%-14s %-20s %d copies: the forwards normed %zu rows (each copy its own: %zu); values "
           "apart %.1e\n",
           arch, mt_attr_method_name(method), n, used[0], used[1], worst);
    free(out[0]);
    free(out[1]);
}

/* The copies of one pass at one path point share one forward (attribution_copies.h): input x
 * gradient's 5 rows, all at the input, one forward at batch 1 (the rows one copy's forward
 * norms, as attr_all_logprobs's), integrated gradients' 4 rows at two alphas, given
 * interleaved, one forward at batch 2; each within 1e-5 of every copy running its own, for
 * every architecture (a field left out of attribution_copies.c's lists fails it). */
static void test_copies_share_one_forward(void **state)
{
    (void)state;
    for (const char *const *arch = mt_model_arch_list(); *arch; arch++) {
        mt_model *m = tiny_on(*arch, 51, norm_counting());
        assert_non_null(mt_model_grads(m));
        mt_attr_opts o;
        mt_attr_opts_init(&o);
        attr_seq q;
        assert_int_equal(attr_seq_init(&q, m, src, N_SRC, hyp, N_HYP, &o), 0);
        if (!q.shared_forward) fail_msg("%s: a unit kind's activations are not listed", *arch);
        attr_eval ev[2 * N_HYP];
        double logp[N_HYP + 1];
        size_t used[2];
        /* input x gradient: every row at the input */
        for (int j = 0; j < q.rows; j++) ev[j] = (attr_eval){j, 1.0f};
        norm_rows = 0;
        assert_int_equal(attr_all_logprobs(&q, &(mt_attr_point){1.0f, -1, NULL}, logp), 0);
        size_t one = norm_rows;
        shared_against_own(*arch, &q, MT_ATTR_INPUT_X_GRADIENT, ev, q.rows, used);
        if (used[0] != one)
            fail_msg("%s: the forward of %d copies normed %zu rows, one copy's %zu", *arch, q.rows,
                     used[0], one);
        assert_int_equal(used[1], (size_t)q.rows * one);
        /* integrated gradients: rows 0..3 at 0.75 and 0.25 each, one pass up to row 3's position */
        for (int i = 0; i < 2 * N_HYP; i++) ev[i] = (attr_eval){i / 2, i % 2 ? 0.25f : 0.75f};
        norm_rows = 0;
        assert_int_equal(attr_gradient_passes(&q, MT_ATTR_INTEGRATED_GRADIENTS, ev + 2 * N_HYP - 1,
                                              1, &(attr_sink){NULL, (double[64]){0}, logp}, NULL),
                         0);
        one = norm_rows;
        shared_against_own(*arch, &q, MT_ATTR_INTEGRATED_GRADIENTS, ev, 2 * N_HYP, used);
        if (used[0] != 2 * one)
            fail_msg("%s: the forward of 8 copies at 2 alphas normed %zu rows, two copies' %zu",
                     *arch, used[0], 2 * one);
        assert_int_equal(used[1], (size_t)2 * N_HYP * one);
        attr_seq_free(&q);
        mt_model_free(m);
    }
}

/* Saliency and input x gradient take each row's log-prob from its own pass (at the input): an
 * attribution of 5 rows, one pass of 5 copies sharing one forward, runs one forward in all
 * (norm rows as mt_attribution_logprobs's one), and its log-probs are those of
 * mt_attribution_logprobs. */
static void test_one_forward_in_all(void **state)
{
    (void)state;
    for (const char *const *arch = mt_model_arch_list(); *arch; arch++) {
        mt_model *m = tiny_on(*arch, 53, norm_counting());
        double logp[N_HYP + 1];
        norm_rows = 0;
        assert_int_equal(mt_attribution_logprobs(m, src, N_SRC, hyp, N_HYP, NULL,
                                                 &(mt_attr_point){1.0f, -1, NULL}, logp),
                         0);
        size_t one = norm_rows;
        for (int method = MT_ATTR_SALIENCY; method <= MT_ATTR_INPUT_X_GRADIENT; method++) {
            norm_rows = 0;
            mt_attribution a =
                attribute(m, hyp, (mt_attr_method)method, MT_ATTR_BASELINE_PAD, -1, *arch);
            if (norm_rows != one)
                fail_msg("%s %s: the forwards normed %zu rows, one forward's %zu", *arch,
                         mt_attr_method_name((mt_attr_method)method), norm_rows, one);
            for (int j = 0; j < a.rows; j++)
                if (fabs(a.logp[j] - logp[j]) > 1e-6)
                    fail_msg("%s row %d: log-prob %.9g, mt_attribution_logprobs %.9g", *arch, j,
                             a.logp[j], logp[j]);
            mt_attribution_free(&a);
        }
        mt_model_free(m);
    }
}

static void test_errors(void **state)
{
    (void)state;
    mt_attr_method method;
    assert_int_equal(mt_attr_method_parse("integrated_gradients", &method), 0);
    assert_int_equal(method, MT_ATTR_INTEGRATED_GRADIENTS);
    assert_int_equal(mt_attr_method_parse("gradient", &method), -1);
    assert_non_null(strstr(mt_last_error(), "unknown attribution method 'gradient'"));
    mt_attr_rule rule;
    assert_int_equal(mt_attr_rule_parse("gauss-legendre", &rule), 0);
    assert_int_equal(rule, MT_ATTR_RULE_GAUSS_LEGENDRE);
    assert_int_equal(mt_attr_rule_parse("simpson", &rule), -1);
    assert_string_equal(mt_last_error(),
                        "unknown integration rule 'simpson' (adaptive or gauss-legendre)");

    mt_model *m = tiny("mamba", 46);
    mt_attr_opts o;
    mt_attr_opts_init(&o);
    mt_attribution a;
    o.contrast = TINY_MODEL_VOCAB;
    assert_int_equal(mt_attribute(m, src, N_SRC, hyp, N_HYP, &o, &a), -1);
    assert_non_null(strstr(mt_last_error(), "contrast token 40 is outside the vocabulary"));
    assert_null(a.values);
    o.contrast = -1;
    const int32_t bad[] = {11, 99};
    assert_int_equal(mt_attribute(m, src, N_SRC, bad, 2, &o, &a), -1);
    assert_non_null(strstr(mt_last_error(), "outside the vocabulary"));
    o.steps = MT_ATTR_MAX_STEPS + 1;
    assert_int_equal(mt_attribute(m, src, N_SRC, hyp, N_HYP, &o, &a), -1);
    assert_non_null(strstr(mt_last_error(), "steps"));
    o.steps = 0;
    o.rule = MT_ATTR_RULES;
    assert_int_equal(mt_attribute(m, src, N_SRC, hyp, N_HYP, &o, &a), -1);
    assert_non_null(strstr(mt_last_error(), "unknown integration rule"));
    o.rule = MT_ATTR_RULE_ADAPTIVE;
    /* the adaptive rule's first piece needs 2 evaluations a row: 1 step is Gauss-Legendre's
     * (the midpoint rule), and says so */
    o.method = MT_ATTR_INTEGRATED_GRADIENTS;
    o.steps = 1;
    assert_int_equal(mt_attribute(m, src, N_SRC, hyp, N_HYP, &o, &a), 0);
    assert_int_equal(a.rule, MT_ATTR_RULE_GAUSS_LEGENDRE);
    assert_int_equal(a.steps, 1);
    mt_attribution_free(&a);
    o.steps = 3;
    assert_int_equal(mt_attribute(m, src, N_SRC, hyp, N_HYP, &o, &a), 0);
    assert_int_equal(a.rule, MT_ATTR_RULE_ADAPTIVE);
    mt_attribution_free(&a);
    o.method = MT_ATTR_SALIENCY;
    o.steps = 0;
    /* the gradient block is not kept by an attribution of a model that had none */
    assert_int_equal(mt_attribute(m, src, N_SRC, hyp, N_HYP, &o, &a), 0);
    mt_attribution_free(&a);
    mt_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gradients_match_finite_differences),
        cmocka_unit_test(test_causal_columns_are_zero),
        cmocka_unit_test(test_input_grads_only),
        cmocka_unit_test(test_integrated_gradients_complete),
        cmocka_unit_test(test_contrast_is_the_difference),
        cmocka_unit_test(test_greedy_hypothesis),
        cmocka_unit_test(test_transformer_small_matches_pytorch),
        cmocka_unit_test(test_decoder_only_match_pytorch),
        cmocka_unit_test(test_prompt_template),
        cmocka_unit_test(test_cancel),
        cmocka_unit_test(test_allocations_do_not_grow_with_passes),
        cmocka_unit_test(test_copies_share_one_forward),
        cmocka_unit_test(test_one_forward_in_all),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
