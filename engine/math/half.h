/* 16-bit floating-point formats <-> fp32, shared by the bundle reader/writer and the CUDA
 * kernels (MT_HD: __host__ __device__ under nvcc).
 *
 *   fp16 (IEEE binary16): sign 1 | exponent 5 (bias 15) | mantissa 10
 *   bf16 (bfloat16):      sign 1 | exponent 8 (bias 127) | mantissa 7 = the top half of an fp32
 *
 * fp32 -> 16 bits rounds to nearest, ties to even (as numpy, torch and the F16C instructions).
 * NaNs keep their sign and the top bits of their payload, so every 16-bit pattern survives
 * 16 -> fp32 -> 16 unchanged; a NaN whose kept payload would be 0 (and so read as infinity)
 * becomes the quiet NaN of its sign. */
#ifndef MTLAB_HALF_H
#define MTLAB_HALF_H

#include <stdint.h>
#include <string.h>

#include "math/elementwise.h"

MT_HD uint32_t mt_f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

MT_HD float mt_f32_from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* value = (-1)^s * 2^(e-15) * 1.m        for 0 < e < 31
 *       = (-1)^s * 2^-24 * m             for e = 0 (subnormal: exact in fp32)
 *       = inf / NaN (payload m << 13)    for e = 31 */
MT_HD float mt_f16_to_f32(uint16_t h)
{
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1Fu;
    const uint32_t mant = h & 0x3FFu;
    if (exp == 0x1Fu) return mt_f32_from_bits(sign | 0x7F800000u | mant << 13);
    if (exp != 0) return mt_f32_from_bits(sign | (exp + (127 - 15)) << 23 | mant << 13);
    const float magnitude = (float)mant * 0x1p-24f;
    return sign ? -magnitude : magnitude;
}

/* Keep the bits of the fp16 result, round on the dropped ones:
 *   dropped > half an ulp, or == half an ulp with an odd result -> add one ulp
 * (a carry out of the mantissa correctly bumps the exponent, up to infinity). */
MT_HD uint16_t mt_f32_to_f16(float f)
{
    const uint32_t u = mt_f32_bits(f);
    const uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    const uint32_t exp = (u >> 23) & 0xFFu;
    const uint32_t mant = u & 0x7FFFFFu;
    if (exp == 0xFFu) {
        if (mant == 0) return (uint16_t)(sign | 0x7C00u);
        const uint32_t payload = mant >> 13;
        return (uint16_t)(sign | 0x7C00u | (payload ? payload : 0x200u));
    }
    const int e = (int)exp - 127 + 15; /* fp16 biased exponent */
    if (e >= 31) return (uint16_t)(sign | 0x7C00u);
    if (e <= 0) {
        /* below 2^-25 (half the smallest subnormal) everything rounds to zero; 2^-25 itself is
         * a tie that goes to the even result, zero */
        if (e < -10) return sign;
        /* f = m * 2^(exp-150) with the implicit bit; in units of 2^-24: m >> (14 - e) */
        const uint32_t m = mant | 0x800000u;
        const int shift = 14 - e;
        uint32_t h = m >> shift;
        const uint32_t dropped = m & ((1u << shift) - 1);
        const uint32_t halfway = 1u << (shift - 1);
        if (dropped > halfway || (dropped == halfway && (h & 1u))) h++;
        return (uint16_t)(sign | h);
    }
    uint32_t h = (uint32_t)e << 10 | mant >> 13;
    const uint32_t dropped = mant & 0x1FFFu;
    if (dropped > 0x1000u || (dropped == 0x1000u && (h & 1u))) h++;
    return (uint16_t)(sign | h);
}

MT_HD float mt_bf16_to_f32(uint16_t b) { return mt_f32_from_bits((uint32_t)b << 16); }

/* Adding 0x7FFF plus the lowest kept bit to the fp32 pattern rounds the top half to nearest,
 * ties to even; overflow of the largest finite values carries into infinity, as it should. */
MT_HD uint16_t mt_f32_to_bf16(float f)
{
    const uint32_t u = mt_f32_bits(f);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) {
        const uint16_t top = (uint16_t)(u >> 16);
        return (top & 0x7Fu) ? top : (uint16_t)(top | 0x40u);
    }
    return (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

#endif
