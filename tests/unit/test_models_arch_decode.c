/* Incremental decoding of the five architectures against their parallel forward: a prefill
 * then single steps must give the logits the full-sequence forward gives (transformer++ KV
 * cache with rotary, RetNet's recurrent state, Mamba-MHA's KV cache, Mamba-Local's ring
 * beyond its window, Mamba enc-dec's Mamba states and cross-attention cache), with
 * left-padded prompts and beam reordering; and the decoding state that must not grow with
 * the sequence length does not. Tiny random models (mt_model_create). */
#include "test_util.h"
#include "decode_steps.h"
#include "model_parity.h"

#include <omp.h>

#include "mtlab/error.h"
#include "mtlab/model.h"

#define V TINY_MODEL_VOCAB
/* fp32, the same math in another order (one query vs all, recurrent vs parallel) */
#define STEP_TOL 1e-4f
#define RETNET_EPS_TOL 2e-3f

static mt_model_config tiny(const char *preset)
{
    mt_model_config c;
    tiny_model_config(&c, preset, 0.0f);
    return c;
}

/* Every parameter moved by U(-0.1, 0.1): fresh models have logits of a few hundredths (tied
 * embeddings N(0, 0.02)), too small for an absolute tolerance to mean much; moved ones have
 * logits of order 1 and exercise every tensor. */
static mt_model *create(const mt_model_config *c, uint64_t seed)
{
    mt_model *m = mt_model_create(c, mt_backend_cpu(), seed);
    if (!m) fail_msg("%s: %s", c->arch, mt_last_error());
    float *p = mt_model_params(m); /* host memory on the CPU backend */
    tiny_model_perturb(p, mt_model_param_block_size(m), seed);
    return m;
}

/* A fresh model, as created. */
static mt_model *create_fresh(const mt_model_config *c, uint64_t seed)
{
    mt_model *m = mt_model_create(c, mt_backend_cpu(), seed);
    if (!m) fail_msg("%s: %s", c->arch, mt_last_error());
    return m;
}

/* decoder-only rows `src <sep> tgt </s>`, the second left padded; 14 positions, well past
 * mamba-local's window of 3 (a ring of 4) */
enum { T_DEC = 14 };
static const int32_t dec_ids[2 * T_DEC] = {
    17, 23, 5, 32, 9, 2, 9, 31, 33, 12, 6, 8, 20, 1, 0, 0, 0, 0, 30, 8, 2, 35, 12, 7, 19, 21, 13, 1,
};

/* Both rows, or only the first when the prompt is shorter than the second's padding (a
 * prompt of pads alone is not a prompt). */
/* Retention scores 16 times larger: q_proj and k_proj weights times 4. */
static void sharpen_retention(mt_model *m)
{
    for (int i = 0; i < mt_model_tensor_count(m); i++) {
        mt_model_tensor_info info;
        assert_int_equal(mt_model_tensor(m, i, &info), 0);
        if (strstr(info.name, "retention.q_proj") || strstr(info.name, "retention.k_proj"))
            for (size_t k = 0; k < info.numel; k++) mt_model_params(m)[info.offset + k] *= 4.0f;
    }
}

enum { MOVED, FRESH, SHARP };

static float decoder_only_case(const mt_model_config *c, int P, int kind)
{
    mt_model *m = kind == FRESH ? create_fresh(c, 21) : create(c, 21);
    if (kind == SHARP) sharpen_retention(m);
    float *full = malloc(2 * T_DEC * V * sizeof(float));
    mt_batch b = {.B = 2, .T = T_DEC, .ids = dec_ids};
    assert_int_equal(mt_model_forward(m, &b, full), 0);
    if (P == 1) {
        float scale = 0.0f;
        for (int i = 0; i < 2 * T_DEC * V; i++) scale = fmaxf(scale, fabsf(full[i]));
        print_message("%-14s logits up to %.2f in magnitude\n", c->arch, scale);
    }
    float d = decode_vs_parallel(m, dec_ids, P > 4 ? 2 : 1, T_DEC, P, NULL, 0, full);
    free(full);
    mt_model_free(m);
    return d;
}

static void test_decoder_only_steps_match_parallel(void **state)
{
    (void)state;
    /* not the registry: the decoder-only models with attention (retnet's own test is below) */
    const char *archs[] = {"transformer++", "mamba-mha", "mamba-local"};
    for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++) {
        mt_model_config c = tiny(archs[i]);
        /* prompts of 1, of 6 (shorter than the pads + ring), of 9 (longer than the ring) */
        float d1 = decoder_only_case(&c, 1, MOVED), d6 = decoder_only_case(&c, 6, MOVED);
        float d9 = decoder_only_case(&c, 9, MOVED);
        print_message("%-14s steps vs parallel forward over %d positions: max |diff| %.3g "
                      "(prefill 1), %.3g (prefill 6), %.3g (prefill 9) (tolerance %.0e)\n",
                      archs[i], T_DEC, d1, d6, d9, STEP_TOL);
        assert_true(d1 < STEP_TOL && d6 < STEP_TOL && d9 < STEP_TOL);
    }
}

/* RetNet decodes with the recurrent form, which leaves out the parallel form's abs-sum
 * normaliser r (mtlab/backend.h): the per-head group norm removes it but for its epsilon.
 * A fresh model's scores are small enough that every r is clamped to 1 and the two forms are
 * one function; in a moved one r > 1 and they differ by epsilon's share, bounded here. */
static void test_retnet_recurrent_matches_parallel(void **state)
{
    (void)state;
    mt_model_config c = tiny("retnet");
    float exact1 = decoder_only_case(&c, 1, FRESH), exact6 = decoder_only_case(&c, 6, FRESH);
    float moved1 = decoder_only_case(&c, 1, MOVED), moved6 = decoder_only_case(&c, 6, MOVED);
    print_message("retnet recurrent steps vs parallel forward (r = 1): max |diff| %.3g, %.3g "
                  "(fresh, prefill 1 and 6), %.3g, %.3g (moved) (tolerance %.0e)\n",
                  exact1, exact6, moved1, moved6, STEP_TOL);
    assert_true(exact1 < STEP_TOL && exact6 < STEP_TOL && moved1 < STEP_TOL && moved6 < STEP_TOL);
    float d1 = decoder_only_case(&c, 1, SHARP), d6 = decoder_only_case(&c, 6, SHARP);
    print_message("retnet recurrent steps vs parallel forward (sharpened, r > 1): max |diff| %.3g "
                  "(prefill 1), %.3g (prefill 6) (bound %.0e: the group norm's epsilon)\n",
                  d1, d6, RETNET_EPS_TOL);
    assert_true(d1 < RETNET_EPS_TOL && d6 < RETNET_EPS_TOL);
}

static void test_encdec_steps_match_parallel(void **state)
{
    (void)state;
    mt_model_config c = tiny("mamba-encdec");
    mt_model *m = create(&c, 22);
    const int32_t src[2 * 7] = {17, 23, 5, 32, 9, 31, 1, 30, 8, 35, 12, 1, 0, 0};
    const int32_t tgt[2 * 8] = {3, 11, 38, 7, 33, 14, 15, 1, 3, 20, 6, 39, 14, 16, 12, 1};
    float full[2 * 8 * V];
    mt_batch b = {.B = 2, .T = 8, .ids = tgt, .S = 7, .src = src};
    assert_int_equal(mt_model_forward(m, &b, full), 0);
    float d1 = decode_vs_parallel(m, tgt, 2, 8, 1, src, 7, full);
    float d3 = decode_vs_parallel(m, tgt, 2, 8, 3, src, 7, full);
    print_message("mamba-encdec steps vs parallel forward: max |diff| %.3g (prefill <s>), %.3g "
                  "(prefill 3) (tolerance %.0e)\n",
                  d1, d3, STEP_TOL);
    assert_true(d1 < STEP_TOL && d3 < STEP_TOL);
    mt_model_free(m);
}

static void test_beam_reorder(void **state)
{
    (void)state;
    /* not the registry: the decoder-only models with attention or retention */
    const char *archs[] = {"transformer++", "retnet", "mamba-mha", "mamba-local"};
    for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++) {
        mt_model_config c = tiny(archs[i]);
        mt_model *m = create(&c, 23);
        float d = reorder_vs_parallel(m, dec_ids, T_DEC, 6, NULL, 0);
        print_message("%-14s reordered beams vs parallel forward: max |diff| %.3g\n", archs[i], d);
        assert_true(d < STEP_TOL);
        mt_model_free(m);
    }
    mt_model_config c = tiny("mamba-encdec");
    mt_model *m = create(&c, 24);
    const int32_t src[2 * 5] = {17, 23, 5, 32, 1, 30, 8, 1, 0, 0};
    const int32_t tgt[2 * 7] = {3, 11, 38, 7, 33, 14, 1, 3, 20, 6, 39, 14, 12, 1};
    float d = reorder_vs_parallel(m, tgt, 7, 2, src, 5);
    print_message("%-14s reordered beams vs parallel forward: max |diff| %.3g\n", "mamba-encdec",
                  d);
    assert_true(d < STEP_TOL);
    mt_model_free(m);
}

/* The prefill in chunks gives the logits of the prefill in one pass, at the prefill and at
 * every step after it, for every architecture: chunks of 1 (every boundary), 2, 3 and 5
 * positions over 12-position prompts whose second row starts with 4 pads (chunks of pads
 * alone), so boundaries fall inside mamba-local's window of 3 and Mamba's conv of 4; the
 * encoder-decoders' sources (7 positions) run in the same chunks. */
static void test_chunked_prefill_matches_whole(void **state)
{
    (void)state;
    const char *const *archs = mt_model_arch_list();
    const int chunks[] = {1, 2, 3, 5};
    const int32_t src[2 * 7] = {17, 23, 5, 32, 9, 31, 1, 30, 8, 35, 12, 1, 0, 0};
    const int32_t tgt[2 * 8] = {3, 11, 38, 7, 33, 14, 15, 1, 3, 20, 6, 39, 14, 16, 12, 1};
    for (size_t i = 0; archs[i]; i++) {
        mt_model_config c = tiny(archs[i]);
        mt_model *m = create(&c, 25);
        int encdec = mt_model_is_encdec(m);
        float worst = 0.0f;
        for (size_t k = 0; k < sizeof chunks / sizeof chunks[0]; k++) {
            float d = encdec ? chunked_vs_whole(m, tgt, 2, 8, 6, src, 7, chunks[k])
                             : chunked_vs_whole(m, dec_ids, 2, T_DEC, 12, NULL, 0, chunks[k]);
            worst = fmaxf(worst, d);
        }
        print_message("%-14s prefill in chunks of 1, 2, 3, 5 vs in one pass, then steps: max "
                      "|diff| %.3g (tolerance %.0e)\n",
                      archs[i], worst, STEP_TOL);
        assert_true(worst < STEP_TOL);
        mt_model_free(m);
    }
}

/* Decoding-state bytes for 4 rows at max_T 64 and 4096: flat for the recurrent and windowed
 * models, growing with length for full attention. */
static void test_state_size_against_length(void **state)
{
    (void)state;
    /* not the registry: whether each model's state is flat (a property to state by hand) */
    const struct {
        const char *arch;
        int flat;
    } cases[] = {
        {"transformer++", 0}, {"retnet", 1}, {"mamba-mha", 0},
        {"mamba-local", 1},   {"mamba", 1},  {"mamba-encdec", 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mt_model_config c = tiny(cases[i].arch);
        mt_model *m = create(&c, 25);
        size_t short_run = mt_model_decode_state_bytes(m, 4, 64, 16);
        size_t long_run = mt_model_decode_state_bytes(m, 4, 4096, 16);
        print_message("%-14s decoding state for 4 rows: %8zu bytes at 64 positions, %8zu at "
                      "4096\n",
                      cases[i].arch, short_run, long_run);
        assert_true(short_run > 0);
        if (cases[i].flat) assert_int_equal(short_run, long_run);
        else assert_true(long_run > 32 * short_run);
        mt_decode_state *st = mt_decode_state_new(m, 4, 4096, 16);
        assert_non_null(st);
        assert_true(mt_decode_state_bytes_held(st) > long_run); /* caches + rows, ids, masks */
        mt_decode_state_free(st);
        mt_model_free(m);
    }
    /* mamba-local holds, per row and attention layer, keys and values of window + 1 positions */
    mt_model_config c = tiny("mamba-local");
    mt_model_config no_attn = c;
    no_attn.n_attn_layers = 0;
    mt_model *m = create(&c, 26), *plain = create(&no_attn, 26);
    size_t ring = mt_model_decode_state_bytes(m, 1, 4096, 0);
    size_t mamba_layer = mt_model_decode_state_bytes(plain, 1, 4096, 0) / 3;
    assert_int_equal(ring, mamba_layer + 2 * 2 * (3 + 1) * 16 * sizeof(float));
    mt_model_free(m);
    mt_model_free(plain);
}

/* The working set a decode state holds after the prefill (mt_decode_state_bytes_held less
 * what it held fresh) stays within MT_PREFILL_WORK_BYTES and is the same for prompts of 2,100
 * and 4,100 positions in one state: the chunks are as long either way, and nothing scales
 * with the prompt but the caches, sized by the state. Prefilled in one pass, the 2,100-position
 * prompt alone needs more (T x T scores for attention and retention). */
static void test_prefill_working_set_is_bounded(void **state)
{
    (void)state;
    const char *const *archs = mt_model_arch_list();
    enum { SHORT = 2100, LONG = 4100, MAX_T = 4200 };
    int32_t *ids = malloc(LONG * sizeof(int32_t));
    for (int t = 0; t < LONG; t++) ids[t] = 5 + (t * 7) % (V - 5);
    for (size_t i = 0; archs[i]; i++) {
        mt_model_config c = tiny(archs[i]);
        c.max_positions = MAX_T; /* the transformer's table */
        mt_model *m = create(&c, 27);
        int encdec = mt_model_is_encdec(m);
        const int32_t bos = 3;
        size_t work[3];
        float logits[V];
        const int prompts[3] = {SHORT, LONG, SHORT},
                  chunks[3] = {MT_PREFILL_AUTO, MT_PREFILL_AUTO, 0};
        for (int k = 0; k < 3; k++) {
            int P = prompts[k];
            mt_decode_state *st = mt_decode_state_new(m, 1, MAX_T, encdec ? LONG : 0);
            assert_non_null(st);
            mt_decode_state_set_prefill_chunk(st, chunks[k]);
            size_t fresh = mt_decode_state_bytes_held(st);
            mt_batch b = {.B = 1,
                          .T = encdec ? 1 : P,
                          .ids = encdec ? &bos : ids,
                          .S = encdec ? P : 0,
                          .src = encdec ? ids : NULL};
            assert_int_equal(mt_model_prefill(m, st, &b, logits), 0);
            work[k] = mt_decode_state_bytes_held(st) - fresh;
            mt_decode_state_free(st);
        }
        print_message("%-14s prefill working set: %zu / %zu bytes for %d / %d positions in "
                      "chunks, %zu for %d in one pass\n",
                      archs[i], work[0], work[1], SHORT, LONG, work[2], SHORT);
        if (!strcmp(archs[i], "transformer")) {
            /* its encoder attends both ways and runs whole, so its pass grows with the source
             * (which its position table bounds) */
            assert_true(work[1] > work[0]);
        } else {
            assert_int_equal(work[0], work[1]);
            assert_true(work[1] <= MT_PREFILL_WORK_BYTES);
            assert_true(work[2] > work[0]);
        }
        mt_model_free(m);
    }
    free(ids);
}

/* A decode longer than the state, and a step before any prefill, are errors. */
static void test_decode_misuse_is_an_error(void **state)
{
    (void)state;
    mt_model_config c = tiny("mamba-local");
    mt_model *m = create(&c, 27);
    mt_decode_state *st = mt_decode_state_new(m, 1, 3, 0);
    float logits[V];
    int32_t tok = 5, prompt[3] = {5, 6, 2};
    assert_int_equal(mt_model_step(m, st, &tok, logits), -1);
    assert_non_null(strstr(mt_last_error(), "before prefill"));
    mt_batch ok = {.B = 1, .T = 3, .ids = prompt};
    assert_int_equal(mt_model_prefill(m, st, &ok, logits), 0);
    assert_int_equal(mt_model_step(m, st, &tok, logits), -1);
    assert_non_null(strstr(mt_last_error(), "full"));
    mt_decode_state_free(st);
    mt_model_free(m);
}

int main(void)
{
    /* tiny models: thread start-up and spinning cost far more than their math, and on a busy
     * machine oversubscribed threads make these tests 100x slower */
    omp_set_num_threads(1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decoder_only_steps_match_parallel),
        cmocka_unit_test(test_retnet_recurrent_matches_parallel),
        cmocka_unit_test(test_encdec_steps_match_parallel),
        cmocka_unit_test(test_beam_reorder),
        cmocka_unit_test(test_chunked_prefill_matches_whole),
        cmocka_unit_test(test_prefill_working_set_is_bounded),
        cmocka_unit_test(test_state_size_against_length),
        cmocka_unit_test(test_decode_misuse_is_an_error),
    };
    return cmocka_run_group_tests_name("models_arch_decode", tests, NULL, NULL);
}
