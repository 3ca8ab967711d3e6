/* A model's training state: the gradient block (allocated at the first backward) and the
 * AdamW moments with their weight-decay mask, and the AdamW step over them. */
#include "models/model_internal.h"

#include <stdlib.h>
#include <string.h>

#include "mtlab/error.h"

float *mt_model_grads(mt_model *m)
{
    if (!m->grads) {
        m->grads = m->be->alloc(m->n_floats * sizeof(float));
        if (!m->grads) return NULL;
        mt_model_bind_stack(m, &m->enc, m->grads, 1);
        mt_model_bind_stack(m, &m->dec, m->grads, 1);
    }
    return m->grads;
}

/* The floats of unit u's tensors: its mixer's, then its norm's, consecutive in the table. */
static void unit_grad_range(const mt_model *m, const mt_unit *u, size_t *lo, size_t *hi)
{
    int last = u->norm_tensor + (u->norm == MT_NORM_LAYER ? 1 : 0);
    *lo = m->tensors[u->first_tensor].offset;
    *hi = m->tensors[last].offset + m->tensors[last].numel;
}

int mt_model_grad_ranges(const mt_model *m, size_t *lo, size_t *hi, int cap)
{
    const mt_stack *stacks[2] = {&m->dec, &m->enc};
    int n = 0;
    for (int k = 0; k < 2; k++)
        for (int i = stacks[k]->n_units - 1; i >= 0; i--, n++)
            if (n < cap) unit_grad_range(m, &stacks[k]->units[i], &lo[n], &hi[n]);
    return n;
}

void mt_model_zero_grad(mt_model *m)
{
    if (m->grads) m->be->memzero(m->grads, m->n_floats * sizeof(float));
}

float *mt_model_adam_moments(mt_model *m, float **second)
{
    const mt_backend *be = m->be;
    if (!m->adam) {
        m->adam = be->alloc(2 * m->n_floats * sizeof(float));
        m->decay_mask = be->alloc(m->n_floats);
        if (!m->adam || !m->decay_mask) return NULL;
        uint8_t *mask = mt_xcalloc(m->n_floats, 1);
        for (int i = 0; i < m->n_tensors; i++)
            if (m->tensors[i].decay && !m->tensors[i].buffer)
                memset(mask + m->tensors[i].offset, 1, m->tensors[i].numel);
        be->upload(m->decay_mask, mask, m->n_floats);
        free(mask);
    }
    if (second) *second = m->adam + m->n_floats;
    return m->adam;
}

int mt_model_adamw_step(mt_model *m, const mt_adamw_hparams *h, int step)
{
    if (step < 1) return mt_error("AdamW step %d: steps count from 1", step);
    mt_model_drop_fp32_panels(m);
    if (!mt_model_grads(m)) return -1;
    const mt_backend *be = m->be;
    if (!mt_model_adam_moments(m, NULL)) return -1;
    be->adamw_step(m->params, m->grads, m->adam, m->adam + m->n_floats, m->decay_mask, m->n_floats,
                   h, step);
    return 0;
}
