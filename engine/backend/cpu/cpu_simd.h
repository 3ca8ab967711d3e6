/* What lets the CPU backend's hot loops run on the widest vectors the machine has.
 *
 * glibc's libmvec holds vector versions of expf and log1pf, but math.h announces them only
 * under -ffast-math; announcing them here lets `omp simd` loops call them on a whole vector of
 * elements (the build's -fno-math-errno lets the loops that use them vectorise at all).
 *
 * MT_CPU_CLONES compiles a function once per x86-64 level (AVX-512, AVX2, baseline) and picks
 * one when the program starts, so the binary still runs everywhere. It goes on a plain function
 * called from inside an OpenMP region, not on the function holding the region: GCC outlines the
 * region's body before it clones, so the body itself would stay baseline. */
#ifndef MTLAB_CPU_SIMD_H
#define MTLAB_CPU_SIMD_H

#include <math.h>
#include <stddef.h>
#include <string.h>

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
__attribute__((simd("notinbranch"))) float expf(float);
__attribute__((simd("notinbranch"))) float log1pf(float);
#define MT_CPU_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define MT_CPU_CLONES
#endif

/* Elementwise operations hand each thread whole chunks of CPU_CHUNK elements and run every
 * chunk through a cloned `omp simd` function. */
#define CPU_CHUNK ((size_t)4096)

/* the length of the chunk that starts at i0 of n elements */
static inline size_t cpu_chunk_len(size_t i0, size_t n)
{
    return n - i0 < CPU_CHUNK ? n - i0 : CPU_CHUNK;
}

/* Blocked loops keep CPU_LANES channels of a row in a small array. Moving n <= CPU_LANES
 * floats between a row and such an array: a whole block is a copy of fixed size, which the
 * compiler turns into a few vector moves; a copy of variable size is a library call, and at
 * one call per row and block the calls cost more than the work. */
#define CPU_LANES 16

/* lanes[0, n) = src[0, n), lanes[n, CPU_LANES) = 0 */
static inline void cpu_load_lanes(float *restrict lanes, const float *restrict src, int n)
{
    if (n == CPU_LANES) {
        memcpy(lanes, src, CPU_LANES * sizeof *lanes);
    } else {
        memset(lanes, 0, CPU_LANES * sizeof *lanes);
        memcpy(lanes, src, (size_t)n * sizeof *lanes);
    }
}

/* dst[0, n) = lanes[0, n) */
static inline void cpu_store_lanes(float *restrict dst, const float *restrict lanes, int n)
{
    if (n == CPU_LANES) memcpy(dst, lanes, CPU_LANES * sizeof *lanes);
    else memcpy(dst, lanes, (size_t)n * sizeof *lanes);
}

#endif
