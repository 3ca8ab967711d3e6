/* What the CPU backend's BLAS runs on this machine (`mtlab devices`, `mtlab bench`): OpenBLAS
 * picks its kernels by CPU model when it loads, and OpenBLAS 0.3.21 (Debian 12) does not know
 * AMD's Zen 4 and Zen 5, which have AVX-512: it falls back to its AVX2 (Haswell) kernels there.
 * OPENBLAS_CORETYPE, read when the library loads, chooses others; this file only says so. */
#include "mtlab/device.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* OpenBLAS cores whose sgemm uses AVX-512 */
static int avx512_core(const char *core)
{
    static const char *const cores[] = {"SkylakeX", "Cooperlake", "SapphireRapids", NULL};
    for (int i = 0; cores[i]; i++)
        if (!strcmp(core, cores[i])) return 1;
    return 0;
}

static int cpu_has_avx512(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
#else
    return 0;
#endif
}

static int cpu_has_avx512_bf16(void)
{
#if defined(__x86_64__) && defined(__GNUC__) && __GNUC__ >= 12
    return __builtin_cpu_supports("avx512bf16");
#else
    return 0;
#endif
}

const char *mt_cpu_blas_core(void)
{
    const char *core = openblas_get_corename();
    return core ? core : "unknown";
}

int mt_cpu_blas_hint(char *out, size_t len)
{
    const char *core = mt_cpu_blas_core();
    if (!cpu_has_avx512() || avx512_core(core)) return 0;
    const char *want = cpu_has_avx512_bf16() ? "Cooperlake" : "SkylakeX";
    const char *set = getenv("OPENBLAS_CORETYPE");
    snprintf(out, len,
             "this CPU has AVX-512 but OpenBLAS runs its %s kernels%s%s%s; OPENBLAS_CORETYPE=%s selects "
             "AVX-512 ones (docs/models.md §10.9)",
             core, set ? " (OPENBLAS_CORETYPE=" : "", set ? set : "", set ? " in the environment)" : "", want);
    return 1;
}
