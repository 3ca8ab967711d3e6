/* Causal depthwise conv1d, channels last (Mamba's conv1d with padding K-1, groups = C,
 * keeping the first T outputs):
 *   out[b,t,c] = bias[c] + sum_{k<K} w[c,k] * x[b, t-K+1+k, c]      (x before t = 0 is 0) */
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/cpu_simd.h"


#define PAR(B, T, C) ((size_t)(B) * (T) * (C) > 16384)

/* Output row t of one batch row (xb: its (T, C) inputs), in a function cloned per vector width:
 * an OpenMP region's own body is compiled for the baseline x86-64 only (cpu_simd.h). */
MT_CPU_CLONES static void conv_forward_row(float *o, const float *xb, const float *w,
                                           const float *bias, int t, int C, int K)
{
    for (int c = 0; c < C; c++) o[c] = bias ? bias[c] : 0.0f;
    for (int k = 0; k < K; k++) {
        int s = t - K + 1 + k;
        if (s < 0) continue;
        const float *xs = xb + (size_t)s * C;
#pragma omp simd
        for (int c = 0; c < C; c++) o[c] += w[(size_t)c * K + k] * xs[c];
    }
}

void cpu_conv1d_forward(float *out, const float *x, const float *w, const float *bias, int B,
                        int T, int C, int K)
{
#pragma omp parallel for collapse(2) if (PAR(B, T, C))
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            conv_forward_row(out + ((size_t)b * T + t) * C, x + (size_t)b * T * C, w, bias, t, C, K);
}

/* dx[b,s,c] += sum_k w[c,k] dout[b, s+K-1-k, c]  (terms with s+K-1-k < T)
 * dw[c,k]   += sum_{b,t} dout[b,t,c] x[b, t-K+1+k, c] ; dbias[c] += sum_{b,t} dout[b,t,c]
 * The weight sums go by blocks of CONV_BLOCK channels, so each row contributes one cache line
 * of dout and of x to a block's lanes instead of one float per channel walk; every (c, k) still
 * sums its terms in (b, t) order in double, as naive_conv1d_backward does, so the two agree
 * bit for bit whatever the thread count. */
enum { CONV_BLOCK = CPU_LANES };

MT_CPU_CLONES static void conv1d_weight_block(float *dw, float *dbias, const float *dout,
                                              const float *x, int B, int T, int C, int K,
                                              int c0, int nc)
{
    double acc_w[64][CONV_BLOCK] = {{0}}, acc_b[CONV_BLOCK] = {0}; /* K <= 64: Mamba uses 4 */
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            float g[CONV_BLOCK];
            cpu_load_lanes(g, dout + ((size_t)b * T + t) * C + c0, nc);
#pragma omp simd
            for (int j = 0; j < CONV_BLOCK; j++) acc_b[j] += g[j];
            for (int k = 0; k < K; k++) {
                int s = t - K + 1 + k;
                if (s < 0) continue;
                float xs[CONV_BLOCK];
                cpu_load_lanes(xs, x + ((size_t)b * T + s) * C + c0, nc);
#pragma omp simd
                for (int j = 0; j < CONV_BLOCK; j++) acc_w[k][j] += (double)g[j] * xs[j];
            }
        }
    for (int j = 0; j < nc; j++) {
        if (dbias) dbias[c0 + j] += (float)acc_b[j];
        if (dw)
            for (int k = 0; k < K; k++) dw[(size_t)(c0 + j) * K + k] += (float)acc_w[k][j];
    }
}

/* dx row s of one batch row (gb: its (T, C) output gradients), cloned as conv_forward_row */
MT_CPU_CLONES static void conv_dx_row(float *dxs, const float *gb, const float *w, int s, int T,
                                      int C, int K)
{
    for (int k = 0; k < K; k++) {
        int t = s + K - 1 - k;
        if (t >= T) continue;
        const float *g = gb + (size_t)t * C;
#pragma omp simd
        for (int c = 0; c < C; c++) dxs[c] += w[(size_t)c * K + k] * g[c];
    }
}

void cpu_conv1d_backward(float *dx, float *dw, float *dbias, const float *dout, const float *x,
                         const float *w, int B, int T, int C, int K)
{
    if (dx) {
#pragma omp parallel for collapse(2) if (PAR(B, T, C))
        for (int b = 0; b < B; b++)
            for (int s = 0; s < T; s++)
                conv_dx_row(dx + ((size_t)b * T + s) * C, dout + (size_t)b * T * C, w, s, T, C, K);
    }
    if (!dw && !dbias) return;
    int n_blocks = (C + CONV_BLOCK - 1) / CONV_BLOCK;
#pragma omp parallel for schedule(static) if (PAR(B, T, C))
    for (int blk = 0; blk < n_blocks; blk++) {
        int c0 = blk * CONV_BLOCK, nc = C - c0 < CONV_BLOCK ? C - c0 : CONV_BLOCK;
        conv1d_weight_block(dw, dbias, dout, x, B, T, C, K, c0, nc);
    }
}

/* One row of a decoding step. The common width K = 4 runs across channels as one vector loop
 * (the states' stride of 4 floats is a fixed interleave the vectorizer undoes): element by
 * element it was 7% of a batch-16 mamba-small decoding step. Same sums in the same order. */
MT_CPU_CLONES static void conv_step_row(float *restrict out, float *restrict st, const float *restrict x,
                                        const float *restrict w, const float *bias, int C, int K)
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

/* state[b,c,:] <- (state[b,c,1:], x[b,c]) ; out[b,c] = bias[c] + sum_k w[c,k] state[b,c,k] */
void cpu_conv1d_step(float *out, float *state, const float *x, const float *w, const float *bias,
                     int B, int C, int K)
{
#pragma omp parallel for schedule(static) if ((size_t)B * C * K > 16384)
    for (int b = 0; b < B; b++)
        conv_step_row(out + (size_t)b * C, state + (size_t)b * C * K, x + (size_t)b * C, w, bias, C, K);
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
