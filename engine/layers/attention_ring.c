/* Sliding-window attention decoding with a ring of keys and values (mtlab/layers.h): the
 * state of a windowed attention layer stays Tr = window + 1 positions long however long the
 * decode runs, like Mamba's conv and ssm state.
 *   prefill: the windowed causal forward over the prompt, then ring[p % Tr] = k_p, v_p for
 *            the last Tr prompt positions
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

static void project(const mt_backend *be, mt_attn_acts *a, const float *x,
                    const mt_attn_params *p, const mt_attn_config *cfg, int B, int Tq, int pos0)
{
    int C = cfg->C, Dh = C / cfg->H;
    size_t rows = (size_t)B * Tq;
    mt_linear_forward(be, a->q, x, p->q_w, p->q_b, rows, C, C);
    mt_linear_forward(be, a->k, x, p->k_w, p->k_b, rows, C, C);
    mt_linear_forward(be, a->v, x, p->v_w, p->v_b, rows, C, C);
    if (!cfg->rope_dim) return;
    be->rope_forward(a->q, NULL, B, Tq, cfg->H, Dh, cfg->rope_dim, pos0, cfg->rope_inv_freq,
                     cfg->rope_interleaved);
    be->rope_forward(a->k, NULL, B, Tq, cfg->H, Dh, cfg->rope_dim, pos0, cfg->rope_inv_freq,
                     cfg->rope_interleaved);
}

/* ring slots [slot, slot + n) <- rows [t0, t0 + n) of the new keys and values (B, Tq, C) */
static void ring_put(const mt_backend *be, mt_kv_cache *c, const mt_attn_acts *a, int C, int B,
                     int Tq, int t0, int slot, int n)
{
    size_t ld = (size_t)c->Tmax * C;
    be->copy2d(c->k + (size_t)slot * C, (int)ld, a->k + (size_t)t0 * C, Tq * C, (size_t)B, n * C);
    be->copy2d(c->v + (size_t)slot * C, (int)ld, a->v + (size_t)t0 * C, Tq * C, (size_t)B, n * C);
}

int mt_attention_ring_decode(const mt_backend *be, float *out, mt_attn_acts *a, const float *x,
                             mt_kv_cache *cache, const uint8_t *prompt_mask,
                             const uint8_t *slot_mask, const mt_attn_params *p,
                             const mt_attn_config *cfg, int B, int Tq)
{
    int C = cfg->C, Tr = cache->Tmax;
    size_t rows = (size_t)B * Tq;
    if (cache->len == 0) {
        project(be, a, x, p, cfg, B, Tq, 0);
        mt_attn_desc d = ring_desc(cfg, B, Tq, Tq);
        d.causal = 1;
        d.window = cfg->window;
        d.key_mask = prompt_mask;
        be->attention_forward(a->ctx, a->att, a->q, a->k, a->v, &d);
        mt_linear_forward(be, out, a->ctx, p->o_w, p->o_b, rows, C, C);
        /* the last min(Tq, Tr) positions, wrapping once at the end of the ring */
        int first = Tq > Tr ? Tq - Tr : 0, n = Tq - first, slot = first % Tr;
        int n1 = n < Tr - slot ? n : Tr - slot;
        ring_put(be, cache, a, C, B, Tq, first, slot, n1);
        if (n > n1) ring_put(be, cache, a, C, B, Tq, first + n1, 0, n - n1);
        cache->len = Tq;
        return 0;
    }
    if (Tq != 1)
        return mt_error("attention ring decode: %d new positions after a prefill (one per step)",
                        Tq);
    project(be, a, x, p, cfg, B, 1, cache->len);
    ring_put(be, cache, a, C, B, 1, 0, cache->len % Tr, 1);
    cache->len++;
    mt_attn_desc d = ring_desc(cfg, B, 1, cache->len < Tr ? cache->len : Tr);
    d.kv_bstride = (size_t)Tr * C;
    d.key_mask = slot_mask;
    d.mask_bstride = (size_t)Tr;
    be->attention_forward(a->ctx, a->att, a->q, cache->k, cache->v, &d);
    mt_linear_forward(be, out, a->ctx, p->o_w, p->o_b, rows, C, C);
    return 0;
}

void mt_kv_ring_slot_mask(uint8_t *slot_mask, const uint8_t *key_mask, int key_ld, int B,
                          int len, int Tr)
{
    for (int b = 0; b < B; b++) {
        uint8_t *row = slot_mask + (size_t)b * Tr;
        for (int s = 0; s < Tr; s++) row[s] = 0;
        for (int pos = len > Tr ? len - Tr : 0; pos < len; pos++)
            row[pos % Tr] = key_mask[(size_t)b * key_ld + pos] != 0;
    }
}
