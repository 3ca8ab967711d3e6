/* See fenced_backend.h. A backend pointer is the host address with bit 62 set: never a
 * canonical x86-64 / AArch64 user address, so a stray host read or write faults at once, while
 * pointer arithmetic on it (sub-buffers, row offsets) keeps the tag. */
#include "fenced_backend.h"

#include <stdio.h>
#include <stdlib.h>

#define TAG ((uintptr_t)1 << 62)

static const mt_backend *cpu;

/* The host address behind backend pointer p; aborts naming the operation and argument when p
 * is not backend memory (a host pointer the caller forgot to upload). NULL stays NULL. */
static void *host_of(const void *p, const char *op, const char *arg)
{
    if (!p) return NULL;
    if (!((uintptr_t)p & TAG)) {
        fprintf(stderr,
                "fenced backend: %s got a host pointer %p for '%s' where backend "
                "memory belongs\n",
                op, p, arg);
        abort();
    }
    return (void *)((uintptr_t)p & ~TAG);
}

#define H(p) host_of((p), __func__, #p)

/* ---- recorded steps (mtlab/backend.h graph_begin ...): a tape of the operations a decoding
 * step that replays uses (the pure Mamba's: the engine's position_free_steps), their arguments
 * frozen when recorded and replayed through the same wrappers. Any other operation while
 * recording is refused (it does not run) and fails the recording, as an operation CUDA cannot
 * capture fails a capture. So the engine's recording, replay, invalidation and fallback
 * (engine/models/decode_state.c) are checked bit for bit on every machine. */
typedef struct {
    int ta, tb, m, n, k;
    float alpha;
    const float *a;
    int lda;
    const float *b;
    int ldb;
    float beta;
    float *c;
    int ldc;
} rec_gemm;
typedef struct {
    float *out;
    const float *a, *b;
    size_t n;
} rec_add;
typedef struct {
    mt_act act;
    float *out;
    const float *x;
    size_t n;
} rec_act;
typedef struct {
    float *out;
    const float *value, *gate;
    size_t n;
} rec_gate;
typedef struct {
    float *out;
    const float *bias;
    size_t rows;
    int cols;
} rec_bias;
typedef struct {
    float *dst;
    int dst_ld;
    const float *src;
    int src_ld;
    size_t rows;
    int cols;
} rec_copy2d;
typedef struct {
    float *out, *rstd;
    const float *x, *weight;
    size_t N;
    int C;
    float eps;
} rec_rms;
typedef struct {
    float *out, *mean, *rstd;
    const float *x, *weight, *bias;
    size_t N;
    int C;
    float eps;
} rec_ln;
typedef struct {
    float *out;
    const int32_t *ids;
    const float *table;
    size_t N;
    int C;
    float scale;
} rec_embed;
typedef struct {
    float *out, *state;
    const float *x, *w, *bias;
    int B, C, K;
} rec_conv;
typedef struct {
    float *y, *h;
    mt_scan_args a;
} rec_scan;

typedef enum {
    R_GEMM,
    R_ADD,
    R_ACT,
    R_GATE,
    R_BIAS,
    R_COPY2D,
    R_RMS,
    R_LN,
    R_EMBED,
    R_CONV,
    R_SCAN
} rec_kind;
typedef struct {
    rec_kind kind;
    union {
        rec_gemm gemm;
        rec_add add;
        rec_act act;
        rec_gate gate;
        rec_bias bias;
        rec_copy2d copy2d;
        rec_rms rms;
        rec_ln ln;
        rec_embed embed;
        rec_conv conv;
        rec_scan scan;
    } u;
} rec_op;

typedef struct {
    rec_op *ops;
    int n, cap;
} rec_tape;

static rec_tape *recording; /* the tape being recorded, NULL when none */
static int recording_refused, fail_recordings;
static fenced_graph_counts counts;

static rec_op *rec_push(rec_kind kind)
{
    rec_tape *t = recording;
    if (t->n == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 64;
        t->ops = realloc(t->ops, (size_t)t->cap * sizeof *t->ops);
        if (!t->ops) abort();
    }
    t->ops[t->n].kind = kind;
    return &t->ops[t->n++];
}

/* While recording, an operation that is not taped: it does not run, and the recording fails. */
static int refused(void)
{
    if (!recording) return 0;
    recording_refused = 1;
    return 1;
}

/* While recording: tape the call (the fields of rec type T, in order) instead of running it. */
#define RECORD(kind, field, T, ...)                 \
    if (recording) {                                \
        rec_push(kind)->u.field = (T){__VA_ARGS__}; \
        return;                                     \
    }

static void *fb_alloc(size_t bytes)
{
    if (refused()) return NULL;
    void *p = cpu->alloc(bytes);
    return p ? (void *)((uintptr_t)p | TAG) : NULL;
}
static void fb_free(void *p)
{
    if (refused()) return;
    cpu->free(H(p));
}
static void fb_upload(void *dst, const void *host_src, size_t bytes)
{
    if (refused()) return;
    cpu->upload(H(dst), host_src, bytes);
}
static void fb_download(void *host_dst, const void *src, size_t bytes)
{
    if (refused()) return;
    cpu->download(host_dst, H(src), bytes);
}
static void fb_copy(void *dst, const void *src, size_t bytes)
{
    if (refused()) return;
    cpu->copy(H(dst), H(src), bytes);
}
static void fb_memzero(void *p, size_t bytes)
{
    if (refused()) return;
    cpu->memzero(H(p), bytes);
}
static void fb_sync(void)
{
    if (refused()) return;
    cpu->sync();
}

static void fb_gemm(int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
                    const float *b, int ldb, float beta, float *c, int ldc)
{
    RECORD(R_GEMM, gemm, rec_gemm, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    cpu->gemm(ta, tb, m, n, k, alpha, H(a), lda, H(b), ldb, beta, H(c), ldc);
}
static void fb_gemm_batched(int ta, int tb, int m, int n, int k, float alpha, const float *a,
                            int lda, size_t sa, const float *b, int ldb, size_t sb, float beta,
                            float *c, int ldc, size_t sc, int batch)
{
    if (refused()) return;
    cpu->gemm_batched(ta, tb, m, n, k, alpha, H(a), lda, sa, H(b), ldb, sb, beta, H(c), ldc, sc,
                      batch);
}

static void fb_fill(float *x, size_t n, float v)
{
    if (refused()) return;
    cpu->fill(H(x), n, v);
}
static void fb_scale(float *x, size_t n, float s)
{
    if (refused()) return;
    cpu->scale(H(x), n, s);
}
static void fb_axpy(float *y, const float *x, size_t n, float a)
{
    if (refused()) return;
    cpu->axpy(H(y), H(x), n, a);
}
static void fb_add(float *out, const float *a, const float *b, size_t n)
{
    RECORD(R_ADD, add, rec_add, out, a, b, n);
    cpu->add(H(out), H(a), H(b), n);
}
static void fb_mul(float *out, const float *a, const float *b, size_t n)
{
    if (refused()) return;
    cpu->mul(H(out), H(a), H(b), n);
}
static void fb_mul_backward(float *da, float *db, const float *dout, const float *a, const float *b,
                            size_t n)
{
    if (refused()) return;
    cpu->mul_backward(H(da), H(db), H(dout), H(a), H(b), n);
}
static void fb_act_forward(mt_act act, float *out, const float *x, size_t n)
{
    RECORD(R_ACT, act, rec_act, act, out, x, n);
    cpu->act_forward(act, H(out), H(x), n);
}
static void fb_act_backward(mt_act act, float *dx, const float *dout, const float *x, size_t n)
{
    if (refused()) return;
    cpu->act_backward(act, H(dx), H(dout), H(x), n);
}
static void fb_gate_forward(float *out, const float *value, const float *gate, size_t n)
{
    RECORD(R_GATE, gate, rec_gate, out, value, gate, n);
    cpu->gate_forward(H(out), H(value), H(gate), n);
}
static void fb_gate_backward(float *dvalue, float *dgate, const float *dout, const float *value,
                             const float *gate, size_t n)
{
    if (refused()) return;
    cpu->gate_backward(H(dvalue), H(dgate), H(dout), H(value), H(gate), n);
}
static void fb_mask_rows(float *x, const uint8_t *mask, size_t rows, int cols)
{
    if (refused()) return;
    cpu->mask_rows(H(x), H(mask), rows, cols);
}
static void fb_bias_add(float *out, const float *bias, size_t rows, int cols)
{
    RECORD(R_BIAS, bias, rec_bias, out, bias, rows, cols);
    cpu->bias_add(H(out), H(bias), rows, cols);
}
static void fb_bias_backward(float *dbias, const float *dout, size_t rows, int cols)
{
    if (refused()) return;
    cpu->bias_backward(H(dbias), H(dout), rows, cols);
}
static void fb_copy2d(float *dst, int dst_ld, const float *src, int src_ld, size_t rows, int cols)
{
    RECORD(R_COPY2D, copy2d, rec_copy2d, dst, dst_ld, src, src_ld, rows, cols);
    cpu->copy2d(H(dst), dst_ld, H(src), src_ld, rows, cols);
}
static void fb_index_select(float *out, const float *src, size_t src_ld, const int32_t *idx,
                            int n_idx, size_t cols)
{
    if (refused()) return;
    cpu->index_select(H(out), H(src), src_ld, H(idx), n_idx, cols);
}
static double fb_sum(const float *x, size_t n)
{
    if (refused()) return 0.0;
    return cpu->sum(H(x), n);
}
static double fb_sum_squares(const float *x, size_t n)
{
    if (refused()) return 0.0;
    return cpu->sum_squares(H(x), n);
}
static void fb_argmax_rows(int32_t *out, const float *x, size_t rows, int cols)
{
    if (refused()) return;
    cpu->argmax_rows(H(out), H(x), rows, cols);
}
static void fb_softmax(float *out, const float *x, size_t rows, int cols)
{
    if (refused()) return;
    cpu->softmax(H(out), H(x), rows, cols);
}
static void fb_log_softmax(float *out, const float *x, size_t rows, int cols)
{
    if (refused()) return;
    cpu->log_softmax(H(out), H(x), rows, cols);
}

static void fb_layernorm_forward(float *out, float *mean, float *rstd, const float *x,
                                 const float *weight, const float *bias, size_t N, int C, float eps)
{
    RECORD(R_LN, ln, rec_ln, out, mean, rstd, x, weight, bias, N, C, eps);
    cpu->layernorm_forward(H(out), H(mean), H(rstd), H(x), H(weight), H(bias), N, C, eps);
}
static void fb_layernorm_backward(float *dx, float *dweight, float *dbias, const float *dout,
                                  const float *x, const float *weight, const float *mean,
                                  const float *rstd, size_t N, int C)
{
    if (refused()) return;
    cpu->layernorm_backward(H(dx), H(dweight), H(dbias), H(dout), H(x), H(weight), H(mean), H(rstd),
                            N, C);
}
static void fb_rmsnorm_forward(float *out, float *rstd, const float *x, const float *weight,
                               size_t N, int C, float eps)
{
    RECORD(R_RMS, rms, rec_rms, out, rstd, x, weight, N, C, eps);
    cpu->rmsnorm_forward(H(out), H(rstd), H(x), H(weight), N, C, eps);
}
static void fb_rmsnorm_backward(float *dx, float *dweight, const float *dout, const float *x,
                                const float *weight, const float *rstd, size_t N, int C)
{
    if (refused()) return;
    cpu->rmsnorm_backward(H(dx), H(dweight), H(dout), H(x), H(weight), H(rstd), N, C);
}

static void fb_embedding_forward(float *out, const int32_t *ids, const float *table, size_t N,
                                 int C, float scale)
{
    RECORD(R_EMBED, embed, rec_embed, out, ids, table, N, C, scale);
    cpu->embedding_forward(H(out), H(ids), H(table), N, C, scale);
}
static void fb_embedding_backward(float *dtable, const float *dout, const int32_t *ids, size_t N,
                                  int C, float scale)
{
    if (refused()) return;
    cpu->embedding_backward(H(dtable), H(dout), H(ids), N, C, scale);
}
static void fb_sinusoid_fill(float *table, int P, int C)
{
    if (refused()) return;
    cpu->sinusoid_fill(H(table), P, C);
}
static void fb_positions_add(float *out, const float *table, int B, int T, int C, int pos0)
{
    if (refused()) return;
    cpu->positions_add(H(out), H(table), B, T, C, pos0);
}
static void fb_positions_backward(float *dtable, const float *dout, int B, int T, int C, int pos0)
{
    if (refused()) return;
    cpu->positions_backward(H(dtable), H(dout), B, T, C, pos0);
}
static void fb_rope_forward(float *x, const int32_t *pos, int B, int T, int Hh, int Dh, int rot_dim,
                            int pos0, const float *inv_freq, int interleaved)
{
    if (refused()) return;
    cpu->rope_forward(H(x), H(pos), B, T, Hh, Dh, rot_dim, pos0, H(inv_freq), interleaved);
}
static void fb_rope_backward(float *dx, const int32_t *pos, int B, int T, int Hh, int Dh,
                             int rot_dim, int pos0, const float *inv_freq, int interleaved)
{
    if (refused()) return;
    cpu->rope_backward(H(dx), H(pos), B, T, Hh, Dh, rot_dim, pos0, H(inv_freq), interleaved);
}

/* descriptors are host structs; the masks they point at are backend memory */
static mt_attn_desc attn_host(const mt_attn_desc *d, const char *op)
{
    mt_attn_desc h = *d;
    h.key_mask = host_of(d->key_mask, op, "d->key_mask");
    return h;
}
static void fb_attention_forward(float *out, float *att, const float *q, const float *k,
                                 const float *v, const mt_attn_desc *d)
{
    if (refused()) return;
    mt_attn_desc h = attn_host(d, __func__);
    cpu->attention_forward(H(out), H(att), H(q), H(k), H(v), &h);
}
static void fb_attention_backward(float *dq, float *dk, float *dv, float *datt, const float *dout,
                                  const float *q, const float *k, const float *v, const float *att,
                                  const mt_attn_desc *d)
{
    if (refused()) return;
    mt_attn_desc h = attn_host(d, __func__);
    cpu->attention_backward(H(dq), H(dk), H(dv), H(datt), H(dout), H(q), H(k), H(v), H(att), &h);
}

static void fb_conv1d_forward(float *out, const float *x, const float *w, const float *bias, int B,
                              int T, int C, int K)
{
    if (refused()) return;
    cpu->conv1d_forward(H(out), H(x), H(w), H(bias), B, T, C, K);
}
static void fb_conv1d_backward(float *dx, float *dw, float *dbias, const float *dout,
                               const float *x, const float *w, int B, int T, int C, int K)
{
    if (refused()) return;
    cpu->conv1d_backward(H(dx), H(dw), H(dbias), H(dout), H(x), H(w), B, T, C, K);
}
static void fb_conv1d_step(float *out, float *state, const float *x, const float *w,
                           const float *bias, int B, int C, int K)
{
    RECORD(R_CONV, conv, rec_conv, out, state, x, w, bias, B, C, K);
    cpu->conv1d_step(H(out), H(state), H(x), H(w), H(bias), B, C, K);
}
static void fb_conv1d_state_fill(float *state, const float *x, int B, int T, int C, int K)
{
    if (refused()) return;
    cpu->conv1d_state_fill(H(state), H(x), B, T, C, K);
}

static mt_scan_args scan_host(const mt_scan_args *a, const char *op)
{
    mt_scan_args h = *a;
    h.u = host_of(a->u, op, "a->u");
    h.dt = host_of(a->dt, op, "a->dt");
    h.A_log = host_of(a->A_log, op, "a->A_log");
    h.Bm = host_of(a->Bm, op, "a->Bm");
    h.Cm = host_of(a->Cm, op, "a->Cm");
    h.Dskip = host_of(a->Dskip, op, "a->Dskip");
    h.dt_bias = host_of(a->dt_bias, op, "a->dt_bias");
    return h;
}
static void fb_scan_forward(float *y, float *h_last, const mt_scan_args *a)
{
    if (refused()) return;
    mt_scan_args h = scan_host(a, __func__);
    cpu->scan_forward(H(y), H(h_last), &h);
}
static void fb_scan_backward(const mt_scan_grads *g, const float *dy, const mt_scan_args *a)
{
    if (refused()) return;
    mt_scan_args h = scan_host(a, __func__);
    mt_scan_grads hg = {
        .du = H(g->du),
        .ddt = H(g->ddt),
        .dA_log = H(g->dA_log),
        .dBm = H(g->dBm),
        .dCm = H(g->dCm),
        .dDskip = H(g->dDskip),
        .ddt_bias = H(g->ddt_bias),
    };
    cpu->scan_backward(&hg, H(dy), &h);
}
static void fb_scan_step(float *y, float *hs, const mt_scan_args *a)
{
    RECORD(R_SCAN, scan, rec_scan, y, hs, *a);
    mt_scan_args h = scan_host(a, __func__);
    cpu->scan_step(H(y), H(hs), &h);
}

/* gamma is host data by contract; the key mask is backend memory */
static mt_retention_desc ret_host(const mt_retention_desc *d, const char *op)
{
    mt_retention_desc h = *d;
    h.key_mask = host_of(d->key_mask, op, "d->key_mask");
    return h;
}
static void fb_retention_forward(float *out, float *att, float *r, const float *q, const float *k,
                                 const float *v, const mt_retention_desc *d)
{
    if (refused()) return;
    mt_retention_desc h = ret_host(d, __func__);
    cpu->retention_forward(H(out), H(att), H(r), H(q), H(k), H(v), &h);
}
static void fb_retention_backward(float *dq, float *dk, float *dv, float *datt, const float *dout,
                                  const float *q, const float *k, const float *v, const float *att,
                                  const float *r, const mt_retention_desc *d)
{
    if (refused()) return;
    mt_retention_desc h = ret_host(d, __func__);
    cpu->retention_backward(H(dq), H(dk), H(dv), H(datt), H(dout), H(q), H(k), H(v), H(att), H(r),
                            &h);
}
static void fb_retention_state_fill(float *kv, float *s, const float *k, const float *v,
                                    const mt_retention_desc *d)
{
    if (refused()) return;
    mt_retention_desc h = ret_host(d, __func__);
    cpu->retention_state_fill(H(kv), H(s), H(k), H(v), &h);
}
static void fb_retention_step(float *out, float *kv, float *s, const float *q, const float *k,
                              const float *v, const mt_retention_desc *d)
{
    if (refused()) return;
    mt_retention_desc h = ret_host(d, __func__);
    cpu->retention_step(H(out), H(kv), H(s), H(q), H(k), H(v), &h);
}

static void fb_cross_entropy_forward(float *losses, float *lse, const float *logits,
                                     const int32_t *targets, size_t N, int V, int ignore_index,
                                     float smoothing)
{
    if (refused()) return;
    cpu->cross_entropy_forward(H(losses), H(lse), H(logits), H(targets), N, V, ignore_index,
                               smoothing);
}
static void fb_cross_entropy_backward(float *dlogits, const float *logits, const float *lse,
                                      const int32_t *targets, size_t N, int V, int ignore_index,
                                      float smoothing, float scale)
{
    if (refused()) return;
    cpu->cross_entropy_backward(H(dlogits), H(logits), H(lse), H(targets), N, V, ignore_index,
                                smoothing, scale);
}
static void fb_cross_entropy_fused(float *losses, float *logits, const int32_t *targets, size_t N,
                                   int V, int ignore_index, float smoothing, float scale)
{
    if (refused()) return;
    cpu->cross_entropy_fused(H(losses), H(logits), H(targets), N, V, ignore_index, smoothing,
                             scale);
}
static void fb_dropout_forward(float *out, const float *x, size_t rows, size_t row_len,
                               const mt_dropout *d)
{
    if (refused()) return;
    cpu->dropout_forward(H(out), H(x), rows, row_len, d);
}
static void fb_dropout_backward(float *dx, const float *dout, size_t rows, size_t row_len,
                                const mt_dropout *d)
{
    if (refused()) return;
    cpu->dropout_backward(H(dx), H(dout), rows, row_len, d);
}
static void fb_adamw_step(float *params, const float *grads, float *m, float *v,
                          const uint8_t *decay_mask, size_t n, const mt_adamw_hparams *h, int step)
{
    if (refused()) return;
    cpu->adamw_step(H(params), H(grads), H(m), H(v), H(decay_mask), n, h, step);
}

static int fb_graph_begin(void)
{
    if (recording) return -1;
    recording = calloc(1, sizeof *recording);
    if (!recording) abort();
    recording_refused = 0;
    return 0;
}

static void fb_graph_free(void *graph)
{
    rec_tape *t = graph;
    if (t) free(t->ops);
    free(t);
}

static void *fb_graph_end(void)
{
    rec_tape *t = recording;
    recording = NULL;
    if (!t || recording_refused || fail_recordings) {
        counts.failed++;
        fb_graph_free(t);
        return NULL;
    }
    counts.recorded++;
    return t;
}

static void fb_graph_run(void *graph)
{
    const rec_tape *t = graph;
    counts.replayed++;
    for (int i = 0; i < t->n; i++) {
        const rec_op *o = &t->ops[i];
        switch (o->kind) {
        case R_GEMM: {
            const rec_gemm *g = &o->u.gemm;
            fb_gemm(g->ta, g->tb, g->m, g->n, g->k, g->alpha, g->a, g->lda, g->b, g->ldb, g->beta,
                    g->c, g->ldc);
            break;
        }
        case R_ADD: fb_add(o->u.add.out, o->u.add.a, o->u.add.b, o->u.add.n); break;
        case R_ACT: fb_act_forward(o->u.act.act, o->u.act.out, o->u.act.x, o->u.act.n); break;
        case R_GATE:
            fb_gate_forward(o->u.gate.out, o->u.gate.value, o->u.gate.gate, o->u.gate.n);
            break;
        case R_BIAS:
            fb_bias_add(o->u.bias.out, o->u.bias.bias, o->u.bias.rows, o->u.bias.cols);
            break;
        case R_COPY2D: {
            const rec_copy2d *c = &o->u.copy2d;
            fb_copy2d(c->dst, c->dst_ld, c->src, c->src_ld, c->rows, c->cols);
            break;
        }
        case R_RMS: {
            const rec_rms *r = &o->u.rms;
            fb_rmsnorm_forward(r->out, r->rstd, r->x, r->weight, r->N, r->C, r->eps);
            break;
        }
        case R_LN: {
            const rec_ln *l = &o->u.ln;
            fb_layernorm_forward(l->out, l->mean, l->rstd, l->x, l->weight, l->bias, l->N, l->C,
                                 l->eps);
            break;
        }
        case R_EMBED: {
            const rec_embed *e = &o->u.embed;
            fb_embedding_forward(e->out, e->ids, e->table, e->N, e->C, e->scale);
            break;
        }
        case R_CONV: {
            const rec_conv *c = &o->u.conv;
            fb_conv1d_step(c->out, c->state, c->x, c->w, c->bias, c->B, c->C, c->K);
            break;
        }
        case R_SCAN: fb_scan_step(o->u.scan.y, o->u.scan.h, &o->u.scan.a); break;
        }
    }
}

static const mt_backend fenced = {
    .name = "fenced",
    .host_memory = 0,
    .alloc = fb_alloc,
    .free = fb_free,
    .upload = fb_upload,
    .download = fb_download,
    .copy = fb_copy,
    .memzero = fb_memzero,
    .sync = fb_sync,
    .gemm = fb_gemm,
    .gemm_batched = fb_gemm_batched,
    .fill = fb_fill,
    .scale = fb_scale,
    .axpy = fb_axpy,
    .add = fb_add,
    .mul = fb_mul,
    .mul_backward = fb_mul_backward,
    .act_forward = fb_act_forward,
    .act_backward = fb_act_backward,
    .gate_forward = fb_gate_forward,
    .gate_backward = fb_gate_backward,
    .mask_rows = fb_mask_rows,
    .bias_add = fb_bias_add,
    .bias_backward = fb_bias_backward,
    .copy2d = fb_copy2d,
    .index_select = fb_index_select,
    .sum = fb_sum,
    .sum_squares = fb_sum_squares,
    .argmax_rows = fb_argmax_rows,
    .softmax = fb_softmax,
    .log_softmax = fb_log_softmax,
    .layernorm_forward = fb_layernorm_forward,
    .layernorm_backward = fb_layernorm_backward,
    .rmsnorm_forward = fb_rmsnorm_forward,
    .rmsnorm_backward = fb_rmsnorm_backward,
    .embedding_forward = fb_embedding_forward,
    .embedding_backward = fb_embedding_backward,
    .sinusoid_fill = fb_sinusoid_fill,
    .positions_add = fb_positions_add,
    .positions_backward = fb_positions_backward,
    .rope_forward = fb_rope_forward,
    .rope_backward = fb_rope_backward,
    .attention_forward = fb_attention_forward,
    .attention_backward = fb_attention_backward,
    .conv1d_forward = fb_conv1d_forward,
    .conv1d_backward = fb_conv1d_backward,
    .conv1d_step = fb_conv1d_step,
    .conv1d_state_fill = fb_conv1d_state_fill,
    .scan_forward = fb_scan_forward,
    .scan_backward = fb_scan_backward,
    .scan_step = fb_scan_step,
    .retention_forward = fb_retention_forward,
    .retention_backward = fb_retention_backward,
    .retention_state_fill = fb_retention_state_fill,
    .retention_step = fb_retention_step,
    .cross_entropy_forward = fb_cross_entropy_forward,
    .cross_entropy_backward = fb_cross_entropy_backward,
    .cross_entropy_fused = fb_cross_entropy_fused,
    .dropout_forward = fb_dropout_forward,
    .dropout_backward = fb_dropout_backward,
    .adamw_step = fb_adamw_step,
    .graph_begin = fb_graph_begin,
    .graph_end = fb_graph_end,
    .graph_run = fb_graph_run,
    .graph_free = fb_graph_free,
};

const mt_backend *fenced_backend(void)
{
    cpu = mt_backend_cpu();
    return &fenced;
}

fenced_graph_counts fenced_graph_counts_take(void)
{
    fenced_graph_counts c = counts;
    counts = (fenced_graph_counts){0};
    return c;
}

void fenced_fail_recordings(int on) { fail_recordings = on; }
