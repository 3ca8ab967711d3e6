// Multi-scale retention on CUDA (semantics: mt_retention_desc in mtlab/backend.h; CPU
// reference: engine/backend/cpu/cpu_retention.c). The parallel form materialises att and r as
// the contract asks (backward reads them), with the products on cuBLAS and one kernel per row
// for the decay matrix and the normaliser:
//   S = Q K^T ; att = (S * D) / r ; O = att V
//   D[n, m] = gamma^(n-m) / sqrt(sum_{m' <= n visible} gamma^(n-m')) for visible m <= n, else 0
//   r[n] = clamp(sum_m |S[n,m] D[n,m]|, 1, 5e4)
// backward (r constant): dV += att^T dO ; dP = dO V^T ; dS = dP * D / r ; dQ += dS K ;
// dK += dS^T Q. The recurrent state fill and step are one thread per state element.
#include "cuda_ops.h"
#include "cuda_rows.cuh"

// The decays as kernel arguments (gamma is host data in the descriptor).
struct gammas {
    double log_gamma[MT_RETENTION_MAX_HEADS];
    float gamma[MT_RETENTION_MAX_HEADS];
};

static gammas gammas_of(const mt_retention_desc *d)
{
    gammas g;
    for (int h = 0; h < d->H && h < MT_RETENTION_MAX_HEADS; h++) {
        g.gamma[h] = d->gamma[h];
        g.log_gamma[h] = log((double)d->gamma[h]);
    }
    return g;
}

__device__ __forceinline__ bool ret_visible(const uint8_t *mask, int T, int b, int m)
{
    return !mask || mask[(size_t)b * T + m] != 0;
}

// 1 / sqrt(sum of the visible decay weights gamma^(n-m), m <= n) of row n; 0 without keys
__device__ double row_inv_scale(const uint8_t *mask, int T, int b, int n, double lg)
{
    double sum = 0.0;
    for (int m = threadIdx.x; m <= n; m += blockDim.x)
        if (ret_visible(mask, T, b, m)) sum += exp((n - m) * lg);
    sum = cu_block_sum(sum);
    return sum > 0.0 ? 1.0 / sqrt(sum) : 0.0;
}

// One block per row (b, h, n) of att (B, H, T, T): scale S by D, normalise by r.
__global__ void retention_rows_forward_kernel(float *att, float *r, const uint8_t *mask, int H,
                                              int T, gammas g)
{
    size_t row = blockIdx.x;
    int n = (int)(row % T), h = (int)((row / T) % H), b = (int)(row / ((size_t)T * H));
    double lg = g.log_gamma[h], inv = row_inv_scale(mask, T, b, n, lg);
    float *p = att + row * T;
    double abs_sum = 0.0;
    for (int m = threadIdx.x; m < T; m += blockDim.x) {
        float dnm = m > n || !ret_visible(mask, T, b, m) ? 0.0f : (float)(exp((n - m) * lg) * inv);
        p[m] *= dnm;
        abs_sum += fabsf(p[m]);
    }
    abs_sum = cu_block_sum(abs_sum);
    float rn = (float)fmin(fmax(abs_sum, 1.0), 5e4);
    for (int m = threadIdx.x; m < T; m += blockDim.x) p[m] /= rn;
    if (threadIdx.x == 0) r[row] = rn;
}

// dS[n, m] *= D[n, m] / r[n]
__global__ void retention_rows_backward_kernel(float *ds, const float *r, const uint8_t *mask,
                                               int H, int T, gammas g)
{
    size_t row = blockIdx.x;
    int n = (int)(row % T), h = (int)((row / T) % H), b = (int)(row / ((size_t)T * H));
    double lg = g.log_gamma[h], inv = row_inv_scale(mask, T, b, n, lg);
    float *p = ds + row * T, rn = r[row];
    for (int m = threadIdx.x; m < T; m += blockDim.x) {
        float dnm = m > n || !ret_visible(mask, T, b, m) ? 0.0f : (float)(exp((n - m) * lg) * inv);
        p[m] *= dnm / rn;
    }
}

void cu_retention_forward(float *out, float *att, float *r, const float *q, const float *k,
                          const float *v, const mt_retention_desc *d)
{
    const int B = d->B, H = d->H, T = d->T, Dk = d->Dk, Dv = d->Dv, CK = H * Dk, CV = H * Dv;
    if (B <= 0 || H <= 0 || T <= 0) return;
    // one batch over the B x H grid per product (cu_gemm_bh): head h of a row, columns h * D
    size_t pp = (size_t)T * T, ps = (size_t)H * pp, ks = (size_t)T * CK, vs = (size_t)T * CV;
    cu_gemm_bh(0, 1, T, T, Dk, 1.0f, q, CK, ks, Dk, k, CK, ks, Dk, 0.0f, att, T, ps, pp, B, H);
    retention_rows_forward_kernel<<<(unsigned)((size_t)B * H * T), CU_ROW_THREADS, 0,
                                    cu_stream()>>>(att, r, d->key_mask, H, T, gammas_of(d));
    cu_check(cudaGetLastError(), "retention_rows_forward_kernel");
    cu_gemm_bh(0, 0, T, Dv, T, 1.0f, att, T, ps, pp, v, CV, vs, Dv, 0.0f, out, CV, vs, Dv, B, H);
}

void cu_retention_backward(float *dq, float *dk, float *dv, float *datt, const float *dout,
                           const float *q, const float *k, const float *v, const float *att,
                           const float *r, const mt_retention_desc *d)
{
    const int B = d->B, H = d->H, T = d->T, Dk = d->Dk, Dv = d->Dv, CK = H * Dk, CV = H * Dv;
    if (B <= 0 || H <= 0 || T <= 0) return;
    size_t pp = (size_t)T * T, ps = (size_t)H * pp, ks = (size_t)T * CK, vs = (size_t)T * CV;
    if (dv)
        cu_gemm_bh(1, 0, T, Dv, T, 1.0f, att, T, ps, pp, dout, CV, vs, Dv, 1.0f, dv, CV, vs, Dv, B,
                   H);
    cu_gemm_bh(0, 1, T, T, Dv, 1.0f, dout, CV, vs, Dv, v, CV, vs, Dv, 0.0f, datt, T, ps, pp, B, H);
    retention_rows_backward_kernel<<<(unsigned)((size_t)B * H * T), CU_ROW_THREADS, 0,
                                     cu_stream()>>>(datt, r, d->key_mask, H, T, gammas_of(d));
    cu_check(cudaGetLastError(), "retention_rows_backward_kernel");
    if (dq)
        cu_gemm_bh(0, 0, T, Dk, T, 1.0f, datt, T, ps, pp, k, CK, ks, Dk, 1.0f, dq, CK, ks, Dk, B,
                   H);
    if (dk)
        cu_gemm_bh(1, 0, T, Dk, T, 1.0f, datt, T, ps, pp, q, CK, ks, Dk, 1.0f, dk, CK, ks, Dk, B,
                   H);
}

// s = sum_m w_m ; KV[i, j] = sum_m w_m k_m[i] v_m[j] / sqrt(s), w_m = [m real] gamma^(T-1-m).
// One thread per state element (b, h, i, j).
__global__ void retention_state_fill_kernel(float *kv, float *s, const float *k, const float *v,
                                            const uint8_t *mask, int H, int T, int Dk, int Dv,
                                            gammas g, size_t n)
{
    CU_FOR_EACH(e, n)
    {
        int j = (int)(e % Dv), i = (int)((e / Dv) % Dk);
        size_t bh = e / ((size_t)Dk * Dv);
        int h = (int)(bh % H), b = (int)(bh / H);
        int CK = H * Dk, CV = H * Dv;
        double lg = g.log_gamma[h], total = 0.0;
        float acc = 0.0f;
        for (int m = 0; m < T; m++) {
            if (!ret_visible(mask, T, b, m)) continue;
            float w = (float)exp((T - 1 - m) * lg);
            total += w;
            acc += w * k[((size_t)b * T + m) * CK + (size_t)h * Dk + i] *
                   v[((size_t)b * T + m) * CV + (size_t)h * Dv + j];
        }
        float inv = total > 0.0 ? (float)(1.0 / sqrt(total)) : 0.0f;
        kv[e] = acc * inv;
        if (i == 0 && j == 0) s[bh] = (float)total;
    }
}

void cu_retention_state_fill(float *kv, float *s, const float *k, const float *v,
                             const mt_retention_desc *d)
{
    size_t n = (size_t)d->B * d->H * d->Dk * d->Dv;
    if (!n) return;
    retention_state_fill_kernel<<<cu_grid(n), CU_THREADS, 0, cu_stream()>>>(
        kv, s, k, v, d->key_mask, d->H, d->T, d->Dk, d->Dv, gammas_of(d), n);
    cu_check(cudaGetLastError(), "retention_state_fill_kernel");
}

// s' = gamma s + 1 ; KV' = KV gamma sqrt(s / s') + k^T v / sqrt(s') ; out = q KV'
// One block per (b, h), a thread per value column j (grid-strided over Dv); s is rewritten
// after every thread of the block has read it.
__global__ void retention_step_kernel(float *out, float *kv, float *s, const float *q,
                                      const float *k, const float *v, const uint8_t *mask, int T,
                                      int H, int Dk, int Dv, gammas g)
{
    size_t bh = blockIdx.x;
    int h = (int)(bh % H), b = (int)(bh / H), CK = H * Dk, CV = H * Dv;
    if (mask && !mask[(size_t)b * T]) {
        for (int j = threadIdx.x; j < Dv; j += blockDim.x)
            out[(size_t)b * CV + (size_t)h * Dv + j] = 0.0f;
        return;
    }
    double gamma = g.gamma[h], s_old = s[bh], s_new = gamma * s_old + 1.0;
    float decay = (float)(gamma * sqrt(s_old / s_new)), c = (float)(1.0 / sqrt(s_new));
    float *st = kv + bh * Dk * Dv;
    const float *qb = q + (size_t)b * CK + (size_t)h * Dk,
                *kb = k + (size_t)b * CK + (size_t)h * Dk;
    const float *vb = v + (size_t)b * CV + (size_t)h * Dv;
    for (int j = threadIdx.x; j < Dv; j += blockDim.x) {
        float o = 0.0f, vj = vb[j];
        for (int i = 0; i < Dk; i++) {
            float x = st[(size_t)i * Dv + j] * decay + c * kb[i] * vj;
            st[(size_t)i * Dv + j] = x;
            o += qb[i] * x;
        }
        out[(size_t)b * CV + (size_t)h * Dv + j] = o;
    }
    __syncthreads();
    if (threadIdx.x == 0) s[bh] = (float)s_new;
}

void cu_retention_step(float *out, float *kv, float *s, const float *q, const float *k,
                       const float *v, const mt_retention_desc *d)
{
    size_t n = (size_t)d->B * d->H;
    if (!n) return;
    int threads = d->Dv < 256 ? ((d->Dv + 31) / 32) * 32 : 256;
    retention_step_kernel<<<(unsigned)n, threads, 0, cu_stream()>>>(
        out, kv, s, q, k, v, d->key_mask, d->T, d->H, d->Dk, d->Dv, gammas_of(d));
    cu_check(cudaGetLastError(), "retention_step_kernel");
}
