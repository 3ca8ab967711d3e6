/* Causal depthwise conv1d, channels last (Mamba's conv1d with padding K-1, groups = C,
 * keeping the first T outputs):
 *   out[b,t,c] = bias[c] + sum_{k<K} w[c,k] * x[b, t-K+1+k, c]      (x before t = 0 is 0) */
#include "backend/cpu/cpu_ops.h"

#define PAR(B, T, C) ((size_t)(B) * (T) * (C) > 16384)

void cpu_conv1d_forward(float *out, const float *x, const float *w, const float *bias, int B,
                        int T, int C, int K)
{
#pragma omp parallel for collapse(2) if (PAR(B, T, C))
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            float *o = out + ((size_t)b * T + t) * C;
            for (int c = 0; c < C; c++) o[c] = bias ? bias[c] : 0.0f;
            for (int k = 0; k < K; k++) {
                int s = t - K + 1 + k;
                if (s < 0) continue;
                const float *xs = x + ((size_t)b * T + s) * C;
                for (int c = 0; c < C; c++) o[c] += w[(size_t)c * K + k] * xs[c];
            }
        }
}

/* dx[b,s,c] += sum_k w[c,k] dout[b, s+K-1-k, c]  (terms with s+K-1-k < T)
 * dw[c,k]   += sum_{b,t} dout[b,t,c] x[b, t-K+1+k, c] ; dbias[c] += sum_{b,t} dout[b,t,c] */
void cpu_conv1d_backward(float *dx, float *dw, float *dbias, const float *dout, const float *x,
                         const float *w, int B, int T, int C, int K)
{
    if (dx) {
#pragma omp parallel for collapse(2) if (PAR(B, T, C))
        for (int b = 0; b < B; b++)
            for (int s = 0; s < T; s++) {
                float *dxs = dx + ((size_t)b * T + s) * C;
                for (int k = 0; k < K; k++) {
                    int t = s + K - 1 - k;
                    if (t >= T) continue;
                    const float *g = dout + ((size_t)b * T + t) * C;
                    for (int c = 0; c < C; c++) dxs[c] += w[(size_t)c * K + k] * g[c];
                }
            }
    }
    if (!dw && !dbias) return;
#pragma omp parallel for if (PAR(B, T, C))
    for (int c = 0; c < C; c++) {
        double acc_w[64] = {0}; /* K <= 64: Mamba uses 4 */
        double acc_b = 0.0;
        for (int b = 0; b < B; b++)
            for (int t = 0; t < T; t++) {
                double g = dout[((size_t)b * T + t) * C + c];
                acc_b += g;
                for (int k = 0; k < K; k++) {
                    int s = t - K + 1 + k;
                    if (s >= 0) acc_w[k] += g * x[((size_t)b * T + s) * C + c];
                }
            }
        if (dbias) dbias[c] += (float)acc_b;
        if (dw)
            for (int k = 0; k < K; k++) dw[(size_t)c * K + k] += (float)acc_w[k];
    }
}

/* state[b,c,:] <- (state[b,c,1:], x[b,c]) ; out[b,c] = bias[c] + sum_k w[c,k] state[b,c,k] */
void cpu_conv1d_step(float *out, float *state, const float *x, const float *w, const float *bias,
                     int B, int C, int K)
{
#pragma omp parallel for collapse(2) if ((size_t)B * C * K > 16384)
    for (int b = 0; b < B; b++)
        for (int c = 0; c < C; c++) {
            float *st = state + ((size_t)b * C + c) * K;
            for (int k = 0; k + 1 < K; k++) st[k] = st[k + 1];
            st[K - 1] = x[(size_t)b * C + c];
            float acc = bias ? bias[c] : 0.0f;
            for (int k = 0; k < K; k++) acc += w[(size_t)c * K + k] * st[k];
            out[(size_t)b * C + c] = acc;
        }
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
