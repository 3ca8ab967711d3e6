/* Training operations: fused softmax cross-entropy (and its in-place forward+backward form),
 * counter-based dropout, AdamW. */
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/cpu_par.h"
#include "backend/cpu/cpu_pool.h"
#include "backend/cpu/cpu_simd.h"
#include "math/philox.h"

#include <math.h>
#include <string.h>

/* One loss operation's rows for the pool (cpu_pool_for) */
typedef struct {
    float *losses, *lse_out;
    float *out; /* the rows written: backward's dlogits, the fused form's logits themselves */
    const float *x, *lse; /* the logits read; backward's log-sum-exps */
    const int32_t *targets;
    int V, ignore_index;
    float smoothing, scale;
} ce_job;

/* rows of logits shared among the threads from this many floats on */
#define CE_PAR_MIN 65536

/* lse = log sum_j exp(x_j) ; loss = -sum_j q_j (x_j - lse)
 *      = lse - (1 - eps) x_target - (eps / V) sum_j x_j          (q from label smoothing eps) */
static void ce_forward_rows(void *ctx, size_t r0, size_t r1)
{
    const ce_job *j = ctx;
    float *losses = j->losses, *lse = j->lse_out, smoothing = j->smoothing;
    int V = j->V;
    for (size_t r = r0; r < r1; r++) {
        const float *x = j->x + r * (size_t)V;
        float mx = cpu_row_max(x, V);
        double l = mx + log(cpu_row_sum_exp(x, V, mx));
        lse[r] = (float)l;
        if (j->targets[r] == j->ignore_index) {
            losses[r] = 0.0f;
            continue;
        }
        double sum_x = smoothing != 0.0f ? cpu_row_sum(x, V) : 0.0;
        losses[r] = (float)(l - (1.0 - smoothing) * x[j->targets[r]] - smoothing * sum_x / V);
    }
}

void cpu_cross_entropy_forward(float *losses, float *lse, const float *logits,
                               const int32_t *targets, size_t BT, int V, int ignore_index,
                               float smoothing)
{
    ce_job j = {.losses = losses,
                .lse_out = lse,
                .x = logits,
                .targets = targets,
                .V = V,
                .ignore_index = ignore_index,
                .smoothing = smoothing};
    cpu_pool_for(cpu_fork(BT * (size_t)V, CE_PAR_MIN), BT, ce_forward_rows, &j);
}

/* dx_j += scale * (exp(x_j - lse) - eps / V), then dx_target -= scale * (1 - eps):
 * dlogits_j += scale * (p_j - q_j) */
MT_CPU_CLONES static void cross_entropy_row_backward(float *dx, const float *x, float lse, int V,
                                                     float uniform, float scale)
{
#pragma omp simd
    for (int j = 0; j < V; j++) dx[j] += scale * (expf(x[j] - lse) - uniform);
}

/* the same, over the logits themselves: x_j <- scale * (exp(x_j - lse) - eps / V), which is
 * 0 + scale * (p_j - q_j) evaluated exactly as above */
MT_CPU_CLONES static void cross_entropy_row_fused(float *x, float lse, int V, float uniform,
                                                  float scale)
{
#pragma omp simd
    for (int j = 0; j < V; j++) x[j] = 0.0f + scale * (expf(x[j] - lse) - uniform);
}

static void ce_backward_rows(void *ctx, size_t r0, size_t r1)
{
    const ce_job *j = ctx;
    int V = j->V;
    for (size_t r = r0; r < r1; r++) {
        if (j->targets[r] == j->ignore_index) continue;
        float *dx = j->out + r * (size_t)V;
        cross_entropy_row_backward(dx, j->x + r * (size_t)V, j->lse[r], V, j->smoothing / V,
                                   j->scale);
        dx[j->targets[r]] -= j->scale * (1.0f - j->smoothing);
    }
}

void cpu_cross_entropy_backward(float *dlogits, const float *logits, const float *lse,
                                const int32_t *targets, size_t BT, int V, int ignore_index,
                                float smoothing, float scale)
{
    ce_job j = {.out = dlogits,
                .x = logits,
                .lse = lse,
                .targets = targets,
                .V = V,
                .ignore_index = ignore_index,
                .smoothing = smoothing,
                .scale = scale};
    cpu_pool_for(cpu_fork(BT * (size_t)V, CE_PAR_MIN), BT, ce_backward_rows, &j);
}

/* cross_entropy_forward's loss and cross_entropy_backward's gradient of each row, written over
 * the row: the max, sum of exponentials and sum pass read it from cache, the last pass
 * overwrites it. The same helpers in the same order as the two separate operations, so the
 * fused result equals theirs bit for bit. */
static void ce_fused_rows(void *ctx, size_t r0, size_t r1)
{
    const ce_job *j = ctx;
    const int32_t *targets = j->targets;
    float *losses = j->losses, smoothing = j->smoothing, scale = j->scale;
    int V = j->V;
    for (size_t r = r0; r < r1; r++) {
        float *x = j->out + r * (size_t)V;
        if (targets[r] == j->ignore_index) {
            losses[r] = 0.0f;
            memset(x, 0, (size_t)V * sizeof *x);
            continue;
        }
        float mx = cpu_row_max(x, V);
        double l = mx + log(cpu_row_sum_exp(x, V, mx));
        double sum_x = smoothing != 0.0f ? cpu_row_sum(x, V) : 0.0;
        losses[r] = (float)(l - (1.0 - smoothing) * x[targets[r]] - smoothing * sum_x / V);
        cross_entropy_row_fused(x, (float)l, V, smoothing / V, scale);
        x[targets[r]] -= scale * (1.0f - smoothing);
    }
}

void cpu_cross_entropy_fused(float *losses, float *logits, const int32_t *targets, size_t BT, int V,
                             int ignore_index, float smoothing, float scale)
{
    ce_job j = {.losses = losses,
                .out = logits,
                .targets = targets,
                .V = V,
                .ignore_index = ignore_index,
                .smoothing = smoothing,
                .scale = scale};
    cpu_pool_for(cpu_fork(BT * (size_t)V, CE_PAR_MIN), BT, ce_fused_rows, &j);
}

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>

/* The high and low words of the 32 x 32-bit products c * m in each of 16 lanes: the even lanes'
 * and the odd lanes' 64-bit products (vpmuludq), their halves put back in lane order */
__attribute__((target("avx512f"), always_inline)) static inline void
mulhilo16(__m512i c, __m512i m, __m512i *hi, __m512i *lo)
{
    __m512i even = _mm512_mul_epu32(c, m), odd = _mm512_mul_epu32(_mm512_srli_epi64(c, 32), m);
    *hi = _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(even, 32), odd);
    *lo = _mm512_mask_blend_epi32(0xAAAA, even, _mm512_slli_epi64(odd, 32));
}

/* The keep bits of a chunk's mask on AVX-512: Philox's rounds on 16 blocks at once (the same
 * words as mt_dropout_block_words; GCC's vectorisation of the generic loop multiplied four 64-bit
 * lanes at a time among shuffles, 5 cycles an element), each word compared with the threshold t
 * as an integer, (w >> 8) >= t being mt_u32_to_unit_float(w) >= p (dropout_threshold), and the
 * four words' 16-bit masks interleaved into one 64-bit word: bit 4 (g - g0) + w of bits is draw
 * w of block g. 16 blocks a word, so bits has (n + 15) / 16 words. */
__attribute__((target("avx512f,bmi2"))) static void dropout_bits_avx512(uint64_t *bits, uint32_t g0,
                                                                        uint32_t n, uint32_t row,
                                                                        const mt_dropout *d,
                                                                        uint32_t t)
{
    const __m512i m0 = _mm512_set1_epi32((int)0xD2511F53u),
                  m1 = _mm512_set1_epi32((int)0xCD9E8D57u);
    const __m512i weyl0 = _mm512_set1_epi32((int)0x9E3779B9u),
                  weyl1 = _mm512_set1_epi32((int)0xBB67AE85u);
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512i vt = _mm512_set1_epi32((int)t);
    uint32_t k0 = (uint32_t)d->seed, k1 = (uint32_t)(d->seed >> 32) ^ (uint32_t)(d->step >> 32);
    for (uint32_t g = 0; g < n; g += 16) {
        __m512i c0 = _mm512_add_epi32(_mm512_set1_epi32((int)(g0 + g)), lane);
        __m512i c1 = _mm512_set1_epi32((int)d->site),
                c2 = _mm512_set1_epi32((int)(uint32_t)d->step);
        __m512i c3 = _mm512_set1_epi32((int)row);
        __m512i key0 = _mm512_set1_epi32((int)k0), key1 = _mm512_set1_epi32((int)k1);
        for (int round = 0; round < 10; round++) {
            __m512i hi0, lo0, hi1, lo1;
            mulhilo16(c0, m0, &hi0, &lo0);
            mulhilo16(c2, m1, &hi1, &lo1);
            c0 = _mm512_xor_si512(_mm512_xor_si512(hi1, c1), key0);
            c2 = _mm512_xor_si512(_mm512_xor_si512(hi0, c3), key1);
            c1 = lo1, c3 = lo0;
            key0 = _mm512_add_epi32(key0, weyl0), key1 = _mm512_add_epi32(key1, weyl1);
        }
        uint64_t w0 = _mm512_cmpge_epu32_mask(_mm512_srli_epi32(c0, 8), vt);
        uint64_t w1 = _mm512_cmpge_epu32_mask(_mm512_srli_epi32(c1, 8), vt);
        uint64_t w2 = _mm512_cmpge_epu32_mask(_mm512_srli_epi32(c2, 8), vt);
        uint64_t w3 = _mm512_cmpge_epu32_mask(_mm512_srli_epi32(c3, 8), vt);
        bits[g / 16] = _pdep_u64(w0, 0x1111111111111111u) | _pdep_u64(w1, 0x2222222222222222u) |
                       _pdep_u64(w2, 0x4444444444444444u) | _pdep_u64(w3, 0x8888888888888888u);
    }
}

/* out = in * k (or dx += in * k, dx set) over n elements, k = inv_keep where element i's bit
 * (i + skip) of bits is set and 0 elsewhere: the generic loop's products, the same floats */
__attribute__((target("avx512f"))) static void dropout_apply_avx512(float *out, float *dx,
                                                                    const float *in, size_t n,
                                                                    const uint64_t *bits,
                                                                    uint32_t skip, float inv_keep)
{
    const unsigned char *bytes = (const unsigned char *)bits;
    const __m512 vk = _mm512_set1_ps(inv_keep), zero = _mm512_setzero_ps();
    for (size_t i = 0; i < n; i += 16) {
        uint32_t word; /* bits i .. i + 31: i is a multiple of 16, skip at most 3 */
        memcpy(&word, bytes + i / 8, sizeof word);
        __m512 k = _mm512_mask_blend_ps((__mmask16)(word >> skip), zero, vk);
        __mmask16 lanes = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1);
        __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(lanes, in + i), k);
        if (dx) v = _mm512_add_ps(_mm512_maskz_loadu_ps(lanes, dx + i), v);
        _mm512_mask_storeu_ps(dx ? dx + i : out + i, lanes, v);
    }
}

/* n <= CPU_CHUNK elements from key0 on AVX-512 (dropout_chunk's contract) */
static void dropout_chunk_avx512(float *out, float *dx, const float *in, size_t n, uint32_t key0,
                                 uint32_t row, const mt_dropout *d, uint32_t t, float inv_keep)
{
    uint64_t bits[CPU_CHUNK / 64 + 2]; /* skip + n <= CPU_CHUNK + 3 bits, and 4 bytes past them */
    uint32_t g0 = key0 >> 2, skip = key0 & 3, n_blocks = (uint32_t)((skip + n + 3) >> 2);
    dropout_bits_avx512(bits, g0, n_blocks, row, d, t);
    dropout_apply_avx512(out, dx, in, n, bits, skip, inv_keep);
}

static int dropout_wide_supported(void)
{
    __builtin_cpu_init();
    return cpu_rows_best_isa() == CPU_ROWS_AVX512 && __builtin_cpu_supports("bmi2");
}

#else
static void dropout_chunk_avx512(float *out, float *dx, const float *in, size_t n, uint32_t key0,
                                 uint32_t row, const mt_dropout *d, uint32_t t, float inv_keep)
{
    (void)out, (void)dx, (void)in, (void)n, (void)key0, (void)row, (void)d, (void)t;
    (void)inv_keep;
}

static int dropout_wide_supported(void) { return 0; }
#endif

/* The draw w is kept where mt_u32_to_unit_float(w) = (w >> 8) 2^-24 >= p: exactly where
 * (w >> 8) >= t for the least integer t with t 2^-24 >= p, ceil(p 2^24) (exact in double),
 * 0 for p <= 0 (all kept) and 2^24 for p >= 1 or NaN (none: the float comparison fails) */
static uint32_t dropout_threshold(float p)
{
    if (p <= 0.0f) return 0;
    if (!(p < 1.0f)) return 1u << 24;
    return (uint32_t)ceil((double)p * 16777216.0);
}

/* keep_j = mt_dropout_uniform(seed, step, site, row, key_j) >= p ; out = keep ? x / (1 - p) : 0
 * (dropout_chunk with dx = NULL; with dx, the backward: dx += keep ? dout / (1 - p) : 0).
 * n <= CPU_CHUNK consecutive elements of one row whose keys run from key0 (philox.h). One
 * Philox block per four keys from the block holding key0; with AVX-512 the keep bits and then
 * one pass (dropout_chunk_avx512), elsewhere the blocks' words in a vectorised loop, the scales
 * from them, then one plain pass applies them from key0's place in its block. */
MT_CPU_CLONES static void dropout_chunk(float *out, float *dx, const float *in, size_t n,
                                        uint32_t key0, uint32_t row, const mt_dropout *d, int wide)
{
    float p = d->p, inv_keep = p < 1.0f ? 1.0f / (1.0f - p) : 0.0f;
    if (wide) {
        dropout_chunk_avx512(out, dx, in, n, key0, row, d, dropout_threshold(p), inv_keep);
        return;
    }
    uint64_t seed = d->seed, step = d->step;
    uint32_t site = d->site;
    float keep[CPU_CHUNK + 8];
    uint32_t words[4][CPU_CHUNK / 4 + 2]; /* word w of block g, by word: stores a vector can make */
    uint32_t g0 = key0 >> 2, skip = key0 & 3, n_blocks = (uint32_t)((skip + n + 3) >> 2);
#pragma omp simd
    for (uint32_t g = 0; g < n_blocks; g++)
        mt_dropout_block_words(&words[0][g], &words[1][g], &words[2][g], &words[3][g], seed, step,
                               site, row, g0 + g);
#pragma omp simd
    for (uint32_t g = 0; g < n_blocks; g++) {
        keep[4 * g] = mt_u32_to_unit_float(words[0][g]) >= p ? inv_keep : 0.0f;
        keep[4 * g + 1] = mt_u32_to_unit_float(words[1][g]) >= p ? inv_keep : 0.0f;
        keep[4 * g + 2] = mt_u32_to_unit_float(words[2][g]) >= p ? inv_keep : 0.0f;
        keep[4 * g + 3] = mt_u32_to_unit_float(words[3][g]) >= p ? inv_keep : 0.0f;
    }
    const float *k = keep + skip;
    if (dx) {
#pragma omp simd
        for (size_t i = 0; i < n; i++) dx[i] += in[i] * k[i];
    } else {
#pragma omp simd
        for (size_t i = 0; i < n; i++) out[i] = in[i] * k[i];
    }
}

typedef struct {
    float *out, *dx;
    const float *in;
    size_t row_len, per_row;
    const mt_dropout *d;
    int wide;
} dropout_job;

/* units: chunks of at most CPU_CHUNK elements of a row, per_row of them a row */
static void dropout_chunks(void *ctx, size_t c0, size_t c1)
{
    const dropout_job *j = ctx;
    size_t row_len = j->row_len;
    for (size_t c = c0; c < c1; c++) {
        size_t r = c / j->per_row, j0 = (c % j->per_row) * CPU_CHUNK, at = r * row_len + j0;
        dropout_chunk(j->out ? j->out + at : NULL, j->dx ? j->dx + at : NULL, j->in + at,
                      cpu_chunk_len(j0, row_len), mt_dropout_key(j0, row_len, j->d->align_end),
                      j->d->row0 + (uint32_t)r, j->d, j->wide);
    }
}

/* Every row in chunks of at most CPU_CHUNK elements, the chunks of all rows shared out. */
static void dropout_rows(float *out, float *dx, const float *in, size_t rows, size_t row_len,
                         const mt_dropout *d)
{
    if (!rows || !row_len) return;
    dropout_job j = {.out = out,
                     .dx = dx,
                     .in = in,
                     .row_len = row_len,
                     .per_row = (row_len + CPU_CHUNK - 1) / CPU_CHUNK,
                     .d = d,
                     .wide = dropout_wide_supported()}; /* the CPU check made once */
    cpu_pool_for(cpu_fork(rows * row_len, 16384), rows * j.per_row, dropout_chunks, &j);
}

void cpu_dropout_forward(float *out, const float *x, size_t rows, size_t row_len,
                         const mt_dropout *d)
{
    dropout_rows(out, NULL, x, rows, row_len, d);
}

void cpu_dropout_backward(float *dx, const float *dout, size_t rows, size_t row_len,
                          const mt_dropout *d)
{
    dropout_rows(NULL, dx, dout, rows, row_len, d);
}

/* torch.optim.AdamW: p *= 1 - lr wd ; m = b1 m + (1-b1) g ; v = b2 v + (1-b2) g^2 ;
 * p -= lr (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)
 * In chunks through a function cloned per vector width (an OpenMP region's own body is
 * compiled for the baseline x86-64 only, cpu_simd.h); each element's arithmetic is the same. */
MT_CPU_CLONES static void adamw_chunk(float *restrict params, const float *restrict grads,
                                      float *restrict m, float *restrict v,
                                      const uint8_t *restrict decay_mask, size_t n,
                                      const mt_adamw_hparams *h, float bc1, float sqrt_bc2)
{
    float decay = 1.0f - h->lr * h->weight_decay, lr = h->lr, eps = h->eps;
    float b1 = h->beta1, b2 = h->beta2;
#pragma omp simd
    for (size_t i = 0; i < n; i++) {
        float g = grads[i], p = params[i];
        if (!decay_mask || decay_mask[i]) p *= decay;
        float mi = b1 * m[i] + (1.0f - b1) * g;
        float vi = b2 * v[i] + (1.0f - b2) * g * g;
        m[i] = mi;
        v[i] = vi;
        params[i] = p - lr * (mi / bc1) / (sqrtf(vi) / sqrt_bc2 + eps);
    }
}

typedef struct {
    float *params, *m, *v;
    const float *grads;
    const uint8_t *decay_mask;
    size_t n;
    const mt_adamw_hparams *h;
    float bc1, sqrt_bc2;
} adamw_job;

/* units: chunks of CPU_CHUNK elements */
static void adamw_chunks(void *ctx, size_t c0, size_t c1)
{
    const adamw_job *j = ctx;
    for (size_t c = c0; c < c1; c++) {
        size_t i0 = c * CPU_CHUNK;
        adamw_chunk(j->params + i0, j->grads + i0, j->m + i0, j->v + i0,
                    j->decay_mask ? j->decay_mask + i0 : NULL, cpu_chunk_len(i0, j->n), j->h,
                    j->bc1, j->sqrt_bc2);
    }
}

void cpu_adamw_step(float *params, const float *grads, float *m, float *v,
                    const uint8_t *decay_mask, size_t n, const mt_adamw_hparams *h, int step)
{
    float bc1 = (float)(1.0 - pow(h->beta1, step)), bc2 = (float)(1.0 - pow(h->beta2, step));
    adamw_job j = {.params = params,
                   .m = m,
                   .v = v,
                   .grads = grads,
                   .decay_mask = decay_mask,
                   .n = n,
                   .h = h,
                   .bc1 = bc1,
                   .sqrt_bc2 = sqrtf(bc2)};
    cpu_pool_for(cpu_fork(n, 16384), (n + CPU_CHUNK - 1) / CPU_CHUNK, adamw_chunks, &j);
}
