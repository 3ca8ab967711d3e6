/* The benchmark's bookkeeping, never its speed: the counting backend computes what the CPU
 * backend computes and counts FLOPs, shapes and parameter bytes exactly; fixed-length decoding
 * follows mt_decode's greedy path; the peer-inputs reader rejects bad files by line; the
 * bundles it writes load back. */
#include "test_util.h"

#include <math.h>
#include <unistd.h>

#include "bench/bench.h"
#include "mtlab/decode.h"
#include "mtlab/error.h"
#include "mtlab/tokenizer.h"

static void fill(float *x, size_t n, float scale)
{
    for (size_t i = 0; i < n; i++) x[i] = scale * (float)((int)(i * 7 % 11) - 5);
}

static void test_median(void **state)
{
    (void)state;
    double odd[] = {5, 1, 3}, even[] = {4, 1, 3, 2};
    assert_true(bench_median(odd, 3) == 3.0);
    assert_true(bench_median(even, 4) == 2.5);
    assert_true(bench_median(NULL, 0) == 0.0);
}

static void test_counting_gemm_matches_cpu_and_counts(void **state)
{
    (void)state;
    enum { M = 5, N = 7, K = 3 };
    float a[K * M], b[K * N], c[M * N], ref[M * N];
    fill(a, K * M, 0.5f);
    fill(b, K * N, 0.25f);
    const mt_backend *be = bench_counting_backend();
    bench_counters_reset(NULL, 0);
    /* c = a^T b, a stored (K, M) */
    be->gemm(1, 0, M, N, K, 1.0f, a, M, b, N, 0.0f, c, N);
    mt_backend_cpu_naive()->gemm(1, 0, M, N, K, 1.0f, a, M, b, N, 0.0f, ref, N);
    for (int i = 0; i < M * N; i++) assert_float_equal(c[i], ref[i], 1e-5f);
    be->gemm(1, 0, M, N, K, 1.0f, a, M, b, N, 0.0f, c, N); /* same shape again */
    be->gemm(0, 0, M, N, 1, 1.0f, a, 1, b, N, 1.0f, c, N); /* a new shape */
    const bench_counters *cnt = bench_counters_get();
    assert_int_equal(cnt->n_shapes, 2);
    assert_int_equal(cnt->gemm_calls, 3);
    assert_int_equal(cnt->shapes[0].calls, 2);
    assert_int_equal(cnt->shapes[0].trans_a, 1);
    assert_int_equal(cnt->shapes[0].k, K);
    assert_int_equal(cnt->shapes[1].calls, 1);
    assert_true(cnt->shapes[1].beta == 1.0f);
    assert_true(cnt->gemm_flops == 2.0 * (2.0 * M * N * K + M * N * 1));
    assert_true(cnt->gemm_seconds >= 0.0);
    assert_int_equal(cnt->param_bytes, 0); /* no parameter block registered */
    bench_counters_free();
}

static void test_counting_batched_counts_every_problem(void **state)
{
    (void)state;
    enum { M = 2, N = 3, K = 4, BATCH = 3 };
    float a[BATCH * M * K], b[BATCH * K * N], c[BATCH * M * N], ref[BATCH * M * N];
    fill(a, BATCH * M * K, 0.5f);
    fill(b, BATCH * K * N, 0.5f);
    bench_counters_reset(a, BATCH * M * K); /* a is "the parameters" */
    bench_counting_backend()->gemm_batched(0, 0, M, N, K, 1.0f, a, K, M * K, b, N, K * N, 0.0f, c,
                                           N, M * N, BATCH);
    mt_backend_cpu_naive()->gemm_batched(0, 0, M, N, K, 1.0f, a, K, M * K, b, N, K * N, 0.0f, ref,
                                         N, M * N, BATCH);
    for (int i = 0; i < BATCH * M * N; i++) assert_float_equal(c[i], ref[i], 1e-5f);
    const bench_counters *cnt = bench_counters_get();
    assert_int_equal(cnt->gemm_calls, BATCH);
    assert_true(cnt->gemm_flops == 2.0 * M * N * K * BATCH);
    assert_int_equal(cnt->param_bytes, BATCH * M * K * sizeof(float));
    bench_counters_free();
}

static void test_param_bytes_only_inside_the_block(void **state)
{
    (void)state;
    enum { C = 8, ROWS = 3 };
    float params[2 * C * C + C], x[ROWS * C], w[C * C], out[ROWS * C], rstd[ROWS];
    fill(params, 2 * C * C + C, 0.1f);
    fill(x, ROWS * C, 0.2f);
    fill(w, C * C, 0.3f);
    const mt_backend *be = bench_counting_backend();
    bench_counters_reset(params, 2 * C * C + C);
    be->gemm(0, 1, ROWS, C, C, 1.0f, x, C, params, C, 0.0f, out, C); /* weight (C, C) */
    assert_int_equal(bench_counters_get()->param_bytes, C * C * sizeof(float));
    be->rmsnorm_forward(out, rstd, x, params + 2 * C * C, ROWS, C, 1e-5f);
    assert_int_equal(bench_counters_get()->param_bytes, (C * C + C) * sizeof(float));
    be->gemm(0, 1, ROWS, C, C, 1.0f, x, C, w, C, 0.0f, out, C); /* w is outside the block */
    assert_int_equal(bench_counters_get()->param_bytes, (C * C + C) * sizeof(float));
    bench_counters_reset(NULL, 0);
    assert_int_equal(bench_counters_get()->param_bytes, 0);
    bench_counters_free();
}

static void tiny_config(mt_model_config *cfg, const char *preset)
{
    assert_int_equal(mt_model_preset(cfg, preset), 0);
    cfg->vocab_size = 64;
    cfg->d_model = 16;
    cfg->n_layers = 2;
    cfg->n_encoder_layers = cfg->n_encoder_layers ? 2 : 0;
    cfg->n_heads = 2;
    cfg->ffn_dim = 32;
    cfg->max_positions = 128;
    cfg->d_state = 4;
    cfg->dt_rank = 2;
    cfg->dropout = 0.0f;
    cfg->tie_embeddings = 0; /* a tied random model only echoes its last token */
    cfg->init_std = 0.5f;
}

/* Sum of numel of the model's tensors, filtered by name. */
static size_t tensor_floats(const mt_model *m, int (*keep)(const char *name))
{
    size_t n = 0;
    mt_model_tensor_info t;
    for (int i = 0; i < mt_model_tensor_count(m); i++) {
        assert_int_equal(mt_model_tensor(m, i, &t), 0);
        if (keep(t.name)) n += t.numel;
    }
    return n;
}

static int every_tensor(const char *name)
{
    (void)name;
    return 1;
}

/* What a Marian decoder step reads whole: decoder weights except the cross-attention keys
 * and values (filled once from the source), plus the output projection and its bias. */
static int marian_step_tensor(const char *name)
{
    if (strstr(name, "encoder_attn.k_proj") || strstr(name, "encoder_attn.v_proj")) return 0;
    return !strncmp(name, "model.decoder.", 14) || !strcmp(name, "lm_head.weight") ||
           !strcmp(name, "final_logits_bias");
}

static void test_step_param_bytes(void **state)
{
    (void)state;
    mt_model_config cfg;
    tiny_config(&cfg, "mamba-small");
    size_t step, all;
    assert_int_equal(bench_step_param_bytes(&cfg, &step, &all), 0);
    mt_model *m = mt_model_create(&cfg, mt_backend_cpu(), 1);
    assert_non_null(m);
    size_t C = (size_t)cfg.d_model, V = (size_t)cfg.vocab_size;
    /* Mamba reads every parameter once per step except the input embedding table, of which
     * it reads the new token's row */
    assert_int_equal(all, tensor_floats(m, every_tensor) * sizeof(float));
    assert_int_equal(step, all - (V * C - C) * sizeof(float));
    mt_model_free(m);
    /* tied: the table is the output projection too, read whole */
    cfg.tie_embeddings = 1;
    assert_int_equal(bench_step_param_bytes(&cfg, &step, &all), 0);
    assert_int_equal(step, all + C * sizeof(float));

    tiny_config(&cfg, "transformer-small");
    assert_int_equal(bench_step_param_bytes(&cfg, &step, &all), 0);
    m = mt_model_create(&cfg, mt_backend_cpu(), 1);
    assert_non_null(m);
    /* + the new token's embedding row (the sinusoid table is not a parameter) */
    size_t expect = (tensor_floats(m, marian_step_tensor) + C) * sizeof(float);
    assert_int_equal(step, expect);
    assert_true(step < all);
    mt_model_free(m);
}

/* Fixed-length decoding takes mt_decode's greedy path until mt_decode stops, and never chooses
 * <pad> or <eos> (every row runs to its length, as the peers' minimum lengths make theirs). */
static void check_follows_greedy(const char *preset)
{
    mt_model_config cfg;
    tiny_config(&cfg, preset);
    mt_model *m = mt_model_create(&cfg, mt_backend_cpu(), 3);
    assert_non_null(m);
    enum { NSRC = 3, NEW = 12 };
    int32_t s0[] = {5, 6, 7, 8, 9}, s1[] = {10, 11}, s2[] = {12, 13, 14, 15};
    const int32_t *src[NSRC] = {s0, s1, s2};
    int len[NSRC] = {5, 2, 4};
    int32_t tokens[NSRC * NEW];
    bench_decode_time t;
    assert_int_equal(bench_decode_fixed(m, src, len, NSRC, NEW, tokens, &t), 0);
    assert_true(t.prefill_seconds >= 0 && t.step_seconds >= 0);
    mt_decode_opts o;
    mt_decode_opts_init(&o);
    o.beam = 1;
    o.max_new_tokens = NEW;
    mt_decode_result r;
    if (mt_decode(m, src, len, NSRC, &o, &r)) fail_msg("%s", mt_last_error());
    int compared = 0;
    for (int i = 0; i < NSRC; i++) {
        const mt_hypothesis *h = &r.hyps[i];
        for (int k = 0; k < NEW; k++) {
            assert_int_not_equal(tokens[i * NEW + k], cfg.pad_id);
            assert_int_not_equal(tokens[i * NEW + k], cfg.eos_id);
        }
        for (int k = 0; k < h->n_ids; k++) assert_int_equal(tokens[i * NEW + k], h->ids[k]);
        compared += h->n_ids;
    }
    assert_true(compared > 0);
    mt_decode_result_free(&r);
    mt_model_free(m);
}

static void test_decode_fixed_follows_greedy_mamba(void **state)
{
    (void)state;
    check_follows_greedy("mamba-small");
}

static void test_decode_fixed_follows_greedy_transformer(void **state)
{
    (void)state;
    check_follows_greedy("transformer-small");
}

/* Write text to a fresh temporary file; the caller unlinks path. */
static void temp_file(char *path, const char *text)
{
    strcpy(path, "/tmp/mtlab_test_bench_XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    size_t n = strlen(text);
    assert_int_equal(write(fd, text, n), (ssize_t)n);
    close(fd);
}

/* a model of mtlab's tokenizer: ids 0-3 its special tokens */
static const mt_model_config ids_model = {.vocab_size = 100,
                                          .pad_id = MT_PAD_ID,
                                          .eos_id = MT_EOS_ID,
                                          .sep_id = MT_SEP_ID,
                                          .bos_id = MT_BOS_ID,
                                          .unk_id = MT_UNK_ID};

static void expect_ids_error(const char *text, const char *message_part)
{
    char path[64];
    temp_file(path, text);
    bench_ids x;
    assert_int_equal(bench_ids_read(path, &ids_model, &x), -1);
    const char *msg = mt_last_error();
    if (!strstr(msg, path) || !strstr(msg, message_part))
        fail_msg("error '%s' should name %s and say '%s'", msg, path, message_part);
    assert_null(x.ids);
    unlink(path);
}

static void test_ids_read(void **state)
{
    (void)state;
    char path[64];
    temp_file(path, "5 6 7\n  99\t4 \r\n10\n");
    bench_ids x;
    assert_int_equal(bench_ids_read(path, &ids_model, &x), 0);
    assert_int_equal(x.n, 3);
    assert_int_equal(x.len[0], 3);
    assert_int_equal(x.ids[0][2], 7);
    assert_int_equal(x.len[1], 2);
    assert_int_equal(x.ids[1][0], 99);
    assert_int_equal(x.ids[1][1], MT_UNK_ID);
    assert_int_equal(x.len[2], 1);
    bench_ids_free(&x);
    unlink(path);
}

/* an opus-mt checkpoint's special ids are its own (<eos> 0, <pad> the last id): 1, 2 and 3 are
 * ordinary tokens there, which a peer's inputs may hold */
static void test_ids_read_hub_specials(void **state)
{
    (void)state;
    const mt_model_config opus = {
        .vocab_size = 100, .pad_id = 99, .eos_id = 0, .sep_id = 0, .bos_id = 99, .unk_id = 1};
    char path[64];
    temp_file(path, "1 2 3\n");
    bench_ids x;
    if (bench_ids_read(path, &opus, &x)) fail_msg("%s", mt_last_error());
    assert_int_equal(x.len[0], 3);
    assert_int_equal(x.ids[0][0], 1);
    bench_ids_free(&x);
    unlink(path);
    temp_file(path, "5 99\n");
    assert_int_equal(bench_ids_read(path, &opus, &x), -1);
    assert_non_null(strstr(mt_last_error(), "'99' is the model's <pad>"));
    unlink(path);
}

static void test_ids_read_errors(void **state)
{
    (void)state;
    expect_ids_error("5 6\n7 100\n", ":2: field 2 '100' is not a token id in 0..99");
    expect_ids_error("5 -1\n", ":1: field 2 '-1' is not a token id in 0..99");
    expect_ids_error("5 x6\n", ":1: field 2 'x6'");
    expect_ids_error("5 6\n8 3\n", ":2: field 2 '3' is the model's <bos>");
    expect_ids_error("0 6\n", ":1: field 1 '0' is the model's <pad>");
    expect_ids_error("5 6\n\n7\n", ":2: empty line");
    expect_ids_error("", "no lines");
    expect_ids_error("5 99999999999999999999\n", ":1: field 2");
    bench_ids x;
    assert_int_equal(bench_ids_read("/nonexistent/ids.txt", &ids_model, &x), -1);
    assert_non_null(strstr(mt_last_error(), "/nonexistent/ids.txt"));
}

static void test_make_bundles_load_back(void **state)
{
    (void)state;
    char dir[] = "/tmp/mtlab_test_bench_bundles_XXXXXX";
    assert_non_null(mkdtemp(dir));
    if (bench_make_bundles(dir)) fail_msg("%s", mt_last_error());
    static const char *const presets[] = {"transformer-small", "mamba-small"};
    for (int i = 0; i < 2; i++) {
        char path[256];
        snprintf(path, sizeof path, "%s/%s", dir, presets[i]);
        mt_model *m = mt_model_load(path, mt_backend_cpu(), MT_MODEL_LOAD_NO_TOKENIZER);
        if (!m) fail_msg("%s", mt_last_error());
        mt_model_config cfg;
        assert_int_equal(mt_model_preset(&cfg, presets[i]), 0);
        assert_int_equal(mt_model_param_count(m), mt_model_config_param_count(&cfg));
        mt_model_free(m);
        static const char *const files[] = {"config.json", "model.safetensors"};
        for (int f = 0; f < 2; f++) {
            char file[300];
            snprintf(file, sizeof file, "%s/%s", path, files[f]);
            assert_int_equal(unlink(file), 0);
        }
        assert_int_equal(rmdir(path), 0); /* nothing else was written */
    }
    assert_int_equal(rmdir(dir), 0);
}

/* The crossover of section 9: the first length where the reference is cheaper, interpolated
 * in log2 of the length from the one before; lengths a model refused (0) are skipped. */
static void test_crossover(void **state)
{
    (void)state;
    int lens[] = {64, 128, 256, 512};
    double flat[] = {2, 2, 2, 2}, grows[] = {1, 1.5, 3, 6}, cheap[] = {4, 4, 4, 4}, at = 0;
    /* 2 - 1.5 = 0.5 at 128, 2 - 3 = -1 at 256: a third of the way, 2^(7 + 1/3) */
    assert_int_equal(bench_crossover(lens, flat, grows, 4, &at), 2);
    assert_true(fabs(at - exp2(7.0 + 1.0 / 3.0)) < 1e-9);
    assert_int_equal(bench_crossover(lens, flat, cheap, 4, &at), 1);
    assert_true(at == 64);
    assert_int_equal(bench_crossover(lens, cheap, flat, 4, &at), 0);
    /* the transformer refused 256: 128 -> 512 */
    double refused[] = {1, 1.5, 0, 6};
    assert_int_equal(bench_crossover(lens, flat, refused, 4, &at), 2);
    assert_true(fabs(at - exp2(7.0 + 2.0 * 0.5 / 4.5)) < 1e-9);
    /* never both measured where the reference is cheaper */
    double gone[] = {1, 1.5, 0, 0};
    assert_int_equal(bench_crossover(lens, flat, gone, 4, &at), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_median),
        cmocka_unit_test(test_crossover),
        cmocka_unit_test(test_counting_gemm_matches_cpu_and_counts),
        cmocka_unit_test(test_counting_batched_counts_every_problem),
        cmocka_unit_test(test_param_bytes_only_inside_the_block),
        cmocka_unit_test(test_step_param_bytes),
        cmocka_unit_test(test_decode_fixed_follows_greedy_mamba),
        cmocka_unit_test(test_decode_fixed_follows_greedy_transformer),
        cmocka_unit_test(test_ids_read),
        cmocka_unit_test(test_ids_read_errors),
        cmocka_unit_test(test_ids_read_hub_specials),
        cmocka_unit_test(test_make_bundles_load_back),
    };
    return cmocka_run_group_tests_name("bench", tests, NULL, NULL);
}
