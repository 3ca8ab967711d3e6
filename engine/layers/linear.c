/* Linear and embedding layers, the tied output projection.
 * Linear: out = x W^T + b, W (OC, C).
 * backward: dx += dout W ; dW += dout^T x ; db += column sums of dout */
#include "mtlab/layers.h"

void mt_linear_forward(const mt_backend *be, float *out, const float *x, const float *weight,
                       const float *bias, size_t BT, int C, int OC)
{
    int row0;
    const mt_qmatrix *q = be->qweights ? mt_qweights_find(be->qweights, weight, C, &row0) : NULL;
    if (q) {
        be->qlinear_forward(out, x, q, row0, bias, BT, OC);
        return;
    }
    be->gemm(0, 1, (int)BT, OC, C, 1.0f, x, C, weight, C, 0.0f, out, OC);
    if (bias) be->bias_add(out, bias, BT, OC);
}

void mt_linear_forward_parts(const mt_backend *be, const mt_out_parts *parts, const float *x,
                             const float *weight, const float *bias, size_t BT, int C)
{
    int row0;
    const mt_qmatrix *q = be->qweights && be->qlinear_forward_parts
                              ? mt_qweights_find(be->qweights, weight, C, &row0)
                              : NULL;
    if (q) {
        be->qlinear_forward_parts(parts, x, q, row0, bias, BT);
        return;
    }
    for (int p = 0, c0 = 0; p < parts->n; c0 += parts->cols[p++])
        mt_linear_forward(be, parts->out[p], x, weight + (size_t)c0 * C, bias ? bias + c0 : NULL,
                          BT, C, parts->cols[p]);
}

void mt_linear_backward(const mt_backend *be, const mt_weight_grads *grads, const float *dout,
                        const float *x, const float *weight, size_t BT, int C, int OC)
{
    float *dx = grads->dx, *dweight = grads->dweight, *dbias = grads->dbias;
    if (dx) be->gemm(0, 0, (int)BT, C, OC, 1.0f, dout, OC, weight, C, 1.0f, dx, C);
    if (dweight) be->gemm(1, 0, OC, C, (int)BT, 1.0f, dout, OC, x, C, 1.0f, dweight, C);
    if (dbias) be->bias_backward(dbias, dout, BT, OC);
}

void mt_linear_backward_first(const mt_backend *be, const mt_weight_grads *grads, const float *dout,
                              const float *x, const float *weight, size_t BT, int C, int OC)
{
    if (grads->dx) be->gemm(0, 0, (int)BT, C, OC, 1.0f, dout, OC, weight, C, 0.0f, grads->dx, C);
    mt_linear_backward(be, &(mt_weight_grads){NULL, grads->dweight, grads->dbias}, dout, x, weight,
                       BT, C, OC);
}

void mt_embedding_forward(const mt_backend *be, float *out, const int32_t *ids, const float *table,
                          size_t BT, int C, float scale)
{
    be->embedding_forward(out, ids, table, BT, C, scale);
}

void mt_embedding_backward(const mt_backend *be, float *dtable, const float *dout,
                           const int32_t *ids, size_t BT, int C, float scale)
{
    be->embedding_backward(dtable, dout, ids, BT, C, scale);
}

/* logits = x table^T (+ bias): the embedding table read as a (V, C) linear weight */
void mt_tied_logits_forward(const mt_backend *be, float *logits, const float *x, const float *table,
                            const float *bias, size_t BT, int C, int V)
{
    mt_linear_forward(be, logits, x, table, bias, BT, C, V);
}

void mt_tied_logits_backward(const mt_backend *be, const mt_weight_grads *grads,
                             const float *dlogits, const float *x, const float *table, size_t BT,
                             int C, int V)
{
    mt_linear_backward(be, grads, dlogits, x, table, BT, C, V);
}
