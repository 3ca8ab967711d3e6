// Training operations on CUDA: cross-entropy fused with the softmax (one block per row of V
// logits), counter-based dropout whose masks are the CPU's bit for bit (engine/math/philox.h),
// and one AdamW step over the whole parameter block.
#include "cuda_ops.h"
#include "cuda_rows.cuh"
#include "math/philox.h"

// One row's log-sum-exp and plain sum, by every thread of its block (thread 0's results are
// the row's): lse = max + log sum_j exp(x_j - max), in double as the CPU sums them.
static __device__ double cu_row_lse(const float *x, int V, double *sum_x)
{
    float mx = -INFINITY;
    for (int j = threadIdx.x; j < V; j += blockDim.x) mx = fmaxf(mx, x[j]);
    mx = cu_block_max(mx);
    double sum = 0.0, sx = 0.0;
    for (int j = threadIdx.x; j < V; j += blockDim.x) {
        sum += exp((double)x[j] - mx);
        sx += x[j];
    }
    sum = cu_block_sum(sum);
    *sum_x = cu_block_sum(sx);
    return mx + log(sum);
}

// lse = log sum_j exp(x_j) ; loss = lse - (1 - eps) x_target - (eps / V) sum_j x_j
__global__ void cross_entropy_forward_kernel(float *losses, float *lse, const float *logits,
                                             const int32_t *targets, int V, int ignore_index,
                                             float smoothing)
{
    size_t r = blockIdx.x;
    const float *x = logits + r * V;
    double sum_x, l = cu_row_lse(x, V, &sum_x);
    if (threadIdx.x) return;
    lse[r] = (float)l;
    int t = targets[r];
    losses[r] =
        t == ignore_index ? 0.0f : (float)(l - (1.0 - smoothing) * x[t] - smoothing * sum_x / V);
}

// dlogits_j += scale * (p_j - q_j), p_j = exp(x_j - lse), q = (1 - eps) onehot + eps / V
__global__ void cross_entropy_backward_kernel(float *dlogits, const float *logits, const float *lse,
                                              const int32_t *targets, int V, int ignore_index,
                                              float smoothing, float scale)
{
    size_t r = blockIdx.x;
    int t = targets[r];
    if (t == ignore_index) return;
    const float *x = logits + r * V;
    float *dx = dlogits + r * V;
    float uniform = smoothing / V, l = lse[r];
    for (int j = threadIdx.x; j < V; j += blockDim.x) {
        float q = uniform + (j == t ? 1.0f - smoothing : 0.0f);
        dx[j] += scale * (expf(x[j] - l) - q);
    }
}

// The two above in place, one block per row: the loss, then x_j <- scale * (p_j - q_j)
// (0 on ignored rows); every thread reads lse from shared memory after the block's sums.
__global__ void cross_entropy_fused_kernel(float *losses, float *logits, const int32_t *targets,
                                           int V, int ignore_index, float smoothing, float scale)
{
    __shared__ float lse_row;
    size_t r = blockIdx.x;
    float *x = logits + r * V;
    int t = targets[r];
    if (t == ignore_index) {
        for (int j = threadIdx.x; j < V; j += blockDim.x) x[j] = 0.0f;
        if (!threadIdx.x) losses[r] = 0.0f;
        return;
    }
    double sum_x, row_lse = cu_row_lse(x, V, &sum_x);
    if (!threadIdx.x) {
        lse_row = (float)row_lse;
        losses[r] = (float)(row_lse - (1.0 - smoothing) * x[t] - smoothing * sum_x / V);
    }
    __syncthreads();
    float uniform = smoothing / V, l = lse_row;
    for (int j = threadIdx.x; j < V; j += blockDim.x) {
        float q = uniform + (j == t ? 1.0f - smoothing : 0.0f);
        x[j] = scale * (expf(x[j] - l) - q);
    }
}

void cu_cross_entropy_fused(float *losses, float *logits, const int32_t *targets, size_t BT, int V,
                            int ignore_index, float smoothing, float scale)
{
    if (!BT) return;
    cross_entropy_fused_kernel<<<(unsigned)BT, CU_ROW_THREADS, 0, cu_stream()>>>(
        losses, logits, targets, V, ignore_index, smoothing, scale);
    cu_check(cudaGetLastError(), "cross_entropy_fused_kernel");
}

void cu_cross_entropy_forward(float *losses, float *lse, const float *logits,
                              const int32_t *targets, size_t BT, int V, int ignore_index,
                              float smoothing)
{
    if (!BT) return;
    cross_entropy_forward_kernel<<<(unsigned)BT, CU_ROW_THREADS, 0, cu_stream()>>>(
        losses, lse, logits, targets, V, ignore_index, smoothing);
    cu_check(cudaGetLastError(), "cross_entropy_forward_kernel");
}

void cu_cross_entropy_backward(float *dlogits, const float *logits, const float *lse,
                               const int32_t *targets, size_t BT, int V, int ignore_index,
                               float smoothing, float scale)
{
    if (!BT) return;
    cross_entropy_backward_kernel<<<(unsigned)BT, CU_ROW_THREADS, 0, cu_stream()>>>(
        dlogits, logits, lse, targets, V, ignore_index, smoothing, scale);
    cu_check(cudaGetLastError(), "cross_entropy_backward_kernel");
}

// Element i = b row_len + j of a (rows, row_len) batch: kept when
// mt_dropout_uniform(seed, step, site, row0 + b, key_j) >= p (philox.h, as the CPU's).
__device__ __forceinline__ bool dropout_keep(size_t i, size_t row_len, const mt_dropout &d)
{
    size_t b = i / row_len, j = i - b * row_len;
    return mt_dropout_uniform(d.seed, d.step, d.site, d.row0 + (uint32_t)b,
                              mt_dropout_key(j, row_len, d.align_end)) >= d.p;
}

// out = keep ? x / (1 - p) : 0
__global__ void dropout_forward_kernel(float *out, const float *x, size_t n, size_t row_len,
                                       mt_dropout d, float inv_keep)
{
    CU_FOR_EACH(i, n) out[i] = dropout_keep(i, row_len, d) ? x[i] * inv_keep : 0.0f;
}

// dx += keep ? dout / (1 - p) : 0
__global__ void dropout_backward_kernel(float *dx, const float *dout, size_t n, size_t row_len,
                                        mt_dropout d, float inv_keep)
{
    CU_FOR_EACH(i, n)
    if (dropout_keep(i, row_len, d)) dx[i] += dout[i] * inv_keep;
}

void cu_dropout_forward(float *out, const float *x, size_t rows, size_t row_len,
                        const mt_dropout *d)
{
    size_t n = rows * row_len;
    if (!n) return;
    float inv_keep = d->p < 1.0f ? 1.0f / (1.0f - d->p) : 0.0f;
    dropout_forward_kernel<<<cu_grid(n), CU_THREADS, 0, cu_stream()>>>(out, x, n, row_len, *d,
                                                                       inv_keep);
    cu_check(cudaGetLastError(), "dropout_forward_kernel");
}

void cu_dropout_backward(float *dx, const float *dout, size_t rows, size_t row_len,
                         const mt_dropout *d)
{
    size_t n = rows * row_len;
    if (!n) return;
    float inv_keep = d->p < 1.0f ? 1.0f / (1.0f - d->p) : 0.0f;
    dropout_backward_kernel<<<cu_grid(n), CU_THREADS, 0, cu_stream()>>>(dx, dout, n, row_len, *d,
                                                                        inv_keep);
    cu_check(cudaGetLastError(), "dropout_backward_kernel");
}

// torch.optim.AdamW: p *= 1 - lr wd ; m = b1 m + (1-b1) g ; v = b2 v + (1-b2) g^2 ;
// p -= lr (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)     (fp32 master weights and moments)
__global__ void adamw_kernel(float *params, const float *grads, float *m, float *v,
                             const uint8_t *decay_mask, size_t n, mt_adamw_hparams h, float bc1,
                             float sqrt_bc2, float decay)
{
    CU_FOR_EACH(i, n)
    {
        float g = grads[i], p = params[i];
        if (!decay_mask || decay_mask[i]) p *= decay;
        float mi = h.beta1 * m[i] + (1.0f - h.beta1) * g;
        float vi = h.beta2 * v[i] + (1.0f - h.beta2) * g * g;
        m[i] = mi, v[i] = vi;
        params[i] = p - h.lr * (mi / bc1) / (sqrtf(vi) / sqrt_bc2 + h.eps);
    }
}

void cu_adamw_step(float *params, const float *grads, float *m, float *v, const uint8_t *decay_mask,
                   size_t n, const mt_adamw_hparams *h, int step)
{
    if (!n) return;
    float bc1 = (float)(1.0 - pow(h->beta1, step)), bc2 = (float)(1.0 - pow(h->beta2, step));
    adamw_kernel<<<cu_grid(n), CU_THREADS, 0, cu_stream()>>>(
        params, grads, m, v, decay_mask, n, *h, bc1, sqrtf(bc2), 1.0f - h->lr * h->weight_decay);
    cu_check(cudaGetLastError(), "adamw_kernel");
}
