/* What the CUDA operation tests share (test_cuda_ops.c, test_cuda_seq_ops.c): buffers paired on
 * the CPU backend (the reference) and the CUDA one, inputs drawn from a fixed seed (so every run
 * checks the same values; MTLAB_TEST_SEED=S draws others; the seed is printed), outputs poisoned
 * with NaN first so an element a kernel forgets to write fails, and a check that prints its
 * relative error max|gpu - cpu| / max(max|cpu|, 1) against its bound: fp32 below 1e-5, bf16
 * matrix products below 1e-2. Without a device every test skips with the reason (cuda_check.h).
 * Header-only: each test program has its own backends and generator. */
#ifndef MTLAB_TEST_CUDA_PAIRS_H
#define MTLAB_TEST_CUDA_PAIRS_H

#include "test_util.h"
#include "cuda_check.h"

#include "mtlab/rng.h"

#define TOL_FP32 1e-5
#define TOL_BF16 1e-2

static const mt_backend *cpu, *gpu;
static mt_rng rng;

/* ---------------------------------------------------------------- paired buffers
 * h: the CPU side (host memory), d: the same values in CUDA memory. */
typedef struct {
    float *h, *d;
    size_t n;
} pair;

static inline pair make(size_t n)
{
    pair p = {.h = malloc((n ? n : 1) * sizeof(float)),
              .d = gpu->alloc((n ? n : 1) * sizeof(float)),
              .n = n};
    assert_non_null(p.h);
    assert_non_null(p.d);
    return p;
}

static inline void push(pair p) { gpu->upload(p.d, p.h, p.n * sizeof(float)); }

/* U(-scale, scale) on both sides */
static inline pair rnd(size_t n, float scale)
{
    pair p = make(n);
    for (size_t i = 0; i < n; i++) p.h[i] = scale * (2.0f * mt_rng_uniform(&rng) - 1.0f);
    push(p);
    return p;
}

/* NaN on both sides: an output every element of which the operation must write */
static inline pair poison(size_t n)
{
    pair p = make(n);
    for (size_t i = 0; i < n; i++) p.h[i] = NAN;
    push(p);
    return p;
}

static inline void drop(pair p)
{
    free(p.h);
    gpu->free(p.d);
}

/* max|gpu - cpu| / max(max|cpu|, 1); infinite when NaN appears on one side only */
static inline double diff(pair p)
{
    float *g = malloc((p.n ? p.n : 1) * sizeof *g);
    gpu->download(g, p.d, p.n * sizeof *g);
    double d = 0.0, s = 1.0;
    for (size_t i = 0; i < p.n; i++) {
        if (isnan(g[i]) != isnan(p.h[i])) {
            d = INFINITY;
            break;
        }
        if (isnan(g[i])) continue;
        d = fmax(d, fabs((double)g[i] - p.h[i]));
        s = fmax(s, fabs((double)p.h[i]));
    }
    free(g);
    return d / s;
}

/* 1 when n floats at two device addresses hold the same bits */
static inline int same_bits(const float *a, const float *b, size_t n)
{
    float *x = malloc((n ? n : 1) * sizeof *x), *y = malloc((n ? n : 1) * sizeof *y);
    assert_non_null(x);
    assert_non_null(y);
    gpu->download(x, a, n * sizeof *x);
    gpu->download(y, b, n * sizeof *y);
    int same = memcmp(x, y, n * sizeof *x) == 0;
    free(x), free(y);
    return same;
}

typedef struct {
    int32_t *h, *d;
    size_t n;
} ipair;

static inline ipair ids(size_t n, int below)
{
    ipair p = {.h = malloc((n ? n : 1) * sizeof(int32_t)),
               .d = gpu->alloc((n ? n : 1) * sizeof(int32_t)),
               .n = n};
    assert_non_null(p.d);
    for (size_t i = 0; i < n; i++) p.h[i] = (int32_t)mt_rng_below(&rng, (uint64_t)below);
    gpu->upload(p.d, p.h, n * sizeof(int32_t));
    return p;
}

static inline void idrop(ipair p)
{
    free(p.h);
    gpu->free(p.d);
}

typedef struct {
    uint8_t *h, *d;
    size_t n;
} mpair;

/* a padding mask: about one element in four is 0 */
static inline mpair mask(size_t n)
{
    mpair p = {.h = malloc(n ? n : 1), .d = gpu->alloc(n ? n : 1), .n = n};
    assert_non_null(p.d);
    for (size_t i = 0; i < n; i++) p.h[i] = mt_rng_below(&rng, 4) != 0;
    gpu->upload(p.d, p.h, n);
    return p;
}

static inline void mdrop(mpair p)
{
    free(p.h);
    gpu->free(p.d);
}

static inline void report(const char *what, double rel, double tol)
{
    print_message("  %-58s relative error %.3g (bound %.0e)\n", what, rel, tol);
    if (!(rel <= tol)) fail_msg("%s: relative error %.3g above %.0e", what, rel, tol);
}

static inline int cuda_pairs_setup(void **state)
{
    (void)state;
    cpu = mt_backend_cpu();
    const char *s = getenv("MTLAB_TEST_SEED");
    uint64_t seed = s ? strtoull(s, NULL, 10) : 1;
    print_message("seed %llu (MTLAB_TEST_SEED=S draws other inputs)\n", (unsigned long long)seed);
    mt_rng_init(&rng, seed, 0);
    return 0;
}

/* Every test starts here: the fp32 backend, or a skip without a device. */
#define NEED_GPU()                            \
    do {                                      \
        (void)state;                          \
        if (!(gpu = cuda_or_skip(0))) return; \
    } while (0)

#endif
