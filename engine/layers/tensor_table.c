/* Tensor tables: the names, shapes and weight-decay flags of a layer's parameters, in the
 * order they sit in the parameter block. */
#include "layers/tensor_table.h"

#include <stdio.h>

size_t mt_tensor_numel(const mt_tensor_spec *t)
{
    size_t n = 1;
    for (int i = 0; i < t->ndim; i++) n *= (size_t)t->shape[i];
    return n;
}

size_t mt_tensors_numel(const mt_tensor_spec *specs, int n)
{
    size_t total = 0;
    for (int i = 0; i < n; i++) total += mt_tensor_numel(&specs[i]);
    return total;
}

void mt_tensors_decay_mask(uint8_t *mask, const mt_tensor_spec *specs, int n)
{
    for (int i = 0; i < n; i++) {
        size_t count = mt_tensor_numel(&specs[i]);
        for (size_t j = 0; j < count; j++) mask[j] = (uint8_t)(specs[i].decay != 0);
        mask += count;
    }
}

void tensor_table_add(mt_tensor_spec *specs, int *n, const char *prefix, const char *suffix,
                      int decay, tensor_shape shape)
{
    mt_tensor_spec *s = &specs[(*n)++];
    snprintf(s->name, sizeof s->name, "%s%s", prefix, suffix);
    s->ndim = shape.ndim;
    for (int i = 0; i < 3; i++) s->shape[i] = i < shape.ndim ? shape.d[i] : 1;
    s->decay = decay;
}

void tensor_table_take(float **slot, float **base, size_t count, int present)
{
    *slot = present ? *base : NULL;
    if (present) *base += count;
}

void tensor_walk_row(tensor_walk *w, float **slot, const char *prefix, const char *suffix,
                     int decay, tensor_shape shape)
{
    size_t count = 1;
    for (int i = 0; i < shape.ndim; i++) count *= (size_t)shape.d[i];
    if (w->specs) tensor_table_add(w->specs, &w->n, prefix, suffix, decay, shape);
    else w->n++;
    w->count += count;
    if (w->base) {
        *slot = w->base;
        w->base += count;
    }
}

void tensor_walk_optional(tensor_walk *w, int present, float **slot, const char *prefix,
                          const char *suffix, int decay, tensor_shape shape)
{
    if (present) tensor_walk_row(w, slot, prefix, suffix, decay, shape);
    else if (w->base) *slot = NULL;
}
