/* The AVX2 int8 kernel (cpu_ops.h states what it computes). AVX2 multiplies bytes only as
 * u8 x s8 with 16-bit saturating pair sums (vpmaddubsw), so each product is taken as
 * |w| * (x * sign w), or |x| * (w * sign x) in a tile of one row (row_step_w, row_step_x): with
 * both in [-127, 127] a pair sums to at most 2 * 127 * 127 = 32258, which never saturates, and
 * vpmaddwd by ones adds the two pairs of each channel's 4 bytes into its int32 lane, exactly
 * (docs/quantization.md §2). On the packed layout (cpu_ops.h) a
 * 32-byte load holds the next 4 weights of 8 channels, so a row's 4 bytes broadcast to every
 * lane serve them all and the accumulators need no horizontal sums at the end; a tile of MR
 * rows x one block of 16 channels keeps 2 * MR accumulators in the 16 registers.
 * Compiled for AVX2 by function attribute; cpu_int8.c calls it only when the CPU has AVX2. */
#include "backend/cpu/cpu_ops.h"

#include <immintrin.h>
#include <stdint.h>

#define AVX2 __attribute__((target("avx2")))
#define INLINE inline __attribute__((always_inline))

enum { MR = 4 };
/* Blocks ahead whose weights a block asks for (into L2) while its first rows run, in a
 * matrix of more than PREFETCH_MIN_BYTES (as cpu_int8_avx512.c) */
enum { PREFETCH_BLOCKS = 2 };
#define PREFETCH_MIN_BYTES ((size_t)2 << 20)

/* One row's 4 bytes at x (one k-step) against a block's two weight vectors, added into the
 * row's two accumulators, in one of two exact forms (the same int32 sums):
 *   row_step_x: |x| * (w * sign x), |x| taken per row, the form for a tile of one row;
 *   row_step_w: |w| * (x * sign w), with |w| taken once per k-step for all the tile's rows (w0a,
 *     w1a) and x's signs flipped per row straight from the weights in memory: 8 vector
 *     operations a row where the other form takes 9, about 1.1x the products of 2-4 rows.
 * Either pair sums to at most 2 * 127 * 127 and vpmaddwd by ones widens it to int32. Written
 * as inline assembly: with the intrinsics GCC 12 moved accumulators through other registers
 * and the stack at each k-step (4 rows x 2 accumulators, the two weight vectors, ones and three
 * temporaries are 14 of the 16 registers; docs/quantization.md §2). */
AVX2 static INLINE void row_step_x(__m256i *a0, __m256i *a1, const int8_t *x, __m256i w0,
                                   __m256i w1, __m256i ones)
{
    __m256i xb, ax, p;
    __asm__("vpbroadcastd %[x], %[xb]\n\t"
            "vpabsb %[xb], %[ax]\n\t"
            "vpsignb %[xb], %[w0], %[p]\n\t"
            "vpsignb %[xb], %[w1], %[xb]\n\t"
            "vpmaddubsw %[p], %[ax], %[p]\n\t"
            "vpmaddubsw %[xb], %[ax], %[xb]\n\t"
            "vpmaddwd %[ones], %[p], %[p]\n\t"
            "vpmaddwd %[ones], %[xb], %[xb]\n\t"
            "vpaddd %[p], %[a0], %[a0]\n\t"
            "vpaddd %[xb], %[a1], %[a1]"
            : [a0] "+x"(*a0), [a1] "+x"(*a1), [xb] "=&x"(xb), [ax] "=&x"(ax), [p] "=&x"(p)
            : [x] "m"(*(const int32_t *)x), [w0] "x"(w0), [w1] "x"(w1), [ones] "x"(ones));
}

AVX2 static INLINE void row_step_w(__m256i *a0, __m256i *a1, const int8_t *x, const int8_t *w,
                                   __m256i w0a, __m256i w1a, __m256i ones)
{
    __m256i xb, p;
    __asm__(
        "vpbroadcastd %[x], %[xb]\n\t"
        "vpsignb %[w0], %[xb], %[p]\n\t"
        "vpsignb %[w1], %[xb], %[xb]\n\t"
        "vpmaddubsw %[p], %[w0a], %[p]\n\t"
        "vpmaddubsw %[xb], %[w1a], %[xb]\n\t"
        "vpmaddwd %[ones], %[p], %[p]\n\t"
        "vpmaddwd %[ones], %[xb], %[xb]\n\t"
        "vpaddd %[p], %[a0], %[a0]\n\t"
        "vpaddd %[xb], %[a1], %[a1]"
        : [a0] "+x"(*a0), [a1] "+x"(*a1), [xb] "=&x"(xb), [p] "=&x"(p)
        : [x] "m"(*(const int32_t *)x), [w0] "m"(*(const __m256i *)w),
          [w1] "m"(*(const __m256i *)(w + 32)), [w0a] "x"(w0a), [w1a] "x"(w1a), [ones] "x"(ones));
}

/* x[at .. at+8): lanes past C read as 0 and touch no memory (the mask is built only for the
 * last, partial vector and those past it) */
AVX2 static INLINE __m256 load8_upto(const float *x, int at, int C)
{
    if (at + 8 <= C) return _mm256_loadu_ps(x + at);
    __m256i keep =
        _mm256_cmpgt_epi32(_mm256_set1_epi32(C - at), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    return _mm256_maskload_ps(x + at, keep);
}

/* cpu_int8_quantize_row in AVX2 vectors, the same scale and bytes (the unit tests hold them
 * equal, NaN, infinities and ties included): the largest |x| by vmaxps, which keeps the running
 * maximum where x is a NaN as the reference's comparison does; then 32 values at a time scaled,
 * a NaN made 0, clamped to [-127, 127] and converted in the default rounding mode (to nearest,
 * ties to even, as nearbyintf), packed to bytes through 16 bits (the packs work within each
 * 128-bit half, so a final permute puts the four groups of 8 back in order). Lanes past C load
 * as 0 and give the padding's 0 bytes. The compiler's own vectors of the reference took about
 * 1.6 cycles a value (compares and blends for the clamp and the NaN). */
AVX2 float cpu_int8_quantize_row_avx2(int8_t *q, const float *x, int C, int ld)
{
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    __m256 vmax = _mm256_setzero_ps();
    int k = 0;
    for (; k + 8 <= C; k += 8)
        vmax = _mm256_max_ps(_mm256_and_ps(_mm256_loadu_ps(x + k), abs_mask), vmax);
    if (k < C) vmax = _mm256_max_ps(_mm256_and_ps(load8_upto(x, k, C), abs_mask), vmax);
    __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(vmax), _mm256_extractf128_ps(vmax, 1));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
    float amax = _mm_cvtss_f32(m4);
    float scale = amax > 0.0f ? amax / 127.0f : 1.0f;
    float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
    const __m256 vinv = _mm256_set1_ps(inv), lo = _mm256_set1_ps(-127.0f),
                 hi = _mm256_set1_ps(127.0f);
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    for (k = 0; k < ld; k += 32) {
        __m256i w[4];
#pragma GCC unroll 4
        for (int i = 0; i < 4; i++) {
            __m256 v = _mm256_mul_ps(load8_upto(x, k + 8 * i, C), vinv);
            v = _mm256_and_ps(v, _mm256_cmp_ps(v, v, _CMP_ORD_Q));
            w[i] = _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(v, lo), hi));
        }
        __m256i b =
            _mm256_packs_epi16(_mm256_packs_epi32(w[0], w[1]), _mm256_packs_epi32(w[2], w[3]));
        _mm256_storeu_si256((__m256i *)(q + k), _mm256_permutevar8x32_epi32(b, order));
    }
    return scale;
}

/* channels lo .. lo+8 of row m, some outside 0 .. N: only those inside are stored */
static void store_partial(const cpu_int8_call *c, int m, int lo, const float t[8])
{
    float *dst = c->out + (size_t)m * c->ldo;
    for (int i = lo < 0 ? -lo : 0; i < 8 && lo + i < c->N; i++)
        dst[lo + i] = c->bias ? t[i] + c->bias[lo + i] : t[i];
}

/* row m's 8 sums of channels j .. j+8, dequantized and stored */
AVX2 static INLINE void store8(const cpu_int8_call *c, int m, int j, __m256i acc)
{
    __m256 o =
        _mm256_mul_ps(_mm256_cvtepi32_ps(acc),
                      _mm256_mul_ps(_mm256_set1_ps(c->xs[m]), _mm256_loadu_ps(c->w->scale + j)));
    int lo = j - c->j0;
    if (lo >= 0 && lo + 8 <= c->N) {
        if (c->bias) o = _mm256_add_ps(o, _mm256_loadu_ps(c->bias + lo));
        _mm256_storeu_ps(c->out + (size_t)m * c->ldo + lo, o);
        return;
    }
    float t[8];
    _mm256_storeu_ps(t, o);
    store_partial(c, m, lo, t);
}

/* rows m0 .. m0+mr against block b; with ask (a constant), pf is the next line to ask for at
 * each k-step */
AVX2 static INLINE void tile(const cpu_int8_call *c, int m0, int b, int mr, int ask, uintptr_t pf)
{
    int ld = c->w->ld;
    const int8_t *w = c->w->q + (size_t)b * CPU_INT8_BLOCK * ld;
    const int8_t *x = c->xq + (size_t)m0 * ld;
    const __m256i ones = _mm256_set1_epi16(1);
    __m256i acc[MR][2];
#pragma GCC unroll 4
    for (int r = 0; r < mr; r++) acc[r][0] = acc[r][1] = _mm256_setzero_si256();
    for (int k = 0; k < ld; k += 4) {
        if (ask) {
            _mm_prefetch((const char *)pf, _MM_HINT_T1);
            pf += 64;
        }
        const int8_t *wk = w + (size_t)k * 16;
        __m256i w0 = _mm256_loadu_si256((const __m256i *)wk);
        __m256i w1 = _mm256_loadu_si256((const __m256i *)(wk + 32));
        if (mr == 1) {
            row_step_x(&acc[0][0], &acc[0][1], x + k, w0, w1, ones);
            continue;
        }
        w0 = _mm256_abs_epi8(w0);
        w1 = _mm256_abs_epi8(w1);
#pragma GCC unroll 4
        for (int r = 0; r < mr; r++)
            row_step_w(&acc[r][0], &acc[r][1], x + (size_t)r * ld + k, wk, w0, w1, ones);
    }
    int jb = b * CPU_INT8_BLOCK;
#pragma GCC unroll 4
    for (int r = 0; r < mr; r++) {
        store8(c, m0 + r, jb, acc[r][0]);
        store8(c, m0 + r, jb + 8, acc[r][1]);
    }
}

/* one function per tile height, with and without asking for lines ahead, so each keeps its
 * accumulators in registers */
#define TILE_FN(R)                                                                 \
    AVX2 static void tile_##R(const cpu_int8_call *c, int m0, int b, uintptr_t pf) \
    {                                                                              \
        if (pf) tile(c, m0, b, R, 1, pf);                                          \
        else tile(c, m0, b, R, 0, 0);                                              \
    }
TILE_FN(1)
TILE_FN(2)
TILE_FN(3)
TILE_FN(4)
typedef void (*tile_fn)(const cpu_int8_call *c, int m0, int b, uintptr_t pf);
static const tile_fn tiles[MR] = {tile_1, tile_2, tile_3, tile_4};

AVX2 void cpu_int8_product_avx2(const cpu_int8_call *c)
{
    int ld = c->w->ld, ask = (size_t)c->w->rows * (size_t)ld > PREFETCH_MIN_BYTES;
    int b0 = c->j0 / CPU_INT8_BLOCK, b1 = (c->j0 + c->N + CPU_INT8_BLOCK - 1) / CPU_INT8_BLOCK;
    for (int b = b0; b < b1; b++) {
        /* a prefetch never faults, so the last blocks may name lines past the matrix */
        uintptr_t pf = (uintptr_t)(c->w->q + (size_t)b * CPU_INT8_BLOCK * ld) +
                       (uintptr_t)PREFETCH_BLOCKS * CPU_INT8_BLOCK * (uintptr_t)ld;
        for (int m = 0; m < c->M; m += MR) {
            int mr = c->M - m < MR ? c->M - m : MR;
            tiles[mr - 1](c, m, b, ask && m == 0 ? pf : 0);
        }
    }
}
