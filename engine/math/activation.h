/* Pointwise activations and their derivatives, by mt_act kind (mtlab/backend.h), shared by the
 * CPU backend and the CUDA kernels on top of the primitives in elementwise.h. */
#ifndef MTLAB_ACTIVATION_H
#define MTLAB_ACTIVATION_H

#include "math/elementwise.h"
#include "mtlab/backend.h"

/* ReLU(x) = max(x, 0); its derivative is taken as 0 at x = 0 (as torch) */
MT_HD float mt_reluf(float x) { return x > 0.0f ? x : 0.0f; }
MT_HD float mt_relu_gradf(float x) { return x > 0.0f ? 1.0f : 0.0f; }

/* GELU(x) = x * Phi(x) = x/2 * (1 + erf(x / sqrt 2)) */
MT_HD float mt_geluf(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f)); }

/* d/dx GELU(x) = Phi(x) + x * phi(x), phi(x) = exp(-x^2/2) / sqrt(2 pi) */
MT_HD float mt_gelu_gradf(float x)
{
    float cdf = 0.5f * (1.0f + erff(x * 0.70710678118654752f));
    return cdf + x * 0.39894228040143268f * expf(-0.5f * x * x);
}

/* tanh, and d/dx tanh(x) = 1 - tanh(x)^2 */
MT_HD float mt_tanh_gradf(float x)
{
    float t = tanhf(x);
    return 1.0f - t * t;
}

MT_HD float mt_actf(mt_act act, float x)
{
    switch (act) {
    case MT_ACT_RELU: return mt_reluf(x);
    case MT_ACT_SILU: return mt_siluf(x);
    case MT_ACT_SOFTPLUS: return mt_softplusf(x);
    case MT_ACT_GELU: return mt_geluf(x);
    case MT_ACT_TANH: return tanhf(x);
    }
    return x;
}

MT_HD float mt_act_gradf(mt_act act, float x)
{
    switch (act) {
    case MT_ACT_RELU: return mt_relu_gradf(x);
    case MT_ACT_SILU: return mt_silu_gradf(x);
    case MT_ACT_SOFTPLUS: return mt_softplus_gradf(x);
    case MT_ACT_GELU: return mt_gelu_gradf(x);
    case MT_ACT_TANH: return mt_tanh_gradf(x);
    }
    return 1.0f;
}

#endif
