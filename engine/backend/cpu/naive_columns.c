/* Reference column sums over rows (the norms' weight gradients, bias gradients): one column
 * at a time down every row, in the order the formulas are written (cpu_norm.c and
 * cpu_elementwise.c have the blocked versions tests compare with); the norms' dx from
 * naive_norm.c. */
#include "backend/cpu/cpu_ops.h"

/* dbias[c] += sum_r dout[r, c] */
void naive_bias_backward(float *dbias, const float *dout, size_t rows, int cols)
{
    for (int c = 0; c < cols; c++) {
        double acc = 0.0;
        for (size_t r = 0; r < rows; r++) acc += dout[r * (size_t)cols + c];
        dbias[c] += (float)acc;
    }
}

/* dweight[c] += sum_r dout[r,c] (x[r,c] - mean[r]) rstd[r] ; dbias[c] += sum_r dout[r,c] */
void naive_layernorm_backward(float *dx, float *dweight, float *dbias, const float *dout,
                              const float *x, const float *weight, const float *mean,
                              const float *rstd, size_t BT, int C)
{
    if (dx) naive_layernorm_dx(dx, dout, x, weight, mean, rstd, BT, C);
    if (!dweight && !dbias) return;
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

/* dweight[c] += sum_r dout[r,c] x[r,c] rstd[r] */
void naive_rmsnorm_backward(float *dx, float *dweight, const float *dout, const float *x,
                            const float *weight, const float *rstd, size_t BT, int C)
{
    if (dx) naive_rmsnorm_dx(dx, dout, x, weight, rstd, BT, C);
    if (!dweight) return;
    for (int c = 0; c < C; c++) {
        double dw = 0.0;
        for (size_t r = 0; r < BT; r++)
            dw += (double)dout[r * (size_t)C + c] * x[r * (size_t)C + c] * rstd[r];
        dweight[c] += (float)dw;
    }
}
