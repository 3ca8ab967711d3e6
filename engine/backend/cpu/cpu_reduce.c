/* Reductions and row-wise softmax. Sums accumulate in double so a million-element gradient
 * norm keeps its digits. */
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/cpu_par.h"
#include "backend/cpu/cpu_simd.h"

#include <math.h>

/* Row sums run on vectors in float over spans this long, and add the spans in double. */
enum { ROW_SPAN = 256 };

MT_CPU_CLONES float cpu_row_max(const float *x, int n)
{
    float mx = -INFINITY;
#pragma omp simd reduction(max : mx)
    for (int c = 0; c < n; c++) mx = x[c] > mx ? x[c] : mx;
    return mx;
}

MT_CPU_CLONES double cpu_row_sum_exp(const float *x, int n, float shift)
{
    double total = 0.0;
    for (int c0 = 0; c0 < n; c0 += ROW_SPAN) {
        int c1 = n - c0 < ROW_SPAN ? n : c0 + ROW_SPAN;
        float span = 0.0f;
#pragma omp simd reduction(+ : span)
        for (int c = c0; c < c1; c++) span += expf(x[c] - shift);
        total += span;
    }
    return total;
}

MT_CPU_CLONES double cpu_row_sum(const float *x, int n)
{
    double total = 0.0;
    for (int c0 = 0; c0 < n; c0 += ROW_SPAN) {
        int c1 = n - c0 < ROW_SPAN ? n : c0 + ROW_SPAN;
        float span = 0.0f;
#pragma omp simd reduction(+ : span)
        for (int c = c0; c < c1; c++) span += x[c];
        total += span;
    }
    return total;
}

/* out_j = exp(x_j - shift) * scale */
MT_CPU_CLONES static void row_exp_scaled(float *out, const float *x, int n, float shift,
                                         float scale)
{
#pragma omp simd
    for (int c = 0; c < n; c++) out[c] = expf(x[c] - shift) * scale;
}

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
    CPU_FOR(cpu_fork(rows * (size_t)cols, 65536), "omp parallel for", (size_t r = 0; r < rows; r++),
            const float *row = x + r * (size_t)cols;
            int best = 0; for (int c = 1; c < cols; c++) if (row[c] > row[best]) best = c;
            out[r] = best);
}

/* p_j = exp(x_j - max) / sum_k exp(x_k - max) */
void cpu_softmax(float *out, const float *x, size_t rows, int cols)
{
    CPU_FOR(cpu_fork(rows * (size_t)cols, 65536), "omp parallel for", (size_t r = 0; r < rows; r++),
            const float *in = x + r * (size_t)cols;
            float mx = cpu_row_max(in, cols);
            float inv = (float)(1.0 / cpu_row_sum_exp(in, cols, mx));
            row_exp_scaled(out + r * (size_t)cols, in, cols, mx, inv));
}

/* log p_j = x_j - max - log sum_k exp(x_k - max) */
void cpu_log_softmax(float *out, const float *x, size_t rows, int cols)
{
    CPU_FOR(cpu_fork(rows * (size_t)cols, 65536), "omp parallel for", (size_t r = 0; r < rows; r++),
            const float *in = x + r * (size_t)cols;
            float *o = out + r * (size_t)cols; float mx = cpu_row_max(in, cols);
            float shift = mx + (float)log(cpu_row_sum_exp(in, cols, mx));
            for (int c = 0; c < cols; c++) o[c] = in[c] - shift);
}
