/* fp32, int8 or bf16 linear layers for a model (mtlab/model.h, docs/quantization.md §3). In int8
 * or bf16 the model runs on a copy of its backend whose qweights lists the low-precision
 * matrices, so every linear layer of every architecture (prefill and step, the output
 * projection too) finds them through mt_linear_forward, and nothing above the layers changes. */
#include "models/model_internal.h"

#include <string.h>

#include "mtlab/error.h"

int mt_precision_parse(const char *name, mt_precision *out)
{
    if (name && !strcmp(name, "fp32")) *out = MT_PRECISION_FP32;
    else if (name && !strcmp(name, "int8")) *out = MT_PRECISION_INT8;
    else if (name && !strcmp(name, "bf16")) *out = MT_PRECISION_BF16;
    else return mt_error("unknown precision '%s' (fp32, int8 or bf16)", name ? name : "");
    return 0;
}

const char *mt_precision_name(mt_precision p)
{
    return p == MT_PRECISION_INT8 ? "int8" : p == MT_PRECISION_BF16 ? "bf16" : "fp32";
}

/* The matrices linear layers multiply by: every 2-D ".weight" that is not a token embedding,
 * and the embedding the output projection reads when it is tied to it. Norm gains are 1-D;
 * Mamba's A_log, 2-D, is no ".weight"; Marian's positions are no tensor of the block. */
static int is_linear_weight(const mt_model *m, int i)
{
    const mt_named_tensor *t = &m->tensors[i];
    size_t len = strlen(t->name);
    if (t->ndim != 2 || t->buffer || len < 7 || strcmp(t->name + len - 7, ".weight")) return 0;
    if (i == m->enc.embed_tensor || i == m->dec.embed_tensor) return 0;
    if (i == m->embed_tensor) return m->lm_head_tensor < 0;
    return 1;
}

int mt_model_set_precision(mt_model *m, mt_precision p)
{
    if (p == m->precision) return 0;
    if (p != MT_PRECISION_FP32) {
        mt_qkind kind = p == MT_PRECISION_BF16 ? MT_QMATRIX_BF16 : MT_QMATRIX_INT8;
        mt_qweights *qw = mt_qweights_new(m->base_be);
        for (int i = 0; i < m->n_tensors; i++) {
            if (!is_linear_weight(m, i)) continue;
            const mt_named_tensor *t = &m->tensors[i];
            if (mt_qweights_add(qw, kind, m->params + t->offset, t->shape[0], t->shape[1]) != 0) {
                mt_qweights_free(qw);
                return mt_error_context("%s in %s", t->name, mt_precision_name(p));
            }
        }
        mt_qweights_free(m->qweights); /* int8 -> bf16: the new copies first, then the old go */
        m->qweights = qw;
        m->precision_be = *m->base_be;
        m->precision_be.qweights = qw;
        m->be = &m->precision_be;
        m->precision = p;
        return 0;
    }
    mt_qweights_free(m->qweights);
    m->qweights = NULL;
    m->be = m->base_be;
    m->precision = p;
    return 0;
}

mt_precision mt_model_precision(const mt_model *m) { return m->precision; }

size_t mt_model_int8_bytes(const mt_model *m)
{
    return m->qweights ? mt_qweights_bytes(m->qweights) : 0;
}
