/* Timing helpers and the memory-bandwidth measurement the decode roofline divides by. */
#include "bench/bench.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mtlab/clock.h"
#include "mtlab/error.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bench_median(double *v, int n)
{
    if (n <= 0) return 0.0;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Each thread copies its own contiguous slice, as the decoder's threads each stream their
 * share of a weight matrix. */
static void parallel_copy(char *dst, const char *src, size_t bytes)
{
#pragma omp parallel
    {
        size_t threads = (size_t)omp_get_num_threads(), t = (size_t)omp_get_thread_num();
        size_t slice = (bytes / threads + 63) / 64 * 64;
        size_t lo = t * slice < bytes ? t * slice : bytes;
        size_t hi = lo + slice < bytes ? lo + slice : bytes;
        if (hi > lo) memcpy(dst + lo, src + lo, hi - lo);
    }
}

/* STREAM's convention: a copy moves each byte twice (read once, written once). */
double bench_copy_bandwidth(size_t bytes, int repeat)
{
    char *src = mt_xmalloc(bytes), *dst = mt_xmalloc(bytes);
    memset(src, 1, bytes); /* fault every page in before timing */
    memset(dst, 0, bytes);
    parallel_copy(dst, src, bytes);
    double *t = mt_xmalloc((size_t)repeat * sizeof *t);
    for (int i = 0; i < repeat; i++) {
        double t0 = mt_now_s();
        parallel_copy(dst, src, bytes);
        t[i] = mt_now_s() - t0;
    }
    double median = bench_median(t, repeat);
    free(t);
    free(src);
    free(dst);
    return median > 0 ? 2.0 * (double)bytes / median : 0.0;
}

size_t bench_l3_bytes(void)
{
    FILE *f = fopen("/sys/devices/system/cpu/cpu0/cache/index3/size", "r");
    if (!f) return 0;
    unsigned long long v = 0;
    char unit = 0;
    int got = fscanf(f, "%llu%c", &v, &unit);
    fclose(f);
    if (got < 1) return 0;
    if (unit == 'K') v <<= 10;
    else if (unit == 'M') v <<= 20;
    return (size_t)v;
}
