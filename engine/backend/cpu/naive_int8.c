/* The reference int8 kernel: one int32 dot product per (row, channel), in index order, read
 * through the packed layout's index (cpu_ops.h states what every kernel computes). */
#include "backend/cpu/cpu_ops.h"

void naive_int8_product(const cpu_int8_call *c)
{
    const mt_qmatrix *w = c->w;
    int ld = w->ld;
    for (int m = 0; m < c->M; m++)
        for (int j = 0; j < c->N; j++) {
            int32_t s = 0;
            for (int k = 0; k < ld; k++)
                s += (int32_t)c->xq[(size_t)m * ld + k] *
                     (int32_t)w->q[cpu_int8_at(ld, c->j0 + j, k)];
            float o = (float)s * (c->xs[m] * w->scale[c->j0 + j]);
            if (c->bias) o = o + c->bias[j];
            c->out[(size_t)m * c->ldo + j] = o;
        }
}
