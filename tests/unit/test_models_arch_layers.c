/* The new layers of the five architectures: multi-scale retention (the backend's parallel form
 * fast vs naive, its gradients and the whole layer's against finite differences of double
 * references written from the formulas, the recurrent form against the parallel one) and
 * sliding-window attention decoding through a ring of keys and values. */
#include "test_util.h"
#include "grad_check.h"
#include "mtlab/error.h"
#include "mtlab/layers.h"

static const mt_backend *be;

static int setup(void **state)
{
    (void)state;
    be = mt_backend_cpu();
    return 0;
}

static double *to_double(const float *x, size_t n)
{
    double *y = malloc((n ? n : 1) * sizeof *y);
    for (size_t i = 0; i < n; i++) y[i] = x[i];
    return y;
}

/* ---------------------------------------------------------------- double references
 * Retention core over q, k (B, T, H*Dk), v (B, T, H*Dv), from mt_retention_desc's formulas. */
typedef struct {
    mt_retention_desc d;
    double *q, *k, *v;
    double *out; /* (B, T, H*Dv) */
    double *r; /* (B, H, T) */
} core_ref;

static void core_ref_forward(core_ref *m)
{
    const mt_retention_desc *d = &m->d;
    int CK = d->H * d->Dk, CV = d->H * d->Dv, T = d->T;
    double *S = malloc((size_t)T * sizeof *S), *w = malloc((size_t)T * sizeof *w);
    for (int b = 0; b < d->B; b++)
        for (int h = 0; h < d->H; h++)
            for (int n = 0; n < T; n++) {
                double sum = 0.0, abs_sum = 0.0;
                for (int j = 0; j < T; j++) {
                    int real = !d->key_mask || d->key_mask[b * T + j];
                    w[j] = j <= n && real ? pow(d->gamma[h], n - j) : 0.0;
                    sum += w[j];
                }
                for (int j = 0; j < T; j++) {
                    double dot = 0.0;
                    for (int e = 0; e < d->Dk; e++)
                        dot += m->q[((size_t)b * T + n) * CK + h * d->Dk + e] *
                               m->k[((size_t)b * T + j) * CK + h * d->Dk + e];
                    S[j] = sum > 0.0 ? dot * w[j] / sqrt(sum) : 0.0;
                    abs_sum += fabs(S[j]);
                }
                double rn = fmin(fmax(abs_sum, 1.0), 5e4);
                m->r[((size_t)b * d->H + h) * T + n] = rn;
                for (int e = 0; e < d->Dv; e++) {
                    double o = 0.0;
                    for (int j = 0; j < T; j++)
                        o += S[j] / rn * m->v[((size_t)b * T + j) * CV + h * d->Dv + e];
                    m->out[((size_t)b * T + n) * CV + h * d->Dv + e] = o;
                }
            }
    free(S), free(w);
}

/* The whole retention layer (mtlab/layers.h) in double. */
typedef struct {
    mt_retention_config cfg;
    int B, T;
    const uint8_t *mask;
    const float *inv_freq; /* host */
    const float *fbase; /* float parameter block */
    mt_retention_params fp; /* pointers into fbase: offsets into pd */
    double *pd, *x, *rw, *out;
    double r_max; /* largest abs-sum normaliser of the last forward */
} layer_ref;

#define OFF(field) (m->pd + (m->fp.field - m->fbase))

static void linear_d(double *y, const double *x, const double *W, int rows, int in, int out)
{
    for (int i = 0; i < rows; i++)
        for (int o = 0; o < out; o++) {
            double acc = 0.0;
            for (int c = 0; c < in; c++) acc += W[(size_t)o * in + c] * x[(size_t)i * in + c];
            y[(size_t)i * out + o] = acc;
        }
}

/* interleaved pairs (2i, 2i+1) of every head rotated by t * inv_freq[i] */
static void rotate_d(double *x, const layer_ref *m)
{
    int H = m->cfg.H, Dk = m->cfg.C / H;
    for (int b = 0; b < m->B; b++)
        for (int t = 0; t < m->T; t++)
            for (int h = 0; h < H; h++) {
                double *v = x + ((size_t)b * m->T + t) * m->cfg.C + (size_t)h * Dk;
                for (int i = 0; i < Dk / 2; i++) {
                    double angle = t * (double)m->inv_freq[i], a = v[2 * i], c = v[2 * i + 1];
                    v[2 * i] = a * cos(angle) - c * sin(angle);
                    v[2 * i + 1] = c * cos(angle) + a * sin(angle);
                }
            }
}

static void layer_ref_forward(layer_ref *m)
{
    int B = m->B, T = m->T, C = m->cfg.C, V = m->cfg.V, H = m->cfg.H, Dk = C / H, Dv = V / H;
    size_t N = (size_t)B * T;
    float gamma[MT_RETENTION_MAX_HEADS];
    mt_retention_decays(gamma, H);
    core_ref core = {
        .d = {.B = B, .H = H, .T = T, .Dk = Dk, .Dv = Dv, .gamma = gamma, .key_mask = m->mask}};
    core.q = calloc(N * C, 8), core.k = calloc(N * C, 8), core.v = calloc(N * V, 8);
    core.out = calloc(N * V, 8), core.r = calloc((size_t)B * H * T, 8);
    double *g = calloc(N * V, 8), *gated = calloc(N * V, 8);
    linear_d(core.q, m->x, OFF(q_w), (int)N, C, C);
    linear_d(core.k, m->x, OFF(k_w), (int)N, C, C);
    for (size_t i = 0; i < N * C; i++) core.k[i] /= sqrt((double)Dk);
    linear_d(core.v, m->x, OFF(v_w), (int)N, C, V);
    linear_d(g, m->x, OFF(g_w), (int)N, C, V);
    rotate_d(core.q, m);
    rotate_d(core.k, m);
    core_ref_forward(&core);
    m->r_max = 0.0;
    for (size_t i = 0; i < (size_t)B * H * T; i++) m->r_max = fmax(m->r_max, core.r[i]);
    for (size_t row = 0; row < N * H; row++) {
        const double *o = core.out + row * Dv;
        double ms = 0.0;
        for (int e = 0; e < Dv; e++) ms += o[e] * o[e] / Dv;
        for (int e = 0; e < Dv; e++) {
            double ge = g[row * Dv + e];
            gated[row * Dv + e] = o[e] / sqrt(ms + m->cfg.eps) * ge / (1.0 + exp(-ge));
        }
    }
    linear_d(m->out, gated, OFF(o_w), (int)N, V, C);
    free(core.q), free(core.k), free(core.v), free(core.out), free(core.r), free(g), free(gated);
}

static double layer_ref_loss(void *ctx)
{
    layer_ref *m = ctx;
    layer_ref_forward(m);
    double acc = 0.0;
    for (size_t i = 0; i < (size_t)m->B * m->T * m->cfg.C; i++) acc += m->rw[i] * m->out[i];
    return acc;
}

static double core_ref_loss(void *ctx)
{
    core_ref *m = ctx;
    core_ref_forward(m);
    double acc = 0.0;
    size_t n = (size_t)m->d.B * m->d.T * m->d.H * m->d.Dv;
    for (size_t i = 0; i < n; i++) acc += (double)(i % 7 + 1) / 7.0 * m->out[i];
    return acc;
}

/* row b has b * pads left pads */
static uint8_t *left_pad_mask(int B, int T, int pads)
{
    uint8_t *mask = malloc((size_t)B * T);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) mask[b * T + t] = t >= b * pads;
    return mask;
}

/* ---------------------------------------------------------------- retention core */
/* Fast (the tile product, or OpenBLAS) and naive (loops in double) parallel forms agree,
 * forward and backward, with padding and with normalisers both clamped (r = 1) and not (r > 1),
 * at a small shape and at a training head's (70 positions, Dk 20, Dv 36: several vectors and
 * strips, causal skips). */
static void retention_fast_case(int B, int H, int T, int Dk, int Dv, int pads, uint64_t seed)
{
    const mt_backend *naive = mt_backend_cpu_naive();
    float gamma[16];
    mt_retention_decays(gamma, H);
    uint8_t *mask = left_pad_mask(B, T, pads);
    mt_rng rng;
    mt_rng_init(&rng, seed, 0);
    size_t nk = (size_t)B * T * H * Dk, nv = (size_t)B * T * H * Dv, np = (size_t)B * H * T * T;
    float *q = gc_random(nk, &rng, 1.5f), *k = gc_random(nk, &rng, 1.5f),
          *v = gc_random(nv, &rng, 1.0f);
    float *dout = gc_random(nv, &rng, 1.0f);
    float *out[2], *att[2], *r[2], *dq[2], *dk[2], *dv[2], *datt[2];
    mt_retention_desc d = {
        .B = B, .H = H, .T = T, .Dk = Dk, .Dv = Dv, .gamma = gamma, .key_mask = mask};
    for (int i = 0; i < 2; i++) {
        const mt_backend *b = i ? naive : be;
        out[i] = calloc(nv, 4), att[i] = calloc(np, 4), r[i] = calloc((size_t)B * H * T, 4);
        dq[i] = calloc(nk, 4), dk[i] = calloc(nk, 4), dv[i] = calloc(nv, 4),
        datt[i] = calloc(np, 4);
        b->retention_forward(out[i], att[i], r[i], q, k, v, &d);
        b->retention_backward(dq[i], dk[i], dv[i], datt[i], dout, q, k, v, att[i], r[i], &d);
    }
    int clamped = 0, free_r = 0;
    for (size_t i = 0; i < (size_t)B * H * T; i++) r[1][i] == 1.0f ? clamped++ : free_r++;
    double e_out = max_rel(out[0], out[1], nv), e_att = max_rel(att[0], att[1], np);
    double e_r = max_rel(r[0], r[1], (size_t)B * H * T), e_dq = max_rel(dq[0], dq[1], nk);
    double e_dk = max_rel(dk[0], dk[1], nk), e_dv = max_rel(dv[0], dv[1], nv);
    printf("retention fast vs naive, T %d Dk %d Dv %d (%d rows at r = 1, %d above): out %.1e att "
           "%.1e r %.1e dq %.1e dk %.1e dv %.1e (bound 1e-5 relative)\n",
           T, Dk, Dv, clamped, free_r, e_out, e_att, e_r, e_dq, e_dk, e_dv);
    assert_true(clamped > 0 && free_r > 0);
    assert_true(e_out < 1e-5 && e_att < 1e-5 && e_r < 1e-5 && e_dq < 1e-5 && e_dk < 1e-5 &&
                e_dv < 1e-5);
    /* a query at a pad of a left-padded row has no keys: a zero row */
    for (int e = 0; e < H * Dv; e++) assert_true(out[0][((size_t)1 * T + 0) * H * Dv + e] == 0.0f);
    for (int i = 0; i < 2; i++)
        free(out[i]), free(att[i]), free(r[i]), free(dq[i]), free(dk[i]), free(dv[i]),
            free(datt[i]);
    free(q), free(k), free(v), free(dout), free(mask);
}

static void test_retention_fast_matches_naive(void **state)
{
    (void)state;
    retention_fast_case(2, 3, 9, 4, 6, 3, 50);
    retention_fast_case(2, 2, 70, 20, 36, 5, 52);
}

/* Where every normaliser is clamped to 1 the detached backward is the true gradient: it must
 * match the finite differences of the double reference. */
static void test_retention_core_gradients(void **state)
{
    (void)state;
    enum { B = 2, H = 2, T = 7, Dk = 4, Dv = 3 };
    float gamma[H];
    mt_retention_decays(gamma, H);
    uint8_t *mask = left_pad_mask(B, T, 2);
    mt_rng rng;
    mt_rng_init(&rng, 51, 0);
    size_t nk = (size_t)B * T * H * Dk, nv = (size_t)B * T * H * Dv, np = (size_t)B * H * T * T;
    float *q = gc_random(nk, &rng, 0.4f), *k = gc_random(nk, &rng, 0.4f),
          *v = gc_random(nv, &rng, 1.0f);
    float *dout = calloc(nv, 4), *out = calloc(nv, 4), *att = calloc(np, 4),
          *r = calloc((size_t)B * H * T, 4);
    float *dq = calloc(nk, 4), *dk = calloc(nk, 4), *dv = calloc(nv, 4), *datt = calloc(np, 4);
    for (size_t i = 0; i < nv; i++) dout[i] = (float)((double)(i % 7 + 1) / 7.0);
    mt_retention_desc d = {
        .B = B, .H = H, .T = T, .Dk = Dk, .Dv = Dv, .gamma = gamma, .key_mask = mask};
    be->retention_forward(out, att, r, q, k, v, &d);
    be->retention_backward(dq, dk, dv, datt, dout, q, k, v, att, r, &d);
    for (size_t i = 0; i < (size_t)B * H * T; i++) assert_true(r[i] == 1.0f);
    core_ref m = {.d = d,
                  .q = to_double(q, nk),
                  .k = to_double(k, nk),
                  .v = to_double(v, nv),
                  .out = calloc(nv, 8),
                  .r = calloc((size_t)B * H * T, 8)};
    core_ref_forward(&m);
    double diff = 0.0, scale = 0.0;
    for (size_t i = 0; i < nv; i++)
        diff = fmax(diff, fabs(out[i] - m.out[i])), scale = fmax(scale, fabs(m.out[i]));
    printf("retention core forward vs double reference %.1e (bound 1e-5 relative)\n", diff / scale);
    assert_true(diff <= 1e-5 * scale);
    assert_true(
        gc_report("retention", "core dq", gc_rel_error(m.q, nk, dq, core_ref_loss, &m, 64), 1e-5));
    assert_true(
        gc_report("retention", "core dk", gc_rel_error(m.k, nk, dk, core_ref_loss, &m, 64), 1e-5));
    assert_true(
        gc_report("retention", "core dv", gc_rel_error(m.v, nv, dv, core_ref_loss, &m, 64), 1e-5));
    free(m.q), free(m.k), free(m.v), free(m.out), free(m.r);
    free(q), free(k), free(v), free(dout), free(out), free(att), free(r), free(dq), free(dk),
        free(dv), free(datt), free(mask);
}

/* The recurrent form: a state filled from a prefix of P positions, then single steps, gives
 * r_n times the parallel output at every later position (mtlab/backend.h); a state filled
 * from all T positions equals the one the steps reach. */
static void test_retention_recurrent_matches_parallel(void **state)
{
    (void)state;
    enum { B = 2, H = 3, T = 10, Dk = 4, Dv = 5 };
    float gamma[H];
    mt_retention_decays(gamma, H);
    uint8_t *mask = left_pad_mask(B, T, 3);
    mt_rng rng;
    mt_rng_init(&rng, 52, 0);
    size_t nk = (size_t)B * T * H * Dk, nv = (size_t)B * T * H * Dv, ns = (size_t)B * H * Dk * Dv;
    float *q = gc_random(nk, &rng, 1.5f), *k = gc_random(nk, &rng, 1.5f),
          *v = gc_random(nv, &rng, 1.0f);
    float *out = calloc(nv, 4), *att = calloc((size_t)B * H * T * T, 4),
          *r = calloc((size_t)B * H * T, 4);
    mt_retention_desc d = {
        .B = B, .H = H, .T = T, .Dk = Dk, .Dv = Dv, .gamma = gamma, .key_mask = mask};
    be->retention_forward(out, att, r, q, k, v, &d);
    for (int P = 4; P <= 7; P += 3) {
        float *kv = calloc(ns, 4), *s = calloc((size_t)B * H, 4), *all_kv = calloc(ns, 4),
              *all_s = calloc((size_t)B * H, 4);
        float *qs = calloc((size_t)B * H * Dk, 4), *ks = calloc((size_t)B * H * Dk, 4);
        float *vs = calloc((size_t)B * H * Dv, 4), *os = calloc((size_t)B * H * Dv, 4);
        /* the prefix as its own (B, P) problem: rows of the full arrays at stride T */
        float *kp = calloc(nk, 4), *vp = calloc(nv, 4);
        uint8_t *mp = malloc((size_t)B * P);
        for (int b = 0; b < B; b++) {
            memcpy(kp + (size_t)b * P * H * Dk, k + (size_t)b * T * H * Dk, (size_t)P * H * Dk * 4);
            memcpy(vp + (size_t)b * P * H * Dv, v + (size_t)b * T * H * Dv, (size_t)P * H * Dv * 4);
            memcpy(mp + (size_t)b * P, mask + (size_t)b * T, (size_t)P);
        }
        mt_retention_desc dp = d;
        dp.T = P, dp.key_mask = mp;
        be->retention_state_fill(kv, s, kp, vp, &dp);
        double worst = 0.0, scale = 0.0;
        mt_retention_desc step = d;
        step.T = 1, step.key_mask = NULL;
        for (int t = P; t < T; t++) {
            for (int b = 0; b < B; b++) {
                memcpy(qs + (size_t)b * H * Dk, q + ((size_t)b * T + t) * H * Dk,
                       (size_t)H * Dk * 4);
                memcpy(ks + (size_t)b * H * Dk, k + ((size_t)b * T + t) * H * Dk,
                       (size_t)H * Dk * 4);
                memcpy(vs + (size_t)b * H * Dv, v + ((size_t)b * T + t) * H * Dv,
                       (size_t)H * Dv * 4);
            }
            be->retention_step(os, kv, s, qs, ks, vs, &step);
            for (int b = 0; b < B; b++)
                for (int h = 0; h < H; h++)
                    for (int e = 0; e < Dv; e++) {
                        double want = out[((size_t)b * T + t) * H * Dv + h * Dv + e] *
                                      r[((size_t)b * H + h) * T + t];
                        worst = fmax(worst, fabs(os[(size_t)b * H * Dv + h * Dv + e] - want));
                        scale = fmax(scale, fabs(want));
                    }
        }
        be->retention_state_fill(all_kv, all_s, k, v, &d);
        double e_kv = max_rel(kv, all_kv, ns), e_s = max_rel(s, all_s, (size_t)B * H);
        printf(
            "retention: fill %d + %d steps vs parallel x r: max error %.1e of %.2f; state vs fill "
            "of all %d: kv %.1e s %.1e (bound 1e-5 relative)\n",
            P, T - P, worst, scale, T, e_kv, e_s);
        assert_true(worst <= 1e-5 * scale && e_kv < 1e-5 && e_s < 1e-5);
        free(kv), free(s), free(all_kv), free(all_s), free(qs), free(ks), free(vs), free(os),
            free(kp), free(vp), free(mp);
    }
    free(q), free(k), free(v), free(out), free(att), free(r), free(mask);
}

/* ---------------------------------------------------------------- retention layer */
static void test_retention_layer_gradients(void **state)
{
    (void)state;
    enum { B = 2, T = 6, C = 8, H = 2, V = 12 };
    float inv_freq[2];
    mt_rope_inv_freq(inv_freq, C / H, 10000.0f, MT_ROPE_RETNET);
    mt_retention_config cfg = {.C = C, .H = H, .V = V, .eps = 1e-5f, .inv_freq = inv_freq};
    uint8_t *mask = left_pad_mask(B, T, 2);
    mt_rng rng;
    mt_rng_init(&rng, 53, 0);
    size_t np = mt_retention_params_count(&cfg), na = mt_retention_acts_count(&cfg, B, T);
    size_t nx = (size_t)B * T * C;
    mt_tensor_spec specs[8];
    int nt = mt_retention_tensors(&cfg, specs);
    assert_int_equal(nt, 5);
    assert_int_equal(mt_tensors_numel(specs, nt), np);
    assert_string_equal(specs[3].name, "g_proj.weight");
    float *params = gc_random(np, &rng, 0.5f), *grads = calloc(np, 4);
    float *acts = calloc(na, 4), *dacts = calloc(na, 4);
    mt_retention_params p, g;
    mt_retention_acts a, da;
    assert_ptr_equal(mt_retention_params_point(&p, params, &cfg), params + np);
    mt_retention_params_point(&g, grads, &cfg);
    assert_ptr_equal(mt_retention_acts_point(&a, acts, &cfg, B, T), acts + na);
    mt_retention_acts_point(&da, dacts, &cfg, B, T);
    float *x = gc_random(nx, &rng, 1.0f), *dx = calloc(nx, 4), *out = calloc(nx, 4);
    float *rw = gc_random(nx, &rng, 1.0f);
    mt_retention_call call = {.cfg = &cfg, .B = B, .T = T, .mask = mask};
    mt_retention_forward(be, out, &a, x, &p, &call);
    mt_retention_backward(be, &(mt_retention_grads){dx, &g, &da}, rw, &a, x, &p, &call);
    layer_ref m = {.cfg = cfg,
                   .B = B,
                   .T = T,
                   .mask = mask,
                   .inv_freq = inv_freq,
                   .fbase = params,
                   .fp = p,
                   .pd = to_double(params, np),
                   .x = to_double(x, nx),
                   .rw = to_double(rw, nx),
                   .out = calloc(nx, 8)};
    layer_ref_forward(&m);
    double diff = 0.0, scale = 0.0;
    for (size_t i = 0; i < nx; i++)
        diff = fmax(diff, fabs(out[i] - m.out[i])), scale = fmax(scale, fabs(m.out[i]));
    printf(
        "retention layer forward vs double reference %.1e (bound 1e-5 relative); largest r %.3f\n",
        diff / scale, m.r_max);
    assert_true(diff <= 1e-5 * scale);
    assert_true(m.r_max == 1.0); /* the regime where the detached normaliser is exact */
    assert_true(gc_report("retention", "layer dx",
                          gc_rel_error(m.x, nx, dx, layer_ref_loss, &m, 48), 1e-5));
    size_t off = 0;
    for (int t = 0; t < nt; t++) {
        size_t n = mt_tensor_numel(&specs[t]);
        char label[64];
        snprintf(label, sizeof label, "layer %s", specs[t].name);
        assert_true(gc_report("retention", label,
                              gc_rel_error(m.pd + off, n, grads + off, layer_ref_loss, &m, 32),
                              1e-5));
        off += n;
    }
    free(m.pd), free(m.x), free(m.rw), free(m.out);
    free(params), free(grads), free(acts), free(dacts), free(x), free(dx), free(out), free(rw),
        free(mask);
}

/* A prefill of the layer then recurrent steps give the parallel layer's outputs where r = 1,
 * and beam reordering moves whole rows of the state. */
static void test_retention_layer_steps(void **state)
{
    (void)state;
    enum { B = 2, T = 8, P = 5, C = 8, H = 2, V = 12 };
    float inv_freq[2];
    mt_rope_inv_freq(inv_freq, C / H, 10000.0f, MT_ROPE_RETNET);
    mt_retention_config cfg = {.C = C, .H = H, .V = V, .eps = 1e-5f, .inv_freq = inv_freq};
    uint8_t *mask = left_pad_mask(B, T, 2);
    mt_rng rng;
    mt_rng_init(&rng, 54, 0);
    float *params = gc_random(mt_retention_params_count(&cfg), &rng, 0.5f);
    mt_retention_params p;
    mt_retention_params_point(&p, params, &cfg);
    float *acts = calloc(mt_retention_acts_count(&cfg, B, T), 4);
    mt_retention_acts a;
    mt_retention_acts_point(&a, acts, &cfg, B, T);
    float *x = gc_random((size_t)B * T * C, &rng, 1.0f), *full = calloc((size_t)B * T * C, 4);
    mt_retention_forward(be, full, &a, x, &p,
                         &(mt_retention_call){.cfg = &cfg, .B = B, .T = T, .mask = mask});
    size_t ns = mt_retention_state_count(&cfg, B);
    assert_int_equal(ns, (size_t)B * (C * V / H + H));
    float *block = calloc(2 * ns, 4);
    mt_retention_state st, moved;
    assert_ptr_equal(mt_retention_state_point(&st, block, &cfg, B), block + ns);
    mt_retention_state_point(&moved, block + ns, &cfg, B);
    float *xp = calloc((size_t)B * P * C, 4), *yp = calloc((size_t)B * P * C, 4);
    uint8_t mp[B * P];
    for (int b = 0; b < B; b++) {
        memcpy(xp + (size_t)b * P * C, x + (size_t)b * T * C, (size_t)P * C * 4);
        memcpy(mp + b * P, mask + b * T, P);
    }
    mt_retention_acts_point(&a, acts, &cfg, B, P);
    mt_retention_forward(
        be, yp, &a, xp, &p,
        &(mt_retention_call){.cfg = &cfg, .B = B, .T = P, .mask = mp, .state = &st});
    assert_int_equal(st.len, P);
    double worst = max_rel(yp + (size_t)P * C - C, full + (size_t)P * C - C, C);
    float xs[B * C], ys[B * C];
    mt_retention_acts_point(&a, acts, &cfg, B, 1);
    for (int t = P; t < T; t++) {
        for (int b = 0; b < B; b++) memcpy(xs + b * C, x + ((size_t)b * T + t) * C, C * 4);
        mt_retention_step(be, ys, &a, xs, &p, &cfg, &st, B);
        for (int b = 0; b < B; b++)
            worst = fmax(worst, max_rel(ys + b * C, full + ((size_t)b * T + t) * C, C));
    }
    assert_int_equal(st.len, T);
    printf("retention layer: prefill %d + %d steps vs parallel forward, max error %.1e relative "
           "(bound 1e-5)\n",
           P, T - P, worst);
    assert_true(worst < 1e-5);
    int32_t rows[B] = {1, 1};
    mt_retention_state_reorder(be, &moved, &st, rows, B, &cfg);
    size_t row = (size_t)C * V / H;
    assert_memory_equal(moved.kv, st.kv + row, row * 4);
    assert_memory_equal(moved.kv + row, st.kv + row, row * 4);
    assert_memory_equal(moved.scale, st.scale + H, H * 4);
    assert_int_equal(moved.len, T);
    free(params), free(acts), free(x), free(full), free(block), free(xp), free(yp), free(mask);
}

/* ---------------------------------------------------------------- sliding-window ring */
/* Prefill (in chunks of `chunk` positions) then steps through a ring of window + 1 slots:
 * every output equals the windowed causal forward over the whole sequence, far beyond the
 * window (rotary and left padding included), for prompts shorter and longer than the ring and
 * chunk boundaries inside a window. */
static double ring_case(int P, int rope, int chunk)
{
    enum { B = 2, T = 13, W = 3, R = W + 1, C = 8 };
    float inv_freq[2];
    mt_rope_inv_freq(inv_freq, 4, 10000.0f, MT_ROPE_LLAMA);
    mt_attn_config cfg = {.C = C,
                          .H = 2,
                          .causal = 1,
                          .window = W,
                          .rope_dim = rope ? 4 : 0,
                          .rope_inv_freq = inv_freq,
                          .out_name = "o_proj"};
    mt_rng rng;
    mt_rng_init(&rng, 55, (uint64_t)P);
    float *params = gc_random(mt_attention_params_count(&cfg), &rng, 0.5f);
    mt_attn_params p;
    mt_attention_params_point(&p, params, &cfg);
    uint8_t *mask = left_pad_mask(B, T, 2);
    float *x = gc_random((size_t)B * T * C, &rng, 1.0f), *full = calloc((size_t)B * T * C, 4);
    float *acts = calloc(mt_attention_acts_count(&cfg, B, T, T), 4);
    mt_attn_acts a;
    mt_attention_acts_point(&a, acts, &cfg, B, T, T);
    mt_attention_forward(be, full, &a, x, x, &p,
                         &(mt_attn_call){.cfg = &cfg, .B = B, .Tq = T, .Tk = T, .key_mask = mask});
    float *ring = calloc(mt_kv_cache_count(&cfg, B, R), 4);
    mt_kv_cache cache;
    mt_kv_cache_point(&cache, ring, &cfg, B, R);
    float *xp = calloc((size_t)B * P * C, 4), *yp = calloc((size_t)B * P * C, 4);
    uint8_t slots[B * R];
    double worst = 0.0;
    for (int t0 = 0; t0 < P; t0 += chunk) {
        int n = P - t0 < chunk ? P - t0 : chunk, before = t0 < R - 1 ? t0 : R - 1;
        for (int b = 0; b < B; b++)
            memcpy(xp + (size_t)b * n * C, x + ((size_t)b * T + t0) * C, (size_t)n * C * 4);
        mt_attention_acts_point(&a, acts, &cfg, B, n, before + n);
        assert_int_equal(
            mt_attention_ring_decode(
                be, yp, &a, xp, &cache, &p,
                &(mt_attn_call){.cfg = &cfg, .B = B, .Tq = n, .key_mask = mask, .key_ld = T}),
            0);
        for (int b = 0; b < B; b++)
            worst = fmax(worst, max_rel(yp + (size_t)b * n * C, full + ((size_t)b * T + t0) * C,
                                        (size_t)n * C));
    }
    float xs[B * C], ys[B * C];
    mt_attention_acts_point(&a, acts, &cfg, B, 1, R);
    for (int t = P; t < T; t++) {
        for (int b = 0; b < B; b++) memcpy(xs + b * C, x + ((size_t)b * T + t) * C, C * 4);
        mt_kv_ring_slot_mask(slots, mask, T, B, t + 1, R);
        assert_int_equal(
            mt_attention_ring_decode(
                be, ys, &a, xs, &cache, &p,
                &(mt_attn_call){.cfg = &cfg, .B = B, .Tq = 1, .key_ld = T, .slot_mask = slots}),
            0);
        for (int b = 0; b < B; b++)
            worst = fmax(worst, max_rel(ys + b * C, full + ((size_t)b * T + t) * C, C));
    }
    assert_int_equal(cache.len, T);
    assert_int_equal(
        mt_attention_ring_decode(
            be, ys, &a, xp, &cache, &p,
            &(mt_attn_call){.cfg = &cfg, .B = B, .Tq = 2, .key_ld = T, .slot_mask = slots}),
        -1);
    assert_non_null(strstr(mt_last_error(), "one per step"));
    free(params), free(mask), free(x), free(full), free(acts), free(ring), free(xp), free(yp);
    return worst;
}

static void test_ring_decode_matches_window_forward(void **state)
{
    (void)state;
    const int prompts[] = {1, 3, 6, 9};
    for (size_t i = 0; i < sizeof prompts / sizeof prompts[0]; i++)
        for (int rope = 0; rope < 2; rope++)
            for (int chunk = 1; chunk <= 5; chunk += 2) {
                double e = ring_case(prompts[i], rope, chunk == 5 ? prompts[i] : chunk);
                printf("window 3, ring of 4: prefill %d%s in chunks of %d then steps to 13 vs "
                       "windowed forward, max error %.1e relative (bound 1e-5)\n",
                       prompts[i], rope ? " (rotary)" : "", chunk == 5 ? prompts[i] : chunk, e);
                assert_true(e < 1e-5);
            }
}

static void test_ring_slot_mask(void **state)
{
    (void)state;
    /* row 0: all real; row 1: pads at 0..2 */
    const uint8_t key_mask[2 * 8] = {1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 1, 1, 1, 1, 1};
    uint8_t slots[2 * 4];
    mt_kv_ring_slot_mask(slots, key_mask, 8, 2, 2, 4); /* positions 0, 1 in slots 0, 1 */
    const uint8_t want2[8] = {1, 1, 0, 0, 0, 0, 0, 0};
    assert_memory_equal(slots, want2, 8);
    mt_kv_ring_slot_mask(slots, key_mask, 8, 2, 6, 4); /* positions 2..5 in slots 2, 3, 0, 1 */
    const uint8_t want6[8] = {1, 1, 1, 1, 1, 1, 0, 1};
    assert_memory_equal(slots, want6, 8);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_retention_fast_matches_naive),
        cmocka_unit_test(test_retention_core_gradients),
        cmocka_unit_test(test_retention_recurrent_matches_parallel),
        cmocka_unit_test(test_retention_layer_gradients),
        cmocka_unit_test(test_retention_layer_steps),
        cmocka_unit_test(test_ring_decode_matches_window_forward),
        cmocka_unit_test(test_ring_slot_mask),
    };
    return cmocka_run_group_tests_name("models_arch_layers", tests, setup, NULL);
}
