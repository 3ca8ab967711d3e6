// Token embeddings, sinusoid position tables and rotary embeddings on CUDA, with the CPU's
// formulas (engine/backend/cpu/cpu_embedding.c).
#include "cuda_ops.h"
#include "cuda_rows.cuh"

// out (BT, C) = scale * table[ids[i]]
__global__ void embedding_forward_kernel(float *out, const int32_t *ids, const float *table,
                                         size_t n, int C, float scale)
{
    CU_FOR_EACH(i, n) out[i] = scale * table[(size_t)ids[i / C] * C + i % C];
}

// dtable[ids[i]] += scale * dout[i]: repeated ids meet in the same row, hence the atomics
__global__ void embedding_backward_kernel(float *dtable, const float *dout, const int32_t *ids,
                                          size_t n, int C, float scale)
{
    CU_FOR_EACH(i, n) atomicAdd(dtable + (size_t)ids[i / C] * C + i % C, scale * dout[i]);
}

void cu_embedding_forward(float *out, const int32_t *ids, const float *table, size_t BT, int C,
                          float scale)
{
    size_t n = BT * (size_t)C;
    if (!n) return;
    embedding_forward_kernel<<<cu_grid(n), CU_THREADS, 0, cu_stream()>>>(out, ids, table, n, C,
                                                                         scale);
    cu_check(cudaGetLastError(), "embedding_forward_kernel");
}

void cu_embedding_backward(float *dtable, const float *dout, const int32_t *ids, size_t BT, int C,
                           float scale)
{
    size_t n = BT * (size_t)C;
    if (!n) return;
    embedding_backward_kernel<<<cu_grid(n), CU_THREADS, 0, cu_stream()>>>(dtable, dout, ids, n, C,
                                                                          scale);
    cu_check(cudaGetLastError(), "embedding_backward_kernel");
}

// Marian's layout: angle(p, j) = p / 10000^(2 floor(j/2) / C) in double; the first ceil(C/2)
// columns hold sin of the even j, the rest cos of the odd j
__global__ void sinusoid_fill_kernel(float *table, int P, int C)
{
    size_t n = (size_t)P * C;
    int sentinel = (C + 1) / 2;
    CU_FOR_EACH(i, n)
    {
        int p = (int)(i / C), col = (int)(i % C);
        int j = col < sentinel ? 2 * col : 2 * (col - sentinel) + 1;
        double angle = p / pow(10000.0, 2.0 * (j / 2) / C);
        table[i] = (float)(col < sentinel ? sin(angle) : cos(angle));
    }
}

void cu_sinusoid_fill(float *table, int P, int C)
{
    size_t n = (size_t)P * C;
    if (!n) return;
    sinusoid_fill_kernel<<<cu_grid(n), CU_THREADS, 0, cu_stream()>>>(table, P, C);
    cu_check(cudaGetLastError(), "sinusoid_fill_kernel");
}

// out (B, T, C) += table[pos0 + t]
__global__ void positions_add_kernel(float *out, const float *table, size_t n, int T, int C,
                                     int pos0)
{
    CU_FOR_EACH(i, n)
    {
        int t = (int)((i / C) % T), c = (int)(i % C);
        out[i] += table[(size_t)(pos0 + t) * C + c];
    }
}

void cu_positions_add(float *out, const float *table, int B, int T, int C, int pos0)
{
    size_t n = (size_t)B * T * C;
    if (!n) return;
    positions_add_kernel<<<cu_grid(n), CU_THREADS, 0, cu_stream()>>>(out, table, n, T, C, pos0);
    cu_check(cudaGetLastError(), "positions_add_kernel");
}

// dtable[pos0 + t, c] += sum_b dout[b, t, c]: a column sum over the B rows of each t
__global__ void positions_backward_kernel(float *dtable, const float *dout, int B, int T, int C,
                                          int pos0)
{
    size_t n = (size_t)T * C;
    CU_FOR_EACH(i, n)
    {
        int t = (int)(i / C), c = (int)(i % C);
        double acc = 0.0;
        for (int b = 0; b < B; b++) acc += dout[((size_t)b * T + t) * C + c];
        dtable[(size_t)(pos0 + t) * C + c] += (float)acc;
    }
}

void cu_positions_backward(float *dtable, const float *dout, int B, int T, int C, int pos0)
{
    size_t n = (size_t)T * C;
    if (!n || B <= 0) return;
    positions_backward_kernel<<<cu_grid(n), CU_THREADS, 0, cu_stream()>>>(dtable, dout, B, T, C,
                                                                          pos0);
    cu_check(cudaGetLastError(), "positions_backward_kernel");
}

// Each pair (x_a, x_b) of every head rotated by sign * pos * inv_freq[i] (fp32 angle, as HF):
//   (x_a, x_b) <- (x_a cos - x_b sin, x_b cos + x_a sin)
// pairs: rotate-half (i, i + rot_dim/2), interleaved (2i, 2i + 1). One thread per pair.
__global__ void rope_kernel(float *x, const int32_t *pos, int T, int H, int Dh, int rot_dim,
                            int pos0, const float *inv_freq, int interleaved, float sign, size_t n)
{
    int half = rot_dim / 2;
    CU_FOR_EACH(k, n)
    {
        int i = (int)(k % half);
        size_t head = k / half; // (b, t, h)
        size_t bt = head / H;
        int t = (int)(bt % T);
        float p = (float)(pos ? pos[bt] : pos0 + t);
        float angle = p * inv_freq[i];
        float cs = cosf(angle), sn = sign * sinf(angle);
        float *hp = x + head * Dh;
        int ia = interleaved ? 2 * i : i, ib = interleaved ? 2 * i + 1 : i + half;
        float xa = hp[ia], xb = hp[ib];
        hp[ia] = xa * cs - xb * sn;
        hp[ib] = xb * cs + xa * sn;
    }
}

static void rope(float *x, const int32_t *pos, int B, int T, int H, int Dh, int rot_dim, int pos0,
                 const float *inv_freq, int interleaved, float sign)
{
    size_t n = (size_t)B * T * H * (rot_dim / 2);
    if (!n) return;
    rope_kernel<<<cu_grid(n), CU_THREADS, 0, cu_stream()>>>(x, pos, T, H, Dh, rot_dim, pos0,
                                                            inv_freq, interleaved, sign, n);
    cu_check(cudaGetLastError(), "rope_kernel");
}

void cu_rope_forward(float *x, const int32_t *pos, int B, int T, int H, int Dh, int rot_dim,
                     int pos0, const float *inv_freq, int interleaved)
{
    rope(x, pos, B, T, H, Dh, rot_dim, pos0, inv_freq, interleaved, 1.0f);
}

// the rotation is orthogonal: its transpose is the rotation by the opposite angle
void cu_rope_backward(float *dx, const int32_t *pos, int B, int T, int H, int Dh, int rot_dim,
                      int pos0, const float *inv_freq, int interleaved)
{
    rope(dx, pos, B, T, H, Dh, rot_dim, pos0, inv_freq, interleaved, -1.0f);
}
