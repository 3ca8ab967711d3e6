/* The single-process collectives, the fixed-order sum every implementation reduces with, and how
 * a process knows it was launched as one rank of several. */
#include "mtlab/collective.h"

#include <stdlib.h>
#include <string.h>

void mt_collective_sum_ranks(float *dst, const float *parts, int size, size_t n)
{
    if (dst != parts) memcpy(dst, parts, n * sizeof *dst);
    for (int r = 1; r < size; r++) {
        const float *p = parts + (size_t)r * n;
        for (size_t i = 0; i < n; i++) dst[i] += p[i];
    }
}

static int single_all_reduce_sum(mt_collective *c, float *x, size_t n) { return 0; }

static int single_all_gather(mt_collective *c, const void *mine, void *all, size_t bytes)
{
    memmove(all, mine, bytes);
    return 0;
}

static int single_broadcast(mt_collective *c, void *buf, size_t bytes, int root) { return 0; }
static int single_barrier(mt_collective *c) { return 0; }
static void single_close(mt_collective *c) {}

mt_collective *mt_collective_single(void)
{
    static mt_collective single = {
        .rank = 0,
        .size = 1,
        .name = "single",
        .all_reduce_sum = single_all_reduce_sum,
        .all_gather = single_all_gather,
        .broadcast = single_broadcast,
        .barrier = single_barrier,
        .close = single_close,
    };
    return &single;
}

static int env_int(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? atoi(v) : 0;
}

int mt_collective_launched(int *size)
{
    /* OpenMPI's mpirun, then PMIx (srun --mpi=pmix, other launchers), then srun's own count:
     * srun starts every task with SLURM_NTASKS and SLURM_PROCID set */
    static const char *const counts[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE"};
    int n = 0;
    for (size_t i = 0; i < sizeof counts / sizeof counts[0] && n == 0; i++) n = env_int(counts[i]);
    if (n == 0 && getenv("SLURM_PROCID") && getenv("SLURM_STEP_ID"))
        n = env_int("SLURM_STEP_NUM_TASKS");
    *size = n > 1 ? n : 1;
    return n > 1;
}
