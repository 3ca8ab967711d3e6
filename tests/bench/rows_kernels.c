/* The fp32 products of decoding and prompts, x (M, K) w (N, K)^T at M = 1 to 128 rows, in each
 * kernel the CPU backend has for them, GFLOP/s at one thread (OMP_NUM_THREADS decides):
 *
 *   mtlab     cpu_gemm_rows_with, the few-row kernel as it picks its way by M (docs/decoding.md
 *             §9, §9.5): one row streamed, tiles, or panels made as w is read
 *   openblas  OpenBLAS's sgemm (its core as mtlab sets it, docs/models.md §10.9)
 *   packed    mtlab's packed sgemm kernel (cpu_gemm_packed.c), which packs w at every call
 *   panels    the panel kernel on a model's own copy of w in panels (docs/decoding.md §9.3)
 *
 * Each product runs over `copies` different copies of w, so that with several copies the
 * weights come from memory as in a model's step (copies 1: from the caches), allocated as a
 * model's parameters are (cpu_alloc: huge pages where Linux gives them); best of 5 passes.
 * A development tool, not a unit test:
 *
 *   make bench-rows                        (the shapes below, 16 copies)
 *   build/rel/bench_rows M N K [COPIES]    (one shape)
 */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "backend/cpu/cpu_ops.h"
#include "mtlab/backend.h"
#include "mtlab/clock.h"
#include "mtlab/device.h"

enum { PASSES = 5, KERNELS = 4 };
static const char *names[KERNELS] = {"mtlab", "openblas", "packed", "panels"};

static void run(int k, int M, int N, int K, const float *x, const float *w, const mt_qmatrix *pan,
                float *y)
{
    if (k == 0) cpu_gemm_rows_with(cpu_rows_best_isa(), M, N, K, 1.0f, x, K, w, K, y, N);
    else if (k == 1)
        cpu_sgemm_with(CPU_SGEMM_OPENBLAS, 0, 1, M, N, K, 1.0f, x, K, w, K, 0.0f, y, N);
    else if (k == 2) cpu_sgemm_with(CPU_SGEMM_PACKED, 0, 1, M, N, K, 1.0f, x, K, w, K, 0.0f, y, N);
    else cpu_panels_product(y, x, pan, 0, NULL, M, N);
}

static int shape(int M, int N, int K, int copies)
{
    size_t wn = (size_t)N * K;
    float *w = cpu_alloc(wn * copies * sizeof *w), *x = malloc((size_t)M * K * sizeof *x);
    float *y = malloc((size_t)M * N * sizeof *y), *ref = malloc((size_t)M * N * sizeof *ref);
    mt_qmatrix *pan = calloc((size_t)copies, sizeof *pan);
    if (!w || !x || !y || !ref || !pan) return fprintf(stderr, "bench_rows: no memory\n"), -1;
    for (size_t i = 0; i < wn * copies; i++) w[i] = (float)((i * 2654435761u) % 1000) / 1000 - 0.5f;
    for (size_t i = 0; i < (size_t)M * K; i++) x[i] = (float)((i * 40503u) % 1000) / 1000 - 0.5f;
    int have_panels = cpu_panels_cpu();
    for (int c = 0; c < copies && have_panels; c++)
        if (cpu_panels_make(&pan[c], w + wn * c, N, K)) return -1;
    naive_gemm(0, 1, M, N, K, 1.0f, x, K, w, K, 0.0f, ref, N);
    printf("%4d x %5d x %4d", M, N, K);
    for (int k = 0; k < KERNELS; k++) {
        if ((k == 0 && cpu_rows_best_isa() == CPU_ROWS_NONE) ||
            (k == 2 && !cpu_gemm_packed_supported()) || (k == 3 && !have_panels)) {
            printf(" %9s", "-");
            continue;
        }
        /* each kernel against the plain loops first: a wrong product times nothing */
        run(k, M, N, K, x, w, pan, y);
        double diff = 0.0, scale = 1e-30;
        for (size_t i = 0; i < (size_t)M * N; i++) {
            diff = fmax(diff, fabs((double)y[i] - ref[i]));
            scale = fmax(scale, fabs((double)ref[i]));
        }
        if (diff / scale > 1e-5)
            return fprintf(stderr, "\nbench_rows: %s is wrong\n", names[k]), -1;
        double best = 0.0;
        for (int p = 0; p < PASSES; p++) {
            double t0 = mt_now_s();
            for (int c = 0; c < copies; c++) run(k, M, N, K, x, w + wn * c, &pan[c], y);
            double dt = (mt_now_s() - t0) / copies;
            if (p == 0 || dt < best) best = dt;
        }
        printf(" %9.1f", 2.0 * M * N * K / best * 1e-9);
    }
    printf("\n");
    for (int c = 0; c < copies && have_panels; c++) cpu_panels_free(&pan[c]);
    cpu_free(w), free(x), free(y), free(ref), free(pan);
    return 0;
}

int main(int argc, char **argv)
{
    static const int shapes[][3] = {
        {1, 3072, 768},  {4, 3072, 768},   {8, 3072, 768},   {12, 3072, 768}, {16, 3072, 768},
        {32, 3072, 768}, {48, 3072, 768},  {128, 3072, 768}, {32, 768, 1536}, {64, 768, 192},
        {128, 768, 192}, {128, 512, 2048}, {100, 8000, 192}, {64, 50280, 768}};
    /* OpenBLAS's kernels for this CPU's features, as mtlab's main sets them (app/main.c): the
     * library reads the variable when it loads, so the tool starts again with it */
    const char *core = getenv("OPENBLAS_CORETYPE") ? NULL : mt_cpu_blas_best_core();
    if (core && setenv("OPENBLAS_CORETYPE", core, 1) == 0) {
        execv("/proc/self/exe", argv);
        return 1;
    }
    mt_backend_cpu();
    printf("OpenBLAS core %s, %d thread%s; ", mt_cpu_blas_core(), omp_get_max_threads(),
           omp_get_max_threads() == 1 ? "" : "s");
    printf("GFLOP/s, best of %d passes over each copy of w", PASSES);
    if (argc >= 4) {
        int copies = argc > 4 ? atoi(argv[4]) : 16;
        printf(" (%d copies)\n%17s %9s %9s %9s %9s\n", copies, "M x N x K", names[0], names[1],
               names[2], names[3]);
        return shape(atoi(argv[1]), atoi(argv[2]), atoi(argv[3]), copies) ? 1 : 0;
    }
    printf(" (16 copies: from memory; 50280 x 768: 1 copy)\n%17s %9s %9s %9s %9s\n", "M x N x K",
           names[0], names[1], names[2], names[3]);
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        if (shape(shapes[i][0], shapes[i][1], shapes[i][2], shapes[i][1] > 20000 ? 1 : 16))
            return 1;
    return 0;
}
