/* Attention on the CPU: for each (batch row, head) two sgemm calls around a masked softmax.
 * Threads take whole (b, h) problems, so every output slice has one writer; OpenBLAS runs
 * single-threaded inside the parallel region.
 *   S = scale * Q K^T ; P = softmax over visible keys ; O = P V
 * backward:
 *   dV += P^T dO ; dP = dO V^T ; dS = P * (dP - rowsum(P * dP)) ;
 *   dQ += scale * dS K ; dK += scale * dS^T Q */
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/cpu_simd.h"
#include "mtlab/error.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int cpu_attn_visible(const mt_attn_desc *d, int b, int i, int j)
{
    if (d->key_mask) {
        size_t bstride = d->mask_bstride ? d->mask_bstride : (size_t)d->Tk;
        if (!d->key_mask[(size_t)b * bstride + j]) return 0;
    }
    if (d->causal) {
        int p = d->q_pos0 + i;
        if (j > p) return 0;
        if (d->window > 0 && j < p - d->window) return 0;
    }
    return 1;
}

static size_t kv_bstride(const mt_attn_desc *d)
{
    return d->kv_bstride ? d->kv_bstride : (size_t)d->Tk * d->H * d->Dh;
}

/* Softmax of row i of S in place over the visible keys; invisible keys get 0, and a row with
 * no visible key is all 0. */
static void masked_softmax_row(float *s, const mt_attn_desc *d, int b, int i)
{
    float mx = -INFINITY;
    for (int j = 0; j < d->Tk; j++)
        if (cpu_attn_visible(d, b, i, j)) mx = fmaxf(mx, s[j]);
    if (mx == -INFINITY) {
        memset(s, 0, (size_t)d->Tk * sizeof(float));
        return;
    }
    double sum = 0.0;
    for (int j = 0; j < d->Tk; j++) {
        s[j] = cpu_attn_visible(d, b, i, j) ? expf(s[j] - mx) : 0.0f;
        sum += s[j];
    }
    float inv = (float)(1.0 / sum);
    for (int j = 0; j < d->Tk; j++) s[j] *= inv;
}

/* One query of one head, as a decoding step asks (docs/decoding.md §9): the scores go to the
 * caller's p (Tk), then o (Dh) = softmax(p) v, with plain loops: two BLAS calls per head cost
 * more than the few multiply-adds they hold. */
MT_CPU_CLONES static void single_query(float *o, float *p, const float *qh, const float *kh,
                                       const float *vh, const mt_attn_desc *d, int b)
{
    int C = d->H * d->Dh;
    for (int j = 0; j < d->Tk; j++) {
        const float *kj = kh + (size_t)j * C;
        float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
        for (int c = 0; c < d->Dh; c++) dot += qh[c] * kj[c];
        p[j] = d->scale * dot;
    }
    masked_softmax_row(p, d, b, 0);
    for (int c = 0; c < d->Dh; c++) o[c] = 0.0f;
    for (int j = 0; j < d->Tk; j++) {
        if (p[j] == 0.0f) continue;
        const float *vj = vh + (size_t)j * C;
        float pj = p[j];
#pragma omp simd
        for (int c = 0; c < d->Dh; c++) o[c] += pj * vj[c];
    }
}

/* Up to this many keys a decoding step's scores live on the stack. */
#define SINGLE_QUERY_MAX_KEYS 4096

/* Without att (inference, no probe) each thread scores into its own (Tq, Tk) scratch: on the
 * stack for a single query, which forks only when the heads hold enough work. With att or
 * without, a single query takes the same path, so a probe never changes the output. */
void cpu_attention_forward(float *out, float *att, const float *q, const float *k, const float *v,
                           const mt_attn_desc *d)
{
    int C = d->H * d->Dh;
    size_t kvs = kv_bstride(d), scores = (size_t)d->Tq * d->Tk;
    if (d->Tq == 1 && (att || d->Tk <= SINGLE_QUERY_MAX_KEYS)) {
#pragma omp parallel for collapse(2) if ((size_t)d->B * d->H * d->Tk * d->Dh > 65536)
        for (int b = 0; b < d->B; b++)
            for (int h = 0; h < d->H; h++) {
                float own[SINGLE_QUERY_MAX_KEYS];
                float *p = att ? att + ((size_t)b * d->H + h) * d->Tk : own;
                single_query(out + (size_t)b * C + (size_t)h * d->Dh, p,
                             q + (size_t)b * C + (size_t)h * d->Dh,
                             k + (size_t)b * kvs + (size_t)h * d->Dh,
                             v + (size_t)b * kvs + (size_t)h * d->Dh, d, b);
            }
        return;
    }
#pragma omp parallel
    {
        float *own = att ? NULL : mt_xmalloc(scores * sizeof(float));
#pragma omp for collapse(2)
        for (int b = 0; b < d->B; b++)
            for (int h = 0; h < d->H; h++) {
                const float *qh = q + (size_t)b * d->Tq * C + (size_t)h * d->Dh;
                const float *kh = k + (size_t)b * kvs + (size_t)h * d->Dh;
                const float *vh = v + (size_t)b * kvs + (size_t)h * d->Dh;
                float *oh = out + (size_t)b * d->Tq * C + (size_t)h * d->Dh;
                float *p = att ? att + ((size_t)b * d->H + h) * scores : own;
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, d->Tq, d->Tk, d->Dh,
                            d->scale, qh, C, kh, C, 0.0f, p, d->Tk);
                for (int i = 0; i < d->Tq; i++) masked_softmax_row(p + (size_t)i * d->Tk, d, b, i);
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, d->Tq, d->Dh, d->Tk, 1.0f,
                            p, d->Tk, vh, C, 0.0f, oh, C);
            }
        free(own);
    }
}

void cpu_attention_backward(float *dq, float *dk, float *dv, float *datt, const float *dout,
                            const float *q, const float *k, const float *v, const float *att,
                            const mt_attn_desc *d)
{
    int C = d->H * d->Dh;
    size_t kvs = kv_bstride(d);
#pragma omp parallel for collapse(2)
    for (int b = 0; b < d->B; b++)
        for (int h = 0; h < d->H; h++) {
            size_t qoff = (size_t)b * d->Tq * C + (size_t)h * d->Dh;
            size_t kvoff = (size_t)b * kvs + (size_t)h * d->Dh;
            size_t poff = ((size_t)b * d->H + h) * d->Tq * d->Tk;
            const float *p = att + poff;
            float *ds = datt + poff;
            if (dv)
                cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, d->Tk, d->Dh, d->Tq, 1.0f, p,
                            d->Tk, dout + qoff, C, 1.0f, dv + kvoff, C);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, d->Tq, d->Tk, d->Dh, 1.0f,
                        dout + qoff, C, v + kvoff, C, 0.0f, ds, d->Tk);
            for (int i = 0; i < d->Tq; i++) {
                const float *pr = p + (size_t)i * d->Tk;
                float *dr = ds + (size_t)i * d->Tk;
                double dot = 0.0;
                for (int j = 0; j < d->Tk; j++) dot += (double)pr[j] * dr[j];
                for (int j = 0; j < d->Tk; j++) dr[j] = pr[j] * (dr[j] - (float)dot);
            }
            if (dq)
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, d->Tq, d->Dh, d->Tk,
                            d->scale, ds, d->Tk, k + kvoff, C, 1.0f, dq + qoff, C);
            if (dk)
                cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, d->Tk, d->Dh, d->Tq,
                            d->scale, ds, d->Tk, q + qoff, C, 1.0f, dk + kvoff, C);
        }
}
