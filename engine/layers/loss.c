/* Cross-entropy over target tokens, fused with the softmax (backend.h). */
#include "mtlab/layers.h"

double mt_cross_entropy_forward(const mt_backend *be, float *losses, float *lse,
                                const float *logits, const int32_t *targets, size_t BT, int V,
                                int ignore_index, float smoothing)
{
    be->cross_entropy_forward(losses, lse, logits, targets, BT, V, ignore_index, smoothing);
    return be->sum(losses, BT);
}

void mt_cross_entropy_fused(const mt_backend *be, float *losses, float *logits,
                            const int32_t *targets, size_t BT, int V, int ignore_index,
                            float smoothing, float scale)
{
    be->cross_entropy_fused(losses, logits, targets, BT, V, ignore_index, smoothing, scale);
}

void mt_cross_entropy_backward(const mt_backend *be, float *dlogits, const float *logits,
                               const float *lse, const int32_t *targets, size_t BT, int V,
                               int ignore_index, float smoothing, float scale)
{
    be->cross_entropy_backward(dlogits, logits, lse, targets, BT, V, ignore_index, smoothing,
                               scale);
}
