/* The AVX-512 VNNI int8 kernel (cpu_ops.h states what it computes). vpdpbusd multiplies
 * unsigned by signed bytes and adds each group of four into an int32 lane without
 * saturation. Activations are signed, so cpu_int8.c hands this kernel x + 128 as u8 (the sign
 * bit flipped) and the shift comes back out per channel with the weight row sums:
 *   sum_k (x_k + 128) w_k - 128 * sum_k w_k = sum_k x_k w_k      (docs/quantization.md §2)
 * The packed layout (cpu_ops.h) puts 4 consecutive k of 16 channels in one vector, so a row's 4
 * bytes broadcast to every lane and one vpdpbusd add 4 products to each of 16 channels: a tile
 * of MR rows x NR blocks keeps MR * NR accumulators in registers for the whole row, loads each
 * weight vector once for MR rows, and ends with no horizontal sums.
 * Compiled for AVX-512 by function attribute; cpu_int8.c calls it only when the CPU has
 * AVX-512 F, BW and VNNI. */
#include "backend/cpu/cpu_ops.h"

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#define VNNI __attribute__((target("avx512f,avx512bw,avx512vnni")))
#define INLINE inline __attribute__((always_inline))

/* rows x blocks of 16 channels per register tile: 16 accumulators, 4 weight vectors and a
 * broadcast of the 32 registers. One or two rows (batch-1 decoding) take 8 blocks, so that
 * they too have enough independent accumulators to hide vpdpbusd's latency. */
enum { MR = 4, NR = 4, NR_FEW = 8 };
/* Tiles ahead whose weights a tile asks for (into L2) while its first rows run, spread over
 * its k-steps, in a matrix of more than PREFETCH_MIN_BYTES: a vocabulary projection comes
 * from memory every step (58k words x 512: 30 MB; docs/decoding.md §9), where the hardware
 * alone ran 1.3x slower at batch 1; a matrix that stays in L2 ran faster without (the
 * requests take load slots) */
enum { PREFETCH_TILES = 2 };
#define PREFETCH_MIN_BYTES ((size_t)2 << 20)

/* acc += vpdpbusd(x, w) in place: written with the intrinsic, GCC 12 copied every accumulator
 * to a fresh register and back at each k-step (twice the instructions, and a spill) */
VNNI static INLINE __m512i dpbusd(__m512i acc, __m512i x, __m512i w)
{
    __asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(x), "v"(w));
    return acc;
}

/* channels lo .. lo+16 of row m, some outside 0 .. N: only those inside are stored */
static void store_partial(const cpu_int8_call *c, int m, int lo, const float t[16])
{
    float *dst = c->out + (size_t)m * c->ldo;
    for (int i = lo < 0 ? -lo : 0; i < 16 && lo + i < c->N; i++)
        dst[lo + i] = c->bias ? t[i] + c->bias[lo + i] : t[i];
}

/* row m's 16 sums of a block's channels, lo - j0 .. lo - j0 + 16, dequantized and stored;
 * shift (128 * the weight sums) and ws (the scales) are the block's, loaded once for its rows */
VNNI static INLINE void store_block(const cpu_int8_call *c, int m, int lo, __m512i acc,
                                    __m512i shift, __m512 ws)
{
    __m512 o = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(acc, shift)),
                             _mm512_mul_ps(_mm512_set1_ps(c->xs[m]), ws));
    if (lo >= 0 && lo + 16 <= c->N) {
        if (c->bias) o = _mm512_add_ps(o, _mm512_loadu_ps(c->bias + lo));
        _mm512_storeu_ps(c->out + (size_t)m * c->ldo + lo, o);
        return;
    }
    float t[16];
    _mm512_storeu_ps(t, o);
    store_partial(c, m, lo, t);
}

/* rows m0 .. m0+mr against blocks b .. b+nr; with ask (a constant), pf is the next of the
 * lines to ask for, nr per k-step (a branch on it inside the loop made GCC shuffle the
 * accumulators between registers) */
VNNI static INLINE void tile(const cpu_int8_call *c, int m0, int b, int mr, int nr, int ask,
                             uintptr_t pf)
{
    int ld = c->w->ld;
    const int8_t *w = c->w->q + (size_t)b * CPU_INT8_BLOCK * ld;
    const int8_t *x = c->xq + (size_t)m0 * ld;
    __m512i acc[MR][NR_FEW];
#pragma GCC unroll 4
    for (int r = 0; r < mr; r++)
#pragma GCC unroll 8
        for (int n = 0; n < nr; n++) acc[r][n] = _mm512_setzero_si512();
    for (int k = 0; k < ld; k += 4) {
        if (ask)
#pragma GCC unroll 8
            for (int n = 0; n < nr; n++, pf += 64) _mm_prefetch((const char *)pf, _MM_HINT_T1);
        __m512i wv[NR_FEW];
#pragma GCC unroll 8
        for (int n = 0; n < nr; n++)
            wv[n] = _mm512_loadu_si512(w + (size_t)n * CPU_INT8_BLOCK * ld + (size_t)k * 16);
#pragma GCC unroll 4
        for (int r = 0; r < mr; r++) {
            int32_t x4;
            memcpy(&x4, x + (size_t)r * ld + k, 4);
            __m512i xb = _mm512_set1_epi32(x4);
#pragma GCC unroll 8
            for (int n = 0; n < nr; n++) acc[r][n] = dpbusd(acc[r][n], xb, wv[n]);
        }
    }
#pragma GCC unroll 8
    for (int n = 0; n < nr; n++) {
        int jb = (b + n) * CPU_INT8_BLOCK;
        __m512i shift = _mm512_slli_epi32(_mm512_loadu_si512(c->w->sum + jb), 7);
        __m512 ws = _mm512_loadu_ps(c->w->scale + jb);
#pragma GCC unroll 4
        for (int r = 0; r < mr; r++) store_block(c, m0 + r, jb - c->j0, acc[r][n], shift, ws);
    }
}

/* one function per tile shape, with and without asking for lines ahead, so each keeps its
 * accumulators in registers */
#define TILE_FN(R, N)                                                                    \
    VNNI static void tile_##R##_##N(const cpu_int8_call *c, int m0, int b, uintptr_t pf) \
    {                                                                                    \
        if (pf) tile(c, m0, b, R, N, 1, pf);                                             \
        else tile(c, m0, b, R, N, 0, 0);                                                 \
    }
#define TILE_ROW(R) TILE_FN(R, 1) TILE_FN(R, 2) TILE_FN(R, 3) TILE_FN(R, 4)
#define TILE_ROW_FEW(R) TILE_ROW(R) TILE_FN(R, 5) TILE_FN(R, 6) TILE_FN(R, 7) TILE_FN(R, 8)
TILE_ROW_FEW(1)
TILE_ROW_FEW(2)
TILE_ROW(3)
TILE_ROW(4)
typedef void (*tile_fn)(const cpu_int8_call *c, int m0, int b, uintptr_t pf);
#define TILE_ENTRY(R) tile_##R##_1, tile_##R##_2, tile_##R##_3, tile_##R##_4
#define TILE_ENTRY_FEW(R) TILE_ENTRY(R), tile_##R##_5, tile_##R##_6, tile_##R##_7, tile_##R##_8
static const tile_fn tiles[MR][NR_FEW] = {
    {TILE_ENTRY_FEW(1)}, {TILE_ENTRY_FEW(2)}, {TILE_ENTRY(3)}, {TILE_ENTRY(4)}};

/* cpu_int8_quantize_row's bytes, shifted to u8 (x + 128, this kernel's form), in one pass of
 * explicit vectors: the same amax and scale, x * inv rounded to nearest-even by the
 * conversion (as nearbyintf in the default mode), a NaN product (an infinite input) 0, the
 * range clamped before the conversion (an amax so small that inv is infinite) */
VNNI float cpu_int8_quantize_row_avx512_vnni(int8_t *q, const float *x, int C, int ld)
{
    __m512 vmax = _mm512_setzero_ps();
    int k = 0;
    for (; k + 16 <= C; k += 16)
        vmax = _mm512_max_ps(_mm512_abs_ps(_mm512_loadu_ps(x + k)), vmax); /* a NaN: vmax */
    if (k < C) {
        __mmask16 t = (__mmask16)((1u << (C - k)) - 1);
        vmax = _mm512_max_ps(_mm512_abs_ps(_mm512_maskz_loadu_ps(t, x + k)), vmax);
    }
    float amax = _mm512_reduce_max_ps(vmax);
    float scale = amax > 0.0f ? amax / 127.0f : 1.0f;
    float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
    const __m512 vinv = _mm512_set1_ps(inv), lo = _mm512_set1_ps(-127.0f),
                 hi = _mm512_set1_ps(127.0f);
    const __m128i flip = _mm_set1_epi8((char)0x80);
    for (k = 0; k < ld; k += 16) {
        __mmask16 t = k + 16 <= C ? 0xffff : k < C ? (__mmask16)((1u << (C - k)) - 1) : 0;
        __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(t, x + k), vinv);
        v = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, v, _CMP_ORD_Q), v);
        v = _mm512_min_ps(_mm512_max_ps(v, lo), hi);
        __m128i b = _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(v));
        _mm_storeu_si128((__m128i *)(q + k), _mm_xor_si128(b, flip));
    }
    return scale;
}

VNNI void cpu_int8_product_avx512_vnni(const cpu_int8_call *c)
{
    int ld = c->w->ld, step = c->M <= 2 ? NR_FEW : NR;
    int ask = (size_t)c->w->rows * (size_t)ld > PREFETCH_MIN_BYTES;
    int b0 = c->j0 / CPU_INT8_BLOCK, b1 = (c->j0 + c->N + CPU_INT8_BLOCK - 1) / CPU_INT8_BLOCK;
    for (int b = b0; b < b1; b += step) {
        int nb = b1 - b < step ? b1 - b : step;
        /* a prefetch never faults, so the last tiles may name lines past the matrix */
        uintptr_t pf = (uintptr_t)(c->w->q + (size_t)b * CPU_INT8_BLOCK * ld) +
                       (uintptr_t)PREFETCH_TILES * step * CPU_INT8_BLOCK * (uintptr_t)ld;
        for (int m = 0; m < c->M; m += MR) {
            int mr = c->M - m < MR ? c->M - m : MR;
            tiles[mr - 1][nb - 1](c, m, b, ask && m == 0 ? pf : 0);
        }
    }
}
