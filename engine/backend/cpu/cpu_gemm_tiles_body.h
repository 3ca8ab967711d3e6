/* The tile product's body (cpu_gemm_tiles.c includes it once per instruction set, with TILE_ISA
 * naming it, TILE_TARGET its target attribute, VT / VW its vector type and width in floats,
 * V_ZERO, V_LOAD, V_STORE, V_SET1, V_FMA, V_MUL, V_ADD its operations, and TILE_MR(nv) the rows
 * of a tile NV vectors wide: accumulators, B's vectors and a broadcast all in registers; for B's
 * last vector and the softmax rows VM its lane mask, V_FIRST(n) the lanes below n, V_AND, V_ANDNOT
 * (a and not b), V_KEYS(p) the lanes whose byte at p is not 0, V_MLOAD / V_MSTORE loads (0 in the
 * lanes left out) and stores of the lanes of a mask, V_SEL(m, a, b), V_SUB, V_MIN, V_MAX, V_HMAX,
 * V_POW2(k) (2^k for whole floats k), and VD / V_DZERO / V_DACC(d0, d1, x) / V_DSUM(d0, d1) sums in
 * double). */
#define TILE_CAT2(a, b) a##_##b
#define TILE_CAT(a, b) TILE_CAT2(a, b)
#define TILE_FN(name) TILE_CAT(name, TILE_ISA)

/* Rows r0 .. r0 + MR - 1 of C (those below M) by columns c0 .. c0 + NV VW - 1 (those below N),
 * the sum over k in [k0, k1) (empty: the tile is 0, or C is left as it was when beta is 1).
 * Inlined with constant MR and NV, so the loops unroll and the MR x NV accumulators live in
 * registers; rows past M repeat row M - 1 and are not stored. */
TILE_TARGET __attribute__((always_inline)) static inline void
TILE_FN(tile_block)(int MR, int NV, const cpu_tile_args *t, int r0, int c0, int k0, int k1)
{
    VT acc[8][4];
    const float *ar[8];
#pragma GCC unroll 8
    for (int r = 0; r < MR; r++) {
        ar[r] = t->a + (size_t)(r0 + r < t->M ? r0 + r : t->M - 1) * t->a_row;
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) acc[r][v] = V_ZERO();
    }
    /* B's columns from N on are not read: the strip's last vector, where it ends past N, is
     * loaded under a mask (B may be rows of a wider matrix read where they lie) */
    int tail = t->N - (c0 + (NV - 1) * VW);
    VM tail_lanes = V_FIRST(tail);
    const float *bk = t->b + (size_t)k0 * t->ldb + c0;
    for (int k = k0; k < k1; k++, bk += t->ldb) {
        VT bv[4];
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++)
            bv[v] =
                v == NV - 1 && tail < VW ? V_MLOAD(bk + v * VW, tail_lanes) : V_LOAD(bk + v * VW);
        size_t ka = (size_t)k * t->a_k;
#pragma GCC unroll 8
        for (int r = 0; r < MR; r++) {
            VT av = V_SET1(ar[r][ka]);
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++) acc[r][v] = V_FMA(av, bv[v], acc[r][v]);
        }
    }
    VT alpha = V_SET1(t->alpha);
#pragma GCC unroll 8
    for (int r = 0; r < MR; r++) {
        if (r0 + r >= t->M) break;
        float *cr = t->c + (size_t)(r0 + r) * t->ldc;
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) {
            int c = c0 + v * VW;
            VT x = V_MUL(acc[r][v], alpha);
            if (c + VW <= t->N) {
                if (t->beta) x = V_ADD(x, V_LOAD(cr + c));
                V_STORE(cr + c, x);
            } else if (c < t->N) { /* the last columns: through the stack */
                float part[VW];
                V_STORE(part, x);
                for (int e = 0; c + e < t->N; e++)
                    cr[c + e] = t->beta ? cr[c + e] + part[e] : part[e];
            }
        }
    }
}

/* Every row block of one strip of NV vectors from column c0. Under CPU_TILE_COLS_TO a block
 * sums only the vectors its rows may see and writes 0 (beta 0) past them. */
TILE_TARGET __attribute__((always_inline)) static inline void
TILE_FN(tile_strip)(int MR, int NV, const cpu_tile_args *t, int c0)
{
    for (int r0 = 0; r0 < t->M; r0 += MR) {
        int k0, k1, live = NV;
        tile_k_range(t, r0, MR, c0, &k0, &k1);
        if (t->limit == CPU_TILE_COLS_TO) {
            int need = t->off + r0 + MR - c0;
            live = need <= 0 ? 0 : (need + VW - 1) / VW < NV ? (need + VW - 1) / VW : NV;
        }
        switch (live) {
        case 0: break;
        case 1: TILE_FN(tile_block)(MR, 1, t, r0, c0, k0, k1); break;
        case 2: TILE_FN(tile_block)(MR, NV < 2 ? NV : 2, t, r0, c0, k0, k1); break;
        case 3: TILE_FN(tile_block)(MR, NV < 3 ? NV : 3, t, r0, c0, k0, k1); break;
        default: TILE_FN(tile_block)(MR, NV, t, r0, c0, k0, k1); break;
        }
        if (live < NV && !t->beta)
            for (int r = r0; r < r0 + MR && r < t->M; r++) {
                float *cr = t->c + (size_t)r * t->ldc;
                for (int c = c0 + live * VW; c < c0 + NV * VW && c < t->N; c += VW) {
                    if (c + VW <= t->N) V_STORE(cr + c, V_ZERO());
                    else
                        for (int e = c; e < t->N; e++) cr[e] = 0.0f;
                }
            }
    }
}

/* The product in strips of up to four vectors: B's strip (K x 4 VW floats) stays in the L1
 * cache while the row blocks run down A. */
TILE_TARGET static void TILE_FN(tile_gemm)(const cpu_tile_args *t)
{
    int nvec = (t->N + VW - 1) / VW;
    for (int v0 = 0; v0 < nvec; v0 += 4) {
        int c0 = v0 * VW;
        switch (nvec - v0) {
        case 1: TILE_FN(tile_strip)(TILE_MR(1), 1, t, c0); break;
        case 2: TILE_FN(tile_strip)(TILE_MR(2), 2, t, c0); break;
        case 3: TILE_FN(tile_strip)(TILE_MR(3), 3, t, c0); break;
        default: TILE_FN(tile_strip)(TILE_MR(4), 4, t, c0); break;
        }
    }
}

/* ---- softmax rows */

/* e^x in every lane: cpu_expf_poly's steps in the same order (so the same floats) */
TILE_TARGET static inline VT TILE_FN(vexp)(VT x)
{
    static const float c[7] = {1.0f / 720.0f, 1.0f / 120.0f, 1.0f / 24.0f, 1.0f / 6.0f,
                               0.5f,          1.0f,          1.0f};
    VT magic = V_SET1(12582912.0f);
    x = V_MIN(V_SET1(88.0f), V_MAX(V_SET1(-87.0f), x));
    VT k = V_SUB(V_ADD(V_MUL(x, V_SET1(1.44269504088896341f)), magic), magic);
    VT r = V_SUB(V_SUB(x, V_MUL(k, V_SET1(0.693145751953125f))),
                 V_MUL(k, V_SET1(1.428606765330187e-06f)));
    VT p = V_SET1(1.0f / 5040.0f);
    for (int i = 0; i < 7; i++) p = V_ADD(V_MUL(p, r), V_SET1(c[i]));
    return V_MUL(p, V_POW2(k));
}

/* The lanes from c of key bytes km (n keys in all, c < n) that are not 0 */
TILE_TARGET static inline VM TILE_FN(key_lanes)(const uint8_t *km, int c, int n)
{
    uint8_t part[16] = {0};
    const uint8_t *at = km + c;
    if (n - c < VW) {
        memcpy(part, at, (size_t)(n - c));
        at = part;
    }
    return V_KEYS(at);
}

/* The visible lanes of the chunk at c: keys in [lo, hi) that km (or NULL) lets through */
TILE_TARGET static inline VM TILE_FN(visible)(int c, int lo, int hi, const uint8_t *km, int n)
{
    VM m = V_ANDNOT(V_FIRST(hi - c), V_FIRST(lo - c));
    return km ? V_AND(m, TILE_FN(key_lanes)(km, c, n)) : m;
}

/* s[0, n) = softmax of s over the visible keys (cpu_attention.c's masked_softmax_row, whose
 * result it is within float rounding): the maximum over them, their exponentials summed in
 * double, every other key 0, and a row with no visible key all 0. */
TILE_TARGET static void TILE_FN(softmax_row)(float *s, int n, int lo, int hi, const uint8_t *km)
{
    VT mx = V_SET1(-INFINITY);
    for (int c = lo - lo % VW; c < hi; c += VW) {
        VM m = TILE_FN(visible)(c, lo, hi, km, n);
        mx = V_MAX(V_SEL(m, V_MLOAD(s + c, m), V_SET1(-INFINITY)), mx);
    }
    float top = V_HMAX(mx);
    VT zero = V_ZERO();
    if (top == -INFINITY) {
        for (int c = 0; c < n; c += VW) V_MSTORE(s + c, V_FIRST(n - c), zero);
        return;
    }
    VT sub = V_SET1(top);
    VD d0 = V_DZERO(), d1 = V_DZERO();
    for (int c = 0; c < n; c += VW) {
        VM row = V_FIRST(n - c);
        if (c + VW <= lo || c >= hi) {
            V_MSTORE(s + c, row, zero);
            continue;
        }
        VM m = TILE_FN(visible)(c, lo, hi, km, n);
        VT e = V_SEL(m, TILE_FN(vexp)(V_SUB(V_MLOAD(s + c, m), sub)), zero);
        V_DACC(d0, d1, e);
        V_MSTORE(s + c, row, e);
    }
    VT inv = V_SET1((float)(1.0 / V_DSUM(d0, d1)));
    for (int c = lo - lo % VW; c < hi; c += VW) {
        VM row = V_FIRST(n - c);
        V_MSTORE(s + c, row, V_MUL(V_MLOAD(s + c, row), inv));
    }
}

/* ds[0, n) = p * (ds - sum(p * ds)), the sum in double */
TILE_TARGET static void TILE_FN(softmax_backward_row)(float *ds, const float *p, int n)
{
    VD d0 = V_DZERO(), d1 = V_DZERO();
    for (int c = 0; c < n; c += VW) {
        VM row = V_FIRST(n - c);
        V_DACC(d0, d1, V_MUL(V_MLOAD(p + c, row), V_MLOAD(ds + c, row)));
    }
    VT dot = V_SET1((float)V_DSUM(d0, d1));
    for (int c = 0; c < n; c += VW) {
        VM row = V_FIRST(n - c);
        V_MSTORE(ds + c, row, V_MUL(V_MLOAD(p + c, row), V_SUB(V_MLOAD(ds + c, row), dot)));
    }
}

#undef TILE_FN
#undef TILE_CAT
#undef TILE_CAT2
