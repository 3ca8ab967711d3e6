/* See decode_steps.h. */
#include "decode_steps.h"
#include "test_util.h"

#include "mtlab/error.h"

float decode_vs_parallel(mt_model *m, const int32_t *ids, int B, int T, int P, const int32_t *src,
                         int S, const float *full)
{
    const int V = mt_model_get_config(m)->vocab_size;
    int32_t tok[8];
    assert_true(B <= (int)(sizeof tok / sizeof tok[0]));
    mt_decode_state *st = mt_decode_state_new(m, B, T, S);
    if (!st) fail_msg("%s", mt_last_error());
    int32_t *prompt = malloc((size_t)B * P * sizeof(int32_t));
    for (int b = 0; b < B; b++) memcpy(prompt + b * P, ids + b * T, (size_t)P * sizeof(int32_t));
    mt_batch pb = {.B = B, .T = P, .ids = prompt, .S = S, .src = src};
    float *logits = malloc((size_t)B * V * sizeof(float));
    assert_int_equal(mt_model_prefill(m, st, &pb, logits), 0);
    float worst = 0.0f;
    for (int t = P - 1; t < T; t++) {
        if (t > P - 1) {
            for (int b = 0; b < B; b++) tok[b] = ids[b * T + t];
            assert_int_equal(mt_model_step(m, st, tok, logits), 0);
        }
        for (int b = 0; b < B; b++)
            worst = fmaxf(worst, max_abs_diff(logits + b * V, full + ((size_t)b * T + t) * V, V));
    }
    assert_int_equal(mt_decode_state_length(st), T);
    free(prompt);
    free(logits);
    mt_decode_state_free(st);
    return worst;
}

float chunked_vs_whole(mt_model *m, const int32_t *ids, int B, int T, int P, const int32_t *src,
                       int S, int chunk)
{
    const int V = mt_model_get_config(m)->vocab_size;
    int32_t tok[8];
    assert_true(B <= (int)(sizeof tok / sizeof tok[0]));
    mt_decode_state *st[2] = {mt_decode_state_new(m, B, T, S), mt_decode_state_new(m, B, T, S)};
    if (!st[0] || !st[1]) fail_msg("%s", mt_last_error());
    mt_decode_state_set_prefill_chunk(st[0], chunk);
    mt_decode_state_set_prefill_chunk(st[1], 0);
    int32_t *prompt = malloc((size_t)B * P * sizeof(int32_t));
    for (int b = 0; b < B; b++) memcpy(prompt + b * P, ids + b * T, (size_t)P * sizeof(int32_t));
    mt_batch pb = {.B = B, .T = P, .ids = prompt, .S = S, .src = src};
    float *logits[2] = {malloc((size_t)B * V * sizeof(float)),
                        malloc((size_t)B * V * sizeof(float))};
    float worst = 0.0f;
    for (int t = P - 1; t < T; t++) {
        for (int i = 0; i < 2; i++) {
            if (t == P - 1) {
                assert_int_equal(mt_model_prefill(m, st[i], &pb, logits[i]), 0);
                continue;
            }
            for (int b = 0; b < B; b++) tok[b] = ids[b * T + t];
            assert_int_equal(mt_model_step(m, st[i], tok, logits[i]), 0);
        }
        worst = fmaxf(worst, max_abs_diff(logits[0], logits[1], (size_t)B * V));
    }
    free(prompt);
    free(logits[0]), free(logits[1]);
    mt_decode_state_free(st[0]);
    mt_decode_state_free(st[1]);
    return worst;
}

float reorder_vs_parallel(mt_model *m, const int32_t *ids, int T, int P, const int32_t *src, int S)
{
    const int V = mt_model_get_config(m)->vocab_size;
    const int32_t rows[3] = {1, 0, 1};
    assert_true(T <= 16 && S <= 16 && P <= T - 2);
    mt_decode_state *st = mt_decode_state_new(m, 3, T, S);
    if (!st) fail_msg("%s", mt_last_error());
    int32_t prompt[2 * 16], tok[3];
    for (int b = 0; b < 2; b++) memcpy(prompt + b * P, ids + b * T, (size_t)P * sizeof(int32_t));
    float *logits = malloc((size_t)3 * V * sizeof(float));
    mt_batch pb = {.B = 2, .T = P, .ids = prompt, .S = S, .src = src};
    assert_int_equal(mt_model_prefill(m, st, &pb, logits), 0);
    for (int b = 0; b < 2; b++) tok[b] = ids[b * T + P];
    assert_int_equal(mt_model_step(m, st, tok, logits), 0);
    assert_int_equal(mt_decode_state_reorder(st, rows, 3), 0);
    int32_t beam_ids[3 * 16], beam_src[3 * 16];
    for (int b = 0; b < 3; b++) {
        memcpy(beam_ids + b * T, ids + rows[b] * T, (size_t)T * sizeof(int32_t));
        if (S) memcpy(beam_src + b * S, src + rows[b] * S, (size_t)S * sizeof(int32_t));
    }
    float *full = malloc((size_t)3 * T * V * sizeof(float));
    mt_batch fb = {.B = 3, .T = T, .ids = beam_ids, .S = S, .src = S ? beam_src : NULL};
    assert_int_equal(mt_model_forward(m, &fb, full), 0);
    float worst = 0.0f;
    for (int t = P + 1; t < T; t++) {
        for (int b = 0; b < 3; b++) tok[b] = beam_ids[b * T + t];
        assert_int_equal(mt_model_step(m, st, tok, logits), 0);
        for (int b = 0; b < 3; b++)
            worst = fmaxf(worst, max_abs_diff(logits + b * V, full + ((size_t)b * T + t) * V, V));
    }
    int32_t bad = 3; /* the state now holds rows 0..2 */
    assert_int_equal(mt_decode_state_reorder(st, &bad, 1), -1);
    assert_non_null(strstr(mt_last_error(), "row index 3"));
    free(full);
    free(logits);
    mt_decode_state_free(st);
    return worst;
}
