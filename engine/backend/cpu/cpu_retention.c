/* Multi-scale retention on the CPU (semantics: mt_retention_desc in mtlab/backend.h).
 * The parallel form runs, for each (batch row, head), two products (cpu_head_forward,
 * cpu_heads.c) around a pass that applies the decay matrix D and the abs-sum normaliser r row
 * by row:
 *   S = Q K^T ; att = (S * D) / r ; O = att V
 * backward (r constant):
 *   dV += att^T dO ; dP = dO V^T ; dQK = dP * D / r ; dQ += dQK K ; dK += dQK^T Q
 * D is never stored: row n of it is gamma^(n-m) / sqrt(rowsum_n) over the visible keys, with
 * rowsum_n = gamma rowsum_(n-1) + [n visible]. Threads take whole (b, h) problems, so every
 * output slice has one writer. The recurrent state fill and step are plain loops shared by
 * both backend tables, their (Dk, Dv) inner loops in functions cloned per vector width (an
 * OpenMP region's own body is compiled for the baseline x86-64 only, cpu_simd.h): each element
 * takes the same operations in the same order on every width. */
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/cpu_par.h"
#include "backend/cpu/cpu_pool.h"
#include "backend/cpu/cpu_simd.h"
#include "mtlab/error.h"

#include <math.h>
#include <stdlib.h>

double *cpu_retention_powers(const mt_retention_desc *d)
{
    double *pw = mt_xmalloc((size_t)d->H * d->T * sizeof *pw);
    for (int h = 0; h < d->H; h++) {
        double log_gamma = log((double)d->gamma[h]);
        for (int k = 0; k < d->T; k++) pw[(size_t)h * d->T + k] = exp(k * log_gamma);
    }
    return pw;
}

int cpu_retention_visible(const mt_retention_desc *d, int b, int m)
{
    return !d->key_mask || d->key_mask[(size_t)b * d->T + m] != 0;
}

/* 1 / sqrt(sum of the visible decay weights) of each row n, 0 for a row without keys. */
static void row_scales(double *inv, const mt_retention_desc *d, int b, double gamma)
{
    double rowsum = 0.0;
    for (int n = 0; n < d->T; n++) {
        rowsum = gamma * rowsum + (cpu_retention_visible(d, b, n) ? 1.0 : 0.0);
        inv[n] = rowsum > 0.0 ? 1.0 / sqrt(rowsum) : 0.0;
    }
}

/* One (b, h) problem's rows pass: forward, the decay and the abs-sum normaliser on the scores;
 * backward, the decay over r on dP. Row n of D is pw[n - m] inv[n] for the visible m <= n, 0
 * elsewhere (the keys past n too, whatever the scores' product left there). */
typedef struct {
    const mt_retention_desc *d;
    const double *pw; /* the head's powers of gamma */
    double *inv; /* (T) row scales */
    float *r; /* (T) the head's normalisers */
    int b;
} rows_ctx;

/* row[m] *= D[n, m] / rn for m <= n, D[n, m] = (float)(pw[n - m] inv) for a visible key m and
 * 0 for a masked one, row[m] = 0 past n; the sum of |row| after, in double. One vector loop (a
 * call with a branch on the mask for every score cost more than the scores' product). */
MT_CPU_CLONES static double decay_row(float *row, const double *pw, double inv, float rn, int n,
                                      int T, const uint8_t *km)
{
    double abs_sum = 0.0;
#pragma omp simd reduction(+ : abs_sum)
    for (int m = 0; m <= n; m++) {
        float w = (float)(pw[n - m] * inv);
        w = km && !km[m] ? 0.0f : w / rn;
        row[m] *= w;
        abs_sum += fabsf(row[m]);
    }
    for (int m = n + 1; m < T; m++) row[m] = 0.0f;
    return abs_sum;
}

static const uint8_t *key_row(const mt_retention_desc *d, int b)
{
    return d->key_mask ? d->key_mask + (size_t)b * d->T : NULL;
}

static void decay_rows(void *ctx, float *p)
{
    rows_ctx *c = ctx;
    int T = c->d->T;
    const uint8_t *km = key_row(c->d, c->b);
    for (int n = 0; n < T; n++) {
        float *row = p + (size_t)n * T;
        double abs_sum = decay_row(row, c->pw, c->inv[n], 1.0f, n, T, km);
        float rn = (float)fmin(fmax(abs_sum, 1.0), 5e4);
        c->r[n] = rn;
        for (int m = 0; m <= n; m++) row[m] /= rn;
    }
}

static void decay_rows_back(void *ctx, float *ds, const float *p)
{
    (void)p;
    rows_ctx *c = ctx;
    int T = c->d->T;
    const uint8_t *km = key_row(c->d, c->b);
    for (int n = 0; n < T; n++) decay_row(ds + (size_t)n * T, c->pw, c->inv[n], c->r[n], n, T, km);
}

static cpu_head head_of(const mt_retention_desc *d)
{
    return (cpu_head){.Tq = d->T,
                      .Tk = d->T,
                      .Dk = d->Dk,
                      .Dv = d->Dv,
                      .ldq = (size_t)d->H * d->Dk,
                      .ldk = (size_t)d->H * d->Dk,
                      .ldv = (size_t)d->H * d->Dv,
                      .scale = 1.0f,
                      .causal = 1,
                      .off = 0};
}

/* The (row, head) problems for the pool (cpu_pool_for): unit u is row u / H, head u % H, each
 * with its row scales; forward or backward */
typedef struct {
    float *out, *att, *r, *dq, *dk, *dv, *datt;
    const float *q, *k, *v, *dout, *p, *r_in;
    const double *pw;
    const mt_retention_desc *d;
    int backward;
} retention_job;

static void retention_heads(void *ctx, size_t u0, size_t u1)
{
    const retention_job *j = ctx;
    const mt_retention_desc *d = j->d;
    int T = d->T, CK = d->H * d->Dk, CV = d->H * d->Dv;
    cpu_head head = head_of(d);
    double *inv = mt_xmalloc((size_t)T * sizeof *inv);
    for (size_t bh = u0; bh < u1; bh++) {
        int b = (int)(bh / (size_t)d->H), h = (int)(bh % (size_t)d->H);
        size_t koff = (size_t)b * T * CK + (size_t)h * d->Dk;
        size_t voff = (size_t)b * T * CV + (size_t)h * d->Dv;
        row_scales(inv, d, b, d->gamma[h]);
        if (!j->backward) {
            rows_ctx c = {d, j->pw + (size_t)h * T, inv, j->r + bh * T, b};
            cpu_head_forward(&head, j->out + voff, j->att + bh * T * T, j->q + koff, j->k + koff,
                             j->v + voff, decay_rows, &c);
        } else {
            rows_ctx c = {d, j->pw + (size_t)h * T, inv, (float *)j->r_in + bh * T, b};
            cpu_head_backward(&head, j->dq ? j->dq + koff : NULL, j->dk ? j->dk + koff : NULL,
                              j->dv ? j->dv + voff : NULL, j->datt + bh * T * T, j->dout + voff,
                              j->q + koff, j->k + koff, j->v + voff, j->p + bh * T * T,
                              decay_rows_back, &c);
        }
    }
    free(inv);
}

static void retention_run(retention_job *j)
{
    const mt_retention_desc *d = j->d;
    size_t work = (size_t)d->B * d->H * d->T * d->T * (d->Dk > d->Dv ? d->Dk : d->Dv);
    double *pw = cpu_retention_powers(d);
    j->pw = pw;
    cpu_pool_for(cpu_fork(work, 65536), (size_t)d->B * d->H, retention_heads, j);
    free(pw);
}

void cpu_retention_forward(float *out, float *att, float *r, const float *q, const float *k,
                           const float *v, const mt_retention_desc *d)
{
    retention_job j = {.out = out, .att = att, .r = r, .q = q, .k = k, .v = v, .d = d};
    retention_run(&j);
}

void cpu_retention_backward(float *dq, float *dk, float *dv, float *datt, const float *dout,
                            const float *q, const float *k, const float *v, const float *att,
                            const float *r, const mt_retention_desc *d)
{
    retention_job j = {.dq = dq,
                       .dk = dk,
                       .dv = dv,
                       .datt = datt,
                       .dout = dout,
                       .q = q,
                       .k = k,
                       .v = v,
                       .p = att,
                       .r_in = r,
                       .d = d,
                       .backward = 1};
    retention_run(&j);
}

/* st (Dk, Dv) += (w k_i) v_j */
MT_CPU_CLONES static void outer_add(float *restrict st, float w, const float *restrict km,
                                    const float *restrict vm, int Dk, int Dv)
{
    for (int i = 0; i < Dk; i++) {
        float wk = w * km[i];
        float *row = st + (size_t)i * Dv;
#pragma omp simd
        for (int j = 0; j < Dv; j++) row[j] += wk * vm[j];
    }
}

/* one head's step: st = st decay + (c k_i) v_j ; ob = q st (row by row) */
MT_CPU_CLONES static void step_head(float *restrict ob, float *restrict st,
                                    const float *restrict qb, const float *restrict kb,
                                    const float *restrict vb, float decay, float c, int Dk, int Dv)
{
    for (int j = 0; j < Dv; j++) ob[j] = 0.0f;
    for (int i = 0; i < Dk; i++) {
        float *row = st + (size_t)i * Dv;
        float ck = c * kb[i], qi = qb[i];
#pragma omp simd
        for (int j = 0; j < Dv; j++) {
            row[j] = row[j] * decay + ck * vb[j];
            ob[j] += qi * row[j];
        }
    }
}

/* s = sum_m w_m, KV = sum_m w_m k_m^T v_m / sqrt(s), w_m = [m real] gamma^(T-1-m) */
void cpu_retention_state_fill(float *kv, float *s, const float *k, const float *v,
                              const mt_retention_desc *d)
{
    int T = d->T, CK = d->H * d->Dk, CV = d->H * d->Dv, Dk = d->Dk, Dv = d->Dv;
    double *pw = cpu_retention_powers(d);
#pragma omp parallel for collapse(2)
    for (int b = 0; b < d->B; b++)
        for (int h = 0; h < d->H; h++) {
            float *st = kv + ((size_t)b * d->H + h) * Dk * Dv;
            double total = 0.0;
            for (size_t i = 0; i < (size_t)Dk * Dv; i++) st[i] = 0.0f;
            for (int m = 0; m < T; m++) {
                if (!cpu_retention_visible(d, b, m)) continue;
                float w = (float)pw[(size_t)h * T + (T - 1 - m)];
                const float *km = k + ((size_t)b * T + m) * CK + (size_t)h * Dk;
                const float *vm = v + ((size_t)b * T + m) * CV + (size_t)h * Dv;
                total += w;
                outer_add(st, w, km, vm, Dk, Dv);
            }
            float inv = total > 0.0 ? (float)(1.0 / sqrt(total)) : 0.0f;
            for (size_t i = 0; i < (size_t)Dk * Dv; i++) st[i] *= inv;
            s[(size_t)b * d->H + h] = (float)total;
        }
    free(pw);
}

/* One head h of batch row b of cpu_retention_step */
static void retention_step_head(float *out, float *kv, float *s, const float *q, const float *k,
                                const float *v, const mt_retention_desc *d, int b, int h)
{
    int CK = d->H * d->Dk, CV = d->H * d->Dv, Dk = d->Dk, Dv = d->Dv;
    double gamma = d->gamma[h], s_old = s[(size_t)b * d->H + h];
    double s_new = gamma * s_old + 1.0;
    float decay = (float)(gamma * sqrt(s_old / s_new)), c = (float)(1.0 / sqrt(s_new));
    float *st = kv + ((size_t)b * d->H + h) * Dk * Dv;
    const float *qb = q + (size_t)b * CK + (size_t)h * Dk;
    const float *kb = k + (size_t)b * CK + (size_t)h * Dk;
    const float *vb = v + (size_t)b * CV + (size_t)h * Dv;
    float *ob = out + (size_t)b * CV + (size_t)h * Dv;
    if (d->key_mask && !d->key_mask[(size_t)b * d->T]) {
        for (int j = 0; j < Dv; j++) ob[j] = 0.0f;
        return;
    }
    step_head(ob, st, qb, kb, vb, decay, c, Dk, Dv);
    s[(size_t)b * d->H + h] = (float)s_new;
}

/* s' = gamma s + 1 ; KV' = KV gamma sqrt(s / s') + k^T v / sqrt(s') ; out = q KV' */
void cpu_retention_step(float *out, float *kv, float *s, const float *q, const float *k,
                        const float *v, const mt_retention_desc *d)
{
    CPU_FOR(cpu_fork((size_t)d->B * d->H * d->Dk * d->Dv, 65536), "omp parallel for",
            (int bh = 0; bh < d->B * d->H; bh++),
            retention_step_head(out, kv, s, q, k, v, d, bh / d->H, bh % d->H));
}
