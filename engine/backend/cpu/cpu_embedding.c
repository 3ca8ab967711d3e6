/* Token embeddings, position tables and rotary embeddings. */
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/cpu_par.h"

#include <math.h>

void cpu_embedding_forward(float *out, const int32_t *ids, const float *table, size_t BT, int C,
                           float scale)
{
    CPU_FOR(cpu_fork(BT * (size_t)C, 16384), "omp parallel for", (size_t i = 0; i < BT; i++),
            const float *row = table + (size_t)ids[i] * C;
            float *o = out + i * (size_t)C; for (int c = 0; c < C; c++) o[c] = scale * row[c]);
}

/* dtable[ids[i]] += scale * dout[i]. Repeated ids would race if threads split the tokens, so
 * threads split the columns instead and each walks all tokens. */
void cpu_embedding_backward(float *dtable, const float *dout, const int32_t *ids, size_t BT, int C,
                            float scale)
{
    enum { COLS = 64 };
    int n_blocks = (C + COLS - 1) / COLS;
#pragma omp parallel for if (BT * (size_t)C > 16384)
    for (int blk = 0; blk < n_blocks; blk++) {
        int c0 = blk * COLS, c1 = c0 + COLS < C ? c0 + COLS : C;
        for (size_t i = 0; i < BT; i++) {
            float *row = dtable + (size_t)ids[i] * C;
            const float *g = dout + i * (size_t)C;
            for (int c = c0; c < c1; c++) row[c] += scale * g[c];
        }
    }
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

void cpu_positions_add(float *out, const float *table, int B, int T, int C, int pos0)
{
    CPU_FOR(cpu_fork((size_t)B * T * C, 16384), "omp parallel for", (int bt = 0; bt < B * T; bt++),
            float *o = out + (size_t)bt * C;
            const float *row = table + (size_t)(pos0 + bt % T) * C;
            for (int c = 0; c < C; c++) o[c] += row[c]);
}

void cpu_positions_backward(float *dtable, const float *dout, int B, int T, int C, int pos0)
{
#pragma omp parallel for if ((size_t)B * T * C > 16384)
    for (int t = 0; t < T; t++) {
        float *row = dtable + (size_t)(pos0 + t) * C;
        for (int b = 0; b < B; b++) {
            const float *g = dout + ((size_t)b * T + t) * C;
            for (int c = 0; c < C; c++) row[c] += g[c];
        }
    }
}

/* Pairs whose cos and sin one token computes at a time, once for all its heads. */
#define ROPE_PAIRS_BLOCK 128

/* Rotate each pair (x_a, x_b) of every head by `sign` * pos * inv_freq[i]:
 *   (x_a, x_b) <- (x_a cos - x_b sin, x_b cos + x_a sin)
 * pairs: rotate-half (i, i + rot_dim/2), interleaved (2i, 2i + 1). The angle is the fp32
 * product pos * inv_freq, as HF forms its cos/sin tables, so logits match transformers. A
 * token's heads share its angles: each cos and sin is computed once per token (a block of
 * pairs at a time), not once per head. */
static void rope_token(float *xt, float p, int H, int Dh, int half, const float *inv_freq,
                       int interleaved, float sign)
{
    float cs[ROPE_PAIRS_BLOCK], sn[ROPE_PAIRS_BLOCK];
    for (int i0 = 0; i0 < half; i0 += ROPE_PAIRS_BLOCK) {
        int n = half - i0 < ROPE_PAIRS_BLOCK ? half - i0 : ROPE_PAIRS_BLOCK;
        for (int i = 0; i < n; i++) {
            float angle = p * inv_freq[i0 + i];
            cs[i] = cosf(angle);
            sn[i] = sign * sinf(angle);
        }
        for (int h = 0; h < H; h++) {
            float *head = xt + (size_t)h * Dh;
            for (int i = 0; i < n; i++) {
                int ia = interleaved ? 2 * (i0 + i) : i0 + i;
                int ib = interleaved ? ia + 1 : ia + half;
                float xa = head[ia], xb = head[ib];
                head[ia] = xa * cs[i] - xb * sn[i];
                head[ib] = xb * cs[i] + xa * sn[i];
            }
        }
    }
}

static void rope_rotate(float *x, const int32_t *pos, int B, int T, int H, int Dh, int rot_dim,
                        int pos0, const float *inv_freq, int interleaved, float sign)
{
    int half = rot_dim / 2;
    CPU_FOR(cpu_fork((size_t)B * T * H * Dh, 16384), "omp parallel for",
            (int bt = 0; bt < B * T; bt++),
            rope_token(x + (size_t)bt * H * Dh, (float)(pos ? pos[bt] : pos0 + bt % T), H, Dh, half,
                       inv_freq, interleaved, sign));
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
