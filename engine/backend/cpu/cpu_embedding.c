/* Token embeddings, position tables and rotary embeddings. */
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/cpu_par.h"
#include "backend/cpu/cpu_pool.h"

#include <math.h>
#include <stdlib.h>

#include "backend/cpu/cpu_simd.h"
#include "mtlab/error.h"

/* An embedding's tokens or column blocks for the pool (cpu_pool_for) */
typedef struct {
    float *out;
    const float *in;
    const int32_t *ids;
    size_t BT;
    int C;
    float scale;
} embed_job;

static void embed_tokens(void *ctx, size_t i0, size_t i1)
{
    const embed_job *j = ctx;
    for (size_t i = i0; i < i1; i++) {
        const float *row = j->in + (size_t)j->ids[i] * j->C;
        float *o = j->out + i * (size_t)j->C;
        for (int c = 0; c < j->C; c++) o[c] = j->scale * row[c];
    }
}

void cpu_embedding_forward(float *out, const int32_t *ids, const float *table, size_t BT, int C,
                           float scale)
{
    embed_job j = {.out = out, .in = table, .ids = ids, .BT = BT, .C = C, .scale = scale};
    cpu_pool_for(cpu_fork(BT * (size_t)C, 16384), BT, embed_tokens, &j);
}

/* columns of an embedding's gradient a unit */
enum { EMBED_COLS = 64 };

static void embed_backward_blocks(void *ctx, size_t b0, size_t b1)
{
    const embed_job *j = ctx;
    int C = j->C;
    for (size_t blk = b0; blk < b1; blk++) {
        int c0 = (int)blk * EMBED_COLS, c1 = c0 + EMBED_COLS < C ? c0 + EMBED_COLS : C;
        for (size_t i = 0; i < j->BT; i++) {
            float *row = j->out + (size_t)j->ids[i] * C;
            const float *g = j->in + i * (size_t)C;
            for (int c = c0; c < c1; c++) row[c] += j->scale * g[c];
        }
    }
}

/* dtable[ids[i]] += scale * dout[i]. Repeated ids would race if threads split the tokens, so
 * threads split the columns instead and each walks all tokens. */
void cpu_embedding_backward(float *dtable, const float *dout, const int32_t *ids, size_t BT, int C,
                            float scale)
{
    embed_job j = {.out = dtable, .in = dout, .ids = ids, .BT = BT, .C = C, .scale = scale};
    cpu_pool_for(cpu_fork(BT * (size_t)C, 16384), (size_t)(C + EMBED_COLS - 1) / EMBED_COLS,
                 embed_backward_blocks, &j);
}

/* HF MarianSinusoidalPositionalEmbedding: angle(p, j) = p / 10000^(2 floor(j/2) / C), in
 * double; the first ceil(C/2) columns hold sin of the even j, the rest cos of the odd j. */
void cpu_sinusoid_fill(float *table, int P, int C)
{
    int sentinel = (C + 1) / 2;
    for (int p = 0; p < P; p++) {
        for (int col = 0; col < C; col++) {
            int j = col < sentinel ? 2 * col : 2 * (col - sentinel) + 1;
            double angle = p / pow(10000.0, 2.0 * (j / 2) / C);
            table[(size_t)p * C + col] = (float)(col < sentinel ? sin(angle) : cos(angle));
        }
    }
}

/* A position table's rows for the pool (cpu_pool_for) */
typedef struct {
    float *out;
    const float *in;
    int B, T, C, pos0;
} positions_job;

/* units: rows b T + t of out, each adding row pos0 + t of the table */
static void positions_rows(void *ctx, size_t r0, size_t r1)
{
    const positions_job *j = ctx;
    for (size_t bt = r0; bt < r1; bt++) {
        float *o = j->out + bt * (size_t)j->C;
        const float *row = j->in + (size_t)(j->pos0 + (int)(bt % (size_t)j->T)) * j->C;
        for (int c = 0; c < j->C; c++) o[c] += row[c];
    }
}

void cpu_positions_add(float *out, const float *table, int B, int T, int C, int pos0)
{
    positions_job j = {.out = out, .in = table, .B = B, .T = T, .C = C, .pos0 = pos0};
    cpu_pool_for(cpu_fork((size_t)B * T * C, 16384), (size_t)B * T, positions_rows, &j);
}

/* units: positions t, row pos0 + t of dtable (out) adding that position's gradient from every
 * batch row in order */
static void positions_backward_rows(void *ctx, size_t t0, size_t t1)
{
    const positions_job *j = ctx;
    for (size_t t = t0; t < t1; t++) {
        float *row = j->out + (size_t)(j->pos0 + (int)t) * j->C;
        for (int b = 0; b < j->B; b++) {
            const float *g = j->in + ((size_t)b * j->T + t) * j->C;
            for (int c = 0; c < j->C; c++) row[c] += g[c];
        }
    }
}

void cpu_positions_backward(float *dtable, const float *dout, int B, int T, int C, int pos0)
{
    positions_job j = {.out = dtable, .in = dout, .B = B, .T = T, .C = C, .pos0 = pos0};
    cpu_pool_for(cpu_fork((size_t)B * T * C, 16384), (size_t)T, positions_backward_rows, &j);
}

/* Rotate each pair (x_a, x_b) of every head by `sign` * pos * inv_freq[i]:
 *   (x_a, x_b) <- (x_a cos - x_b sin, x_b cos + x_a sin)
 * pairs: rotate-half (i, i + rot_dim/2), interleaved (2i, 2i + 1). The angle is the fp32
 * product pos * inv_freq, as HF forms its cos/sin tables, so logits match transformers. A
 * token's heads share its angles, and where the rows share their positions (pos NULL: pos0 + t
 * for every row) every row shares them too: the cosines and sines of the T positions are taken
 * once a call into a table, not once a token (a training step's 4,096 tokens took 98,304 cosf
 * and sinf calls a rotation, about 2% of transformer++-small's step). The same floats either
 * way. */

/* cs, sn (half): the cosines and signed sines of position p's angles */
static void rope_angles(float *cs, float *sn, float p, int half, const float *inv_freq, float sign)
{
    for (int i = 0; i < half; i++) {
        float angle = p * inv_freq[i];
        cs[i] = cosf(angle);
        sn[i] = sign * sinf(angle);
    }
}

/* One token's heads rotated by the angles' cosines cs and signed sines sn */
MT_CPU_CLONES static void rope_apply(float *xt, const float *cs, const float *sn, int H, int Dh,
                                     int half, int interleaved)
{
    for (int h = 0; h < H; h++) {
        float *head = xt + (size_t)h * Dh;
        if (interleaved) {
            for (int i = 0; i < half; i++) {
                float xa = head[2 * i], xb = head[2 * i + 1];
                head[2 * i] = xa * cs[i] - xb * sn[i];
                head[2 * i + 1] = xb * cs[i] + xa * sn[i];
            }
        } else {
            float *hb = head + half;
#pragma omp simd
            for (int i = 0; i < half; i++) {
                float xa = head[i], xb = hb[i];
                head[i] = xa * cs[i] - xb * sn[i];
                hb[i] = xb * cs[i] + xa * sn[i];
            }
        }
    }
}

/* A token's own angles (explicit positions), on the stack up to this many pairs */
#define ROPE_PAIRS_STACK 256

static void rope_token(float *xt, float p, int H, int Dh, int half, const float *inv_freq,
                       int interleaved, float sign)
{
    float cs[ROPE_PAIRS_STACK], sn[ROPE_PAIRS_STACK];
    if (half <= ROPE_PAIRS_STACK) {
        rope_angles(cs, sn, p, half, inv_freq, sign);
        rope_apply(xt, cs, sn, H, Dh, half, interleaved);
        return;
    }
    float *t = mt_xmalloc(2 * (size_t)half * sizeof *t);
    rope_angles(t, t + half, p, half, inv_freq, sign);
    rope_apply(xt, t, t + half, H, Dh, half, interleaved);
    free(t);
}

/* A rotation's tokens for the pool (cpu_pool_for): unit bt is token bt of B * T */
typedef struct {
    float *x;
    const int32_t *pos;
    const float *inv_freq, *table;
    int T, H, Dh, half, interleaved;
    float sign;
} rope_job;

/* tokens at their own positions */
static void rope_tokens(void *ctx, size_t u0, size_t u1)
{
    const rope_job *j = ctx;
    for (size_t bt = u0; bt < u1; bt++)
        rope_token(j->x + bt * j->H * j->Dh, (float)j->pos[bt], j->H, j->Dh, j->half, j->inv_freq,
                   j->interleaved, j->sign);
}

/* tokens at positions pos0 + t, their angles from the table */
static void rope_table_tokens(void *ctx, size_t u0, size_t u1)
{
    const rope_job *j = ctx;
    for (size_t bt = u0; bt < u1; bt++) {
        const float *cs = j->table + 2 * (bt % (size_t)j->T) * j->half;
        rope_apply(j->x + bt * j->H * j->Dh, cs, cs + j->half, j->H, j->Dh, j->half,
                   j->interleaved);
    }
}

static void rope_rotate(float *x, const int32_t *pos, int B, int T, int H, int Dh, int rot_dim,
                        int pos0, const float *inv_freq, int interleaved, float sign)
{
    int half = rot_dim / 2, fork = cpu_fork((size_t)B * T * H * Dh, 16384);
    rope_job j = {.x = x,
                  .pos = pos,
                  .inv_freq = inv_freq,
                  .T = T,
                  .H = H,
                  .Dh = Dh,
                  .half = half,
                  .interleaved = interleaved,
                  .sign = sign};
    if (pos) {
        cpu_pool_for(fork, (size_t)B * T, rope_tokens, &j);
        return;
    }
    /* the table: position t's cosines at table + 2 t half, its sines after them (a decoding
     * step's few on the stack) */
    float small[2 * ROPE_PAIRS_STACK];
    size_t n_table = 2 * (size_t)T * half;
    float *table = n_table <= 2 * ROPE_PAIRS_STACK ? small : mt_xmalloc(n_table * sizeof *table);
    for (int t = 0; t < T; t++)
        rope_angles(table + 2 * (size_t)t * half, table + (2 * (size_t)t + 1) * half,
                    (float)(pos0 + t), half, inv_freq, sign);
    j.table = table;
    cpu_pool_for(fork, (size_t)B * T, rope_table_tokens, &j);
    if (table != small) free(table);
}

void cpu_rope_forward(float *x, const int32_t *pos, int B, int T, int H, int Dh, int rot_dim,
                      int pos0, const float *inv_freq, int interleaved)
{
    rope_rotate(x, pos, B, T, H, Dh, rot_dim, pos0, inv_freq, interleaved, 1.0f);
}

/* the rotation is orthogonal: its transpose is the rotation by the opposite angle */
void cpu_rope_backward(float *dx, const int32_t *pos, int B, int T, int H, int Dh, int rot_dim,
                       int pos0, const float *inv_freq, int interleaved)
{
    rope_rotate(dx, pos, B, T, H, Dh, rot_dim, pos0, inv_freq, interleaved, -1.0f);
}
