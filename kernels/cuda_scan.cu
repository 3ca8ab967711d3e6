// The fused Mamba v1 selective scan on CUDA (formulas: mtlab/backend.h, mt_scan_args; the
// CPU reference: engine/backend/cpu/cpu_scan.c; the design it follows: docs/models.md §3.7).
//
// One thread per channel (b, d), its N states in registers: consecutive threads take
// consecutive channels of one batch row, so u, dt, y (B, T, D) are read and written coalesced
// and every thread of a warp reads the same B_t, C_t (B, T, N) values (one broadcast load).
// The expanded (B, T, D, N) tensors are never materialised:
//   forward   h_t = exp(delta_t A) h_{t-1} + delta_t B_t u_t ; y_t = sum_n h_t C_t + D u_t
//             only y (and h_last) reach global memory.
//   backward  recomputation: a first pass runs the recurrence again and keeps h only at the
//             start of every chunk of SCAN_CHUNK steps (B, chunks, D, N floats of scratch);
//             then chunks go last to first, each recomputed from its checkpoint into a
//             per-thread buffer, and the reverse recurrence
//               g_t = dy_t C_t + exp(delta_{t+1} A) g_{t+1}
//             gives du, ddt (through softplus'), dA_log, dB, dC, dD, ddt_bias as the CPU does.
//             dB, dC (shared by all channels) are summed over a warp's 32 channels with
//             shuffles, then added with one atomicAdd per warp; dA_log, dD, ddt_bias (shared by
//             the batch rows) with one atomicAdd per thread at the end.
#include "cuda_ops.h"
#include "math/elementwise.h"

#define SCAN_THREADS 128
#define SCAN_CHUNK 16

// Channel (b, d) of thread; d >= D marks a lane that only takes part in the warp reductions.
struct channel {
    int b, d;
    bool live;
};

__device__ __forceinline__ channel my_channel(int D)
{
    int blocks_per_row = (D + SCAN_THREADS - 1) / SCAN_THREADS;
    channel c;
    c.b = blockIdx.x / blocks_per_row;
    c.d = (blockIdx.x % blocks_per_row) * SCAN_THREADS + threadIdx.x;
    c.live = c.d < D;
    return c;
}

template <int NMAX> __global__ void scan_forward_kernel(float *y, float *h_last, mt_scan_args a)
{
    channel ch = my_channel(a.D);
    if (!ch.live) return;
    const int T = a.T, D = a.D, N = a.N;
    float A[NMAX], h[NMAX];
#pragma unroll 16
    for (int n = 0; n < NMAX; n++) {
        A[n] = n < N ? -expf(a.A_log[(size_t)ch.d * N + n]) : 0.0f;
        h[n] = n < N && a.h0 ? a.h0[((size_t)ch.b * D + ch.d) * N + n] : 0.0f;
    }
    float bias = a.dt_bias[ch.d], dskip = a.Dskip[ch.d];
    for (int t = 0; t < T; t++) {
        size_t i = ((size_t)ch.b * T + t) * D + ch.d, r = ((size_t)ch.b * T + t) * N;
        float delta = mt_softplusf(a.dt[i] + bias), u = a.u[i], acc = 0.0f;
#pragma unroll 16
        for (int n = 0; n < NMAX; n++)
            if (n < N) {
                h[n] = expf(delta * A[n]) * h[n] + delta * a.Bm[r + n] * u;
                acc += h[n] * a.Cm[r + n];
            }
        y[i] = acc + dskip * u;
    }
    if (h_last)
#pragma unroll 16
        for (int n = 0; n < NMAX; n++)
            if (n < N) h_last[((size_t)ch.b * D + ch.d) * N + n] = h[n];
}

// T = 1: h (B, D, N) read and updated in place
template <int NMAX> __global__ void scan_step_kernel(float *y, float *hs, mt_scan_args a)
{
    channel ch = my_channel(a.D);
    if (!ch.live) return;
    const int D = a.D, N = a.N;
    size_t i = (size_t)ch.b * D + ch.d, r = (size_t)ch.b * N;
    float *h = hs + i * N;
    float delta = mt_softplusf(a.dt[i] + a.dt_bias[ch.d]), u = a.u[i], acc = 0.0f;
#pragma unroll 16
    for (int n = 0; n < NMAX; n++)
        if (n < N) {
            float hn =
                expf(delta * -expf(a.A_log[(size_t)ch.d * N + n])) * h[n] + delta * a.Bm[r + n] * u;
            h[n] = hn;
            acc += hn * a.Cm[r + n];
        }
    y[i] = acc + a.Dskip[ch.d] * u;
}

// sum over the 32 lanes of a warp (every lane calls it)
__device__ __forceinline__ float warp_sum(float v)
{
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

template <int NMAX>
__global__ void scan_backward_kernel(mt_scan_grads g, const float *dy, mt_scan_args a, float *ckpt,
                                     int n_chunks)
{
    channel ch = my_channel(a.D);
    const int T = a.T, D = a.D, N = a.N;
    const int d = ch.live ? ch.d : 0; // dead lanes compute on channel 0 and contribute zeros
    const float on = ch.live ? 1.0f : 0.0f;
    float A[NMAX], h[NMAX];
#pragma unroll 16
    for (int n = 0; n < NMAX; n++) {
        A[n] = n < N ? -expf(a.A_log[(size_t)d * N + n]) : 0.0f;
        h[n] = 0.0f;
    }
    const float bias = a.dt_bias[d], dskip = a.Dskip[d];
    // checkpoint c holds h before step c * SCAN_CHUNK, at ckpt[((b * n_chunks + c) * D + d) * N]
    for (int t = 0; t < T; t++) {
        if (t % SCAN_CHUNK == 0 && ch.live) {
            float *cp = ckpt + (((size_t)ch.b * n_chunks + t / SCAN_CHUNK) * D + d) * N;
#pragma unroll 16
            for (int n = 0; n < NMAX; n++)
                if (n < N) cp[n] = h[n];
        }
        size_t i = ((size_t)ch.b * T + t) * D + d, r = ((size_t)ch.b * T + t) * N;
        float delta = mt_softplusf(a.dt[i] + bias), u = a.u[i];
#pragma unroll 16
        for (int n = 0; n < NMAX; n++)
            if (n < N) h[n] = expf(delta * A[n]) * h[n] + delta * a.Bm[r + n] * u;
    }
    // reverse pass, chunk by chunk
    float carry[NMAX], dA[NMAX], hs[SCAN_CHUNK][NMAX];
#pragma unroll 16
    for (int n = 0; n < NMAX; n++) carry[n] = 0.0f, dA[n] = 0.0f;
    float dD = 0.0f, dbias = 0.0f;
    for (int c = n_chunks - 1; c >= 0; c--) {
        int t0 = c * SCAN_CHUNK, t1 = t0 + SCAN_CHUNK < T ? t0 + SCAN_CHUNK : T;
        float hprev0[NMAX];
        const float *cp = ckpt + (((size_t)ch.b * n_chunks + c) * D + d) * N;
#pragma unroll 16
        for (int n = 0; n < NMAX; n++) {
            hprev0[n] = n < N && ch.live ? cp[n] : 0.0f;
            h[n] = hprev0[n];
        }
        for (int t = t0; t < t1; t++) {
            size_t i = ((size_t)ch.b * T + t) * D + d, r = ((size_t)ch.b * T + t) * N;
            float delta = mt_softplusf(a.dt[i] + bias), u = a.u[i];
#pragma unroll 16
            for (int n = 0; n < NMAX; n++)
                if (n < N) {
                    h[n] = expf(delta * A[n]) * h[n] + delta * a.Bm[r + n] * u;
                    hs[t - t0][n] = h[n];
                }
        }
        for (int t = t1 - 1; t >= t0; t--) {
            size_t i = ((size_t)ch.b * T + t) * D + d, r = ((size_t)ch.b * T + t) * N;
            float dt_in = a.dt[i] + bias, delta = mt_softplusf(dt_in), u = a.u[i];
            float dyt = ch.live ? dy[i] : 0.0f;
            float du = dskip * dyt, ddelta = 0.0f;
#pragma unroll 16
            for (int n = 0; n < NMAX; n++) {
                if (n >= N) break;
                float Bn = a.Bm[r + n], Cn = a.Cm[r + n];
                float at = expf(delta * A[n]);
                float hprev = t > t0 ? hs[t - t0 - 1][n] : hprev0[n];
                float gt = dyt * Cn + carry[n];
                float dC = dyt * hs[t - t0][n], dB = gt * delta * u;
                du += gt * delta * Bn;
                ddelta += gt * (Bn * u + A[n] * at * hprev);
                dA[n] += gt * delta * at * hprev;
                carry[n] = gt * at;
                // dB_t, dC_t: sum over the warp's channels, one atomic per warp
                dB = warp_sum(dB * on);
                dC = warp_sum(dC * on);
                if ((threadIdx.x & 31) == 0) {
                    if (g.dBm) atomicAdd(g.dBm + r + n, dB);
                    if (g.dCm) atomicAdd(g.dCm + r + n, dC);
                }
            }
            if (ch.live) {
                float ddt = ddelta * mt_softplus_gradf(dt_in);
                g.du[i] += du;
                g.ddt[i] += ddt;
                dD += dyt * u;
                dbias += ddt;
            }
        }
    }
    if (!ch.live) return;
    // dA_log = dA * dA/dA_log = dA * A (A = -exp(A_log))
    if (g.dA_log)
#pragma unroll 16
        for (int n = 0; n < NMAX; n++)
            if (n < N) atomicAdd(g.dA_log + (size_t)d * N + n, dA[n] * A[n]);
    if (g.dDskip) atomicAdd(g.dDskip + d, dD);
    if (g.ddt_bias) atomicAdd(g.ddt_bias + d, dbias);
}

static unsigned scan_grid(const mt_scan_args *a)
{
    return (unsigned)a->B * (unsigned)((a->D + SCAN_THREADS - 1) / SCAN_THREADS);
}

// The state arrays' size is a template parameter (registers); N picks the smallest that fits.
#define SCAN_DISPATCH(N, LAUNCH)          \
    do {                                  \
        if ((N) <= 16) LAUNCH(16);        \
        else if ((N) <= 32) LAUNCH(32);   \
        else if ((N) <= 64) LAUNCH(64);   \
        else if ((N) <= 128) LAUNCH(128); \
        else LAUNCH(MT_SCAN_MAX_STATE);   \
    } while (0)

void cu_scan_forward(float *y, float *h_last, const mt_scan_args *a)
{
    if (a->B <= 0 || a->T <= 0 || a->D <= 0) return;
#define FWD(NM) \
    scan_forward_kernel<NM><<<scan_grid(a), SCAN_THREADS, 0, cu_stream()>>>(y, h_last, *a)
    SCAN_DISPATCH(a->N, FWD);
#undef FWD
    cu_check(cudaGetLastError(), "scan_forward_kernel");
}

void cu_scan_step(float *y, float *h, const mt_scan_args *a)
{
    if (a->B <= 0 || a->D <= 0) return;
#define STEP(NM) scan_step_kernel<NM><<<scan_grid(a), SCAN_THREADS, 0, cu_stream()>>>(y, h, *a)
    SCAN_DISPATCH(a->N, STEP);
#undef STEP
    cu_check(cudaGetLastError(), "scan_step_kernel");
}

void cu_scan_backward(const mt_scan_grads *g, const float *dy, const mt_scan_args *a)
{
    if (a->B <= 0 || a->T <= 0 || a->D <= 0) return;
    int n_chunks = (a->T + SCAN_CHUNK - 1) / SCAN_CHUNK;
    float *ckpt = (float *)cu_scratch((size_t)a->B * n_chunks * a->D * a->N * sizeof(float));
    if (!ckpt) return;
#define BWD(NM)              \
    scan_backward_kernel<NM> \
        <<<scan_grid(a), SCAN_THREADS, 0, cu_stream()>>>(*g, dy, *a, ckpt, n_chunks)
    SCAN_DISPATCH(a->N, BWD);
#undef BWD
    cu_check(cudaGetLastError(), "scan_backward_kernel");
    cu_scratch_free(ckpt);
}
