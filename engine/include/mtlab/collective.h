/* Collectives for data-parallel training: the few operations the trainer needs from the N
 * processes ("ranks") of one run, behind a table of functions, so the engine links without
 * MPI or NCCL and a run of one process uses the single-process table.
 *
 * Implementations: mt_collective_single (one rank; every operation is the identity),
 * mt_collective_mpi (engine/train/collective_mpi.c; OpenMPI over the CPU, built when mpi.h
 * exists) and NCCL on CUDA devices (kernels/collective_nccl.cu, docs/distributed.md).
 *
 * Reproducibility: all_reduce_sum adds the ranks' vectors in rank order, (((x0 + x1) + x2) + ...),
 * for every element, whatever the network or library underneath (MPI_Allreduce promises no
 * order), so two runs with the same N give the same bits. */
#ifndef MTLAB_COLLECTIVE_H
#define MTLAB_COLLECTIVE_H

#include <stddef.h>
#include <stdint.h>

typedef struct mt_collective mt_collective;
struct mt_collective {
    int rank, size; /* this process is rank 0 .. size - 1 */
    int device_memory; /* 1: all_reduce_sum takes backend (device) memory; 0: host memory */
    int any_thread; /* 1: the operations may be called from another thread than the one that
                     * opened it (one call at a time): a thread can reduce during backward */
    const char *name; /* "single", "mpi", "nccl" */
    /* x (n) of every rank becomes their sum in rank order on every rank. */
    int (*all_reduce_sum)(mt_collective *c, float *x, size_t n);
    /* all_reduce_sum with x rounded to bf16 to travel (half the bytes): x becomes
     * bf16(fp32(bf16(x0)) + fp32(bf16(x1)) + ...), added in rank order. NULL: use
     * mt_collective_all_reduce_bf16, which any table can run. */
    int (*all_reduce_sum_bf16)(mt_collective *c, float *x, size_t n);
    /* Optional (NULL: not offered): all_reduce_sum queued behind the backend work the calling
     * thread has queued so far, returning once it is queued (NCCL: on its own CUDA stream, which
     * first waits on an event of the thread's compute stream), so backward goes on while it
     * runs. Sums queued one after another run in that order, with all_reduce_sum's bits; x must
     * not be written until all_reduce_wait. */
    int (*all_reduce_sum_async)(mt_collective *c, float *x, size_t n);
    /* The backend work the calling thread queues from now on waits for every sum queued so far
     * (NCCL: the compute stream waits on an event of the collective's stream; the host goes on).
     * 0, or -1 when a queued sum failed. Only with all_reduce_sum_async. */
    int (*all_reduce_wait)(mt_collective *c);
    /* all (size * bytes, host) gets every rank's mine (bytes, host), in rank order. */
    int (*all_gather)(mt_collective *c, const void *mine, void *all, size_t bytes);
    /* buf (bytes, host) of rank root on every rank. */
    int (*broadcast)(mt_collective *c, void *buf, size_t bytes, int root);
    int (*barrier)(mt_collective *c);
    /* Ends this process's part (MPI_Finalize) and frees c. */
    void (*close)(mt_collective *c);
    void *impl;
};

/* One rank: rank 0 of 1. A static table; close does nothing. */
mt_collective *mt_collective_single(void);

/* 1 when this process was started as one of several ranks by mpirun/mpiexec (OpenMPI's or
 * PMIx's environment) or srun (SLURM_NTASKS > 1 with a PMI plugin); *size gets their number. */
int mt_collective_launched(int *size);

/* The MPI collectives (MPI_Init on the first call); NULL with mt_last_error() when mtlab was
 * built without MPI or MPI cannot start. */
mt_collective *mt_collective_mpi(void);

/* The NCCL collectives on CUDA device `index` (gradients in device memory), the NCCL id sent
 * from rank 0 over host (MPI, or mt_collective_single for one rank); closing the result closes
 * host. NULL with mt_last_error() without CUDA, NCCL or the device (engine/core/device.c loads
 * them from libmtlab-cuda.so). */
mt_collective *mt_collective_nccl(mt_collective *host, int index);

/* dst (n) = parts[0] + parts[1] + ... + parts[size - 1], each part n floats apart, added in that
 * order: the fixed order every implementation reduces in. */
void mt_collective_sum_ranks(float *dst, const float *parts, int size, size_t n);

/* The same for bf16 parts (n uint16 apart), each widened to fp32 before it is added. */
void mt_collective_sum_ranks_bf16(float *dst, const uint16_t *parts, int size, size_t n);

/* x (n, host) becomes the bf16 rank-order sum all_reduce_sum_bf16 describes: the table's own
 * when it has one, else every rank's bf16 vector gathered (all_gather) and added here. */
int mt_collective_all_reduce_bf16(mt_collective *c, float *x, size_t n);

#endif
