/* Host random streams over Philox4x32-10 (engine/math/philox.h): block number `counter` of
 * stream `stream` under key `seed` gives four 32-bit words, handed out in order. */
#include "mtlab/rng.h"
#include "math/philox.h"

#include <math.h>

void mt_rng_init(mt_rng *r, uint64_t seed, uint64_t stream)
{
    r->seed = seed;
    r->stream = stream;
    r->counter = 0;
    r->used = 4;
}

uint32_t mt_rng_u32(mt_rng *r)
{
    if (r->used == 4) {
        mt_philox4x32(r->block, (uint32_t)r->counter, (uint32_t)(r->counter >> 32),
                      (uint32_t)r->stream, (uint32_t)(r->stream >> 32), (uint32_t)r->seed,
                      (uint32_t)(r->seed >> 32));
        r->counter++;
        r->used = 0;
    }
    return r->block[r->used++];
}

float mt_rng_uniform(mt_rng *r) { return mt_u32_to_unit_float(mt_rng_u32(r)); }

double mt_rng_uniform_double(mt_rng *r)
{
    uint64_t hi = mt_rng_u32(r) >> 5, lo = mt_rng_u32(r) >> 6; /* 27 + 26 = 53 bits */
    return (double)(hi * 67108864u + lo) * (1.0 / 9007199254740992.0);
}

/* Box-Muller: sqrt(-2 ln u1) cos(2 pi u2), u1 in (0, 1] so the log is finite */
double mt_rng_normal(mt_rng *r)
{
    double u1 = 1.0 - mt_rng_uniform_double(r), u2 = mt_rng_uniform_double(r);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* Rejection from the largest multiple of n below 2^64 removes the modulo bias. */
uint64_t mt_rng_below(mt_rng *r, uint64_t n)
{
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    for (;;) {
        uint64_t x = (uint64_t)mt_rng_u32(r) << 32 | mt_rng_u32(r);
        if (x < limit) return x % n;
    }
}
