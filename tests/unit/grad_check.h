/* Finite-difference gradient checks shared by the layer tests, entirely in double precision.
 * A test writes a double-precision reference of the layer's forward (from the formulas, not
 * from the C under test) and wraps "run the reference and return L = sum_i r_i out_i" (r fixed
 * random weights) in a gc_loss_fn. The fp32 layer's backward, run with dout = r, gives the
 * analytic gradient; gc_rel_error compares it with the fourth-order central stencil
 *   f'(x) ~ (f(x - 2h) - 8 f(x - h) + 8 f(x + h) - f(x + 2h)) / (12 h),   h = 2^-10,
 * on elements of one double input or parameter. The stencil's truncation (O(h^4)) and
 * rounding are ~1e-12, so what a check measures is the fp32 backward's own error.
 * Inputs are drawn on a 2^-12 grid (gc_fill), so fp32 and double hold identical values. */
#ifndef MTLAB_GRAD_CHECK_H
#define MTLAB_GRAD_CHECK_H

#include <stddef.h>

#include "mtlab/rng.h"

typedef double (*gc_loss_fn)(void *ctx);

/* x[i] = U(-scale, scale) rounded to a multiple of 2^-12 */
void gc_fill(float *x, size_t n, mt_rng *r, float scale);
/* calloc'd n floats filled by gc_fill (aborts when out of memory) */
float *gc_random(size_t n, mt_rng *r, float scale);
#define GC_STEP (1.0 / 1024.0)

/* ||analytic - fd|| / max(||fd||, 1e-12) over up to max_samples elements of x (all when
 * n <= max_samples, else an evenly spread sample); loss(ctx) must read x. x is restored. */
double gc_rel_error(double *x, size_t n, const float *analytic, gc_loss_fn loss, void *ctx,
                    int max_samples);
/* Prints "name: relative error E (bound B)" and returns E <= bound. */
int gc_report(const char *suite, const char *name, double rel, double bound);

#endif
