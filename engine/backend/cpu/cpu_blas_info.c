/* Which kernels the CPU backend's BLAS runs, and which it should. OpenBLAS picks its kernels by
 * CPU model when the library loads, and Debian 12's OpenBLAS 0.3.21 misjudges CPUs newer than
 * it: an Intel Xeon that reports itself only as "Intel(R) Xeon(R) Processor" gets Prescott's
 * SSE3 kernels (a Zen 5 gets its Cooperlake ones unaided: docs/models.md §10.9). The
 * features, read with cpuid, say what the CPU can run; OPENBLAS_CORETYPE, read when the library
 * loads, chooses that. app/main.c sets it before the commands that run model math (unless the
 * user did) and executes mtlab again, as it does for OpenMP's spinning. */
#include "mtlab/device.h"

#include "backend/cpu/cpu_ops.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* OpenBLAS cores by the widest vectors their sgemm uses */
static int core_width(const char *core)
{
    static const char *const avx512[] = {"SkylakeX", "Cooperlake", "SapphireRapids", NULL};
    static const char *const avx2[] = {"Haswell", "Zen", NULL};
    for (int i = 0; avx512[i]; i++)
        if (!strcmp(core, avx512[i])) return 512;
    for (int i = 0; avx2[i]; i++)
        if (!strcmp(core, avx2[i])) return 256;
    return 128;
}

mt_cpu_features mt_cpu_features_now(void)
{
    mt_cpu_features f = {0, 0, 0};
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    f.avx2_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    f.avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
               __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
#if __GNUC__ >= 12
    f.avx512_bf16 = f.avx512 && __builtin_cpu_supports("avx512bf16");
#endif
#endif
    return f;
}

const char *mt_blas_core_for(mt_cpu_features f, const char *loaded)
{
    int have = core_width(loaded ? loaded : "");
    if (f.avx512 && have < 512) return f.avx512_bf16 ? "Cooperlake" : "SkylakeX";
    if (f.avx2_fma && have < 256) return "Haswell";
    return NULL;
}

const char *mt_cpu_blas_core(void)
{
    const char *core = openblas_get_corename();
    return core ? core : "unknown";
}

const char *mt_cpu_blas_best_core(void)
{
    return mt_blas_core_for(mt_cpu_features_now(), mt_cpu_blas_core());
}

int mt_cpu_blas_hint(char *out, size_t len)
{
    const char *want = mt_cpu_blas_best_core();
    if (!want) return 0;
    const char *set = getenv("OPENBLAS_CORETYPE");
    if (set)
        snprintf(out, len,
                 "OPENBLAS_CORETYPE=%s in the environment keeps OpenBLAS on its %s kernels; this "
                 "CPU runs %s ones (unset it and mtlab chooses them; docs/models.md §10.9)",
                 set, mt_cpu_blas_core(), want);
    else
        snprintf(out, len,
                 "OpenBLAS runs its %s kernels; this CPU runs %s ones (mtlab sets "
                 "OPENBLAS_CORETYPE=%s for the commands that run models; docs/models.md §10.9)",
                 mt_cpu_blas_core(), want, want);
    return 1;
}

#define STRING_OF(x) #x
#define DIGITS_OF(x) STRING_OF(x)

const char *mt_cpu_own_kernels(char *out, size_t len)
{
    const char *rows =
        cpu_gemm_rows_supported(CPU_ROWS_AVX512)
            ? "avx512 (1 to " DIGITS_OF(CPU_ROWS_MAX_M) " rows; from 8, panels made as w is read)"
        : cpu_gemm_rows_supported(CPU_ROWS_AVX2)
            ? "avx2 (1 to " DIGITS_OF(CPU_ROWS_MAX_M_AVX2) " rows)"
            : "none (OpenBLAS)";
    /* fp32 panels: made for the models a runner opens (docs/decoding.md §9.3) */
    char panels[128] = "";
    if (cpu_panels_supported())
        snprintf(panels, sizeof panels, ", fp32 panels %s 2 to %d rows%s",
                 cpu_gemm_rows_supported(CPU_ROWS_AVX512) ? "avx512" : "avx2", cpu_panels_max_m(),
                 cpu_sgemm_packed_cpu() ? " (more rows: the packed kernel reads them)" : "");
    else if (cpu_panels_cpu())
        snprintf(panels, sizeof panels, ", fp32 panels off (MTLAB_FP32_PANELS)");
    const cpu_int8_kernel *k = cpu_int8_kernel_pick();
    if (k) snprintf(out, len, "few-row products %s%s, int8 %s", rows, panels, k->name);
    else
        snprintf(out, len,
                 "few-row products %s%s, int8 none (MTLAB_INT8_KERNEL=%s: not a kernel this CPU "
                 "runs)",
                 rows, panels, getenv("MTLAB_INT8_KERNEL"));
    return out;
}

const char *mt_cpu_products(char *out, size_t len)
{
    const char *version, *kernels;
    cpu_blis_info(&version, &kernels);
    int forced = cpu_sgemm_forced();
    char ignored[192] = ""; /* a value of MTLAB_SGEMM the rule ignores, named */
    if (forced == -2)
        snprintf(ignored, sizeof ignored,
                 " (MTLAB_SGEMM=%.120s: not openblas, blis, mtlab or auto; ignored)",
                 getenv("MTLAB_SGEMM"));
    if (forced == CPU_SGEMM_BLIS)
        snprintf(out, len, "every product on BLIS %s (%s kernels; MTLAB_SGEMM=blis)", version,
                 kernels);
    else if (forced == CPU_SGEMM_PACKED)
        snprintf(out, len, "every product on mtlab's packed %s kernel (MTLAB_SGEMM=mtlab)",
                 cpu_gemm_rows_supported(CPU_ROWS_AVX512) ? "avx512" : "avx2");
    else if (forced == CPU_SGEMM_OPENBLAS)
        snprintf(out, len, "every product on OpenBLAS (%s kernels; MTLAB_SGEMM=openblas)",
                 mt_cpu_blas_core());
    else if (cpu_sgemm_packed_cpu() == CPU_PACKED_AVX512)
        snprintf(out, len,
                 "mtlab's packed avx512 kernel: x W^T, weight and input gradients (at 1 thread "
                 "not a vocabulary's x W^T, n >= 4096, nor gradients with k < 32 or <= 32 rows "
                 "or columns); OpenBLAS (%s kernels): small, and those at 1 thread; BLIS %s (%s "
                 "kernels): none%s",
                 mt_cpu_blas_core(), version, kernels, ignored);
    else if (cpu_sgemm_packed_cpu())
        snprintf(out, len,
                 "mtlab's packed avx2 kernel: x W^T, k < 32, input gradients k < 4096, weight "
                 "gradients at 2+ threads; BLIS %s (%s kernels): weight gradients at 1 thread, <= "
                 "32 output columns, k >= 4096; OpenBLAS (%s kernels): small%s",
                 version, kernels, mt_cpu_blas_core(), ignored);
    else if (!cpu_blis_full_rate())
        snprintf(out, len,
                 "OpenBLAS (%s kernels): x W^T, weight and input gradients, every size; BLIS %s "
                 "(%s kernels): none (%d-bit kernels, and this core's 512-bit multiply-adds run "
                 "%.1fx as fast as its 256-bit ones)%s",
                 mt_cpu_blas_core(), version, kernels, cpu_blis_width(), cpu_fma512_gain(),
                 ignored);
    else
        snprintf(out, len,
                 "OpenBLAS (%s kernels): x W^T, k < 32, small; BLIS %s (%s kernels): weight "
                 "gradients, <= 32 output columns, k >= 4096%s",
                 mt_cpu_blas_core(), version, kernels, ignored);
    return out;
}
