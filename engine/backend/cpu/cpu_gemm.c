/* Matrix products: a decoding step's x W^T for few rows in mtlab's own kernel (cpu_gemm_rows.c),
 * one row or one column as a matrix-vector product (cblas_sgemv), and the rest as sgemm by
 * OpenBLAS, BLIS (cpu_blis.c) or mtlab's packed kernel (cpu_gemm_packed.c), whichever
 * cpu_sgemm_pick says is faster for the shape on this CPU. */
#include "backend/cpu/cpu_ops.h"

#include <cblas.h>
#include <omp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* A product with one output row (batch-1 decoding: every layer's x W^T) or one output column
 * as a matrix-vector product: sgemm would first copy the whole weight matrix into its packed
 * layout, reading it twice, where sgemv streams it once. y gets n_out values at stride incy;
 * with beta 0 it is cleared first, so NaN already there cannot leak through sgemv's scaling. */
static void gemv(int trans_w, int rows, int cols, float alpha, const float *w, int ldw,
                 const float *x, int incx, float beta, float *y, int incy, int n_out)
{
    if (beta == 0.0f)
        for (int i = 0; i < n_out; i++) y[(size_t)i * incy] = 0.0f;
    cblas_sgemv(CblasRowMajor, trans_w ? CblasTrans : CblasNoTrans, rows, cols, alpha, w, ldw, x,
                incx, beta, y, incy);
}

/* The shape rule, from the libraries timed inside the small presets' training steps at one and
 * two threads (docs/models.md §10.9 gives each class's figures: how much faster one is than
 * another, one thread and two). On an AVX-512 CPU (a Zen 4) OpenBLAS and BLIS share the work:
 * - k < 32: OpenBLAS. BLIS packs a thin panel at a loss (Mamba's dt back-projection x W^T at
 *   k = 12: 2-3.5x slower in BLIS).
 * - small products (m n k < 2^21): OpenBLAS, whose call costs less (64 x 64 x 42: 2x slower in
 *   BLIS).
 * - the weight gradients dY^T X (trans_a): BLIS, 1.10-1.12x faster over the class.
 * - outputs of at most 32 columns (Mamba's x_proj to dt, B and C, and their input gradients):
 *   BLIS, 1.7-2.3x.
 * - input gradients dY W with k >= 4096 (through the vocabulary's projection): BLIS, 1.0-1.4x;
 *   at smaller k the two are even (0.88-1.22x shape by shape), and OpenBLAS keeps them.
 * - x W^T, the forward products: OpenBLAS (BLIS 0.93-1.00x over the class).
 * Where BLIS's kernels are narrower than the CPU's multiply-adds (`blis` 0: cpu_blis_full_rate),
 * OpenBLAS keeps all of these: on a 2-vCPU Xeon (Sapphire Rapids class) BLIS 0.9.0 runs its
 * 256-bit "haswell" kernels, and every small preset's training step ran 1.10-1.22x faster with
 * all its products on OpenBLAS's SkylakeX kernels (`OMP_NUM_THREADS=1 MTLAB_SGEMM=openblas
 * ./mtlab bench --only gemm --repeat 3` against the rule, two interleaved rounds:
 * transformer-small 7,387 and 7,405 -> 8,783 and 8,328 tokens/s).
 * On an AVX2 CPU without AVX-512 (a Zen 3; `packed` set), mtlab's packed kernel
 * (cpu_gemm_packed.c) takes what OpenBLAS took there, small products aside (at two threads x W^T
 * 1.18x, k < 32 1.44x, input gradients 1.13x as fast as OpenBLAS over the class; at one thread
 * 1.03x, 1.07x and 0.97x), and at two threads and more the weight gradients too (1.03x of BLIS,
 * 1.12x of OpenBLAS; at one thread 0.97x and 0.93x, and BLIS keeps them).
 * On an AVX-512 CPU whose 512-bit multiply-adds run at full rate (the Xeon above; `packed` 2),
 * the packed kernel's AVX-512 tiles beat OpenBLAS's SkylakeX kernels in the step shape by shape
 * (`MTLAB_SGEMM=openblas` against `MTLAB_SGEMM=mtlab`, `./mtlab bench --only gemm --verbose`):
 * at two threads every class, 1.1-2.3x for the hidden-size products, 1.15-1.2x for a
 * vocabulary's x W^T, 1.3-3.8x for Mamba's thin ones; at one thread the hidden-size products
 * 1.1-1.4x and the input gradients through the vocabulary 1.0-1.3x, while OpenBLAS keeps the
 * thin input and weight gradients (k < 32, or at most 32 rows or columns: packed 0.63-1.27x,
 * median 0.83x, 20 of 24 shapes below 1). A vocabulary's x W^T went to OpenBLAS at one thread
 * too while the packed kernel packed W^T in blocks of 4,096 columns (0.84-1.03x); on blocks
 * that stay in L2 it runs whole one-thread steps 1.02x as fast (docs/models.md §10.9). */
cpu_sgemm_lib cpu_sgemm_pick_shape(int packed, int blis, int threads, int trans_a, int trans_b,
                                   int m, int n, int k)
{
    if ((double)m * n * k < (double)(1 << 21)) return CPU_SGEMM_OPENBLAS;
    if (packed == CPU_PACKED_AVX512) {
        if (threads > 1) return CPU_SGEMM_PACKED;
        /* one thread: x W^T on the packed kernel, and the gradients, thin ones aside */
        if (!trans_a && trans_b) return CPU_SGEMM_PACKED;
        return k < 32 || n <= 32 || m <= 32 ? CPU_SGEMM_OPENBLAS : CPU_SGEMM_PACKED;
    }
    cpu_sgemm_lib rest = packed ? CPU_SGEMM_PACKED : CPU_SGEMM_OPENBLAS;
    cpu_sgemm_lib second = blis ? CPU_SGEMM_BLIS : rest;
    if (k < 32) return rest;
    if (trans_a) return packed && threads > 1 ? CPU_SGEMM_PACKED : second;
    if (n <= 32 || (!trans_b && k >= 4096)) return second;
    return rest;
}

/* 1 where BLIS's kernels run this CPU's multiply-adds at their full rate, so that the rule may
 * send it products: its kernels are 512-bit ones, or this CPU's 512-bit multiply-adds run less
 * than 1.5 times as fast as its 256-bit ones (a Zen 4, whose 512-bit operations run as two
 * halves; any CPU without AVX-512); timed once (cpu_fma512_gain) */
static int blis_full_rate = -1;
static pthread_once_t blis_once = PTHREAD_ONCE_INIT;

static void check_blis_rate(void)
{
    blis_full_rate = cpu_blis_width() >= 512 || cpu_fma512_gain() < 1.5;
}

int cpu_blis_full_rate(void)
{
    pthread_once(&blis_once, check_blis_rate);
    return blis_full_rate;
}

/* Which packed kernel joins the rule: its AVX-512 tiles where this core's 512-bit multiply-adds
 * run at full rate (cpu_fma512_gain >= 1.5, a Xeon with two 512-bit units), its AVX2 tiles on a
 * CPU with AVX2 + FMA and no AVX-512; none on a CPU whose AVX-512 runs as two halves (a Zen 4:
 * OpenBLAS and BLIS share the work there, as measured), nor without AVX2 */
static int packed_level = -1;
static pthread_once_t packed_once = PTHREAD_ONCE_INIT;

static void check_packed(void)
{
    packed_level = !cpu_gemm_packed_supported()                ? CPU_PACKED_NONE
                   : !cpu_gemm_rows_supported(CPU_ROWS_AVX512) ? CPU_PACKED_AVX2
                   : cpu_fma512_gain() >= 1.5                  ? CPU_PACKED_AVX512
                                                               : CPU_PACKED_NONE;
}

int cpu_sgemm_packed_cpu(void)
{
    pthread_once(&packed_once, check_packed);
    return packed_level;
}

/* MTLAB_SGEMM=openblas, blis or mtlab (the packed kernel, on a CPU with AVX2 + FMA) runs every
 * product on one library (to compare them); unset or "auto", the shape rule; any other value is
 * reported (cpu_sgemm_forced: -2) and the rule decides. Read once. */
static int sgemm_forced = -1;
static pthread_once_t sgemm_once = PTHREAD_ONCE_INIT;

static void read_sgemm_env(void)
{
    const char *v = getenv("MTLAB_SGEMM");
    sgemm_forced = !v || !*v || !strcmp(v, "auto")                      ? -1
                   : !strcmp(v, "openblas")                             ? CPU_SGEMM_OPENBLAS
                   : !strcmp(v, "blis")                                 ? CPU_SGEMM_BLIS
                   : !strcmp(v, "mtlab") && cpu_gemm_packed_supported() ? CPU_SGEMM_PACKED
                                                                        : -2;
}

int cpu_sgemm_forced(void)
{
    pthread_once(&sgemm_once, read_sgemm_env);
    return sgemm_forced;
}

cpu_sgemm_lib cpu_sgemm_pick(int trans_a, int trans_b, int m, int n, int k)
{
    int forced = cpu_sgemm_forced();
    if (forced >= 0) return (cpu_sgemm_lib)forced;
    return cpu_sgemm_pick_shape(cpu_sgemm_packed_cpu(), cpu_blis_full_rate(),
                                omp_in_parallel() ? 1 : omp_get_max_threads(), trans_a, trans_b, m,
                                n, k);
}

void cpu_sgemm_with(cpu_sgemm_lib lib, int trans_a, int trans_b, int m, int n, int k, float alpha,
                    const float *a, int lda, const float *b, int ldb, float beta, float *c, int ldc)
{
    if (lib == CPU_SGEMM_BLIS) {
        cpu_blis_sgemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
        return;
    }
    if (lib == CPU_SGEMM_PACKED &&
        cpu_gemm_packed(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc))
        return;
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void cpu_gemm(int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a, int lda,
              const float *b, int ldb, float beta, float *c, int ldc)
{
    if (m <= 0 || n <= 0) return;
    if (!trans_a && trans_b && beta == 0.0f &&
        cpu_gemm_rows(m, n, k, alpha, a, lda, b, ldb, c, ldc))
        return;
    if (m == 1 && k > 0) {
        /* c (1, n) = alpha op(a) (1, k) op(b) (k, n): op(b) is b^T when b is stored (n, k) */
        int incx = trans_a ? lda : 1;
        if (trans_b) gemv(0, n, k, alpha, b, ldb, a, incx, beta, c, 1, n);
        else gemv(1, k, n, alpha, b, ldb, a, incx, beta, c, 1, n);
        return;
    }
    if (n == 1 && k > 0) {
        /* c (m, 1) = alpha op(a) (m, k) op(b) (k, 1) */
        int incx = trans_b ? 1 : ldb;
        if (trans_a) gemv(1, k, m, alpha, a, lda, b, incx, beta, c, ldc, m);
        else gemv(0, m, k, alpha, a, lda, b, incx, beta, c, ldc, m);
        return;
    }
    cpu_sgemm_with(cpu_sgemm_pick(trans_a, trans_b, m, n, k), trans_a, trans_b, m, n, k, alpha, a,
                   lda, b, ldb, beta, c, ldc);
}

/* One sgemm per problem: OpenBLAS threads each product, which beats threading over a batch
 * that is usually small (heads x batch rows) at the sizes mtlab trains on CPU. */
void cpu_gemm_batched(int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a,
                      int lda, size_t stride_a, const float *b, int ldb, size_t stride_b,
                      float beta, float *c, int ldc, size_t stride_c, int batch)
{
    for (int i = 0; i < batch; i++)
        cpu_gemm(trans_a, trans_b, m, n, k, alpha, a + (size_t)i * stride_a, lda,
                 b + (size_t)i * stride_b, ldb, beta, c + (size_t)i * stride_c, ldc);
}
