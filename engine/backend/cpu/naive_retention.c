/* Reference retention: the decay matrix, scores, normaliser and products written out as
 * loops in double, one (b, h, n) row at a time, in the order of the formulas of
 * mt_retention_desc (mtlab/backend.h).
 *   w_nm = gamma^(n-m) [m <= n, m real] ; D_nm = w_nm / sqrt(sum_m w_nm)
 *   S_nm = D_nm sum_e q_ne k_me ; r_n = clamp(sum_m |S_nm|, 1, 5e4)
 *   att_nm = S_nm / r_n ; o_ne = sum_m att_nm v_me
 * backward (r constant):
 *   dv_me += att_nm do_ne ; dS_nm = D_nm / r_n sum_e do_ne v_me
 *   dq_ne += dS_nm k_me ; dk_me += dS_nm q_ne */
#include "backend/cpu/cpu_ops.h"

#include <math.h>
#include <stdlib.h>

#define KROW(x, b, n, h) ((x) + ((size_t)(b)*d->T + (n)) * CK + (size_t)(h)*d->Dk)
#define VROW(x, b, n, h) ((x) + ((size_t)(b)*d->T + (n)) * CV + (size_t)(h)*d->Dv)
#define PROW(x, b, h, n) ((x) + (((size_t)(b)*d->H + (h)) * d->T + (n)) * d->T)

/* D_nm of row n for every m (double, d->T entries) */
static void decay_row(double *Dn, const mt_retention_desc *d, int b, int h, int n)
{
    double gamma = d->gamma[h], sum = 0.0;
    for (int m = 0; m < d->T; m++) {
        Dn[m] = m <= n && cpu_retention_visible(d, b, m) ? pow(gamma, n - m) : 0.0;
        sum += Dn[m];
    }
    for (int m = 0; m < d->T; m++) Dn[m] = sum > 0.0 ? Dn[m] / sqrt(sum) : 0.0;
}

void naive_retention_forward(float *out, float *att, float *r, const float *q, const float *k,
                             const float *v, const mt_retention_desc *d)
{
    int CK = d->H * d->Dk, CV = d->H * d->Dv;
    double *Dn = malloc((size_t)d->T * sizeof *Dn), *S = malloc((size_t)d->T * sizeof *S);
    for (int b = 0; b < d->B; b++)
        for (int h = 0; h < d->H; h++)
            for (int n = 0; n < d->T; n++) {
                decay_row(Dn, d, b, h, n);
                double abs_sum = 0.0;
                for (int m = 0; m < d->T; m++) {
                    double dot = 0.0;
                    for (int e = 0; e < d->Dk; e++)
                        dot += (double)KROW(q, b, n, h)[e] * KROW(k, b, m, h)[e];
                    S[m] = dot * Dn[m];
                    abs_sum += fabs(S[m]);
                }
                double rn = fmin(fmax(abs_sum, 1.0), 5e4);
                r[((size_t)b * d->H + h) * d->T + n] = (float)rn;
                float *p = PROW(att, b, h, n);
                for (int m = 0; m < d->T; m++) p[m] = (float)(S[m] / rn);
                for (int e = 0; e < d->Dv; e++) {
                    double o = 0.0;
                    for (int m = 0; m < d->T; m++) o += S[m] / rn * VROW(v, b, m, h)[e];
                    VROW(out, b, n, h)[e] = (float)o;
                }
            }
    free(Dn);
    free(S);
}

void naive_retention_backward(float *dq, float *dk, float *dv, float *datt, const float *dout,
                              const float *q, const float *k, const float *v, const float *att,
                              const float *r, const mt_retention_desc *d)
{
    int CK = d->H * d->Dk, CV = d->H * d->Dv;
    double *Dn = malloc((size_t)d->T * sizeof *Dn);
    for (int b = 0; b < d->B; b++)
        for (int h = 0; h < d->H; h++)
            for (int n = 0; n < d->T; n++) {
                decay_row(Dn, d, b, h, n);
                double rn = r[((size_t)b * d->H + h) * d->T + n];
                const float *p = PROW(att, b, h, n), *don = VROW(dout, b, n, h);
                float *ds = PROW(datt, b, h, n);
                for (int m = 0; m < d->T; m++) {
                    double dp = 0.0;
                    for (int e = 0; e < d->Dv; e++) dp += (double)don[e] * VROW(v, b, m, h)[e];
                    ds[m] = (float)(dp * Dn[m] / rn);
                    for (int e = 0; e < d->Dk; e++) {
                        if (dq) KROW(dq, b, n, h)[e] += ds[m] * KROW(k, b, m, h)[e];
                        if (dk) KROW(dk, b, m, h)[e] += ds[m] * KROW(q, b, n, h)[e];
                    }
                    if (dv)
                        for (int e = 0; e < d->Dv; e++) VROW(dv, b, m, h)[e] += p[m] * don[e];
                }
            }
    free(Dn);
}
