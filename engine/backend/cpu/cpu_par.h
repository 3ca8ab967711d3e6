/* When the CPU backend's loops fork an OpenMP team, and how they run when they do not.
 *
 * `#pragma omp parallel for if (cond)` enters a region even when cond is false: libgomp runs
 * it as a team of one and ends it, as it ends every region, with a futex wake-up system call
 * (0.6 us on the 2-vCPU EPYC VM). A batch-1 decoding step of transformer-small made about 54
 * such calls a token, each for a loop over a few hundred floats, even at one thread: about a
 * tenth of the step. So a loop that does not fork runs on the calling thread outside any
 * region (the same iterations in the same order as a team of one, so the same floats), and a
 * loop forks only where there are threads to fork (OMP_NUM_THREADS > 1) and enough work for
 * them (min_work, per operation, where a fork/join costs less than the work it shares).
 *
 * The products (the few-row kernel, the fp32 panels, int8, the packed kernel, the Mamba step),
 * a single query's attention, the elementwise loops and the searches' row picks share their work
 * through the pool of cpu_pool.h instead of an OpenMP team, under the same rule, and there the
 * caller does not wait for a thread that has not started; the norms, embeddings, conv, scan and
 * training's other large operations keep their teams. */
#ifndef MTLAB_CPU_PAR_H
#define MTLAB_CPU_PAR_H

#include <omp.h>
#include <stddef.h>

/* 1 when a loop of `work` units forks a team: more than min_work units and more than one
 * thread to share them, outside another team (a nested region would be a team of one) */
static inline int cpu_fork(size_t work, size_t min_work)
{
    return work > min_work && omp_get_max_threads() > 1 && !omp_in_parallel();
}

/* `for loop { body }` on a team when fork is true, else on this thread; pragma is the loop's
 * OpenMP directive as a string ("omp parallel for schedule(static)"). */
#define CPU_FOR(fork, pragma, loop, ...)              \
    do {                                              \
        if (fork) {                                   \
            _Pragma(pragma) for loop { __VA_ARGS__; } \
        } else {                                      \
            for                                       \
                loop { __VA_ARGS__; }                 \
        }                                             \
    } while (0)

#endif
