/* The Mamba v1 mixer's decoding step as one pass over its channels (the optional mamba_step;
 * formulas at mt_mamba_step_args in mtlab/backend.h).
 *
 * Run as separate operations, a batch-1 step of mamba-small made two OpenMP regions a layer at
 * two threads (in_proj and out_proj forked, each over its rows), and between them the conv, the
 * SiLU, the scan and the gate ran on one thread while the other spun (a third to 43% of a
 * two-thread decode's samples, perf). Here the step is four jobs on the pool (cpu_pool.h), each
 * shared out in spans of channels (whole vectors of 16): in_proj's rows of x and z with the conv
 * step and its SiLU; x_proj and dt_proj, which sum over every channel (at one batch row x_proj's
 * rows shared out, then each part's dt_proj channels with its scan; at more, dt in one part while
 * another makes Bm and Cm); the scan step and the gate; out_proj's rows. A span a thread has not
 * started when the caller comes free is the caller's, so no phase waits for a thread that the
 * machine has not run.
 *
 * The SiLU and the gate run as their own loops over the span, which is in the L1 cache by then:
 * inside the conv's and the scan's vector loops, their libmvec calls made the compiler save and
 * restore the loops' live registers around every vector, and one layer's step in the cache was
 * no faster than the separate operations (24 us, one thread, on the loaded machine).
 *
 * Every float is the one the separate operations make: the products are the few-row kernel's
 * rows (cpu_gemm_rows_part; a row's sums do not depend on which rows a thread takes) or, on one
 * thread, the same cpu_gemm calls mt_linear_forward makes; x_proj and dt_proj are the same
 * cpu_gemm calls; the conv and scan are the same blocks, the SiLU and gate the same loops over
 * whole vectors (tests/unit/test_layers_mamba.c compares both paths bit for bit). */
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/cpu_par.h"
#include "backend/cpu/cpu_pool.h"
#include "backend/cpu/cpu_simd.h"

/* [*c0, *c1): part t of nt of n channels, in whole vectors */
static void share(int n, int t, int nt, int *c0, int *c1)
{
    int vectors = (n + CPU_LANES - 1) / CPU_LANES;
    int v0 = vectors * t / nt, v1 = vectors * (t + 1) / nt;
    *c0 = v0 * CPU_LANES;
    *c1 = v1 * CPU_LANES < n ? v1 * CPU_LANES : n;
}

/* Columns [n0, n1) of y (M, N) = x (M, K) w (N, K)^T (+ bias), as mt_linear_forward makes the
 * whole product: the few-row kernel's rows, or cpu_gemm (only when [n0, n1) is all of it: the
 * step forks only where the kernel takes its products). */
static void linear_part(float *y, const float *x, const float *w, const float *bias, int M, int K,
                        int N, int n0, int n1)
{
    if (!cpu_gemm_rows_part(M, n0, n1, N, K, 1.0f, x, K, w, K, y, N))
        cpu_gemm(0, 1, M, N, K, 1.0f, x, K, w, K, 0.0f, y, N);
    if (bias)
        for (int m = 0; m < M; m++)
            for (int n = n0; n < n1; n++) y[(size_t)m * N + n] += bias[n];
}

/* in_proj: one product of 2D rows when one row's x and z lie end to end (as mt_mamba_step
 * takes it), else one for x and one for z */
static int in_proj_fused(const mt_mamba_step_args *m) { return m->B == 1 && m->z == m->x + m->D; }

/* The step in four phases, each shared out in parts that write their own channels: part t of
 * nt. The phases follow one another (each reads what the one before wrote); at one thread they
 * run one after the other on the calling thread, as parts 0 of 1. */

/* in_proj, the causal conv and SiLU of channels [c0, c1) */
static void phase_in(const mt_mamba_step_args *m, int t, int nt)
{
    int B = m->B, C = m->C, D = m->D, c0, c1;
    share(D, t, nt, &c0, &c1);
    if (in_proj_fused(m) && nt == 1) {
        linear_part(m->x, m->inp, m->in_proj_w, m->in_proj_b, 1, C, 2 * D, 0, 2 * D);
    } else if (in_proj_fused(m)) {
        linear_part(m->x, m->inp, m->in_proj_w, m->in_proj_b, 1, C, 2 * D, c0, c1);
        linear_part(m->x, m->inp, m->in_proj_w, m->in_proj_b, 1, C, 2 * D, D + c0, D + c1);
    } else {
        linear_part(m->x, m->inp, m->in_proj_w, m->in_proj_b, B, C, D, c0, c1);
        linear_part(m->z, m->inp, m->in_proj_w + (size_t)D * C,
                    m->in_proj_b ? m->in_proj_b + D : NULL, B, C, D, c0, c1);
    }
    cpu_conv1d_step_part(m->xc, m->conv_state, m->x, m->conv_w, m->conv_b, B, D, m->K, c0, c1);
    for (int b = 0; b < B; b++)
        cpu_act_forward(MT_ACT_SILU, m->u + (size_t)b * D + c0, m->xc + (size_t)b * D + c0,
                        (size_t)(c1 - c0));
}

/* x_proj and dt_proj, the calls of mt_mamba_step's x_proj_forward: dt_low and dt in part 0,
 * Bm and Cm in the last (the same part when nt is 1) */
static void phase_x(const mt_mamba_step_args *m, int t, int nt)
{
    int B = m->B, D = m->D, N = m->N, R = m->R;
    const float *xw = m->x_proj_w;
    if (t == 0) {
        cpu_gemm(0, 1, B, R, D, 1.0f, m->u, D, xw, D, 0.0f, m->dt_low, R);
        cpu_gemm(0, 1, B, D, R, 1.0f, m->dt_low, R, m->dt_proj_w, R, 0.0f, m->dt, D);
    }
    if (t == nt - 1) {
        cpu_gemm(0, 1, B, N, D, 1.0f, m->u, D, xw + (size_t)R * D, D, 0.0f, m->Bm, N);
        cpu_gemm(0, 1, B, N, D, 1.0f, m->u, D, xw + (size_t)(R + N) * D, D, 0.0f, m->Cm, N);
    }
}

/* x_proj's outputs shared out by rows, where the few-row kernel takes all of x_proj's and
 * dt_proj's products (one row: every size): part t of nt takes rows [r0, r1) of the R + 2N
 * (dt_low, then Bm, then Cm), each row the float x_proj_forward's products make. dt_proj then
 * runs in phase_scan_dt, each part on its own channels: phase_x gave part 0 the 48 rows to
 * dt_low and all of dt_proj and the last part only Bm and Cm (mamba-130m: 590 against 196 KB of
 * weights a layer), and the other thread waited. */
static void phase_x_rows(const mt_mamba_step_args *m, int t, int nt)
{
    int D = m->D, N = m->N, R = m->R, rows = R + 2 * N;
    int r0 = rows * t / nt, r1 = rows * (t + 1) / nt;
    float *out[3] = {m->dt_low, m->Bm, m->Cm};
    int first[3] = {0, R, R + N}, n[3] = {R, N, N};
    for (int o = 0; o < 3; o++) {
        int a = r0 > first[o] ? r0 - first[o] : 0;
        int b = r1 - first[o] < n[o] ? r1 - first[o] : n[o];
        if (a < b)
            cpu_gemm_rows_part(1, a, b, n[o], D, 1.0f, m->u, D, m->x_proj_w + (size_t)first[o] * D,
                               D, out[o], n[o]);
    }
}

/* 1 when the step takes x_proj by rows (phase_x_rows) and dt_proj by channels: one batch row,
 * and the few-row kernel takes each of the products (an empty span only asks) */
static int x_by_rows(const mt_mamba_step_args *m)
{
    int D = m->D, N = m->N, R = m->R;
    return m->B == 1 && cpu_gemm_rows_part(1, 0, 0, R, D, 1.0f, NULL, D, NULL, D, NULL, R) &&
           cpu_gemm_rows_part(1, 0, 0, N, D, 1.0f, NULL, D, NULL, D, NULL, N) &&
           cpu_gemm_rows_part(1, 0, 0, D, R, 1.0f, NULL, R, NULL, R, NULL, D);
}

static void phase_scan(const mt_mamba_step_args *m, int t, int nt);

/* dt_proj's channels [c0, c1) (x_by_rows), then their scan and gate */
static void phase_scan_dt(const mt_mamba_step_args *m, int t, int nt)
{
    int c0, c1;
    share(m->D, t, nt, &c0, &c1);
    cpu_gemm_rows_part(1, c0, c1, m->D, m->R, 1.0f, m->dt_low, m->R, m->dt_proj_w, m->R, m->dt,
                       m->D);
    phase_scan(m, t, nt);
}

/* the scan and the gate of channels [c0, c1) */
static void phase_scan(const mt_mamba_step_args *m, int t, int nt)
{
    int B = m->B, D = m->D, c0, c1;
    share(D, t, nt, &c0, &c1);
    mt_scan_args s = {
        .u = m->u,
        .dt = m->dt,
        .A_log = m->A_log,
        .Bm = m->Bm,
        .Cm = m->Cm,
        .Dskip = m->Dskip,
        .dt_bias = m->dt_bias,
        .B = B,
        .T = 1,
        .D = D,
        .N = m->N,
        .A_step = m->A_step,
    };
    cpu_scan_step_part(m->y, m->h, &s, c0, c1);
    for (int b = 0; b < B; b++)
        cpu_gate_forward(m->yg + (size_t)b * D + c0, m->y + (size_t)b * D + c0,
                         m->z + (size_t)b * D + c0, (size_t)(c1 - c0));
}

/* out_proj's output channels [o0, o1) */
static void phase_out(const mt_mamba_step_args *m, int t, int nt)
{
    int o0, o1;
    share(m->C, t, nt, &o0, &o1);
    linear_part(m->out, m->yg, m->out_proj_w, m->out_proj_b, m->B, m->D, m->C, o0, o1);
}

typedef struct {
    const mt_mamba_step_args *m;
    void (*phase)(const mt_mamba_step_args *m, int t, int nt);
    int nt;
} phase_job;

static void phase_part(void *ctx, int p)
{
    const phase_job *j = ctx;
    j->phase(j->m, p, j->nt);
}

/* One phase in nt parts on the pool */
static void run_phase(const mt_mamba_step_args *m,
                      void (*phase)(const mt_mamba_step_args *m, int t, int nt), int nt)
{
    phase_job j = {.m = m, .phase = phase, .nt = nt};
    cpu_pool_run(nt, phase_part, &j);
}

int cpu_mamba_step(const mt_mamba_step_args *m)
{
    int B = m->B, C = m->C, D = m->D;
    int in_N = in_proj_fused(m) ? 2 * D : D;
    /* an empty span asks the few-row kernel only whether it takes the product */
    int kernel_takes = cpu_gemm_rows_part(B, 0, 0, in_N, C, 1.0f, NULL, C, NULL, C, NULL, in_N) &&
                       cpu_gemm_rows_part(B, 0, 0, C, D, 1.0f, NULL, D, NULL, D, NULL, C);
    /* whole vectors of channels only: a loop's tail past the last whole vector takes other
     * libmvec variants than its vectors (act_forward's SiLU, gate_forward), so gating a part
     * vector in a block of lanes would not give the operations' floats */
    if (D % CPU_LANES) return 0;
    if (!cpu_fork((size_t)B * 2 * D * C, CPU_MAMBA_STEP_MIN_MACS)) {
        phase_in(m, 0, 1);
        phase_x(m, 0, 1);
        phase_scan(m, 0, 1);
        phase_out(m, 0, 1);
        return 1;
    }
    /* at two threads and more the operations' own forks are the faster where the kernel does
     * not take the products (OpenBLAS shares its sgemv) */
    if (!kernel_takes) return 0;
    /* parts in whole vectors of channels */
    int parts = cpu_pool_parts((size_t)(D + CPU_LANES - 1) / CPU_LANES);
    run_phase(m, phase_in, parts);
    if (x_by_rows(m)) {
        run_phase(m, phase_x_rows, parts);
        run_phase(m, phase_scan_dt, parts);
    } else {
        run_phase(m, phase_x, 2);
        run_phase(m, phase_scan, parts);
    }
    run_phase(m, phase_out, parts);
    return 1;
}
