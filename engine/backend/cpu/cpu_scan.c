/* The Mamba v1 selective scan on the CPU (formulas in mtlab/backend.h, mt_scan_args).
 *
 * Channels go in blocks of SCAN_BLOCK = 16 and a block's states sit transposed, h[n][j]: the
 * block's channels j run along the vector lanes and every loop over them is an `omp simd` loop of
 * fixed length inside a function cloned per vector width (cpu_simd.h). So the decays
 * exp(delta A), most of the scan's cost, are computed a whole vector at a time by an exp
 * inlined into the loop (cpu_expf_poly: a call to libmvec's saved and restored every live
 * register around each vector, which took more time than the exps), and
 * the sums over the states n (y = sum_n h C, and du, ddelta in backward) add vectors lane by
 * lane instead of reducing across lanes. Lanes past the last channel carry delta = u = 0, so
 * their states stay 0 and nothing of them is stored.
 *
 * Forward streams over time with the block's states in a stack tile and never stores them.
 * Backward recomputes the states of one block of one batch row (T x N x 16 floats), as the
 * CUDA kernel recomputes a chunk in SRAM, then runs the reverse recurrence
 *   g_t = dy_t C_t + exp(delta_{t+1} A) g_{t+1}                      (g = dL/dh_t)
 *   dC_t += dy_t h_t ; dB_t += g_t delta_t u_t ; du_t += D dy_t + sum_n g_t delta_t B_t
 *   ddelta_t = sum_n g_t (B_t u_t + A exp(delta_t A) h_{t-1})
 *   dA += g_t delta_t exp(delta_t A) h_{t-1} ; dA_log = dA * A ; dD += dy_t u_t
 *   ddt_t = ddelta_t * softplus'(dt_t + dt_bias) ; ddt_bias += ddt_t
 * Threads own batch rows: dB and dC of a row (summed over all channels) keep one partial per
 * lane until the row's last block, then reduce once; dA_log, dD and ddt_bias (summed over rows)
 * go through per-thread sums added up in thread order, so results do not depend on timing. */
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/cpu_par.h"
#include "backend/cpu/cpu_simd.h"
#include "math/elementwise.h"
#include "mtlab/error.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

enum { SCAN_BLOCK = CPU_LANES };
_Static_assert(MT_SCAN_STEP_A_COUNT(1, 1) == SCAN_BLOCK, "the step's A blocks are the lanes");

/* A block's A with the channels on the lanes: AT[n][j] = -exp(A_log[d0 + j, n]); 0 on lanes
 * past the block's nd channels. */
__attribute__((always_inline)) static inline void block_A(float (*restrict AT)[SCAN_BLOCK],
                                                          const mt_scan_args *a, int d0, int nd)
{
    int N = a->N;
    /* gathered first, so the exp runs a vector at a time: a decoding step pays it per block.
     * A whole block of a state size in eights is the (16, N) rows of A_log transposed in 8 x 8
     * blocks; one float at a time, the gather cost as much as the exps. */
    float alT[MT_SCAN_MAX_STATE][SCAN_BLOCK];
    const float *al = a->A_log + (size_t)d0 * N;
    if (nd == SCAN_BLOCK && N % 8 == 0) {
        for (int j = 0; j < SCAN_BLOCK; j += 8)
            for (int n = 0; n < N; n += 8)
                cpu_transpose8(&alT[n][j], SCAN_BLOCK, al + j * N + n, N);
    } else {
        for (int n = 0; n < N; n++)
            for (int j = 0; j < SCAN_BLOCK; j++) alT[n][j] = j < nd ? al[(size_t)j * N + n] : 0.0f;
    }
    for (int n = 0; n < N; n++) {
#pragma omp simd
        for (int j = 0; j < SCAN_BLOCK; j++) {
            float e = -expf(alT[n][j]);
            AT[n][j] = j < nd ? e : 0.0f;
        }
    }
}

/* A block's parameters: AT as block_A, Dk[j] = Dskip[d0 + j] (0 past nd) */
__attribute__((always_inline)) static inline void block_params(float (*restrict AT)[SCAN_BLOCK],
                                                               float *restrict Dk,
                                                               const mt_scan_args *a, int d0,
                                                               int nd)
{
    block_A(AT, a, d0, nd);
    for (int j = 0; j < SCAN_BLOCK; j++) Dk[j] = j < nd ? a->Dskip[d0 + j] : 0.0f;
}

/* A block's inputs at one time step, zero-padded to the lanes: u[j] = u_in[j],
 * delta[j] = softplus(dt[j] + dt_bias[j]) for j < nd (dt, u_in, dt_bias start at the block). */
__attribute__((always_inline)) static inline void
block_inputs(float *restrict delta, float *restrict u, const float *restrict dt,
             const float *restrict dt_bias, const float *restrict u_in, int nd)
{
    float v[SCAN_BLOCK], bias[SCAN_BLOCK];
    cpu_load_lanes(u, u_in, nd);
    cpu_load_lanes(v, dt, nd);
    cpu_load_lanes(bias, dt_bias, nd);
#pragma omp simd
    for (int j = 0; j < SCAN_BLOCK; j++) {
        float sp = mt_softplusf(v[j] + bias[j]); /* unconditional: the vector log1pf */
        delta[j] = j < nd ? sp : 0.0f;
    }
}

/* One time step of a block: h = exp(delta A) hp + delta B u ; y[j] = D u + sum_n h C, the
 * sum taken over n in order, from the previous states hp into h (two tiles, so backward's
 * recomputation writes each step's states in place instead of copying the last ones first).
 * at (N x 16) receives exp(delta A) (for the backward pass). The forward and the single step
 * both come here, so decoding reproduces the forward bit for bit. Backward's recomputation
 * passes with_y = 0, a constant: inlined, the sum over C it does not read is left out. */
__attribute__((always_inline)) static inline void
scan_tile_update(float (*restrict h)[SCAN_BLOCK], const float (*restrict hp)[SCAN_BLOCK],
                 const float (*restrict AT)[SCAN_BLOCK], const float *restrict delta,
                 const float *restrict u, const float *restrict Dk, const float *restrict Bt,
                 const float *restrict Ct, int N, float (*restrict at)[SCAN_BLOCK],
                 float *restrict y, const int with_y)
{
#pragma omp simd
    for (int j = 0; j < SCAN_BLOCK; j++) y[j] = with_y ? Dk[j] * u[j] : 0.0f;
    for (int n = 0; n < N; n++) {
        float bn = Bt[n], cn = with_y ? Ct[n] : 0.0f;
#pragma omp simd
        for (int j = 0; j < SCAN_BLOCK; j++) {
            float e = cpu_expf_poly(delta[j] * AT[n][j]);
            h[n][j] = e * hp[n][j] + delta[j] * bn * u[j];
            if (with_y) y[j] += h[n][j] * cn;
            at[n][j] = e;
        }
    }
}

/* The forward scan of channels [d0, d0 + nd) of batch row b */
MT_CPU_CLONES static void scan_forward_block(float *y, float *h_last, const mt_scan_args *a, int b,
                                             int d0, int nd)
{
    int T = a->T, D = a->D, N = a->N;
    float AT[MT_SCAN_MAX_STATE][SCAN_BLOCK], tiles[2][MT_SCAN_MAX_STATE][SCAN_BLOCK];
    float at[MT_SCAN_MAX_STATE][SCAN_BLOCK], Dk[SCAN_BLOCK];
    float(*h)[SCAN_BLOCK] = tiles[0];
    block_params(AT, Dk, a, d0, nd);
    memset(h, 0, (size_t)N * sizeof h[0]);
    if (a->h0)
        for (int j = 0; j < nd; j++)
            for (int n = 0; n < N; n++) h[n][j] = a->h0[((size_t)b * D + d0 + j) * N + n];
    for (int t = 0; t < T; t++) {
        size_t row = ((size_t)b * T + t) * D + d0, r = ((size_t)b * T + t) * N;
        float delta[SCAN_BLOCK], u[SCAN_BLOCK], yt[SCAN_BLOCK];
        float(*next)[SCAN_BLOCK] = tiles[(t + 1) & 1];
        block_inputs(delta, u, a->dt + row, a->dt_bias + d0, a->u + row, nd);
        scan_tile_update(next, (const float(*)[SCAN_BLOCK])h, (const float(*)[SCAN_BLOCK])AT, delta,
                         u, Dk, a->Bm + r, a->Cm + r, N, at, yt, 1);
        cpu_store_lanes(y + row, yt, nd);
        h = next;
    }
    if (h_last)
        for (int j = 0; j < nd; j++)
            for (int n = 0; n < N; n++) h_last[((size_t)b * D + d0 + j) * N + n] = h[n][j];
}

void cpu_scan_forward(float *y, float *h_last, const mt_scan_args *a)
{
    int B = a->B, D = a->D, n_blocks = (D + SCAN_BLOCK - 1) / SCAN_BLOCK;
    CPU_FOR(cpu_fork((size_t)B * a->T * D * a->N, 16384), "omp parallel for schedule(static)",
            (int bb = 0; bb < B * n_blocks; bb++), int d0 = bb % n_blocks * SCAN_BLOCK;
            scan_forward_block(y, h_last, a, bb / n_blocks, d0,
                               D - d0 < SCAN_BLOCK ? D - d0 : SCAN_BLOCK));
}

/* One decoding step of channels [d0, d0 + nd) of every batch row (h: the (B, D, N) states).
 * The block's A = -exp(A_log) is taken once for all rows: per row, it cost as many exps as the
 * step itself (a third of a batch-16 Mamba decoding step on an AVX2 EPYC, perf). With
 * a->A_step it is not taken at all: cpu_scan_step_A laid it out once for the whole decode (at
 * batch 1, the exps and the gather were 6% of a step's time, perf). */
MT_CPU_CLONES static void scan_step_block(float *y, float *h, const mt_scan_args *a, int d0, int nd)
{
    int D = a->D, N = a->N;
    float ATbuf[MT_SCAN_MAX_STATE][SCAN_BLOCK], hT[MT_SCAN_MAX_STATE][SCAN_BLOCK];
    float hN[MT_SCAN_MAX_STATE][SCAN_BLOCK], at[MT_SCAN_MAX_STATE][SCAN_BLOCK], Dk[SCAN_BLOCK];
    float delta[SCAN_BLOCK], u[SCAN_BLOCK], yt[SCAN_BLOCK];
    const float(*AT)[SCAN_BLOCK] = (const float(*)[SCAN_BLOCK])ATbuf;
    if (a->A_step) {
        AT = (const float(*)[SCAN_BLOCK])(a->A_step + (size_t)d0 * N);
        cpu_load_lanes(Dk, a->Dskip + d0, nd); /* a float at a time, 8% of the step's scan */
    } else {
        block_params(ATbuf, Dk, a, d0, nd);
    }
    memset(hT, 0, (size_t)N * sizeof hT[0]);
    /* a whole block of a state size in eights moves between h (d, n) and the tile (n, d) in
     * 8 x 8 transposes, the rest element by element */
    int blocked = nd == SCAN_BLOCK && N % 8 == 0;
    for (int b = 0; b < a->B; b++) {
        size_t i0 = (size_t)b * D + d0;
        /* the next row's states: rows lie D * N floats apart, too far for the prefetcher */
        if (b + 1 < a->B)
            for (size_t i = 0; i < (size_t)nd * N; i += 16)
                __builtin_prefetch(h + (i0 + D) * N + i, 1);
        if (blocked) {
            for (int j = 0; j < SCAN_BLOCK; j += 8)
                for (int n = 0; n < N; n += 8)
                    cpu_transpose8(&hT[n][j], SCAN_BLOCK, h + (i0 + j) * N + n, N);
        } else {
            for (int j = 0; j < nd; j++)
                for (int n = 0; n < N; n++) hT[n][j] = h[(i0 + j) * N + n];
        }
        block_inputs(delta, u, a->dt + i0, a->dt_bias + d0, a->u + i0, nd);
        scan_tile_update(hN, (const float(*)[SCAN_BLOCK])hT, AT, delta, u, Dk,
                         a->Bm + (size_t)b * N, a->Cm + (size_t)b * N, N, at, yt, 1);
        cpu_store_lanes(y + i0, yt, nd);
        if (blocked) {
            for (int j = 0; j < SCAN_BLOCK; j += 8)
                for (int n = 0; n < N; n += 8)
                    cpu_transpose8(h + (i0 + j) * N + n, N, &hN[n][j], SCAN_BLOCK);
        } else {
            for (int j = 0; j < nd; j++)
                for (int n = 0; n < N; n++) h[(i0 + j) * N + n] = hN[n][j];
        }
    }
}

void cpu_scan_step(float *y, float *h, const mt_scan_args *a)
{
    int D = a->D, N = a->N, n_blocks = (D + SCAN_BLOCK - 1) / SCAN_BLOCK;
    CPU_FOR(cpu_fork((size_t)a->B * D * N, 16384), "omp parallel for schedule(static)",
            (int blk = 0; blk < n_blocks; blk++), int d0 = blk * SCAN_BLOCK;
            scan_step_block(y, h, a, d0, D - d0 < SCAN_BLOCK ? D - d0 : SCAN_BLOCK));
}

void cpu_scan_step_part(float *y, float *h, const mt_scan_args *a, int c0, int c1)
{
    for (int d0 = c0; d0 < c1; d0 += SCAN_BLOCK)
        scan_step_block(y, h, a, d0, c1 - d0 < SCAN_BLOCK ? c1 - d0 : SCAN_BLOCK);
}

/* Block blk's A of the step, (N, 16) floats at A + blk * N * 16 */
MT_CPU_CLONES static void step_A_block(float *A, const mt_scan_args *a, int d0, int nd)
{
    block_A((float(*)[SCAN_BLOCK])(A + (size_t)d0 * a->N), a, d0, nd);
}

void cpu_scan_step_A(float *A, const mt_scan_args *a)
{
    int D = a->D;
    for (int d0 = 0; d0 < D; d0 += SCAN_BLOCK)
        step_A_block(A, a, d0, D - d0 < SCAN_BLOCK ? D - d0 : SCAN_BLOCK);
}

/* One thread's scratch for the backward pass */
typedef struct {
    float *hs, *ats; /* (T, N, 16) the block's states and decays exp(delta A) */
    float *deltas, *us; /* (T, 16) the block's delta and u, zero-padded */
    float *dBl, *dCl; /* (T, N, 16) one batch row's dB, dC: a partial sum per lane */
    double *dA, *dD, *db; /* (D, N), (D), (D) sums over this thread's rows (dA before * A) */
} scan_scratch;

/* Backward of channels [d0, d0 + nd) of batch row b: du, ddt of the row, its dB, dC lane
 * partials into s->dBl, s->dCl, and its share of dA, dD, ddt_bias into s->dA, s->dD, s->db. */
MT_CPU_CLONES static void scan_backward_block(const mt_scan_grads *g, const float *dy,
                                              const mt_scan_args *a, int b, int d0, int nd,
                                              scan_scratch *s)
{
    static const float zeros[MT_SCAN_MAX_STATE][SCAN_BLOCK]; /* h_{-1} */
    int T = a->T, D = a->D, N = a->N;
    size_t tile = (size_t)N * SCAN_BLOCK;
    float AT[MT_SCAN_MAX_STATE][SCAN_BLOCK], carry[MT_SCAN_MAX_STATE][SCAN_BLOCK];
    float dAT[MT_SCAN_MAX_STATE][SCAN_BLOCK], Dk[SCAN_BLOCK], unused_y[SCAN_BLOCK];
    float dDk[SCAN_BLOCK] = {0}, dbk[SCAN_BLOCK] = {0};
    block_params(AT, Dk, a, d0, nd);

    /* recompute the states, keeping every step's */
    for (int t = 0; t < T; t++) {
        size_t row = ((size_t)b * T + t) * D + d0, r = ((size_t)b * T + t) * N;
        float *delta = s->deltas + (size_t)t * SCAN_BLOCK, *u = s->us + (size_t)t * SCAN_BLOCK;
        float(*ht)[SCAN_BLOCK] = (float(*)[SCAN_BLOCK])(s->hs + (size_t)t * tile);
        const float(*hp)[SCAN_BLOCK] = t > 0 ? (const float(*)[SCAN_BLOCK])(ht - N) : zeros;
        block_inputs(delta, u, a->dt + row, a->dt_bias + d0, a->u + row, nd);
        scan_tile_update(ht, hp, (const float(*)[SCAN_BLOCK])AT, delta, u, Dk, a->Bm + r, a->Cm + r,
                         N, (float(*)[SCAN_BLOCK])(s->ats + (size_t)t * tile), unused_y, 0);
    }

    /* the reverse recurrence */
    memset(carry, 0, tile * sizeof(float));
    memset(dAT, 0, tile * sizeof(float));
    for (int t = T - 1; t >= 0; t--) {
        size_t row = ((size_t)b * T + t) * D + d0, r = ((size_t)b * T + t) * N;
        const float *Bt = a->Bm + r, *Ct = a->Cm + r;
        const float *delta = s->deltas + (size_t)t * SCAN_BLOCK;
        const float *u = s->us + (size_t)t * SCAN_BLOCK;
        const float(*ht)[SCAN_BLOCK] = (const float(*)[SCAN_BLOCK])(s->hs + (size_t)t * tile);
        const float(*hp)[SCAN_BLOCK] = t > 0 ? ht - N : zeros;
        const float(*at)[SCAN_BLOCK] = (const float(*)[SCAN_BLOCK])(s->ats + (size_t)t * tile);
        float(*dBt)[SCAN_BLOCK] = (float(*)[SCAN_BLOCK])(s->dBl + (size_t)t * tile);
        float(*dCt)[SCAN_BLOCK] = (float(*)[SCAN_BLOCK])(s->dCl + (size_t)t * tile);
        float dyt[SCAN_BLOCK], du[SCAN_BLOCK], ddelta[SCAN_BLOCK], v[SCAN_BLOCK], bias[SCAN_BLOCK];
        float du_dB[SCAN_BLOCK], gB[SCAN_BLOCK], gAh[SCAN_BLOCK];
        cpu_load_lanes(dyt, dy + row, nd);
        /* delta and u leave the sum over n: du = D dy + delta sum_n g B,
         * ddelta = u sum_n g B + sum_n A (g exp(delta A) h_{t-1}) */
#pragma omp simd
        for (int j = 0; j < SCAN_BLOCK; j++)
            du_dB[j] = delta[j] * u[j], gB[j] = 0.0f, gAh[j] = 0.0f;
        for (int n = 0; n < N; n++) {
            float bn = Bt[n], cn = Ct[n];
#pragma omp simd
            for (int j = 0; j < SCAN_BLOCK; j++) {
                float gt = dyt[j] * cn + carry[n][j];
                float gh = gt * (at[n][j] * hp[n][j]); /* g exp(delta A) h_{t-1} */
                dCt[n][j] += dyt[j] * ht[n][j];
                dBt[n][j] += gt * du_dB[j];
                gB[j] += gt * bn;
                gAh[j] += AT[n][j] * gh;
                dAT[n][j] += delta[j] * gh;
                carry[n][j] = gt * at[n][j];
            }
        }
        /* ddt = ddelta * softplus'(dt + dt_bias) */
        cpu_load_lanes(v, a->dt + row, nd);
        cpu_load_lanes(bias, a->dt_bias + d0, nd);
#pragma omp simd
        for (int j = 0; j < SCAN_BLOCK; j++) {
            du[j] = Dk[j] * dyt[j] + delta[j] * gB[j];
            ddelta[j] = (u[j] * gB[j] + gAh[j]) * mt_softplus_gradf(v[j] + bias[j]);
            dDk[j] += dyt[j] * u[j];
            dbk[j] += ddelta[j];
        }
        for (int j = 0; j < nd; j++) {
            g->du[row + j] += du[j];
            g->ddt[row + j] += ddelta[j];
        }
    }
    for (int j = 0; j < nd; j++) {
        size_t d = (size_t)d0 + j;
        for (int n = 0; n < N; n++) s->dA[d * N + n] += dAT[n][j];
        s->dD[d] += dDk[j];
        s->db[d] += dbk[j];
    }
}

void cpu_scan_backward(const mt_scan_grads *g, const float *dy, const mt_scan_args *a)
{
    int B = a->B, T = a->T, D = a->D, N = a->N, n_blocks = (D + SCAN_BLOCK - 1) / SCAN_BLOCK;
    size_t tiles = (size_t)T * N * SCAN_BLOCK, dn = (size_t)D * N;
    int n_threads = omp_get_max_threads();
    /* per thread: dA (D, N), dD (D), ddt_bias (D), summed below in thread order */
    double *sums = mt_xcalloc((size_t)n_threads * (dn + 2 * (size_t)D), sizeof *sums);
#pragma omp parallel num_threads(n_threads)
    {
        double *mine = sums + (size_t)omp_get_thread_num() * (dn + 2 * (size_t)D);
        scan_scratch s = {
            .hs = mt_xmalloc(tiles * sizeof(float)),
            .ats = mt_xmalloc(tiles * sizeof(float)),
            .deltas = mt_xmalloc((size_t)T * SCAN_BLOCK * sizeof(float)),
            .us = mt_xmalloc((size_t)T * SCAN_BLOCK * sizeof(float)),
            .dBl = mt_xmalloc(tiles * sizeof(float)),
            .dCl = mt_xmalloc(tiles * sizeof(float)),
            .dA = mine,
            .dD = mine + dn,
            .db = mine + dn + D,
        };
#pragma omp for schedule(static)
        for (int b = 0; b < B; b++) {
            memset(s.dBl, 0, tiles * sizeof(float));
            memset(s.dCl, 0, tiles * sizeof(float));
            for (int blk = 0; blk < n_blocks; blk++) {
                int d0 = blk * SCAN_BLOCK, nd = D - d0 < SCAN_BLOCK ? D - d0 : SCAN_BLOCK;
                scan_backward_block(g, dy, a, b, d0, nd, &s);
            }
            for (size_t tn = 0; tn < (size_t)T * N; tn++) {
                float sb = 0.0f, sc = 0.0f;
                for (int j = 0; j < SCAN_BLOCK; j++) {
                    sb += s.dBl[tn * SCAN_BLOCK + j];
                    sc += s.dCl[tn * SCAN_BLOCK + j];
                }
                if (g->dBm) g->dBm[(size_t)b * T * N + tn] += sb;
                if (g->dCm) g->dCm[(size_t)b * T * N + tn] += sc;
            }
        }
        free(s.hs);
        free(s.ats);
        free(s.deltas);
        free(s.us);
        free(s.dBl);
        free(s.dCl);
    }
    for (int th = 1; th < n_threads; th++)
        for (size_t i = 0; i < dn + 2 * (size_t)D; i++)
            sums[i] += sums[(size_t)th * (dn + 2 * (size_t)D) + i];
    for (size_t i = 0; i < dn; i++)
        if (g->dA_log) g->dA_log[i] += (float)sums[i] * -expf(a->A_log[i]);
    for (int d = 0; d < D; d++) {
        if (g->dDskip) g->dDskip[d] += (float)sums[dn + d];
        if (g->ddt_bias) g->ddt_bias[d] += (float)sums[dn + D + d];
    }
    free(sums);
}
