/* Normalisation and dropout layers: thin names over the backend operations, so models read
 * as a list of layers. */
#include "mtlab/layers.h"

void mt_layernorm_forward(const mt_backend *be, float *out, float *mean, float *rstd,
                          const float *x, const float *weight, const float *bias,
                          const mt_norm_call *call)
{
    be->layernorm_forward(out, mean, rstd, x, weight, bias, call->BT, call->C, call->eps);
}

void mt_layernorm_backward(const mt_backend *be, const mt_weight_grads *grads, const float *dout,
                           const float *x, const float *weight, const float *mean,
                           const float *rstd, const mt_norm_call *call)
{
    be->layernorm_backward(grads->dx, grads->dweight, grads->dbias, dout, x, weight, mean, rstd,
                           call->BT, call->C);
}

void mt_rmsnorm_forward(const mt_backend *be, float *out, float *rstd, const float *x,
                        const float *weight, const mt_norm_call *call)
{
    be->rmsnorm_forward(out, rstd, x, weight, call->BT, call->C, call->eps);
}

void mt_rmsnorm_backward(const mt_backend *be, const mt_weight_grads *grads, const float *dout,
                         const float *x, const float *weight, const float *rstd,
                         const mt_norm_call *call)
{
    be->rmsnorm_backward(grads->dx, grads->dweight, dout, x, weight, rstd, call->BT, call->C);
}

static int dropout_active(const mt_dropout *drop) { return drop && drop->p > 0.0f; }

void mt_dropout_forward(const mt_backend *be, float *out, const float *x, size_t rows,
                        size_t row_len, const mt_dropout *drop)
{
    if (dropout_active(drop)) be->dropout_forward(out, x, rows, row_len, drop);
    else if (out != x) be->copy(out, x, rows * row_len * sizeof *out);
}

void mt_dropout_backward(const mt_backend *be, float *dx, const float *dout, size_t rows,
                         size_t row_len, const mt_dropout *drop)
{
    if (dropout_active(drop)) be->dropout_backward(dx, dout, rows, row_len, drop);
    else be->axpy(dx, dout, rows * row_len, 1.0f);
}
