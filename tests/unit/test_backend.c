/* The CPU backend's fast paths against the naive reference backend (attention with every mask
 * kind, rotary, conv1d, norms), and the remaining operations against formulas computed here in
 * double; the matrix products are test_backend_gemm's. Tolerances are stated per test as
 * relative errors. */
#include "test_util.h"

#include <omp.h>
#include "grad_check.h"
#include "math/activation.h"
#include "mtlab/backend.h"
#include "mtlab/error.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/cpu_simd.h"

static const mt_backend *fast, *naive;

static int setup(void **state)
{
    (void)state;
    fast = mt_backend_cpu();
    naive = mt_backend_cpu_naive();
    return 0;
}

/* The scan's inline exp (cpu_simd.h): within 2 float roundings of e^x over [-87, 88], exactly 1
 * at 0, and the clamped ends finite and positive far beyond (the scan's decays go to -inf). */
static void test_expf_poly(void **state)
{
    (void)state;
    double worst = 0.0;
    for (double x = -87.0; x <= 88.0; x += 1.0 / 4096) {
        float xf = (float)x;
        double ref = exp((double)xf), e = fabs((double)cpu_expf_poly(xf) - ref) / ref;
        worst = e > worst ? e : worst;
    }
    printf("backend: inline expf over [-87, 88] max relative error %.2e (bound 1.2e-7)\n", worst);
    assert_true(worst < 1.2e-7);
    assert_true(cpu_expf_poly(0.0f) == 1.0f);
    float lo = cpu_expf_poly(-1e30f), hi = cpu_expf_poly(1e30f);
    assert_true(lo >= 0.0f && lo < 2e-38f);
    assert_true(isfinite(hi) && hi > 1e38f);
}

/* ---------------------------------------------------------------- attention */
typedef struct {
    const char *name;
    int B, H, Tq, Tk, Dh, causal, window, q_pos0, masked, cache_extra;
} attn_setup;

static void attention_case(const attn_setup *s, mt_rng *rng)
{
    int C = s->H * s->Dh, Tcap = s->Tk + s->cache_extra;
    mt_attn_desc d = {.B = s->B,
                      .H = s->H,
                      .Tq = s->Tq,
                      .Tk = s->Tk,
                      .Dh = s->Dh,
                      .causal = s->causal,
                      .window = s->window,
                      .q_pos0 = s->q_pos0,
                      .scale = 1.0f / sqrtf((float)s->Dh)};
    /* k/v and the mask sit in buffers of capacity Tcap, as in a KV cache */
    if (s->cache_extra) d.kv_bstride = (size_t)Tcap * C, d.mask_bstride = (size_t)Tcap;
    uint8_t *mask = malloc((size_t)s->B * Tcap);
    for (int b = 0; b < s->B; b++)
        for (int j = 0; j < Tcap; j++) mask[b * Tcap + j] = !(s->masked && j < b); /* b left pads */
    if (s->masked) d.key_mask = mask;
    size_t nq = (size_t)s->B * s->Tq * C, nk = (size_t)s->B * Tcap * C;
    size_t na = (size_t)s->B * s->H * s->Tq * s->Tk;
    float *q = gc_random(nq, rng, 1.5f), *k = gc_random(nk, rng, 1.5f),
          *v = gc_random(nk, rng, 1.0f);
    float *o1 = calloc(nq, 4), *o2 = calloc(nq, 4), *p1 = calloc(na, 4), *p2 = calloc(na, 4);
    fast->attention_forward(o1, p1, q, k, v, &d);
    naive->attention_forward(o2, p2, q, k, v, &d);
    double e_out = max_rel(o1, o2, nq), e_att = max_rel(p1, p2, na);
    /* without att (no probe, no backward) the outputs are the same */
    float *o3 = calloc(nq, 4), *o4 = calloc(nq, 4);
    fast->attention_forward(o3, NULL, q, k, v, &d);
    naive->attention_forward(o4, NULL, q, k, v, &d);
    assert_memory_equal(o3, o1, nq * 4);
    assert_memory_equal(o4, o2, nq * 4);
    free(o3), free(o4);
    /* masking semantics, checked on the fast result */
    for (int b = 0; b < s->B; b++)
        for (int h = 0; h < s->H; h++)
            for (int i = 0; i < s->Tq; i++) {
                const float *row = p1 + (((size_t)b * s->H + h) * s->Tq + i) * s->Tk;
                int pos = s->q_pos0 + i, n_visible = 0;
                double sum = 0.0;
                for (int j = 0; j < s->Tk; j++) {
                    int visible = !(s->masked && j < b) && !(s->causal && j > pos) &&
                                  !(s->causal && s->window && j < pos - s->window);
                    if (!visible) assert_true(row[j] == 0.0f);
                    n_visible += visible;
                    sum += row[j];
                }
                assert_true(fabs(sum - (n_visible ? 1.0 : 0.0)) < 1e-5);
            }
    float *dout = gc_random(nq, rng, 1.0f);
    float *dq1 = gc_random(nq, rng, 1.0f), *dk1 = gc_random(nk, rng, 1.0f),
          *dv1 = gc_random(nk, rng, 1.0f);
    float *dq2 = test_copy_floats(dq1, nq), *dk2 = test_copy_floats(dk1, nk),
          *dv2 = test_copy_floats(dv1, nk);
    float *s1 = calloc(na, 4), *s2 = calloc(na, 4);
    fast->attention_backward(dq1, dk1, dv1, s1, dout, q, k, v, p1, &d);
    naive->attention_backward(dq2, dk2, dv2, s2, dout, q, k, v, p1, &d);
    double e_dq = max_rel(dq1, dq2, nq), e_dk = max_rel(dk1, dk2, nk), e_dv = max_rel(dv1, dv2, nk);
    printf("backend: attention %-22s out %.1e att %.1e dq %.1e dk %.1e dv %.1e (bound 1e-6)\n",
           s->name, e_out, e_att, e_dq, e_dk, e_dv);
    assert_true(e_out < 1e-6 && e_att < 1e-6 && e_dq < 1e-6 && e_dk < 1e-6 && e_dv < 1e-6);
    free(mask), free(q), free(k), free(v), free(o1), free(o2), free(p1), free(p2), free(dout);
    free(dq1), free(dk1), free(dv1), free(dq2), free(dk2), free(dv2), free(s1), free(s2);
}

static void test_attention_vs_naive(void **state)
{
    (void)state;
    mt_rng rng;
    mt_rng_init(&rng, 11, 0);
    const attn_setup cases[] = {
        {"bidirectional", 2, 3, 7, 7, 4, 0, 0, 0, 0, 0},
        {"bidirectional+padding", 3, 2, 6, 6, 5, 0, 0, 0, 1, 0},
        {"causal", 2, 2, 9, 9, 4, 1, 0, 0, 0, 0},
        {"causal+left padding", 3, 2, 8, 8, 4, 1, 0, 0, 1, 0},
        {"causal window 3", 2, 2, 12, 12, 4, 1, 3, 0, 0, 0},
        {"window 2+padding", 3, 1, 10, 10, 3, 1, 2, 0, 1, 0},
        {"cross (Tq != Tk)", 2, 2, 5, 9, 4, 0, 0, 0, 1, 0},
        {"decode over a cache", 3, 2, 2, 9, 4, 1, 0, 7, 1, 5},
        {"decode window 4", 2, 2, 1, 11, 4, 1, 4, 10, 0, 3},
        /* one row with work enough for threads: heads one by one */
        {"decode, 1 row, 400 keys", 1, 4, 1, 400, 48, 1, 0, 399, 0, 0},
        /* 4 heads x 1030 keys overflow the stack scratch: heads in pairs */
        {"decode, 1030 keys", 2, 4, 1, 1030, 4, 1, 0, 1029, 1, 2},
        /* longer problems: the causal and window bounds over tens of rows, and a prompt's
         * second chunk (its queries from position 13 on) */
        {"causal, 40 rows", 2, 2, 40, 40, 5, 1, 0, 0, 0, 0},
        {"causal+left padding, 20 rows", 2, 3, 20, 20, 4, 1, 0, 0, 1, 0},
        {"causal window 5, 37 rows", 2, 2, 37, 37, 4, 1, 5, 0, 1, 0},
        {"prefill chunk at 13", 2, 2, 37, 50, 4, 1, 0, 13, 0, 0},
        /* the sizes of training's heads: the tile product's strips, vectors and causal skips */
        {"causal, 64 rows, Dh 24", 2, 3, 64, 64, 24, 1, 0, 0, 0, 0},
        {"causal+padding, 70 rows, Dh 40", 2, 2, 70, 70, 40, 1, 0, 0, 1, 0},
        {"cross 33 x 100, Dh 17, padding", 2, 2, 33, 100, 17, 0, 0, 0, 1, 0},
        {"window 9, 100 rows, Dh 8", 1, 2, 100, 100, 8, 1, 9, 0, 0, 0},
        {"prefill chunk at 40, Dh 24", 2, 2, 24, 64, 24, 1, 0, 40, 0, 0},
        /* heads of whole vectors (Dh 48, transformer-small's; 32; 16): v, dout, k and q read
         * where they lie, no copy */
        {"causal+padding, 32 rows, Dh 48", 2, 4, 32, 32, 48, 1, 0, 0, 1, 0},
        {"cross 30 x 45, Dh 32, padding", 2, 2, 30, 45, 32, 0, 0, 0, 1, 0},
        {"window 7, 50 rows, Dh 16", 1, 2, 50, 50, 16, 1, 7, 0, 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) attention_case(&cases[i], &rng);
}

/* A query with no visible key (left-padded causal row 0) gets zeros, not NaN. */
static void test_attention_fully_masked_row(void **state)
{
    (void)state;
    float q[8] = {1, 2, 3, 4, 5, 6, 7, 8}, k[8] = {1, 1, 1, 1, 2, 2, 2, 2},
          v[8] = {3, 3, 3, 3, 4, 4, 4, 4};
    uint8_t mask[2] = {0, 1};
    mt_attn_desc d = {
        .B = 1, .H = 1, .Tq = 2, .Tk = 2, .Dh = 4, .causal = 1, .key_mask = mask, .scale = 0.5f};
    float out[8], att[4];
    for (int which = 0; which < 2; which++) {
        (which ? naive : fast)->attention_forward(out, att, q, k, v, &d);
        for (int e = 0; e < 4; e++) assert_true(out[e] == 0.0f);
        assert_true(att[0] == 0.0f && att[1] == 0.0f && att[2] == 0.0f && att[3] == 1.0f);
        for (int e = 4; e < 8; e++) assert_float_equal(out[e], 4.0f, 1e-6);
    }
}

/* A key a query may not see scores far above the visible ones (88 and more: exp of the gap
 * underflows float): it still gets weight 0 and the visible keys a proper softmax, no NaN and
 * no all-zero row. The softmax's maximum must be taken over the visible keys only; over all
 * keys it is equally right until the exps underflow. Both paths of the fast backend (one
 * query, several), a padding mask and a causal one, against the softmax computed here. */
static void masked_far_above_case(const mt_backend *be, int Tq, int causal, float gap)
{
    enum { TK = 5 };
    float score[TK] = {0.0f, 1.0f, -0.5f, 2.0f, 0.5f};
    int hidden = causal ? 4 : 2; /* the key no query here may see... */
    score[hidden] = 2.0f + gap;
    uint8_t mask[TK] = {1, 1, 0, 1, 1};
    /* ...causal: queries at positions 3.. see keys up to their own; key 4 only from position 4 */
    mt_attn_desc d = {.B = 1,
                      .H = 1,
                      .Tq = Tq,
                      .Tk = TK,
                      .Dh = 2,
                      .causal = causal,
                      .q_pos0 = causal ? 3 : 0,
                      .key_mask = causal ? NULL : mask,
                      .scale = 1.0f};
    float q[3 * 2], k[TK * 2], v[TK * 2], out[3 * 2], att[3 * TK];
    for (int i = 0; i < Tq; i++) q[2 * i] = 1.0f, q[2 * i + 1] = 0.0f;
    for (int j = 0; j < TK; j++)
        k[2 * j] = score[j], k[2 * j + 1] = 0.0f, v[2 * j] = j + 1.0f, v[2 * j + 1] = -10.0f * j;
    for (int with_att = 1; with_att >= 0; with_att--) {
        be->attention_forward(out, with_att ? att : NULL, q, k, v, &d);
        for (int i = 0; i < Tq; i++) {
            double mx = -INFINITY, p[TK], sum = 0.0, o[2] = {0, 0};
            int visible[TK];
            for (int j = 0; j < TK; j++) {
                visible[j] = causal ? j <= 3 + i : mask[j];
                if (visible[j] && score[j] > mx) mx = score[j];
            }
            for (int j = 0; j < TK; j++)
                sum += p[j] = visible[j] ? exp((double)score[j] - mx) : 0.0;
            for (int j = 0; j < TK; j++) {
                p[j] /= sum;
                o[0] += p[j] * v[2 * j], o[1] += p[j] * v[2 * j + 1];
                if (with_att && !(fabs(att[i * TK + j] - p[j]) < 1e-6))
                    fail_msg("gap %g, Tq %d, causal %d, query %d: weight of key %d is %g, want %g",
                             gap, Tq, causal, i, j, att[i * TK + j], p[j]);
            }
            for (int e = 0; e < 2; e++)
                if (!(fabs(out[2 * i + e] - o[e]) <= 1e-5 * (1 + fabs(o[e]))))
                    fail_msg("gap %g, Tq %d, causal %d, query %d: out[%d] is %g, want %g", gap, Tq,
                             causal, i, e, out[2 * i + e], o[e]);
        }
    }
}

static void test_attention_masked_key_far_above(void **state)
{
    (void)state;
    const float gaps[] = {10.0f, 88.0f, 90.0f, 200.0f, 1e30f};
    for (int which = 0; which < 2; which++)
        for (size_t g = 0; g < sizeof gaps / sizeof gaps[0]; g++)
            for (int causal = 0; causal < 2; causal++)
                for (int Tq = 1; Tq <= 3; Tq += 2)
                    masked_far_above_case(which ? naive : fast, Tq, causal, gaps[g]);
}

/* ---------------------------------------------------------------- rotary */
/* forward against the rotation in double, explicit positions against pos0 + t, backward as the
 * inverse; rot_dim / 2 pairs with inv_freq[i] = base^(-2i / rot_dim) */
static void rope_case(mt_rng *rng, int H, int Dh, int rot, float base)
{
    enum { B = 2, T = 5 };
    size_t n = (size_t)B * T * H * Dh;
    int half = rot / 2;
    float *inv_freq = malloc((size_t)half * sizeof *inv_freq);
    for (int i = 0; i < half; i++) inv_freq[i] = (float)pow(base, -2.0 * i / rot);
    for (int interleaved = 0; interleaved < 2; interleaved++) {
        float *x = gc_random(n, rng, 1.0f), *y = test_copy_floats(x, n);
        fast->rope_forward(y, NULL, B, T, H, Dh, rot, 3, inv_freq, interleaved);
        for (int b = 0; b < B; b++)
            for (int t = 0; t < T; t++)
                for (int h = 0; h < H; h++) {
                    const float *xi = x + (((size_t)b * T + t) * H + h) * Dh;
                    const float *yi = y + (((size_t)b * T + t) * H + h) * Dh;
                    for (int i = 0; i < half; i++) {
                        double angle = (3 + t) * (double)inv_freq[i];
                        int ia = interleaved ? 2 * i : i, ib = interleaved ? 2 * i + 1 : i + half;
                        assert_float_equal(yi[ia], xi[ia] * cos(angle) - xi[ib] * sin(angle), 2e-6);
                        assert_float_equal(yi[ib], xi[ib] * cos(angle) + xi[ia] * sin(angle), 2e-6);
                    }
                    for (int e = rot; e < Dh; e++) assert_true(yi[e] == xi[e]); /* not rotated */
                }
        /* explicit positions give the same as pos0 + t */
        int32_t pos[B * T];
        for (int i = 0; i < B * T; i++) pos[i] = 3 + i % T;
        float *z = test_copy_floats(x, n);
        fast->rope_forward(z, pos, B, T, H, Dh, rot, 0, inv_freq, interleaved);
        assert_memory_equal(z, y, n * sizeof(float));
        /* backward is the inverse rotation */
        fast->rope_backward(y, NULL, B, T, H, Dh, rot, 3, inv_freq, interleaved);
        assert_true(max_rel(y, x, n) < 1e-6);
        free(x), free(y), free(z);
    }
    free(inv_freq);
}

/* a head of 2 pairs of 3, one of 131 pairs of 133, and one of 300 pairs (more than a token's
 * angles the CPU backend keeps on the stack, cpu_embedding.c) of 602: the table of positions
 * (pos NULL) and each token's own angles (explicit positions) both */
static void test_rope(void **state)
{
    (void)state;
    mt_rng rng;
    mt_rng_init(&rng, 12, 0);
    rope_case(&rng, 2, 6, 4, 10000.0f);
    rope_case(&rng, 3, 266, 262, 10000.0f);
    rope_case(&rng, 1, 602, 600, 10000.0f);
}

/* ---------------------------------------------------------------- conv1d */
/* forward against a double reference, then a prefill of 2 steps and the rest one step at a
 * time, bit for bit the forward's outputs; 21 channels run past a vector width, so the step's
 * K = 4 vector loop and its tail are both checked, and K = 3 takes the step's general loop */
static void conv1d_case(int K, uint64_t seed)
{
    mt_rng rng;
    mt_rng_init(&rng, seed, 0);
    enum { B = 2, T = 7, C = 21 };
    float *x = gc_random(B * T * C, &rng, 1.0f), *w = gc_random(C * K, &rng, 1.0f);
    float *bias = gc_random(C, &rng, 1.0f), *out = calloc(B * T * C, 4);
    fast->conv1d_forward(out, x, w, bias, B, T, C, K);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int c = 0; c < C; c++) {
                double want = bias[c];
                for (int k = 0; k < K; k++)
                    if (t - K + 1 + k >= 0)
                        want += (double)w[c * K + k] * x[(b * T + t - K + 1 + k) * C + c];
                assert_float_equal(out[(b * T + t) * C + c], want, 1e-5);
            }
    /* prefill the first 2 steps (T < K: zeros in front), then step the rest */
    float *state_buf = malloc((size_t)B * C * K * sizeof(float)), step_in[B * C], step_out[B * C];
    float *x2 = calloc(B * 2 * C, 4);
    for (int b = 0; b < B; b++) memcpy(x2 + b * 2 * C, x + b * T * C, 2 * C * sizeof(float));
    fast->conv1d_state_fill(state_buf, x2, B, 2, C, K);
    for (int c = 0; c < C; c++)
        for (int k = 0; k < K - 2; k++) assert_true(state_buf[c * K + k] == 0.0f);
    for (int t = 2; t < T; t++) {
        for (int b = 0; b < B; b++) memcpy(step_in + b * C, x + (b * T + t) * C, C * sizeof(float));
        fast->conv1d_step(step_out, state_buf, step_in, w, bias, B, C, K);
        for (int b = 0; b < B; b++)
            for (int c = 0; c < C; c++)
                assert_true(step_out[b * C + c] == out[(b * T + t) * C + c]); /* same sum order */
    }
    free(x), free(w), free(bias), free(out), free(x2), free(state_buf);
}

static void test_conv1d(void **state)
{
    (void)state;
    conv1d_case(4, 13);
    conv1d_case(3, 14);
}

/* double reference: out[b,t,c] = bias[c] + sum_k w[c,k] x[b, t-K+1+k, c] with B 2, T 6, C 3, K 4 */
typedef struct {
    double *x, *w, *bias, *r;
} conv_ref;

static double conv_ref_loss(void *p)
{
    conv_ref *m = p;
    double loss = 0.0;
    for (int b = 0; b < 2; b++)
        for (int t = 0; t < 6; t++)
            for (int c = 0; c < 3; c++) {
                double o = m->bias[c];
                for (int k = 0; k < 4; k++)
                    if (t - 3 + k >= 0) o += m->w[c * 4 + k] * m->x[(b * 6 + t - 3 + k) * 3 + c];
                loss += m->r[(b * 6 + t) * 3 + c] * o;
            }
    return loss;
}

static double *to_double(const float *x, size_t n)
{
    double *y = malloc(n * sizeof *y);
    for (size_t i = 0; i < n; i++) y[i] = x[i];
    return y;
}

static void test_conv1d_grad(void **state)
{
    (void)state;
    mt_rng rng;
    mt_rng_init(&rng, 14, 0);
    float *x = gc_random(36, &rng, 1.0f), *w = gc_random(12, &rng, 1.0f),
          *bias = gc_random(3, &rng, 1.0f);
    float *r = gc_random(36, &rng, 1.0f), *dx = calloc(36, 4), *dw = calloc(12, 4),
          *db = calloc(3, 4);
    fast->conv1d_backward(dx, dw, db, r, x, w, 2, 6, 3, 4);
    conv_ref m = {to_double(x, 36), to_double(w, 12), to_double(bias, 3), to_double(r, 36)};
    assert_true(
        gc_report("backend", "conv1d dx", gc_rel_error(m.x, 36, dx, conv_ref_loss, &m, 36), 1e-6));
    assert_true(gc_report("backend", "conv1d dweight",
                          gc_rel_error(m.w, 12, dw, conv_ref_loss, &m, 12), 1e-6));
    assert_true(gc_report("backend", "conv1d dbias",
                          gc_rel_error(m.bias, 3, db, conv_ref_loss, &m, 3), 1e-6));
    free(x), free(w), free(bias), free(r), free(dx), free(dw), free(db);
    free(m.x), free(m.w), free(m.bias), free(m.r);
}

/* The blocked backward against the channel-at-a-time reference: C not a multiple of the
 * block, T shorter and longer than K; both sum each weight's terms in the same order in
 * double, so they agree exactly. */
static void test_conv1d_backward_vs_naive(void **state)
{
    (void)state;
    mt_rng rng;
    mt_rng_init(&rng, 15, 0);
    /* the last is large enough to be split across threads, by spans of whole vectors with a
     * shorter last one */
    const int shapes[][4] = {{3, 20, 37, 4}, {2, 3, 16, 4}, {1, 9, 5, 3}, {4, 70, 75, 4}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int B = shapes[s][0], T = shapes[s][1], C = shapes[s][2], K = shapes[s][3];
        size_t n = (size_t)B * T * C;
        float *x = gc_random(n, &rng, 1.0f), *dout = gc_random(n, &rng, 1.0f);
        float *w = gc_random((size_t)C * K, &rng, 1.0f);
        float *dx1 = gc_random(n, &rng, 1.0f), *dw1 = gc_random((size_t)C * K, &rng, 1.0f);
        float *db1 = gc_random((size_t)C, &rng, 1.0f);
        float *dx2 = test_copy_floats(dx1, n), *dw2 = test_copy_floats(dw1, (size_t)C * K),
              *db2 = test_copy_floats(db1, C);
        fast->conv1d_backward(dx1, dw1, db1, dout, x, w, B, T, C, K);
        naive->conv1d_backward(dx2, dw2, db2, dout, x, w, B, T, C, K);
        assert_memory_equal(dx1, dx2, n * sizeof(float));
        assert_memory_equal(dw1, dw2, (size_t)C * K * sizeof(float));
        assert_memory_equal(db1, db2, (size_t)C * sizeof(float));
        free(x), free(dout), free(w), free(dx1), free(dw1), free(db1), free(dx2), free(dw2);
        free(db2);
    }
}

/* The norms' blocked weight gradients and the bias gradient against the column-at-a-time
 * reference, exactly (same sums in the same order), with and without a weight; dx is one
 * shared implementation. */
static void test_norm_backward_vs_naive(void **state)
{
    (void)state;
    mt_rng rng;
    mt_rng_init(&rng, 16, 0);
    const int shapes[][2] = {{50, 37}, {9, 192}, {3, 5}, {100, 168}, {40, 600}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        size_t BT = (size_t)shapes[s][0];
        int C = shapes[s][1];
        float *x = gc_random(BT * C, &rng, 1.0f), *dout = gc_random(BT * C, &rng, 1.0f);
        float *w = gc_random(C, &rng, 1.0f), *bias = gc_random(C, &rng, 1.0f);
        float *out = malloc(BT * C * sizeof(float)), *mean = malloc(BT * 4), *rstd = malloc(BT * 4);
        for (int with_weight = 0; with_weight < 2; with_weight++) {
            const float *wt = with_weight ? w : NULL;
            float *dw1 = gc_random(C, &rng, 1.0f), *db1 = gc_random(C, &rng, 1.0f);
            float *dw2 = test_copy_floats(dw1, C), *db2 = test_copy_floats(db1, C);
            fast->layernorm_forward(out, mean, rstd, x, wt, bias, BT, C, 1e-5f);
            fast->layernorm_backward(NULL, dw1, db1, dout, x, wt, mean, rstd, BT, C);
            naive->layernorm_backward(NULL, dw2, db2, dout, x, wt, mean, rstd, BT, C);
            assert_memory_equal(dw1, dw2, C * sizeof(float));
            assert_memory_equal(db1, db2, C * sizeof(float));
            fast->rmsnorm_forward(out, rstd, x, wt, BT, C, 1e-5f);
            fast->rmsnorm_backward(NULL, dw1, dout, x, wt, rstd, BT, C);
            naive->rmsnorm_backward(NULL, dw2, dout, x, wt, rstd, BT, C);
            assert_memory_equal(dw1, dw2, C * sizeof(float));
            fast->bias_backward(db1, dout, BT, C);
            naive->bias_backward(db2, dout, BT, C);
            assert_memory_equal(db1, db2, C * sizeof(float));
            free(dw1), free(db1), free(dw2), free(db2);
        }
        free(x), free(dout), free(w), free(bias), free(out), free(mean), free(rstd);
    }
}

/* The norms' rows (forward, and backward's dx) against the twins that sum each row in column
 * order: the fast rows sum over eight running sums, so they agree within rounding. */
static void test_norm_rows_vs_naive(void **state)
{
    (void)state;
    mt_rng rng;
    mt_rng_init(&rng, 17, 0);
    const int shapes[][2] = {{50, 37}, {9, 192}, {3, 5}, {100, 168}, {40, 600}};
    double worst = 0.0;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        size_t BT = (size_t)shapes[s][0], n = BT * (size_t)shapes[s][1];
        int C = shapes[s][1];
        float *x = gc_random(n, &rng, 1.0f), *dout = gc_random(n, &rng, 1.0f);
        float *w = gc_random(C, &rng, 1.0f), *bias = gc_random(C, &rng, 1.0f);
        float *o1 = malloc(n * 4), *o2 = malloc(n * 4), *m1 = malloc(BT * 4), *m2 = malloc(BT * 4);
        float *r1 = malloc(BT * 4), *r2 = malloc(BT * 4);
        float *dx1 = gc_random(n, &rng, 1.0f), *dx2 = test_copy_floats(dx1, n);
        for (int with_weight = 0; with_weight < 2; with_weight++) {
            const float *wt = with_weight ? w : NULL;
            fast->layernorm_forward(o1, m1, r1, x, wt, bias, BT, C, 1e-5f);
            naive->layernorm_forward(o2, m2, r2, x, wt, bias, BT, C, 1e-5f);
            double e = fmax(max_rel(o1, o2, n), fmax(max_rel(m1, m2, BT), max_rel(r1, r2, BT)));
            fast->layernorm_backward(dx1, NULL, NULL, dout, x, wt, m2, r2, BT, C);
            naive->layernorm_backward(dx2, NULL, NULL, dout, x, wt, m2, r2, BT, C);
            e = fmax(e, max_rel(dx1, dx2, n));
            fast->rmsnorm_forward(o1, r1, x, wt, BT, C, 1e-5f);
            naive->rmsnorm_forward(o2, r2, x, wt, BT, C, 1e-5f);
            e = fmax(e, fmax(max_rel(o1, o2, n), max_rel(r1, r2, BT)));
            fast->rmsnorm_backward(dx1, NULL, dout, x, wt, r2, BT, C);
            naive->rmsnorm_backward(dx2, NULL, dout, x, wt, r2, BT, C);
            e = fmax(e, max_rel(dx1, dx2, n));
            worst = fmax(worst, e);
        }
        free(x), free(dout), free(w), free(bias), free(o1), free(o2), free(m1), free(m2);
        free(r1), free(r2), free(dx1), free(dx2);
    }
    printf("backend: layernorm and rmsnorm rows, forward and dx: max relative error %.1e "
           "(bound 1e-6)\n",
           worst);
    assert_true(worst < 1e-6);
}

/* ---------------------------------------------------------------- rows, reductions, misc */
static void test_softmax_argmax(void **state)
{
    (void)state;
    mt_rng rng;
    mt_rng_init(&rng, 15, 0);
    enum { R = 4, V = 9 };
    float *x = gc_random(R * V, &rng, 20.0f), p[R * V], lp[R * V];
    x[2 * V + 3] = x[2 * V + 5] = 100.0f; /* a tie: argmax takes the first */
    fast->softmax(p, x, R, V);
    fast->log_softmax(lp, x, R, V);
    int32_t am[R];
    fast->argmax_rows(am, x, R, V);
    assert_int_equal(am[2], 3);
    for (int r = 0; r < R; r++) {
        double mx = -INFINITY, z = 0.0;
        for (int j = 0; j < V; j++) mx = fmax(mx, x[r * V + j]);
        for (int j = 0; j < V; j++) z += exp(x[r * V + j] - mx);
        for (int j = 0; j < V; j++) {
            double want = x[r * V + j] - mx - log(z);
            assert_float_equal(lp[r * V + j], want, 1e-5);
            assert_float_equal(p[r * V + j], exp(want), 1e-6);
            if (x[r * V + j] > x[r * V + am[r]]) fail();
        }
    }
    free(x);
}

static void test_embedding_and_utilities(void **state)
{
    (void)state;
    mt_rng rng;
    mt_rng_init(&rng, 16, 0);
    enum { V = 5, C = 70, N = 6 }; /* C > 64 spans two column blocks of the backward */
    int32_t ids[N] = {4, 1, 4, 4, 0, 1};
    float *dout = gc_random(N * C, &rng, 1.0f), *dtable = calloc(V * C, 4);
    fast->embedding_backward(dtable, dout, ids, N, C, 0.5f);
    for (int v = 0; v < V; v++)
        for (int c = 0; c < C; c++) {
            double want = 0.0;
            for (int i = 0; i < N; i++)
                if (ids[i] == v) want += 0.5 * dout[i * C + c];
            assert_float_equal(dtable[v * C + c], want, 1e-6);
        }
    /* bias_backward, mask_rows, copy2d, index_select, sums */
    float db[C] = {0};
    fast->bias_backward(db, dout, N, C);
    for (int c = 0; c < C; c++) {
        double want = 0.0;
        for (int i = 0; i < N; i++) want += dout[i * C + c];
        assert_float_equal(db[c], want, 1e-6);
    }
    uint8_t mask[N] = {1, 0, 1, 1, 0, 1};
    float *m = test_copy_floats(dout, N * C);
    fast->mask_rows(m, mask, N, C);
    for (int i = 0; i < N; i++)
        for (int c = 0; c < C; c++) assert_true(m[i * C + c] == (mask[i] ? dout[i * C + c] : 0.0f));
    int32_t idx[3] = {5, 0, 5};
    float sel[3 * C];
    fast->index_select(sel, dout, C, idx, 3, C);
    assert_memory_equal(sel, dout + 5 * C, C * sizeof(float));
    assert_memory_equal(sel + C, dout, C * sizeof(float));
    assert_memory_equal(sel + 2 * C, dout + 5 * C, C * sizeof(float));
    /* the first 2 floats of each picked row, packed (a KV cache's filled positions) */
    float part[3 * 2 + 1];
    part[6] = 42.0f;
    fast->index_select(part, dout, C, idx, 3, 2);
    for (int i = 0; i < 3; i++)
        assert_memory_equal(part + 2 * i, dout + idx[i] * C, 2 * sizeof(float));
    assert_true(part[6] == 42.0f);
    float block[4 * 3];
    fast->copy2d(block, 3, dout + 2, C, 4, 3);
    for (int r = 0; r < 4; r++)
        for (int c = 0; c < 3; c++) assert_true(block[r * 3 + c] == dout[r * C + 2 + c]);
    double s = 0.0, ss = 0.0;
    for (int i = 0; i < N * C; i++) s += dout[i], ss += (double)dout[i] * dout[i];
    assert_float_equal(fast->sum(dout, N * C), s, 1e-9);
    assert_float_equal(fast->sum_squares(dout, N * C), ss, 1e-9);
    free(dout), free(dtable), free(m);
}

/* Rows narrower than 64 floats (a fused projection's heads) go by blocks of 8 with an overlapping
 * last block: every width from 1 to 70 between strided rows, at one thread and two (a copy of
 * 3,000 rows shares them), each row exact and the floats past it in the destination untouched. */
static void test_narrow_copies(void **state)
{
    (void)state;
    enum { ROWS = 3000, LD = 80 };
    mt_rng rng;
    mt_rng_init(&rng, 22, 0);
    float *src = gc_random((size_t)ROWS * LD, &rng, 1.0f);
    float *dst = malloc((size_t)ROWS * LD * sizeof *dst);
    int max_threads = omp_get_max_threads();
    for (int threads = 1; threads <= 2; threads++) {
        omp_set_num_threads(threads);
        for (int cols = 1; cols <= 70; cols++) {
            for (size_t i = 0; i < (size_t)ROWS * LD; i++) dst[i] = -7.0f;
            fast->copy2d(dst + 3, LD - 2, src + 1, LD, ROWS - 1, cols);
            for (int r = 0; r < ROWS - 1; r++)
                for (int c = 0; c < LD - 2; c++) {
                    float got = dst[3 + (size_t)r * (LD - 2) + c];
                    assert_true(got == (c < cols ? src[1 + (size_t)r * LD + c] : -7.0f));
                }
        }
    }
    omp_set_num_threads(max_threads);
    free(src), free(dst);
}

/* Copies large enough to share their rows among threads (a beam reorder's caches), at one thread
 * and two: index_select gathers rows with repeats and copy2d moves a block; a copy2d whose rows
 * overlap (a block shifted by less than its size, both ways) still moves them as the naive
 * backend's loop does. */
static void test_large_copies(void **state)
{
    (void)state;
    enum { R = 80, LD = 1200, COLS = 1100 }; /* 88,000 floats a copy */
    mt_rng rng;
    mt_rng_init(&rng, 21, 0);
    float *src = gc_random((size_t)R * LD, &rng, 1.0f);
    float *want = malloc(sizeof(float) * R * LD), *got = malloc(sizeof(float) * R * LD);
    int32_t idx[R];
    for (int i = 0; i < R; i++) idx[i] = (i * 7 + 3) % R / 2 * 2; /* repeats, every other row */
    int saved = omp_get_max_threads();
    for (int threads = 1; threads <= 2; threads++) {
        omp_set_num_threads(threads);
        naive->index_select(want, src, LD, idx, R, COLS);
        fast->index_select(got, src, LD, idx, R, COLS);
        assert_memory_equal(got, want, sizeof(float) * R * COLS);
        naive->copy2d(want, COLS, src + 7, LD, R, COLS);
        fast->copy2d(got, COLS, src + 7, LD, R, COLS);
        assert_memory_equal(got, want, sizeof(float) * R * COLS);
        for (int shift = -1; shift <= 1; shift += 2) { /* rows overlapping their neighbours' */
            memcpy(want, src, sizeof(float) * R * LD);
            memcpy(got, src, sizeof(float) * R * LD);
            size_t from = shift > 0 ? 0 : LD, to = shift > 0 ? LD : 0;
            naive->copy2d(want + to, LD, want + from, LD, R - 1, LD);
            fast->copy2d(got + to, LD, got + from, LD, R - 1, LD);
            assert_memory_equal(got, want, sizeof(float) * R * LD);
        }
    }
    omp_set_num_threads(saved);
    free(src), free(want), free(got);
}

/* Over two whole chunks of the vectorised loops and a ragged end, with inputs on both sides of
 * softplus's linear threshold (20). */
static void test_activations(void **state)
{
    (void)state;
    enum { N = 2 * 4096 + 41 };
    float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y), *dx = malloc(N * sizeof *dx);
    float *ones = malloc(N * sizeof *ones);
    for (int i = 0; i < N; i++) x[i] = -30.0f + 60.0f * i / N + 0.01f, ones[i] = 1.0f;
    const mt_act acts[5] = {MT_ACT_RELU, MT_ACT_SILU, MT_ACT_SOFTPLUS, MT_ACT_GELU, MT_ACT_TANH};
    for (int a = 0; a < 5; a++) {
        fast->act_forward(acts[a], y, x, N);
        /* written, not added to: whatever dx held, NaN included, goes */
        for (int i = 0; i < N; i++) dx[i] = NAN;
        fast->act_backward(acts[a], dx, ones, x, N);
        for (int i = 0; i < N; i++) {
            double xd = x[i], want, grad;
            switch (acts[a]) {
            case MT_ACT_RELU: want = xd > 0 ? xd : 0, grad = xd > 0; break;
            case MT_ACT_SILU:
                want = xd / (1 + exp(-xd)),
                grad = 1 / (1 + exp(-xd)) * (1 + xd * (1 - 1 / (1 + exp(-xd))));
                break;
            case MT_ACT_SOFTPLUS: want = log1p(exp(xd)), grad = 1 / (1 + exp(-xd)); break;
            case MT_ACT_TANH: want = tanh(xd), grad = 1 - tanh(xd) * tanh(xd); break;
            default:
                want = 0.5 * xd * (1 + erf(xd / sqrt(2.0))),
                grad = 0.5 * (1 + erf(xd / sqrt(2.0))) + xd * exp(-0.5 * xd * xd) / sqrt(2 * M_PI);
                break;
            }
            /* GELU's Phi is a polynomial on the CPU (cpu_simd.h cpu_phi_poly): within 3e-7 */
            double tol = acts[a] == MT_ACT_GELU ? 5e-7 : 1e-5;
            assert_float_equal(y[i], want, tol * (1 + fabs(want)));
            assert_float_equal(dx[i], grad, acts[a] == MT_ACT_GELU ? tol * (1 + fabs(grad)) : tol);
        }
    }
    /* value * SiLU(gate) and its backward */
    float *v = malloc(N * sizeof *v), *o = malloc(N * sizeof *o);
    float *dv = calloc(N, sizeof *dv), *dg = calloc(N, sizeof *dg);
    for (int i = 0; i < N; i++) v[i] = 0.001f * i - 2.0f;
    fast->gate_forward(o, v, x, N);
    fast->gate_backward(dv, dg, ones, v, x, N);
    for (int i = 0; i < N; i++) {
        assert_float_equal(o[i], v[i] * mt_siluf(x[i]), 1e-6 * (1 + fabs(o[i])));
        assert_float_equal(dv[i], mt_siluf(x[i]), 1e-6 * (1 + fabs(dv[i])));
        assert_float_equal(dg[i], v[i] * mt_silu_gradf(x[i]), 1e-6 * (1 + fabs(dg[i])));
    }
    /* both gradients at once (one loop) are the floats each gives alone */
    float *dv1 = calloc(N, sizeof *dv1), *dg1 = calloc(N, sizeof *dg1);
    fast->gate_backward(dv1, NULL, ones, v, x, N);
    fast->gate_backward(NULL, dg1, ones, v, x, N);
    assert_memory_equal(dv1, dv, N * sizeof *dv);
    assert_memory_equal(dg1, dg, N * sizeof *dg);
    free(dv1), free(dg1);
    free(x), free(y), free(dx), free(ones), free(v), free(o), free(dv), free(dg);
}

static void test_memory(void **state)
{
    (void)state;
    float host[5] = {1, 2, 3, 4, 5}, back[5] = {0};
    float *d = fast->alloc(5 * sizeof(float));
    assert_non_null(d);
    for (int i = 0; i < 5; i++) assert_true(d[i] == 0.0f); /* zero-filled */
    fast->upload(d, host, sizeof host);
    fast->memzero(d + 1, sizeof(float));
    fast->download(back, d, sizeof back);
    assert_true(back[0] == 1 && back[1] == 0 && back[4] == 5);
    fast->free(d);
    fast->free(NULL);
    assert_null(fast->alloc((size_t)-1)); /* overflow is an error, not a crash */
}

/* be->alloc: 64-byte aligned and zero-filled at every size; a block freed and taken again is
 * zero again; a size that overflows is an error naming it */
static void test_alloc(void **state)
{
    (void)state;
    static const size_t sizes[] = {
        0, 1, 63, 64, 1000, (1u << 20) - 128, (1u << 20) - 64, 1u << 20, 3u << 20};
    for (int round = 0; round < 2; round++)
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
            size_t n = sizes[i];
            unsigned char *p = fast->alloc(n);
            assert_non_null(p);
            assert_int_equal((uintptr_t)p % 64, 0);
            for (size_t k = 0; k < n; k++)
                if (p[k]) fail_msg("alloc(%zu), round %d: byte %zu is %d", n, round, k, p[k]);
            memset(p, 0xab, n); /* dirty it: the next round must see zeros again */
            fast->free(p);
        }
    fast->free(NULL);
    assert_null(fast->alloc(SIZE_MAX - 8));
    assert_non_null(strstr(mt_last_error(), "overflows"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_alloc),
        cmocka_unit_test(test_expf_poly),
        cmocka_unit_test(test_attention_vs_naive),
        cmocka_unit_test(test_attention_fully_masked_row),
        cmocka_unit_test(test_attention_masked_key_far_above),
        cmocka_unit_test(test_rope),
        cmocka_unit_test(test_conv1d),
        cmocka_unit_test(test_conv1d_grad),
        cmocka_unit_test(test_conv1d_backward_vs_naive),
        cmocka_unit_test(test_norm_backward_vs_naive),
        cmocka_unit_test(test_norm_rows_vs_naive),
        cmocka_unit_test(test_softmax_argmax),
        cmocka_unit_test(test_embedding_and_utilities),
        cmocka_unit_test(test_large_copies),
        cmocka_unit_test(test_narrow_copies),
        cmocka_unit_test(test_activations),
        cmocka_unit_test(test_memory),
    };
    return cmocka_run_group_tests_name("backend", tests, setup, NULL);
}
