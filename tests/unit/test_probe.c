/* Probes: Mamba's implicit attention against the formula computed term by term
 * (O(T^3 D N)) and against the scan itself (alpha u + D u must give the scan's y), state norms
 * against a direct recurrence, and mt_probe_run on tiny random models: the maps each
 * architecture has, their shapes, attention rows that are distributions over the visible
 * keys, causality (a longer hypothesis leaves the earlier positions' maps unchanged, which is
 * what makes the parallel pass equal to the decode), and its errors. */
#include "test_util.h"

#include "mtlab/error.h"
#include "mtlab/model.h"
#include "mtlab/probe.h"
#include "mtlab/rng.h"

enum { T = 9, D = 5, N = 4 };

typedef struct {
    float dt[T * D], dt_bias[D], A_log[D * N], Bm[T * N], Cm[T * N], u[T * D], Dskip[D];
} scan_inputs;

static float uniform(uint64_t *s, float lo, float hi)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return lo + (hi - lo) * (float)((*s >> 40) & 0xFFFFFF) / (float)0x1000000;
}

static void make_inputs(scan_inputs *x, uint64_t seed)
{
    for (int i = 0; i < T * D; i++)
        x->dt[i] = uniform(&seed, -2, 1), x->u[i] = uniform(&seed, -1, 1);
    for (int i = 0; i < D; i++)
        x->dt_bias[i] = uniform(&seed, -1, 0.5f), x->Dskip[i] = uniform(&seed, 0, 1);
    for (int i = 0; i < D * N; i++)
        x->A_log[i] = logf(1.0f + (float)(i % N)) + uniform(&seed, -0.2f, 0.2f);
    for (int i = 0; i < T * N; i++)
        x->Bm[i] = uniform(&seed, -1, 1), x->Cm[i] = uniform(&seed, -1, 1);
}

static void test_implicit_attention_matches_the_formula(void **state)
{
    (void)state;
    scan_inputs x;
    make_inputs(&x, 7);
    static float fast[D * T * T], naive[D * T * T];
    mt_scan_args a = {x.u, x.dt, x.A_log, x.Bm, x.Cm, x.Dskip, x.dt_bias, 1, T, D, N, NULL, NULL};
    mt_implicit_attention(fast, &a);
    mt_implicit_attention_naive(naive, &a);
    float largest = 0;
    for (int i = 0; i < D * T * T; i++) {
        assert_float_equal(fast[i], naive[i], 1e-5f * (1 + fabsf(naive[i])));
        if (fabsf(naive[i]) > largest) largest = fabsf(naive[i]);
    }
    assert_true(largest > 0.05f); /* not a trivially zero comparison */
    /* causal: nothing above the diagonal */
    for (int d = 0; d < D; d++)
        for (int r = 0; r < T; r++)
            for (int c = r + 1; c < T; c++) assert_true(fast[(d * T + r) * T + c] == 0.0f);
}

static void test_implicit_attention_reproduces_the_scan(void **state)
{
    (void)state;
    scan_inputs x;
    make_inputs(&x, 11);
    static float alpha[D * T * T];
    float y[T * D];
    mt_scan_args a = {x.u, x.dt, x.A_log, x.Bm, x.Cm, x.Dskip, x.dt_bias, 1, T, D, N, NULL, NULL};
    mt_implicit_attention(alpha, &a);
    mt_backend_cpu_naive()->scan_forward(y, NULL, &a);
    /* y_r,d = sum_c alpha_d[r][c] u_c,d + D_d u_r,d */
    for (int r = 0; r < T; r++)
        for (int d = 0; d < D; d++) {
            double s = x.Dskip[d] * x.u[r * D + d];
            for (int c = 0; c <= r; c++) s += alpha[(d * T + r) * T + c] * x.u[c * D + d];
            assert_float_equal((float)s, y[r * D + d], 1e-5f * (1 + fabsf(y[r * D + d])));
        }
}

static void test_state_norms_match_the_recurrence(void **state)
{
    (void)state;
    scan_inputs x;
    make_inputs(&x, 13);
    enum { G = 2 }; /* channels {0, 1} and {2, 3, 4}: the last group takes the remainder */
    float norms[T], groups[G * T];
    mt_state_norms(norms, groups, G,
                   &(mt_scan_args){x.u, x.dt, x.A_log, x.Bm, x.Cm, x.Dskip, x.dt_bias, 1, T, D, N,
                                   NULL, NULL});
    double h[D][N] = {{0}};
    for (int t = 0; t < T; t++) {
        double sq[G] = {0};
        for (int d = 0; d < D; d++) {
            double delta = log1p(exp((double)x.dt[t * D + d] + x.dt_bias[d]));
            for (int n = 0; n < N; n++) {
                h[d][n] = exp(-delta * exp((double)x.A_log[d * N + n])) * h[d][n] +
                          delta * x.Bm[t * N + n] * x.u[t * D + d];
                sq[d < 2 ? 0 : 1] += h[d][n] * h[d][n];
            }
        }
        assert_float_equal(groups[t], (float)sqrt(sq[0]), 1e-5);
        assert_float_equal(groups[T + t], (float)sqrt(sq[1]), 1e-5);
        assert_float_equal(norms[t], (float)sqrt(sq[0] + sq[1]), 1e-5);
    }
    assert_true(norms[T - 1] > 0.01f);
}

/* ---------------------------------------------------------------- mt_probe_run */

static mt_model *tiny(const char *arch, uint64_t seed)
{
    mt_model_config cfg;
    assert_int_equal(
        mt_model_preset(&cfg, !strcmp(arch, "mamba") ? "mamba-small" : "transformer-small"), 0);
    cfg.vocab_size = 40;
    cfg.d_model = 16;
    cfg.n_layers = 2;
    cfg.n_encoder_layers = 2;
    cfg.n_heads = 2;
    cfg.ffn_dim = 32;
    cfg.max_positions = 64;
    cfg.d_state = 4;
    cfg.dt_rank = 2;
    cfg.dropout = 0.0f;
    mt_model *m = mt_model_create(&cfg, mt_backend_cpu(), seed);
    if (!m) fail_msg("%s", mt_last_error());
    return m;
}

static const int32_t SRC[] = {7, 8, 9, 10, 11};
static const int32_t HYP[] = {12, 13, 14, 15, 16, 17};

static int count(const mt_probe_record *r, mt_probe_kind k)
{
    int n = 0;
    for (int i = 0; i < r->n_maps; i++) n += r->maps[i].kind == k;
    return n;
}

static const mt_probe_map *find(const mt_probe_record *r, mt_probe_kind k, int layer, int enc)
{
    for (int i = 0; i < r->n_maps; i++)
        if (r->maps[i].kind == k && r->maps[i].layer == layer && r->maps[i].encoder == enc)
            return &r->maps[i];
    fail_msg("no %s map for layer %d", mt_probe_kind_name(k), layer);
    return NULL;
}

/* Every row of every head sums to 1 (all keys visible) and causal maps are lower triangular. */
static void check_distributions(const mt_probe_map *m, int causal)
{
    for (int h = 0; h < m->heads; h++)
        for (int r = 0; r < m->rows; r++) {
            double s = 0;
            for (int c = 0; c < m->cols; c++) {
                float v = m->values[((size_t)h * m->rows + r) * m->cols + c];
                assert_true(v >= 0);
                if (causal && c > r) assert_true(v == 0.0f);
                s += v;
            }
            assert_float_equal(s, 1.0, 1e-5);
        }
}

static void test_transformer_maps(void **state)
{
    (void)state;
    mt_model *m = tiny("transformer", 3);
    mt_probe_record r;
    assert_int_equal(mt_probe_run(m, SRC, 5, HYP, 6, NULL, &r), 0);
    assert_int_equal(r.n_tokens, 7); /* <bos> + 6 */
    assert_int_equal(r.n_prompt, 1);
    assert_int_equal(r.n_src, 6); /* 5 + <eos> */
    assert_int_equal(r.src[5], mt_model_get_config(m)->eos_id);
    assert_int_equal(count(&r, MT_PROBE_SELF_ATTN), 4); /* 2 decoder + 2 encoder layers */
    assert_int_equal(count(&r, MT_PROBE_CROSS_ATTN), 2);
    assert_int_equal(count(&r, MT_PROBE_STATE_NORMS) + count(&r, MT_PROBE_IMPLICIT_ATTN), 0);
    const mt_probe_map *self = find(&r, MT_PROBE_SELF_ATTN, 1, 0);
    assert_int_equal(self->heads, 2);
    assert_int_equal(self->rows, 7);
    assert_int_equal(self->cols, 7);
    check_distributions(self, 1);
    assert_string_equal(mt_probe_map_name(self), "self-attention");
    assert_true(mt_probe_masked(self, 2, 3) && !mt_probe_masked(self, 3, 3));
    const mt_probe_map *cross = find(&r, MT_PROBE_CROSS_ATTN, 0, 0);
    assert_int_equal(cross->rows, 7);
    assert_int_equal(cross->cols, 6);
    assert_int_equal(cross->col_axis, MT_PROBE_AXIS_SOURCE);
    check_distributions(cross, 0);
    assert_false(mt_probe_masked(cross, 0, 5));
    const mt_probe_map *enc = find(&r, MT_PROBE_SELF_ATTN, 0, 1);
    assert_int_equal(enc->rows, 6);
    assert_int_equal(enc->row_axis, MT_PROBE_AXIS_SOURCE);
    check_distributions(enc, 0); /* the encoder sees the whole source */
    assert_false(mt_probe_masked(enc, 0, 5));
    mt_probe_record_free(&r);
    mt_model_free(m);
}

static void test_mamba_maps(void **state)
{
    (void)state;
    mt_model *m = tiny("mamba", 5);
    mt_probe_record r;
    mt_probe_opts o = {.groups = 4};
    assert_int_equal(mt_probe_run(m, SRC, 5, HYP, 6, &o, &r), 0);
    assert_int_equal(r.n_tokens, 12); /* 5 + <sep> + 6 */
    assert_int_equal(r.n_prompt, 6);
    assert_int_equal(r.tokens[5], mt_model_get_config(m)->sep_id);
    assert_null(r.src);
    assert_int_equal(count(&r, MT_PROBE_SELF_ATTN) + count(&r, MT_PROBE_CROSS_ATTN), 0);
    assert_int_equal(count(&r, MT_PROBE_IMPLICIT_ATTN), 2);
    assert_int_equal(count(&r, MT_PROBE_STATE_GROUPS), 2);
    const mt_probe_map *norms = find(&r, MT_PROBE_STATE_NORMS, -1, 0);
    assert_int_equal(norms->rows, 2);
    assert_int_equal(norms->cols, 12);
    assert_int_equal(norms->row_axis, MT_PROBE_AXIS_LAYER);
    const mt_probe_map *groups = find(&r, MT_PROBE_STATE_GROUPS, 1, 0);
    assert_int_equal(groups->rows, 4);
    /* the groups' norms make up the layer's norm */
    for (int t = 0; t < 12; t++) {
        double sq = 0;
        for (int g = 0; g < 4; g++)
            sq += (double)groups->values[g * 12 + t] * groups->values[g * 12 + t];
        assert_float_equal((float)sqrt(sq), norms->values[12 + t],
                           1e-4f * (1 + norms->values[12 + t]));
        assert_true(norms->values[t] > 0);
    }
    const mt_probe_map *imp = find(&r, MT_PROBE_IMPLICIT_ATTN, 0, 0);
    assert_int_equal(imp->rows, 12);
    for (int i = 0; i < 12; i++)
        for (int j = 0; j < 12; j++) {
            float v = imp->values[i * 12 + j];
            assert_true(j > i ? v == 0.0f : v >= 0.0f);
            assert_int_equal(mt_probe_masked(imp, i, j), j > i);
            assert_false(mt_probe_masked(norms, i % 2, j));
        }
    assert_true(imp->values[11 * 12 + 11] > 0);
    mt_probe_record_free(&r);
    mt_model_free(m);
}

/* RetNet's retention layers and Mamba-Local's sliding-window layers give self-attention maps
 * (retention: magnitudes, causal; window: zero beyond the window, rows summing to 1); the
 * hybrid's Mamba layers keep their state norms. */
static void test_retention_and_window_maps(void **state)
{
    (void)state;
    mt_model_config cfg;
    assert_int_equal(mt_model_preset(&cfg, "retnet-small"), 0);
    cfg.vocab_size = 40, cfg.d_model = 16, cfg.n_layers = 2, cfg.n_heads = 2;
    cfg.value_dim = 32, cfg.ffn_dim = 32, cfg.dropout = 0.0f;
    mt_model *m = mt_model_create(&cfg, mt_backend_cpu(), 4);
    if (!m) fail_msg("%s", mt_last_error());
    mt_probe_record r;
    assert_int_equal(mt_probe_run(m, SRC, 5, HYP, 6, NULL, &r), 0);
    assert_int_equal(count(&r, MT_PROBE_SELF_ATTN), 2);
    const mt_probe_map *ret = find(&r, MT_PROBE_SELF_ATTN, 1, 0);
    assert_string_equal(mt_probe_map_name(ret), "retention");
    assert_int_equal(ret->heads, 2);
    assert_int_equal(ret->rows, 12);
    for (int h = 0; h < 2; h++)
        for (int i = 0; i < 12; i++) {
            double row = 0;
            for (int j = 0; j < 12; j++) {
                float v = ret->values[((size_t)h * 12 + i) * 12 + j];
                assert_true(j > i ? v == 0.0f : v >= 0.0f);
                assert_int_equal(mt_probe_masked(ret, i, j), j > i);
                row += v;
            }
            assert_true(row > 0); /* |q.k| D summed, divided by its clamp r: at most 1 */
            assert_true(row <= 1.0 + 1e-5);
        }
    mt_probe_record_free(&r);
    mt_model_free(m);

    assert_int_equal(mt_model_preset(&cfg, "mamba-local-small"), 0);
    cfg.vocab_size = 40, cfg.d_model = 16, cfg.n_layers = 4, cfg.n_heads = 2, cfg.window = 2;
    cfg.n_attn_layers = 2, cfg.attn_layers[0] = 1, cfg.attn_layers[1] = 3;
    cfg.d_state = 4, cfg.dt_rank = 2, cfg.dropout = 0.0f;
    m = mt_model_create(&cfg, mt_backend_cpu(), 5);
    if (!m) fail_msg("%s", mt_last_error());
    assert_int_equal(mt_probe_run(m, SRC, 5, HYP, 6, NULL, &r), 0);
    assert_int_equal(count(&r, MT_PROBE_SELF_ATTN), 2);
    assert_int_equal(count(&r, MT_PROBE_IMPLICIT_ATTN), 2);
    assert_int_equal(find(&r, MT_PROBE_STATE_NORMS, -1, 0)->rows, 2);
    const mt_probe_map *win = find(&r, MT_PROBE_SELF_ATTN, 3, 0);
    assert_string_equal(mt_probe_map_name(win), "local window attention");
    assert_string_equal(mt_probe_map_name(find(&r, MT_PROBE_IMPLICIT_ATTN, 0, 0)),
                        "implicit attention");
    for (int i = 0; i < 12; i++)
        for (int j = 0; j < 12; j++) {
            assert_int_equal(mt_probe_masked(win, i, j), j > i || j < i - 2);
            if (j > i || j < i - 2) assert_true(win->values[i * 12 + j] == 0.0f);
        }
    check_distributions(win, 1);
    mt_probe_record_free(&r);
    mt_model_free(m);
}

/* Position t sees only positions <= t, so a longer hypothesis changes none of the maps' earlier
 * rows: the parallel pass gives each token what it had while it was decoded. */
static void test_maps_are_causal_in_the_hypothesis(void **state)
{
    (void)state;
    const char *archs[] = {"mamba", "transformer"};
    for (int a = 0; a < 2; a++) {
        mt_model *m = tiny(archs[a], 9);
        mt_probe_record short_r, long_r;
        assert_int_equal(mt_probe_run(m, SRC, 5, HYP, 3, NULL, &short_r), 0);
        assert_int_equal(mt_probe_run(m, SRC, 5, HYP, 6, NULL, &long_r), 0);
        assert_int_equal(short_r.n_maps, long_r.n_maps);
        for (int i = 0; i < short_r.n_maps; i++) {
            const mt_probe_map *s = &short_r.maps[i], *l = &long_r.maps[i];
            assert_int_equal(s->kind, l->kind);
            if (s->encoder) continue; /* the encoder sees the same source in both */
            for (int h = 0; h < s->heads; h++)
                for (int r = 0; r < s->rows; r++)
                    for (int c = 0; c < s->cols; c++) {
                        float sv = s->values[((size_t)h * s->rows + r) * s->cols + c];
                        float lv = l->values[((size_t)h * l->rows + r) * l->cols + c];
                        assert_float_equal(sv, lv, 1e-5f * (1 + fabsf(lv)));
                    }
        }
        mt_probe_record_free(&short_r);
        mt_probe_record_free(&long_r);
        mt_model_free(m);
    }
}

/* An empty translation (no hypothesis tokens, hyp NULL as a decoder leaves it) and an empty
 * source (no ids from the tokenizer) are probed like any other: only the prompt positions. */
static void test_empty_hypothesis_and_source(void **state)
{
    (void)state;
    const char *archs[] = {"mamba", "transformer"};
    for (int a = 0; a < 2; a++) {
        mt_model *m = tiny(archs[a], 11);
        int encdec = mt_model_is_encdec(m);
        mt_probe_record r;
        assert_int_equal(mt_probe_run(m, SRC, 5, NULL, 0, NULL, &r), 0);
        assert_int_equal(r.n_tokens, encdec ? 1 : 6);
        assert_int_equal(r.n_prompt, r.n_tokens);
        assert_true(r.n_maps > 0);
        mt_probe_record_free(&r);
        assert_int_equal(mt_probe_run(m, NULL, 0, NULL, 0, NULL, &r), 0);
        assert_int_equal(r.n_tokens, 1);
        assert_int_equal(r.n_src, encdec ? 1 : 0);
        mt_probe_record_free(&r);
        assert_int_equal(mt_probe_run(m, NULL, 0, HYP, 2, NULL, &r), 0);
        assert_int_equal(r.n_tokens, 3);
        mt_probe_record_free(&r);
        mt_model_free(m);
    }
}

static void test_kinds_filter_and_errors(void **state)
{
    (void)state;
    mt_model *m = tiny("mamba", 5);
    mt_probe_record r;
    mt_probe_opts o = {.kinds = 1u << MT_PROBE_STATE_NORMS};
    assert_int_equal(mt_probe_run(m, SRC, 5, HYP, 6, &o, &r), 0);
    assert_int_equal(r.n_maps, 1);
    assert_int_equal(r.maps[0].kind, MT_PROBE_STATE_NORMS);
    mt_probe_record_free(&r);
    o = (mt_probe_opts){.max_positions = 8};
    assert_int_equal(mt_probe_run(m, SRC, 5, HYP, 6, &o, &r), -1);
    assert_non_null(strstr(mt_last_error(), "12 positions exceed the limit of 8"));
    assert_int_equal(r.n_maps, 0);
    const int32_t bad[] = {7, 99};
    assert_int_equal(mt_probe_run(m, bad, 2, HYP, 1, NULL, &r), -1);
    assert_non_null(strstr(mt_last_error(), "outside the vocabulary"));
    assert_null(r.maps);
    mt_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_implicit_attention_matches_the_formula),
        cmocka_unit_test(test_implicit_attention_reproduces_the_scan),
        cmocka_unit_test(test_state_norms_match_the_recurrence),
        cmocka_unit_test(test_transformer_maps),
        cmocka_unit_test(test_mamba_maps),
        cmocka_unit_test(test_retention_and_window_maps),
        cmocka_unit_test(test_maps_are_causal_in_the_hypothesis),
        cmocka_unit_test(test_empty_hypothesis_and_source),
        cmocka_unit_test(test_kinds_filter_and_errors),
    };
    return cmocka_run_group_tests_name("probe", tests, NULL, NULL);
}
