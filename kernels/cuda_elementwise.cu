// Elementwise operations, row utilities and row-wise softmax on CUDA. The per-element math is
// engine/math/ (activation.h, elementwise.h), the same functions the CPU backend calls.
// n-element operations are grid-stride loops over size_t indices (n may pass 2^31).
#include "cuda_ops.h"
#include "cuda_rows.cuh"
#include "math/activation.h"

#define LAUNCH(kernel, n, ...)                                           \
    do {                                                                 \
        if ((n) == 0) return;                                            \
        kernel<<<cu_grid(n), CU_THREADS, 0, cu_stream()>>>(__VA_ARGS__); \
        cu_check(cudaGetLastError(), #kernel);                           \
    } while (0)

__global__ void fill_kernel(float *x, size_t n, float v) { CU_FOR_EACH(i, n) x[i] = v; }
__global__ void scale_kernel(float *x, size_t n, float s) { CU_FOR_EACH(i, n) x[i] *= s; }
__global__ void axpy_kernel(float *y, const float *x, size_t n, float a)
{
    CU_FOR_EACH(i, n) y[i] += a * x[i];
}
__global__ void add_kernel(float *o, const float *a, const float *b, size_t n)
{
    CU_FOR_EACH(i, n) o[i] = a[i] + b[i];
}
__global__ void mul_kernel(float *o, const float *a, const float *b, size_t n)
{
    CU_FOR_EACH(i, n) o[i] = a[i] * b[i];
}

// da += dout * b ; db += dout * a
__global__ void mul_backward_kernel(float *da, float *db, const float *dout, const float *a,
                                    const float *b, size_t n)
{
    CU_FOR_EACH(i, n)
    {
        if (da) da[i] += dout[i] * b[i];
        if (db) db[i] += dout[i] * a[i];
    }
}

__global__ void act_forward_kernel(mt_act act, float *out, const float *x, size_t n)
{
    CU_FOR_EACH(i, n) out[i] = mt_actf(act, x[i]);
}

// dx = dout * act'(x) (written, mtlab/backend.h)
__global__ void act_backward_kernel(mt_act act, float *dx, const float *dout, const float *x,
                                    size_t n)
{
    CU_FOR_EACH(i, n) dx[i] = dout[i] * mt_act_gradf(act, x[i]);
}

// out = value * SiLU(gate)
__global__ void gate_forward_kernel(float *out, const float *value, const float *gate, size_t n)
{
    CU_FOR_EACH(i, n) out[i] = value[i] * mt_siluf(gate[i]);
}

// dvalue = dout * SiLU(gate) ; dgate = dout * value * SiLU'(gate) (written, mtlab/backend.h)
__global__ void gate_backward_kernel(float *dvalue, float *dgate, const float *dout,
                                     const float *value, const float *gate, size_t n)
{
    CU_FOR_EACH(i, n)
    {
        if (dvalue) dvalue[i] = dout[i] * mt_siluf(gate[i]);
        if (dgate) dgate[i] = dout[i] * value[i] * mt_silu_gradf(gate[i]);
    }
}

__global__ void mask_rows_kernel(float *x, const uint8_t *mask, size_t n, int cols)
{
    CU_FOR_EACH(i, n) if (!mask[i / cols]) x[i] = 0.0f;
}

__global__ void bias_add_kernel(float *out, const float *bias, size_t n, int cols)
{
    CU_FOR_EACH(i, n) out[i] += bias[i % cols];
}

__global__ void index_select_kernel(float *out, const float *src, size_t src_ld, const int32_t *idx,
                                    size_t n, size_t cols)
{
    CU_FOR_EACH(i, n) out[i] = src[(size_t)idx[i / cols] * src_ld + i % cols];
}

void cu_fill(float *x, size_t n, float value) { LAUNCH(fill_kernel, n, x, n, value); }
void cu_scale(float *x, size_t n, float s) { LAUNCH(scale_kernel, n, x, n, s); }
void cu_axpy(float *y, const float *x, size_t n, float a) { LAUNCH(axpy_kernel, n, y, x, n, a); }
void cu_add(float *out, const float *a, const float *b, size_t n)
{
    LAUNCH(add_kernel, n, out, a, b, n);
}
void cu_mul(float *out, const float *a, const float *b, size_t n)
{
    LAUNCH(mul_kernel, n, out, a, b, n);
}

void cu_mul_backward(float *da, float *db, const float *dout, const float *a, const float *b,
                     size_t n)
{
    LAUNCH(mul_backward_kernel, n, da, db, dout, a, b, n);
}

void cu_act_forward(mt_act act, float *out, const float *x, size_t n)
{
    LAUNCH(act_forward_kernel, n, act, out, x, n);
}

void cu_act_backward(mt_act act, float *dx, const float *dout, const float *x, size_t n)
{
    LAUNCH(act_backward_kernel, n, act, dx, dout, x, n);
}

void cu_gate_forward(float *out, const float *value, const float *gate, size_t n)
{
    LAUNCH(gate_forward_kernel, n, out, value, gate, n);
}

void cu_gate_backward(float *dvalue, float *dgate, const float *dout, const float *value,
                      const float *gate, size_t n)
{
    LAUNCH(gate_backward_kernel, n, dvalue, dgate, dout, value, gate, n);
}

void cu_mask_rows(float *x, const uint8_t *mask, size_t rows, int cols)
{
    size_t n = rows * (size_t)cols;
    LAUNCH(mask_rows_kernel, n, x, mask, n, cols);
}

void cu_bias_add(float *out, const float *bias, size_t rows, int cols)
{
    size_t n = rows * (size_t)cols;
    LAUNCH(bias_add_kernel, n, out, bias, n, cols);
}

// dbias[c] += sum_r dout[r, c]
void cu_bias_backward(float *dbias, const float *dout, size_t rows, int cols)
{
    cu_column_sums(dbias, cu_plain_rows{dout}, rows, cols);
}

// Rows may overlap (the CPU uses memmove): cudaMemcpy2DAsync between overlapping ranges is
// undefined, so an overlapping copy goes through scratch memory.
void cu_copy2d(float *dst, int dst_ld, const float *src, int src_ld, size_t rows, int cols)
{
    if (!rows || cols <= 0) return;
    size_t dspan = (rows - 1) * (size_t)dst_ld + cols, sspan = (rows - 1) * (size_t)src_ld + cols;
    int overlap = dst < src + sspan && src < dst + dspan && dst != src;
    if (dst == src && dst_ld == src_ld) return;
    const float *from = src;
    float *tmp = NULL;
    if (overlap) {
        tmp = (float *)cu_scratch(rows * (size_t)cols * sizeof(float));
        if (!tmp) return;
        cu_check(cudaMemcpy2DAsync(tmp, (size_t)cols * sizeof(float), src,
                                   (size_t)src_ld * sizeof(float), (size_t)cols * sizeof(float),
                                   rows, cudaMemcpyDeviceToDevice, cu_stream()),
                 "copy2d");
        from = tmp, src_ld = cols;
    }
    cu_check(cudaMemcpy2DAsync(dst, (size_t)dst_ld * sizeof(float), from,
                               (size_t)src_ld * sizeof(float), (size_t)cols * sizeof(float), rows,
                               cudaMemcpyDeviceToDevice, cu_stream()),
             "copy2d");
    cu_scratch_free(tmp);
}

void cu_index_select(float *out, const float *src, size_t src_ld, const int32_t *idx, int n_idx,
                     size_t cols)
{
    size_t n = (size_t)n_idx * cols;
    LAUNCH(index_select_kernel, n, out, src, src_ld, idx, n, cols);
}

// ---------------------------------------------------------------- softmax rows
// One block per row: max, then the sum of exp(x - max) in double, then the outputs.
//   softmax:     p_j = exp(x_j - max) / sum
//   log_softmax: x_j - (max + log sum)
__global__ void softmax_kernel(float *out, const float *x, int cols, int log_form)
{
    const float *in = x + (size_t)blockIdx.x * cols;
    float *o = out + (size_t)blockIdx.x * cols;
    float mx = -INFINITY;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) mx = fmaxf(mx, in[c]);
    mx = cu_block_max(mx);
    double sum = 0.0;
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        sum += log_form ? exp((double)in[c] - mx) : (double)expf(in[c] - mx);
    sum = cu_block_sum(sum);
    if (log_form) {
        float shift = mx + (float)log(sum);
        for (int c = threadIdx.x; c < cols; c += blockDim.x) o[c] = in[c] - shift;
    } else {
        float inv = (float)(1.0 / sum);
        for (int c = threadIdx.x; c < cols; c += blockDim.x) o[c] = expf(in[c] - mx) * inv;
    }
}

static void softmax_rows(float *out, const float *x, size_t rows, int cols, int log_form)
{
    if (!rows) return;
    softmax_kernel<<<(unsigned)rows, CU_ROW_THREADS, 0, cu_stream()>>>(out, x, cols, log_form);
    cu_check(cudaGetLastError(), "softmax_kernel");
}

void cu_softmax(float *out, const float *x, size_t rows, int cols)
{
    softmax_rows(out, x, rows, cols, 0);
}
void cu_log_softmax(float *out, const float *x, size_t rows, int cols)
{
    softmax_rows(out, x, rows, cols, 1);
}
