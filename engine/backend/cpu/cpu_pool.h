/* The decoding step's threads, and a training step's: a pool that runs a product's parts (or an
 * operation's, cpu_pool_for) on the calling thread and on whichever workers are awake, without
 * waiting for one that is not.
 *
 * An OpenMP region waits at its end for every thread of its team, started or not. A batch-1
 * decoding step is 25-150 short products (a few hundred microseconds each), with a little work
 * on one thread between them; libgomp's threads sleep after GOMP_SPINCOUNT spins (1,000, set by
 * app/main.c so that a busy machine is not held by spinning threads), so every product waited
 * for a futex wake-up of its second thread, and a thread the hypervisor had not run stalled
 * the step. Here the caller and the workers take the parts from one counter: the caller takes
 * parts until none is left and then waits only for parts a worker has begun, so a worker that
 * is asleep or descheduled costs nothing but its share of the work. Between jobs a worker spins
 * for MTLAB_POOL_SPIN_US microseconds (default 200; sched_yield every 20 so that a runnable
 * thread of another process gets the core), then sleeps on a futex until the next job.
 *
 * A job's parts must not depend on which thread runs them (each writes its own outputs): the
 * results are the same floats at any thread count. Inside a part, OpenMP's thread count is 1 on
 * every thread that runs it, so the operations a part calls (OpenBLAS included) do not fork. */
#ifndef MTLAB_CPU_POOL_H
#define MTLAB_CPU_POOL_H

#include <stddef.h>

/* parts a thread for a job that streams a weight matrix: a thread the machine runs late leaves
 * its parts to the others */
#define CPU_POOL_PARTS_PER_THREAD 4

/* the most parts one job takes; more run on the calling thread */
#define CPU_POOL_MAX_PARTS ((1 << 20) - 1)

typedef void (*cpu_pool_fn)(void *ctx, int part);

/* Runs fn(ctx, p) once for every p in [0, parts), on this thread and up to
 * omp_get_max_threads() - 1 workers, and returns when all have run. With one thread, inside an
 * OpenMP region or another job, or while another thread's job holds the pool, every part runs
 * here, in order. */
void cpu_pool_run(int parts, cpu_pool_fn fn, void *ctx);

/* Parts for a job of `units` like units of work: CPU_POOL_PARTS_PER_THREAD for each thread a
 * job started here would use, at most one a unit */
int cpu_pool_parts(size_t units);

/* Units [*u0, *u1) of part p of parts: runs in order, covering [0, units) */
static inline void cpu_pool_span(size_t units, int p, int parts, size_t *u0, size_t *u1)
{
    *u0 = units * (size_t)p / (size_t)parts;
    *u1 = units * (size_t)(p + 1) / (size_t)parts;
}

/* Every part: on the pool when share is set, else on this thread in order */
static inline void cpu_pool_run_if(int share, int parts, cpu_pool_fn fn, void *ctx)
{
    if (share) cpu_pool_run(parts, fn, ctx);
    else
        for (int p = 0; p < parts; p++) fn(ctx, p);
}

/* fn(ctx, u0, u1) over units [0, units): when share is set, in parts of whole units on the pool
 * (cpu_pool_parts of them), else in one call on this thread. For the loops of the operations
 * around the products (norms, bias gradients, copies, the loss, dropout): on the pool, as the
 * products are, a step's threads are one team, and an operation after a product finds the
 * workers still spinning instead of waking an OpenMP team of other threads that the pool's
 * spinning workers hold off the cores. Each unit must come out the same whoever runs it. */
typedef void (*cpu_span_fn)(void *ctx, size_t u0, size_t u1);
void cpu_pool_for(int share, size_t units, cpu_span_fn fn, void *ctx);

/* Jobs handed to the pool's workers so far in this process (jobs run wholly on their caller
 * are not counted): what tests count where they counted OpenMP regions */
long cpu_pool_jobs(void);

/* Threads a job started here would use: omp_get_max_threads(), or 1 inside a region or a job */
int cpu_pool_threads(void);

#endif
