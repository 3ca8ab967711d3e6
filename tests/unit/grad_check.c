/* Finite-difference gradient checks (see grad_check.h). */
#include "grad_check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

void gc_fill(float *x, size_t n, mt_rng *r, float scale)
{
    for (size_t i = 0; i < n; i++) {
        double v = (2.0 * mt_rng_uniform_double(r) - 1.0) * scale;
        x[i] = (float)(round(v * 4096.0) / 4096.0);
    }
}

float *gc_random(size_t n, mt_rng *r, float scale)
{
    float *x = calloc(n ? n : 1, sizeof *x);
    if (!x) abort();
    gc_fill(x, n, r, scale);
    return x;
}

static double stencil_ref(double *xi, gc_loss_fn loss, void *ctx)
{
    double x0 = *xi, f[4];
    const int k[4] = {-2, -1, 1, 2};
    for (int j = 0; j < 4; j++) {
        *xi = x0 + k[j] * GC_STEP;
        f[j] = loss(ctx);
    }
    *xi = x0;
    return (f[0] - 8.0 * f[1] + 8.0 * f[2] - f[3]) / (12.0 * GC_STEP);
}

/* element s of an evenly spread sample of `samples` out of n */
static size_t sample_index(size_t s, size_t samples, size_t n)
{
    return samples == n ? s : (s * n) / samples + (s * 7919) % (n / samples);
}

double gc_rel_error(double *x, size_t n, const float *analytic, gc_loss_fn loss, void *ctx,
                    int max_samples)
{
    size_t samples = n <= (size_t)max_samples ? n : (size_t)max_samples;
    double diff2 = 0.0, fd2 = 0.0;
    for (size_t s = 0; s < samples; s++) {
        size_t i = sample_index(s, samples, n);
        double fd = stencil_ref(&x[i], loss, ctx);
        diff2 += (analytic[i] - fd) * (analytic[i] - fd);
        fd2 += fd * fd;
    }
    return sqrt(diff2) / fmax(sqrt(fd2), 1e-12);
}

int gc_report(const char *suite, const char *name, double rel, double bound)
{
    printf("%s: %-28s relative error %.2e (bound %.0e)\n", suite, name, rel, bound);
    fflush(stdout);
    return rel <= bound;
}
