/* Reference attention: every score, probability and product written out as a loop, in
 * double, one (b, h, i) at a time.
 *   s_ij = scale * sum_e q_ie k_je ; p_ij = exp(s_ij - max) / sum over visible j (0 if none)
 *   o_ie = sum_j p_ij v_je
 * backward:
 *   dp_ij = sum_e do_ie v_je ; ds_ij = p_ij (dp_ij - sum_j' p_ij' dp_ij')
 *   dq_ie += scale sum_j ds_ij k_je ; dk_je += scale ds_ij q_ie ; dv_je += p_ij do_ie */
#include "backend/cpu/cpu_ops.h"

#include <math.h>
#include <stdlib.h>

#define QROW(x, b, i, h) ((x) + ((size_t)(b)*d->Tq + (i)) * C + (size_t)(h)*d->Dh)
#define KVROW(x, b, j, h) ((x) + (size_t)(b)*kvs + (size_t)(j)*C + (size_t)(h)*d->Dh)
#define PROW(x, b, h, i) ((x) + (((size_t)(b)*d->H + (h)) * d->Tq + (i)) * d->Tk)

void naive_attention_forward(float *out, float *att, const float *q, const float *k, const float *v,
                             const mt_attn_desc *d)
{
    int C = d->H * d->Dh;
    size_t kvs = d->kv_bstride ? d->kv_bstride : (size_t)d->Tk * C;
    double *s = malloc((size_t)d->Tk * sizeof *s);
    float *own = malloc((size_t)d->Tk * sizeof *own); /* the row when att is NULL */
    for (int b = 0; b < d->B; b++)
        for (int h = 0; h < d->H; h++)
            for (int i = 0; i < d->Tq; i++) {
                const float *qi = QROW(q, b, i, h);
                float *p = att ? PROW(att, b, h, i) : own;
                double mx = -INFINITY, sum = 0.0;
                for (int j = 0; j < d->Tk; j++) {
                    const float *kj = KVROW(k, b, j, h);
                    double dot = 0.0;
                    for (int e = 0; e < d->Dh; e++) dot += (double)qi[e] * kj[e];
                    s[j] = d->scale * dot;
                    if (cpu_attn_visible(d, b, i, j) && s[j] > mx) mx = s[j];
                }
                for (int j = 0; j < d->Tk; j++) {
                    s[j] = cpu_attn_visible(d, b, i, j) ? exp(s[j] - mx) : 0.0;
                    sum += s[j];
                }
                for (int j = 0; j < d->Tk; j++) p[j] = sum > 0.0 ? (float)(s[j] / sum) : 0.0f;
                float *oi = QROW(out, b, i, h);
                for (int e = 0; e < d->Dh; e++) {
                    double o = 0.0;
                    for (int j = 0; j < d->Tk; j++) o += (double)p[j] * KVROW(v, b, j, h)[e];
                    oi[e] = (float)o;
                }
            }
    free(s);
    free(own);
}

void naive_attention_backward(float *dq, float *dk, float *dv, float *datt, const float *dout,
                              const float *q, const float *k, const float *v, const float *att,
                              const mt_attn_desc *d)
{
    int C = d->H * d->Dh;
    size_t kvs = d->kv_bstride ? d->kv_bstride : (size_t)d->Tk * C;
    for (int b = 0; b < d->B; b++)
        for (int h = 0; h < d->H; h++)
            for (int i = 0; i < d->Tq; i++) {
                const float *p = PROW(att, b, h, i), *doi = QROW(dout, b, i, h);
                float *ds = PROW(datt, b, h, i);
                double dot = 0.0;
                for (int j = 0; j < d->Tk; j++) {
                    double dp = 0.0;
                    for (int e = 0; e < d->Dh; e++) dp += (double)doi[e] * KVROW(v, b, j, h)[e];
                    ds[j] = (float)dp;
                    dot += p[j] * dp;
                }
                for (int j = 0; j < d->Tk; j++) ds[j] = (float)(p[j] * (ds[j] - dot));
                for (int j = 0; j < d->Tk; j++)
                    for (int e = 0; e < d->Dh; e++) {
                        if (dq) QROW(dq, b, i, h)[e] += d->scale * ds[j] * KVROW(k, b, j, h)[e];
                        if (dk) KVROW(dk, b, j, h)[e] += d->scale * ds[j] * QROW(q, b, i, h)[e];
                        if (dv) KVROW(dv, b, j, h)[e] += p[j] * doi[e];
                    }
            }
}
