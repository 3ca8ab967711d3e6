/* Multi-head attention layer: forward against a double-precision reference written from the
 * formulas, every gradient against that reference's finite differences (bidirectional with
 * padding, causal with rotary, sliding window with left padding, cross attention), and the
 * KV-cache decoding forms against the full forward. */
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

/* ---------------------------------------------------------------- double reference */
typedef struct {
    mt_attn_config cfg;
    int B, Tq, Tk, self;
    const uint8_t *mask; /* (B, Tk) or NULL */
    const float *inv_freq; /* host copy of cfg.rope_inv_freq */
    const float *fbase; /* float parameter block */
    mt_attn_params fp; /* pointers into fbase: offsets into pd */
    double *pd, *xq, *xkv, *r, *out;
} attn_ref;

#define OFF(field) (m->fp.field ? m->pd + (m->fp.field - m->fbase) : NULL)

/* y (rows, out) = x (rows, in) W^T + b */
static void linear_d(double *y, const double *x, const double *W, const double *b, int rows, int in,
                     int out)
{
    for (int i = 0; i < rows; i++)
        for (int o = 0; o < out; o++) {
            double acc = b ? b[o] : 0.0;
            for (int c = 0; c < in; c++) acc += W[(size_t)o * in + c] * x[(size_t)i * in + c];
            y[(size_t)i * out + o] = acc;
        }
}

/* rotate the first rope_dim dims of every head of x (B, T, C) by pos = pos0 + t */
static void rope_d(double *x, const attn_ref *m, int T, int pos0)
{
    int H = m->cfg.H, Dh = m->cfg.C / H, half = m->cfg.rope_dim / 2;
    for (int b = 0; b < m->B; b++)
        for (int t = 0; t < T; t++)
            for (int h = 0; h < H; h++) {
                double *v = x + ((size_t)b * T + t) * m->cfg.C + (size_t)h * Dh;
                for (int i = 0; i < half; i++) {
                    double angle = (pos0 + t) * (double)m->inv_freq[i];
                    int ia = m->cfg.rope_interleaved ? 2 * i : i;
                    int ib = m->cfg.rope_interleaved ? 2 * i + 1 : i + half;
                    double xa = v[ia], xb = v[ib];
                    v[ia] = xa * cos(angle) - xb * sin(angle);
                    v[ib] = xb * cos(angle) + xa * sin(angle);
                }
            }
}

static void attn_ref_forward(attn_ref *m)
{
    int B = m->B, Tq = m->Tq, Tk = m->Tk, C = m->cfg.C, H = m->cfg.H, Dh = C / H;
    int kvC = m->cfg.kv_C ? m->cfg.kv_C : C, q0 = Tk - Tq;
    const double *xkv = m->self ? m->xq : m->xkv;
    double *q = calloc((size_t)B * Tq * C, 8), *k = calloc((size_t)B * Tk * C, 8);
    double *v = calloc((size_t)B * Tk * C, 8), *ctx = calloc((size_t)B * Tq * C, 8),
           *p = calloc(Tk, 8);
    linear_d(q, m->xq, OFF(q_w), OFF(q_b), B * Tq, C, C);
    linear_d(k, xkv, OFF(k_w), OFF(k_b), B * Tk, kvC, C);
    linear_d(v, xkv, OFF(v_w), OFF(v_b), B * Tk, kvC, C);
    if (m->cfg.rope_dim) rope_d(q, m, Tq, q0), rope_d(k, m, Tk, 0);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < Tq; i++) {
                double mx = -INFINITY, z = 0.0;
                int pos = q0 + i;
                for (int j = 0; j < Tk; j++) {
                    int vis = (!m->mask || m->mask[b * Tk + j]) && !(m->cfg.causal && j > pos) &&
                              !(m->cfg.causal && m->cfg.window && j < pos - m->cfg.window);
                    double s = 0.0;
                    for (int e = 0; e < Dh; e++)
                        s += q[((size_t)b * Tq + i) * C + h * Dh + e] *
                             k[((size_t)b * Tk + j) * C + h * Dh + e];
                    p[j] = vis ? s / sqrt((double)Dh) : -INFINITY;
                    mx = fmax(mx, p[j]);
                }
                for (int j = 0; j < Tk; j++)
                    p[j] = mx == -INFINITY ? 0.0 : exp(p[j] - mx), z += p[j];
                for (int e = 0; e < Dh; e++) {
                    double acc = 0.0;
                    for (int j = 0; j < Tk; j++)
                        acc += (z > 0 ? p[j] / z : 0.0) * v[((size_t)b * Tk + j) * C + h * Dh + e];
                    ctx[((size_t)b * Tq + i) * C + h * Dh + e] = acc;
                }
            }
    linear_d(m->out, ctx, OFF(o_w), OFF(o_b), B * Tq, C, C);
    free(q), free(k), free(v), free(ctx), free(p);
}

static double attn_ref_loss(void *ctx)
{
    attn_ref *m = ctx;
    attn_ref_forward(m);
    double acc = 0.0;
    for (size_t i = 0; i < (size_t)m->B * m->Tq * m->cfg.C; i++) acc += m->r[i] * m->out[i];
    return acc;
}

static double *to_double(const float *x, size_t n)
{
    double *y = malloc(n * sizeof *y);
    for (size_t i = 0; i < n; i++) y[i] = x[i];
    return y;
}

/* ---------------------------------------------------------------- gradient checks */
typedef struct {
    const char *name;
    mt_attn_config cfg;
    int B, Tq, Tk, self, pads; /* batch row b has b * pads left pads (key mask) */
} attn_setup;

static void attention_grad_case(const attn_setup *s)
{
    mt_attn_config cfg = s->cfg;
    int B = s->B, Tq = s->Tq, Tk = s->Tk, C = cfg.C, kvC = cfg.kv_C ? cfg.kv_C : C;
    float inv_freq[16];
    if (cfg.rope_dim) {
        mt_rope_inv_freq(inv_freq, cfg.rope_dim, 10000.0f,
                         cfg.rope_interleaved ? MT_ROPE_RETNET : MT_ROPE_LLAMA);
        cfg.rope_inv_freq = inv_freq; /* the CPU backend reads host memory */
    }
    uint8_t *mask = NULL;
    if (s->pads) {
        mask = malloc((size_t)B * Tk);
        for (int b = 0; b < B; b++)
            for (int j = 0; j < Tk; j++) mask[b * Tk + j] = j >= b * s->pads;
    }
    mt_rng rng;
    mt_rng_init(&rng, 40, (uint64_t)Tk);
    size_t np = mt_attention_params_count(&cfg), na = mt_attention_acts_count(&cfg, B, Tq, Tk);
    size_t nq = (size_t)B * Tq * C, nkv = (size_t)B * Tk * kvC;
    mt_tensor_spec specs[8];
    int nt = mt_attention_tensors(&cfg, specs);
    assert_int_equal(mt_tensors_numel(specs, nt), np);
    float *params = gc_random(np, &rng, 0.5f), *grads = calloc(np, 4);
    float *acts = calloc(na, 4), *dacts = calloc(na, 4);
    mt_attn_params p, g;
    mt_attn_acts a, da;
    assert_ptr_equal(mt_attention_params_point(&p, params, &cfg), params + np);
    mt_attention_params_point(&g, grads, &cfg);
    assert_ptr_equal(mt_attention_acts_point(&a, acts, &cfg, B, Tq, Tk), acts + na);
    mt_attention_acts_point(&da, dacts, &cfg, B, Tq, Tk);
    float *xq = gc_random(nq, &rng, 1.0f), *xkv = s->self ? xq : gc_random(nkv, &rng, 1.0f);
    float *dxq = calloc(nq, 4), *dxkv = s->self ? dxq : calloc(nkv, 4);
    float *out = calloc(nq, 4), *r = gc_random(nq, &rng, 1.0f);
    mt_attn_call call = {.cfg = &cfg, .B = B, .Tq = Tq, .Tk = Tk, .key_mask = mask};
    mt_attention_forward(be, out, &a, xq, xkv, &p, &call);
    mt_attention_backward(be, &(mt_attn_grads){dxq, dxkv, &g, &da}, r, &a, xq, xkv, &p, &call);
    attn_ref m = {.cfg = cfg,
                  .B = B,
                  .Tq = Tq,
                  .Tk = Tk,
                  .self = s->self,
                  .mask = mask,
                  .inv_freq = inv_freq,
                  .fbase = params,
                  .fp = p,
                  .pd = to_double(params, np),
                  .xq = to_double(xq, nq),
                  .xkv = s->self ? NULL : to_double(xkv, nkv),
                  .r = to_double(r, nq),
                  .out = calloc(nq, 8)};
    attn_ref_forward(&m);
    double diff = 0.0, scale = 0.0;
    for (size_t i = 0; i < nq; i++)
        diff = fmax(diff, fabs(out[i] - m.out[i])), scale = fmax(scale, fabs(m.out[i]));
    printf("attention %-24s forward vs double reference %.1e (bound 1e-5 relative)\n", s->name,
           diff / scale);
    assert_true(diff <= 1e-5 * scale);
    char label[96];
    snprintf(label, sizeof label, "%s dxq", s->name);
    assert_true(
        gc_report("attention", label, gc_rel_error(m.xq, nq, dxq, attn_ref_loss, &m, 48), 1e-5));
    if (!s->self) {
        snprintf(label, sizeof label, "%s dxkv", s->name);
        assert_true(gc_report("attention", label,
                              gc_rel_error(m.xkv, nkv, dxkv, attn_ref_loss, &m, 48), 1e-5));
    }
    size_t off = 0;
    for (int t = 0; t < nt; t++) {
        size_t n = mt_tensor_numel(&specs[t]);
        snprintf(label, sizeof label, "%s %s", s->name, specs[t].name);
        if (!strcmp(specs[t].name, "k_proj.bias")) {
            /* q.(k_j + b) shifts every score of a query by q.b: softmax ignores it, so the
             * true gradient is 0 and a relative error means nothing */
            double mx = 0.0;
            for (size_t i = 0; i < n; i++) mx = fmax(mx, fabs(grads[off + i]));
            printf("attention: %-37s max |gradient| %.1e (exactly 0 in exact arithmetic; bound "
                   "1e-6)\n",
                   label, mx);
            assert_true(mx < 1e-6);
            off += n;
            continue;
        }
        assert_true(gc_report("attention", label,
                              gc_rel_error(m.pd + off, n, grads + off, attn_ref_loss, &m, 32),
                              1e-5));
        off += n;
    }
    free(mask), free(params), free(grads), free(acts), free(dacts), free(xq), free(dxq), free(out),
        free(r);
    if (!s->self) free(xkv), free(dxkv), free(m.xkv);
    free(m.pd), free(m.xq), free(m.r), free(m.out);
}

static void test_attention_grads(void **state)
{
    (void)state;
    const attn_setup cases[] = {
        {"bidirectional+pad+bias", {.C = 8, .H = 2, .bias = 1}, 3, 5, 5, 1, 1},
        {"causal+rotary", {.C = 8, .H = 2, .causal = 1, .rope_dim = 4}, 2, 6, 6, 1, 0},
        {"window 2+pad+interleaved",
         {.C = 12, .H = 3, .causal = 1, .window = 2, .rope_dim = 4, .rope_interleaved = 1},
         2,
         7,
         7,
         1,
         2},
        {"cross kv_C 6+pad+bias", {.C = 8, .H = 2, .kv_C = 6, .bias = 1}, 2, 4, 6, 0, 2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) attention_grad_case(&cases[i]);
}

/* ---------------------------------------------------------------- decoding */
/* Prefill 3 tokens then decode 4 one by one through the KV cache: every output equals the
 * full causal forward over the 7 tokens (rotary, left padding and a window included). */
static void decode_case(int window)
{
    enum { B = 2, T = 7, PRE = 3, TMAX = 9 };
    float inv_freq[2];
    mt_rope_inv_freq(inv_freq, 4, 10000.0f, MT_ROPE_LLAMA);
    mt_attn_config cfg = {
        .C = 8, .H = 2, .causal = 1, .window = window, .rope_dim = 4, .rope_inv_freq = inv_freq};
    int C = cfg.C;
    mt_rng rng;
    mt_rng_init(&rng, 41, (uint64_t)window);
    size_t np = mt_attention_params_count(&cfg);
    float *params = gc_random(np, &rng, 0.5f), *x = gc_random((size_t)B * T * C, &rng, 1.0f);
    mt_attn_params p;
    mt_attention_params_point(&p, params, &cfg);
    uint8_t mask_full[B * T], mask_cache[B * TMAX];
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++) mask_full[b * T + t] = t >= 2 * b;
        for (int t = 0; t < TMAX; t++) mask_cache[b * TMAX + t] = t >= 2 * b;
    }
    float *acts = calloc(mt_attention_acts_count(&cfg, B, T, TMAX), 4);
    mt_attn_acts a;
    mt_attention_acts_point(&a, acts, &cfg, B, T, T);
    float *full = calloc((size_t)B * T * C, 4);
    mt_attention_forward(
        be, full, &a, x, x, &p,
        &(mt_attn_call){.cfg = &cfg, .B = B, .Tq = T, .Tk = T, .key_mask = mask_full});
    float *cache_block = calloc(mt_kv_cache_count(&cfg, B, TMAX), 4);
    mt_kv_cache cache;
    assert_ptr_equal(mt_kv_cache_point(&cache, cache_block, &cfg, B, TMAX),
                     cache_block + mt_kv_cache_count(&cfg, B, TMAX));
    float *xs = calloc((size_t)B * PRE * C, 4), *ys = calloc((size_t)B * PRE * C, 4);
    double worst = 0.0, scale = 0.0;
    for (int i = 0; i < B * T * C; i++) scale = fmax(scale, fabs(full[i]));
    for (int t0 = 0; t0 < T; t0 += (t0 == 0 ? PRE : 1)) {
        int n = t0 == 0 ? PRE : 1;
        for (int b = 0; b < B; b++)
            memcpy(xs + (size_t)b * n * C, x + ((size_t)b * T + t0) * C, (size_t)n * C * 4);
        mt_attention_acts_point(&a, acts, &cfg, B, n, TMAX);
        assert_int_equal(mt_attention_decode(
                             be, ys, &a, xs, &cache, &p,
                             &(mt_attn_call){.cfg = &cfg, .B = B, .Tq = n, .key_mask = mask_cache}),
                         0);
        for (int b = 0; b < B; b++)
            for (int i = 0; i < n * C; i++)
                worst = fmax(worst,
                             fabs(ys[(size_t)b * n * C + i] - full[((size_t)b * T + t0) * C + i]));
    }
    assert_int_equal(cache.len, T);
    printf("attention: KV-cache decode (window %d) vs full forward, max error %.1e of scale %.2f "
           "(bound 1e-6 relative)\n",
           window, worst, scale);
    assert_true(worst <= 1e-6 * scale);
    /* 2 more fit, the third does not */
    mt_attention_acts_point(&a, acts, &cfg, B, 1, TMAX);
    mt_attn_call step = {.cfg = &cfg, .B = B, .Tq = 1, .key_mask = mask_cache};
    assert_int_equal(mt_attention_decode(be, ys, &a, xs, &cache, &p, &step), 0);
    assert_int_equal(mt_attention_decode(be, ys, &a, xs, &cache, &p, &step), 0);
    assert_int_equal(mt_attention_decode(be, ys, &a, xs, &cache, &p, &step), -1);
    assert_non_null(strstr(mt_last_error(), "KV cache full"));
    free(params), free(x), free(acts), free(full), free(cache_block), free(xs), free(ys);
}

static void test_attention_decode_matches_forward(void **state)
{
    (void)state;
    decode_case(0);
    decode_case(2);
}

/* Cross attention from cached encoder keys/values equals the training-time cross forward;
 * reordering the cache along the batch moves whole rows. TMAX: the cache's positions per row,
 * S (every source's rows end to end: one product fills them) or more (a product per source). */
static void cross_case(int TMAX)
{
    enum { B = 3, TQ = 4, S = 5 };
    mt_attn_config cfg = {.C = 8, .H = 2, .kv_C = 6, .bias = 1};
    int C = cfg.C;
    mt_rng rng;
    mt_rng_init(&rng, 42, 0);
    float *params = gc_random(mt_attention_params_count(&cfg), &rng, 0.5f);
    mt_attn_params p;
    mt_attention_params_point(&p, params, &cfg);
    float *x = gc_random((size_t)B * TQ * C, &rng, 1.0f),
          *mem = gc_random((size_t)B * S * 6, &rng, 1.0f);
    uint8_t mem_mask[B * S];
    for (int i = 0; i < B * S; i++) mem_mask[i] = (i % S) < S - (i / S); /* right padding */
    float *acts = calloc(mt_attention_acts_count(&cfg, B, TQ, TMAX), 4);
    mt_attn_acts a;
    mt_attention_acts_point(&a, acts, &cfg, B, TQ, S);
    float *full = calloc((size_t)B * TQ * C, 4), *dec = calloc((size_t)B * TQ * C, 4);
    mt_attn_call call = {.cfg = &cfg, .B = B, .Tq = TQ, .Tk = S, .key_mask = mem_mask};
    mt_attention_forward(be, full, &a, x, mem, &p, &call);
    float *block = calloc(2 * mt_kv_cache_count(&cfg, B, TMAX), 4);
    mt_kv_cache cache, moved;
    float *next = mt_kv_cache_point(&cache, block, &cfg, B, TMAX);
    mt_kv_cache_point(&moved, next, &cfg, B, TMAX);
    mt_attention_cross_fill(be, &cache, mem, &p, &cfg, B, S, 0);
    mt_attention_acts_point(&a, acts, &cfg, B, TQ, TMAX);
    mt_attention_cross_decode(be, dec, &a, x, &cache, &p, &call);
    double worst = 0.0, scale = 0.0;
    for (int i = 0; i < B * TQ * C; i++)
        worst = fmax(worst, fabs(dec[i] - full[i])), scale = fmax(scale, fabs(full[i]));
    printf("attention: cross decode from a cache of %d positions a row (sources of %d) vs cross "
           "forward, max error %.1e of scale %.2f (bound 1e-6 relative)\n",
           TMAX, S, worst, scale);
    assert_true(worst <= 1e-6 * scale);
    int32_t beams[B] = {2, 2, 0};
    mt_kv_cache_reorder(be, &moved, &cache, beams, B, &cfg);
    assert_int_equal(moved.len, S);
    size_t row = (size_t)TMAX * C;
    assert_memory_equal(moved.k, cache.k + 2 * row, row * 4);
    assert_memory_equal(moved.v + row, cache.v + 2 * row, row * 4);
    assert_memory_equal(moved.k + 2 * row, cache.k, row * 4);
    free(params), free(x), free(mem), free(acts), free(full), free(dec), free(block);
}

static void test_cross_decode_and_reorder(void **state)
{
    (void)state;
    cross_case(5);
    cross_case(6);
}

static void test_attention_tensor_table(void **state)
{
    (void)state;
    mt_attn_config marian = {.C = 16, .H = 4, .bias = 1};
    mt_tensor_spec specs[8];
    assert_int_equal(mt_attention_tensors(&marian, specs), 8);
    assert_string_equal(specs[0].name, "q_proj.weight");
    assert_string_equal(specs[1].name, "q_proj.bias");
    assert_string_equal(specs[7].name, "out_proj.bias");
    assert_int_equal(specs[1].decay, 0);
    mt_attn_config llama = {.C = 16, .H = 4, .out_name = "o_proj"};
    assert_int_equal(mt_attention_tensors(&llama, specs), 4);
    assert_string_equal(specs[3].name, "o_proj.weight");
    mt_attn_params p;
    float block[4 * 256];
    mt_attention_params_point(&p, block, &llama);
    assert_null(p.q_b);
    assert_ptr_equal(p.o_w, block + 3 * 256);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_attention_grads),
        cmocka_unit_test(test_attention_decode_matches_forward),
        cmocka_unit_test(test_cross_decode_and_reorder),
        cmocka_unit_test(test_attention_tensor_table),
    };
    return cmocka_run_group_tests_name("layers_attention", tests, setup, NULL);
}
