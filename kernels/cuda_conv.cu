// Mamba's causal depthwise conv1d on CUDA, channels last (engine/backend/cpu/cpu_conv.c):
//   out[b,t,c] = bias[c] + sum_{k<K} w[c,k] * x[b, t-K+1+k, c]      (x before t = 0 is 0)
// One thread per output element: consecutive threads take consecutive channels, so every
// load of x, dout and out is coalesced.
#include "cuda_ops.h"
#include "math/elementwise.h"

__global__ void conv1d_forward_kernel(float *out, const float *x, const float *w, const float *bias,
                                      int T, int C, int K, size_t n)
{
    CU_FOR_EACH(i, n)
    {
        int c = (int)(i % C), t = (int)((i / C) % T);
        size_t row0 = i - (size_t)t * C; // element (b, 0, c)
        float acc = bias ? bias[c] : 0.0f;
        for (int k = 0; k < K; k++) {
            int s = t - K + 1 + k;
            if (s >= 0) acc += w[(size_t)c * K + k] * x[row0 + (size_t)s * C];
        }
        out[i] = acc;
    }
}

// dx[b,s,c] += sum_k w[c,k] dout[b, s+K-1-k, c]   (terms with s+K-1-k < T)
__global__ void conv1d_backward_dx_kernel(float *dx, const float *dout, const float *w, int T,
                                          int C, int K, size_t n)
{
    CU_FOR_EACH(i, n)
    {
        int c = (int)(i % C), s = (int)((i / C) % T);
        size_t row0 = i - (size_t)s * C;
        float acc = 0.0f;
        for (int k = 0; k < K; k++) {
            int t = s + K - 1 - k;
            if (t < T) acc += w[(size_t)c * K + k] * dout[row0 + (size_t)t * C];
        }
        dx[i] += acc;
    }
}

// dw[c,k] += sum_{b,t} dout[b,t,c] x[b,t-K+1+k,c] ; dbias[c] += sum_{b,t} dout[b,t,c]
// Blocks of 32 channels x 8 row lanes over chunks of (b, t) rows: each thread sums its rows in
// registers, then adds them with one atomicAdd per weight (8 per weight and chunk).
#define CONV_ROWS_PER_BLOCK 512
#define CONV_MAX_K 64

__global__ void conv1d_backward_dw_kernel(float *dw, float *dbias, const float *dout,
                                          const float *x, int B, int T, int C, int K)
{
    int c = blockIdx.x * 32 + threadIdx.x;
    if (c >= C) return;
    size_t rows = (size_t)B * T, r0 = (size_t)blockIdx.y * CONV_ROWS_PER_BLOCK;
    size_t r1 = r0 + CONV_ROWS_PER_BLOCK < rows ? r0 + CONV_ROWS_PER_BLOCK : rows;
    float acc_w[CONV_MAX_K], acc_b = 0.0f;
    for (int k = 0; k < K; k++) acc_w[k] = 0.0f;
    for (size_t r = r0 + threadIdx.y; r < r1; r += 8) {
        int t = (int)(r % T);
        float g = dout[r * C + c];
        acc_b += g;
        for (int k = 0; k < K; k++) {
            int s = t - K + 1 + k;
            if (s >= 0) acc_w[k] += g * x[(r - t + s) * C + c];
        }
    }
    if (dw)
        for (int k = 0; k < K; k++) atomicAdd(dw + (size_t)c * K + k, acc_w[k]);
    if (dbias) atomicAdd(dbias + c, acc_b);
}

void cu_conv1d_forward(float *out, const float *x, const float *w, const float *bias, int B, int T,
                       int C, int K)
{
    size_t n = (size_t)B * T * C;
    if (!n) return;
    conv1d_forward_kernel<<<cu_grid(n), CU_THREADS, 0, cu_stream()>>>(out, x, w, bias, T, C, K, n);
    cu_check(cudaGetLastError(), "conv1d_forward_kernel");
}

void cu_conv1d_backward(float *dx, float *dw, float *dbias, const float *dout, const float *x,
                        const float *w, int B, int T, int C, int K)
{
    size_t n = (size_t)B * T * C;
    if (!n) return;
    if (dx) {
        conv1d_backward_dx_kernel<<<cu_grid(n), CU_THREADS, 0, cu_stream()>>>(dx, dout, w, T, C, K,
                                                                              n);
        cu_check(cudaGetLastError(), "conv1d_backward_dx_kernel");
    }
    if (!dw && !dbias) return;
    size_t chunks = ((size_t)B * T + CONV_ROWS_PER_BLOCK - 1) / CONV_ROWS_PER_BLOCK;
    if (chunks > 65535) { // one chunk per block row of the grid: longer inputs take larger chunks
        cu_check(cudaErrorInvalidConfiguration, "conv1d_backward: B*T above 16.7M rows");
        return;
    }
    dim3 grid((unsigned)((C + 31) / 32), (unsigned)chunks);
    conv1d_backward_dw_kernel<<<grid, dim3(32, 8), 0, cu_stream()>>>(dw, dbias, dout, x, B, T, C,
                                                                     K);
    cu_check(cudaGetLastError(), "conv1d_backward_dw_kernel");
}

// state[b,c,:] <- (state[b,c,1:], x[b,c]) ; out[b,c] = bias[c] + sum_k w[c,k] state[b,c,k] ;
// u[b,c] = SiLU(out[b,c]) when u is given (act_forward's float, mt_siluf)
__global__ void conv1d_step_kernel(float *out, float *u, float *state, const float *x,
                                   const float *w, const float *bias, int C, int K, size_t n)
{
    CU_FOR_EACH(i, n)
    {
        int c = (int)(i % C);
        float *st = state + i * K;
        for (int k = 0; k + 1 < K; k++) st[k] = st[k + 1];
        st[K - 1] = x[i];
        float acc = bias ? bias[c] : 0.0f;
        for (int k = 0; k < K; k++) acc += w[(size_t)c * K + k] * st[k];
        out[i] = acc;
        if (u) u[i] = mt_siluf(acc);
    }
}

// state[b,c,k] = x[b, T-K+k, c], 0 where T-K+k < 0
__global__ void conv1d_state_fill_kernel(float *state, const float *x, int T, int C, int K,
                                         size_t n)
{
    CU_FOR_EACH(i, n)
    {
        int k = (int)(i % K);
        size_t bc = i / K;
        int c = (int)(bc % C);
        size_t b = bc / C;
        int t = T - K + k;
        state[i] = t >= 0 ? x[(b * T + t) * C + c] : 0.0f;
    }
}

void cu_conv1d_step_silu(float *out, float *u, float *state, const float *x, const float *w,
                         const float *bias, int B, int C, int K)
{
    size_t n = (size_t)B * C;
    if (!n) return;
    conv1d_step_kernel<<<cu_grid(n), CU_THREADS, 0, cu_stream()>>>(out, u, state, x, w, bias, C, K,
                                                                   n);
    cu_check(cudaGetLastError(), "conv1d_step_kernel");
}

void cu_conv1d_step(float *out, float *state, const float *x, const float *w, const float *bias,
                    int B, int C, int K)
{
    cu_conv1d_step_silu(out, NULL, state, x, w, bias, B, C, K);
}

void cu_conv1d_state_fill(float *state, const float *x, int B, int T, int C, int K)
{
    size_t n = (size_t)B * C * K;
    if (!n) return;
    conv1d_state_fill_kernel<<<cu_grid(n), CU_THREADS, 0, cu_stream()>>>(state, x, T, C, K, n);
    cu_check(cudaGetLastError(), "conv1d_state_fill_kernel");
}
