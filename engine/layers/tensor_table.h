/* Filling tensor tables (mt_tensor_spec) inside engine/layers/. */
#ifndef MTLAB_TENSOR_TABLE_H
#define MTLAB_TENSOR_TABLE_H

#include "mtlab/layers.h"

/* specs[*n] = {prefix + suffix, shape (d0, d1, d2) with ndim dims, decay}; *n += 1 */
void tensor_table_add(mt_tensor_spec *specs, int *n, const char *prefix, const char *suffix,
                      int decay, int ndim, int d0, int d1, int d2);

/* *slot = *base (or NULL when present is 0); *base += count when present */
void tensor_table_take(float **slot, float **base, size_t count, int present);

#endif
