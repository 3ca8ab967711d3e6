/* Whole-model backward of the five architectures against finite differences of the loss,
 * sampled over every trainable tensor, on tiny configurations with dropout on (its mask is a
 * function of (seed, step), so the loss is deterministic) and left-padded (decoder-only) or
 * right-padded (encoder-decoder) batches; then a few AdamW steps that must fit the batch. */
#include "test_util.h"

#include <omp.h>

#include "mtlab/error.h"
#include "mtlab/model.h"
#include "model_grad_check.h"
#include "model_parity.h"

/* options: the architecture's other form: MambaConfig's use_bias and use_conv_bias false,
 * GPTNeoXConfig's use_parallel_residual false (mt_model_config) */
static mt_model *tiny_with(const char *preset, uint64_t seed, int options)
{
    mt_model_config c;
    assert_int_equal(mt_model_preset(&c, preset), 0);
    c.mamba_bias = c.mamba_no_conv_bias = options;
    if (options) c.parallel_residual = 0;
    c.vocab_size = 12, c.d_model = 8, c.n_heads = 2, c.n_layers = 2, c.ffn_dim = 12;
    c.value_dim = 12, c.d_state = 4, c.dt_rank = 2, c.n_encoder_layers = 1;
    c.window = 2, c.n_attn_layers = 1, c.attn_layers[0] = 1;
    c.rotary_pct = 0.5f; /* gpt-neox: 2 of each head's 4 dims rotate */
    c.dropout = 0.1f;
    mt_model *m = mt_model_create(&c, mt_backend_cpu(), seed);
    if (!m) fail_msg("%s: %s", preset, mt_last_error());
    /* every parameter moved by U(-0.1, 0.1): gradients well above the stencil's fp32 noise
     * (~3e-5) in every tensor, the encoder's included */
    float *p = mt_model_params(m);
    tiny_model_perturb(p, mt_model_param_block_size(m), seed);
    return m;
}

static mt_model *tiny(const char *preset, uint64_t seed) { return tiny_with(preset, seed, 0); }

/* decoder-only `src <sep> tgt </s>`, left padded */
static const int32_t dec_ids[2 * 7] = {5, 6, 7, 2, 8, 9, 1, 0, 0, 0, 10, 2, 11, 1};
/* encoder `src </s>` and decoder `<s> tgt </s>`, right padded */
static const int32_t src_ids[2 * 5] = {5, 6, 7, 8, 1, 9, 10, 1, 0, 0};
static const int32_t tgt_ids[2 * 4] = {3, 5, 6, 1, 3, 7, 1, 0};

static mt_batch batch_for(const mt_model *m)
{
    mt_batch dec = {.B = 2, .T = 7, .ids = dec_ids};
    mt_batch encdec = {.B = 2, .T = 4, .ids = tgt_ids, .S = 5, .src = src_ids};
    return mt_model_is_encdec(m) ? encdec : dec;
}

static void grad_case(const char *preset, uint64_t seed, float smoothing, const char *what)
{
    mt_model *m = tiny(preset, seed);
    mt_batch b = batch_for(m);
    mt_step_opts opts = {.train = 1, .seed = 7, .step = 2, .label_smoothing = smoothing};
    check_model_gradients(m, &b, &opts, what);
    mt_model_free(m);
}

static void test_llama_backward(void **state)
{
    (void)state;
    grad_case("transformer++", 31, 0.1f, "transformer++ (dropout 0.1, smoothing 0.1)");
}

static void test_retnet_backward(void **state)
{
    (void)state;
    grad_case("retnet", 32, 0.0f, "retnet (dropout 0.1)");
}

static void test_mamba_mha_backward(void **state)
{
    (void)state;
    grad_case("mamba-mha", 33, 0.0f, "mamba-mha (attention at layer 1, dropout 0.1)");
}

static void test_mamba_local_backward(void **state)
{
    (void)state;
    grad_case("mamba-local", 34, 0.0f, "mamba-local (window 2 over 7 positions, dropout 0.1)");
}

/* Hugging Face's options: biases on in_proj and out_proj, none on conv1d */
static void test_mamba_biases_backward(void **state)
{
    (void)state;
    mt_model *m = tiny_with("mamba", 36, 1);
    mt_batch b = batch_for(m);
    mt_step_opts opts = {.train = 1, .seed = 7, .step = 2};
    check_model_gradients(m, &b, &opts, "mamba (use_bias, no conv bias, dropout 0.1)");
    mt_model_free(m);
}

static void test_mamba_encdec_backward(void **state)
{
    (void)state;
    grad_case("mamba-encdec", 35, 0.0f, "mamba-encdec (dropout 0.1)");
}

/* both residual forms: the parallel one's MLP norm reads the attention unit's input, whose
 * gradient gathers both branches */
static void test_neox_backward(void **state)
{
    (void)state;
    grad_case("gpt-neox", 37, 0.1f, "gpt-neox (parallel residual, dropout 0.1, smoothing 0.1)");
    mt_model *m = tiny_with("gpt-neox", 38, 1);
    assert_int_equal(mt_model_get_config(m)->parallel_residual, 0);
    mt_batch b = batch_for(m);
    mt_step_opts opts = {.train = 1, .seed = 7, .step = 2};
    check_model_gradients(m, &b, &opts, "gpt-neox (sequential residual, dropout 0.1)");
    mt_model_free(m);
}

static void test_adamw_fits_a_batch(void **state)
{
    (void)state;
    /* not the registry: the models test_models.c does not already step (transformer, mamba) */
    const char *presets[] = {"transformer++", "retnet",       "mamba-mha",
                             "mamba-local",   "mamba-encdec", "gpt-neox"};
    mt_adamw_hparams h = {
        .lr = 1e-2f, .beta1 = 0.9f, .beta2 = 0.98f, .eps = 1e-8f, .weight_decay = 0.001f};
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++) {
        mt_model *m = tiny(presets[i], 40 + i);
        mt_batch b = batch_for(m);
        mt_step_opts opts = {0};
        double first = 0, loss = 0;
        for (int s = 1; s <= 60; s++) {
            mt_model_zero_grad(m);
            assert_int_equal(mt_model_forward_backward(m, &b, &opts, 0.0f, &loss, NULL), 0);
            if (s == 1) first = loss;
            assert_int_equal(mt_model_adamw_step(m, &h, s), 0);
        }
        assert_int_equal(mt_model_loss(m, &b, &opts, &loss, NULL), 0);
        print_message("%-14s 60 AdamW steps: loss %.4f -> %.4f\n", presets[i], first, loss);
        assert_true(loss < 0.2 * first);
        mt_model_free(m);
    }
}

int main(void)
{
    /* tiny models: thread start-up and spinning cost far more than their math, and on a busy
     * machine oversubscribed threads make these tests 100x slower */
    omp_set_num_threads(1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_llama_backward),        cmocka_unit_test(test_retnet_backward),
        cmocka_unit_test(test_mamba_mha_backward),    cmocka_unit_test(test_mamba_local_backward),
        cmocka_unit_test(test_mamba_encdec_backward), cmocka_unit_test(test_mamba_biases_backward),
        cmocka_unit_test(test_neox_backward),         cmocka_unit_test(test_adamw_fits_a_batch),
    };
    return cmocka_run_group_tests_name("models_arch_grad", tests, NULL, NULL);
}
