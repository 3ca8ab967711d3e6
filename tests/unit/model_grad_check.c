/* Whole-model backward against finite differences (declared in model_grad_check.h). */
#include "test_util.h"
#include "model_grad_check.h"

#include "mtlab/error.h"

/* Finite differences: the fourth-order central stencil with h = 2^-9 on an fp32 forward. A
 * smaller h meets fp32 rounding of the loss (~2e-7 of ~2.5, amplified 18/12h); a larger one
 * meets the curvature of RMSNorm over embeddings initialised at 0.02 (at h = 2^-7 the Mamba
 * embedding gradients are off by 2.6%, at 2^-9 by 0.04%). A sampled gradient passes when
 * |analytic - fd| <= FD_ABS + FD_REL |fd|, and the whole sample within FD_TOTAL. */
#define FD_H (1.0f / 512.0f)
#define FD_TOTAL 2e-3
#define FD_ABS 2e-4
#define FD_REL 2e-2
#define FD_SAMPLES 3 /* per tensor, evenly spread */

typedef struct {
    mt_model *m;
    const mt_batch *b;
    const mt_step_opts *opts;
} loss_ctx;

static double loss_at(const loss_ctx *c)
{
    double loss;
    if (mt_model_loss(c->m, c->b, c->opts, &loss, NULL)) fail_msg("%s", mt_last_error());
    return loss;
}

static double stencil(float *x, const loss_ctx *c)
{
    float x0 = *x;
    double f[4];
    const float k[4] = {-2, -1, 1, 2};
    for (int i = 0; i < 4; i++) {
        *x = x0 + k[i] * FD_H;
        f[i] = loss_at(c);
    }
    *x = x0;
    return (f[0] - 8 * f[1] + 8 * f[2] - f[3]) / (12.0 * FD_H);
}

/* Compare the analytic gradient of every trainable tensor with finite differences at a few
 * elements; prints the aggregate relative error and the worst tensor. */
void check_model_gradients(mt_model *m, const mt_batch *b, const mt_step_opts *opts,
                           const char *what)
{
    assert_true(mt_model_backend(m)->host_memory);
    mt_model_zero_grad(m);
    double loss;
    size_t n_tokens;
    assert_int_equal(mt_model_forward_backward(m, b, opts, 0.0f, &loss, &n_tokens), 0);
    const float *grads = mt_model_grads(m);
    float *params = mt_model_params(m);
    loss_ctx c = {m, b, opts};
    double diff2 = 0, fd2 = 0, worst = 0;
    const char *worst_name = "";
    int checked = 0, bad = 0;
    for (int t = 0; t < mt_model_tensor_count(m); t++) {
        mt_model_tensor_info info;
        assert_int_equal(mt_model_tensor(m, t, &info), 0);
        if (!info.trainable) continue;
        for (int s = 0; s < FD_SAMPLES; s++) {
            size_t i =
                info.offset + (size_t)((double)s * (info.numel - 1) / (FD_SAMPLES - 1) + 0.5);
            double fd = stencil(&params[i], &c), a = grads[i];
            double err = fabs(a - fd), excess = err / (FD_ABS + FD_REL * fabs(fd));
            diff2 += err * err;
            fd2 += fd * fd;
            if (excess > worst) worst = excess, worst_name = info.name;
            if (excess > 1.0) {
                bad++;
                print_message("  %s[%zu]: analytic %.6g, finite difference %.6g\n", info.name,
                              i - info.offset, a, fd);
            }
            checked++;
        }
    }
    print_message("%s: loss %.4f over %zu tokens; %d sampled gradients, relative error %.2e "
                  "(bound %.0e), worst %s at %.2f of its bound (|diff| <= %.0e + %.0e |fd|)\n",
                  what, loss, n_tokens, checked, sqrt(diff2) / sqrt(fd2), FD_TOTAL, worst_name,
                  worst, FD_ABS, FD_REL);
    assert_int_equal(bad, 0);
    assert_true(sqrt(diff2) / sqrt(fd2) < FD_TOTAL);
}
