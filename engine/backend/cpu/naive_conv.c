/* Reference conv1d backward: one channel at a time, walking its column of every row, in the
 * order the formulas are written (cpu_conv.c has the blocked version tests compare with). */
#include "backend/cpu/cpu_ops.h"

/* dx[b,s,c] += sum_k w[c,k] dout[b, s+K-1-k, c]  (terms with s+K-1-k < T)
 * dw[c,k]   += sum_{b,t} dout[b,t,c] x[b, t-K+1+k, c] ; dbias[c] += sum_{b,t} dout[b,t,c] */
void naive_conv1d_backward(float *dx, float *dw, float *dbias, const float *dout, const float *x,
                           const float *w, int B, int T, int C, int K)
{
    if (dx) {
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
