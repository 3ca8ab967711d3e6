/* The selective scan: the streaming CPU scan against the naive O(T*D*N) loop that keeps every
 * expanded state, forward and backward; the recurrent single step against the parallel
 * forward; and every scan gradient against finite differences of a double-precision scan. */
#include "test_util.h"
#include "grad_check.h"
#include "mtlab/backend.h"

static const mt_backend *fast, *naive;

static int setup(void **state)
{
    (void)state;
    fast = mt_backend_cpu();
    naive = mt_backend_cpu_naive();
    return 0;
}

typedef struct {
    int B, T, D, N;
    float *u, *dt, *A_log, *Bm, *Cm, *Dskip, *dt_bias, *y, *r;
    mt_scan_args a;
} scan_case;

static void scan_case_init(scan_case *s, int B, int T, int D, int N, uint64_t seed)
{
    mt_rng rng;
    mt_rng_init(&rng, seed, 0);
    s->B = B, s->T = T, s->D = D, s->N = N;
    size_t btd = (size_t)B * T * D, btn = (size_t)B * T * N;
    s->u = gc_random(btd, &rng, 1.0f);
    s->dt = gc_random(btd, &rng, 1.5f);
    s->A_log = gc_random((size_t)D * N, &rng, 1.0f);
    for (int d = 0; d < D; d++) /* A_log near log(1..N), the S4D-real init */
        for (int n = 0; n < N; n++)
            s->A_log[d * N + n] += (float)(round(log(n + 1.0) * 4096) / 4096);
    s->Bm = gc_random(btn, &rng, 1.0f);
    s->Cm = gc_random(btn, &rng, 1.0f);
    s->Dskip = gc_random(D, &rng, 1.0f);
    s->dt_bias = gc_random(D, &rng, 1.0f);
    s->y = calloc(btd, 4);
    s->r = gc_random(btd, &rng, 1.0f);
    s->a = (mt_scan_args){s->u, s->dt, s->A_log, s->Bm, s->Cm, s->Dskip, s->dt_bias,
                          B,    T,     D,        N,     NULL,  NULL};
}

static void scan_case_free(scan_case *s)
{
    free(s->u), free(s->dt), free(s->A_log), free(s->Bm), free(s->Cm), free(s->Dskip);
    free(s->dt_bias), free(s->y), free(s->r);
}

/* all seven gradients in one block */
typedef struct {
    float *block;
    mt_scan_grads g;
} scan_grads;

static void scan_grads_init(scan_grads *sg, const scan_case *s)
{
    size_t btd = (size_t)s->B * s->T * s->D, btn = (size_t)s->B * s->T * s->N;
    size_t dn = (size_t)s->D * s->N, total = 2 * btd + dn + 2 * btn + 2 * (size_t)s->D;
    sg->block = calloc(total, 4);
    float *p = sg->block;
    sg->g.du = p, p += btd;
    sg->g.ddt = p, p += btd;
    sg->g.dA_log = p, p += dn;
    sg->g.dBm = p, p += btn;
    sg->g.dCm = p, p += btn;
    sg->g.dDskip = p, p += s->D;
    sg->g.ddt_bias = p;
}

static void test_scan_vs_naive(void **state)
{
    (void)state;
    scan_case s;
    scan_case_init(&s, 3, 37, 37, 6, 21);
    s.dt[5] = 30.0f; /* the linear branch of softplus (above 20) */
    size_t btd = (size_t)s.B * s.T * s.D, bdn = (size_t)s.B * s.D * s.N;
    float *y2 = calloc(btd, 4), *h1 = calloc(bdn, 4), *h2 = calloc(bdn, 4);
    fast->scan_forward(s.y, h1, &s.a);
    naive->scan_forward(y2, h2, &s.a);
    double ey = max_rel(s.y, y2, btd), eh = max_rel(h1, h2, bdn);
    scan_grads g1, g2;
    scan_grads_init(&g1, &s), scan_grads_init(&g2, &s);
    fast->scan_backward(&g1.g, s.r, &s.a);
    naive->scan_backward(&g2.g, s.r, &s.a);
    const char *names[7] = {"du", "ddt", "dA_log", "dBm", "dCm", "dD", "ddt_bias"};
    float *f1[7] = {g1.g.du, g1.g.ddt, g1.g.dA_log, g1.g.dBm, g1.g.dCm, g1.g.dDskip, g1.g.ddt_bias};
    float *f2[7] = {g2.g.du, g2.g.ddt, g2.g.dA_log, g2.g.dBm, g2.g.dCm, g2.g.dDskip, g2.g.ddt_bias};
    size_t sizes[7] = {
        btd, btd, (size_t)s.D * s.N, (size_t)s.B * s.T * s.N, (size_t)s.B * s.T * s.N, s.D, s.D};
    printf("scan: fast vs naive (B 3, T 37, D 37, N 6): y %.1e h_last %.1e", ey, eh);
    double worst = fmax(ey, eh);
    for (int i = 0; i < 7; i++) {
        double e = max_rel(f1[i], f2[i], sizes[i]);
        printf(" %s %.1e", names[i], e);
        worst = fmax(worst, e);
    }
    printf(" (bound 2e-6)\n");
    assert_true(worst < 2e-6);
    free(y2), free(h1), free(h2), free(g1.block), free(g2.block);
    scan_case_free(&s);
}

/* Feeding the tokens one at a time through scan_step reproduces the parallel scan: a state
 * size of 4 (states moved element by element), then 16 over two whole channel blocks and a
 * part (whole blocks move in 8 x 8 transposes) */
static void step_matches_forward(int B, int T, int D, int N, uint64_t seed)
{
    scan_case s;
    scan_case_init(&s, B, T, D, N, seed);
    float *h_last = calloc((size_t)B * D * N, 4), *h = calloc((size_t)B * D * N, 4);
    fast->scan_forward(s.y, h_last, &s.a);
    float *u = malloc(B * D * 4), *dt = malloc(B * D * 4), *Bm = malloc(B * N * 4),
          *Cm = malloc(B * N * 4);
    float *y = malloc(B * D * 4);
    mt_scan_args one = {u, dt, s.A_log, Bm, Cm, s.Dskip, s.dt_bias, B, 1, D, N, NULL, NULL};
    for (int t = 0; t < T; t++) {
        for (int b = 0; b < B; b++) {
            memcpy(u + b * D, s.u + ((size_t)b * T + t) * D, D * 4);
            memcpy(dt + b * D, s.dt + ((size_t)b * T + t) * D, D * 4);
            memcpy(Bm + b * N, s.Bm + ((size_t)b * T + t) * N, N * 4);
            memcpy(Cm + b * N, s.Cm + ((size_t)b * T + t) * N, N * 4);
        }
        fast->scan_step(y, h, &one);
        for (int b = 0; b < B; b++)
            assert_memory_equal(y + b * D, s.y + ((size_t)b * T + t) * D, D * 4); /* bitwise */
    }
    assert_memory_equal(h, h_last, (size_t)B * D * N * 4);
    free(h_last), free(h), free(u), free(dt), free(Bm), free(Cm), free(y);
    scan_case_free(&s);
}

static void test_scan_step_matches_forward(void **state)
{
    (void)state;
    step_matches_forward(2, 11, 21, 4, 22);
    step_matches_forward(3, 9, 37, 16, 23);
}

/* rows [t0, t1) of every batch row of x (B, T, W) */
static float *time_slice(const float *x, int B, int T, int W, int t0, int t1)
{
    float *out = malloc((size_t)B * (t1 - t0) * W * 4);
    for (int b = 0; b < B; b++)
        memcpy(out + (size_t)b * (t1 - t0) * W, x + ((size_t)b * T + t0) * W,
               (size_t)(t1 - t0) * W * 4);
    return out;
}

/* A scan split in two at t = cut, the second part starting from the first part's h_last
 * (h0, given as its own h_last), gives the whole scan's outputs and final state: the
 * chunked prefill of docs/decoding.md §1.1. Both backends. */
static void test_scan_continues_from_h0(void **state)
{
    (void)state;
    const mt_backend *bes[2] = {fast, naive};
    for (int i = 0; i < 2; i++) {
        scan_case s;
        scan_case_init(&s, 2, 13, 19, 5, 23);
        int B = s.B, T = s.T, D = s.D, N = s.N, cut = 6;
        float *h_whole = calloc((size_t)B * D * N, 4), *h = calloc((size_t)B * D * N, 4);
        bes[i]->scan_forward(s.y, h_whole, &s.a);
        float *y_parts[2];
        for (int part = 0; part < 2; part++) {
            int t0 = part ? cut : 0, t1 = part ? T : cut, Tp = t1 - t0;
            float *u = time_slice(s.u, B, T, D, t0, t1), *dt = time_slice(s.dt, B, T, D, t0, t1);
            float *Bm = time_slice(s.Bm, B, T, N, t0, t1), *Cm = time_slice(s.Cm, B, T, N, t0, t1);
            y_parts[part] = malloc((size_t)B * Tp * D * 4);
            mt_scan_args a = {u, dt, s.A_log,         Bm,  Cm, s.Dskip, s.dt_bias, B, Tp,
                              D, N,  part ? h : NULL, NULL};
            bes[i]->scan_forward(y_parts[part], h, &a);
            free(u), free(dt), free(Bm), free(Cm);
        }
        for (int b = 0; b < B; b++)
            for (int t = 0; t < T; t++) {
                const float *got = t < cut ? y_parts[0] + ((size_t)b * cut + t) * D
                                           : y_parts[1] + ((size_t)b * (T - cut) + t - cut) * D;
                for (int d = 0; d < D; d++)
                    assert_float_equal(got[d], s.y[((size_t)b * T + t) * D + d], 1e-5);
            }
        for (size_t k = 0; k < (size_t)B * D * N; k++) assert_float_equal(h[k], h_whole[k], 1e-5);
        free(y_parts[0]), free(y_parts[1]), free(h_whole), free(h);
        scan_case_free(&s);
    }
}

/* The scan in double precision, straight from the formulas in mtlab/backend.h. */
typedef struct {
    int B, T, D, N;
    double *u, *dt, *A_log, *Bm, *Cm, *Dskip, *dt_bias, *r;
} scan_ref;

static double scan_ref_loss(void *p)
{
    scan_ref *m = p;
    double loss = 0.0;
    for (int b = 0; b < m->B; b++)
        for (int d = 0; d < m->D; d++) {
            double h[MT_SCAN_MAX_STATE] = {0};
            for (int t = 0; t < m->T; t++) {
                size_t i = ((size_t)b * m->T + t) * m->D + d, r = ((size_t)b * m->T + t) * m->N;
                double v = m->dt[i] + m->dt_bias[d], delta = v <= 20 ? log1p(exp(v)) : v;
                double y = m->Dskip[d] * m->u[i];
                for (int n = 0; n < m->N; n++) {
                    h[n] = exp(delta * -exp(m->A_log[d * m->N + n])) * h[n] +
                           delta * m->Bm[r + n] * m->u[i];
                    y += h[n] * m->Cm[r + n];
                }
                loss += m->r[i] * y;
            }
        }
    return loss;
}

static double *to_double(const float *x, size_t n)
{
    double *y = malloc(n * sizeof *y);
    for (size_t i = 0; i < n; i++) y[i] = x[i];
    return y;
}

static void test_scan_grad(void **state)
{
    (void)state;
    scan_case s;
    scan_case_init(&s, 2, 9, 19, 3, 23);
    s.dt[3] = 25.0f; /* one step on softplus's linear branch */
    scan_grads g;
    scan_grads_init(&g, &s);
    fast->scan_backward(&g.g, s.r, &s.a);
    size_t btd = (size_t)s.B * s.T * s.D, btn = (size_t)s.B * s.T * s.N, dn = (size_t)s.D * s.N;
    scan_ref m = {s.B,
                  s.T,
                  s.D,
                  s.N,
                  to_double(s.u, btd),
                  to_double(s.dt, btd),
                  to_double(s.A_log, dn),
                  to_double(s.Bm, btn),
                  to_double(s.Cm, btn),
                  to_double(s.Dskip, s.D),
                  to_double(s.dt_bias, s.D),
                  to_double(s.r, btd)};
    struct {
        const char *name;
        double *x;
        float *g;
        size_t n;
    } t[7] = {
        {"scan du", m.u, g.g.du, btd},
        {"scan ddt", m.dt, g.g.ddt, btd},
        {"scan dA_log", m.A_log, g.g.dA_log, dn},
        {"scan dBm", m.Bm, g.g.dBm, btn},
        {"scan dCm", m.Cm, g.g.dCm, btn},
        {"scan dD", m.Dskip, g.g.dDskip, s.D},
        {"scan ddt_bias", m.dt_bias, g.g.ddt_bias, s.D},
    };
    for (int i = 0; i < 7; i++)
        assert_true(gc_report("scan", t[i].name,
                              gc_rel_error(t[i].x, t[i].n, t[i].g, scan_ref_loss, &m, 40), 1e-5));
    for (int i = 0; i < 7; i++) free(t[i].x);
    free(m.r);
    free(g.block);
    scan_case_free(&s);
}

/* Every scan gradient accumulates (+=) into what its buffer already holds, as the optimiser's
 * gradient buffers rely on; the optional ones may be NULL. Backward into zeros gives G0; into
 * buffers pre-loaded with P it must give P + G0 (to rounding: the naive loop adds in steps). */
static void scan_backward_accumulates(const mt_backend *be, const char *name)
{
    scan_case s;
    scan_case_init(&s, 2, 11, 19, 5, 29);
    scan_grads zero, pre;
    scan_grads_init(&zero, &s), scan_grads_init(&pre, &s);
    size_t btd = (size_t)s.B * s.T * s.D, btn = (size_t)s.B * s.T * s.N;
    size_t total = 2 * btd + (size_t)s.D * s.N + 2 * btn + 2 * (size_t)s.D;
    mt_rng rng;
    mt_rng_init(&rng, 31, 0);
    float *loaded = gc_random(total, &rng, 1.0f);
    memcpy(pre.block, loaded, total * 4);
    be->scan_backward(&zero.g, s.r, &s.a);
    be->scan_backward(&pre.g, s.r, &s.a);
    double worst = 0;
    for (size_t i = 0; i < total; i++) {
        double want = (double)loaded[i] + zero.block[i];
        double e = fabs(pre.block[i] - want) / (fabs(loaded[i]) + fabs(zero.block[i]) + 1e-30);
        if (e > worst) worst = e;
    }
    printf("scan %s: backward into pre-loaded gradients, max deviation from P + G0 %.1e (bound "
           "1e-6)\n",
           name, worst);
    assert_true(worst < 1e-6);
    /* only du and ddt: the same du and ddt */
    scan_grads two;
    scan_grads_init(&two, &s);
    mt_scan_grads only = {two.g.du, two.g.ddt, NULL, NULL, NULL, NULL, NULL};
    be->scan_backward(&only, s.r, &s.a);
    assert_memory_equal(two.block, zero.block, 2 * btd * 4);
    free(loaded), free(zero.block), free(pre.block), free(two.block);
    scan_case_free(&s);
}

static void test_scan_backward_accumulates(void **state)
{
    (void)state;
    scan_backward_accumulates(fast, "cpu");
    scan_backward_accumulates(naive, "naive");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scan_vs_naive),
        cmocka_unit_test(test_scan_step_matches_forward),
        cmocka_unit_test(test_scan_continues_from_h0),
        cmocka_unit_test(test_scan_grad),
        cmocka_unit_test(test_scan_backward_accumulates),
    };
    return cmocka_run_group_tests_name("scan", tests, setup, NULL);
}
