// Attention on CUDA (semantics: mt_attn_desc in mtlab/backend.h; CPU reference:
// engine/backend/cpu/cpu_attention.c).
//
// Forward is tiled (FlashAttention's online softmax): a block takes 16 queries of one
// (b, h), walks the keys in tiles of 32 held in shared memory, keeps each query's running max
// m, sum l and unnormalised output in shared memory, and never forms the Tq x Tk matrix. When
// the caller wants the probabilities (backward reads them, probes show them), a second pass
// over the key tiles writes att = exp(s - m) / l with the final m and l.
//   S = scale * Q K^T ; P = softmax over visible keys ; O = P V
// One query per (b, h) (a decoding step, att not wanted) takes its own kernel instead, split
// over the keys (FlashDecoding): the 16-query tiles above would leave 15 of 16 rows idle and
// put one block on each (b, h), too few to keep the memory system busy at long caches. Each
// block takes a chunk of keys of one (b, h), each warp every DEC_WARPS-th key of the chunk (one
// key row per warp step, coalesced over Dh; the query and the running output in registers),
// and writes the chunk's (m, l, unnormalised o); a second kernel combines the chunks:
//   M = max_s m_s ; L = sum_s l_s exp(m_s - M) ; O = sum_s o_s exp(m_s - M) / L
// With one chunk the first kernel writes O / L itself.
// Backward reads the stored probabilities, as the contract has it, through cuBLAS (each product
// one batch over all batch rows and heads, cu_gemm_bh):
//   dV += P^T dO ; dP = dO V^T ; dS = P * (dP - rowsum(P * dP)) ;
//   dQ += scale * dS K ; dK += scale * dS^T Q
#include "cuda_ops.h"
#include "cuda_rows.cuh"

#define QT 16 // queries per block
#define KT 32 // keys per tile (= warp size: one lane per key in the softmax update)
#define THREADS 256

// Key j visible to query i (position q_pos0 + i on the key axis) of batch row b: mask, causal,
// sliding window, exactly cpu_attn_visible.
__device__ __forceinline__ bool visible(const mt_attn_desc &d, const uint8_t *mask, size_t mstride,
                                        int b, int i, int j)
{
    if (mask && !mask[(size_t)b * mstride + j]) return false;
    if (d.causal) {
        int p = d.q_pos0 + i;
        if (j > p) return false;
        if (d.window > 0 && j < p - d.window) return false;
    }
    return true;
}

__global__ void attention_forward_kernel(float *out, float *att, const float *q, const float *k,
                                         const float *v, mt_attn_desc d, size_t kvs, size_t mstride)
{
    extern __shared__ float smem[];
    const int Dh = d.Dh, C = d.H * Dh, Tq = d.Tq, Tk = d.Tk;
    // Ks rows are padded to Dh + 1 floats: the score loop's 32 lanes read 32 keys at one column,
    // which a stride of Dh (a multiple of 32 banks) would put in one shared-memory bank
    const int KS = Dh + 1;
    float *Qs = smem, *Ks = Qs + QT * Dh, *Vs = Ks + KT * KS, *Os = Vs + KT * Dh;
    float *S = Os + QT * Dh, *row_m = S + QT * KT, *row_l = row_m + QT, *corr = row_l + QT;
    int tiles_q = (Tq + QT - 1) / QT;
    int bh = blockIdx.x / tiles_q, q0 = (blockIdx.x % tiles_q) * QT;
    int b = bh / d.H, h = bh % d.H;
    const float *qb = q + (size_t)b * Tq * C + (size_t)h * Dh;
    const float *kb = k + (size_t)b * kvs + (size_t)h * Dh,
                *vb = v + (size_t)b * kvs + (size_t)h * Dh;
    const uint8_t *mask = d.key_mask;
    int nq = Tq - q0 < QT ? Tq - q0 : QT;

    for (int e = threadIdx.x; e < QT * Dh; e += THREADS) {
        int i = e / Dh, c = e % Dh;
        Qs[e] = i < nq ? qb[(size_t)(q0 + i) * C + c] : 0.0f;
        Os[e] = 0.0f;
    }
    if (threadIdx.x < QT) row_m[threadIdx.x] = -INFINITY, row_l[threadIdx.x] = 0.0f;
    // keys past the last query's causal horizon are invisible to the whole tile
    int k_end = Tk;
    if (d.causal && d.q_pos0 + q0 + nq < Tk) k_end = d.q_pos0 + q0 + nq;
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;

    for (int pass = 0; pass < (att ? 2 : 1); pass++) {
        for (int j0 = 0; j0 < k_end; j0 += KT) {
            __syncthreads();
            for (int e = threadIdx.x; e < KT * Dh; e += THREADS) {
                int j = e / Dh, c = e % Dh;
                bool in = j0 + j < Tk;
                Ks[j * KS + c] = in ? kb[(size_t)(j0 + j) * C + c] : 0.0f;
                if (!pass) Vs[e] = in ? vb[(size_t)(j0 + j) * C + c] : 0.0f;
            }
            __syncthreads();
            for (int e = threadIdx.x; e < QT * KT; e += THREADS) {
                int i = e / KT, j = e % KT;
                float s = 0.0f;
                for (int c = 0; c < Dh; c++) s += Qs[i * Dh + c] * Ks[j * KS + c];
                bool vis = i < nq && j0 + j < Tk && visible(d, mask, mstride, b, q0 + i, j0 + j);
                S[e] = vis ? d.scale * s : -INFINITY;
            }
            __syncthreads();
            if (pass == 1) { // the probabilities with the final statistics
                for (int e = threadIdx.x; e < QT * KT; e += THREADS) {
                    int i = e / KT, j = e % KT;
                    if (i >= nq || j0 + j >= Tk) continue;
                    float l = row_l[i];
                    float p = S[e] == -INFINITY || l == 0.0f ? 0.0f : expf(S[e] - row_m[i]) / l;
                    att[((size_t)bh * Tq + q0 + i) * Tk + j0 + j] = p;
                }
                continue;
            }
            // online softmax: warp w updates rows w and w + 8, one lane per key of the tile
            for (int i = warp; i < QT; i += THREADS / 32) {
                float s = S[i * KT + lane];
                float m_old = row_m[i], m_new = fmaxf(m_old, cu_warp_max(s));
                float p = s == -INFINITY ? 0.0f : expf(s - m_new);
                float sum = cu_warp_sum(p);
                S[i * KT + lane] = p;
                // every lane has read row_m[i] before lane 0 overwrites it: the shuffles order
                // execution, not shared memory (compute-sanitizer racecheck's hazard)
                __syncwarp();
                if (lane == 0) {
                    float c = m_old == -INFINITY ? 0.0f : expf(m_old - m_new);
                    if (m_new == -INFINITY) c = 1.0f; // nothing visible yet
                    corr[i] = c;
                    row_l[i] = row_l[i] * c + sum;
                    row_m[i] = m_new;
                }
            }
            __syncthreads();
            for (int e = threadIdx.x; e < QT * Dh; e += THREADS) {
                int i = e / Dh, c = e % Dh;
                float acc = Os[e] * corr[i];
                for (int j = 0; j < KT; j++) acc += S[i * KT + j] * Vs[j * Dh + c];
                Os[e] = acc;
            }
        }
        __syncthreads();
    }
    // keys beyond the causal horizon: probability 0
    if (att && k_end < Tk)
        for (int e = threadIdx.x; e < nq * (Tk - k_end); e += THREADS) {
            int i = e / (Tk - k_end), j = k_end + e % (Tk - k_end);
            att[((size_t)bh * Tq + q0 + i) * Tk + j] = 0.0f;
        }
    // a query with no visible key: zero output
    for (int e = threadIdx.x; e < nq * Dh; e += THREADS) {
        int i = e / Dh, c = e % Dh;
        float l = row_l[i];
        out[(size_t)b * Tq * C + (size_t)(q0 + i) * C + (size_t)h * Dh + c] =
            l > 0.0f ? Os[e] / l : 0.0f;
    }
}

#define DEC_WARPS 4
#define DEC_MAX_DH 256 // registers hold Dh / 32 floats of the query and of the output per lane

// Partial results of chunk s of (b, h): part[(bh * S + s) * (Dh + 2) + ...] = o[0..Dh), m, l.
template <int NV>
__global__ void attention_decode_kernel(float *out, float *part, const float *q, const float *k,
                                        const float *v, mt_attn_desc d, size_t kvs, size_t mstride,
                                        int chunk)
{
    extern __shared__ float wo[]; // DEC_WARPS x Dh: each warp's unnormalised output
    __shared__ float wm[DEC_WARPS], wl[DEC_WARPS];
    const int Dh = d.Dh, C = d.H * Dh;
    const int bh = blockIdx.x, b = bh / d.H, h = bh % d.H, split = blockIdx.y;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const float *qb = q + (size_t)b * C + (size_t)h * Dh;
    const float *kb = k + (size_t)b * kvs + (size_t)h * Dh,
                *vb = v + (size_t)b * kvs + (size_t)h * Dh;
    float qr[NV], o[NV];
#pragma unroll
    for (int i = 0; i < NV; i++) {
        int c = lane + 32 * i;
        qr[i] = c < Dh ? qb[c] : 0.0f;
        o[i] = 0.0f;
    }
    float m = -INFINITY, l = 0.0f;
    int j0 = split * chunk, j1 = min(d.Tk, j0 + chunk);
    if (d.causal && d.q_pos0 + 1 < j1) j1 = d.q_pos0 + 1; // keys after the query's position
    for (int j = j0 + warp; j < j1; j += DEC_WARPS) {
        if (!visible(d, d.key_mask, mstride, b, 0, j)) continue; // the same j on every lane
        const float *kr = kb + (size_t)j * C, *vr = vb + (size_t)j * C;
        float s = 0.0f;
#pragma unroll
        for (int i = 0; i < NV; i++) {
            int c = lane + 32 * i;
            if (c < Dh) s += qr[i] * kr[c];
        }
        s = d.scale * cu_warp_sum(s);
        float m_new = fmaxf(m, s);
        float corr = expf(m - m_new), p = expf(s - m_new); // m = -inf at the first key: corr 0
        l = l * corr + p;
#pragma unroll
        for (int i = 0; i < NV; i++) {
            int c = lane + 32 * i;
            if (c < Dh) o[i] = o[i] * corr + p * vr[c];
        }
        m = m_new;
    }
#pragma unroll
    for (int i = 0; i < NV; i++) {
        int c = lane + 32 * i;
        if (c < Dh) wo[warp * Dh + c] = o[i];
    }
    if (lane == 0) wm[warp] = m, wl[warp] = l;
    __syncthreads();
    float M = -INFINITY;
    for (int w = 0; w < DEC_WARPS; w++) M = fmaxf(M, wm[w]);
    float L = 0.0f;
    for (int w = 0; w < DEC_WARPS; w++)
        if (wm[w] != -INFINITY) L += wl[w] * expf(wm[w] - M);
    float *pp = gridDim.y > 1 ? part + ((size_t)bh * gridDim.y + split) * (Dh + 2) : NULL;
    for (int c = threadIdx.x; c < Dh; c += blockDim.x) {
        float O = 0.0f;
        for (int w = 0; w < DEC_WARPS; w++)
            if (wm[w] != -INFINITY) O += wo[w * Dh + c] * expf(wm[w] - M);
        if (gridDim.y == 1) out[(size_t)b * C + (size_t)h * Dh + c] = L > 0.0f ? O / L : 0.0f;
        else pp[c] = O;
    }
    if (gridDim.y > 1 && threadIdx.x == 0) pp[Dh] = M, pp[Dh + 1] = L;
}

__global__ void attention_decode_combine_kernel(float *out, const float *part, int H, int Dh, int S)
{
    const int bh = blockIdx.x, b = bh / H, h = bh % H;
    const float *pp = part + (size_t)bh * S * (Dh + 2);
    float M = -INFINITY;
    for (int s = 0; s < S; s++) M = fmaxf(M, pp[(size_t)s * (Dh + 2) + Dh]);
    float L = 0.0f;
    for (int s = 0; s < S; s++) {
        float ms = pp[(size_t)s * (Dh + 2) + Dh];
        if (ms != -INFINITY) L += pp[(size_t)s * (Dh + 2) + Dh + 1] * expf(ms - M);
    }
    for (int c = threadIdx.x; c < Dh; c += blockDim.x) {
        float O = 0.0f;
        for (int s = 0; s < S; s++) {
            float ms = pp[(size_t)s * (Dh + 2) + Dh];
            if (ms != -INFINITY) O += pp[(size_t)s * (Dh + 2) + c] * expf(ms - M);
        }
        out[(size_t)b * H * Dh + (size_t)h * Dh + c] = L > 0.0f ? O / L : 0.0f;
    }
}

// Chunks of keys for B*H single queries: enough blocks to fill the device (about 1024), none
// shorter than 64 keys.
static int decode_splits(const mt_attn_desc *d)
{
    int bh = d->B * d->H, want = (1024 + bh - 1) / bh, most = (d->Tk + 63) / 64;
    return want < 1 ? 1 : want > most ? most : want;
}

template <int NV>
static void decode_launch(float *out, float *part, const float *q, const float *k, const float *v,
                          const mt_attn_desc *d, size_t kvs, size_t mstride, int S, int chunk)
{
    dim3 grid((unsigned)(d->B * d->H), (unsigned)S);
    size_t smem = (size_t)DEC_WARPS * d->Dh * sizeof(float);
    attention_decode_kernel<NV>
        <<<grid, DEC_WARPS * 32, smem, cu_stream()>>>(out, part, q, k, v, *d, kvs, mstride, chunk);
}

static size_t kv_stride(const mt_attn_desc *d)
{
    return d->kv_bstride ? d->kv_bstride : (size_t)d->Tk * d->H * d->Dh;
}

void cu_attention_forward(float *out, float *att, const float *q, const float *k, const float *v,
                          const mt_attn_desc *d)
{
    if (d->B <= 0 || d->H <= 0 || d->Tq <= 0 || d->Dh <= 0) return;
    if (d->Tk <= 0) { // nothing to attend to: zero outputs
        cu_memzero(out, (size_t)d->B * d->Tq * d->H * d->Dh * sizeof(float));
        return;
    }
    size_t mstride = d->mask_bstride ? d->mask_bstride : (size_t)d->Tk;
    if (d->Tq == 1 && !att && d->Dh <= DEC_MAX_DH) {
        int S = decode_splits(d), chunk = (d->Tk + S - 1) / S;
        S = (d->Tk + chunk - 1) / chunk;
        float *part = NULL;
        if (S > 1 &&
            !(part = (float *)cu_scratch((size_t)d->B * d->H * S * (d->Dh + 2) * sizeof(float))))
            return;
        if (d->Dh <= 32) decode_launch<1>(out, part, q, k, v, d, kv_stride(d), mstride, S, chunk);
        else if (d->Dh <= 64)
            decode_launch<2>(out, part, q, k, v, d, kv_stride(d), mstride, S, chunk);
        else if (d->Dh <= 128)
            decode_launch<4>(out, part, q, k, v, d, kv_stride(d), mstride, S, chunk);
        else decode_launch<8>(out, part, q, k, v, d, kv_stride(d), mstride, S, chunk);
        cu_check(cudaGetLastError(), "attention_decode_kernel");
        if (S > 1) {
            attention_decode_combine_kernel<<<(unsigned)(d->B * d->H), 128, 0, cu_stream()>>>(
                out, part, d->H, d->Dh, S);
            cu_check(cudaGetLastError(), "attention_decode_combine_kernel");
            cu_scratch_free(part);
        }
        return;
    }
    size_t smem = ((size_t)(2 * QT + 2 * KT) * d->Dh + KT + QT * KT + 3 * QT) * sizeof(float);
    cu_check(cudaFuncSetAttribute(attention_forward_kernel,
                                  cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem),
             "attention_forward_kernel shared memory");
    unsigned blocks = (unsigned)d->B * d->H * ((d->Tq + QT - 1) / QT);
    attention_forward_kernel<<<blocks, THREADS, smem, cu_stream()>>>(out, att, q, k, v, *d,
                                                                     kv_stride(d), mstride);
    cu_check(cudaGetLastError(), "attention_forward_kernel");
}

// dS = P * (dP - rowsum(P * dP)), in place on dP (rows of Tk)
__global__ void softmax_backward_rows_kernel(float *ds, const float *p, int Tk)
{
    size_t r = blockIdx.x;
    const float *pr = p + r * Tk;
    float *dr = ds + r * Tk;
    double dot = 0.0;
    for (int j = threadIdx.x; j < Tk; j += blockDim.x) dot += (double)pr[j] * dr[j];
    float dt = (float)cu_block_sum(dot);
    for (int j = threadIdx.x; j < Tk; j += blockDim.x) dr[j] = pr[j] * (dr[j] - dt);
}

void cu_attention_backward(float *dq, float *dk, float *dv, float *datt, const float *dout,
                           const float *q, const float *k, const float *v, const float *att,
                           const mt_attn_desc *d)
{
    const int B = d->B, H = d->H, Tq = d->Tq, Tk = d->Tk, Dh = d->Dh, C = H * Dh;
    if (B <= 0 || H <= 0 || Tq <= 0 || Tk <= 0 || Dh <= 0) return;
    // every product is one batch over the B x H grid: P and dS are (B, H, Tq, Tk), head h of a
    // row of q, dout (stride Tq * C over b) or k, v (stride kvs) the Dh columns from h * Dh
    size_t kvs = kv_stride(d), pp = (size_t)Tq * Tk, ps = (size_t)H * pp, qs = (size_t)Tq * C;
    if (dv)
        cu_gemm_bh(1, 0, Tk, Dh, Tq, 1.0f, att, Tk, ps, pp, dout, C, qs, Dh, 1.0f, dv, C, kvs, Dh,
                   B, H);
    cu_gemm_bh(0, 1, Tq, Tk, Dh, 1.0f, dout, C, qs, Dh, v, C, kvs, Dh, 0.0f, datt, Tk, ps, pp, B,
               H);
    softmax_backward_rows_kernel<<<(unsigned)((size_t)B * H * Tq), CU_ROW_THREADS, 0,
                                   cu_stream()>>>(datt, att, Tk);
    cu_check(cudaGetLastError(), "softmax_backward_rows_kernel");
    if (dq)
        cu_gemm_bh(0, 0, Tq, Dh, Tk, d->scale, datt, Tk, ps, pp, k, C, kvs, Dh, 1.0f, dq, C, qs, Dh,
                   B, H);
    if (dk)
        cu_gemm_bh(1, 0, Tk, Dh, Tq, d->scale, datt, Tk, ps, pp, q, C, qs, Dh, 1.0f, dk, C, kvs, Dh,
                   B, H);
}
