#!/usr/bin/env python3
"""A development check of kernels/cuda_gemm.cu's qrows_kernel without a GPU (docs/cuda.md §3).

Replays the kernel's loads and its two mma.sync.m16n8k16 per 32-wide chunk of k, lane by lane,
building each instruction's A (16 x 16) and B (16 x 8) from the registers the way PTX's fragment
layout for .bf16 places them (A: a0,a1 row g cols 2t,2t+1; a2,a3 row g+8; a4..a7 the same rows at
cols +8. B: b0,b1 rows 2t,2t+1 col g; b2,b3 rows 2t+8,2t+9. C: c0,c1 row g cols 2t,2t+1; c2,c3
row g+8), then the shared-memory sum over each group's warps, the k ranges' partial sums and
their sum with the bias by each tile's last block to finish (the blocks in a random order, a
ticket each), which must equal qrows_combine_kernel's sum bit for bit and leave every ticket
counter at zero, and compares with x W^T + bias in double. The
launch plan is qrows_plan_for's, mirrored below (plan_for), on a given multiprocessor count; the
cases cover each plan: k split over blocks (its ranges' last one shorter, a last chunk only part
full), QROWS_U chunks in flight per warp, warp groups on other tiles for a short k (a group past
the weight rows), and the old rule's 1 and 2 tiles. It checks the kernel's index arithmetic, not
the hardware. A lane's 8 k of x are the same whether the kernel loads them as 8 bf16 or as two
float4 rounded in k order (x8_bf16), so one replay covers both. Products of rows past m are left
out (an instruction's rows are independent, and the kernel stores none of them). Plain Python,
no packages: python3 scripts/gpu/qrows_fragments.py
"""
import random

WARPS = 8  # QWARPS
U = 4  # QROWS_U
SPLITS_MAX = 32  # QROWS_SPLITS_MAX


def ceil_div(a, b):
    return (a + b - 1) // b


def plan_for(n, k, sms):
    """qrows_plan_for: (tiles per group, groups per block, k ranges, chunks per range)"""
    chunks, tiles = ceil_div(k, 32), ceil_div(n, 8)
    wg = 1
    while wg < WARPS and wg < chunks:
        wg *= 2
    groups = WARPS // wg
    if ceil_div(tiles, 4 * groups) >= sms:
        return 4, groups, 1, chunks
    most = min(chunks // WARPS, SPLITS_MAX)
    if most >= 2:
        nt = 4 if tiles >= 4 else 2 if tiles >= 2 else 1
        want = ceil_div(sms, ceil_div(tiles, nt))
        span = ceil_div(chunks, min(want, most))
        return nt, groups, ceil_div(chunks, span), span
    return (2 if ceil_div(tiles, 2 * groups) >= sms // 2 else 1), groups, 1, chunks


def mma(acc, regs, j2, j, m):
    """one m16n8k16 on the registers of the 32 lanes, accumulated into acc[lane][j]"""
    A = [[0.0] * 16 for _ in range(16)]
    B = [[0.0] * 8 for _ in range(16)]
    for lane in range(32):
        g, t = lane >> 2, lane & 3
        xa, xb, wv = regs[lane]
        A[g][2 * t], A[g][2 * t + 1] = xa[4 * j2], xa[4 * j2 + 1]
        A[g + 8][2 * t], A[g + 8][2 * t + 1] = xb[4 * j2], xb[4 * j2 + 1]
        A[g][2 * t + 8], A[g][2 * t + 9] = xa[4 * j2 + 2], xa[4 * j2 + 3]
        A[g + 8][2 * t + 8], A[g + 8][2 * t + 9] = xb[4 * j2 + 2], xb[4 * j2 + 3]
        B[2 * t][g], B[2 * t + 1][g] = wv[j][4 * j2], wv[j][4 * j2 + 1]
        B[2 * t + 8][g], B[2 * t + 9][g] = wv[j][4 * j2 + 2], wv[j][4 * j2 + 3]
    for lane in range(32):
        g, t = lane >> 2, lane & 3
        for ci, (r, col) in enumerate([(g, 2 * t), (g, 2 * t + 1), (g + 8, 2 * t), (g + 8, 2 * t + 1)]):
            if r < m:
                acc[lane][j][ci] += sum(A[r][kk] * B[kk][col] for kk in range(16))


def qrows_kernel(x, w, bias, m, n, k, nt, groups, span, bx, by, out, ldo, stride):
    """block (bx, by) of qrows_kernel<nt, m > 8>: writes out[by * stride + i * ldo + col]"""
    hi = m > 8
    part = [[[0.0] * (nt * 8) for _ in range(16)] for _ in range(WARPS)]
    wg = WARPS // groups
    chunks, k8 = ceil_div(k, 32), k // 8
    c0 = by * span
    c1 = min(c0 + span, chunks)
    for warp in range(WARPS):
        grp, wi = warp // wg, warp % wg
        n0 = (bx * groups + grp) * nt * 8
        acc = [[[0.0] * 4 for _ in range(nt)] for _ in range(32)]
        c = c0 + wi if n0 < n else c1
        while c < c1:
            slots = []
            for u in range(U):  # every chunk's loads first
                regs, loaded = [], False
                for lane in range(32):
                    g, t = lane >> 2, lane & 3
                    q = (c + u * wg) * 4 + t
                    inside = c + u * wg < c1 and q < k8
                    loaded |= inside

                    def load(rows, r, ok):
                        return rows[r][q * 8:q * 8 + 8] if ok else [0.0] * 8

                    xa = load(x, g, inside and g < m)
                    xb = load(x, g + 8, inside and hi and g + 8 < m)
                    wv = [load(w, min(n0 + j * 8 + g, n - 1), inside) for j in range(nt)]
                    regs.append((xa, xb, wv))
                slots.append((regs, loaded))
            for regs, loaded in slots:  # then the products (a slot of zeros adds exact zeros)
                if not loaded:
                    continue
                for j in range(nt):
                    mma(acc, regs, 0, j, m)  # registers .x, .y
                    mma(acc, regs, 1, j, m)  # registers .z, .w
            c += U * wg
        for lane in range(32):
            g, t = lane >> 2, lane & 3
            for j in range(nt):
                part[warp][g][j * 8 + 2 * t], part[warp][g][j * 8 + 2 * t + 1] = acc[lane][j][0:2]
                part[warp][g + 8][j * 8 + 2 * t], part[warp][g + 8][j * 8 + 2 * t + 1] = acc[lane][j][2:4]
    cols = groups * nt * 8
    nb = bx * cols
    for e in range(16 * cols):
        i, col = e // cols, e % cols
        v0 = col // (nt * 8) * wg
        if i >= m or nb + col >= n:
            continue
        s = 0.0
        for v in range(v0, v0 + wg):
            s += part[v][i][col % (nt * 8)]
        out[by * stride + i * ldo + nb + col] = s + bias[nb + col] if bias else s


def close_tile(part, bias, m, n, cols, bx, splits, stride, out):
    """the tile's last block to finish: its columns' ranges added in range order, plus the bias"""
    nb = bx * cols
    for e in range(16 * cols):
        i, col = e // cols, e % cols
        if i >= m or nb + col >= n:
            continue
        s = 0.0
        for sp in range(splits):
            s += part[sp * stride + i * n + nb + col]
        out[i * n + nb + col] = s + bias[nb + col] if bias else s


def qrows(x, w, bias, m, n, k, sms, rng, combine_kernel=False):
    """qrows(): the plan's launch; a split k's ranges added by each tile's last block to finish
    (the blocks run in a random order, each taking a ticket after its partial sums), or by
    qrows_combine_kernel after the launch"""
    nt, groups, splits, span = plan_for(n, k, sms)
    blocks = ceil_div(n, groups * nt * 8)
    out = [None] * (m * n)
    if splits == 1:
        target, b, ldo, stride = out, bias, n, 0
    else:
        target, b, ldo, stride = [None] * (splits * m * n), None, n, m * n
    order = [(bx, by) for by in range(splits) for bx in range(blocks)]
    rng.shuffle(order)
    tickets = [0] * blocks
    for bx, by in order:
        qrows_kernel(x, w, b, m, n, k, nt, groups, span, bx, by, target, ldo, stride)
        if splits > 1 and not combine_kernel:
            tickets[bx] += 1
            if tickets[bx] == splits:  # atomicAdd returned splits - 1: the last block
                close_tile(target, bias, m, n, groups * nt * 8, bx, splits, stride, out)
                tickets[bx] = 0
    if any(tickets):
        raise SystemExit("qrows_fragments: a tile's ticket counter was left above zero")
    if splits > 1 and combine_kernel:
        for e in range(m * n):
            s = 0.0
            for sp in range(splits):
                s += target[sp * m * n + e]
            out[e] = s + bias[e % n] if bias else s
    return out, (nt, groups, splits, span)


def main():
    rng = random.Random(1)
    worst = 0.0
    # (m, n, k, sms): test_cuda_ops' shapes on the H200's 132 multiprocessors, and small
    # shapes on fewer multiprocessors where that gives them the plan of a larger one
    cases = [
        (1, 50, 136, 132), (9, 50, 136, 132), (16, 257, 200, 132),  # old rule: 1 tile
        (8, 257, 200, 16), (13, 37, 520, 1),  # 2 tiles; 4 tiles, no split (one multiprocessor)
        (16, 4300, 64, 132), (2, 17, 8, 132),  # 4 groups of 2 tiles; 1 chunk: 8 groups, 5 past n
        (16, 16, 4096, 132), (9, 16, 4096, 132),  # x_proj's rows 128..144: 16 ranges of 8
        (16, 4096, 128, 132), (1, 4096, 128, 132),  # dt_proj: 2 groups of 4 warps, 2 tiles
        (9, 37, 4104, 132), (16, 299, 40, 132),  # 15 ranges of 9, the last of 3; 4 groups
        (16, 40, 1032, 8), (1, 64, 2048, 5),  # 4 ranges (9, 9, 9, 6); 3 ranges (22, 22, 20)
        (5, 24, 1032, 16), (16, 160, 4096, 132),  # 2 blocks of 2 tiles, one past n; x_proj: 5 x 16
    ]
    for m, n, k, sms in cases:
        x = [[rng.uniform(-1, 1) for _ in range(k)] for _ in range(m)]
        w = [[rng.uniform(-1, 1) for _ in range(k)] for _ in range(n)]
        for with_bias in (False, True):
            bias = [rng.uniform(-1, 1) for _ in range(n)] if with_bias else None
            got, plan = qrows(x, w, bias, m, n, k, sms, rng)
            ref, _ = qrows(x, w, bias, m, n, k, sms, rng, combine_kernel=True)
            if got != ref:
                raise SystemExit(f"qrows_fragments: m {m} n {n} k {k}: the tiles' last blocks "
                                 "and qrows_combine_kernel gave other sums")
            err = 0.0
            for i in range(m):
                for j in range(n):
                    want = sum(x[i][kk] * w[j][kk] for kk in range(k)) + (bias[j] if bias else 0.0)
                    err = max(err, abs(got[i * n + j] - want) if got[i * n + j] is not None else float("inf"))
            print(f"m {m:2d} n {n:4d} k {k:4d} on {sms:3d} SMs, {'bias' if bias else 'no bias':7s}: "
                  f"tiles {plan[0]} groups {plan[1]} ranges {plan[2]} of {plan[3]:3d} chunks: max error {err:.2e}")
            worst = max(worst, err)
    if worst > 1e-9:
        raise SystemExit(f"qrows_fragments: the index arithmetic is wrong (max error {worst:.2e})")
    # the plans of the bench rows and Table 4's products on 132 multiprocessors
    for n, k in [(2048, 2048), (8192, 2048), (4096, 2048), (2048, 8192), (2048, 4096), (160, 4096),
                 (128, 4096), (16, 4096), (4096, 128), (50280, 2048)]:
        nt, groups, splits, span = plan_for(n, k, 132)
        print(f"plan on 132 SMs, {n:5d} x {k:4d}: {ceil_div(n, groups * nt * 8):4d} blocks of {groups} x {nt} "
              f"tiles x {splits:2d} ranges of {span:3d} chunks")
    print("qrows_fragments: every output is x W^T + bias")


if __name__ == "__main__":
    main()
