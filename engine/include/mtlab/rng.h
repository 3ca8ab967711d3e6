/* Seeded, reproducible random numbers for initialisation, sampling and data shuffling.
 * A stream is (seed, stream id, counter) over the counter-based Philox4x32-10 generator that
 * dropout also uses (engine/math/philox.h): the same seed and stream give the same numbers on
 * every machine, and different stream ids (one per layer, per data loader ...) never overlap. */
#ifndef MTLAB_RNG_H
#define MTLAB_RNG_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint64_t seed;
    uint64_t stream;
    uint64_t counter; /* number of Philox blocks drawn so far */
    uint32_t block[4];
    int used; /* words of block already handed out (4 = empty) */
} mt_rng;

void mt_rng_init(mt_rng *r, uint64_t seed, uint64_t stream);
uint32_t mt_rng_u32(mt_rng *r);
/* uniform in [0, 1), 24 random bits */
float mt_rng_uniform(mt_rng *r);
/* uniform in [0, 1), 53 random bits */
double mt_rng_uniform_double(mt_rng *r);
/* standard normal (Box-Muller in double precision) */
double mt_rng_normal(mt_rng *r);
/* uniform integer in [0, n), n > 0, without modulo bias */
uint64_t mt_rng_below(mt_rng *r, uint64_t n);

#endif
