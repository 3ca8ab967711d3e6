/* LayerNorm and RMSNorm over the last dimension of (BT, C), statistics in double (each row's
 * sums over eight running sums: naive_norm.c has the in-order twins of the row loops).
 * Backward computes dx row-parallel and the weight/bias gradients column-parallel (each
 * thread owns columns), recomputing the normalised value, so no two threads add to one float.
 * The columns go in groups of up to CPU_COL_GROUP (cpu_simd.h), so each row gives a group a
 * span of dout and of x rather than one float per column walk; every column still sums its rows
 * in order in double, as the naive twins in naive_columns.c do, so the two agree bit for bit. */
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/cpu_par.h"
#include "backend/cpu/cpu_pool.h"
#include "backend/cpu/cpu_simd.h"

#include <math.h>

#define PAR_ROWS(BT, C) cpu_fork((BT) * (size_t)(C), 16384)

/* One norm operation's loop for the pool (cpu_pool_for): rows, or groups of w columns for the
 * weight gradients */
typedef struct {
    float *out, *mean, *rstd, *dweight, *dbias;
    const float *x, *dout, *weight, *bias, *mean_in, *rstd_in;
    size_t rows;
    int C, w;
    float eps;
} norm_job;

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

/* Sums of a row in double over eight running sums (CPU_LANES8_SUM); naive_norm.c keeps the sums
 * in order, and tests hold the two within rounding. */

/* The rows' bodies take has_w as a constant (weight read, or 1), so each caller's copy has no
 * test of weight inside its loops, which kept the loops from vectorising. */
#define NORM_W(c) (has_w ? weight[c] : 1.0f)

/* mean = sum x / C ; var = sum (x - mean)^2 / C ; rstd = 1 / sqrt(var + eps)
 * out = (x - mean) * rstd * weight + bias */
static inline __attribute__((always_inline)) void
layernorm_row_body(float *o, float *mean, float *rstd, const float *xr, const float *weight,
                   int has_w, const float *bias, int C, float eps)
{
    double acc[8] = {0};
    CPU_LANES8_SUM(C, acc[l] += xr[c + l], acc[c % 8] += xr[c]);
    double m = (CPU_LANES8_FOLD(acc)) / C;
    double sq[8] = {0};
    CPU_LANES8_SUM(C, sq[l] += (xr[c + l] - m) * (xr[c + l] - m),
                   sq[c % 8] += (xr[c] - m) * (xr[c] - m));
    double v = (CPU_LANES8_FOLD(sq)) / C;
    float s = (float)(1.0 / sqrt(v + eps));
    if (bias) {
#pragma omp simd
        for (int c = 0; c < C; c++) o[c] = (float)(xr[c] - m) * s * NORM_W(c) + bias[c];
    } else {
#pragma omp simd
        for (int c = 0; c < C; c++) o[c] = (float)(xr[c] - m) * s * NORM_W(c) + 0.0f;
    }
    *mean = (float)m;
    *rstd = s;
}

MT_CPU_CLONES static void layernorm_row(float *o, float *mean, float *rstd, const float *xr,
                                        const float *weight, const float *bias, int C, float eps)
{
    if (weight) layernorm_row_body(o, mean, rstd, xr, weight, 1, bias, C, eps);
    else layernorm_row_body(o, mean, rstd, xr, NULL, 0, bias, C, eps);
}

static void layernorm_rows(void *ctx, size_t r0, size_t r1)
{
    const norm_job *j = ctx;
    size_t C = (size_t)j->C;
    for (size_t r = r0; r < r1; r++)
        layernorm_row(j->out + r * C, j->mean + r, j->rstd + r, j->x + r * C, j->weight, j->bias,
                      j->C, j->eps);
}

void cpu_layernorm_forward(float *out, float *mean, float *rstd, const float *x,
                           const float *weight, const float *bias, size_t BT, int C, float eps)
{
    norm_job j = {.out = out,
                  .mean = mean,
                  .rstd = rstd,
                  .x = x,
                  .weight = weight,
                  .bias = bias,
                  .C = C,
                  .eps = eps};
    cpu_pool_for(PAR_ROWS(BT, C), BT, layernorm_rows, &j);
}

/* one row of layernorm's dx (below) */
static inline __attribute__((always_inline)) void layernorm_dx_body(float *dxr, const float *g,
                                                                    const float *xr,
                                                                    const float *weight, int has_w,
                                                                    float mean, float rstd, int C)
{
    double a_dn[8] = {0}, a_dn_n[8] = {0};
    int c = 0;
    for (; c + 8 <= C; c += 8)
        for (int l = 0; l < 8; l++) {
            float n = (xr[c + l] - mean) * rstd;
            float dn = g[c + l] * NORM_W(c + l);
            a_dn[l] += dn;
            a_dn_n[l] += (double)dn * n;
        }
    for (; c < C; c++) {
        float n = (xr[c] - mean) * rstd;
        float dn = g[c] * NORM_W(c);
        a_dn[c % 8] += dn;
        a_dn_n[c % 8] += (double)dn * n;
    }
    float mean_dn = (float)((CPU_LANES8_FOLD(a_dn)) / C),
          mean_dn_n = (float)((CPU_LANES8_FOLD(a_dn_n)) / C);
#pragma omp simd
    for (c = 0; c < C; c++) {
        float n = (xr[c] - mean) * rstd;
        float dn = g[c] * NORM_W(c);
        dxr[c] += rstd * (dn - mean_dn - n * mean_dn_n);
    }
}

MT_CPU_CLONES static void layernorm_dx_row(float *dxr, const float *g, const float *xr,
                                           const float *weight, float mean, float rstd, int C)
{
    if (weight) layernorm_dx_body(dxr, g, xr, weight, 1, mean, rstd, C);
    else layernorm_dx_body(dxr, g, xr, NULL, 0, mean, rstd, C);
}

static void layernorm_dx_rows(void *ctx, size_t r0, size_t r1)
{
    const norm_job *j = ctx;
    size_t C = (size_t)j->C;
    for (size_t r = r0; r < r1; r++)
        layernorm_dx_row(j->out + r * C, j->dout + r * C, j->x + r * C, j->weight, j->mean_in[r],
                         j->rstd_in[r], j->C);
}

/* units: groups of w columns, each summed down all rows */
static void layernorm_weight_groups(void *ctx, size_t g0, size_t g1)
{
    const norm_job *j = ctx;
    for (size_t g = g0; g < g1; g++) {
        int c0 = (int)g * j->w;
        layernorm_weight_cols(j->dweight, j->dbias, j->dout, j->x, j->mean_in, j->rstd_in, j->rows,
                              j->C, c0, j->C - c0 < j->w ? j->C - c0 : j->w);
    }
}

/* n = (x - mean) * rstd, dn = dout * weight
 * dx += rstd * (dn - mean_c(dn) - n * mean_c(dn * n)) ; dweight += dout * n ; dbias += dout */
void cpu_layernorm_backward(float *dx, float *dweight, float *dbias, const float *dout,
                            const float *x, const float *weight, const float *mean,
                            const float *rstd, size_t BT, int C)
{
    int fork = PAR_ROWS(BT, C);
    norm_job j = {.out = dx,
                  .dweight = dweight,
                  .dbias = dbias,
                  .dout = dout,
                  .x = x,
                  .weight = weight,
                  .mean_in = mean,
                  .rstd_in = rstd,
                  .C = C,
                  .rows = BT};
    if (dx) cpu_pool_for(fork, BT, layernorm_dx_rows, &j);
    if (!dweight && !dbias) return;
    j.w = cpu_col_group(C, fork ? cpu_pool_threads() : 1);
    cpu_pool_for(fork, (size_t)((C + j.w - 1) / j.w), layernorm_weight_groups, &j);
}

/* rstd = 1 / sqrt(mean(x^2) + eps) ; out = x * rstd * weight */
static inline __attribute__((always_inline)) void rmsnorm_row_body(float *o, float *rstd,
                                                                   const float *xr,
                                                                   const float *weight, int has_w,
                                                                   int C, float eps)
{
    double acc[8] = {0};
    CPU_LANES8_SUM(C, acc[l] += (double)xr[c + l] * xr[c + l], acc[c % 8] += (double)xr[c] * xr[c]);
    float s = (float)(1.0 / sqrt((CPU_LANES8_FOLD(acc)) / C + eps));
#pragma omp simd
    for (int c = 0; c < C; c++) o[c] = xr[c] * s * NORM_W(c);
    *rstd = s;
}

MT_CPU_CLONES static void rmsnorm_row(float *o, float *rstd, const float *xr, const float *weight,
                                      int C, float eps)
{
    if (weight) rmsnorm_row_body(o, rstd, xr, weight, 1, C, eps);
    else rmsnorm_row_body(o, rstd, xr, NULL, 0, C, eps);
}

static void rmsnorm_rows(void *ctx, size_t r0, size_t r1)
{
    const norm_job *j = ctx;
    size_t C = (size_t)j->C;
    for (size_t r = r0; r < r1; r++)
        rmsnorm_row(j->out + r * C, j->rstd + r, j->x + r * C, j->weight, j->C, j->eps);
}

void cpu_rmsnorm_forward(float *out, float *rstd, const float *x, const float *weight, size_t BT,
                         int C, float eps)
{
    norm_job j = {.out = out, .rstd = rstd, .x = x, .weight = weight, .C = C, .eps = eps};
    cpu_pool_for(PAR_ROWS(BT, C), BT, rmsnorm_rows, &j);
}

/* one row of rmsnorm's dx (below) */
static inline __attribute__((always_inline)) void rmsnorm_dx_body(float *dxr, const float *g,
                                                                  const float *xr,
                                                                  const float *weight, int has_w,
                                                                  float s, int C)
{
    double acc[8] = {0};
    CPU_LANES8_SUM(C, acc[l] += (double)g[c + l] * NORM_W(c + l) * xr[c + l],
                   acc[c % 8] += (double)g[c] * NORM_W(c) * xr[c]);
    float k = (float)((CPU_LANES8_FOLD(acc)) / C) * s * s * s;
#pragma omp simd
    for (int c = 0; c < C; c++) dxr[c] += s * g[c] * NORM_W(c) - xr[c] * k;
}

MT_CPU_CLONES static void rmsnorm_dx_row(float *dxr, const float *g, const float *xr,
                                         const float *weight, float s, int C)
{
    if (weight) rmsnorm_dx_body(dxr, g, xr, weight, 1, s, C);
    else rmsnorm_dx_body(dxr, g, xr, NULL, 0, s, C);
}

static void rmsnorm_dx_rows(void *ctx, size_t r0, size_t r1)
{
    const norm_job *j = ctx;
    size_t C = (size_t)j->C;
    for (size_t r = r0; r < r1; r++)
        rmsnorm_dx_row(j->out + r * C, j->dout + r * C, j->x + r * C, j->weight, j->rstd_in[r],
                       j->C);
}

static void rmsnorm_weight_groups(void *ctx, size_t g0, size_t g1)
{
    const norm_job *j = ctx;
    for (size_t g = g0; g < g1; g++) {
        int c0 = (int)g * j->w;
        rmsnorm_weight_cols(j->dweight, j->dout, j->x, j->rstd_in, j->rows, j->C, c0,
                            j->C - c0 < j->w ? j->C - c0 : j->w);
    }
}

/* dn = dout * weight
 * dx += rstd * dn - x * rstd^3 * mean_c(dn * x) ; dweight += dout * x * rstd */
void cpu_rmsnorm_backward(float *dx, float *dweight, const float *dout, const float *x,
                          const float *weight, const float *rstd, size_t BT, int C)
{
    int fork = PAR_ROWS(BT, C);
    norm_job j = {.out = dx,
                  .dweight = dweight,
                  .dout = dout,
                  .x = x,
                  .weight = weight,
                  .rstd_in = rstd,
                  .C = C,
                  .rows = BT};
    if (dx) cpu_pool_for(fork, BT, rmsnorm_dx_rows, &j);
    if (!dweight) return;
    j.w = cpu_col_group(C, fork ? cpu_pool_threads() : 1);
    cpu_pool_for(fork, (size_t)((C + j.w - 1) / j.w), rmsnorm_weight_groups, &j);
}
