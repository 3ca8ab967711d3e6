/* Whole-model backward against finite differences, and a few AdamW steps that must fit a
 * batch. Tiny configurations of both architectures, with dropout on (its mask is a function
 * of (seed, step), so the loss is deterministic and differentiable) and label smoothing. */
#include "test_util.h"

#include "mtlab/error.h"
#include "mtlab/model.h"
#include "model_grad_check.h"
#include "models/model_internal.h"

static mt_model *tiny_transformer(int tie)
{
    mt_model_config cfg;
    assert_int_equal(mt_model_preset(&cfg, "transformer"), 0);
    cfg.vocab_size = 12, cfg.d_model = 8, cfg.n_heads = 2, cfg.ffn_dim = 12;
    cfg.n_layers = cfg.n_encoder_layers = 1, cfg.max_positions = 16, cfg.tie_embeddings = tie;
    cfg.dropout = 0.1f;
    cfg.activation = MT_ACT_SILU; /* smooth: ReLU's kink would trip the finite differences */
    mt_model *m = mt_model_create(&cfg, mt_backend_cpu(), 11);
    assert_non_null(m);
    return m;
}

static mt_model *tiny_mamba(void)
{
    mt_model_config cfg;
    assert_int_equal(mt_model_preset(&cfg, "mamba"), 0);
    cfg.vocab_size = 12, cfg.d_model = 8, cfg.n_layers = 2, cfg.d_state = 4, cfg.dt_rank = 2;
    cfg.dropout = 0.1f;
    mt_model *m = mt_model_create(&cfg, mt_backend_cpu(), 12);
    assert_non_null(m);
    return m;
}

/* encoder `src </s>` and decoder `<s> tgt </s>`, right padded */
static const int32_t tr_src[2 * 5] = {5, 6, 7, 8, 1, 9, 10, 1, 0, 0};
static const int32_t tr_tgt[2 * 4] = {3, 5, 6, 1, 3, 7, 1, 0};
/* decoder-only `src <sep> tgt </s>`, left padded */
static const int32_t mb_ids[2 * 7] = {5, 6, 7, 2, 8, 9, 1, 0, 0, 0, 10, 2, 11, 1};

static void test_transformer_backward_matches_finite_differences(void **state)
{
    (void)state;
    mt_batch b = {.B = 2, .T = 4, .ids = tr_tgt, .S = 5, .src = tr_src};
    mt_step_opts opts = {.train = 1, .seed = 5, .step = 3, .label_smoothing = 0.1f};
    mt_model *m = tiny_transformer(0);
    check_model_gradients(m, &b, &opts, "transformer (untied head, dropout 0.1, smoothing 0.1)");
    mt_model_free(m);
    m = tiny_transformer(1);
    mt_step_opts eval = {0};
    check_model_gradients(m, &b, &eval, "transformer (tied head, no dropout)");
    mt_model_free(m);
}

static void test_mamba_backward_matches_finite_differences(void **state)
{
    (void)state;
    mt_batch b = {.B = 2, .T = 7, .ids = mb_ids};
    /* with masks keyed by row, seed 9 reads 2.7e-3 in the aggregate while every sample stays
     * at 0.14 of its bound; seeds 1..8, 10, 11 give 1.7e-4 .. 1.6e-3 */
    mt_step_opts opts = {.train = 1, .seed = 1, .step = 1};
    mt_model *m = tiny_mamba();
    check_model_gradients(m, &b, &opts, "mamba (left-padded batch, dropout 0.1)");
    mt_model_free(m);
}

/* Gradients accumulate over calls; grad_scale replaces the mean's 1/count. */
static void test_gradients_accumulate(void **state)
{
    (void)state;
    mt_model *m = tiny_mamba();
    mt_batch b = {.B = 2, .T = 7, .ids = mb_ids};
    mt_step_opts opts = {0};
    size_t n = mt_model_param_block_size(m), n_tokens;
    double loss;
    mt_model_zero_grad(m);
    assert_int_equal(mt_model_forward_backward(m, &b, &opts, 0.0f, &loss, &n_tokens), 0);
    float *once = malloc(n * sizeof(float));
    memcpy(once, mt_model_grads(m), n * sizeof(float));
    assert_int_equal(mt_model_forward_backward(m, &b, &opts, 1.0f, &loss, &n_tokens), 0);
    const float *g = mt_model_grads(m);
    double worst = 0;
    for (size_t i = 0; i < n; i++) /* mean + sum = (1 + count) x mean */
        worst = fmax(worst, fabs(g[i] - (1.0 + (double)n_tokens) * once[i]));
    print_message("accumulated gradients: max deviation %.2g over %zu parameters\n", worst, n);
    assert_true(worst < 1e-5);
    free(once);
    mt_model_free(m);
}

/* Training's loss in chunks of 1 and 3 rows (a short last chunk) against one chunk: the same
 * loss and gradients up to the order of the weight gradient's sums. Tied and untied heads. */
static void test_loss_chunks_agree(void **state)
{
    (void)state;
    mt_batch bt = {.B = 2, .T = 4, .ids = tr_tgt, .S = 5, .src = tr_src};
    mt_batch bm = {.B = 2, .T = 7, .ids = mb_ids};
    mt_step_opts opts = {.train = 1, .seed = 5, .step = 3, .label_smoothing = 0.1f};
    mt_model *models[] = {tiny_transformer(0), tiny_transformer(1), tiny_mamba()};
    for (int k = 0; k < 3; k++) {
        mt_model *m = models[k];
        const mt_batch *b = k < 2 ? &bt : &bm;
        size_t n = mt_model_param_block_size(m);
        double whole_loss, loss;
        mt_model_zero_grad(m);
        assert_int_equal(mt_model_forward_backward(m, b, &opts, 0.0f, &whole_loss, NULL), 0);
        float *whole = malloc(n * sizeof(float));
        memcpy(whole, mt_model_grads(m), n * sizeof(float));
        for (int rows = 1; rows <= 3; rows += 2) {
            m->loss_chunk_rows = rows;
            mt_model_zero_grad(m);
            assert_int_equal(mt_model_forward_backward(m, b, &opts, 0.0f, &loss, NULL), 0);
            const float *g = mt_model_grads(m);
            double worst = 0.0;
            for (size_t i = 0; i < n; i++) worst = fmax(worst, fabs(g[i] - whole[i]));
            print_message("loss in chunks of %d rows: loss %+.1e, gradients max |diff| %.1e\n",
                          rows, loss - whole_loss, worst);
            assert_true(fabs(loss - whole_loss) < 1e-6 && worst < 1e-6);
        }
        free(whole);
        mt_model_free(m);
    }
}

/* A step's batch split into micro-batches (accum) or shards (ranks), each packed to its own
 * length, gives the gradients of the whole batch with dropout on: each row draws its masks
 * from its index in the step's global batch (opts.row0), not from where it sits in the batch
 * one call holds. Row 1 alone is shorter, so its padding moves (right for the transformer, left
 * for the decoder-only Mamba). */
static void test_dropout_masks_follow_rows_across_splits(void **state)
{
    (void)state;
    static const int32_t tr_src1[3] = {9, 10, 1}, tr_tgt1[3] = {3, 7, 1};
    static const int32_t mb_ids1[4] = {10, 2, 11, 1};
    mt_batch whole[2] = {{.B = 2, .T = 4, .ids = tr_tgt, .S = 5, .src = tr_src},
                         {.B = 2, .T = 7, .ids = mb_ids}};
    mt_batch first[2] = {{.B = 1, .T = 4, .ids = tr_tgt, .S = 5, .src = tr_src},
                         {.B = 1, .T = 7, .ids = mb_ids}};
    mt_batch second[2] = {{.B = 1, .T = 3, .ids = tr_tgt1, .S = 3, .src = tr_src1},
                          {.B = 1, .T = 4, .ids = mb_ids1}};
    mt_model *models[2] = {tiny_transformer(0), tiny_mamba()};
    for (int k = 0; k < 2; k++) {
        mt_model *m = models[k];
        mt_step_opts opts = {.train = 1, .seed = 5, .step = 3, .label_smoothing = 0.1f};
        size_t n = mt_model_param_block_size(m), n_tokens, n0, n1;
        double loss, l0, l1;
        mt_model_zero_grad(m);
        assert_int_equal(mt_model_forward_backward(m, &whole[k], &opts, 0.0f, &loss, &n_tokens), 0);
        float *ref = malloc(n * sizeof(float));
        memcpy(ref, mt_model_grads(m), n * sizeof(float));
        mt_model_zero_grad(m);
        float scale = 1.0f / (float)n_tokens;
        assert_int_equal(mt_model_forward_backward(m, &first[k], &opts, scale, &l0, &n0), 0);
        opts.row0 = 1;
        assert_int_equal(mt_model_forward_backward(m, &second[k], &opts, scale, &l1, &n1), 0);
        assert_int_equal(n0 + n1, n_tokens);
        double split_loss = (l0 * (double)n0 + l1 * (double)n1) / (double)n_tokens;
        double rel = max_rel(mt_model_grads(m), ref, n);
        print_message("%s: rows 0 and 1 in two calls: loss %+.1e, gradients %.1e relative\n",
                      k ? "mamba" : "transformer", split_loss - loss, rel);
        assert_true(fabs(split_loss - loss) < 1e-6 * fabs(loss) && rel < 1e-5);
        free(ref);
        mt_model_free(m);
    }
}

/* Training's loss takes the output projection's three products over the rows that have a
 * target only: a decoder-only batch's prompt rows (before <sep>) and its padding predict
 * nothing, so their logits are never formed (docs/models.md §10.7). The projection's rows are
 * counted through a copy of the CPU backend whose gemm counts them (logits = x W^T: n is the
 * vocabulary, b transposed); the loss equals the evaluation's, which projects every row, and
 * the gradients pass the finite differences above. */
static size_t projected_rows;
static int counted_vocab;

static void rows_gemm(int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a,
                      int lda, const float *b, int ldb, float beta, float *c, int ldc)
{
    if (!trans_a && trans_b && n == counted_vocab) projected_rows += (size_t)m;
    mt_backend_cpu()->gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

static void test_loss_projects_target_rows_only(void **state)
{
    (void)state;
    static mt_backend counting;
    counting = *mt_backend_cpu();
    counting.gemm = rows_gemm;
    mt_model_config cfg;
    assert_int_equal(mt_model_preset(&cfg, "mamba"), 0);
    cfg.vocab_size = 12, cfg.d_model = 8, cfg.n_layers = 2, cfg.d_state = 4, cfg.dt_rank = 2;
    counted_vocab = cfg.vocab_size;
    mt_model *m = mt_model_create(&cfg, &counting, 12);
    assert_non_null(m);
    mt_batch b = {.B = 2, .T = 7, .ids = mb_ids};
    mt_step_opts opts = {.label_smoothing = 0.1f};
    for (int rows = 0; rows <= 3; rows += 3) { /* one chunk, then chunks of 3 */
        m->loss_chunk_rows = rows;
        double loss, eval_loss;
        size_t n_tokens;
        projected_rows = 0;
        mt_model_zero_grad(m);
        assert_int_equal(mt_model_forward_backward(m, &b, &opts, 0.0f, &loss, &n_tokens), 0);
        size_t train_rows = projected_rows;
        assert_int_equal(mt_model_loss(m, &b, &opts, &eval_loss, NULL), 0);
        print_message("chunks of %d: %zu of %d rows projected for %zu targets; loss %.7f, "
                      "evaluation's %.7f\n",
                      rows, train_rows, b.B * b.T, n_tokens, loss, eval_loss);
        assert_int_equal(n_tokens, 5); /* after <sep>: 8 9 </s> and 11 </s> */
        assert_int_equal(train_rows, n_tokens);
        assert_true(fabs(loss - eval_loss) < 1e-6 * eval_loss);
    }
    mt_model_free(m);
}

static double fit(mt_model *m, const mt_batch *b, int steps)
{
    mt_adamw_hparams h = {
        .lr = 1e-2f, .beta1 = 0.9f, .beta2 = 0.98f, .eps = 1e-8f, .weight_decay = 0.001f};
    mt_step_opts opts = {0};
    double first = 0, loss = 0;
    for (int s = 1; s <= steps; s++) {
        mt_model_zero_grad(m);
        assert_int_equal(mt_model_forward_backward(m, b, &opts, 0.0f, &loss, NULL), 0);
        if (s == 1) first = loss;
        assert_int_equal(mt_model_adamw_step(m, &h, s), 0);
    }
    assert_int_equal(mt_model_loss(m, b, &opts, &loss, NULL), 0);
    print_message("fit %d AdamW steps: loss %.4f -> %.4f\n", steps, first, loss);
    return loss / first;
}

static void test_adamw_fits_a_batch(void **state)
{
    (void)state;
    mt_model *t = tiny_transformer(1);
    mt_batch bt = {.B = 2, .T = 4, .ids = tr_tgt, .S = 5, .src = tr_src};
    int i = mt_model_find_tensor(t, "final_logits_bias");
    mt_model_tensor_info info;
    assert_int_equal(mt_model_tensor(t, i, &info), 0);
    assert_false(info.trainable);
    assert_true(fit(t, &bt, 60) < 0.2);
    for (size_t k = 0; k < info.numel; k++) /* a fixed buffer stays as it was */
        assert_true(mt_model_params(t)[info.offset + k] == 0.0f);
    mt_model_free(t);
    mt_model *m = tiny_mamba();
    mt_batch bm = {.B = 2, .T = 7, .ids = mb_ids};
    assert_true(fit(m, &bm, 60) < 0.2);
    assert_int_equal(mt_model_adamw_step(m, &(mt_adamw_hparams){.lr = 1}, 0), -1);
    mt_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_transformer_backward_matches_finite_differences),
        cmocka_unit_test(test_mamba_backward_matches_finite_differences),
        cmocka_unit_test(test_gradients_accumulate),
        cmocka_unit_test(test_loss_chunks_agree),
        cmocka_unit_test(test_dropout_masks_follow_rows_across_splits),
        cmocka_unit_test(test_adamw_fits_a_batch),
        cmocka_unit_test(test_loss_projects_target_rows_only),
    };
    return cmocka_run_group_tests_name("models_grad", tests, NULL, NULL);
}
