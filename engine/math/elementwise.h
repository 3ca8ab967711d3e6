/* Per-element math shared by the CPU backend and the CUDA kernels.
 * Under nvcc these compile as __host__ __device__ functions, so the CPU unit tests exercise
 * exactly the code the GPU runs. Keep every formula here in fp32. */
#ifndef MTLAB_ELEMENTWISE_H
#define MTLAB_ELEMENTWISE_H

#include <math.h>

#ifdef __CUDACC__
#define MT_HD __host__ __device__ __forceinline__
#else
/* always inlined, as __forceinline__ on the device: a loop around a call vectorises only with
 * the body in it, and GCC's -O2 left a large one out (Philox, philox.h: the dropout loop ran
 * one block at a time) */
#define MT_HD static inline __attribute__((always_inline))
#endif

/* sigmoid(x) = 1 / (1 + e^-x) */
MT_HD float mt_sigmoidf(float x) { return 1.0f / (1.0f + expf(-x)); }

/* SiLU(x) = x * sigmoid(x) */
MT_HD float mt_siluf(float x) { return x * mt_sigmoidf(x); }

/* d/dx SiLU(x) = s * (1 + x * (1 - s)), s = sigmoid(x) */
MT_HD float mt_silu_gradf(float x)
{
    float s = mt_sigmoidf(x);
    return s * (1.0f + x * (1.0f - s));
}

/* softplus(x) = log(1 + e^x), linear above 20 (the threshold torch and mamba_ssm use).
 * Both sides are computed and one selected, with no branch, so CPU `omp simd` loops can run it
 * on vectors. */
MT_HD float mt_softplusf(float x)
{
    float below = log1pf(expf(x < 20.0f ? x : 20.0f));
    return x <= 20.0f ? below : x;
}

/* d/dx softplus(x) = sigmoid(x) (1 above the threshold) */
MT_HD float mt_softplus_gradf(float x) { return x <= 20.0f ? mt_sigmoidf(x) : 1.0f; }

#endif
