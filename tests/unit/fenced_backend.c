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
        fprintf(stderr, "fenced backend: %s got a host pointer %p for '%s' where backend "
                        "memory belongs\n", op, p, arg);
        abort();
    }
    return (void *)((uintptr_t)p & ~TAG);
}

#define H(p) host_of((p), __func__, #p)

static void *fb_alloc(size_t bytes)
{
    void *p = cpu->alloc(bytes);
    return p ? (void *)((uintptr_t)p | TAG) : NULL;
}
static void fb_free(void *p) { cpu->free(H(p)); }
static void fb_upload(void *dst, const void *host_src, size_t bytes) { cpu->upload(H(dst), host_src, bytes); }
static void fb_download(void *host_dst, const void *src, size_t bytes) { cpu->download(host_dst, H(src), bytes); }
static void fb_copy(void *dst, const void *src, size_t bytes) { cpu->copy(H(dst), H(src), bytes); }
static void fb_memzero(void *p, size_t bytes) { cpu->memzero(H(p), bytes); }
static void fb_sync(void) { cpu->sync(); }

static void fb_gemm(int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
                    const float *b, int ldb, float beta, float *c, int ldc)
{
    cpu->gemm(ta, tb, m, n, k, alpha, H(a), lda, H(b), ldb, beta, H(c), ldc);
}
static void fb_gemm_batched(int ta, int tb, int m, int n, int k, float alpha, const float *a,
                            int lda, size_t sa, const float *b, int ldb, size_t sb, float beta,
                            float *c, int ldc, size_t sc, int batch)
{
    cpu->gemm_batched(ta, tb, m, n, k, alpha, H(a), lda, sa, H(b), ldb, sb, beta, H(c), ldc, sc, batch);
}

static void fb_fill(float *x, size_t n, float v) { cpu->fill(H(x), n, v); }
static void fb_scale(float *x, size_t n, float s) { cpu->scale(H(x), n, s); }
static void fb_axpy(float *y, const float *x, size_t n, float a) { cpu->axpy(H(y), H(x), n, a); }
static void fb_add(float *out, const float *a, const float *b, size_t n) { cpu->add(H(out), H(a), H(b), n); }
static void fb_mul(float *out, const float *a, const float *b, size_t n) { cpu->mul(H(out), H(a), H(b), n); }
static void fb_mul_backward(float *da, float *db, const float *dout, const float *a, const float *b, size_t n)
{
    cpu->mul_backward(H(da), H(db), H(dout), H(a), H(b), n);
}
static void fb_act_forward(mt_act act, float *out, const float *x, size_t n) { cpu->act_forward(act, H(out), H(x), n); }
static void fb_act_backward(mt_act act, float *dx, const float *dout, const float *x, size_t n)
{
    cpu->act_backward(act, H(dx), H(dout), H(x), n);
}
static void fb_gate_forward(float *out, const float *value, const float *gate, size_t n)
{
    cpu->gate_forward(H(out), H(value), H(gate), n);
}
static void fb_gate_backward(float *dvalue, float *dgate, const float *dout, const float *value,
                             const float *gate, size_t n)
{
    cpu->gate_backward(H(dvalue), H(dgate), H(dout), H(value), H(gate), n);
}
static void fb_mask_rows(float *x, const uint8_t *mask, size_t rows, int cols) { cpu->mask_rows(H(x), H(mask), rows, cols); }
static void fb_bias_add(float *out, const float *bias, size_t rows, int cols) { cpu->bias_add(H(out), H(bias), rows, cols); }
static void fb_bias_backward(float *dbias, const float *dout, size_t rows, int cols)
{
    cpu->bias_backward(H(dbias), H(dout), rows, cols);
}
static void fb_copy2d(float *dst, int dst_ld, const float *src, int src_ld, size_t rows, int cols)
{
    cpu->copy2d(H(dst), dst_ld, H(src), src_ld, rows, cols);
}
static void fb_index_select(float *out, const float *src, const int32_t *idx, int n_idx, size_t row_elems)
{
    cpu->index_select(H(out), H(src), H(idx), n_idx, row_elems);
}
static double fb_sum(const float *x, size_t n) { return cpu->sum(H(x), n); }
static double fb_sum_squares(const float *x, size_t n) { return cpu->sum_squares(H(x), n); }
static void fb_argmax_rows(int32_t *out, const float *x, size_t rows, int cols) { cpu->argmax_rows(H(out), H(x), rows, cols); }
static void fb_softmax(float *out, const float *x, size_t rows, int cols) { cpu->softmax(H(out), H(x), rows, cols); }
static void fb_log_softmax(float *out, const float *x, size_t rows, int cols) { cpu->log_softmax(H(out), H(x), rows, cols); }

static void fb_layernorm_forward(float *out, float *mean, float *rstd, const float *x, const float *weight,
                                 const float *bias, size_t N, int C, float eps)
{
    cpu->layernorm_forward(H(out), H(mean), H(rstd), H(x), H(weight), H(bias), N, C, eps);
}
static void fb_layernorm_backward(float *dx, float *dweight, float *dbias, const float *dout, const float *x,
                                  const float *weight, const float *mean, const float *rstd, size_t N, int C)
{
    cpu->layernorm_backward(H(dx), H(dweight), H(dbias), H(dout), H(x), H(weight), H(mean), H(rstd), N, C);
}
static void fb_rmsnorm_forward(float *out, float *rstd, const float *x, const float *weight, size_t N, int C,
                               float eps)
{
    cpu->rmsnorm_forward(H(out), H(rstd), H(x), H(weight), N, C, eps);
}
static void fb_rmsnorm_backward(float *dx, float *dweight, const float *dout, const float *x,
                                const float *weight, const float *rstd, size_t N, int C)
{
    cpu->rmsnorm_backward(H(dx), H(dweight), H(dout), H(x), H(weight), H(rstd), N, C);
}

static void fb_embedding_forward(float *out, const int32_t *ids, const float *table, size_t N, int C, float scale)
{
    cpu->embedding_forward(H(out), H(ids), H(table), N, C, scale);
}
static void fb_embedding_backward(float *dtable, const float *dout, const int32_t *ids, size_t N, int C,
                                  float scale)
{
    cpu->embedding_backward(H(dtable), H(dout), H(ids), N, C, scale);
}
static void fb_sinusoid_fill(float *table, int P, int C) { cpu->sinusoid_fill(H(table), P, C); }
static void fb_positions_add(float *out, const float *table, int B, int T, int C, int pos0)
{
    cpu->positions_add(H(out), H(table), B, T, C, pos0);
}
static void fb_positions_backward(float *dtable, const float *dout, int B, int T, int C, int pos0)
{
    cpu->positions_backward(H(dtable), H(dout), B, T, C, pos0);
}
static void fb_rope_forward(float *x, const int32_t *pos, int B, int T, int Hh, int Dh, int rot_dim, int pos0,
                            const float *inv_freq, int interleaved)
{
    cpu->rope_forward(H(x), H(pos), B, T, Hh, Dh, rot_dim, pos0, H(inv_freq), interleaved);
}
static void fb_rope_backward(float *dx, const int32_t *pos, int B, int T, int Hh, int Dh, int rot_dim,
                             int pos0, const float *inv_freq, int interleaved)
{
    cpu->rope_backward(H(dx), H(pos), B, T, Hh, Dh, rot_dim, pos0, H(inv_freq), interleaved);
}

/* descriptors are host structs; the masks they point at are backend memory */
static mt_attn_desc attn_host(const mt_attn_desc *d, const char *op)
{
    mt_attn_desc h = *d;
    h.key_mask = host_of(d->key_mask, op, "d->key_mask");
    return h;
}
static void fb_attention_forward(float *out, float *att, const float *q, const float *k, const float *v,
                                 const mt_attn_desc *d)
{
    mt_attn_desc h = attn_host(d, __func__);
    cpu->attention_forward(H(out), H(att), H(q), H(k), H(v), &h);
}
static void fb_attention_backward(float *dq, float *dk, float *dv, float *datt, const float *dout,
                                  const float *q, const float *k, const float *v, const float *att,
                                  const mt_attn_desc *d)
{
    mt_attn_desc h = attn_host(d, __func__);
    cpu->attention_backward(H(dq), H(dk), H(dv), H(datt), H(dout), H(q), H(k), H(v), H(att), &h);
}

static void fb_conv1d_forward(float *out, const float *x, const float *w, const float *bias, int B, int T,
                              int C, int K)
{
    cpu->conv1d_forward(H(out), H(x), H(w), H(bias), B, T, C, K);
}
static void fb_conv1d_backward(float *dx, float *dw, float *dbias, const float *dout, const float *x,
                               const float *w, int B, int T, int C, int K)
{
    cpu->conv1d_backward(H(dx), H(dw), H(dbias), H(dout), H(x), H(w), B, T, C, K);
}
static void fb_conv1d_step(float *out, float *state, const float *x, const float *w, const float *bias, int B,
                           int C, int K)
{
    cpu->conv1d_step(H(out), H(state), H(x), H(w), H(bias), B, C, K);
}
static void fb_conv1d_state_fill(float *state, const float *x, int B, int T, int C, int K)
{
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
    mt_scan_args h = scan_host(a, __func__);
    cpu->scan_forward(H(y), H(h_last), &h);
}
static void fb_scan_backward(const mt_scan_grads *g, const float *dy, const mt_scan_args *a)
{
    mt_scan_args h = scan_host(a, __func__);
    mt_scan_grads hg = {
        .du = H(g->du), .ddt = H(g->ddt), .dA_log = H(g->dA_log), .dBm = H(g->dBm),
        .dCm = H(g->dCm), .dDskip = H(g->dDskip), .ddt_bias = H(g->ddt_bias),
    };
    cpu->scan_backward(&hg, H(dy), &h);
}
static void fb_scan_step(float *y, float *hs, const mt_scan_args *a)
{
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
    mt_retention_desc h = ret_host(d, __func__);
    cpu->retention_forward(H(out), H(att), H(r), H(q), H(k), H(v), &h);
}
static void fb_retention_backward(float *dq, float *dk, float *dv, float *datt, const float *dout,
                                  const float *q, const float *k, const float *v, const float *att,
                                  const float *r, const mt_retention_desc *d)
{
    mt_retention_desc h = ret_host(d, __func__);
    cpu->retention_backward(H(dq), H(dk), H(dv), H(datt), H(dout), H(q), H(k), H(v), H(att), H(r), &h);
}
static void fb_retention_state_fill(float *kv, float *s, const float *k, const float *v,
                                    const mt_retention_desc *d)
{
    mt_retention_desc h = ret_host(d, __func__);
    cpu->retention_state_fill(H(kv), H(s), H(k), H(v), &h);
}
static void fb_retention_step(float *out, float *kv, float *s, const float *q, const float *k,
                              const float *v, const mt_retention_desc *d)
{
    mt_retention_desc h = ret_host(d, __func__);
    cpu->retention_step(H(out), H(kv), H(s), H(q), H(k), H(v), &h);
}

static void fb_cross_entropy_forward(float *losses, float *lse, const float *logits, const int32_t *targets,
                                     size_t N, int V, int ignore_index, float smoothing)
{
    cpu->cross_entropy_forward(H(losses), H(lse), H(logits), H(targets), N, V, ignore_index, smoothing);
}
static void fb_cross_entropy_backward(float *dlogits, const float *logits, const float *lse,
                                      const int32_t *targets, size_t N, int V, int ignore_index,
                                      float smoothing, float scale)
{
    cpu->cross_entropy_backward(H(dlogits), H(logits), H(lse), H(targets), N, V, ignore_index, smoothing, scale);
}
static void fb_cross_entropy_fused(float *losses, float *logits, const int32_t *targets, size_t N, int V,
                                   int ignore_index, float smoothing, float scale)
{
    cpu->cross_entropy_fused(H(losses), H(logits), H(targets), N, V, ignore_index, smoothing, scale);
}
static void fb_dropout_forward(float *out, const float *x, size_t n, float p, uint64_t seed, uint64_t step,
                               uint32_t site)
{
    cpu->dropout_forward(H(out), H(x), n, p, seed, step, site);
}
static void fb_dropout_backward(float *dx, const float *dout, size_t n, float p, uint64_t seed, uint64_t step,
                                uint32_t site)
{
    cpu->dropout_backward(H(dx), H(dout), n, p, seed, step, site);
}
static void fb_adamw_step(float *params, const float *grads, float *m, float *v, const uint8_t *decay_mask,
                          size_t n, const mt_adamw_hparams *h, int step)
{
    cpu->adamw_step(H(params), H(grads), H(m), H(v), H(decay_mask), n, h, step);
}

static const mt_backend fenced = {
    .name = "fenced", .host_memory = 0,
    .alloc = fb_alloc, .free = fb_free, .upload = fb_upload, .download = fb_download,
    .copy = fb_copy, .memzero = fb_memzero, .sync = fb_sync,
    .gemm = fb_gemm, .gemm_batched = fb_gemm_batched,
    .fill = fb_fill, .scale = fb_scale, .axpy = fb_axpy, .add = fb_add, .mul = fb_mul,
    .mul_backward = fb_mul_backward, .act_forward = fb_act_forward, .act_backward = fb_act_backward,
    .gate_forward = fb_gate_forward, .gate_backward = fb_gate_backward, .mask_rows = fb_mask_rows,
    .bias_add = fb_bias_add, .bias_backward = fb_bias_backward, .copy2d = fb_copy2d,
    .index_select = fb_index_select, .sum = fb_sum, .sum_squares = fb_sum_squares,
    .argmax_rows = fb_argmax_rows, .softmax = fb_softmax, .log_softmax = fb_log_softmax,
    .layernorm_forward = fb_layernorm_forward, .layernorm_backward = fb_layernorm_backward,
    .rmsnorm_forward = fb_rmsnorm_forward, .rmsnorm_backward = fb_rmsnorm_backward,
    .embedding_forward = fb_embedding_forward, .embedding_backward = fb_embedding_backward,
    .sinusoid_fill = fb_sinusoid_fill, .positions_add = fb_positions_add,
    .positions_backward = fb_positions_backward, .rope_forward = fb_rope_forward,
    .rope_backward = fb_rope_backward, .attention_forward = fb_attention_forward,
    .attention_backward = fb_attention_backward, .conv1d_forward = fb_conv1d_forward,
    .conv1d_backward = fb_conv1d_backward, .conv1d_step = fb_conv1d_step,
    .conv1d_state_fill = fb_conv1d_state_fill, .scan_forward = fb_scan_forward,
    .scan_backward = fb_scan_backward, .scan_step = fb_scan_step,
    .retention_forward = fb_retention_forward, .retention_backward = fb_retention_backward,
    .retention_state_fill = fb_retention_state_fill, .retention_step = fb_retention_step,
    .cross_entropy_forward = fb_cross_entropy_forward,
    .cross_entropy_backward = fb_cross_entropy_backward, .cross_entropy_fused = fb_cross_entropy_fused,
    .dropout_forward = fb_dropout_forward,
    .dropout_backward = fb_dropout_backward, .adamw_step = fb_adamw_step,
};

const mt_backend *fenced_backend(void)
{
    cpu = mt_backend_cpu();
    return &fenced;
}
