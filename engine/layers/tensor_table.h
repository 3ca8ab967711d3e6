/* Filling tensor tables (mt_tensor_spec) inside engine/layers/. */
#ifndef MTLAB_TENSOR_TABLE_H
#define MTLAB_TENSOR_TABLE_H

#include "mtlab/layers.h"

/* A tensor's shape: ndim dims, those past ndim 1. */
typedef struct {
    int ndim;
    int d[3];
} tensor_shape;
#define TENSOR_SHAPE1(d0) ((tensor_shape){1, {(d0), 1, 1}})
#define TENSOR_SHAPE2(d0, d1) ((tensor_shape){2, {(d0), (d1), 1}})
#define TENSOR_SHAPE3(d0, d1, d2) ((tensor_shape){3, {(d0), (d1), (d2)}})

/* specs[*n] = {prefix + suffix, shape, decay}; *n += 1 */
void tensor_table_add(mt_tensor_spec *specs, int *n, const char *prefix, const char *suffix,
                      int decay, tensor_shape shape);

/* *slot = *base (or NULL when present is 0); *base += count when present */
void tensor_table_take(float **slot, float **base, size_t count, int present);

/* One pass over a layer's tensors, listed once in one function of the layer: each
 * tensor_walk_row adds the tensor's spec (when specs is set), counts its floats, and points its
 * slot into the parameter block (when base is set). The layer's tensors(), params_count() and
 * params_point() are that one list walked three ways. */
typedef struct {
    mt_tensor_spec *specs; /* or NULL */
    int n; /* tensors walked */
    size_t count; /* floats walked */
    float *base; /* the next tensor's place in the block, or NULL */
} tensor_walk;

void tensor_walk_row(tensor_walk *w, float **slot, const char *prefix, const char *suffix,
                     int decay, tensor_shape shape);
/* The same for a tensor the configuration may leave out (a bias): absent, its slot is NULL. */
void tensor_walk_optional(tensor_walk *w, int present, float **slot, const char *prefix,
                          const char *suffix, int decay, tensor_shape shape);

#endif
