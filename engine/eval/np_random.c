/* NumPy's default_rng, choice, boolean integers and sum (np_random.h says which parts and how). */
#include "eval/np_random.h"

typedef unsigned __int128 u128;

/* PCG64's multiplier, 2549297995355413924 * 2^64 + 4865540595714422341 */
static const u128 PCG_MULT = ((u128)2549297995355413924ULL << 64) | 4865540595714422341ULL;

static void pcg_step(mt_np_rng *g) { g->state = g->state * PCG_MULT + g->inc; }

/* XSL-RR: the halves xored, rotated right by the state's top six bits */
static uint64_t pcg_output(u128 s)
{
    uint64_t v = (uint64_t)(s >> 64) ^ (uint64_t)s;
    unsigned rot = (unsigned)(s >> 122);
    return (v >> rot) | (v << ((-rot) & 63u));
}

/* SeedSequence's constants */
#define SS_INIT_A 0x43b0d7e5u
#define SS_MULT_A 0x931e8875u
#define SS_INIT_B 0x8b51f9ddu
#define SS_MULT_B 0x58f38dedu
#define SS_MIX_L 0xca01f9ddu
#define SS_MIX_R 0x4973f715u
#define SS_POOL 4

static uint32_t ss_hashmix(uint32_t v, uint32_t *h)
{
    v ^= *h;
    *h *= SS_MULT_A;
    v *= *h;
    return v ^ (v >> 16);
}

static uint32_t ss_mix(uint32_t x, uint32_t y)
{
    uint32_t r = SS_MIX_L * x - SS_MIX_R * y;
    return r ^ (r >> 16);
}

void mt_np_rng_seed(mt_np_rng *g, uint64_t seed)
{
    /* the seed as little-endian 32-bit words (one word when it fits) */
    uint32_t entropy[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    int n_entropy = seed >> 32 ? 2 : 1;
    uint32_t pool[SS_POOL], h = SS_INIT_A;
    for (int i = 0; i < SS_POOL; i++) pool[i] = ss_hashmix(i < n_entropy ? entropy[i] : 0, &h);
    for (int src = 0; src < SS_POOL; src++)
        for (int dst = 0; dst < SS_POOL; dst++)
            if (src != dst) pool[dst] = ss_mix(pool[dst], ss_hashmix(pool[src], &h));
    /* generate_state(4, uint64): eight words cycling over the pool, paired little-endian */
    uint32_t words[8];
    uint32_t hb = SS_INIT_B;
    for (int i = 0; i < 8; i++) {
        uint32_t d = pool[i % SS_POOL] ^ hb;
        hb *= SS_MULT_B;
        d *= hb;
        words[i] = d ^ (d >> 16);
    }
    uint64_t v[4];
    for (int i = 0; i < 4; i++) v[i] = (uint64_t)words[2 * i] | ((uint64_t)words[2 * i + 1] << 32);
    u128 init = ((u128)v[0] << 64) | v[1], seq = ((u128)v[2] << 64) | v[3];
    g->state = 0;
    g->inc = (seq << 1) | 1;
    pcg_step(g);
    g->state += init;
    pcg_step(g);
    g->has_u32 = 0;
    g->u32 = 0;
}

uint64_t mt_np_next_u64(mt_np_rng *g)
{
    pcg_step(g);
    return pcg_output(g->state);
}

uint32_t mt_np_next_u32(mt_np_rng *g)
{
    if (g->has_u32) {
        g->has_u32 = 0;
        return g->u32;
    }
    uint64_t x = mt_np_next_u64(g);
    g->has_u32 = 1;
    g->u32 = (uint32_t)(x >> 32);
    return (uint32_t)x;
}

void mt_np_choice(mt_np_rng *g, uint32_t n, uint32_t *out, size_t cnt)
{
    if (n <= 1) {
        for (size_t i = 0; i < cnt; i++) out[i] = 0;
        return;
    }
    /* Lemire: the high word of draw * n, rejecting low words below (2^32 - n) mod n */
    const uint32_t threshold = (uint32_t)(-n) % n;
    for (size_t i = 0; i < cnt; i++) {
        uint64_t m = (uint64_t)mt_np_next_u32(g) * n;
        if ((uint32_t)m < n)
            while ((uint32_t)m < threshold) m = (uint64_t)mt_np_next_u32(g) * n;
        out[i] = (uint32_t)(m >> 32);
    }
}

void mt_np_booleans(mt_np_rng *g, unsigned char *out, size_t cnt)
{
    uint32_t buf = 0;
    int left = 0;
    for (size_t i = 0; i < cnt; i++) {
        if (!left) {
            buf = mt_np_next_u32(g);
            left = 31;
        } else {
            buf >>= 1;
            left--;
        }
        out[i] = (unsigned char)(buf & 1u);
    }
}

/* numpy's pairwise_sum, one definition for both element types */
#define NP_PAIRWISE_SUM(name, T)                                                       \
    T name(const T *a, size_t n)                                                       \
    {                                                                                  \
        if (n < 8) {                                                                   \
            T r = 0;                                                                   \
            for (size_t i = 0; i < n; i++) r += a[i];                                  \
            return r;                                                                  \
        }                                                                              \
        if (n <= 128) {                                                                \
            T r[8];                                                                    \
            size_t i;                                                                  \
            for (int j = 0; j < 8; j++) r[j] = a[j];                                   \
            for (i = 8; i < n - n % 8; i += 8)                                         \
                for (int j = 0; j < 8; j++) r[j] += a[i + j];                          \
            T res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7])); \
            for (; i < n; i++) res += a[i];                                            \
            return res;                                                                \
        }                                                                              \
        size_t half = n / 2;                                                           \
        half -= half % 8;                                                              \
        return name(a, half) + name(a + half, n - half);                               \
    }

NP_PAIRWISE_SUM(mt_np_sum, double)
NP_PAIRWISE_SUM(mt_np_sum_f32, float)
