#!/usr/bin/env python3
"""A development check of kernels/cuda_scan.cu's scan parallel over time without a GPU
(docs/cuda.md §3).

Replays scan_forward_par_kernel (with y, and without: backward's checkpoints) and
scan_backward_par_kernel thread by thread: each block's 32 lanes (channels) and PAR_WARPS warps
(segments of a chunk), the shared arrays with the kernels' shapes and indices, the barriers as
phases (every thread finishes a phase before any starts the next), the states in groups, the
lanes past D on zeros, the segments past T, the shuffles that sum dB and dC (warp_sum4) and
the atomic adds.
Compares with the sequential recurrence and its reverse, in double, straight from the formulas
of mtlab/backend.h (mt_scan_args, mt_scan_grads). It checks the index arithmetic and the
segment algebra, not the hardware or float rounding. Plain Python, no packages:
python3 scripts/gpu/scan_replay.py
"""
import math
import random

PAR_WARPS, PAR_ITEMS, PAR_GROUP = 8, 8, 16
PAR_CHUNK = PAR_WARPS * PAR_ITEMS
LOG2E = 1.4426950408889634


def softplus(x):
    return x if x > 20.0 else math.log1p(math.exp(x))


def softplus_grad(x):
    return 1.0 / (1.0 + math.exp(-x)) if x <= 20.0 else 1.0


class Args:
    def __init__(self, B, T, D, N, with_h0, rnd):
        self.B, self.T, self.D, self.N = B, T, D, N
        u = lambda n, s: [s * (2 * rnd.random() - 1) for _ in range(n)]
        self.u, self.dt = u(B * T * D, 1.0), u(B * T * D, 2.0)
        self.A_log, self.Bm, self.Cm = u(D * N, 1.0), u(B * T * N, 1.0), u(B * T * N, 1.0)
        self.Dskip, self.dt_bias = u(D, 1.0), u(D, 1.0)
        self.h0 = u(B * D * N, 1.0) if with_h0 else None


# ---------------------------------------------------------------- the reference
def reference(a, dy):
    B, T, D, N = a.B, a.T, a.D, a.N
    y, h_last = [0.0] * (B * T * D), [0.0] * (B * D * N)
    du, ddt = [0.0] * (B * T * D), [0.0] * (B * T * D)
    dA_log, dBm, dCm = [0.0] * (D * N), [0.0] * (B * T * N), [0.0] * (B * T * N)
    dD, dbias = [0.0] * D, [0.0] * D
    for b in range(B):
        for d in range(D):
            A = [-math.exp(a.A_log[d * N + n]) for n in range(N)]
            k = lambda t: (b * T + t) * D + d
            delta = [softplus(a.dt[k(t)] + a.dt_bias[d]) for t in range(T)]
            hs = []  # hs[t][n]; the forward from h0
            h = [a.h0[(b * D + d) * N + n] if a.h0 else 0.0 for n in range(N)]
            for t in range(T):
                h = [math.exp(delta[t] * A[n]) * h[n] + delta[t] * a.Bm[(b * T + t) * N + n]
                     * a.u[k(t)] for n in range(N)]
                hs.append(h)
                y[k(t)] = sum(h[n] * a.Cm[(b * T + t) * N + n] for n in range(N)) \
                    + a.Dskip[d] * a.u[k(t)]
            for n in range(N):
                h_last[(b * D + d) * N + n] = h[n]
            # backward: from h = 0 (mt_scan_args: h0 is scan_forward's only)
            hs = []
            h = [0.0] * N
            for t in range(T):
                h = [math.exp(delta[t] * A[n]) * h[n] + delta[t] * a.Bm[(b * T + t) * N + n]
                     * a.u[k(t)] for n in range(N)]
                hs.append(h)
            carry = [0.0] * N
            for t in range(T - 1, -1, -1):
                r = (b * T + t) * N
                ddelta, dut = 0.0, a.Dskip[d] * dy[k(t)]
                for n in range(N):
                    at = math.exp(delta[t] * A[n])
                    hp = hs[t - 1][n] if t > 0 else 0.0
                    g = dy[k(t)] * a.Cm[r + n] + carry[n]
                    dCm[r + n] += dy[k(t)] * hs[t][n]
                    dBm[r + n] += g * delta[t] * a.u[k(t)]
                    dut += g * delta[t] * a.Bm[r + n]
                    ddelta += g * (a.Bm[r + n] * a.u[k(t)] + A[n] * at * hp)
                    dA_log[d * N + n] += g * delta[t] * at * hp * A[n]
                    carry[n] = g * at
                gd = ddelta * softplus_grad(a.dt[k(t)] + a.dt_bias[d])
                du[k(t)] += dut
                ddt[k(t)] += gd
                dD[d] += dy[k(t)] * a.u[k(t)]
                dbias[d] += gd
    return dict(y=y, h_last=h_last, du=du, ddt=ddt, dA_log=dA_log, dBm=dBm, dCm=dCm,
                dDskip=dD, ddt_bias=dbias)


# ---------------------------------------------------------------- the kernels, replayed
def threads():
    return [(w, lane) for w in range(PAR_WARPS) for lane in range(32)]


def par_me(a, block, w, lane):
    blocks_per_row = (a.D + 31) // 32
    b, d = block // blocks_per_row, block % blocks_per_row * 32 + lane
    return b, d, d < a.D


def chunks_of(T):
    return (T + PAR_CHUNK - 1) // PAR_CHUNK


def layout(a):
    """what both kernels start from: T, D, N, the chunks, the shared arrays' NMAX, the blocks"""
    return a.T, a.D, a.N, chunks_of(a.T), 16 if a.N <= 16 else 64, a.B * ((a.D + 31) // 32)


def lanes(rows):
    """a shared array [rows][32], unwritten"""
    return [[None] * 32 for _ in range(rows)]


def par_inputs(a, b, d, live, t0, bias):
    u, delta = [0.0] * PAR_ITEMS, [0.0] * PAR_ITEMS
    for i in range(PAR_ITEMS):
        t = t0 + i
        if live and t < a.T:
            k = (b * a.T + t) * a.D + d
            u[i], delta[i] = a.u[k], softplus(a.dt[k] + bias)
    return u, delta, sum(delta)


def chunk_start(a, s, sd, c, w, lane):
    """A thread's segment of chunk c: where it starts, how many steps are left, its row of B and
    C, its u and delta, and the segment's sum of delta into sd (both kernels begin a chunk so)."""
    t0 = c * PAR_CHUNK + w * PAR_ITEMS
    s['t0'], s['n_in'] = t0, a.T - t0
    s['r0'] = (s['b'] * a.T + (t0 if a.T - t0 > 0 else 0)) * a.N
    s['u'], s['delta'], sd[w][lane] = par_inputs(a, s['b'], s['d'], s['live'], t0, s['bias'])
    return s


def par_bc(m, r0, i, n, N, n_in):
    return m[r0 + i * N + n] if i < n_in else 0.0


def shfl_xor(vals, o):
    return [vals[lane ^ o] for lane in range(32)]


def warp_sum4(v0, v1, v2, v3):
    """kernels/cuda_scan.cu's warp_sum4, lane by lane: each argument and the result a list of
    the 32 lanes' values"""
    up = [bool(lane & 16) for lane in range(32)]
    send_a = shfl_xor([v0[l] if up[l] else v2[l] for l in range(32)], 16)
    send_b = shfl_xor([v1[l] if up[l] else v3[l] for l in range(32)], 16)
    a = [(v2[l] if up[l] else v0[l]) + send_a[l] for l in range(32)]
    b = [(v3[l] if up[l] else v1[l]) + send_b[l] for l in range(32)]
    up = [bool(lane & 8) for lane in range(32)]
    send_c = shfl_xor([a[l] if up[l] else b[l] for l in range(32)], 8)
    c = [(b[l] if up[l] else a[l]) + send_c[l] for l in range(32)]
    for o in (4, 2, 1):
        other = shfl_xor(c, o)
        c = [c[l] + other[l] for l in range(32)]
    return c


def forward_par(a, with_y, y, h_last, ckpt):
    T, D, N, chunks, nmax, blocks = layout(a)
    for block in range(blocks):
        A2, carry = lanes(nmax), lanes(nmax)
        seg = [lanes(PAR_GROUP) for _ in range(PAR_WARPS)]
        sd = lanes(PAR_WARPS)
        th = {}
        for w, lane in threads():
            b, d, live = par_me(a, block, w, lane)
            for n in range(w, N, PAR_WARPS):
                A2[n][lane] = -math.exp(a.A_log[d * N + n]) * LOG2E if live else 0.0
                carry[n][lane] = a.h0[(b * D + d) * N + n] if live and a.h0 else 0.0
            th[w, lane] = dict(b=b, d=d, live=live, bias=a.dt_bias[d] if live else 0.0,
                               dskip=a.Dskip[d] if live else 0.0)
        # __syncthreads
        for c in range(chunks):
            for w, lane in threads():
                s = chunk_start(a, th[w, lane], sd, c, w, lane)
                s['acc'] = [0.0] * PAR_ITEMS
            for g0 in range(0, N, PAR_GROUP):
                ng = min(N - g0, PAR_GROUP)
                for w, lane in threads():  # 1.
                    s = th[w, lane]
                    for j in range(ng):
                        n, h = g0 + j, 0.0
                        A = A2[n][lane]
                        for i in range(PAR_ITEMS):
                            h = 2.0 ** (s['delta'][i] * A) * h + s['delta'][i] * par_bc(
                                a.Bm, s['r0'], i, n, N, s['n_in']) * s['u'][i]
                        seg[w][j][lane] = h
                # __syncthreads
                for w, lane in threads():  # 2.
                    s = th[w, lane]
                    for j in range(w, ng, PAR_WARPS):
                        n = g0 + j
                        A, h = A2[n][lane], carry[n][lane]
                        if not with_y and s['live']:
                            ckpt[((s['b'] * chunks + c) * D + s['d']) * N + n] = h
                        for sg in range(PAR_WARPS):
                            local = seg[sg][j][lane]
                            seg[sg][j][lane] = h
                            h = 2.0 ** (sd[sg][lane] * A) * h + local
                        carry[n][lane] = h
                # __syncthreads
                if with_y:
                    for w, lane in threads():  # 3.
                        s = th[w, lane]
                        for j in range(ng):
                            n = g0 + j
                            A, h = A2[n][lane], seg[w][j][lane]
                            for i in range(PAR_ITEMS):
                                h = 2.0 ** (s['delta'][i] * A) * h + s['delta'][i] * par_bc(
                                    a.Bm, s['r0'], i, n, N, s['n_in']) * s['u'][i]
                                s['acc'][i] += h * par_bc(a.Cm, s['r0'], i, n, N, s['n_in'])
                    # __syncthreads
            if with_y:
                for w, lane in threads():
                    s = th[w, lane]
                    if s['live']:
                        for i in range(PAR_ITEMS):
                            if s['t0'] + i < T:
                                y[(s['b'] * T + s['t0'] + i) * D + s['d']] = \
                                    s['acc'][i] + s['dskip'] * s['u'][i]
        if with_y and h_last is not None:
            for w, lane in threads():
                s = th[w, lane]
                if s['live']:
                    for n in range(w, N, PAR_WARPS):
                        h_last[(s['b'] * D + s['d']) * N + n] = carry[n][lane]


def backward_par(a, dy, g, ckpt):
    T, D, N, chunks, nmax, blocks = layout(a)
    for block in range(blocks):
        As, qcarry, dAs = lanes(nmax), lanes(nmax), lanes(nmax)
        hseg = [lanes(PAR_WARPS) for _ in range(PAR_WARPS)]
        qseg = [lanes(PAR_WARPS) for _ in range(PAR_WARPS)]
        sd = lanes(PAR_WARPS)
        th = {}
        for w, lane in threads():
            b, d, live = par_me(a, block, w, lane)
            for n in range(w, N, PAR_WARPS):
                As[n][lane] = -math.exp(a.A_log[d * N + n]) if live else 0.0
                qcarry[n][lane], dAs[n][lane] = 0.0, 0.0
            th[w, lane] = dict(b=b, d=d, live=live, on=1.0 if live else 0.0,
                               bias=a.dt_bias[d] if live else 0.0,
                               dskip=a.Dskip[d] if live else 0.0, dD=0.0, dbias=0.0)
        # __syncthreads
        for c in range(chunks - 1, -1, -1):
            for w, lane in threads():
                s = chunk_start(a, th[w, lane], sd, c, w, lane)
                t0 = s['t0']
                s['dyv'] = [dy[(s['b'] * T + t0 + i) * D + s['d']]
                            if s['live'] and t0 + i < T else 0.0 for i in range(PAR_ITEMS)]
                s['du'] = [s['dskip'] * v for v in s['dyv']]
                s['ddelta'] = [0.0] * PAR_ITEMS
            for g0 in range(0, N, PAR_WARPS):
                ng = min(N - g0, PAR_WARPS)
                for w, lane in threads():  # 1.
                    s = th[w, lane]
                    for j in range(ng):
                        n = g0 + j
                        A2 = As[n][lane] * LOG2E
                        at, h, q = [0.0] * PAR_ITEMS, 0.0, 0.0
                        for i in range(PAR_ITEMS):
                            at[i] = 2.0 ** (s['delta'][i] * A2)
                            h = at[i] * h + s['delta'][i] * par_bc(a.Bm, s['r0'], i, n, N,
                                                                  s['n_in']) * s['u'][i]
                        for i in range(PAR_ITEMS - 1, -1, -1):
                            q = at[i] * (s['dyv'][i] * par_bc(a.Cm, s['r0'], i, n, N,
                                                              s['n_in']) + q)
                        hseg[w][j][lane], qseg[w][j][lane] = h, q
                # __syncthreads
                for w, lane in threads():  # 2.
                    s = th[w, lane]
                    if w < ng:
                        n = g0 + w
                        A2 = As[n][lane] * LOG2E
                        h = ckpt[((s['b'] * chunks + c) * D + s['d']) * N + n] if s['live'] else 0.0
                        for sg in range(PAR_WARPS):
                            local = hseg[sg][w][lane]
                            hseg[sg][w][lane] = h
                            h = 2.0 ** (sd[sg][lane] * A2) * h + local
                        q = qcarry[n][lane]
                        for sg in range(PAR_WARPS - 1, -1, -1):
                            local = qseg[sg][w][lane]
                            qseg[sg][w][lane] = q
                            q = 2.0 ** (sd[sg][lane] * A2) * q + local
                        qcarry[n][lane] = q
                # __syncthreads
                for w in range(PAR_WARPS):  # 3., a warp at a time for its shuffles
                    for j in range(ng):
                        n = g0 + j
                        dB_lanes = [[0.0] * 32 for _ in range(PAR_ITEMS)]
                        dC_lanes = [[0.0] * 32 for _ in range(PAR_ITEMS)]
                        for lane in range(32):
                            s = th[w, lane]
                            A = As[n][lane]
                            A2, h0 = A * LOG2E, hseg[w][j][lane]
                            at, hs = [0.0] * PAR_ITEMS, [0.0] * PAR_ITEMS
                            h, q, dA = h0, qseg[w][j][lane], 0.0
                            for i in range(PAR_ITEMS):
                                at[i] = 2.0 ** (s['delta'][i] * A2)
                                h = at[i] * h + s['delta'][i] * par_bc(a.Bm, s['r0'], i, n, N,
                                                                      s['n_in']) * s['u'][i]
                                hs[i] = h
                            for i in range(PAR_ITEMS - 1, -1, -1):
                                Bn = par_bc(a.Bm, s['r0'], i, n, N, s['n_in'])
                                Cn = par_bc(a.Cm, s['r0'], i, n, N, s['n_in'])
                                hprev = hs[i - 1] if i > 0 else h0
                                gt = s['dyv'][i] * Cn + q
                                s['du'][i] += gt * s['delta'][i] * Bn
                                s['ddelta'][i] += gt * (Bn * s['u'][i] + A * at[i] * hprev)
                                dA += gt * s['delta'][i] * at[i] * hprev
                                q = gt * at[i]
                                dB_lanes[i][lane] = gt * s['delta'][i] * s['u'][i] * s['on']
                                dC_lanes[i][lane] = s['dyv'][i] * hs[i] * s['on']
                            dAs[n][lane] += dA
                        s0 = th[w, 0]
                        for i in range(PAR_ITEMS - 2, -1, -2):  # steps i + 1 and i
                            sums = warp_sum4(dB_lanes[i + 1], dC_lanes[i + 1], dB_lanes[i],
                                             dC_lanes[i])
                            for lane in range(32):
                                k, t = lane >> 3, s0['t0'] + i
                                ts = t + (1 if k < 2 else 0)
                                dst = g['dCm'] if k & 1 else g['dBm']
                                if lane & 7 == 0 and ts < T:
                                    dst[(s0['b'] * T + ts) * N + n] += sums[lane]
                # __syncthreads
            for w, lane in threads():
                s = th[w, lane]
                if s['live']:
                    for i in range(PAR_ITEMS):
                        if s['t0'] + i < T:
                            k = (s['b'] * T + s['t0'] + i) * D + s['d']
                            gd = s['ddelta'][i] * softplus_grad(a.dt[k] + s['bias'])
                            g['du'][k] += s['du'][i]
                            g['ddt'][k] += gd
                            s['dD'] += s['dyv'][i] * s['u'][i]
                            s['dbias'] += gd
        for w, lane in threads():
            s = th[w, lane]
            if not s['live']:
                continue
            for n in range(w, N, PAR_WARPS):
                g['dA_log'][s['d'] * N + n] += dAs[n][lane] * As[n][lane]
            g['dDskip'][s['d']] += s['dD']
            g['ddt_bias'][s['d']] += s['dbias']


def check(B, T, D, N, with_h0, seed):
    rnd = random.Random(seed)
    a = Args(B, T, D, N, with_h0, rnd)
    dy = [2 * rnd.random() - 1 for _ in range(B * T * D)]
    ref = reference(a, dy)
    out = dict(y=[math.nan] * (B * T * D), h_last=[math.nan] * (B * D * N))
    forward_par(a, True, out['y'], out['h_last'], None)
    ckpt = [math.nan] * (B * chunks_of(T) * D * N)
    h0, a.h0 = a.h0, None  # backward's checkpoints start from zeros
    forward_par(a, False, None, None, ckpt)
    a.h0 = h0
    g = dict(du=[0.0] * (B * T * D), ddt=[0.0] * (B * T * D), dA_log=[0.0] * (D * N),
             dBm=[0.0] * (B * T * N), dCm=[0.0] * (B * T * N), dDskip=[0.0] * D,
             ddt_bias=[0.0] * D)
    backward_par(a, dy, g, ckpt)
    out.update(g)
    worst = 0.0
    for name, want in ref.items():
        got = out[name]
        scale = max(1.0, max(abs(v) for v in want))
        e = max(abs(x - w) if not math.isnan(x) else math.inf for x, w in zip(got, want)) / scale
        worst = max(worst, e)
    what = f"B{B} T{T} D{D} N{N}{' h0' if with_h0 else ''}"
    print(f"  {what:<28} largest relative difference {worst:.3g}")
    return worst


def main():
    cases = [(1, 1, 1, 1, False), (2, 7, 5, 4, True), (2, 150, 40, 20, True),
             (3, 65, 33, 1, False), (1, 130, 9, 40, True), (1, 64, 32, 16, False)]
    worst = max(check(*c, seed=i) for i, c in enumerate(cases))
    print("scan replay:", "ok" if worst < 1e-9 else "MISMATCH", f"(largest {worst:.3g})")
    return 0 if worst < 1e-9 else 1


if __name__ == "__main__":
    raise SystemExit(main())
