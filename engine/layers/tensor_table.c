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
                      int decay, int ndim, int d0, int d1, int d2)
{
    mt_tensor_spec *s = &specs[(*n)++];
    snprintf(s->name, sizeof s->name, "%s%s", prefix, suffix);
    s->ndim = ndim;
    s->shape[0] = d0, s->shape[1] = d1, s->shape[2] = d2;
    for (int i = ndim; i < 3; i++) s->shape[i] = 1;
    s->decay = decay;
}

void tensor_table_take(float **slot, float **base, size_t count, int present)
{
    *slot = present ? *base : NULL;
    if (present) *base += count;
}

void tensor_walk_row(tensor_walk *w, float **slot, const char *prefix, const char *suffix,
                     int decay, int ndim, int d0, int d1, int d2)
{
    size_t count = (size_t)d0 * (size_t)(ndim > 1 ? d1 : 1) * (size_t)(ndim > 2 ? d2 : 1);
    if (w->specs) tensor_table_add(w->specs, &w->n, prefix, suffix, decay, ndim, d0, d1, d2);
    else w->n++;
    w->count += count;
    if (w->base) {
        *slot = w->base;
        w->base += count;
    }
}

void tensor_walk_optional(tensor_walk *w, int present, float **slot, const char *prefix,
                          const char *suffix, int decay, int ndim, int d0, int d1, int d2)
{
    if (present) tensor_walk_row(w, slot, prefix, suffix, decay, ndim, d0, d1, d2);
    else if (w->base) *slot = NULL;
}
