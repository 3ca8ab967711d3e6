/* The Mamba v1 selective scan on the CPU (formulas in mtlab/backend.h, mt_scan_args).
 * Forward streams over time per (b, d) with the d_state states in registers and never stores
 * them. Backward recomputes the states of a block of channels (T x 16 x N floats) at a time,
 * as the CUDA kernel recomputes a chunk in SRAM, then runs the reverse recurrence
 *   g_t = dy_t C_t + exp(delta_{t+1} A) g_{t+1}                      (g = dL/dh_t)
 *   dC_t += dy_t h_t ; dB_t += g_t delta_t u_t ; du_t += D dy_t + sum_n g_t delta_t B_t
 *   ddelta_t = sum_n g_t (B_t u_t + A exp(delta_t A) h_{t-1})
 *   dA += g_t delta_t exp(delta_t A) h_{t-1} ; dA_log = dA * A ; dD += dy_t u_t
 *   ddt_t = ddelta_t * softplus'(dt_t + dt_bias) ; ddt_bias += ddt_t
 * Threads own channel blocks (so dA_log, dD, ddt_bias have one writer) and add their share of
 * dBm, dCm (shared by all channels) from private buffers at the end. */
#include "backend/cpu/cpu_ops.h"
#include "math/elementwise.h"
#include "mtlab/error.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

/* glibc's libmvec holds vector versions of expf, but math.h announces them only under
 * -ffast-math; announcing the one the state loops use lets `omp simd` call it on 4 states at a
 * time (the decays exp(delta A) are most of the scan's cost). */
__attribute__((simd("notinbranch"))) float expf(float);

/* deltas[j] = softplus(dt[j] + dt_bias[j]) for the nd channels of a block at one time step */
static inline void block_deltas(float *restrict deltas, const float *restrict dt,
                                const float *restrict dt_bias, int nd)
{
    for (int j = 0; j < nd; j++) deltas[j] = mt_softplusf(dt[j] + dt_bias[j]);
}

/* One time step of one channel: h = exp(delta A) h + delta B u ; returns sum_n h C.
 * at (N) or NULL receives exp(delta A) for the backward pass. */
static inline float scan_update(float *restrict h, const float *restrict A, float delta, float u,
                                const float *restrict Bt, const float *restrict Ct, int N,
                                float *restrict at)
{
    float acc = 0.0f, e[MT_SCAN_MAX_STATE];
#pragma omp simd
    for (int n = 0; n < N; n++) e[n] = expf(delta * A[n]);
#pragma omp simd reduction(+ : acc)
    for (int n = 0; n < N; n++) {
        h[n] = e[n] * h[n] + delta * Bt[n] * u;
        acc += h[n] * Ct[n];
    }
    if (at) memcpy(at, e, (size_t)N * sizeof *at);
    return acc;
}

static void load_A(float *A, const float *A_log, int d, int N)
{
    for (int n = 0; n < N; n++) A[n] = -expf(A_log[(size_t)d * N + n]);
}

/* Channels are processed in blocks of SCAN_BLOCK neighbours so that every time step reads
 * contiguous u, dt and y; the per-channel arithmetic (and so the result) is unchanged. */
enum { SCAN_BLOCK = 16 };

void cpu_scan_forward(float *y, float *h_last, const mt_scan_args *a)
{
    int B = a->B, T = a->T, D = a->D, N = a->N, n_blocks = (D + SCAN_BLOCK - 1) / SCAN_BLOCK;
#pragma omp parallel for collapse(2) schedule(static)
    for (int b = 0; b < B; b++)
        for (int blk = 0; blk < n_blocks; blk++) {
            int d0 = blk * SCAN_BLOCK, nd = D - d0 < SCAN_BLOCK ? D - d0 : SCAN_BLOCK;
            float A[SCAN_BLOCK][MT_SCAN_MAX_STATE], h[SCAN_BLOCK][MT_SCAN_MAX_STATE] = {{0}};
            for (int j = 0; j < nd; j++) load_A(A[j], a->A_log, d0 + j, N);
            for (int t = 0; t < T; t++) {
                size_t row = ((size_t)b * T + t) * D + d0, r = ((size_t)b * T + t) * N;
                float deltas[SCAN_BLOCK];
                block_deltas(deltas, a->dt + row, a->dt_bias + d0, nd);
                for (int j = 0; j < nd; j++) {
                    float u = a->u[row + j];
                    y[row + j] = scan_update(h[j], A[j], deltas[j], u, a->Bm + r, a->Cm + r, N,
                                             NULL) + a->Dskip[d0 + j] * u;
                }
            }
            if (h_last)
                for (int j = 0; j < nd; j++)
                    for (int n = 0; n < N; n++) h_last[((size_t)b * D + d0 + j) * N + n] = h[j][n];
        }
}

void cpu_scan_step(float *y, float *h, const mt_scan_args *a)
{
    int B = a->B, D = a->D, N = a->N;
#pragma omp parallel for collapse(2) schedule(static) if ((size_t)B * D * N > 16384)
    for (int b = 0; b < B; b++)
        for (int d = 0; d < D; d++) {
            float A[MT_SCAN_MAX_STATE];
            load_A(A, a->A_log, d, N);
            size_t i = (size_t)b * D + d;
            float delta = mt_softplusf(a->dt[i] + a->dt_bias[d]);
            float u = a->u[i];
            y[i] = scan_update(h + i * N, A, delta, u, a->Bm + (size_t)b * N, a->Cm + (size_t)b * N,
                               N, NULL) + a->Dskip[d] * u;
        }
}

/* Backward of the channel block [d0, d0 + nd) of batch row b. hs, ats (T, SCAN_BLOCK, N)
 * (the states and their decays exp(delta A)) and deltas (T, SCAN_BLOCK) are scratch; dB, dC
 * (T, N) this thread's share for row b; dA, dD, dbias accumulate the block's per-channel sums
 * over all rows. */
static void scan_backward_block(const mt_scan_grads *g, const float *dy, const mt_scan_args *a,
                                int b, int d0, int nd, float *hs, float *ats, float *deltas,
                                float *dB, float *dC, double (*dA)[MT_SCAN_MAX_STATE], double *dD,
                                double *dbias)
{
    int T = a->T, D = a->D, N = a->N;
    float A[SCAN_BLOCK][MT_SCAN_MAX_STATE], h[SCAN_BLOCK][MT_SCAN_MAX_STATE] = {{0}};
    float carry[SCAN_BLOCK][MT_SCAN_MAX_STATE] = {{0}};
    static const float zeros[MT_SCAN_MAX_STATE];
    for (int j = 0; j < nd; j++) load_A(A[j], a->A_log, d0 + j, N);
    for (int t = 0; t < T; t++) {
        size_t row = ((size_t)b * T + t) * D + d0, r = ((size_t)b * T + t) * N;
        block_deltas(deltas + t * SCAN_BLOCK, a->dt + row, a->dt_bias + d0, nd);
        for (int j = 0; j < nd; j++) {
            float delta = deltas[t * SCAN_BLOCK + j];
            scan_update(h[j], A[j], delta, a->u[row + j], a->Bm + r, a->Cm + r, N,
                        ats + ((size_t)t * SCAN_BLOCK + j) * N);
            memcpy(hs + ((size_t)t * SCAN_BLOCK + j) * N, h[j], (size_t)N * sizeof(float));
        }
    }
    for (int t = T - 1; t >= 0; t--) {
        size_t row = ((size_t)b * T + t) * D + d0, r = ((size_t)b * T + t) * N;
        const float *Bt = a->Bm + r, *Ct = a->Cm + r;
        float ddeltas[SCAN_BLOCK];
        for (int j = 0; j < nd; j++) {
            const float *ht = hs + ((size_t)t * SCAN_BLOCK + j) * N;
            const float *at = ats + ((size_t)t * SCAN_BLOCK + j) * N;
            const float *hp = t > 0 ? ht - (size_t)SCAN_BLOCK * N : zeros; /* h_{t-1} */
            float delta = deltas[t * SCAN_BLOCK + j], u = a->u[row + j], dyt = dy[row + j];
            float du = a->Dskip[d0 + j] * dyt, ddelta = 0.0f;
            float *dCt = dC + (size_t)t * N, *dBt = dB + (size_t)t * N;
#pragma omp simd reduction(+ : du, ddelta)
            for (int n = 0; n < N; n++) {
                float gt = dyt * Ct[n] + carry[j][n];
                float hprev = hp[n];
                dCt[n] += dyt * ht[n];
                dBt[n] += gt * delta * u;
                du += gt * delta * Bt[n];
                ddelta += gt * (Bt[n] * u + A[j][n] * at[n] * hprev);
                dA[j][n] += (double)gt * delta * at[n] * hprev;
                carry[j][n] = gt * at[n];
            }
            dD[j] += (double)dyt * u;
            ddeltas[j] = ddelta;
            g->du[row + j] += du;
        }
        /* ddt = ddelta * softplus'(dt + dt_bias) */
        for (int j = 0; j < nd; j++)
            ddeltas[j] *= mt_softplus_gradf(a->dt[row + j] + a->dt_bias[d0 + j]);
        for (int j = 0; j < nd; j++) {
            dbias[j] += ddeltas[j];
            g->ddt[row + j] += ddeltas[j];
        }
    }
}

void cpu_scan_backward(const mt_scan_grads *g, const float *dy, const mt_scan_args *a)
{
    int B = a->B, T = a->T, D = a->D, N = a->N, n_blocks = (D + SCAN_BLOCK - 1) / SCAN_BLOCK;
    size_t bt_n = (size_t)T * N, all = (size_t)B * bt_n;
    int n_threads = omp_get_max_threads();
    /* per thread: its dBm and dCm shares (B, T, N) each, summed below in thread order so
     * the result does not depend on which thread finishes first */
    float *shares = mt_xcalloc((size_t)n_threads * 2 * all, sizeof *shares);
#pragma omp parallel num_threads(n_threads)
    {
        float *dB = shares + (size_t)omp_get_thread_num() * 2 * all, *dC = dB + all;
        float *hs = mt_xmalloc(bt_n * SCAN_BLOCK * sizeof *hs);
        float *ats = mt_xmalloc(bt_n * SCAN_BLOCK * sizeof *ats);
        float *deltas = mt_xmalloc((size_t)T * SCAN_BLOCK * sizeof *deltas);
        double (*dA)[MT_SCAN_MAX_STATE] = mt_xmalloc(SCAN_BLOCK * sizeof *dA);
#pragma omp for schedule(static)
        for (int blk = 0; blk < n_blocks; blk++) {
            int d0 = blk * SCAN_BLOCK, nd = D - d0 < SCAN_BLOCK ? D - d0 : SCAN_BLOCK;
            double dD[SCAN_BLOCK] = {0}, dbias[SCAN_BLOCK] = {0};
            memset(dA, 0, SCAN_BLOCK * sizeof *dA);
            for (int b = 0; b < B; b++)
                scan_backward_block(g, dy, a, b, d0, nd, hs, ats, deltas, dB + (size_t)b * bt_n,
                                    dC + (size_t)b * bt_n, dA, dD, dbias);
            for (int j = 0; j < nd; j++) {
                size_t d = (size_t)d0 + j;
                if (g->dA_log)
                    for (int n = 0; n < N; n++)
                        g->dA_log[d * N + n] += (float)dA[j][n] * -expf(a->A_log[d * N + n]);
                if (g->dDskip) g->dDskip[d] += (float)dD[j];
                if (g->ddt_bias) g->ddt_bias[d] += (float)dbias[j];
            }
        }
        free(hs);
        free(ats);
        free(deltas);
        free(dA);
    }
#pragma omp parallel for schedule(static) if (all > 16384)
    for (size_t j = 0; j < all; j++) {
        float sb = 0.0f, sc = 0.0f;
        for (int th = 0; th < n_threads; th++) {
            sb += shares[(size_t)th * 2 * all + j];
            sc += shares[(size_t)th * 2 * all + all + j];
        }
        if (g->dBm) g->dBm[j] += sb;
        if (g->dCm) g->dCm[j] += sc;
    }
    free(shares);
}
