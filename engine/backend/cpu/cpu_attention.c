/* Attention on the CPU: for each (batch row, head) two products around a masked softmax
 * (cpu_head_forward, cpu_heads.c), or for a single query plain loops over the keys. Threads
 * take whole (b, h) problems, so every output slice has one writer.
 *   S = scale * Q K^T ; P = softmax over visible keys ; O = P V
 * backward:
 *   dV += P^T dO ; dP = dO V^T ; dS = P * (dP - rowsum(P * dP)) ;
 *   dQ += scale * dS K ; dK += scale * dS^T Q */
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/cpu_par.h"
#include "backend/cpu/cpu_pool.h"
#include "backend/cpu/cpu_simd.h"
#include "mtlab/error.h"

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

/* Sum of x[0, n) in double over eight running sums added pairwise at the end: a loop the
 * compiler vectorises (one running double, added in key order, was a chain of dependent adds). */
static inline double sum_lanes(const float *x, int n)
{
    double acc[8] = {0};
    CPU_LANES8_SUM(n, acc[l] += x[c + l], acc[c % 8] += x[c]);
    return CPU_LANES8_FOLD(acc);
}

/* The largest of x[0, n) (NaN passed over, -inf when there is none) in 16 running maxima folded
 * at the end: a loop the compiler vectorises, where one running maximum was a chain of scalar
 * maxss, half of a training softmax's time. */
static inline float max_lanes(const float *x, int n)
{
    float m[16];
    for (int l = 0; l < 16; l++) m[l] = -INFINITY;
    int c = 0;
    for (; c + 16 <= n; c += 16)
        for (int l = 0; l < 16; l++) m[l] = x[c + l] > m[l] ? x[c + l] : m[l];
    for (; c < n; c++) m[0] = x[c] > m[0] ? x[c] : m[0];
    for (int l = 1; l < 16; l++) m[0] = m[l] > m[0] ? m[l] : m[0];
    return m[0];
}

/* Row i's visible keys: the span [lo, hi) the causal bounds leave (cpu_attn_visible's rule),
 * and the key mask km (NULL: none) within it */
static void row_keys(const mt_attn_desc *d, int b, int i, int *lo, int *hi, const uint8_t **km)
{
    *lo = 0, *hi = d->Tk;
    if (d->causal) {
        int p = d->q_pos0 + i;
        if (p + 1 < *hi) *hi = p + 1 > 0 ? p + 1 : 0;
        if (d->window > 0 && p - d->window > *lo) *lo = p - d->window < *hi ? p - d->window : *hi;
    }
    *km = NULL;
    if (d->key_mask)
        *km = d->key_mask + (size_t)b * (d->mask_bstride ? d->mask_bstride : (size_t)d->Tk);
}

/* Softmax of a row s[0, n) in place over the visible keys; invisible keys get 0, and a row
 * with no visible key is all 0. The span's exponentials are taken in one vector loop of
 * cpu_expf_poly (inlined, where libmvec's expf was a call per vector and a scalar call per
 * element of the tail; a key the mask hides is set to 0 after), then summed in double
 * (sum_lanes). The tile path's rows take cpu_tiles_softmax_row, the same steps in explicit
 * vectors with masks (a row of 64 keys here cost 200 cycles in loop tails). */
MT_CPU_CLONES static void masked_softmax_row(float *s, int n, int lo, int hi, const uint8_t *km)
{
    float mx = -INFINITY;
    if (km) {
        for (int j = lo; j < hi; j++) /* fmaxf's rule (NaN passed over) without its call */
            if (km[j] && s[j] > mx) mx = s[j];
    } else {
        mx = max_lanes(s + lo, hi - lo);
    }
    if (mx == -INFINITY) {
        for (int j = 0; j < n; j++) s[j] = 0.0f;
        return;
    }
    for (int j = 0; j < lo; j++) s[j] = 0.0f;
    for (int j = hi; j < n; j++) s[j] = 0.0f;
#pragma omp simd
    for (int j = lo; j < hi; j++) s[j] = cpu_expf_poly(s[j] - mx);
    if (km)
        for (int j = lo; j < hi; j++)
            if (!km[j]) s[j] = 0.0f;
    float inv = (float)(1.0 / sum_lanes(s + lo, hi - lo));
#pragma omp simd
    for (int j = lo; j < hi; j++) s[j] *= inv;
}

/* The softmax of every row of a head's scores p (Tq, Tk) */
static void softmax_rows(float *p, const mt_attn_desc *d, int b)
{
    cpu_rows_isa isa = cpu_rows_best_isa();
    for (int i = 0; i < d->Tq; i++) {
        int lo, hi;
        const uint8_t *km;
        row_keys(d, b, i, &lo, &hi, &km);
        float *row = p + (size_t)i * d->Tk;
        if (!cpu_tiles_softmax_row(isa, row, d->Tk, lo, hi, km))
            masked_softmax_row(row, d->Tk, lo, hi, km);
    }
}

/* x . y over n floats in eight running sums, added pairwise at the end: a plain loop the
 * compiler turns into vector multiply-adds and one short fold (an `omp simd` reduction of
 * unknown length summed its lanes through memory, one at a time). */
static inline float dot_lanes(const float *restrict x, const float *restrict y, int n)
{
    float acc[8] = {0};
    CPU_LANES8_SUM(n, acc[l] += x[c + l] * y[c + l], acc[c % 8] += x[c] * y[c]);
    return CPU_LANES8_FOLD(acc);
}

/* o (n) += w v, skipped when w is 0: a key of weight 0 adds nothing, not even a NaN its value
 * row may hold. */
static inline void add_weighted(float *restrict o, float w, const float *restrict v, int n)
{
    if (w == 0.0f) return;
#pragma omp simd
    for (int c = 0; c < n; c++) o[c] += w * v[c];
}

/* One query per row, as a decoding step asks (docs/decoding.md §9), for heads h0 .. h1 of row
 * b at once: the cache holds a row's keys as (Tk, H * Dh), so one pass along the keys reads
 * each cached row whole and in order (the prefetchers stream it) and scores it for every head,
 * and one pass along the values adds each value row, weighted, to every head's output. Plain
 * loops: two BLAS calls per head cost more than the few multiply-adds they hold. p holds the
 * heads' weights, (h1 - h0, Tk). Keys a query may not see score -inf, so the exp makes them 0;
 * a head that sees none gets o = 0. */
MT_CPU_CLONES static void single_query(float *o, float *p, const float *q, const float *kb,
                                       const float *vb, const mt_attn_desc *d, int b, int h0,
                                       int h1)
{
    int C = d->H * d->Dh, Dh = d->Dh, Tk = d->Tk, G = h1 - h0;
    for (int j = 0; j < Tk; j++) {
        const float *kj = kb + (size_t)j * C;
        for (int g = 0; g < G; g++)
            p[(size_t)g * Tk + j] =
                d->scale * dot_lanes(q + (size_t)(h0 + g) * Dh, kj + (size_t)(h0 + g) * Dh, Dh);
    }
    int seen = 0;
    for (int j = 0; j < Tk; j++) {
        if (cpu_attn_visible(d, b, 0, j)) {
            seen = 1;
            continue;
        }
        for (int g = 0; g < G; g++) p[(size_t)g * Tk + j] = -INFINITY;
    }
    memset(o + (size_t)h0 * Dh, 0, (size_t)G * Dh * sizeof(float));
    if (!seen) {
        memset(p, 0, (size_t)G * Tk * sizeof(float));
        return;
    }
    for (int g = 0; g < G; g++) {
        float *pg = p + (size_t)g * Tk, mx = -INFINITY;
        for (int j = 0; j < Tk; j++) mx = pg[j] > mx ? pg[j] : mx;
        double sum = 0.0;
#pragma omp simd reduction(+ : sum)
        for (int j = 0; j < Tk; j++) {
            pg[j] = expf(pg[j] - mx);
            sum += pg[j];
        }
        float inv = (float)(1.0 / sum);
#pragma omp simd
        for (int j = 0; j < Tk; j++) pg[j] *= inv;
    }
    /* Four value rows at a time, so each pass over a head's output adds four of them (one
     * addition into o per key made every key wait for the store of the one before); four with a
     * weight of 0 among them, and the last Tk % 4, go key by key (add_weighted). */
    int j = 0;
    for (; j + 4 <= Tk; j += 4) {
        const float *v0 = vb + (size_t)j * C;
        for (int g = 0; g < G; g++) {
            const float *pg = p + (size_t)g * Tk + j;
            size_t at = (size_t)(h0 + g) * Dh;
            float *oh = o + at, w0 = pg[0], w1 = pg[1], w2 = pg[2], w3 = pg[3];
            if (w0 == 0.0f || w1 == 0.0f || w2 == 0.0f || w3 == 0.0f) {
                for (int i = 0; i < 4; i++) add_weighted(oh, pg[i], v0 + (size_t)i * C + at, Dh);
                continue;
            }
            const float *a0 = v0 + at, *a1 = a0 + C, *a2 = a1 + C, *a3 = a2 + C;
#pragma omp simd
            for (int c = 0; c < Dh; c++)
                oh[c] += (w0 * a0[c] + w1 * a1[c]) + (w2 * a2[c] + w3 * a3[c]);
        }
    }
    for (; j < Tk; j++)
        for (int g = 0; g < G; g++) {
            size_t at = (size_t)(h0 + g) * Dh;
            add_weighted(o + at, p[(size_t)g * Tk + j], vb + (size_t)j * C + at, Dh);
        }
}

/* ---- several queries: each (row, head) problem through cpu_head_forward, the softmax rows
 * its pass over the scores */
typedef struct {
    const mt_attn_desc *d;
    int b;
} rows_ctx;

static void forward_rows(void *ctx, float *p)
{
    const rows_ctx *c = ctx;
    softmax_rows(p, c->d, c->b);
}

static cpu_head head_of(const mt_attn_desc *d)
{
    size_t C = (size_t)d->H * d->Dh;
    return (cpu_head){.Tq = d->Tq,
                      .Tk = d->Tk,
                      .Dk = d->Dh,
                      .Dv = d->Dh,
                      .ldq = C,
                      .ldk = C,
                      .ldv = C,
                      .scale = d->scale,
                      .causal = d->causal,
                      .off = d->q_pos0};
}

/* The general path's (row, head) problems, for the pool (cpu_pool_for): unit u is row u / H,
 * head u % H */
typedef struct {
    float *out, *att, *dq, *dk, *dv, *datt;
    const float *q, *k, *v, *dout, *p;
    const mt_attn_desc *d;
} heads_job;

static void heads_forward(void *ctx, size_t u0, size_t u1)
{
    const heads_job *j = ctx;
    const mt_attn_desc *d = j->d;
    int C = d->H * d->Dh;
    size_t kvs = kv_bstride(d), scores = (size_t)d->Tq * d->Tk;
    cpu_head head = head_of(d);
    float *own = j->att ? NULL : mt_xmalloc(scores * sizeof(float));
    for (size_t u = u0; u < u1; u++) {
        int b = (int)(u / (size_t)d->H), h = (int)(u % (size_t)d->H);
        rows_ctx c = {d, b};
        cpu_head_forward(&head, j->out + (size_t)b * d->Tq * C + (size_t)h * d->Dh,
                         j->att ? j->att + u * scores : own,
                         j->q + (size_t)b * d->Tq * C + (size_t)h * d->Dh,
                         j->k + (size_t)b * kvs + (size_t)h * d->Dh,
                         j->v + (size_t)b * kvs + (size_t)h * d->Dh, forward_rows, &c);
    }
    free(own);
}

/* Up to this many scores (heads x keys) a decoding step keeps on the stack. */
#define SINGLE_QUERY_MAX_SCORES 4096

/* A single query's problems, for the pool: part bg is row bg / groups, heads group bg % groups */
typedef struct {
    float *out, *att;
    const float *q, *k, *v;
    const mt_attn_desc *d;
    int G, groups;
} single_job;

static void single_part(void *ctx, int bg)
{
    const single_job *j = ctx;
    const mt_attn_desc *d = j->d;
    int C = d->H * d->Dh, b = bg / j->groups, h0 = bg % j->groups * j->G;
    size_t kvs = kv_bstride(d);
    float own[SINGLE_QUERY_MAX_SCORES];
    single_query(j->out + (size_t)b * C, j->att ? j->att + ((size_t)b * d->H + h0) * d->Tk : own,
                 j->q + (size_t)b * C, j->k + (size_t)b * kvs, j->v + (size_t)b * kvs, d, b, h0,
                 h0 + j->G);
}

/* Without att (inference, no probe) each thread scores into its own (Tq, Tk) scratch: on the
 * stack for a single query. A single query takes all of a row's heads in one pass; with one
 * row, or when a row's scores do not fit the stack, the heads are split into groups (which the
 * threads share). With att or without, a single query takes the same path, so a probe never
 * changes the output. */
void cpu_attention_forward(float *out, float *att, const float *q, const float *k, const float *v,
                           const mt_attn_desc *d)
{
    size_t scores = (size_t)d->Tq * d->Tk;
    if (d->Tq == 1 && (att || d->Tk <= SINGLE_QUERY_MAX_SCORES)) {
        int par = cpu_fork((size_t)d->B * d->H * d->Tk * d->Dh, 65536);
        int G = d->B == 1 && par ? 1 : d->H; /* heads per group */
        while (G > 1 && (size_t)G * d->Tk > SINGLE_QUERY_MAX_SCORES) G--;
        while (d->H % G) G--;
        single_job j = {
            .out = out, .att = att, .q = q, .k = k, .v = v, .d = d, .G = G, .groups = d->H / G};
        cpu_pool_run_if(par, d->B * j.groups, single_part, &j);
        return;
    }
    heads_job j = {.out = out, .att = att, .q = q, .k = k, .v = v, .d = d};
    cpu_pool_for(cpu_fork((size_t)d->B * d->H * scores * d->Dh, 65536), (size_t)d->B * d->H,
                 heads_forward, &j);
}

/* dS = P * (dP - rowsum(P * dP)) in place of dP, rows (Tq, Tk); the row sum in double over
 * eight running sums (dot_lanes' order, in double), or cpu_tiles_softmax_backward_row's */
MT_CPU_CLONES static void softmax_backward_row(float *dr, const float *pr, int Tk)
{
    double acc[8] = {0};
    CPU_LANES8_SUM(Tk, acc[l] += (double)pr[c + l] * dr[c + l],
                   acc[c % 8] += (double)pr[c] * dr[c]);
    float dot = (float)(CPU_LANES8_FOLD(acc));
#pragma omp simd
    for (int j = 0; j < Tk; j++) dr[j] = pr[j] * (dr[j] - dot);
}

static void softmax_backward_rows(float *ds, const float *p, int Tq, int Tk)
{
    cpu_rows_isa isa = cpu_rows_best_isa();
    for (int i = 0; i < Tq; i++) {
        float *dr = ds + (size_t)i * Tk;
        const float *pr = p + (size_t)i * Tk;
        if (!cpu_tiles_softmax_backward_row(isa, dr, pr, Tk)) softmax_backward_row(dr, pr, Tk);
    }
}

static void backward_rows(void *ctx, float *ds, const float *p)
{
    const mt_attn_desc *d = ctx;
    softmax_backward_rows(ds, p, d->Tq, d->Tk);
}

static void heads_backward(void *ctx, size_t u0, size_t u1)
{
    const heads_job *j = ctx;
    const mt_attn_desc *d = j->d;
    int C = d->H * d->Dh;
    size_t kvs = kv_bstride(d);
    cpu_head head = head_of(d);
    for (size_t u = u0; u < u1; u++) {
        int b = (int)(u / (size_t)d->H), h = (int)(u % (size_t)d->H);
        size_t qoff = (size_t)b * d->Tq * C + (size_t)h * d->Dh;
        size_t kvoff = (size_t)b * kvs + (size_t)h * d->Dh;
        size_t poff = u * d->Tq * d->Tk;
        cpu_head_backward(&head, j->dq ? j->dq + qoff : NULL, j->dk ? j->dk + kvoff : NULL,
                          j->dv ? j->dv + kvoff : NULL, j->datt + poff, j->dout + qoff, j->q + qoff,
                          j->k + kvoff, j->v + kvoff, j->p + poff, backward_rows, (void *)d);
    }
}

void cpu_attention_backward(float *dq, float *dk, float *dv, float *datt, const float *dout,
                            const float *q, const float *k, const float *v, const float *att,
                            const mt_attn_desc *d)
{
    heads_job j = {.dq = dq,
                   .dk = dk,
                   .dv = dv,
                   .datt = datt,
                   .dout = dout,
                   .q = q,
                   .k = k,
                   .v = v,
                   .p = att,
                   .d = d};
    size_t work = (size_t)d->B * d->H * d->Tq * d->Tk * d->Dh;
    cpu_pool_for(cpu_fork(work, 65536), (size_t)d->B * d->H, heads_backward, &j);
}
