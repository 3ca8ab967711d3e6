/* LayerNorm and RMSNorm over the last dimension of (BT, C), statistics in double.
 * Backward computes dx row-parallel and the weight/bias gradients column-parallel (each
 * thread owns columns), recomputing the normalised value, so no two threads add to one float.
 * The columns go in groups of up to CPU_COL_GROUP (cpu_simd.h), so each row gives a group a
 * span of dout and of x rather than one float per column walk; every column still sums its rows
 * in order in double, as the naive twins in naive_columns.c do, so the two agree bit for bit. */
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/cpu_par.h"
#include "backend/cpu/cpu_simd.h"

#include <math.h>

#define PAR_ROWS(BT, C) cpu_fork((BT) * (size_t)(C), 16384)

/* dweight[c] += sum_r dout[r,c] (x[r,c] - mean[r]) rstd[r] ; dbias[c] += sum_r dout[r,c]
 * for the nc <= CPU_COL_GROUP columns from c0 */
MT_CPU_CLONES static void layernorm_weight_cols(float *dweight, float *dbias, const float *dout,
                                                const float *x, const float *mean,
                                                const float *rstd, size_t BT, int C, int c0, int nc)
{
    double dw[CPU_COL_GROUP], db[CPU_COL_GROUP];
    for (int j = 0; j < nc; j++) dw[j] = db[j] = 0.0;
    for (size_t r = 0; r < BT; r++) {
        const float *g = dout + r * (size_t)C + c0, *xr = x + r * (size_t)C + c0;
        float m = mean[r], s = rstd[r];
#pragma omp simd
        for (int j = 0; j < nc; j++) {
            dw[j] += (double)g[j] * ((xr[j] - m) * s);
            db[j] += g[j];
        }
    }
    for (int j = 0; j < nc; j++) {
        if (dweight) dweight[c0 + j] += (float)dw[j];
        if (dbias) dbias[c0 + j] += (float)db[j];
    }
}

/* dweight[c] += sum_r dout[r,c] x[r,c] rstd[r] for the nc <= CPU_COL_GROUP columns from c0 */
MT_CPU_CLONES static void rmsnorm_weight_cols(float *dweight, const float *dout, const float *x,
                                              const float *rstd, size_t BT, int C, int c0, int nc)
{
    double dw[CPU_COL_GROUP];
    for (int j = 0; j < nc; j++) dw[j] = 0.0;
    for (size_t r = 0; r < BT; r++) {
        const float *g = dout + r * (size_t)C + c0, *xr = x + r * (size_t)C + c0;
        float s = rstd[r];
#pragma omp simd
        for (int j = 0; j < nc; j++) dw[j] += (double)g[j] * xr[j] * s;
    }
    for (int j = 0; j < nc; j++) dweight[c0 + j] += (float)dw[j];
}

/* mean = sum x / C ; var = sum (x - mean)^2 / C ; rstd = 1 / sqrt(var + eps)
 * out = (x - mean) * rstd * weight + bias */
static void layernorm_row(float *o, float *mean, float *rstd, const float *xr, const float *weight,
                          const float *bias, int C, float eps)
{
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
    *mean = (float)m;
    *rstd = s;
}

void cpu_layernorm_forward(float *out, float *mean, float *rstd, const float *x,
                           const float *weight, const float *bias, size_t BT, int C, float eps)
{
    CPU_FOR(PAR_ROWS(BT, C), "omp parallel for", (size_t r = 0; r < BT; r++),
            layernorm_row(out + r * (size_t)C, mean + r, rstd + r, x + r * (size_t)C, weight, bias,
                          C, eps));
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
    int fork = PAR_ROWS(BT, C);
    int w = cpu_col_group(C, fork ? omp_get_max_threads() : 1), n_groups = (C + w - 1) / w;
    CPU_FOR(fork, "omp parallel for schedule(static)", (int grp = 0; grp < n_groups; grp++),
            int c0 = grp * w;
            layernorm_weight_cols(dweight, dbias, dout, x, mean, rstd, BT, C, c0,
                                  C - c0 < w ? C - c0 : w));
}

/* rstd = 1 / sqrt(mean(x^2) + eps) ; out = x * rstd * weight */
static void rmsnorm_row(float *o, float *rstd, const float *xr, const float *weight, int C,
                        float eps)
{
    double ss = 0.0;
    for (int c = 0; c < C; c++) ss += (double)xr[c] * xr[c];
    float s = (float)(1.0 / sqrt(ss / C + eps));
    for (int c = 0; c < C; c++) o[c] = xr[c] * s * (weight ? weight[c] : 1.0f);
    *rstd = s;
}

void cpu_rmsnorm_forward(float *out, float *rstd, const float *x, const float *weight, size_t BT,
                         int C, float eps)
{
    CPU_FOR(PAR_ROWS(BT, C), "omp parallel for", (size_t r = 0; r < BT; r++),
            rmsnorm_row(out + r * (size_t)C, rstd + r, x + r * (size_t)C, weight, C, eps));
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
            for (int c = 0; c < C; c++)
                sum_dn_x += (double)g[c] * (weight ? weight[c] : 1.0f) * xr[c];
            float s = rstd[r];
            float k = (float)(sum_dn_x / C) * s * s * s;
            for (int c = 0; c < C; c++)
                dx[r * (size_t)C + c] += s * g[c] * (weight ? weight[c] : 1.0f) - xr[c] * k;
        }
    }
    if (!dweight) return;
    int fork = PAR_ROWS(BT, C);
    int w = cpu_col_group(C, fork ? omp_get_max_threads() : 1), n_groups = (C + w - 1) / w;
    CPU_FOR(fork, "omp parallel for schedule(static)", (int grp = 0; grp < n_groups; grp++),
            int c0 = grp * w;
            rmsnorm_weight_cols(dweight, dout, x, rstd, BT, C, c0, C - c0 < w ? C - c0 : w));
}
