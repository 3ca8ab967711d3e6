/* Cross-entropy over target tokens, fused with the softmax (backend.h). */
#include "mtlab/layers.h"

double mt_cross_entropy_forward(const mt_backend *be, float *losses, float *lse,
                                const float *logits, const int32_t *targets,
                                const mt_loss_call *call)
{
    be->cross_entropy_forward(losses, lse, logits, targets, call->BT, call->V, call->ignore_index,
                              call->smoothing);
    return be->sum(losses, call->BT);
}

void mt_cross_entropy_fused(const mt_backend *be, float *losses, float *logits,
                            const int32_t *targets, const mt_loss_call *call)
{
    be->cross_entropy_fused(losses, logits, targets, call->BT, call->V, call->ignore_index,
                            call->smoothing, call->scale);
}

void mt_cross_entropy_backward(const mt_backend *be, float *dlogits, const float *logits,
                               const float *lse, const int32_t *targets, const mt_loss_call *call)
{
    be->cross_entropy_backward(dlogits, logits, lse, targets, call->BT, call->V, call->ignore_index,
                               call->smoothing, call->scale);
}
