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

/* Each of ARGMAX_LANES lanes keeps the largest of its columns (c % ARGMAX_LANES) and where it
 * first stands, replaced only on a strictly larger value, so the row's first maximum is the
 * lowest position among the lanes that hold the largest value: one pass of compares and blends,
 * where a maximum pass then a scalar search for it read the row twice. The lanes are four GCC
 * vectors of 8 (an AVX2 register each) whose compare-and-blend chains run side by side in
 * registers (an `omp simd` loop over arrays kept them on the stack). Vectors of 16, one
 * AVX-512 register, were taken element by element in the AVX2 clone (a compare GCC could not
 * lower without AVX-512's masks): on the AVX2 EPYC, 12% of an int8 batch-16 transformer-small
 * decode went to the argmax. */
enum { ARGMAX_VECS = 4, ARGMAX_LANES = 8 * ARGMAX_VECS };
typedef float argmax_floats __attribute__((vector_size(8 * sizeof(float))));
typedef int32_t argmax_ints __attribute__((vector_size(8 * sizeof(int32_t))));

static inline void argmax_blend(argmax_floats *best, argmax_ints *at, const float *x,
                                const argmax_ints *col)
{
    argmax_floats v;
    memcpy(&v, x, sizeof v);
    argmax_ints up = v > *best; /* all ones where v is larger (never for NaN) */
    *best = (argmax_floats)(((argmax_ints)v & up) | ((argmax_ints)*best & ~up));
    *at = (*col & up) | (*at & ~up);
}

MT_CPU_CLONES int cpu_row_argmax(const float *x, int n, float *max)
{
    float best[ARGMAX_LANES];
    int32_t at[ARGMAX_LANES];
    const argmax_ints zero = {0}, step = zero + ARGMAX_LANES;
    argmax_floats b[ARGMAX_VECS];
    argmax_ints a[ARGMAX_VECS], col[ARGMAX_VECS];
    for (int i = 0; i < ARGMAX_VECS; i++) {
        b[i] = (argmax_floats){0} - INFINITY;
        a[i] = zero - 1;
        col[i] = (argmax_ints){0, 1, 2, 3, 4, 5, 6, 7} + 8 * i;
    }
    int c0 = 0;
    for (; c0 + ARGMAX_LANES <= n; c0 += ARGMAX_LANES) {
#pragma GCC unroll 4
        for (int i = 0; i < ARGMAX_VECS; i++) {
            argmax_blend(&b[i], &a[i], x + c0 + 8 * i, &col[i]);
            col[i] += step;
        }
    }
    memcpy(best, b, sizeof b);
    memcpy(at, a, sizeof a);
    for (int c = c0; c < n; c++)
        if (x[c] > best[c - c0]) best[c - c0] = x[c], at[c - c0] = c;
    float mx = -INFINITY;
    int first = -1;
    for (int l = 0; l < ARGMAX_LANES; l++)
        if (at[l] >= 0 && (best[l] > mx || (best[l] == mx && at[l] < first)))
            mx = best[l], first = at[l];
    *max = mx;
    return first;
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
