/* Reference LayerNorm and RMSNorm rows: each row's statistics summed in double in column order,
 * as the formulas are written (cpu_norm.c sums a row over eight running sums, so the loops
 * vectorise; tests hold the two within rounding). The weight gradients' references are in
 * naive_columns.c. */
#include "backend/cpu/cpu_ops.h"

#include <math.h>

/* mean = sum x / C ; var = sum (x - mean)^2 / C ; rstd = 1 / sqrt(var + eps)
 * out = (x - mean) * rstd * weight + bias */
void naive_layernorm_forward(float *out, float *mean, float *rstd, const float *x,
                             const float *weight, const float *bias, size_t BT, int C, float eps)
{
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

/* dx += rstd * (dn - mean_c(dn) - n * mean_c(dn * n)), n = (x - mean) * rstd, dn = dout * weight */
void naive_layernorm_dx(float *dx, const float *dout, const float *x, const float *weight,
                        const float *mean, const float *rstd, size_t BT, int C)
{
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

/* rstd = 1 / sqrt(mean(x^2) + eps) ; out = x * rstd * weight */
void naive_rmsnorm_forward(float *out, float *rstd, const float *x, const float *weight, size_t BT,
                           int C, float eps)
{
    for (size_t r = 0; r < BT; r++) {
        const float *xr = x + r * (size_t)C;
        double ss = 0.0;
        for (int c = 0; c < C; c++) ss += (double)xr[c] * xr[c];
        float s = (float)(1.0 / sqrt(ss / C + eps));
        for (int c = 0; c < C; c++)
            out[r * (size_t)C + c] = xr[c] * s * (weight ? weight[c] : 1.0f);
        rstd[r] = s;
    }
}

/* dx += rstd * dn - x * rstd^3 * mean_c(dn * x), dn = dout * weight */
void naive_rmsnorm_dx(float *dx, const float *dout, const float *x, const float *weight,
                      const float *rstd, size_t BT, int C)
{
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
