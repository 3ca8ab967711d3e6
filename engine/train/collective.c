/* The single-process collectives, the fixed-order sum every implementation reduces with, and how
 * a process knows it was launched as one rank of several. */
#include "mtlab/collective.h"
#include "mtlab/error.h"
#include "math/half.h"

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

void mt_collective_sum_ranks_bf16(float *dst, const uint16_t *parts, int size, size_t n)
{
    for (size_t i = 0; i < n; i++) dst[i] = mt_bf16_to_f32(parts[i]);
    for (int r = 1; r < size; r++) {
        const uint16_t *p = parts + (size_t)r * n;
        for (size_t i = 0; i < n; i++) dst[i] += mt_bf16_to_f32(p[i]);
    }
}

/* Elements gathered per round: bounds the (size, round) buffer. */
#define BF16_ROUND ((size_t)1 << 22)

int mt_collective_all_reduce_bf16(mt_collective *c, float *x, size_t n)
{
    if (c->all_reduce_sum_bf16) return c->all_reduce_sum_bf16(c, x, n);
    size_t round = n < BF16_ROUND ? n : BF16_ROUND;
    uint16_t *mine = mt_xmalloc((round ? round : 1) * sizeof *mine);
    uint16_t *all = mt_xmalloc((size_t)c->size * (round ? round : 1) * sizeof *all);
    int rc = 0;
    for (size_t at = 0; at < n && rc == 0; at += round) {
        size_t len = n - at < round ? n - at : round;
        for (size_t i = 0; i < len; i++) mine[i] = mt_f32_to_bf16(x[at + i]);
        rc = c->all_gather(c, mine, all, len * sizeof *mine);
        if (rc != 0) break;
        /* the gathered parts are len apart */
        mt_collective_sum_ranks_bf16(x + at, all, c->size, len);
        for (size_t i = 0; i < len; i++) x[at + i] = mt_bf16_to_f32(mt_f32_to_bf16(x[at + i]));
    }
    free(mine);
    free(all);
    return rc;
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
        .any_thread = 1,
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
