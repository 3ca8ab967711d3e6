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
