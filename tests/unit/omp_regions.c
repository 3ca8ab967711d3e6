/* GOMP_parallel wrapped to count regions (omp_regions.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* RTLD_NEXT */
#endif
#include "omp_regions.h"
#include "backend/cpu/cpu_pool.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

static long regions;

typedef void (*gomp_parallel_fn)(void (*)(void *), void *, unsigned, unsigned);
void GOMP_parallel(void (*fn)(void *), void *data, unsigned num_threads, unsigned flags);
void GOMP_parallel(void (*fn)(void *), void *data, unsigned num_threads, unsigned flags)
{
    static gomp_parallel_fn real;
    if (!real) {
        void *sym = dlsym(RTLD_NEXT, "GOMP_parallel");
        if (!sym) abort();
        memcpy(&real, &sym, sizeof real);
    }
    __atomic_add_fetch(&regions, 1, __ATOMIC_RELAXED);
    real(fn, data, num_threads, flags);
}

long omp_regions(void) { return __atomic_load_n(&regions, __ATOMIC_RELAXED); }

long thread_teams(void) { return omp_regions() + cpu_pool_jobs(); }
