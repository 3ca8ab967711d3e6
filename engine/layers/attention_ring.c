/* Sliding-window attention decoding with a ring of keys and values (mtlab/layers.h): the
 * state of a windowed attention layer stays Tr = window + 1 positions long however long the
 * decode runs, like Mamba's conv and ssm state.
 *   prefill: the windowed causal forward over the prompt (or one chunk of it after the
 *            ring's positions before it), then ring[p % Tr] = k_p, v_p for the last Tr
 *            positions
 *   step:    ring[len % Tr] = k, v of the new token; attend over the filled slots */
#include "mtlab/error.h"
#include "mtlab/layers.h"

#include <math.h>

static mt_attn_desc ring_desc(const mt_attn_config *cfg, int B, int Tq, int Tk)
{
    mt_attn_desc d = {0};
    d.B = B, d.H = cfg->H, d.Tq = Tq, d.Tk = Tk, d.Dh = cfg->C / cfg->H;
    d.scale = 1.0f / sqrtf((float)d.Dh);
    return d;
}

/* One ring decode call: the backend, the layer and its B rows. */
typedef struct {
    const mt_backend *be;
    const mt_attn_params *p;
    const mt_attn_config *cfg;
    int B;
} ring_call;

/* out (B, Tq, C) = x W^T + b, rotated at positions pos0.. when rotate and the config rotates */
static void project(const ring_call *rc, float *out, const float *x, const float *w,
                    const float *bias, int Tq, int pos0, int rotate)
{
    const mt_attn_config *cfg = rc->cfg;
    int C = cfg->C;
    mt_linear_forward(rc->be, out, x, w, bias, (size_t)rc->B * Tq, C, C);
    if (rotate && cfg->rope_dim)
        rc->be->rope_forward(out, NULL, rc->B, Tq, cfg->H, C / cfg->H, cfg->rope_dim, pos0,
                             cfg->rope_inv_freq, cfg->rope_interleaved);
}

/* ring slots [slot, slot + n) <- rows [t0, t0 + n) of keys and values (B, rows, C) */
static void ring_put(const ring_call *rc, mt_kv_cache *c, const float *k, const float *v, int rows,
                     int t0, int slot, int n)
{
    size_t C = (size_t)rc->cfg->C, ld = (size_t)c->Tmax * C, B = (size_t)rc->B;
    int w = n * (int)C;
    rc->be->copy2d(c->k + slot * C, (int)ld, k + t0 * C, rows * (int)C, B, w);
    rc->be->copy2d(c->v + slot * C, (int)ld, v + t0 * C, rows * (int)C, B, w);
}

/* rows [t0, t0 + n) of keys and values (B, rows, C) <- ring slots [slot, slot + n) */
static void ring_get(const ring_call *rc, float *k, float *v, const mt_kv_cache *c, int rows,
                     int t0, int slot, int n)
{
    size_t C = (size_t)rc->cfg->C, ld = (size_t)c->Tmax * C, B = (size_t)rc->B;
    int w = n * (int)C;
    rc->be->copy2d(k + t0 * C, rows * (int)C, c->k + slot * C, (int)ld, B, w);
    rc->be->copy2d(v + t0 * C, rows * (int)C, c->v + slot * C, (int)ld, B, w);
}

/* Positions [pos, pos + n) are ring slots from pos % Tr on, wrapping once: the two runs. */
static int ring_run(int pos, int n, int Tr, int *slot)
{
    *slot = pos % Tr;
    return n < Tr - *slot ? n : Tr - *slot;
}

/* a->k, a->v (B, P + Tq, C): the P positions before the chunk from the ring, then the chunk's
 * own keys and values (projected through a->ctx, free until the attention writes it). */
static void chunk_keys(const ring_call *rc, mt_attn_acts *a, const float *x,
                       const mt_kv_cache *cache, int Tq, int P)
{
    const mt_backend *be = rc->be;
    const mt_attn_params *p = rc->p;
    int C = rc->cfg->C, B = rc->B, Tk = P + Tq, slot;
    int n1 = ring_run(cache->len - P, P, cache->Tmax, &slot);
    if (P) ring_get(rc, a->k, a->v, cache, Tk, 0, slot, n1);
    if (P > n1) ring_get(rc, a->k, a->v, cache, Tk, n1, 0, P - n1);
    project(rc, a->ctx, x, p->k_w, p->k_b, Tq, cache->len, 1);
    be->copy2d(a->k + (size_t)P * C, Tk * C, a->ctx, Tq * C, (size_t)B, Tq * C);
    project(rc, a->ctx, x, p->v_w, p->v_b, Tq, cache->len, 0);
    be->copy2d(a->v + (size_t)P * C, Tk * C, a->ctx, Tq * C, (size_t)B, Tq * C);
}

int mt_attention_ring_decode(const mt_backend *be, float *out, mt_attn_acts *a, const float *x,
                             mt_kv_cache *cache, const mt_attn_params *p, const mt_attn_call *call)
{
    const mt_attn_config *cfg = call->cfg;
    const uint8_t *key_mask = call->key_mask, *slot_mask = call->slot_mask;
    int C = cfg->C, Tr = cache->Tmax, B = call->B, Tq = call->Tq;
    size_t rows = (size_t)B * Tq;
    ring_call rc = {.be = be, .p = p, .cfg = cfg, .B = B};
    if (!slot_mask) {
        int P = cache->len < Tr - 1 ? cache->len : Tr - 1, Tk = P + Tq, slot;
        project(&rc, a->q, x, p->q_w, p->q_b, Tq, cache->len, 1);
        chunk_keys(&rc, a, x, cache, Tq, P);
        mt_attn_desc d = ring_desc(cfg, B, Tq, Tk);
        d.causal = 1;
        d.q_pos0 = P;
        d.window = cfg->window;
        d.key_mask = key_mask ? key_mask + (cache->len - P) : NULL;
        d.mask_bstride = (size_t)call->key_ld;
        be->attention_forward(a->ctx, a->att, a->q, a->k, a->v, &d);
        mt_linear_forward(be, out, a->ctx, p->o_w, p->o_b, rows, C, C);
        /* the chunk's last min(Tq, Tr) positions, wrapping once at the end of the ring */
        int n = Tq < Tr ? Tq : Tr, pos = cache->len + Tq - n;
        int n1 = ring_run(pos, n, Tr, &slot);
        ring_put(&rc, cache, a->k, a->v, Tk, Tk - n, slot, n1);
        if (n > n1) ring_put(&rc, cache, a->k, a->v, Tk, Tk - n + n1, 0, n - n1);
        cache->len += Tq;
        return 0;
    }
    if (Tq != 1 || cache->len == 0)
        return mt_error("attention ring decode: a step of %d positions after %d (one per step, "
                        "after a prefill)",
                        Tq, cache->len);
    project(&rc, a->q, x, p->q_w, p->q_b, 1, cache->len, 1);
    project(&rc, a->k, x, p->k_w, p->k_b, 1, cache->len, 1);
    project(&rc, a->v, x, p->v_w, p->v_b, 1, cache->len, 0);
    ring_put(&rc, cache, a->k, a->v, 1, 0, cache->len % Tr, 1);
    cache->len++;
    mt_attn_desc d = ring_desc(cfg, B, 1, cache->len < Tr ? cache->len : Tr);
    d.kv_bstride = (size_t)Tr * C;
    d.key_mask = slot_mask;
    d.mask_bstride = (size_t)Tr;
    be->attention_forward(a->ctx, a->att, a->q, cache->k, cache->v, &d);
    mt_linear_forward(be, out, a->ctx, p->o_w, p->o_b, rows, C, C);
    return 0;
}

void mt_kv_ring_slot_mask(uint8_t *slot_mask, const uint8_t *key_mask, int key_ld, int B, int len,
                          int Tr)
{
    for (int b = 0; b < B; b++) {
        uint8_t *row = slot_mask + (size_t)b * Tr;
        for (int s = 0; s < Tr; s++) row[s] = 0;
        for (int pos = len > Tr ? len - Tr : 0; pos < len; pos++)
            row[pos % Tr] = key_mask[(size_t)b * key_ld + pos] != 0;
    }
}
