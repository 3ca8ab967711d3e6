/* Training operations: fused softmax cross-entropy, counter-based dropout, AdamW. */
#include "backend/cpu/cpu_ops.h"
#include "math/philox.h"

#include <math.h>

/* lse = log sum_j exp(x_j) ; loss = -sum_j q_j (x_j - lse)
 *      = lse - (1 - eps) x_target - (eps / V) sum_j x_j          (q from label smoothing eps) */
void cpu_cross_entropy_forward(float *losses, float *lse, const float *logits,
                               const int32_t *targets, size_t N, int V, int ignore_index,
                               float smoothing)
{
#pragma omp parallel for if (N * (size_t)V > 65536)
    for (size_t r = 0; r < N; r++) {
        const float *x = logits + r * (size_t)V;
        float mx = -INFINITY;
        for (int j = 0; j < V; j++) mx = fmaxf(mx, x[j]);
        double sum = 0.0, sum_x = 0.0;
        for (int j = 0; j < V; j++) {
            sum += exp((double)x[j] - mx);
            sum_x += x[j];
        }
        double l = mx + log(sum);
        lse[r] = (float)l;
        if (targets[r] == ignore_index) {
            losses[r] = 0.0f;
            continue;
        }
        losses[r] = (float)(l - (1.0 - smoothing) * x[targets[r]] - smoothing * sum_x / V);
    }
}

/* dlogits_j += scale * (p_j - q_j), p_j = exp(x_j - lse) */
void cpu_cross_entropy_backward(float *dlogits, const float *logits, const float *lse,
                                const int32_t *targets, size_t N, int V, int ignore_index,
                                float smoothing, float scale)
{
#pragma omp parallel for if (N * (size_t)V > 65536)
    for (size_t r = 0; r < N; r++) {
        if (targets[r] == ignore_index) continue;
        const float *x = logits + r * (size_t)V;
        float *dx = dlogits + r * (size_t)V;
        float uniform = smoothing / V;
        for (int j = 0; j < V; j++) {
            float q = uniform + (j == targets[r] ? 1.0f - smoothing : 0.0f);
            dx[j] += scale * (expf(x[j] - lse[r]) - q);
        }
    }
}

/* keep_i = philox_uniform(seed, i, site, step) >= p ; out = keep ? x / (1 - p) : 0 */
void cpu_dropout_forward(float *out, const float *x, size_t n, float p, uint64_t seed,
                         uint64_t step, uint32_t site)
{
    float inv_keep = p < 1.0f ? 1.0f / (1.0f - p) : 0.0f;
#pragma omp parallel for if (n > 16384)
    for (size_t i = 0; i < n; i++) {
        int keep = mt_philox_uniform(seed, (uint32_t)i, site, step) >= p;
        out[i] = keep ? x[i] * inv_keep : 0.0f;
    }
}

void cpu_dropout_backward(float *dx, const float *dout, size_t n, float p, uint64_t seed,
                          uint64_t step, uint32_t site)
{
    float inv_keep = p < 1.0f ? 1.0f / (1.0f - p) : 0.0f;
#pragma omp parallel for if (n > 16384)
    for (size_t i = 0; i < n; i++)
        if (mt_philox_uniform(seed, (uint32_t)i, site, step) >= p) dx[i] += dout[i] * inv_keep;
}

/* torch.optim.AdamW: p *= 1 - lr wd ; m = b1 m + (1-b1) g ; v = b2 v + (1-b2) g^2 ;
 * p -= lr (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps) */
void cpu_adamw_step(float *params, const float *grads, float *m, float *v,
                    const uint8_t *decay_mask, size_t n, const mt_adamw_hparams *h, int step)
{
    float bc1 = (float)(1.0 - pow(h->beta1, step)), bc2 = (float)(1.0 - pow(h->beta2, step));
    float sqrt_bc2 = sqrtf(bc2), decay = 1.0f - h->lr * h->weight_decay;
#pragma omp parallel for if (n > 16384)
    for (size_t i = 0; i < n; i++) {
        float g = grads[i];
        if (!decay_mask || decay_mask[i]) params[i] *= decay;
        m[i] = h->beta1 * m[i] + (1.0f - h->beta1) * g;
        v[i] = h->beta2 * v[i] + (1.0f - h->beta2) * g * g;
        params[i] -= h->lr * (m[i] / bc1) / (sqrtf(v[i]) / sqrt_bc2 + h->eps);
    }
}
