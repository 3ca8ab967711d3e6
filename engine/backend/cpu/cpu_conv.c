/* Causal depthwise conv1d, channels last (Mamba's conv1d with padding K-1, groups = C,
 * keeping the first T outputs):
 *   out[b,t,c] = bias[c] + sum_{k<K} w[c,k] * x[b, t-K+1+k, c]      (x before t = 0 is 0) */
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/cpu_par.h"
#include "backend/cpu/cpu_simd.h"
#include "mtlab/error.h"

#include <omp.h>
#include <stdlib.h>

#define PAR(B, T, C) cpu_fork((size_t)(B) * (T) * (C), 16384)

/* The weights by tap, wT[k*C + c] = w[c*K + k]: the vector loops over channels then read them
 * contiguously instead of gathering every K-th float (w is (C, K), HF's layout). */
static float *weights_by_tap(const float *w, int C, int K)
{
    float *wT = mt_xmalloc((size_t)C * K * sizeof *wT);
    for (int c = 0; c < C; c++)
        for (int k = 0; k < K; k++) wT[(size_t)k * C + c] = w[(size_t)c * K + k];
    return wT;
}

/* Output row t of one batch row (xb: its (T, C) inputs), in a function cloned per vector width:
 * an OpenMP region's own body is compiled for the baseline x86-64 only (cpu_simd.h). */
MT_CPU_CLONES static void conv_forward_row(float *restrict o, const float *restrict xb,
                                           const float *restrict wT, const float *bias, int t,
                                           int C, int K)
{
    for (int c = 0; c < C; c++) o[c] = bias ? bias[c] : 0.0f;
    for (int k = 0; k < K; k++) {
        int s = t - K + 1 + k;
        if (s < 0) continue;
        const float *xs = xb + (size_t)s * C, *wk = wT + (size_t)k * C;
#pragma omp simd
        for (int c = 0; c < C; c++) o[c] += wk[c] * xs[c];
    }
}

void cpu_conv1d_forward(float *out, const float *x, const float *w, const float *bias, int B, int T,
                        int C, int K)
{
    float *wT = weights_by_tap(w, C, K);
    CPU_FOR(PAR(B, T, C), "omp parallel for", (int bt = 0; bt < B * T; bt++),
            conv_forward_row(out + (size_t)bt * C, x + (size_t)(bt / T) * T * C, wT, bias, bt % T,
                             C, K));
    free(wT);
}

/* dx[b,s,c] += sum_k w[c,k] dout[b, s+K-1-k, c]  (terms with s+K-1-k < T)
 * dw[c,k]   += sum_{b,t} dout[b,t,c] x[b, t-K+1+k, c] ; dbias[c] += sum_{b,t} dout[b,t,c]
 * One pass over the rows s for a span of channels: row s of dx takes the taps t = s+K-1-k of
 * dout, and the same pairs (t, s) are the terms of dw[., k], so dout, x and dx
 * are each read once (dout's rows t > s come again from the cache). Every dx element adds its
 * K terms in k order and every (c, k) of dw sums its terms in (b, t) order in double, as
 * naive_conv1d_backward does, so the two agree bit for bit whatever the thread count. Each
 * thread takes one span of whole vectors of channels (one thread: whole rows, read as they lie
 * in memory; narrower chunks, each streaming all rows, were slower). */
MT_CPU_CLONES static void conv_backward_chunk(float *dx, float *dw, float *dbias, const float *dout,
                                              const float *x, const float *wT, int B, int T, int C,
                                              int K, int c0, int nc)
{
    int sums = dw || dbias;
    double *acc_b = sums ? mt_xcalloc((size_t)(K + 1) * nc, sizeof *acc_b) : NULL;
    double *acc_w = sums ? acc_b + nc : NULL; /* acc_w[k * nc + j] */
    for (int b = 0; b < B; b++)
        for (int s = 0; s < T; s++) {
            size_t row = ((size_t)b * T + s) * C + c0;
            const float *restrict xs = x + row, *restrict gs = dout + row;
            float *restrict dxs = dx ? dx + row : NULL;
            if (sums) {
#pragma omp simd
                for (int j = 0; j < nc; j++) acc_b[j] += gs[j];
            }
            for (int k = 0; k < K; k++) {
                if (s + K - 1 - k >= T) continue;
                const float *restrict gt = gs + (size_t)(K - 1 - k) * C;
                const float *restrict wk = wT + (size_t)k * C + c0;
                if (dxs) {
#pragma omp simd
                    for (int j = 0; j < nc; j++) dxs[j] += wk[j] * gt[j];
                }
                if (sums) {
                    double *restrict aw = acc_w + (size_t)k * nc;
#pragma omp simd
                    for (int j = 0; j < nc; j++) aw[j] += (double)gt[j] * xs[j];
                }
            }
        }
    if (!sums) return;
    for (int j = 0; j < nc; j++) {
        if (dbias) dbias[c0 + j] += (float)acc_b[j];
        if (dw)
            for (int k = 0; k < K; k++)
                dw[(size_t)(c0 + j) * K + k] += (float)acc_w[(size_t)k * nc + j];
    }
    free(acc_b);
}

void cpu_conv1d_backward(float *dx, float *dw, float *dbias, const float *dout, const float *x,
                         const float *w, int B, int T, int C, int K)
{
    if (!dx && !dw && !dbias) return;
    float *wT = weights_by_tap(w, C, K);
    int threads = PAR(B, T, C) ? omp_get_max_threads() : 1;
    int vectors = (C + CPU_LANES - 1) / CPU_LANES;
    int span = (vectors + threads - 1) / threads * CPU_LANES; /* channels per thread */
    int n_chunks = (C + span - 1) / span;
#pragma omp parallel for schedule(static) num_threads(n_chunks) if (n_chunks > 1)
    for (int i = 0; i < n_chunks; i++) {
        int c0 = i * span, nc = C - c0 < span ? C - c0 : span;
        conv_backward_chunk(dx, dw, dbias, dout, x, wT, B, T, C, K, c0, nc);
    }
    free(wT);
}

/* One row of a decoding step. The common width K = 4 runs across channels as one vector loop
 * (the states' stride of 4 floats is a fixed interleave the vectorizer undoes): element by
 * element it was 7% of a batch-16 mamba-small decoding step. Same sums in the same order. */
MT_CPU_CLONES static void conv_step_row(float *restrict out, float *restrict st,
                                        const float *restrict x, const float *restrict w,
                                        const float *bias, int C, int K)
{
    if (K == 4) {
#pragma omp simd
        for (int c = 0; c < C; c++) {
            float s1 = st[4 * c + 1], s2 = st[4 * c + 2], s3 = st[4 * c + 3], xc = x[c];
            st[4 * c] = s1, st[4 * c + 1] = s2, st[4 * c + 2] = s3, st[4 * c + 3] = xc;
            float acc = bias ? bias[c] : 0.0f;
            acc += w[4 * c] * s1;
            acc += w[4 * c + 1] * s2;
            acc += w[4 * c + 2] * s3;
            acc += w[4 * c + 3] * xc;
            out[c] = acc;
        }
        return;
    }
    for (int c = 0; c < C; c++) {
        float *sc = st + (size_t)c * K;
        for (int k = 0; k + 1 < K; k++) sc[k] = sc[k + 1];
        sc[K - 1] = x[c];
        float acc = bias ? bias[c] : 0.0f;
        for (int k = 0; k < K; k++) acc += w[(size_t)c * K + k] * sc[k];
        out[c] = acc;
    }
}

void cpu_conv1d_step_part(float *out, float *state, const float *x, const float *w,
                          const float *bias, int B, int C, int K, int c0, int c1)
{
    for (int b = 0; b < B; b++) {
        size_t i0 = (size_t)b * C + c0;
        conv_step_row(out + i0, state + i0 * K, x + i0, w + (size_t)c0 * K, bias ? bias + c0 : NULL,
                      c1 - c0, K);
    }
}

/* state[b,c,:] <- (state[b,c,1:], x[b,c]) ; out[b,c] = bias[c] + sum_k w[c,k] state[b,c,k] */
void cpu_conv1d_step(float *out, float *state, const float *x, const float *w, const float *bias,
                     int B, int C, int K)
{
    CPU_FOR(cpu_fork((size_t)B * C * K, 16384), "omp parallel for schedule(static)",
            (int b = 0; b < B; b++),
            conv_step_row(out + (size_t)b * C, state + (size_t)b * C * K, x + (size_t)b * C, w,
                          bias, C, K));
}

/* state[b,c,k] = x[b, T-K+k, c], 0 where T-K+k < 0 */
void cpu_conv1d_state_fill(float *state, const float *x, int B, int T, int C, int K)
{
    for (int b = 0; b < B; b++)
        for (int c = 0; c < C; c++)
            for (int k = 0; k < K; k++) {
                int t = T - K + k;
                state[((size_t)b * C + c) * K + k] = t >= 0 ? x[((size_t)b * T + t) * C + c] : 0.0f;
            }
}
