// A development check of kernels/cuda_scan.cu's scan parallel over time without a GPU
// (docs/cuda.md §3), beside scripts/gpu/scan_replay.py: where the replay is a transcription in
// Python, this compiles the kernels' own source on the host (scan_emulate.sh cuts it out of
// the .cu file) and runs every CUDA thread of a block as a std::thread: __shared__ arrays are
// statics (blocks run one after another), __syncthreads a barrier of the block's 256 threads,
// __shfl_xor_sync an exchange through a warp's 32 slots between two barriers of its lanes,
// atomicAdd a locked add. The kernels run as cu_scan_forward and scan_backward_par launch
// them, on random inputs with random starting gradients, against the recurrence and its
// reverse in double; fp32 rounding stays below 1e-5 relative, an index error does not.
// bash scripts/gpu/scan_emulate.sh
#include <barrier>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>
extern "C" {
#include "math/elementwise.h"
#include "mtlab/backend.h"
}

struct emu_dim {
    unsigned x;
};
thread_local emu_dim threadIdx, blockIdx;
static std::barrier<> *emu_block_barrier;
static std::barrier<> *emu_warp_barrier[32];
static float emu_slot[32][32];
static std::mutex emu_atomic;
#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static
#define __launch_bounds__(...)

static void __syncthreads() { emu_block_barrier->arrive_and_wait(); }

static float __shfl_xor_sync(unsigned, float v, int o)
{
    int w = threadIdx.x >> 5, lane = threadIdx.x & 31;
    emu_slot[w][lane] = v;
    emu_warp_barrier[w]->arrive_and_wait();
    float r = emu_slot[w][lane ^ o];
    emu_warp_barrier[w]->arrive_and_wait();
    return r;
}

static float atomicAdd(float *p, float v)
{
    std::lock_guard<std::mutex> g(emu_atomic);
    float old = *p;
    *p += v;
    return old;
}

#include "scan_par_kernels.inc"

// kernel() on every thread of every block, the blocks one after another
template <typename F> static void launch(unsigned blocks, F kernel)
{
    for (unsigned blk = 0; blk < blocks; blk++) {
        std::barrier<> bb(PAR_WARPS * 32);
        emu_block_barrier = &bb;
        for (int w = 0; w < PAR_WARPS; w++) emu_warp_barrier[w] = new std::barrier<>(32);
        std::vector<std::thread> th;
        for (unsigned t = 0; t < PAR_WARPS * 32; t++)
            th.emplace_back([=] {
                threadIdx.x = t;
                blockIdx.x = blk;
                kernel();
            });
        for (auto &x : th) x.join();
        for (int w = 0; w < PAR_WARPS; w++) delete emu_warp_barrier[w];
    }
}
static std::vector<float> rnd(size_t n, float s)
{
    std::vector<float> v(n);
    for (auto &x : v) x = s * (2.0f * (float)rand() / RAND_MAX - 1.0f);
    return v;
}

static double sp(double x) { return x > 20 ? x : log1p(exp(x)); }
static double spg(double x) { return x <= 20 ? 1 / (1 + exp(-x)) : 1; }

static double rel(const std::vector<float> &got, const std::vector<double> &want)
{
    double m = 1, e = 0;
    for (size_t i = 0; i < want.size(); i++) {
        m = fmax(m, fabs(want[i]));
        e = std::isnan(got[i]) ? INFINITY : fmax(e, fabs(got[i] - want[i]));
    }
    return e / m;
}

static double run(int B, int T, int D, int N, bool with_h0)
{
    size_t nu = (size_t)B * T * D, nb = (size_t)B * T * N, nh = (size_t)B * D * N;
    auto u = rnd(nu, 1), dt = rnd(nu, 2), Al = rnd((size_t)D * N, 1), Bm = rnd(nb, 1),
         Cm = rnd(nb, 1), Ds = rnd(D, 1), db = rnd(D, 1), h0 = rnd(nh, 1), dy = rnd(nu, 1);
    // gradients start from random values: accumulation
    auto du0 = rnd(nu, 1), ddt0 = rnd(nu, 1), dA0 = rnd((size_t)D * N, 1), dB0 = rnd(nb, 1),
         dC0 = rnd(nb, 1), dD0 = rnd(D, 1), ddb0 = rnd(D, 1);
    mt_scan_args a = {u.data(),  dt.data(), Al.data(), Bm.data(),
                      Cm.data(), Ds.data(), db.data(), B,
                      T,         D,         N,         with_h0 ? h0.data() : NULL,
                      NULL};
    // reference in double
    std::vector<double> y(nu), hl(nh), du(du0.begin(), du0.end()), ddt(ddt0.begin(), ddt0.end()),
        dA(dA0.begin(), dA0.end()), dBr(dB0.begin(), dB0.end()), dCr(dC0.begin(), dC0.end()),
        dD(dD0.begin(), dD0.end()), ddb(ddb0.begin(), ddb0.end());
    for (int b = 0; b < B; b++)
        for (int d = 0; d < D; d++) {
            std::vector<double> A(N), h(N), delta(T);
            std::vector<std::vector<double>> hs(T, std::vector<double>(N));
            for (int n = 0; n < N; n++) A[n] = -exp((double)Al[(size_t)d * N + n]);
            for (int t = 0; t < T; t++)
                delta[t] = sp((double)dt[((size_t)b * T + t) * D + d] + db[d]);
            for (int pass = 0; pass < 2; pass++) { // 0: forward from h0, 1: states from zero
                for (int n = 0; n < N; n++)
                    h[n] = pass == 0 && with_h0 ? h0[((size_t)b * D + d) * N + n] : 0;
                for (int t = 0; t < T; t++) {
                    size_t k = ((size_t)b * T + t) * D + d, r = ((size_t)b * T + t) * N;
                    double acc = 0;
                    for (int n = 0; n < N; n++) {
                        h[n] = exp(delta[t] * A[n]) * h[n] + delta[t] * Bm[r + n] * u[k];
                        acc += h[n] * Cm[r + n];
                        hs[t][n] = h[n];
                    }
                    if (pass == 0) y[k] = acc + Ds[d] * u[k];
                }
                if (pass == 0)
                    for (int n = 0; n < N; n++) hl[((size_t)b * D + d) * N + n] = h[n];
            }
            std::vector<double> carry(N, 0.0);
            for (int t = T - 1; t >= 0; t--) {
                size_t k = ((size_t)b * T + t) * D + d, r = ((size_t)b * T + t) * N;
                double ddelta = 0, dut = Ds[d] * dy[k];
                for (int n = 0; n < N; n++) {
                    double at = exp(delta[t] * A[n]), hp = t ? hs[t - 1][n] : 0;
                    double g = dy[k] * Cm[r + n] + carry[n];
                    dCr[r + n] += dy[k] * hs[t][n];
                    dBr[r + n] += g * delta[t] * u[k];
                    dut += g * delta[t] * Bm[r + n];
                    ddelta += g * (Bm[r + n] * u[k] + A[n] * at * hp);
                    dA[(size_t)d * N + n] += g * delta[t] * at * hp * A[n];
                    carry[n] = g * at;
                }
                double gd = ddelta * spg((double)dt[k] + db[d]);
                du[k] += dut, ddt[k] += gd, dD[d] += dy[k] * u[k], ddb[d] += gd;
            }
        }
    // the kernels as cu_scan_forward / scan_backward_par launch them
    unsigned grid = (unsigned)B * ((D + 31) / 32);
    int chunks = (T + PAR_CHUNK - 1) / PAR_CHUNK;
    std::vector<float> gy(nu, NAN), ghl(nh, NAN), ckpt((size_t)B * chunks * D * N, NAN);
    mt_scan_grads g = {du0.data(), ddt0.data(), dA0.data(), dB0.data(),
                       dC0.data(), dD0.data(),  ddb0.data()};
    mt_scan_args z = a;
    z.h0 = NULL;
    if (N <= 16) {
        launch(grid, [&] { scan_forward_par_kernel<16, true>(gy.data(), ghl.data(), NULL, a); });
        launch(grid, [&] { scan_forward_par_kernel<16, false>(NULL, NULL, ckpt.data(), z); });
        launch(grid, [&] { scan_backward_par_kernel<16>(g, dy.data(), z, ckpt.data()); });
    } else {
        launch(grid, [&] { scan_forward_par_kernel<64, true>(gy.data(), ghl.data(), NULL, a); });
        launch(grid, [&] { scan_forward_par_kernel<64, false>(NULL, NULL, ckpt.data(), z); });
        launch(grid, [&] { scan_backward_par_kernel<64>(g, dy.data(), z, ckpt.data()); });
    }
    double e = fmax(rel(gy, y), rel(ghl, hl));
    double eb = fmax(fmax(rel(du0, du), rel(ddt0, ddt)), fmax(rel(dA0, dA), rel(dB0, dBr)));
    eb = fmax(eb, fmax(rel(dC0, dCr), fmax(rel(dD0, dD), rel(ddb0, ddb))));
    printf("  B%d T%d D%d N%d%s: forward %.3g, backward %.3g\n", B, T, D, N, with_h0 ? " h0" : "",
           e, eb);
    return fmax(e, eb);
}

int main()
{
    srand(7);
    const int cases[][5] = {{1, 1, 1, 1, 0},     {2, 7, 5, 4, 1},     {2, 150, 40, 20, 1},
                            {3, 65, 33, 1, 0},   {1, 130, 9, 40, 1},  {1, 64, 32, 16, 0},
                            {1, 300, 96, 16, 1}, {2, 1000, 40, 1, 0}, {1, 200, 70, 64, 1}};
    double worst = 0;
    for (auto &c : cases) worst = fmax(worst, run(c[0], c[1], c[2], c[3], c[4]));
    printf("emulated kernels: largest relative error %.3g against double (%s)\n", worst,
           worst <= 1e-5 ? "ok" : "ABOVE 1e-5");
    return worst <= 1e-5 ? 0 : 1;
}
