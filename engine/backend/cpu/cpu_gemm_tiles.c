/* Products small enough that all three operands sit in the L1 and L2 caches: attention's and
 * retention's per-head products in training and prefill (cpu_heads.c), 64 x 64 x 24 for the demo
 * presets. There OpenBLAS spends more on each call than on its multiply-adds: a gpt-neox-small
 * layer's 448 heads took 5.8 ms forward (30 GFLOP/s) and 6.3 ms backward at one thread on a
 * Sapphire Rapids-class Xeon (docs/models.md §10.9). Here B is rows of ldb floats, read where it
 * lies or transposed by the caller (cpu_tiles_pack_transposed), its last vector masked where N
 * ends inside it, A is read where it lies (by rows or, transposed, by columns), and a tile of
 * MR rows by up to four vectors
 * of C is summed in registers over k, each A element broadcast once a tile row. A causal bound
 * (cpu_tile_limit) skips what the mask makes 0. The attention softmax rows between the products
 * are here too, in the same vectors. One body (cpu_gemm_tiles_body.h) compiled for AVX-512 and
 * for AVX2 + FMA; the sums run in another order than OpenBLAS's, so results agree to float
 * rounding (tests/unit/test_backend_gemm.c, test_backend.c). */
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/cpu_simd.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/* The sum's range for the row block from r0 of MR rows, at the strip from column c0 */
static inline void tile_k_range(const cpu_tile_args *t, int r0, int MR, int c0, int *k0, int *k1)
{
    *k0 = 0;
    *k1 = t->K;
    switch (t->limit) {
    case CPU_TILE_COLS_TO: /* no row of the block needs a column from off + r0 + MR on */
        if (c0 >= t->off + r0 + MR) *k1 = 0;
        break;
    case CPU_TILE_K_TO:
        if (t->off + r0 + MR < *k1) *k1 = t->off + r0 + MR;
        break;
    case CPU_TILE_K_FROM:
        if (r0 - t->off > 0) *k0 = r0 - t->off;
        break;
    case CPU_TILE_ALL: break;
    }
    if (*k1 < *k0) *k1 = *k0;
}

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>

#define TILE_ISA avx512
#define TILE_TARGET __attribute__((target("avx512f")))
#define VT __m512
#define VW 16
#define V_ZERO() _mm512_setzero_ps()
#define V_LOAD(p) _mm512_loadu_ps(p)
#define V_STORE(p, x) _mm512_storeu_ps(p, x)
#define V_SET1(x) _mm512_set1_ps(x)
#define V_FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define V_MUL(a, b) _mm512_mul_ps(a, b)
#define V_ADD(a, b) _mm512_add_ps(a, b)
/* 32 registers: 16 accumulators by 4 vectors, 18 by 3, 16 by 2, 8 by 1 */
#define TILE_MR(nv) ((nv) >= 4 ? 4 : (nv) == 3 ? 6 : 8)
#define VM __mmask16
#define V_FIRST(n) \
    ((n) >= 16 ? (__mmask16)0xFFFF : (n) <= 0 ? (__mmask16)0 : (__mmask16)((1u << (n)) - 1))
#define V_AND(a, b) ((__mmask16)((a) & (b)))
#define V_ANDNOT(a, b) ((__mmask16)((a) & ~(b)))
#define V_KEYS(p)                                                                       \
    _mm512_test_epi32_mask(_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(p))), \
                           _mm512_set1_epi32(0xff))
#define V_MLOAD(p, m) _mm512_maskz_loadu_ps(m, p)
#define V_MSTORE(p, m, x) _mm512_mask_storeu_ps(p, m, x)
#define V_SEL(m, a, b) _mm512_mask_blend_ps(m, b, a)
#define V_SUB(a, b) _mm512_sub_ps(a, b)
#define V_MAX(a, b) _mm512_max_ps(a, b)
#define V_HMAX(x) _mm512_reduce_max_ps(x)
#define VD __m512d
#define V_DZERO() _mm512_setzero_pd()
#define V_DACC(d0, d1, x)                                                  \
    ((d0) = _mm512_add_pd(d0, _mm512_cvtps_pd(_mm512_castps512_ps256(x))), \
     (d1) = _mm512_add_pd(                                                 \
         d1, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1)))))
#define V_DSUM(d0, d1) _mm512_reduce_add_pd(_mm512_add_pd(d0, d1))
#define V_MIN(a, b) _mm512_min_ps(a, b)
/* 2^k for whole floats k in the exponent's range: (k + 127) put in the exponent bits */
#define V_POW2(k)        \
    _mm512_castsi512_ps( \
        _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvttps_epi32(k), _mm512_set1_epi32(127)), 23))
#include "backend/cpu/cpu_gemm_tiles_body.h"
#undef VM
#undef V_FIRST
#undef V_AND
#undef V_ANDNOT
#undef V_KEYS
#undef V_MLOAD
#undef V_MSTORE
#undef V_SEL
#undef V_SUB
#undef V_MAX
#undef V_HMAX
#undef VD
#undef V_DZERO
#undef V_DACC
#undef V_DSUM
#undef V_MIN
#undef V_POW2
#undef TILE_ISA
#undef TILE_TARGET
#undef VT
#undef VW
#undef V_ZERO
#undef V_LOAD
#undef V_STORE
#undef V_SET1
#undef V_FMA
#undef V_MUL
#undef V_ADD
#undef TILE_MR

#define TILE_ISA avx2
#define TILE_TARGET __attribute__((target("avx2,fma")))
#define VT __m256
#define VW 8
#define V_ZERO() _mm256_setzero_ps()
#define V_LOAD(p) _mm256_loadu_ps(p)
#define V_STORE(p, x) _mm256_storeu_ps(p, x)
#define V_SET1(x) _mm256_set1_ps(x)
#define V_FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define V_MUL(a, b) _mm256_mul_ps(a, b)
#define V_ADD(a, b) _mm256_add_ps(a, b)
/* 16 registers: 8 accumulators by 4 vectors, 9 by 3, 12 by 2, 8 by 1 */
#define TILE_MR(nv) ((nv) >= 4 ? 2 : (nv) == 3 ? 3 : (nv) == 2 ? 6 : 8)
#define VM __m256
#define V_FIRST(n)       \
    _mm256_castsi256_ps( \
        _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)))
#define V_AND(a, b) _mm256_and_ps(a, b)
#define V_ANDNOT(a, b) _mm256_andnot_ps(b, a)
#define V_KEYS(p)                           \
    _mm256_castsi256_ps(_mm256_cmpgt_epi32( \
        _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(p))), _mm256_setzero_si256()))
#define V_MLOAD(p, m) _mm256_maskload_ps(p, _mm256_castps_si256(m))
#define V_MSTORE(p, m, x) _mm256_maskstore_ps(p, _mm256_castps_si256(m), x)
#define V_SEL(m, a, b) _mm256_blendv_ps(b, a, m)
#define V_SUB(a, b) _mm256_sub_ps(a, b)
#define V_MAX(a, b) _mm256_max_ps(a, b)
#define V_HMAX(x) hmax_avx2(x)
#define VD __m256d
#define V_DZERO() _mm256_setzero_pd()
#define V_DACC(d0, d1, x)                                                  \
    ((d0) = _mm256_add_pd(d0, _mm256_cvtps_pd(_mm256_castps256_ps128(x))), \
     (d1) = _mm256_add_pd(d1, _mm256_cvtps_pd(_mm256_extractf128_ps(x, 1))))
#define V_DSUM(d0, d1) dsum_avx2(_mm256_add_pd(d0, d1))
#define V_MIN(a, b) _mm256_min_ps(a, b)
#define V_POW2(k)        \
    _mm256_castsi256_ps( \
        _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvttps_epi32(k), _mm256_set1_epi32(127)), 23))
__attribute__((target("avx2,fma"))) static inline float hmax_avx2(__m256 x)
{
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
    return _mm_cvtss_f32(m);
}
__attribute__((target("avx2,fma"))) static inline double dsum_avx2(__m256d x)
{
    __m128d s = _mm_add_pd(_mm256_castpd256_pd128(x), _mm256_extractf128_pd(x, 1));
    return _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)));
}
#include "backend/cpu/cpu_gemm_tiles_body.h"

/* B transposed for both kernels, in AVX2 (a cloned function would not inline cpu_transpose8's
 * shuffles): 8 x 8 blocks through cpu_transpose8, a block at an edge through a zeroed copy; the
 * row blocks past rows (up to ld) come out 0. */
__attribute__((target("avx2"))) static void
pack_transposed_avx2(float *dst, int ld, const float *src, size_t lds, int rows, int cols)
{
    for (int r = 0; r < ld; r += 8)
        for (int c = 0; c < cols; c += 8) {
            if (r + 8 <= rows && c + 8 <= cols) {
                cpu_transpose8(dst + (size_t)c * ld + r, (size_t)ld, src + (size_t)r * lds + c,
                               lds);
                continue;
            }
            float in[8][8] = {{0}}, out[8][8];
            for (int i = 0; i < 8 && r + i < rows; i++)
                for (int j = 0; j < 8 && c + j < cols; j++)
                    in[i][j] = src[(size_t)(r + i) * lds + c + j];
            cpu_transpose8(&out[0][0], 8, &in[0][0], 8);
            for (int j = 0; j < 8 && c + j < cols; j++)
                for (int i = 0; i < 8; i++) dst[(size_t)(c + j) * ld + r + i] = out[j][i];
        }
}

void cpu_tiles_pack_transposed(float *dst, int ld, const float *src, size_t lds, int rows, int cols)
{
    pack_transposed_avx2(dst, ld, src, lds, rows, cols);
}

int cpu_tiles_softmax_row(cpu_rows_isa isa, float *s, int n, int lo, int hi, const uint8_t *km)
{
    if (isa == CPU_ROWS_AVX512) softmax_row_avx512(s, n, lo, hi, km);
    else if (isa == CPU_ROWS_AVX2) softmax_row_avx2(s, n, lo, hi, km);
    else return 0;
    return 1;
}

int cpu_tiles_softmax_backward_row(cpu_rows_isa isa, float *ds, const float *p, int n)
{
    if (isa == CPU_ROWS_AVX512) softmax_backward_row_avx512(ds, p, n);
    else if (isa == CPU_ROWS_AVX2) softmax_backward_row_avx2(ds, p, n);
    else return 0;
    return 1;
}

int cpu_gemm_tiles(cpu_rows_isa isa, const cpu_tile_args *t)
{
    if (t->M <= 0 || t->N <= 0) return 1;
    if (isa == CPU_ROWS_AVX512 && cpu_gemm_rows_supported(CPU_ROWS_AVX512)) {
        tile_gemm_avx512(t);
        return 1;
    }
    if (isa == CPU_ROWS_AVX2 && cpu_gemm_rows_supported(CPU_ROWS_AVX2)) {
        tile_gemm_avx2(t);
        return 1;
    }
    return 0;
}
#else
int cpu_gemm_tiles(cpu_rows_isa isa, const cpu_tile_args *t)
{
    (void)isa, (void)t, (void)tile_k_range;
    return 0;
}
int cpu_tiles_softmax_row(cpu_rows_isa isa, float *s, int n, int lo, int hi, const uint8_t *km)
{
    (void)isa, (void)s, (void)n, (void)lo, (void)hi, (void)km;
    return 0;
}
int cpu_tiles_softmax_backward_row(cpu_rows_isa isa, float *ds, const float *p, int n)
{
    (void)isa, (void)ds, (void)p, (void)n;
    return 0;
}
void cpu_tiles_pack_transposed(float *dst, int ld, const float *src, size_t lds, int rows, int cols)
{
    (void)dst, (void)ld, (void)src, (void)lds, (void)rows, (void)cols;
}
#endif

/* The same sums in plain loops, k in the same range (tests) */
void naive_gemm_tiles(const cpu_tile_args *t)
{
    for (int r = 0; r < t->M; r++)
        for (int c = 0; c < t->N; c++) {
            int k0, k1;
            tile_k_range(t, r, 1, c, &k0, &k1);
            double s = 0.0;
            for (int k = k0; k < k1; k++)
                s += (double)t->a[(size_t)r * t->a_row + (size_t)k * t->a_k] *
                     t->b[(size_t)k * t->ldb + c];
            float *cr = t->c + (size_t)r * t->ldc + c;
            *cr = (float)(t->alpha * s) + (t->beta ? *cr : 0.0f);
        }
}
