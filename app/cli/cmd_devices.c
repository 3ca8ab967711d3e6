/* `mtlab devices`: what this machine can run models on. */
#include "cli/commands.h"
#include "mtlab/device.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

static int run_devices(int argc, char **argv)
{
    (void)argv;
    if (argc != 1) return cli_usage(&cmd_devices);
    const char *pinned = getenv("OPENBLAS_CORETYPE");
    printf("cpu       OpenBLAS (%s kernels%s%s) + OpenMP, %d threads\n", mt_cpu_blas_core(),
           pinned ? ", OPENBLAS_CORETYPE=" : "", pinned ? pinned : "", omp_get_max_threads());
    char hint[512];
    if (mt_cpu_blas_hint(hint, sizeof hint)) printf("          %s\n", hint);
    printf("          products: %s\n", mt_cpu_products(hint, sizeof hint));
    printf("          mtlab's own: %s\n", mt_cpu_own_kernels(hint, sizeof hint));
    char why[256] = "";
    int n = mt_cuda_devices(why, sizeof why);
    if (n == 0) printf("cuda      none (%s)\n", why);
    for (int i = 0; i < n; i++) {
        char name[256];
        if (mt_cuda_describe(i, name, sizeof name) == 0) printf("cuda:%-4d %s\n", i, name);
    }
    return 0;
}

const struct mt_command cmd_devices = {
    "devices",     "", "list the CPU and CUDA devices models can run on", run_devices,
    .parallel = 1, /* it reports the OpenMP and BLAS settings the model commands run with */
};
