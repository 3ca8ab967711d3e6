// LayerNorm and RMSNorm over the last dimension of (BT, C) on CUDA: one block per row, the
// statistics in double as the CPU computes them; the weight and bias gradients are column sums
// (cuda_rows.cuh), recomputing the normalised value instead of storing it.
#include "cuda_ops.h"
#include "cuda_rows.cuh"

// mean = sum x / C ; var = sum (x - mean)^2 / C ; rstd = 1 / sqrt(var + eps)
// out = (x - mean) * rstd * weight + bias
__global__ void layernorm_forward_kernel(float *out, float *mean, float *rstd, const float *x,
                                         const float *weight, const float *bias, int C, float eps)
{
    size_t r = blockIdx.x;
    const float *xr = x + r * C;
    float *o = out + r * C;
    double m = 0.0;
    for (int c = threadIdx.x; c < C; c += blockDim.x) m += xr[c];
    m = cu_block_sum(m) / C;
    double v = 0.0;
    for (int c = threadIdx.x; c < C; c += blockDim.x) v += (xr[c] - m) * (xr[c] - m);
    v = cu_block_sum(v) / C;
    float s = (float)(1.0 / sqrt(v + eps));
    for (int c = threadIdx.x; c < C; c += blockDim.x) {
        float n = (float)(xr[c] - m) * s;
        o[c] = n * (weight ? weight[c] : 1.0f) + (bias ? bias[c] : 0.0f);
    }
    if (threadIdx.x == 0) mean[r] = (float)m, rstd[r] = s;
}

// n = (x - mean) * rstd, dn = dout * weight
// dx += rstd * (dn - mean_c(dn) - n * mean_c(dn * n))
__global__ void layernorm_backward_kernel(float *dx, const float *dout, const float *x,
                                          const float *weight, const float *mean, const float *rstd,
                                          int C)
{
    size_t r = blockIdx.x;
    const float *xr = x + r * C, *g = dout + r * C;
    float mu = mean[r], s = rstd[r];
    double sum_dn = 0.0, sum_dn_n = 0.0;
    for (int c = threadIdx.x; c < C; c += blockDim.x) {
        float n = (xr[c] - mu) * s, dn = g[c] * (weight ? weight[c] : 1.0f);
        sum_dn += dn;
        sum_dn_n += (double)dn * n;
    }
    sum_dn = cu_block_sum(sum_dn);
    sum_dn_n = cu_block_sum(sum_dn_n);
    float mean_dn = (float)(sum_dn / C), mean_dn_n = (float)(sum_dn_n / C);
    for (int c = threadIdx.x; c < C; c += blockDim.x) {
        float n = (xr[c] - mu) * s, dn = g[c] * (weight ? weight[c] : 1.0f);
        dx[r * C + c] += s * (dn - mean_dn - n * mean_dn_n);
    }
}

// dweight[c] += sum_r dout * n
struct ln_dweight {
    const float *dout, *x, *mean, *rstd;
    __device__ double operator()(size_t r, int c, int C) const
    {
        return (double)dout[r * C + c] * ((x[r * C + c] - mean[r]) * rstd[r]);
    }
};

void cu_layernorm_forward(float *out, float *mean, float *rstd, const float *x, const float *weight,
                          const float *bias, size_t BT, int C, float eps)
{
    if (!BT) return;
    layernorm_forward_kernel<<<(unsigned)BT, CU_ROW_THREADS, 0, cu_stream()>>>(
        out, mean, rstd, x, weight, bias, C, eps);
    cu_check(cudaGetLastError(), "layernorm_forward_kernel");
}

void cu_layernorm_backward(float *dx, float *dweight, float *dbias, const float *dout,
                           const float *x, const float *weight, const float *mean,
                           const float *rstd, size_t BT, int C)
{
    if (!BT) return;
    if (dx) {
        layernorm_backward_kernel<<<(unsigned)BT, CU_ROW_THREADS, 0, cu_stream()>>>(
            dx, dout, x, weight, mean, rstd, C);
        cu_check(cudaGetLastError(), "layernorm_backward_kernel");
    }
    if (dweight) cu_column_sums(dweight, ln_dweight{dout, x, mean, rstd}, BT, C);
    if (dbias) cu_column_sums(dbias, cu_plain_rows{dout}, BT, C);
}

// rstd = 1 / sqrt(mean(x^2) + eps) ; out = x * rstd * weight
__global__ void rmsnorm_forward_kernel(float *out, float *rstd, const float *x, const float *weight,
                                       int C, float eps)
{
    size_t r = blockIdx.x;
    const float *xr = x + r * C;
    float *o = out + r * C;
    double ss = 0.0;
    for (int c = threadIdx.x; c < C; c += blockDim.x) ss += (double)xr[c] * xr[c];
    ss = cu_block_sum(ss);
    float s = (float)(1.0 / sqrt(ss / C + eps));
    for (int c = threadIdx.x; c < C; c += blockDim.x)
        o[c] = xr[c] * s * (weight ? weight[c] : 1.0f);
    if (threadIdx.x == 0) rstd[r] = s;
}

// dn = dout * weight ; dx += rstd * dn - x * rstd^3 * mean_c(dn * x)
__global__ void rmsnorm_backward_kernel(float *dx, const float *dout, const float *x,
                                        const float *weight, const float *rstd, int C)
{
    size_t r = blockIdx.x;
    const float *xr = x + r * C, *g = dout + r * C;
    double sum_dn_x = 0.0;
    for (int c = threadIdx.x; c < C; c += blockDim.x)
        sum_dn_x += (double)g[c] * (weight ? weight[c] : 1.0f) * xr[c];
    sum_dn_x = cu_block_sum(sum_dn_x);
    float s = rstd[r], k = (float)(sum_dn_x / C) * s * s * s;
    for (int c = threadIdx.x; c < C; c += blockDim.x)
        dx[r * C + c] += s * g[c] * (weight ? weight[c] : 1.0f) - xr[c] * k;
}

// dweight[c] += sum_r dout * x * rstd
struct rms_dweight {
    const float *dout, *x, *rstd;
    __device__ double operator()(size_t r, int c, int C) const
    {
        return (double)dout[r * C + c] * x[r * C + c] * rstd[r];
    }
};

void cu_rmsnorm_forward(float *out, float *rstd, const float *x, const float *weight, size_t BT,
                        int C, float eps)
{
    if (!BT) return;
    rmsnorm_forward_kernel<<<(unsigned)BT, CU_ROW_THREADS, 0, cu_stream()>>>(out, rstd, x, weight,
                                                                             C, eps);
    cu_check(cudaGetLastError(), "rmsnorm_forward_kernel");
}

void cu_rmsnorm_backward(float *dx, float *dweight, const float *dout, const float *x,
                         const float *weight, const float *rstd, size_t BT, int C)
{
    if (!BT) return;
    if (dx) {
        rmsnorm_backward_kernel<<<(unsigned)BT, CU_ROW_THREADS, 0, cu_stream()>>>(dx, dout, x,
                                                                                  weight, rstd, C);
        cu_check(cudaGetLastError(), "rmsnorm_backward_kernel");
    }
    if (dweight) cu_column_sums(dweight, rms_dweight{dout, x, rstd}, BT, C);
}
