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

#endif
