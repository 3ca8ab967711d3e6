// The fused Mamba v1 selective scan on CUDA (formulas: mtlab/backend.h, mt_scan_args; the
// CPU reference: engine/backend/cpu/cpu_scan.c; the design it follows: docs/models.md §3.7).
// The expanded (B, T, D, N) tensors are never materialised:
//   forward   h_t = exp(delta_t A) h_{t-1} + delta_t B_t u_t ; y_t = sum_n h_t C_t + D u_t
//             only y (and h_last) reach global memory.
//   backward  g_t = dy_t C_t + exp(delta_{t+1} A) g_{t+1}      (g = dL/dh_t)
//             gives du, ddt (through softplus'), dA_log, dB, dC, dD, ddt_bias as the CPU does.
// Two kernels of each, the backend picks the first that takes the shape:
//
// Parallel over time (docs/cuda.md §3). A block takes 32 consecutive channels of one batch row
// (the lanes: u, dt, y read and written coalesced, B_t and C_t one broadcast load per warp) and
// a chunk of PAR_WARPS x PAR_ITEMS steps at a time; warp w owns the chunk's steps
// [w PAR_ITEMS, (w + 1) PAR_ITEMS), its segment. Over a segment the recurrence composes to
//   h_end = P h_start + h_local,  P = prod_t exp(delta_t A) = exp(A sum_t delta_t)
// with h_local the segment's state from h_start = 0. So each thread runs its segment from zero
// (all threads at once), one thread per (state, channel) then walks the chunk's PAR_WARPS
// segments in order from the state the chunk starts with and leaves each segment's true
// starting state in shared memory, and each thread runs its segment again from that state,
// now summing y. The chunk's last state carries to the next chunk. Backward does the same in
// both directions: the checkpoints (the state at every chunk's start, written by the forward
// kernel without y) give the states, and the adjoint runs right to left with
//   q_t = exp(delta_t A) g_t ,  g_t = dy_t C_t + q_{t+1} ,  q_start = P q_end + q_local
// carrying q across chunks from the last to the first. The states go through shared memory in
// groups (PAR_GROUP in forward, PAR_WARPS in backward); N above PAR_MAX_STATE goes to the
// sequential kernels. scripts/gpu/scan_replay.py replays this index arithmetic in plain Python.
//
// Sequential (the reference; MTLAB_CUDA_SCAN=sequential selects it): one thread per channel
// (b, d) walks all T steps in order, its N states in registers. Backward recomputes: a first
// pass runs the recurrence again and keeps h only at the start of every chunk of SCAN_CHUNK
// steps (B, chunks, D, N floats of scratch); then chunks go last to first, each recomputed from
// its checkpoint into a per-thread buffer, and the reverse recurrence runs over it.
//
// Both sum dB, dC (shared by all channels) over a warp's 32 channels with shuffles, then add
// them with one atomicAdd per sum (the parallel kernel two steps' dB, dC at a time, warp_sum4);
// dA_log, dD, ddt_bias (shared by the batch rows) with atomicAdds at the end.
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

template <int NMAX> __global__ void scan_forward_seq_kernel(float *y, float *h_last, mt_scan_args a)
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

// T = 1: h (B, D, N) read and updated in place; yg = y * SiLU(z) when z is given (gate_forward's
// float)
template <int NMAX>
__global__ void scan_step_kernel(float *y, float *yg, float *hs, const float *z, mt_scan_args a)
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
    const float v = acc + a.Dskip[ch.d] * u;
    y[i] = v;
    if (z) yg[i] = v * mt_siluf(z[i]);
}

// sum over the 32 lanes of a warp (every lane calls it)
__device__ __forceinline__ float warp_sum(float v)
{
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

template <int NMAX>
__global__ void scan_backward_seq_kernel(mt_scan_grads g, const float *dy, mt_scan_args a,
                                         float *ckpt, int n_chunks)
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

// ---------------------------------------------------------------- parallel over time
#define PAR_WARPS 8 // a chunk's segments, one per warp
#define PAR_ITEMS 8 // a segment's steps, one thread's
#define PAR_CHUNK (PAR_WARPS * PAR_ITEMS)
#define PAR_GROUP 16 // states per pass through shared memory in forward
#define PAR_MAX_STATE 64
#define PAR_MIN_BLOCKS 2 // per multiprocessor: at most 128 registers a thread (backward: 128)
// forward: 3 blocks, at most 80 registers (88 unbounded; no spills, nvcc -Xptxas -v, sm_90). At
// 2 blocks, 16 warps an SM, Nsight Compute found half the issue slots idle for want of a ready
// warp (H200, 2026-11-30: 0.76 eligible of 3.8 active warps a scheduler; docs/cuda.md §4.2)
#define PAR_FWD_MIN_BLOCKS 3
#define LOG2E 1.4426950408889634f

// v0 .. v3 summed over the warp's 32 lanes, sum k left in lanes 8k .. 8k + 7: lanes l and
// l ^ 16 trade the halves they do not keep (v0 + v2 -> sums 0, 2 by bit 4; v1, v3 likewise),
// then l and l ^ 8 the quarters, and a butterfly over the last 8 lanes: 6 shuffles for 4 sums
// where 4 warp_sums take 20.
__device__ __forceinline__ float warp_sum4(float v0, float v1, float v2, float v3, int lane)
{
    bool up = lane & 16;
    float a = (up ? v2 : v0) + __shfl_xor_sync(0xffffffffu, up ? v0 : v2, 16); // sum 2 bit4
    float b = (up ? v3 : v1) + __shfl_xor_sync(0xffffffffu, up ? v1 : v3, 16); // 1 + 2 bit4
    up = lane & 8;
    float c = (up ? b : a) + __shfl_xor_sync(0xffffffffu, up ? a : b, 8); // bit3 + 2 bit4
    for (int o = 4; o > 0; o >>= 1) c += __shfl_xor_sync(0xffffffffu, c, o);
    return c;
}
static_assert(PAR_ITEMS % 2 == 0, "backward sums dB, dC of two steps at a time");

// The block's batch row b and the thread's channel d (lane), segment w (warp); d >= D marks a
// lane that computes on zeros and only takes part in the barriers and warp reductions.
struct par_thread {
    int b, d, lane, w;
    bool live;
};

__device__ __forceinline__ par_thread par_me(int D)
{
    int blocks_per_row = (D + 31) / 32;
    par_thread p;
    p.lane = threadIdx.x & 31;
    p.w = threadIdx.x >> 5;
    p.b = blockIdx.x / blocks_per_row;
    p.d = blockIdx.x % blocks_per_row * 32 + p.lane;
    p.live = p.d < D;
    return p;
}

// A segment's inputs: u, delta = softplus(dt + dt_bias) at steps t0 + i (zeros past T), and
// sum_i delta. exp(delta A) is taken as exp2(delta A log2(e)): one ex2 instruction.
__device__ __forceinline__ float par_inputs(float *u, float *delta, const par_thread &p,
                                            const mt_scan_args &a, int t0, float bias)
{
    float sum = 0.0f;
#pragma unroll
    for (int i = 0; i < PAR_ITEMS; i++) {
        int t = t0 + i;
        bool in = p.live && t < a.T;
        size_t k = ((size_t)p.b * a.T + t) * a.D + p.d;
        u[i] = in ? a.u[k] : 0.0f;
        delta[i] = in ? mt_softplusf(a.dt[k] + bias) : 0.0f;
        sum += delta[i];
    }
    return sum;
}

// B or C of a segment's step i and state n (m: the segment's first step, n_in: its steps
// before T), 0 past T: every lane of a warp reads the same float
__device__ __forceinline__ float par_bc(const float *m, int i, int n, int N, int n_in)
{
    return i < n_in ? m[i * N + n] : 0.0f;
}

// WITH_Y: y and h_last. Without: only the state at every chunk's start, into
// ckpt[((b * chunks + c) * D + d) * N + n] (backward's checkpoints).
template <int NMAX, bool WITH_Y>
__global__ void __launch_bounds__(PAR_WARPS * 32, PAR_FWD_MIN_BLOCKS)
    scan_forward_par_kernel(float *y, float *h_last, float *ckpt, mt_scan_args a)
{
    __shared__ float A2[NMAX][32]; // -exp(A_log) log2(e) of the block's channels
    __shared__ float carry[NMAX][32]; // the state before the chunk, then after it
    __shared__ float seg[PAR_WARPS][PAR_GROUP][32]; // a segment's h_local, then its h_start
    __shared__ float sd[PAR_WARPS][32]; // a segment's sum of delta
    const par_thread p = par_me(a.D);
    const int T = a.T, D = a.D, N = a.N, lane = p.lane, w = p.w;
    const int chunks = (T + PAR_CHUNK - 1) / PAR_CHUNK;
    for (int n = w; n < N; n += PAR_WARPS) {
        A2[n][lane] = p.live ? -expf(a.A_log[(size_t)p.d * N + n]) * LOG2E : 0.0f;
        carry[n][lane] = p.live && a.h0 ? a.h0[((size_t)p.b * D + p.d) * N + n] : 0.0f;
    }
    const float bias = p.live ? a.dt_bias[p.d] : 0.0f, dskip = p.live ? a.Dskip[p.d] : 0.0f;
    __syncthreads();
    for (int c = 0; c < chunks; c++) {
        const int t0 = c * PAR_CHUNK + w * PAR_ITEMS, n_in = T - t0;
        const size_t r0 = ((size_t)p.b * T + (n_in > 0 ? t0 : 0)) * N;
        const float *Bs = a.Bm + r0, *Cs = a.Cm + r0;
        float u[PAR_ITEMS], delta[PAR_ITEMS], acc[PAR_ITEMS];
        sd[w][lane] = par_inputs(u, delta, p, a, t0, bias);
#pragma unroll
        for (int i = 0; i < PAR_ITEMS; i++) acc[i] = 0.0f;
        for (int g0 = 0; g0 < N; g0 += PAR_GROUP) {
            const int ng = N - g0 < PAR_GROUP ? N - g0 : PAR_GROUP;
            // 1. every segment from h = 0
            for (int j = 0; j < ng; j++) {
                const int n = g0 + j;
                const float A = A2[n][lane];
                float h = 0.0f;
#pragma unroll
                for (int i = 0; i < PAR_ITEMS; i++)
                    h = exp2f(delta[i] * A) * h + delta[i] * par_bc(Bs, i, n, N, n_in) * u[i];
                seg[w][j][lane] = h;
            }
            __syncthreads();
            // 2. one thread per (state, channel) walks the segments from the chunk's state
            for (int j = w; j < ng; j += PAR_WARPS) {
                const int n = g0 + j;
                const float A = A2[n][lane];
                float h = carry[n][lane];
                if (!WITH_Y && p.live) ckpt[(((size_t)p.b * chunks + c) * D + p.d) * N + n] = h;
                for (int s = 0; s < PAR_WARPS; s++) {
                    float local = seg[s][j][lane];
                    seg[s][j][lane] = h;
                    h = exp2f(sd[s][lane] * A) * h + local;
                }
                carry[n][lane] = h;
            }
            __syncthreads();
            // 3. every segment again from its true starting state, summing y
            for (int j = 0; j < (WITH_Y ? ng : 0); j++) {
                const int n = g0 + j;
                const float A = A2[n][lane];
                float h = seg[w][j][lane];
#pragma unroll
                for (int i = 0; i < PAR_ITEMS; i++) {
                    h = exp2f(delta[i] * A) * h + delta[i] * par_bc(Bs, i, n, N, n_in) * u[i];
                    acc[i] += h * par_bc(Cs, i, n, N, n_in);
                }
            }
            if (WITH_Y) __syncthreads(); // before the next group's step 1 writes seg
        }
        if (WITH_Y && p.live)
#pragma unroll
            for (int i = 0; i < PAR_ITEMS; i++)
                if (t0 + i < T) y[((size_t)p.b * T + t0 + i) * D + p.d] = acc[i] + dskip * u[i];
    }
    if (WITH_Y && h_last && p.live)
        for (int n = w; n < N; n += PAR_WARPS)
            h_last[((size_t)p.b * D + p.d) * N + n] = carry[n][lane];
}

// Chunks last to first, the states of chunk c from ckpt (scan_forward_par_kernel<NMAX, false>).
// The states go through shared memory PAR_WARPS at a time, so that in step 2 every warp takes
// one state.
template <int NMAX>
__global__ void __launch_bounds__(PAR_WARPS * 32, PAR_MIN_BLOCKS)
    scan_backward_par_kernel(mt_scan_grads g, const float *dy, mt_scan_args a, const float *ckpt)
{
    __shared__ float As[NMAX][32]; // A = -exp(A_log) of the block's channels
    __shared__ float qcarry[NMAX][32]; // q at the first step of the chunk after this one
    __shared__ float dAs[NMAX][32]; // dL/dA of the block's channels, summed over segments
    __shared__ float hseg[PAR_WARPS][PAR_WARPS][32]; // a segment's h_local, then its h_start
    __shared__ float qseg[PAR_WARPS][PAR_WARPS][32]; // a segment's q_local, then its q_end
    __shared__ float sd[PAR_WARPS][32]; // a segment's sum of delta
    const par_thread p = par_me(a.D);
    const int T = a.T, D = a.D, N = a.N, lane = p.lane, w = p.w;
    const int chunks = (T + PAR_CHUNK - 1) / PAR_CHUNK;
    const float on = p.live ? 1.0f : 0.0f;
    for (int n = w; n < N; n += PAR_WARPS) {
        As[n][lane] = p.live ? -expf(a.A_log[(size_t)p.d * N + n]) : 0.0f;
        qcarry[n][lane] = 0.0f;
        dAs[n][lane] = 0.0f;
    }
    const float bias = p.live ? a.dt_bias[p.d] : 0.0f, dskip = p.live ? a.Dskip[p.d] : 0.0f;
    float dD = 0.0f, dbias = 0.0f;
    __syncthreads();
    for (int c = chunks - 1; c >= 0; c--) {
        const int t0 = c * PAR_CHUNK + w * PAR_ITEMS, n_in = T - t0;
        const size_t r0 = ((size_t)p.b * T + (n_in > 0 ? t0 : 0)) * N;
        const float *Bs = a.Bm + r0, *Cs = a.Cm + r0;
        float u[PAR_ITEMS], delta[PAR_ITEMS], dyv[PAR_ITEMS], du[PAR_ITEMS], ddelta[PAR_ITEMS];
        sd[w][lane] = par_inputs(u, delta, p, a, t0, bias);
#pragma unroll
        for (int i = 0; i < PAR_ITEMS; i++) {
            int t = t0 + i;
            dyv[i] = p.live && t < T ? dy[((size_t)p.b * T + t) * D + p.d] : 0.0f;
            du[i] = dskip * dyv[i];
            ddelta[i] = 0.0f;
        }
        for (int g0 = 0; g0 < N; g0 += PAR_WARPS) {
            const int ng = N - g0 < PAR_WARPS ? N - g0 : PAR_WARPS;
            // 1. every segment from h = 0 (left to right) and from q = 0 (right to left)
            for (int j = 0; j < ng; j++) {
                const int n = g0 + j;
                const float A2 = As[n][lane] * LOG2E;
                float at[PAR_ITEMS], h = 0.0f, q = 0.0f;
#pragma unroll
                for (int i = 0; i < PAR_ITEMS; i++) {
                    at[i] = exp2f(delta[i] * A2);
                    h = at[i] * h + delta[i] * par_bc(Bs, i, n, N, n_in) * u[i];
                }
#pragma unroll
                for (int i = PAR_ITEMS - 1; i >= 0; i--)
                    q = at[i] * (dyv[i] * par_bc(Cs, i, n, N, n_in) + q);
                hseg[w][j][lane] = h;
                qseg[w][j][lane] = q;
            }
            __syncthreads();
            // 2. warp w takes state g0 + w: the states left to right from the checkpoint, the
            //    adjoints right to left from the later chunk's
            if (w < ng) {
                const int n = g0 + w;
                const float A2 = As[n][lane] * LOG2E;
                float h = p.live ? ckpt[(((size_t)p.b * chunks + c) * D + p.d) * N + n] : 0.0f;
                for (int s = 0; s < PAR_WARPS; s++) {
                    float local = hseg[s][w][lane];
                    hseg[s][w][lane] = h;
                    h = exp2f(sd[s][lane] * A2) * h + local;
                }
                float q = qcarry[n][lane];
                for (int s = PAR_WARPS - 1; s >= 0; s--) {
                    float local = qseg[s][w][lane];
                    qseg[s][w][lane] = q;
                    q = exp2f(sd[s][lane] * A2) * q + local;
                }
                qcarry[n][lane] = q;
            }
            __syncthreads();
            // 3. every segment's gradients from its h_start and q_end
            for (int j = 0; j < ng; j++) {
                const int n = g0 + j;
                const float A = As[n][lane], A2 = A * LOG2E, h0 = hseg[w][j][lane];
                float at[PAR_ITEMS], hs[PAR_ITEMS], h = h0, q = qseg[w][j][lane], dA = 0.0f;
                float dB_odd = 0.0f, dC_odd = 0.0f; // step i + 1's, summed with step i's
#pragma unroll
                for (int i = 0; i < PAR_ITEMS; i++) {
                    at[i] = exp2f(delta[i] * A2);
                    h = at[i] * h + delta[i] * par_bc(Bs, i, n, N, n_in) * u[i];
                    hs[i] = h;
                }
#pragma unroll
                for (int i = PAR_ITEMS - 1; i >= 0; i--) {
                    const int t = t0 + i;
                    const float Bn = par_bc(Bs, i, n, N, n_in), Cn = par_bc(Cs, i, n, N, n_in);
                    const float hprev = i > 0 ? hs[i - 1] : h0, gt = dyv[i] * Cn + q;
                    du[i] += gt * delta[i] * Bn;
                    ddelta[i] += gt * (Bn * u[i] + A * at[i] * hprev);
                    dA += gt * delta[i] * at[i] * hprev;
                    q = gt * at[i];
                    // dB_t, dC_t: summed over the warp's channels two steps at a time, one
                    // atomic per sum
                    const float dB = gt * delta[i] * u[i] * on, dC = dyv[i] * hs[i] * on;
                    if (i & 1) {
                        dB_odd = dB, dC_odd = dC;
                        continue;
                    }
                    const float sum = warp_sum4(dB_odd, dC_odd, dB, dC, lane);
                    const int k = lane >> 3, ts = t + (k < 2); // sum k: dB, dC of t + 1, of t
                    float *dst = k & 1 ? g.dCm : g.dBm;
                    if ((lane & 7) == 0 && ts < T && dst)
                        atomicAdd(dst + ((size_t)p.b * T + ts) * N + n, sum);
                }
                atomicAdd(&dAs[n][lane], dA);
            }
            __syncthreads(); // before the next group's step 1 writes hseg, qseg
        }
        if (p.live)
#pragma unroll
            for (int i = 0; i < PAR_ITEMS; i++)
                if (t0 + i < T) {
                    size_t k = ((size_t)p.b * T + t0 + i) * D + p.d;
                    // dt read again rather than kept: 8 registers fewer
                    float ddt = ddelta[i] * mt_softplus_gradf(a.dt[k] + bias);
                    g.du[k] += du[i];
                    g.ddt[k] += ddt;
                    dD += dyv[i] * u[i];
                    dbias += ddt;
                }
    }
    if (!p.live) return;
    // dA_log = dA * dA/dA_log = dA * A (A = -exp(A_log))
    if (g.dA_log)
        for (int n = w; n < N; n += PAR_WARPS)
            atomicAdd(g.dA_log + (size_t)p.d * N + n, dAs[n][lane] * As[n][lane]);
    if (g.dDskip) atomicAdd(g.dDskip + p.d, dD);
    if (g.ddt_bias) atomicAdd(g.ddt_bias + p.d, dbias);
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

// MTLAB_CUDA_SCAN=sequential: the sequential kernels (the reference) for every shape; read at
// every call, so a test or the bench can time both in one process.
static bool scan_parallel(const mt_scan_args *a)
{
    return a->N <= PAR_MAX_STATE && !cu_env_is("MTLAB_CUDA_SCAN", "sequential");
}

static unsigned par_grid(const mt_scan_args *a)
{
    return (unsigned)a->B * (unsigned)((a->D + 31) / 32);
}

// The parallel kernels' shared arrays hold NMAX states: 16 or PAR_MAX_STATE.
#define PAR_DISPATCH(N, LAUNCH)     \
    do {                            \
        if ((N) <= 16) LAUNCH(16);  \
        else LAUNCH(PAR_MAX_STATE); \
    } while (0)

void cu_scan_forward(float *y, float *h_last, const mt_scan_args *a)
{
    if (a->B <= 0 || a->T <= 0 || a->D <= 0) return;
    if (scan_parallel(a)) {
#define PFWD(NM)                      \
    scan_forward_par_kernel<NM, true> \
        <<<par_grid(a), PAR_WARPS * 32, 0, cu_stream()>>>(y, h_last, NULL, *a)
        PAR_DISPATCH(a->N, PFWD);
#undef PFWD
        cu_check(cudaGetLastError(), "scan_forward_par_kernel");
        return;
    }
#define FWD(NM) \
    scan_forward_seq_kernel<NM><<<scan_grid(a), SCAN_THREADS, 0, cu_stream()>>>(y, h_last, *a)
    SCAN_DISPATCH(a->N, FWD);
#undef FWD
    cu_check(cudaGetLastError(), "scan_forward_seq_kernel");
}

void cu_scan_step_gate(float *y, float *yg, float *h, const float *z, const mt_scan_args *a)
{
    if (a->B <= 0 || a->D <= 0) return;
#define STEP(NM) \
    scan_step_kernel<NM><<<scan_grid(a), SCAN_THREADS, 0, cu_stream()>>>(y, yg, h, z, *a)
    SCAN_DISPATCH(a->N, STEP);
#undef STEP
    cu_check(cudaGetLastError(), "scan_step_kernel");
}

void cu_scan_step(float *y, float *h, const mt_scan_args *a)
{
    cu_scan_step_gate(y, NULL, h, NULL, a);
}

// Parallel: the state at every chunk's start from the forward kernel (B, chunks, D, N floats of
// scratch), then the backward kernel. Backward starts from zeros, as the CPU's: h0 is the
// forward's only.
static void scan_backward_par(const mt_scan_grads *g, const float *dy, const mt_scan_args *args)
{
    mt_scan_args from_zero = *args;
    from_zero.h0 = NULL;
    const mt_scan_args *a = &from_zero;
    int chunks = (a->T + PAR_CHUNK - 1) / PAR_CHUNK;
    float *ckpt = (float *)cu_scratch((size_t)a->B * chunks * a->D * a->N * sizeof(float));
    if (!ckpt) return;
#define PBWD(NM)                                                                     \
    do {                                                                             \
        scan_forward_par_kernel<NM, false>                                           \
            <<<par_grid(a), PAR_WARPS * 32, 0, cu_stream()>>>(NULL, NULL, ckpt, *a); \
        scan_backward_par_kernel<NM>                                                 \
            <<<par_grid(a), PAR_WARPS * 32, 0, cu_stream()>>>(*g, dy, *a, ckpt);     \
    } while (0)
    PAR_DISPATCH(a->N, PBWD);
#undef PBWD
    cu_check(cudaGetLastError(), "scan_backward_par_kernel");
    cu_scratch_free(ckpt);
}

void cu_scan_backward(const mt_scan_grads *g, const float *dy, const mt_scan_args *a)
{
    if (a->B <= 0 || a->T <= 0 || a->D <= 0) return;
    if (scan_parallel(a)) {
        scan_backward_par(g, dy, a);
        return;
    }
    int n_chunks = (a->T + SCAN_CHUNK - 1) / SCAN_CHUNK;
    float *ckpt = (float *)cu_scratch((size_t)a->B * n_chunks * a->D * a->N * sizeof(float));
    if (!ckpt) return;
#define BWD(NM)                  \
    scan_backward_seq_kernel<NM> \
        <<<scan_grid(a), SCAN_THREADS, 0, cu_stream()>>>(*g, dy, *a, ckpt, n_chunks)
    SCAN_DISPATCH(a->N, BWD);
#undef BWD
    cu_check(cudaGetLastError(), "scan_backward_seq_kernel");
    cu_scratch_free(ckpt);
}
