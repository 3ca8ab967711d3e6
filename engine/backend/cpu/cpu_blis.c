/* The second BLAS: BLIS (Debian's libblis-openmp), for the products where it beats OpenBLAS on
 * the CPUs mtlab is measured on (cpu_sgemm_pick in cpu_gemm.c says which; docs/models.md
 * §10.9 has the measurements). BLIS picks its kernels from cpuid (its "zen3" AVX2 kernels on a
 * Zen 4, "skx" on an AVX-512 Xeon whose model number it knows, "haswell" on one it does not), so
 * nothing has to be set for it; where they are narrower than the CPU's multiply-adds the rule
 * gives it nothing (cpu_blis_full_rate). cpu_blis_width: the bits of its kernels' vectors.
 *
 * Both libraries export the CBLAS and Fortran BLAS names; the link line puts OpenBLAS first, so
 * those names are OpenBLAS's everywhere, and BLIS is called only by its own typed interface
 * (bli_sgemm_ex), whose names are its alone. This is the one file that includes blis.h. */
#include "backend/cpu/cpu_ops.h"

#include <blis.h>
#include <omp.h>
#include <string.h>

void cpu_blis_sgemm(int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a,
                    int lda, const float *b, int ldb, float beta, float *c, int ldc)
{
    /* OpenMP's thread count as OpenBLAS takes it, read at every call (a worker's
     * omp_set_num_threads applies here too); one thread inside a parallel region */
    rntm_t rntm = BLIS_RNTM_INITIALIZER;
    bli_rntm_set_num_threads(omp_in_parallel() ? 1 : omp_get_max_threads(), &rntm);
    /* row-major operands: rows at stride ld, elements at stride 1; BLIS transposes the stored
     * matrix itself, so a stored (k, m) for trans_a is described as it lies */
    bli_sgemm_ex(trans_a ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE,
                 trans_b ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE, m, n, k, &alpha, (float *)a, lda, 1,
                 (float *)b, ldb, 1, &beta, c, ldc, 1, NULL, &rntm);
}

int cpu_blis_width(void)
{
    static const char *const wide[] = {"skx", "knl", "zen4", "zen5", NULL};
    const char *arch = bli_arch_string(bli_arch_query_id());
    for (int i = 0; wide[i]; i++)
        if (!strcmp(arch, wide[i])) return 512;
    return strcmp(arch, "haswell") && strncmp(arch, "zen", 3) ? 128 : 256;
}

void cpu_blis_info(const char **version, const char **kernels)
{
    *version = bli_info_get_version_str();
    *kernels = bli_arch_string(bli_arch_query_id());
}
