/* The decoding step's thread pool (cpu_pool.h says what it is for).
 *
 * One job at a time (a caller that finds the pool busy runs its parts itself). A job is
 * published in `claim`, one 64-bit word: the job's tag (its number's low 24 bits), its part
 * count and the next part to take, 20 bits each; every thread takes a part by a compare-and-swap
 * that checks the tag, so a worker that wakes late for a finished job takes nothing from the
 * next. The function and context are read only after a part is taken: the caller wrote them
 * before it published the claim word (release), and writes the next job's only after every
 * taken part has counted itself done (release, read with acquire), so a worker never sees
 * another job's function beside this job's part. Workers wait on `job`, the futex word, spinning
 * first; the caller wakes the futex only when a worker has said it sleeps (`sleepers`, read
 * after `job` is written, both sequentially consistent, so no wake-up is lost).
 *
 * A worker that does not exist (after fork(), in the child) or never wakes only leaves its
 * share to the caller. */
#include "backend/cpu/cpu_pool.h"

#include <limits.h>
#include <linux/futex.h>
#include <omp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MAX_WORKERS 63
#define TAG_BITS 24
#define FIELD_BITS 20
#define FIELD_MASK ((UINT64_C(1) << FIELD_BITS) - 1)
#define TAG_MASK ((UINT64_C(1) << TAG_BITS) - 1)
/* a spinning thread gives its core to any other runnable thread this often */
#define YIELD_NS 20000L

static struct {
    pthread_mutex_t busy; /* held by the thread whose job runs */
    int workers; /* started (under busy) */
    _Atomic uint32_t job; /* the current job's number: the futex the workers sleep on */
    _Atomic uint64_t claim; /* tag | parts | next part */
    _Atomic int done; /* parts the workers finished in this job */
    _Atomic int sleepers; /* workers in (or about to enter) FUTEX_WAIT */
    _Atomic int helpers; /* workers below this index take part in the job */
    cpu_pool_fn fn;
    void *ctx;
    uint32_t first_job[MAX_WORKERS]; /* the job number a worker starts after */
} pool = {.busy = PTHREAD_MUTEX_INITIALIZER};

static _Thread_local int in_job;
static long spin_ns = -1;
static pthread_once_t spin_once = PTHREAD_ONCE_INIT;

static void read_spin(void)
{
    const char *v = getenv("MTLAB_POOL_SPIN_US");
    char *end;
    long us = v && *v ? strtol(v, &end, 10) : 200;
    if (v && *v && (*end || us < 0)) us = 200;
    spin_ns = us * 1000L;
}

static inline void relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static long now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000L + t.tv_nsec;
}

static inline uint64_t pack(uint32_t job, int parts, int next)
{
    return ((uint64_t)(job & TAG_MASK) << (2 * FIELD_BITS)) | ((uint64_t)parts << FIELD_BITS) |
           (uint64_t)next;
}

/* Takes the next part of job `job`: its index, or -1 when none is left (or the job is over) */
static int take(uint32_t job)
{
    uint64_t v = atomic_load_explicit(&pool.claim, memory_order_acquire);
    for (;;) {
        if ((v >> (2 * FIELD_BITS)) != (job & TAG_MASK)) return -1;
        uint64_t parts = (v >> FIELD_BITS) & FIELD_MASK, next = v & FIELD_MASK;
        if (next >= parts) return -1;
        if (atomic_compare_exchange_weak_explicit(&pool.claim, &v, v + 1, memory_order_acq_rel,
                                                  memory_order_acquire))
            return (int)next;
    }
}

/* A wait that spins, giving the core away every YIELD_NS */
typedef struct {
    int spins;
    long start, yielded;
} spinner;

static spinner spin_start(void)
{
    long t = now_ns();
    return (spinner){.start = t, .yielded = t};
}

/* One pause; at every 64th, the clock is read and the core given away if YIELD_NS have passed
 * since the last time. Returns the nanoseconds spun, as of the last reading. */
static long spin_step(spinner *s)
{
    relax();
    if (++s->spins % 64) return 0;
    long t = now_ns();
    if (t - s->yielded >= YIELD_NS) {
        sched_yield();
        s->yielded = t;
    }
    return t - s->start;
}

/* Spins while `job` is `seen`, then sleeps until it changes */
static uint32_t wait_job(uint32_t seen)
{
    spinner w = spin_start();
    for (;;) {
        uint32_t j = atomic_load_explicit(&pool.job, memory_order_acquire);
        if (j != seen) return j;
        if (spin_step(&w) >= spin_ns) break;
    }
    atomic_fetch_add(&pool.sleepers, 1);
    uint32_t j;
    while ((j = atomic_load(&pool.job)) == seen)
        syscall(SYS_futex, &pool.job, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
    atomic_fetch_sub(&pool.sleepers, 1);
    return j;
}

static void *worker(void *arg)
{
    int index = (int)(intptr_t)arg;
    omp_set_num_threads(1); /* what a part calls does not fork */
    in_job = 1;
    uint32_t seen = pool.first_job[index];
    for (;;) {
        seen = wait_job(seen);
        if (index >= atomic_load_explicit(&pool.helpers, memory_order_relaxed)) continue;
        for (int p; (p = take(seen)) >= 0;) {
            pool.fn(pool.ctx, p);
            atomic_fetch_add_explicit(&pool.done, 1, memory_order_release);
        }
    }
    return NULL;
}

/* Starts workers up to `want` (under busy); fewer when a thread cannot be made */
static void grow(int want)
{
    if (want > MAX_WORKERS) want = MAX_WORKERS;
    if (pool.workers >= want) return;
    /* workers take no signals: SIGINT, SIGWINCH and the like stay with the program's threads */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    while (pool.workers < want) {
        pool.first_job[pool.workers] = atomic_load_explicit(&pool.job, memory_order_relaxed);
        pthread_t t;
        if (pthread_create(&t, &attr, worker, (void *)(intptr_t)pool.workers)) break;
        pool.workers++;
    }
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

long cpu_pool_jobs(void) { return (long)atomic_load_explicit(&pool.job, memory_order_relaxed); }

int cpu_pool_parts(size_t units)
{
    size_t parts = (size_t)CPU_POOL_PARTS_PER_THREAD * (size_t)cpu_pool_threads();
    return (int)(parts < units ? parts : units);
}

int cpu_pool_threads(void)
{
    if (in_job || omp_in_parallel()) return 1;
    return omp_get_max_threads();
}

/* Around a job's parts on the calling thread: in a job, OpenMP's thread count 1 (as on the
 * workers); enter returns the count to restore */
static int enter_parts(void)
{
    int omp_threads = omp_get_max_threads();
    if (omp_threads != 1) omp_set_num_threads(1);
    in_job = 1;
    return omp_threads;
}

static void leave_parts(int omp_threads, int was_in_job)
{
    if (omp_threads != 1) omp_set_num_threads(omp_threads);
    in_job = was_in_job;
}

static void run_here(int parts, cpu_pool_fn fn, void *ctx)
{
    int was = in_job, omp_threads = enter_parts();
    for (int p = 0; p < parts; p++) fn(ctx, p);
    leave_parts(omp_threads, was);
}

void cpu_pool_run(int parts, cpu_pool_fn fn, void *ctx)
{
    int threads = cpu_pool_threads();
    if (parts <= 0) return;
    if (threads <= 1 || parts == 1 || parts > CPU_POOL_MAX_PARTS ||
        pthread_mutex_trylock(&pool.busy)) {
        run_here(parts, fn, ctx);
        return;
    }
    pthread_once(&spin_once, read_spin);
    grow(threads - 1);
    int helpers = threads - 1 < pool.workers ? threads - 1 : pool.workers;
    /* publish: the function, then the claim word (release), then the job number */
    pool.fn = fn;
    pool.ctx = ctx;
    atomic_store_explicit(&pool.helpers, helpers, memory_order_relaxed);
    atomic_store_explicit(&pool.done, 0, memory_order_relaxed);
    uint32_t job = atomic_load_explicit(&pool.job, memory_order_relaxed) + 1;
    atomic_store_explicit(&pool.claim, pack(job, parts, 0), memory_order_release);
    atomic_store(&pool.job, job);
    if (atomic_load(&pool.sleepers))
        syscall(SYS_futex, &pool.job, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);

    /* this thread's parts */
    int omp_threads = enter_parts(), mine = 0;
    for (int p; (p = take(job)) >= 0; mine++) fn(ctx, p);
    leave_parts(omp_threads, 0);

    /* then only the parts workers took, which are running */
    spinner w = spin_start();
    while (atomic_load_explicit(&pool.done, memory_order_acquire) != parts - mine) spin_step(&w);
    pthread_mutex_unlock(&pool.busy);
}

typedef struct {
    cpu_span_fn fn;
    void *ctx;
    size_t units;
    int parts;
} span_job;

static void span_part(void *ctx, int p)
{
    const span_job *j = ctx;
    size_t u0, u1;
    cpu_pool_span(j->units, p, j->parts, &u0, &u1);
    if (u1 > u0) j->fn(j->ctx, u0, u1);
}

void cpu_pool_for(int share, size_t units, cpu_span_fn fn, void *ctx)
{
    if (!units) return;
    if (!share) {
        fn(ctx, 0, units);
        return;
    }
    span_job j = {.fn = fn, .ctx = ctx, .units = units, .parts = cpu_pool_parts(units)};
    cpu_pool_run(j.parts, span_part, &j);
}
