#!/usr/bin/env python3
"""A development check of kernels/cuda_gemm.cu's qrows_kernel without a GPU (docs/cuda.md §3).

Replays the kernel's loads and its two mma.sync.m16n8k16 per 32-wide chunk of k, lane by lane,
building each instruction's A (16 x 16) and B (16 x 8) from the registers the way PTX's fragment
layout for .bf16 places them (A: a0,a1 row g cols 2t,2t+1; a2,a3 row g+8; a4..a7 the same rows at
cols +8. B: b0,b1 rows 2t,2t+1 col g; b2,b3 rows 2t+8,2t+9. C: c0,c1 row g cols 2t,2t+1; c2,c3
row g+8), then the shared-memory sum over the warps, and compares with x W^T in double. It checks
the kernel's index arithmetic (the k permutation, tiles, tails, rows past m and n), not the
hardware. A lane's 8 k of x are the same whether the kernel loads them as 8 bf16 or as two
float4 rounded in k order (x8_bf16), so one replay covers both. Plain Python, no packages:
python3 scripts/gpu/qrows_fragments.py
"""
import random

WARPS = 8


def qrows(x, w, m, n, k, nt):
    out = [[None] * n for _ in range(m)]
    chunks, k8 = (k + 31) // 32, k // 8
    for n0 in range(0, n, nt * 8):
        part = [[[0.0] * (nt * 8) for _ in range(16)] for _ in range(WARPS)]
        for warp in range(WARPS):
            acc = [[[0.0] * 4 for _ in range(nt)] for _ in range(32)]
            for c in range(warp, chunks, 2 * WARPS):
                for u in range(2):
                    cc = c + u * WARPS
                    regs = []  # per lane: 8 k of x row g, of x row g+8, of weight row g of each tile
                    for lane in range(32):
                        g, t = lane >> 2, lane & 3
                        q = cc * 4 + t
                        inside = cc < chunks and q < k8

                        def load(rows, r, ok):
                            return rows[r][q * 8:q * 8 + 8] if ok else [0.0] * 8

                        xa = load(x, g, inside and g < m)
                        xb = load(x, g + 8, inside and g + 8 < m)
                        wv = [load(w, min(n0 + j * 8 + g, n - 1), inside) for j in range(nt)]
                        regs.append((xa, xb, wv))
                    for j2 in range(2):  # instruction j2 takes registers .x,.y (0) or .z,.w (1)
                        for j in range(nt):
                            A = [[None] * 16 for _ in range(16)]
                            B = [[None] * 8 for _ in range(16)]
                            for lane in range(32):
                                g, t = lane >> 2, lane & 3
                                xa, xb, wv = regs[lane]
                                pair = lambda v, i: (v[2 * i], v[2 * i + 1])
                                A[g][2 * t], A[g][2 * t + 1] = pair(xa, 2 * j2)
                                A[g + 8][2 * t], A[g + 8][2 * t + 1] = pair(xb, 2 * j2)
                                A[g][2 * t + 8], A[g][2 * t + 9] = pair(xa, 2 * j2 + 1)
                                A[g + 8][2 * t + 8], A[g + 8][2 * t + 9] = pair(xb, 2 * j2 + 1)
                                B[2 * t][g], B[2 * t + 1][g] = pair(wv[j], 2 * j2)
                                B[2 * t + 8][g], B[2 * t + 9][g] = pair(wv[j], 2 * j2 + 1)
                            for lane in range(32):
                                g, t = lane >> 2, lane & 3
                                cells = [(g, 2 * t), (g, 2 * t + 1), (g + 8, 2 * t), (g + 8, 2 * t + 1)]
                                for ci, (r, col) in enumerate(cells):
                                    acc[lane][j][ci] += sum(A[r][kk] * B[kk][col] for kk in range(16))
            for lane in range(32):
                g, t = lane >> 2, lane & 3
                for j in range(nt):
                    part[warp][g][j * 8 + 2 * t], part[warp][g][j * 8 + 2 * t + 1] = acc[lane][j][0:2]
                    part[warp][g + 8][j * 8 + 2 * t], part[warp][g + 8][j * 8 + 2 * t + 1] = acc[lane][j][2:4]
        for i in range(m):
            for col in range(nt * 8):
                if n0 + col < n:
                    out[i][n0 + col] = sum(part[v][i][col] for v in range(WARPS))
    return out


def main():
    rng = random.Random(1)
    worst = 0.0
    # (m, n, k, tiles per block): the parity cases' shapes of test_cuda_ops, each block width
    for m, n, k, nt in [(1, 50, 136, 1), (5, 50, 136, 2), (9, 50, 136, 4), (16, 257, 200, 1), (8, 257, 200, 2),
                        (13, 37, 520, 4), (2, 17, 8, 2)]:
        x = [[rng.uniform(-1, 1) for _ in range(k)] for _ in range(m)]
        w = [[rng.uniform(-1, 1) for _ in range(k)] for _ in range(n)]
        got = qrows(x, w, m, n, k, nt)
        err = max(abs(got[i][j] - sum(x[i][kk] * w[j][kk] for kk in range(k))) for i in range(m) for j in range(n))
        print(f"m {m:2d} n {n:3d} k {k:3d} tiles {nt}: max error {err:.2e}")
        worst = max(worst, err)
    if worst > 1e-9:
        raise SystemExit(f"qrows_fragments: the index arithmetic is wrong (max error {worst:.2e})")
    print("qrows_fragments: every output is x W^T")


if __name__ == "__main__":
    main()
