/* Reductions and row-wise softmax. Sums accumulate in double so a million-element gradient
 * norm keeps its digits. */
#include "backend/cpu/cpu_ops.h"

#include <math.h>

double cpu_sum(const float *x, size_t n)
{
    double acc = 0.0;
#pragma omp parallel for reduction(+ : acc) if (n > 65536)
    for (size_t i = 0; i < n; i++) acc += x[i];
    return acc;
}

double cpu_sum_squares(const float *x, size_t n)
{
    double acc = 0.0;
#pragma omp parallel for reduction(+ : acc) if (n > 65536)
    for (size_t i = 0; i < n; i++) acc += (double)x[i] * x[i];
    return acc;
}

void cpu_argmax_rows(int32_t *out, const float *x, size_t rows, int cols)
{
#pragma omp parallel for if (rows * (size_t)cols > 65536)
    for (size_t r = 0; r < rows; r++) {
        const float *row = x + r * (size_t)cols;
        int best = 0;
        for (int c = 1; c < cols; c++)
            if (row[c] > row[best]) best = c;
        out[r] = best;
    }
}

/* p_j = exp(x_j - max) / sum_k exp(x_k - max) */
void cpu_softmax(float *out, const float *x, size_t rows, int cols)
{
#pragma omp parallel for if (rows * (size_t)cols > 65536)
    for (size_t r = 0; r < rows; r++) {
        const float *in = x + r * (size_t)cols;
        float *o = out + r * (size_t)cols;
        float mx = -INFINITY;
        for (int c = 0; c < cols; c++) mx = fmaxf(mx, in[c]);
        double sum = 0.0;
        for (int c = 0; c < cols; c++) {
            o[c] = expf(in[c] - mx);
            sum += o[c];
        }
        float inv = (float)(1.0 / sum);
        for (int c = 0; c < cols; c++) o[c] *= inv;
    }
}

/* log p_j = x_j - max - log sum_k exp(x_k - max) */
void cpu_log_softmax(float *out, const float *x, size_t rows, int cols)
{
#pragma omp parallel for if (rows * (size_t)cols > 65536)
    for (size_t r = 0; r < rows; r++) {
        const float *in = x + r * (size_t)cols;
        float *o = out + r * (size_t)cols;
        float mx = -INFINITY;
        for (int c = 0; c < cols; c++) mx = fmaxf(mx, in[c]);
        double sum = 0.0;
        for (int c = 0; c < cols; c++) sum += exp((double)in[c] - mx);
        float shift = mx + (float)log(sum);
        for (int c = 0; c < cols; c++) o[c] = in[c] - shift;
    }
}
