/* Elementwise operations and small row utilities: one OpenMP loop each. The per-element math
 * comes from engine/math/ so the CUDA kernels compute exactly the same thing. */
#include "backend/cpu/cpu_ops.h"
#include "math/activation.h"

#include <string.h>

/* Loops shorter than this stay on one thread: waking the team costs more than the work. */
#define PAR_MIN 16384

void cpu_fill(float *x, size_t n, float value)
{
#pragma omp parallel for if (n > PAR_MIN)
    for (size_t i = 0; i < n; i++) x[i] = value;
}

void cpu_scale(float *x, size_t n, float s)
{
#pragma omp parallel for if (n > PAR_MIN)
    for (size_t i = 0; i < n; i++) x[i] *= s;
}

void cpu_axpy(float *y, const float *x, size_t n, float a)
{
#pragma omp parallel for if (n > PAR_MIN)
    for (size_t i = 0; i < n; i++) y[i] += a * x[i];
}

void cpu_add(float *out, const float *a, const float *b, size_t n)
{
#pragma omp parallel for if (n > PAR_MIN)
    for (size_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}

void cpu_mul(float *out, const float *a, const float *b, size_t n)
{
#pragma omp parallel for if (n > PAR_MIN)
    for (size_t i = 0; i < n; i++) out[i] = a[i] * b[i];
}

void cpu_mul_backward(float *da, float *db, const float *dout, const float *a, const float *b,
                      size_t n)
{
#pragma omp parallel for if (n > PAR_MIN)
    for (size_t i = 0; i < n; i++) {
        if (da) da[i] += dout[i] * b[i];
        if (db) db[i] += dout[i] * a[i];
    }
}

void cpu_act_forward(mt_act act, float *out, const float *x, size_t n)
{
#pragma omp parallel for if (n > PAR_MIN)
    for (size_t i = 0; i < n; i++) out[i] = mt_actf(act, x[i]);
}

void cpu_act_backward(mt_act act, float *dx, const float *dout, const float *x, size_t n)
{
#pragma omp parallel for if (n > PAR_MIN)
    for (size_t i = 0; i < n; i++) dx[i] += dout[i] * mt_act_gradf(act, x[i]);
}

/* out = value * SiLU(gate) */
void cpu_gate_forward(float *out, const float *value, const float *gate, size_t n)
{
#pragma omp parallel for if (n > PAR_MIN)
    for (size_t i = 0; i < n; i++) out[i] = value[i] * mt_siluf(gate[i]);
}

/* dvalue += dout * SiLU(gate); dgate += dout * value * SiLU'(gate) */
void cpu_gate_backward(float *dvalue, float *dgate, const float *dout, const float *value,
                       const float *gate, size_t n)
{
#pragma omp parallel for if (n > PAR_MIN)
    for (size_t i = 0; i < n; i++) {
        if (dvalue) dvalue[i] += dout[i] * mt_siluf(gate[i]);
        if (dgate) dgate[i] += dout[i] * value[i] * mt_silu_gradf(gate[i]);
    }
}

void cpu_mask_rows(float *x, const uint8_t *mask, size_t rows, int cols)
{
    for (size_t r = 0; r < rows; r++)
        if (!mask[r]) memset(x + r * (size_t)cols, 0, (size_t)cols * sizeof(float));
}

void cpu_bias_add(float *out, const float *bias, size_t rows, int cols)
{
#pragma omp parallel for if (rows * (size_t)cols > PAR_MIN)
    for (size_t r = 0; r < rows; r++) {
        float *row = out + r * (size_t)cols;
        for (int c = 0; c < cols; c++) row[c] += bias[c];
    }
}

/* dbias[c] += sum_r dout[r, c]; threads own column ranges so nothing races */
void cpu_bias_backward(float *dbias, const float *dout, size_t rows, int cols)
{
#pragma omp parallel for if (rows * (size_t)cols > PAR_MIN)
    for (int c = 0; c < cols; c++) {
        double acc = 0.0;
        for (size_t r = 0; r < rows; r++) acc += dout[r * (size_t)cols + c];
        dbias[c] += (float)acc;
    }
}

void cpu_copy2d(float *dst, int dst_ld, const float *src, int src_ld, size_t rows, int cols)
{
    for (size_t r = 0; r < rows; r++)
        memmove(dst + r * (size_t)dst_ld, src + r * (size_t)src_ld, (size_t)cols * sizeof(float));
}

void cpu_index_select(float *out, const float *src, const int32_t *idx, int n_idx,
                      size_t row_elems)
{
    for (int i = 0; i < n_idx; i++)
        memcpy(out + (size_t)i * row_elems, src + (size_t)idx[i] * row_elems,
               row_elems * sizeof(float));
}
