/* Mamba's probe maps on host arrays of one sequence: the implicit attention matrix and the
 * norms of the SSM state (mtlab/probe.h). Letters: T positions, D channels (d_inner), N state
 * size, G channel groups.
 *
 * With delta_t,d = softplus(dt_t,d + dt_bias_d) and A_d,n = -exp(A_log_d,n) (docs/models.md §3.4):
 *   dA_t,d,n = exp(delta_t,d A_d,n)
 *   dB_t,d,n = delta_t,d B_t,n
 *   h_t,d,n  = dA_t,d,n h_{t-1},d,n + dB_t,d,n u_t,d          (h_{-1} = 0)
 * Unrolling the recurrence, h_r = sum_{c<=r} (prod_{k=c+1..r} dA_k) dB_c u_c, so
 *   y_r,d - D_d u_r,d = sum_n C_r,n h_r,d,n = sum_{c<=r} alpha_d[r][c] u_c,d
 *   alpha_d[r][c] = sum_n C_r,n (prod_{k=c+1..r} dA_k,d,n) dB_c,d,n */
#include "mtlab/probe.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "math/elementwise.h"
#include "mtlab/error.h"

/* delta (T) of channel d. */
static void channel_delta(float *delta, const float *dt, const float *dt_bias, int T, int D, int d)
{
    for (int t = 0; t < T; t++) delta[t] = mt_softplusf(dt[(size_t)t * D + d] + dt_bias[d]);
}

/* alpha (T, T) of channel d: for each column c the running product is carried down the rows,
 * v_n = (prod_{k=c+1..r} dA_k,n) dB_c,n, one multiply per row and state. dA is scratch (T, N),
 * v scratch (N). */
static void implicit_channel(float *alpha, float *dA, float *v, const float *delta,
                             const mt_scan_args *s, int d)
{
    const float *A_log = s->A_log, *Bm = s->Bm, *Cm = s->Cm;
    int T = s->T, N = s->N;
    for (int t = 0; t < T; t++)
        for (int n = 0; n < N; n++)
            dA[(size_t)t * N + n] = expf(-delta[t] * expf(A_log[(size_t)d * N + n]));
    memset(alpha, 0, (size_t)T * T * sizeof *alpha);
    for (int c = 0; c < T; c++) {
        for (int n = 0; n < N; n++) v[n] = delta[c] * Bm[(size_t)c * N + n];
        for (int r = c; r < T; r++) {
            if (r > c)
                for (int n = 0; n < N; n++) v[n] *= dA[(size_t)r * N + n];
            float sum = 0;
            for (int n = 0; n < N; n++) sum += Cm[(size_t)r * N + n] * v[n];
            alpha[(size_t)r * T + c] = sum;
        }
    }
}

void mt_implicit_attention(float *alpha, const mt_scan_args *s)
{
    int T = s->T, D = s->D, N = s->N;
    float *delta = mt_xmalloc((size_t)T * sizeof *delta);
    float *dA = mt_xmalloc((size_t)T * N * sizeof *dA);
    float *v = mt_xmalloc((size_t)N * sizeof *v);
    for (int d = 0; d < D; d++) {
        channel_delta(delta, s->dt, s->dt_bias, T, D, d);
        implicit_channel(alpha + (size_t)d * T * T, dA, v, delta, s, d);
    }
    free(delta);
    free(dA);
    free(v);
}

void mt_implicit_attention_naive(float *alpha, const mt_scan_args *s)
{
    const float *dt = s->dt, *dt_bias = s->dt_bias, *A_log = s->A_log, *Bm = s->Bm, *Cm = s->Cm;
    int T = s->T, D = s->D, N = s->N;
    for (int d = 0; d < D; d++)
        for (int r = 0; r < T; r++)
            for (int c = 0; c < T; c++) {
                double sum = 0;
                for (int n = c <= r ? 0 : N; n < N; n++) {
                    double A = -exp((double)A_log[(size_t)d * N + n]);
                    double prod = 1;
                    for (int k = c + 1; k <= r; k++)
                        prod *= exp(mt_softplusf(dt[(size_t)k * D + d] + dt_bias[d]) * A);
                    double dB = mt_softplusf(dt[(size_t)c * D + d] + dt_bias[d]) *
                                (double)Bm[(size_t)c * N + n];
                    sum += (double)Cm[(size_t)r * N + n] * prod * dB;
                }
                alpha[((size_t)d * T + r) * T + c] = (float)sum;
            }
}

void mt_state_norms(float *norms, float *groups, int G, const mt_scan_args *s)
{
    const float *u = s->u, *dt = s->dt, *dt_bias = s->dt_bias, *A_log = s->A_log, *Bm = s->Bm;
    int T = s->T, D = s->D, N = s->N;
    double *sq = mt_xcalloc((size_t)G * T, sizeof *sq); /* (G, T) squared norms per group */
    float *delta = mt_xmalloc((size_t)T * sizeof *delta);
    float *h = mt_xmalloc((size_t)N * sizeof *h);
    int per = D / G > 0 ? D / G : 1;
    for (int d = 0; d < D; d++) {
        int g = d / per < G ? d / per : G - 1; /* the last group takes the remainder */
        channel_delta(delta, dt, dt_bias, T, D, d);
        memset(h, 0, (size_t)N * sizeof *h);
        for (int t = 0; t < T; t++) {
            float x = u[(size_t)t * D + d];
            double norm2 = 0;
            for (int n = 0; n < N; n++) {
                float dA = expf(-delta[t] * expf(A_log[(size_t)d * N + n]));
                h[n] = dA * h[n] + delta[t] * Bm[(size_t)t * N + n] * x;
                norm2 += (double)h[n] * h[n];
            }
            sq[(size_t)g * T + t] += norm2;
        }
    }
    for (int t = 0; t < T; t++) {
        double all = 0;
        for (int g = 0; g < G; g++) {
            all += sq[(size_t)g * T + t];
            if (groups) groups[(size_t)g * T + t] = (float)sqrt(sq[(size_t)g * T + t]);
        }
        norms[t] = (float)sqrt(all);
    }
    free(sq);
    free(delta);
    free(h);
}
