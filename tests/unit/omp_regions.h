/* OpenMP regions entered so far by this process, counted by wrapping libgomp's GOMP_parallel,
 * which every `omp parallel` (an `if (0)` one and a team of one included) compiles to. The
 * wrapper is linked into every unit test and passes each call on unchanged; test_cpu_regions
 * and test_int8 read the count before and after an operation. thread_teams adds the jobs the
 * CPU backend's own pool handed to its workers (backend/cpu/cpu_pool.h): every time the work
 * of one operation was shared among threads, either way. */
#ifndef MTLAB_TESTS_OMP_REGIONS_H
#define MTLAB_TESTS_OMP_REGIONS_H

long omp_regions(void);
long thread_teams(void);

#endif
