/* One (batch row, head) problem of attention's and retention's parallel forms: two products
 * around a pass over the score rows (the softmax, the decay), and backward four around the
 * pass's own backward (cpu_ops.h cpu_head).
 *   p = scale q k^T ; rows(p) ; o = p v
 *   dv += p^T dout ; ds = dout v^T ; rows_back(ds, p) ; dq += scale ds k ; dk += scale ds^T q
 * Where a head's operands fit the L2 cache (training's and a prompt's heads) the products are
 * the tile product's (cpu_gemm_tiles.c): k and v transposed into copies packed here, v, dout, k
 * and q read where they lie (the product masks a head's last vector, 24 floats wide in
 * gpt-neox-small); p and ds are read where they lie, transposed for dv and dk, ds in the
 * thread's scratch (the caller's slice of it would be written to memory and read back). A
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
    int nk = pad16(Tk);
    float *kt = cpu_scratch(CPU_SCRATCH_HEAD, (size_t)Dk * nk * sizeof(float));
    cpu_tiles_pack_transposed(kt, nk, k, h->ldk, Tk, Dk);
    tiles(isa, h, Tq, Tk, Dk, h->scale, q, h->ldq, 1, kt, nk, p, (size_t)Tk, 0, CPU_TILE_COLS_TO);
    rows(ctx, p);
    tiles(isa, h, Tq, Dv, Tk, 1.0f, p, (size_t)Tk, 1, v, (int)h->ldv, o, h->ldv, 0, CPU_TILE_K_TO);
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
    int nk = pad16(Tk);
    size_t n_vt = (size_t)Dv * nk, n_ds = (size_t)Tq * Tk;
    float *vt = cpu_scratch(CPU_SCRATCH_HEAD, (n_vt + n_ds) * sizeof(float));
    ds = vt + n_vt; /* the thread's own, in its caches, rather than the caller's slice */
    cpu_tiles_pack_transposed(vt, nk, v, h->ldv, Tk, Dv);
    if (dv)
        tiles(isa, h, Tk, Dv, Tq, 1.0f, p, 1, (size_t)Tk, dout, ldv, dv, h->ldv, 1,
              CPU_TILE_K_FROM);
    tiles(isa, h, Tq, Tk, Dv, 1.0f, dout, h->ldv, 1, vt, nk, ds, (size_t)Tk, 0, CPU_TILE_COLS_TO);
    rows_back(ctx, ds, p);
    if (dq)
        tiles(isa, h, Tq, Dk, Tk, h->scale, ds, (size_t)Tk, 1, k, ldk, dq, h->ldq, 1,
              CPU_TILE_K_TO);
    if (dk)
        tiles(isa, h, Tk, Dk, Tq, h->scale, ds, 1, (size_t)Tk, q, ldq, dk, h->ldk, 1,
              CPU_TILE_K_FROM);
}
