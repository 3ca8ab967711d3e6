/* The CPU backend's thread pool (engine/backend/cpu/cpu_pool.h): every part of a job runs once,
 * whichever threads run it and whether the workers spin, sleep or do not exist (a forked
 * child); one thread, a nested job and a busy pool run the parts on the caller, in order;
 * inside a part nothing forks; two callers at once each get all their parts. */
#include "test_util.h"

#include <omp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend/cpu/cpu_pool.h"

#define MAX_PARTS 4096

/* A job's record: how many times each part ran, the order the caller's parts ran in (for the
 * jobs that run on it alone) and what a part saw of the thread count */
typedef struct {
    _Atomic int runs[MAX_PARTS];
    int order[MAX_PARTS];
    _Atomic int n_order;
    pthread_t caller;
    _Atomic int on_caller, wide; /* parts run by the caller; parts that saw more than 1 thread */
} record;

static void record_reset(record *r)
{
    memset(r, 0, sizeof *r);
    r->caller = pthread_self();
}

static void note_part(void *ctx, int p)
{
    record *r = ctx;
    atomic_fetch_add(&r->runs[p], 1);
    if (pthread_equal(pthread_self(), r->caller)) {
        atomic_fetch_add(&r->on_caller, 1);
        r->order[atomic_fetch_add(&r->n_order, 1)] = p;
    }
    if (omp_get_max_threads() != 1 || cpu_pool_threads() != 1) atomic_fetch_add(&r->wide, 1);
    /* a little work, so that a woken worker finds parts left */
    volatile double s = 0;
    for (int i = 0; i < 200; i++) s += i * 0.5;
}

static void assert_each_once(record *r, int parts)
{
    for (int p = 0; p < parts; p++) assert_int_equal(atomic_load(&r->runs[p]), 1);
    for (int p = parts; p < MAX_PARTS; p++) assert_int_equal(atomic_load(&r->runs[p]), 0);
    assert_int_equal(atomic_load(&r->wide), 0);
}

static void assert_in_order_here(record *r, int parts)
{
    assert_int_equal(atomic_load(&r->on_caller), parts);
    for (int p = 0; p < parts; p++) assert_int_equal(r->order[p], p);
}

/* At 1 to 4 threads, jobs of 1 to 4,096 parts: each part once, never with more than one
 * OpenMP thread inside; one thread and one part run here in order and hand no job over; then
 * again after the workers have slept (5 ms, past their spin) */
static void test_every_part_once(void **state)
{
    (void)state;
    static const int sizes[] = {1, 2, 3, 7, 64, 1000, MAX_PARTS};
    static record r;
    int saved = omp_get_max_threads();
    for (int round = 0; round < 2; round++)
        for (int threads = 1; threads <= 4; threads++) {
            omp_set_num_threads(threads);
            for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
                if (round) usleep(5000);
                record_reset(&r);
                long jobs = cpu_pool_jobs();
                cpu_pool_run(sizes[i], note_part, &r);
                assert_each_once(&r, sizes[i]);
                int shared = threads > 1 && sizes[i] > 1;
                assert_int_equal(cpu_pool_jobs() - jobs, shared);
                if (!shared) assert_in_order_here(&r, sizes[i]);
                assert_int_equal(omp_get_max_threads(), threads);
            }
        }
    omp_set_num_threads(saved);
}

/* A job started inside a part runs wholly on the thread that runs the part, in order */
typedef struct {
    record inner[8];
    _Atomic int bad;
} nested;

static void nested_part(void *ctx, int p)
{
    nested *n = ctx;
    record *r = &n->inner[p];
    record_reset(r);
    cpu_pool_run(16, note_part, r);
    if (atomic_load(&r->on_caller) != 16 || atomic_load(&r->wide)) atomic_fetch_add(&n->bad, 1);
    for (int i = 0; i < 16; i++)
        if (r->order[i] != i || atomic_load(&r->runs[i]) != 1) atomic_fetch_add(&n->bad, 1);
}

static void test_nested_job_runs_here(void **state)
{
    (void)state;
    static nested n;
    int saved = omp_get_max_threads();
    omp_set_num_threads(2);
    memset(&n, 0, sizeof n);
    cpu_pool_run(8, nested_part, &n);
    assert_int_equal(atomic_load(&n.bad), 0);
    omp_set_num_threads(saved);
}

/* Two threads of the program start jobs at once: one holds the pool, the other runs its parts
 * itself; each gets every part of each of its 300 jobs once */
static void *many_jobs(void *arg)
{
    record *r = arg;
    omp_set_num_threads(2);
    long bad = 0;
    for (int j = 0; j < 300; j++) {
        record_reset(r);
        cpu_pool_run(64, note_part, r);
        for (int p = 0; p < 64; p++) bad += atomic_load(&r->runs[p]) != 1;
        bad += atomic_load(&r->wide) != 0;
    }
    return (void *)(intptr_t)bad;
}

static void test_two_callers(void **state)
{
    (void)state;
    static record r[2];
    pthread_t t[2];
    for (int i = 0; i < 2; i++) assert_int_equal(pthread_create(&t[i], NULL, many_jobs, &r[i]), 0);
    for (int i = 0; i < 2; i++) {
        void *bad;
        assert_int_equal(pthread_join(t[i], &bad), 0);
        assert_int_equal((intptr_t)bad, 0);
    }
}

/* In a child forked after the workers started, there are none: the caller runs every part */
static void test_after_fork(void **state)
{
    (void)state;
    static record r;
    int saved = omp_get_max_threads();
    omp_set_num_threads(2);
    record_reset(&r);
    cpu_pool_run(100, note_part, &r); /* the workers exist now */
    assert_each_once(&r, 100);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        record_reset(&r);
        cpu_pool_run(100, note_part, &r);
        int ok = atomic_load(&r.on_caller) == 100 && atomic_load(&r.wide) == 0;
        for (int p = 0; p < 100; p++) ok &= atomic_load(&r.runs[p]) == 1;
        _exit(ok ? 0 : 1);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    omp_set_num_threads(saved);
}

/* More parts than a job takes: all run here, in order */
static _Atomic long big_sum;
static _Atomic int big_next, big_out_of_order;

static void big_part(void *ctx, int p)
{
    (void)ctx;
    if (atomic_fetch_add(&big_next, 1) != p) atomic_fetch_add(&big_out_of_order, 1);
    atomic_fetch_add(&big_sum, p);
}

static void test_too_many_parts_run_here(void **state)
{
    (void)state;
    int saved = omp_get_max_threads();
    omp_set_num_threads(2);
    int parts = CPU_POOL_MAX_PARTS + 1;
    long jobs = cpu_pool_jobs();
    cpu_pool_run(parts, big_part, NULL);
    assert_int_equal(cpu_pool_jobs(), jobs);
    assert_int_equal(atomic_load(&big_out_of_order), 0);
    assert_true(atomic_load(&big_sum) == (long)parts * (parts - 1) / 2);
    omp_set_num_threads(saved);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_part_once),
        cmocka_unit_test(test_nested_job_runs_here),
        cmocka_unit_test(test_two_callers),
        cmocka_unit_test(test_after_fork),
        cmocka_unit_test(test_too_many_parts_run_here),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
