/* One (batch row, head) problem of attention's and retention's parallel forms: two products
 * around a pass over the score rows (the softmax, the decay), and backward four around the
 * pass's own backward (cpu_ops.h cpu_head).
 *   p = scale q k^T ; rows(p) ; o = p v
 *   dv += p^T dout ; ds = dout v^T ; rows_back(ds, p) ; dq += scale ds k ; dk += scale ds^T q
 * Where a head's operands fit the L2 cache (training's and a prompt's heads) the products are
 * the tile product's (cpu_gemm_tiles.c) on copies packed here: k and v transposed, v, dout, k, q
 * as rows padded to 16 floats (read where they lie when a head's width is a multiple of 16,
 * 48 in transformer-small); p and ds are read where they lie, transposed for dv and dk, ds
 * in the thread's scratch (the caller's slice of it would be written to memory and read back). A
 * causal mask skips the key blocks no query of a tile sees. Elsewhere (a CPU without AVX2, heads
 * of more than TILES_MAX_T positions or TILES_MAX_D dimensions) OpenBLAS runs them, as before. */
#include "backend/cpu/cpu_ops.h"

#include <cblas.h>

#define TILES_MAX_T 1024
#define TILES_MAX_D 256

static cpu_rows_isa head_isa(const cpu_head *h)
{
    if (h->Tq > TILES_MAX_T || h->Tk > TILES_MAX_T || h->Dk > TILES_MAX_D || h->Dv > TILES_MAX_D)
        return CPU_ROWS_NONE;
    return cpu_rows_best_isa();
}

static inline int pad16(int n) { return (n + 15) & ~15; }

/* B for the tile product from rows of src (rows, cols; lds apart): src itself where its rows are
 * whole vectors (cols a multiple of 16: the product reads no float past a row's cols), else a copy
 * padded to 16 floats in dst. *ldb is its row stride. The same floats either way. */
static const float *tile_b(float *dst, const float *src, size_t lds, int rows, int cols, int *ldb)
{
    if (cols % 16 == 0) {
        *ldb = (int)lds;
        return src;
    }
    *ldb = pad16(cols);
    cpu_tiles_pack_rows(dst, *ldb, src, lds, rows, cols);
    return dst;
}

/* The tile product C (M, N) (+)= alpha A B with A(r, k) = a[r a_row + k a_k], under the head's
 * causal bound (limit) or none */
static void tiles(cpu_rows_isa isa, const cpu_head *h, int M, int N, int K, float alpha,
                  const float *a, size_t a_row, size_t a_k, const float *b, int ldb, float *c,
                  size_t ldc, int beta, cpu_tile_limit limit)
{
    cpu_tile_args t = {.M = M,
                       .N = N,
                       .K = K,
                       .alpha = alpha,
                       .a = a,
                       .a_row = a_row,
                       .a_k = a_k,
                       .b = b,
                       .ldb = ldb,
                       .c = c,
                       .ldc = (int)ldc,
                       .beta = beta,
                       .limit = h->causal ? limit : CPU_TILE_ALL,
                       .off = h->off};
    cpu_gemm_tiles(isa, &t);
}

void cpu_head_forward(const cpu_head *h, float *o, float *p, const float *q, const float *k,
                      const float *v, void (*rows)(void *ctx, float *p), void *ctx)
{
    int Tq = h->Tq, Tk = h->Tk, Dk = h->Dk, Dv = h->Dv;
    cpu_rows_isa isa = head_isa(h);
    if (isa == CPU_ROWS_NONE) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, Tq, Tk, Dk, h->scale, q, (int)h->ldq,
                    k, (int)h->ldk, 0.0f, p, Tk);
        rows(ctx, p);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, Tq, Dv, Tk, 1.0f, p, Tk, v,
                    (int)h->ldv, 0.0f, o, (int)h->ldv);
        return;
    }
    int nk = pad16(Tk), nv = pad16(Dv);
    float *kt = cpu_scratch(CPU_SCRATCH_HEAD, ((size_t)Dk * nk + (size_t)Tk * nv) * sizeof(float));
    float *vp = kt + (size_t)Dk * nk;
    cpu_tiles_pack_transposed(kt, nk, k, h->ldk, Tk, Dk);
    int ldb;
    const float *vb = tile_b(vp, v, h->ldv, Tk, Dv, &ldb);
    tiles(isa, h, Tq, Tk, Dk, h->scale, q, h->ldq, 1, kt, nk, p, (size_t)Tk, 0, CPU_TILE_COLS_TO);
    rows(ctx, p);
    tiles(isa, h, Tq, Dv, Tk, 1.0f, p, (size_t)Tk, 1, vb, ldb, o, h->ldv, 0, CPU_TILE_K_TO);
}

void cpu_head_backward(const cpu_head *h, float *dq, float *dk, float *dv, float *ds,
                       const float *dout, const float *q, const float *k, const float *v,
                       const float *p, void (*rows_back)(void *ctx, float *ds, const float *p),
                       void *ctx)
{
    int Tq = h->Tq, Tk = h->Tk, Dk = h->Dk, Dv = h->Dv;
    int ldq = (int)h->ldq, ldk = (int)h->ldk, ldv = (int)h->ldv;
    cpu_rows_isa isa = head_isa(h);
    if (isa == CPU_ROWS_NONE) {
        if (dv)
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, Tk, Dv, Tq, 1.0f, p, Tk, dout, ldv,
                        1.0f, dv, ldv);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, Tq, Tk, Dv, 1.0f, dout, ldv, v, ldv,
                    0.0f, ds, Tk);
        rows_back(ctx, ds, p);
        if (dq)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, Tq, Dk, Tk, h->scale, ds, Tk, k,
                        ldk, 1.0f, dq, ldq);
        if (dk)
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, Tk, Dk, Tq, h->scale, ds, Tk, q,
                        ldq, 1.0f, dk, ldk);
        return;
    }
    int nk = pad16(Tk), nv = pad16(Dv), nd = pad16(Dk);
    int T = Tq > Tk ? Tq : Tk;
    size_t n_vt = (size_t)Dv * nk, n_a = (size_t)T * (nv > nd ? nv : nd), n_b = (size_t)Tq * nd;
    size_t n_ds = (size_t)Tq * Tk;
    float *vt = cpu_scratch(CPU_SCRATCH_HEAD, (n_vt + n_a + n_b + n_ds) * sizeof(float));
    float *rows_a = vt + n_vt, *rows_b = rows_a + n_a;
    ds = rows_b + n_b; /* the thread's own, in its caches, rather than the caller's slice */
    cpu_tiles_pack_transposed(vt, nk, v, h->ldv, Tk, Dv);
    int ldb;
    if (dv) {
        const float *b = tile_b(rows_a, dout, h->ldv, Tq, Dv, &ldb);
        tiles(isa, h, Tk, Dv, Tq, 1.0f, p, 1, (size_t)Tk, b, ldb, dv, h->ldv, 1, CPU_TILE_K_FROM);
    }
    tiles(isa, h, Tq, Tk, Dv, 1.0f, dout, h->ldv, 1, vt, nk, ds, (size_t)Tk, 0, CPU_TILE_COLS_TO);
    rows_back(ctx, ds, p);
    if (dq) {
        const float *b = tile_b(rows_a, k, h->ldk, Tk, Dk, &ldb);
        tiles(isa, h, Tq, Dk, Tk, h->scale, ds, (size_t)Tk, 1, b, ldb, dq, h->ldq, 1,
              CPU_TILE_K_TO);
    }
    if (dk) {
        const float *b = tile_b(rows_b, q, h->ldq, Tq, Dk, &ldb);
        tiles(isa, h, Tk, Dk, Tq, h->scale, ds, 1, (size_t)Tk, b, ldb, dk, h->ldk, 1,
              CPU_TILE_K_FROM);
    }
}
