/* Parameter initialisation on host memory (docs/models.md §2.6, §3.3 for Mamba). */
#include "mtlab/layers.h"

#include <math.h>

void mt_init_uniform(mt_rng *r, float *w, size_t n, float bound)
{
    for (size_t i = 0; i < n; i++) w[i] = (float)((2.0 * mt_rng_uniform_double(r) - 1.0) * bound);
}

void mt_init_normal(mt_rng *r, float *w, size_t n, float std)
{
    for (size_t i = 0; i < n; i++) w[i] = (float)(std * mt_rng_normal(r));
}

void mt_init_fill(float *w, size_t n, float value)
{
    for (size_t i = 0; i < n; i++) w[i] = value;
}

/* kaiming_uniform(a = sqrt 5): gain sqrt(2 / (1 + 5)), bound gain * sqrt(3 / fan_in)
 * = 1 / sqrt(fan_in); torch draws the bias from the same bound. */
void mt_init_linear_default(mt_rng *r, float *weight, float *bias, int OC, int fan_in)
{
    float bound = 1.0f / sqrtf((float)fan_in);
    mt_init_uniform(r, weight, (size_t)OC * fan_in, bound);
    if (bias) mt_init_uniform(r, bias, (size_t)OC, bound);
}

void mt_init_xavier_uniform(mt_rng *r, float *w, int fan_out, int fan_in, float gain)
{
    mt_init_uniform(r, w, (size_t)fan_out * fan_in, gain * sqrtf(6.0f / (float)(fan_in + fan_out)));
}

/* softplus(v) = y  <=>  v = log(e^y - 1) = y + log(1 - e^-y) = y + log(-expm1(-y)) */
float mt_inv_softplus(float y) { return (float)(y + log(-expm1(-(double)y))); }

void mt_mamba_init(mt_rng *r, mt_mamba_params *host, const mt_mamba_config *cfg,
                   float out_proj_scale)
{
    const double dt_min = 1e-3, dt_max = 0.1, dt_floor = 1e-4;
    int C = cfg->d_model, D = cfg->d_inner, N = cfg->d_state, R = cfg->dt_rank, K = cfg->d_conv;
    mt_init_linear_default(r, host->in_proj_w, NULL, 2 * D, C);
    /* mamba_ssm zeroes every Linear bias (Hugging Face's use_bias) */
    if (host->in_proj_b) mt_init_fill(host->in_proj_b, (size_t)2 * D, 0.0f);
    if (host->out_proj_b) mt_init_fill(host->out_proj_b, (size_t)C, 0.0f);
    /* conv1d (D, 1, K), groups = D: fan_in = 1 * K */
    mt_init_linear_default(r, host->conv_w, host->conv_b, D, K);
    mt_init_linear_default(r, host->x_proj_w, NULL, R + 2 * N, D);
    mt_init_uniform(r, host->dt_proj_w, (size_t)D * R, 1.0f / sqrtf((float)R));
    /* dt = exp(u (ln dt_max - ln dt_min) + ln dt_min), u ~ U(0, 1), clamped below at dt_floor;
     * the bias is softplus^-1(dt) so that softplus(0 + bias) starts at dt */
    for (int d = 0; d < D; d++) {
        double u = mt_rng_uniform_double(r);
        double dt = exp(u * (log(dt_max) - log(dt_min)) + log(dt_min));
        host->dt_proj_b[d] = mt_inv_softplus((float)fmax(dt, dt_floor));
    }
    /* S4D-real: A[d, s] = -(s + 1) */
    for (int d = 0; d < D; d++)
        for (int s = 0; s < N; s++) host->A_log[(size_t)d * N + s] = logf((float)(s + 1));
    mt_init_fill(host->D, (size_t)D, 1.0f);
    mt_init_linear_default(r, host->out_proj_w, NULL, C, D);
    for (size_t i = 0; i < (size_t)C * D; i++) host->out_proj_w[i] *= out_proj_scale;
}
