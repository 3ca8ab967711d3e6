/* LayerNorm and RMSNorm over the last dimension of (BT, C), statistics in double.
 * Backward computes dx row-parallel and the weight/bias gradients column-parallel (each
 * thread owns columns), recomputing the normalised value, so no two threads add to one float. */
#include "backend/cpu/cpu_ops.h"

#include <math.h>

#define PAR_ROWS(BT, C) ((BT) * (size_t)(C) > 16384)

/* mean = sum x / C ; var = sum (x - mean)^2 / C ; rstd = 1 / sqrt(var + eps)
 * out = (x - mean) * rstd * weight + bias */
void cpu_layernorm_forward(float *out, float *mean, float *rstd, const float *x,
                           const float *weight, const float *bias, size_t BT, int C, float eps)
{
#pragma omp parallel for if (PAR_ROWS(BT, C))
    for (size_t r = 0; r < BT; r++) {
        const float *xr = x + r * (size_t)C;
        float *o = out + r * (size_t)C;
        double m = 0.0, v = 0.0;
        for (int c = 0; c < C; c++) m += xr[c];
        m /= C;
        for (int c = 0; c < C; c++) v += (xr[c] - m) * (xr[c] - m);
        v /= C;
        float s = (float)(1.0 / sqrt(v + eps));
        for (int c = 0; c < C; c++) {
            float n = (float)(xr[c] - m) * s;
            o[c] = n * (weight ? weight[c] : 1.0f) + (bias ? bias[c] : 0.0f);
        }
        mean[r] = (float)m;
        rstd[r] = s;
    }
}

/* n = (x - mean) * rstd, dn = dout * weight
 * dx += rstd * (dn - mean_c(dn) - n * mean_c(dn * n)) ; dweight += dout * n ; dbias += dout */
void cpu_layernorm_backward(float *dx, float *dweight, float *dbias, const float *dout,
                            const float *x, const float *weight, const float *mean,
                            const float *rstd, size_t BT, int C)
{
    if (dx) {
#pragma omp parallel for if (PAR_ROWS(BT, C))
        for (size_t r = 0; r < BT; r++) {
            const float *xr = x + r * (size_t)C, *g = dout + r * (size_t)C;
            double sum_dn = 0.0, sum_dn_n = 0.0;
            for (int c = 0; c < C; c++) {
                float n = (xr[c] - mean[r]) * rstd[r];
                float dn = g[c] * (weight ? weight[c] : 1.0f);
                sum_dn += dn;
                sum_dn_n += (double)dn * n;
            }
            float mean_dn = (float)(sum_dn / C), mean_dn_n = (float)(sum_dn_n / C);
            for (int c = 0; c < C; c++) {
                float n = (xr[c] - mean[r]) * rstd[r];
                float dn = g[c] * (weight ? weight[c] : 1.0f);
                dx[r * (size_t)C + c] += rstd[r] * (dn - mean_dn - n * mean_dn_n);
            }
        }
    }
    if (!dweight && !dbias) return;
#pragma omp parallel for if (PAR_ROWS(BT, C))
    for (int c = 0; c < C; c++) {
        double dw = 0.0, db = 0.0;
        for (size_t r = 0; r < BT; r++) {
            float g = dout[r * (size_t)C + c];
            dw += (double)g * ((x[r * (size_t)C + c] - mean[r]) * rstd[r]);
            db += g;
        }
        if (dweight) dweight[c] += (float)dw;
        if (dbias) dbias[c] += (float)db;
    }
}

/* rstd = 1 / sqrt(mean(x^2) + eps) ; out = x * rstd * weight */
void cpu_rmsnorm_forward(float *out, float *rstd, const float *x, const float *weight, size_t BT,
                         int C, float eps)
{
#pragma omp parallel for if (PAR_ROWS(BT, C))
    for (size_t r = 0; r < BT; r++) {
        const float *xr = x + r * (size_t)C;
        float *o = out + r * (size_t)C;
        double ss = 0.0;
        for (int c = 0; c < C; c++) ss += (double)xr[c] * xr[c];
        float s = (float)(1.0 / sqrt(ss / C + eps));
        for (int c = 0; c < C; c++) o[c] = xr[c] * s * (weight ? weight[c] : 1.0f);
        rstd[r] = s;
    }
}

/* dn = dout * weight
 * dx += rstd * dn - x * rstd^3 * mean_c(dn * x) ; dweight += dout * x * rstd */
void cpu_rmsnorm_backward(float *dx, float *dweight, const float *dout, const float *x,
                          const float *weight, const float *rstd, size_t BT, int C)
{
    if (dx) {
#pragma omp parallel for if (PAR_ROWS(BT, C))
        for (size_t r = 0; r < BT; r++) {
            const float *xr = x + r * (size_t)C, *g = dout + r * (size_t)C;
            double sum_dn_x = 0.0;
            for (int c = 0; c < C; c++) sum_dn_x += (double)g[c] * (weight ? weight[c] : 1.0f) * xr[c];
            float s = rstd[r];
            float k = (float)(sum_dn_x / C) * s * s * s;
            for (int c = 0; c < C; c++)
                dx[r * (size_t)C + c] += s * g[c] * (weight ? weight[c] : 1.0f) - xr[c] * k;
        }
    }
    if (!dweight) return;
#pragma omp parallel for if (PAR_ROWS(BT, C))
    for (int c = 0; c < C; c++) {
        double dw = 0.0;
        for (size_t r = 0; r < BT; r++)
            dw += (double)dout[r * (size_t)C + c] * x[r * (size_t)C + c] * rstd[r];
        dweight[c] += (float)dw;
    }
}
