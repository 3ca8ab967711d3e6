/* `mtlab bench --device cuda[:N]`: the GPU figures of the CUDA issue, measured in one run.
 *   1. the device: copy bandwidth (device to device) and cuBLAS fp32 / bf16 GEMM rates
 *   2. kernels against those: selective scan forward/backward (bytes it must move over the
 *      copy bandwidth), causal attention forward/backward and model-shaped GEMMs (FLOP rate
 *      over the cuBLAS rate of the same precision)
 *   3. Table 4 of the paper: batch 16, 1024 generated tokens, a Mamba of the 1.4B shape and a
 *      Transformer++ of about the same size, random weights: tokens/s and decoding-state bytes
 *   4. training tokens/s of the seven 77M presets (bf16 matrix products), over PyTorch's on the
 *      same shapes when tests/bench/torch_train.py's JSON is given
 * Every timing warms up once, synchronises the device around the timed region and keeps the
 * median of `repeat` runs. */
#include "bench/bench.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mtlab/clock.h"
#include "mtlab/device.h"
#include "mtlab/error.h"
#include "mtlab/files.h"
#include "mtlab/rng.h"

#define MAX_REPEAT 100

/* Median seconds of fn(ctx) over repeat runs after one warm-up, the device synchronised. */
typedef void (*timed_fn)(const mt_backend *be, void *ctx);

/* Seconds per call of fn: the median of repeat samples, each `inner` calls queued back to back
 * and one wait for them all. A lone call's time includes a launch and the host's wait for the
 * device (tens of microseconds), which a call inside a decoding step does not pay; operations
 * that take a few microseconds are timed with inner > 1 (and, where their data would fit in
 * the L2 cache, on rotating copies of it: qlinear_rows). */
static double time_median_n(const mt_backend *be, timed_fn fn, void *ctx, int repeat, int inner)
{
    double t[MAX_REPEAT];
    fn(be, ctx);
    be->sync();
    for (int i = 0; i < repeat; i++) {
        double t0 = mt_now_s();
        for (int j = 0; j < inner; j++) fn(be, ctx);
        be->sync();
        t[i] = (mt_now_s() - t0) / inner;
    }
    return bench_median(t, repeat);
}

static double time_median(const mt_backend *be, timed_fn fn, void *ctx, int repeat)
{
    return time_median_n(be, fn, ctx, repeat, 1);
}

/* Seconds per call of fn with the host's part taken away: `inner` calls recorded once as a graph
 * (graph_begin ...), the median of repeat replays. The device's own time, as a recorded decoding
 * step pays it; 0 on a backend that does not record or when the recording fails. */
static double time_median_graph(const mt_backend *be, timed_fn fn, void *ctx, int repeat, int inner)
{
    if (!be->graph_begin || be->graph_begin() != 0) return 0.0;
    for (int j = 0; j < inner; j++) fn(be, ctx);
    void *g = be->graph_end();
    if (!g) return 0.0;
    double t[MAX_REPEAT];
    be->graph_run(g);
    be->sync();
    for (int i = 0; i < repeat; i++) {
        double t0 = mt_now_s();
        be->graph_run(g);
        be->sync();
        t[i] = (mt_now_s() - t0) / inner;
    }
    be->graph_free(g);
    return bench_median(t, repeat);
}

/* n floats on the device, U(-scale, scale) */
static float *dev_random(const mt_backend *be, size_t n, float scale, uint64_t seed)
{
    float *h = malloc(n * sizeof *h), *d = be->alloc(n * sizeof *d);
    if (!h || !d) {
        free(h);
        be->free(d);
        if (!d) return NULL;
        mt_error("bench: out of host memory for %zu floats", n);
        return NULL;
    }
    mt_rng rng;
    mt_rng_init(&rng, seed, 0);
    for (size_t i = 0; i < n; i++) h[i] = scale * (2.0f * mt_rng_uniform(&rng) - 1.0f);
    be->upload(d, h, n * sizeof *h);
    free(h);
    return d;
}

/* ---------------------------------------------------------------- 1. the device */
typedef struct {
    float *a, *b;
    size_t bytes;
} copy_ctx;

static void run_copy(const mt_backend *be, void *p)
{
    copy_ctx *c = p;
    be->copy(c->b, c->a, c->bytes);
}

typedef struct {
    int m, n, k;
    float *a, *b, *c;
} gemm_ctx;

static void run_gemm(const mt_backend *be, void *p)
{
    gemm_ctx *g = p;
    be->gemm(0, 1, g->m, g->n, g->k, 1.0f, g->a, g->k, g->b, g->k, 0.0f, g->c, g->n);
}

/* FLOP/s of (m, n, k) products, x W^T as the linear layers use them */
static double gemm_rate(const mt_backend *be, int m, int n, int k, int repeat)
{
    gemm_ctx g = {m,
                  n,
                  k,
                  dev_random(be, (size_t)m * k, 1, 1),
                  dev_random(be, (size_t)n * k, 1, 2),
                  be->alloc((size_t)m * n * sizeof(float))};
    double rate = -1;
    if (g.a && g.b && g.c) rate = 2.0 * m * n * (double)k / time_median(be, run_gemm, &g, repeat);
    be->free(g.a), be->free(g.b), be->free(g.c);
    return rate;
}

/* ---------------------------------------------------------------- 2. kernels */
typedef struct {
    mt_scan_args a;
    mt_scan_grads g;
    float *y, *dy;
} scan_ctx;

static void run_scan_fwd(const mt_backend *be, void *p)
{
    scan_ctx *s = p;
    be->scan_forward(s->y, NULL, &s->a);
}

static void run_scan_bwd(const mt_backend *be, void *p)
{
    scan_ctx *s = p;
    be->scan_backward(&s->g, s->dy, &s->a);
}

typedef struct {
    mt_attn_desc d;
    float *q, *k, *v, *out, *att, *dout, *dq, *dk, *dv, *datt;
} attn_ctx;

static void run_attn_fwd(const mt_backend *be, void *p)
{
    attn_ctx *c = p;
    be->attention_forward(c->out, c->att, c->q, c->k, c->v, &c->d);
}

static void run_attn_fwd_noprobs(const mt_backend *be, void *p)
{
    attn_ctx *c = p;
    be->attention_forward(c->out, NULL, c->q, c->k, c->v, &c->d);
}

static void run_attn_bwd(const mt_backend *be, void *p)
{
    attn_ctx *c = p;
    be->attention_backward(c->dq, c->dk, c->dv, c->datt, c->dout, c->q, c->k, c->v, c->att, &c->d);
}

enum { QCOPIES_MAX = 512 }; /* 16 x 4096 (128 KiB) needs 512 copies to outgrow the L2 */
typedef struct {
    mt_qmatrix q[QCOPIES_MAX]; /* copies of one weight matrix, together beyond the L2 cache */
    int copies, next;
    float *x, *out;
    int m;
} qlinear_ctx;

static void run_qlinear(const mt_backend *be, void *p)
{
    qlinear_ctx *c = p;
    const mt_qmatrix *q = &c->q[c->next++ % c->copies];
    be->qlinear_forward(c->out, c->x, q, 0, NULL, (size_t)c->m, q->rows);
}

/* precision bf16's linear layers as a decoding step runs them (1 and 16 rows of x against a bf16
 * weight copy): bytes of weights read over the copy bandwidth, the whole of the step's work.
 * A step reads each layer's weights once and from device memory, so the calls run back to
 * back over copies of the matrix that together outgrow the L2 cache (256 MiB). */
static int qlinear_rows(const mt_backend *be, double copy_bw, int repeat)
{
    /* the 1.4B Transformer++'s, then the Mamba's as its step calls them (in_proj's halves,
     * x_proj as one and as its dt, B and C products, dt_proj, out_proj), the output layer */
    const int shapes[][2] = {{2048, 2048}, {8192, 2048}, {2048, 8192}, {4096, 2048}, {160, 4096},
                             {128, 4096},  {16, 4096},   {4096, 128},  {2048, 4096}, {50280, 2048}};
    const int ms[] = {1, 16};
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
        const int n = shapes[i][0], k = shapes[i][1];
        double bytes = 2.0 * n * (double)k;
        int copies = (int)ceil(256.0 * 1048576.0 / bytes);
        if (copies > QCOPIES_MAX) copies = QCOPIES_MAX;
        float *w = dev_random(be, (size_t)n * k, 1, 18);
        qlinear_ctx c = {.copies = copies,
                         .x = dev_random(be, (size_t)16 * k, 1, 19),
                         .out = be->alloc((size_t)16 * n * sizeof(float))};
        int rc = w && c.x && c.out ? 0 : -1, made = 0;
        while (!rc && made < copies) {
            rc = be->qmatrix_make(&c.q[made], MT_QMATRIX_BF16, w, n, k);
            if (!rc) made++;
        }
        for (size_t j = 0; !rc && j < sizeof ms / sizeof *ms; j++) {
            c.m = ms[j];
            double t = time_median_n(be, run_qlinear, &c, repeat, 2 * copies),
                   tg = time_median_graph(be, run_qlinear, &c, repeat, 2 * copies);
            printf("   bf16 weights %2d x %5d x %5d (decoding)        %8.3f ms  %7.1f GB/s = "
                   "%5.1f%% of copy",
                   c.m, n, k, t * 1e3, bytes / t / 1e9, 100 * bytes / t / copy_bw);
            if (tg > 0) /* the same calls recorded: a decoding step's cost, no launches */
                printf("; in a graph %6.3f ms = %5.1f%%", tg * 1e3, 100 * bytes / tg / copy_bw);
            printf("\n");
        }
        for (int j = 0; j < made; j++) be->qmatrix_free(&c.q[j]);
        be->free(w), be->free(c.x), be->free(c.out);
        if (rc) return -1;
    }
    return 0;
}

static int kernel_rates(const mt_backend *be, double copy_bw, double blas32, double blas16,
                        int repeat)
{
    printf("\n2. kernels against the device (fp32 unless named)\n");
    /* the scan at the Mamba-1.4B training shape: d_inner 4096, N 16 */
    const int B = 4, T = 2048, D = 4096, N = 16;
    size_t nu = (size_t)B * T * D, nb = (size_t)B * T * N;
    scan_ctx s = {.a = {.B = B, .T = T, .D = D, .N = N}};
    s.a.u = dev_random(be, nu, 1, 3), s.a.dt = dev_random(be, nu, 1, 4);
    s.a.A_log = dev_random(be, (size_t)D * N, 1, 5), s.a.Bm = dev_random(be, nb, 1, 6);
    s.a.Cm = dev_random(be, nb, 1, 7), s.a.Dskip = dev_random(be, (size_t)D, 1, 8);
    s.a.dt_bias = dev_random(be, (size_t)D, 1, 9);
    s.y = be->alloc(nu * sizeof(float)), s.dy = dev_random(be, nu, 1, 10);
    s.g.du = be->alloc(nu * sizeof(float)), s.g.ddt = be->alloc(nu * sizeof(float));
    s.g.dA_log = be->alloc((size_t)D * N * sizeof(float)), s.g.dBm = be->alloc(nb * sizeof(float));
    s.g.dCm = be->alloc(nb * sizeof(float)), s.g.dDskip = be->alloc((size_t)D * sizeof(float));
    s.g.ddt_bias = be->alloc((size_t)D * sizeof(float));
    int rc = s.a.u && s.a.dt && s.a.A_log && s.a.Bm && s.a.Cm && s.a.Dskip && s.a.dt_bias && s.y &&
                     s.dy && s.g.du && s.g.ddt && s.g.dA_log && s.g.dBm && s.g.dCm && s.g.dDskip &&
                     s.g.ddt_bias
                 ? 0
                 : -1;
    if (!rc) {
        /* the least a fused scan must move: u, dt, B, C in, y out (forward); backward reads
         * those and dy, writes du, ddt, dB, dC */
        double fwd_bytes = 4.0 * (3.0 * nu + 2.0 * nb), bwd_bytes = 4.0 * (5.0 * nu + 4.0 * nb);
        double flops = 9.0 * nu * N; /* per state: exp, 2 mul-adds for h, 1 for y, discretise */
        /* both kernels of kernels/cuda_scan.cu: MTLAB_CUDA_SCAN is read at every call */
        const char *kinds[] = {"parallel over time", "sequential"},
                   *was = getenv("MTLAB_CUDA_SCAN");
        char *saved = was ? strdup(was) : NULL;
        for (int k = 0; k < 2; k++) {
            if (k) setenv("MTLAB_CUDA_SCAN", "sequential", 1);
            else unsetenv("MTLAB_CUDA_SCAN");
            double tf = time_median(be, run_scan_fwd, &s, repeat),
                   tb = time_median(be, run_scan_bwd, &s, repeat);
            printf("   selective scan B%d T%d D%d N%d forward   %8.3f ms  %7.1f GB/s = %5.1f%% of "
                   "copy  %7.1f GFLOP/s (%s)\n",
                   B, T, D, N, tf * 1e3, fwd_bytes / tf / 1e9, 100 * fwd_bytes / tf / copy_bw,
                   flops / tf / 1e9, kinds[k]);
            printf("   selective scan B%d T%d D%d N%d backward  %8.3f ms  %7.1f GB/s = %5.1f%% of "
                   "copy  %7.1f GFLOP/s (%s)\n",
                   B, T, D, N, tb * 1e3, bwd_bytes / tb / 1e9, 100 * bwd_bytes / tb / copy_bw,
                   2.5 * flops / tb / 1e9, kinds[k]);
        }
        if (saved) setenv("MTLAB_CUDA_SCAN", saved, 1);
        else unsetenv("MTLAB_CUDA_SCAN");
        free(saved);
    }
    be->free((void *)s.a.u), be->free((void *)s.a.dt), be->free((void *)s.a.A_log),
        be->free((void *)s.a.Bm);
    be->free((void *)s.a.Cm), be->free((void *)s.a.Dskip), be->free((void *)s.a.dt_bias),
        be->free(s.y);
    be->free(s.dy), be->free(s.g.du), be->free(s.g.ddt), be->free(s.g.dA_log), be->free(s.g.dBm);
    be->free(s.g.dCm), be->free(s.g.dDskip), be->free(s.g.ddt_bias);
    if (rc) return -1;

    /* causal self-attention at the paper's 1.4B Transformer++ shape: 16 heads of 128 */
    const int AB = 4, H = 16, AT = 1024, Dh = 128, C = H * Dh;
    size_t nq = (size_t)AB * AT * C, na = (size_t)AB * H * AT * AT;
    attn_ctx a = {.d = {.B = AB,
                        .H = H,
                        .Tq = AT,
                        .Tk = AT,
                        .Dh = Dh,
                        .causal = 1,
                        .scale = 1.0f / sqrtf((float)Dh)}};
    a.q = dev_random(be, nq, 1, 11), a.k = dev_random(be, nq, 1, 12),
    a.v = dev_random(be, nq, 1, 13);
    a.dout = dev_random(be, nq, 1, 14), a.out = be->alloc(nq * sizeof(float));
    a.att = be->alloc(na * sizeof(float)), a.datt = be->alloc(na * sizeof(float));
    a.dq = be->alloc(nq * sizeof(float)), a.dk = be->alloc(nq * sizeof(float)),
    a.dv = be->alloc(nq * sizeof(float));
    rc = a.q && a.k && a.v && a.dout && a.out && a.att && a.datt && a.dq && a.dk && a.dv ? 0 : -1;
    if (!rc) {
        double flops = 4.0 * AB * H * (double)AT * AT * Dh / 2; /* causal: half the products */
        double tf = time_median(be, run_attn_fwd_noprobs, &a, repeat);
        double tp = time_median(be, run_attn_fwd, &a, repeat);
        double tb = time_median(be, run_attn_bwd, &a, repeat);
        printf("   attention causal B%d H%d T%d Dh%d forward        %8.3f ms  %7.1f GFLOP/s = "
               "%5.1f%% of cuBLAS fp32\n",
               AB, H, AT, Dh, tf * 1e3, flops / tf / 1e9, 100 * flops / tf / blas32);
        printf("   attention forward writing the probabilities       %8.3f ms  %7.1f GFLOP/s\n",
               tp * 1e3, flops / tp / 1e9);
        printf("   attention backward                                %8.3f ms  %7.1f GFLOP/s = "
               "%5.1f%% of cuBLAS fp32\n",
               tb * 1e3, 2 * flops / tb / 1e9, 100 * 2 * flops / tb / blas32);
    }
    be->free(a.q), be->free(a.k), be->free(a.v), be->free(a.dout), be->free(a.out), be->free(a.att);
    be->free(a.datt), be->free(a.dq), be->free(a.dk), be->free(a.dv);
    if (rc) return -1;

    /* one decoding step's attention at Table 4's shape: 16 single queries per head over a
     * 1024-token cache; it must read every cached key and value once */
    const int DB = 16, DT = 1024;
    size_t nkv = (size_t)DB * DT * C;
    attn_ctx dec = {.d = {.B = DB,
                          .H = H,
                          .Tq = 1,
                          .Tk = DT,
                          .Dh = Dh,
                          .causal = 1,
                          .q_pos0 = DT - 1,
                          .scale = 1.0f / sqrtf((float)Dh)}};
    dec.q = dev_random(be, (size_t)DB * C, 1, 15), dec.k = dev_random(be, nkv, 1, 16);
    dec.v = dev_random(be, nkv, 1, 17), dec.out = be->alloc((size_t)DB * C * sizeof(float));
    rc = dec.q && dec.k && dec.v && dec.out ? 0 : -1;
    if (!rc) {
        double bytes = 2.0 * 4.0 * nkv,
               t = time_median_n(be, run_attn_fwd_noprobs, &dec, repeat, 16);
        printf("   attention decode B%d H%d Tk%d Dh%d (one query)   %8.3f ms  %7.1f GB/s = %5.1f%% "
               "of copy\n",
               DB, H, DT, Dh, t * 1e3, bytes / t / 1e9, 100 * bytes / t / copy_bw);
    }
    be->free(dec.q), be->free(dec.k), be->free(dec.v), be->free(dec.out);
    if (rc) return -1;

    /* the linear layers of a 1.4B model on 8192 tokens */
    const int shapes[][3] = {
        {8192, 2048, 2048}, {8192, 8192, 2048}, {8192, 2048, 8192}, {16, 2048, 2048}};
    for (int prec = 0; prec < 2; prec++) {
        if (!mt_backend_for(be->name, prec)) return -1;
        for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
            double r = gemm_rate(be, shapes[i][0], shapes[i][1], shapes[i][2], repeat);
            if (r < 0) return -1;
            double peak = prec ? blas16 : blas32;
            printf("   gemm %s %5d x %5d x %5d                   %9.1f GFLOP/s = %5.1f%% of the %s "
                   "rate\n",
                   prec ? "bf16" : "fp32", shapes[i][0], shapes[i][1], shapes[i][2], r / 1e9,
                   100 * r / peak, prec ? "bf16" : "fp32");
        }
    }
    if (!mt_backend_for(be->name, 0)) return -1;
    return qlinear_rows(be, copy_bw, repeat);
}

/* ---------------------------------------------------------------- 3. Table 4 decoding */
enum { DEC_BATCH = 16, DEC_PROMPT = 16, DEC_NEW = 1024, DEC_WARM = 32 };

/* Table 4's rows as bench_cuda_decode narrows them (NULL: all) */
static int want_arch(const bench_cuda_decode *o, const char *arch)
{
    return !o || !o->arch || !strcmp(o->arch, arch);
}
static int want_precision(const bench_cuda_decode *o, mt_precision p)
{
    return !o || !o->precision_set || o->precision == p;
}
static int new_tokens(const bench_cuda_decode *o)
{
    return o && o->new_tokens ? o->new_tokens : DEC_NEW;
}

/* One row: model m as it stands (its precision set), Table 4's greedy decode (each step's token
 * chosen on the GPU, as the paper's generate() does) timed repeat times after a short warm-up
 * (module loads, handles, the bf16 copies' first use) */
static int decode_row(mt_model *m, const char *label, const char *how, int repeat, int new_tokens)
{
    const mt_model_config *cfg = mt_model_get_config(m);
    int32_t words[DEC_BATCH][DEC_PROMPT];
    const int32_t *src[DEC_BATCH];
    int len[DEC_BATCH];
    for (int r = 0; r < DEC_BATCH; r++) {
        for (int i = 0; i < DEC_PROMPT; i++)
            words[r][i] = (int32_t)(cfg->unk_id + 1 + (r * 31 + i * 7) % 1000);
        src[r] = words[r], len[r] = DEC_PROMPT;
    }
    double t[MAX_REPEAT], step[MAX_REPEAT];
    bench_decode_time dt;
    int rc = bench_decode_device_pick(m, src, len, DEC_BATCH, DEC_WARM, &dt);
    for (int i = 0; i < repeat && !rc; i++) {
        rc = bench_decode_device_pick(m, src, len, DEC_BATCH, new_tokens, &dt);
        t[i] = dt.prefill_seconds + dt.step_seconds;
        step[i] = dt.step_seconds / (new_tokens - 1);
    }
    if (rc) return rc;
    double s = bench_median(t, repeat);
    size_t st64 = mt_model_decode_state_bytes(m, DEC_BATCH, DEC_PROMPT + 64, 0);
    size_t st1k = mt_model_decode_state_bytes(m, DEC_BATCH, DEC_PROMPT + new_tokens, 0);
    printf("   %-32s %-14s %5.2fB params %7.0f tokens/s %6.2f ms/step  state %7.1f MiB at 64, "
           "%7.1f MiB at %d\n",
           label, how, (double)mt_model_param_count(m) / 1e9, DEC_BATCH * (double)new_tokens / s,
           1e3 * bench_median(step, repeat), st64 / 1048576.0, st1k / 1048576.0, new_tokens);
    return 0;
}

/* One model, its fp32 row, then bf16 copies of its weights (half the bytes a step reads); a
 * model whose steps replay as recorded graphs (the Mamba: docs/cuda.md §4) once more with
 * recording off, so the graphs' gain is measured in the same run; o narrows the rows */
static int decode_rows(const mt_backend *be, const char *label, mt_model_config *cfg, int recorded,
                       int repeat, const bench_cuda_decode *o)
{
    int n = new_tokens(o);
    mt_model *m = mt_model_create(cfg, be, 1);
    if (!m) return -1;
    int rc = 0;
    if (want_precision(o, MT_PRECISION_FP32))
        rc = decode_row(m, label, recorded ? "fp32, graphs" : "fp32", repeat, n);
    if (!rc && want_precision(o, MT_PRECISION_BF16)) {
        rc = mt_model_set_precision(m, MT_PRECISION_BF16);
        if (!rc) rc = decode_row(m, label, recorded ? "bf16, graphs" : "bf16", repeat, n);
        if (!rc && recorded) {
            setenv("MTLAB_CUDA_GRAPHS", "0", 1);
            rc = decode_row(m, label, "bf16, op by op", repeat, n);
            unsetenv("MTLAB_CUDA_GRAPHS");
        }
    }
    mt_model_free(m);
    return rc;
}

static int table4(const mt_backend *be, int repeat, const bench_cuda_decode *o)
{
    printf("\n3. decoding as the paper's Table 4: batch 16, 16-token prompts, %d new tokens, "
           "random weights\n"
           "   (paper, A6000: Pythia-1.4B 405 tokens/s, Mamba-1.4B 806 tokens/s; our target on an "
           "H100: Mamba >= 8000)\n",
           new_tokens(o));
    mt_model_config c;
    if (want_arch(o, "mamba")) {
        if (mt_model_preset(&c, "mamba")) return -1;
        c.vocab_size = 50280, c.d_model = 2048, c.n_layers = 48, c.dt_rank = 128;
        if (decode_rows(be, "mamba (d_model 2048, 48 layers)", &c, 1, repeat, o)) return -1;
    }
    if (!want_arch(o, "transformer++")) return 0;
    if (mt_model_preset(&c, "transformer++")) return -1;
    c.vocab_size = 50280, c.d_model = 2048, c.n_layers = 24, c.n_heads = 16, c.ffn_dim = 5504;
    return decode_rows(be, "transformer++ (2048, 24 layers)", &c, 0, repeat, o);
}

/* ---------------------------------------------------------------- 4. training at 77M */
static double torch_figure(json_t *torch, const char *preset)
{
    json_t *v = torch ? json_object_get(torch, preset) : NULL;
    return json_is_number(v) ? json_number_value(v) : 0.0;
}

static int train_rates(const mt_backend *be, const char *torch_json, int repeat)
{
    json_t *torch = NULL;
    if (torch_json) {
        json_error_t err;
        FILE *f = mt_file_fopen(torch_json, MT_FILE_REGULAR);
        if (!f) return -1;
        torch = json_loadf(f, 0, &err);
        fclose(f);
        if (!torch || !json_is_object(torch)) {
            json_decref(torch);
            return mt_error("%s:%d: %s (expected {\"preset\": tokens_per_s, ...} from "
                            "tests/bench/torch_train.py)",
                            torch_json, err.line, mt_error_oneline(err.text));
        }
    }
    printf("\n4. training tokens/s at the paper's 77M presets, 16 x 256-token batches, bf16 matrix "
           "products%s\n",
           torch ? ", against PyTorch on the same shapes" : "");
    if (!mt_backend_for(be->name, 1)) {
        json_decref(torch);
        return -1;
    }
    const char *const *presets = mt_model_arch_list();
    int rc = 0;
    for (size_t i = 0; presets[i] && !rc; i++) {
        mt_model_config cfg;
        if ((rc = mt_model_preset(&cfg, presets[i]))) break;
        mt_model *m = mt_model_create(&cfg, be, 1);
        if (!m) {
            rc = -1;
            break;
        }
        int encdec = mt_model_is_encdec(m), B = 16, S = encdec ? 128 : 0, T = encdec ? 128 : 256;
        int32_t *ids = mt_xmalloc((size_t)B * T * sizeof *ids),
                *src = mt_xmalloc((size_t)B * (S + 1) * sizeof *src);
        mt_batch b;
        bench_make_batch(&cfg, encdec, B, S, T, &b, ids, src);
        double t[MAX_REPEAT];
        for (int r = 0; r <= repeat && !rc; r++) {
            double t0 = mt_now_s();
            rc = bench_train_step(m, &b, r);
            be->sync();
            if (r) t[r - 1] = mt_now_s() - t0;
        }
        if (!rc) {
            double tps = (double)B * (T + S) / bench_median(t, repeat),
                   peer = torch_figure(torch, presets[i]);
            printf("   %-14s %6.1fM params  %10.0f tokens/s", presets[i],
                   mt_model_param_count(m) / 1e6, tps);
            if (peer > 0) printf("   PyTorch %10.0f tokens/s   ratio %.2fx", peer, tps / peer);
            printf("\n");
        }
        free(ids);
        free(src);
        mt_model_free(m);
    }
    json_decref(torch);
    if (!mt_backend_for(be->name, 0)) return -1;
    return rc;
}

int bench_run_cuda(const char *device, const char *torch_json, int repeat, unsigned sections,
                   const bench_cuda_decode *decode)
{
    if (repeat > MAX_REPEAT) repeat = MAX_REPEAT;
    if (strncmp(device, "cuda", 4))
        return mt_error("bench --device: '%s' is not a CUDA device (cuda or cuda:N)", device);
    const mt_backend *be = mt_backend_for(device, 0);
    if (!be) return -1;
    int index = device[4] == ':' ? atoi(device + 5) : 0;
    char name[256];
    if (mt_cuda_describe(index, name, sizeof name)) return -1;
    printf("mtlab bench on %s (%s), median of %d runs after a warm-up\n", be->name, name, repeat);

    printf("\n1. the device\n");
    copy_ctx cc = {.bytes = (size_t)1 << 30};
    cc.a = dev_random(be, cc.bytes / sizeof(float), 1, 0), cc.b = be->alloc(cc.bytes);
    if (!cc.a || !cc.b) {
        be->free(cc.a), be->free(cc.b);
        return -1;
    }
    double copy_bw = 2.0 * cc.bytes / time_median(be, run_copy, &cc, repeat);
    be->free(cc.a), be->free(cc.b);
    printf("   device-to-device copy          %8.1f GB/s (bytes read + written)\n", copy_bw / 1e9);
    double blas32 = gemm_rate(be, 8192, 8192, 8192, repeat);
    if (blas32 < 0 || !mt_backend_for(device, 1)) return -1;
    double blas16 = gemm_rate(be, 8192, 8192, 8192, repeat);
    if (blas16 < 0 || !mt_backend_for(device, 0)) return -1;
    printf("   cuBLAS 8192^3 fp32             %8.1f TFLOP/s\n", blas32 / 1e12);
    printf("   cuBLAS 8192^3 bf16 in, fp32 out %7.1f TFLOP/s (our bf16 path, operands converted "
           "per call)\n",
           blas16 / 1e12);
    fflush(stdout);
    if ((sections & BENCH_CUDA_KERNELS) && kernel_rates(be, copy_bw, blas32, blas16, repeat))
        return -1;
    fflush(stdout);
    if ((sections & BENCH_DECODE) && table4(be, repeat, decode)) return -1;
    fflush(stdout);
    return sections & BENCH_CUDA_TRAIN ? train_rates(be, torch_json, repeat) : 0;
}
