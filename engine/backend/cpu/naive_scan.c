/* Reference selective scan: the textbook O(T*D*N) recurrence that materialises the expanded
 * (B, T, D, N) tensors Abar = exp(delta A), Bbar u = delta B u and every state h, as the
 * Mamba paper's "naive implementation" does, then walks them in loops. Formulas in
 * mtlab/backend.h (forward) and cpu_scan.c (backward). */
#include "backend/cpu/cpu_ops.h"
#include "math/elementwise.h"
#include "mtlab/error.h"

#include <math.h>
#include <stdlib.h>

/* index of (b, t, d, n) in an expanded tensor */
#define X4(b, t, d, n) ((((size_t)(b)*a->T + (t)) * a->D + (d)) * a->N + (n))
#define BTD(b, t, d) (((size_t)(b)*a->T + (t)) * a->D + (d))
#define BTN(b, t, n) (((size_t)(b)*a->T + (t)) * a->N + (n))

/* delta (B, T, D), Abar and Bbar u (B, T, D, N), h (B, T, D, N) */
static void naive_expand(const mt_scan_args *a, float *delta, float *Abar, float *Bu, float *h)
{
    for (int b = 0; b < a->B; b++)
        for (int t = 0; t < a->T; t++)
            for (int d = 0; d < a->D; d++) {
                delta[BTD(b, t, d)] = mt_softplusf(a->dt[BTD(b, t, d)] + a->dt_bias[d]);
                for (int n = 0; n < a->N; n++) {
                    float A = -expf(a->A_log[(size_t)d * a->N + n]);
                    Abar[X4(b, t, d, n)] = expf(delta[BTD(b, t, d)] * A);
                    Bu[X4(b, t, d, n)] =
                        delta[BTD(b, t, d)] * a->Bm[BTN(b, t, n)] * a->u[BTD(b, t, d)];
                }
            }
    for (int b = 0; b < a->B; b++)
        for (int t = 0; t < a->T; t++)
            for (int d = 0; d < a->D; d++)
                for (int n = 0; n < a->N; n++) {
                    float prev = t > 0   ? h[X4(b, t - 1, d, n)]
                                 : a->h0 ? a->h0[((size_t)b * a->D + d) * a->N + n]
                                         : 0.0f;
                    h[X4(b, t, d, n)] = Abar[X4(b, t, d, n)] * prev + Bu[X4(b, t, d, n)];
                }
}

void naive_scan_forward(float *y, float *h_last, const mt_scan_args *a)
{
    size_t n_btd = (size_t)a->B * a->T * a->D, n_all = n_btd * a->N;
    float *delta = mt_xmalloc(n_btd * sizeof *delta);
    float *Abar = mt_xmalloc(n_all * sizeof *Abar), *Bu = mt_xmalloc(n_all * sizeof *Bu);
    float *h = mt_xmalloc(n_all * sizeof *h);
    naive_expand(a, delta, Abar, Bu, h);
    for (int b = 0; b < a->B; b++)
        for (int t = 0; t < a->T; t++)
            for (int d = 0; d < a->D; d++) {
                double acc = 0.0;
                for (int n = 0; n < a->N; n++)
                    acc += (double)h[X4(b, t, d, n)] * a->Cm[BTN(b, t, n)];
                y[BTD(b, t, d)] = (float)(acc + (double)a->Dskip[d] * a->u[BTD(b, t, d)]);
            }
    if (h_last)
        for (int b = 0; b < a->B; b++)
            for (int d = 0; d < a->D; d++)
                for (int n = 0; n < a->N; n++)
                    h_last[((size_t)b * a->D + d) * a->N + n] = h[X4(b, a->T - 1, d, n)];
    free(delta), free(Abar), free(Bu), free(h);
}

void naive_scan_backward(const mt_scan_grads *g, const float *dy, const mt_scan_args *a)
{
    size_t n_btd = (size_t)a->B * a->T * a->D, n_all = n_btd * a->N;
    float *delta = mt_xmalloc(n_btd * sizeof *delta);
    float *Abar = mt_xmalloc(n_all * sizeof *Abar), *Bu = mt_xmalloc(n_all * sizeof *Bu);
    float *h = mt_xmalloc(n_all * sizeof *h);
    double *dh = mt_xcalloc(n_all, sizeof *dh); /* dL/dh_t, complete after the reverse pass */
    naive_expand(a, delta, Abar, Bu, h);
    for (int b = 0; b < a->B; b++)
        for (int t = a->T - 1; t >= 0; t--)
            for (int d = 0; d < a->D; d++)
                for (int n = 0; n < a->N; n++) {
                    double next =
                        t + 1 < a->T ? Abar[X4(b, t + 1, d, n)] * dh[X4(b, t + 1, d, n)] : 0.0;
                    dh[X4(b, t, d, n)] = (double)dy[BTD(b, t, d)] * a->Cm[BTN(b, t, n)] + next;
                }
    for (int b = 0; b < a->B; b++)
        for (int t = 0; t < a->T; t++)
            for (int d = 0; d < a->D; d++) {
                size_t i = BTD(b, t, d);
                double ddelta = 0.0, du = (double)a->Dskip[d] * dy[i];
                for (int n = 0; n < a->N; n++) {
                    float A = -expf(a->A_log[(size_t)d * a->N + n]);
                    double gt = dh[X4(b, t, d, n)];
                    double hprev = t > 0 ? h[X4(b, t - 1, d, n)] : 0.0;
                    double Bt = a->Bm[BTN(b, t, n)];
                    /* h_t = Abar h_{t-1} + delta B u, Abar = exp(delta A), y = sum h C + D u */
                    if (g->dCm) g->dCm[BTN(b, t, n)] += (float)(dy[i] * (double)h[X4(b, t, d, n)]);
                    if (g->dBm) g->dBm[BTN(b, t, n)] += (float)(gt * delta[i] * a->u[i]);
                    du += gt * delta[i] * Bt;
                    ddelta += gt * (Bt * a->u[i] + A * Abar[X4(b, t, d, n)] * hprev);
                    if (g->dA_log)
                        g->dA_log[(size_t)d * a->N + n] +=
                            (float)(gt * delta[i] * Abar[X4(b, t, d, n)] * hprev * A);
                }
                double ddt = ddelta * mt_softplus_gradf(a->dt[i] + a->dt_bias[d]);
                g->du[i] += (float)du;
                g->ddt[i] += (float)ddt;
                if (g->dDskip) g->dDskip[d] += (float)((double)dy[i] * a->u[i]);
                if (g->ddt_bias) g->ddt_bias[d] += (float)ddt;
            }
    free(delta), free(Abar), free(Bu), free(h), free(dh);
}
