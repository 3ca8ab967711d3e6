/* A GPTNeoXForCausalLM checkpoint laid out as the hub's EleutherAI/pythia-160m against
 * transformers itself: tests/fixtures/neox_hf/ holds a tiny one (hidden 64, 4 heads of 16 with
 * rotary_pct 0.25, 2 layers, parallel residual, untied embed_out, vocabulary padded from 597
 * tokens to 600) as model.safetensors (st/) and as pytorch_model.bin (bin/), its byte-level
 * BPE tokenizer.json, prompts with their ids, the logits of the first few and what generate()
 * gave greedily and with 5 beams; seq/ is the sequential residual (make.py). */
#include "test_util.h"

#include <math.h>

#include "hub_checkpoint.h"
#include "mtlab/decode.h"
#include "mtlab/error.h"
#include "mtlab/runner.h"

static void config_parallel(const mt_model_config *cfg)
{
    assert_int_equal(cfg->parallel_residual, 1);
    assert_int_equal(cfg->tie_embeddings, 0);
}

/* GPTNeoXConfig's other options in seq/: use_parallel_residual false, rotary_pct 0.5 at base
 * 100, a tied embedding, random biases and norms */
static void config_sequential(const mt_model_config *cfg)
{
    assert_int_equal(cfg->parallel_residual, 0);
    assert_true(cfg->rotary_pct == 0.5f);
    assert_true(cfg->rope_theta == 100.0f);
    assert_int_equal(cfg->tie_embeddings, 1);
    assert_int_equal(cfg->pad_id, cfg->eos_id); /* no pad_token_id: generate() pads with eos */
}

/* the attention maps of both layers, each row of each head a distribution over the positions
 * up to its own */
static void attention_maps(const mt_probe_record *rec)
{
    int maps = 0;
    for (int i = 0; i < rec->n_maps; i++) {
        const mt_probe_map *map = &rec->maps[i];
        if (map->kind != MT_PROBE_SELF_ATTN) continue;
        assert_int_equal(map->unit, MT_PROBE_UNIT_ATTENTION);
        assert_int_equal(map->heads, 4);
        assert_int_equal(map->causal, 1);
        maps++;
        for (int h = 0; h < map->heads; h++)
            for (int q = 0; q < map->rows; q++) {
                double sum = 0;
                for (int k = 0; k < map->cols; k++) {
                    float v = map->values[((size_t)h * map->rows + q) * map->cols + k];
                    if (k > q) assert_true(v == 0.0f);
                    sum += v;
                }
                assert_true(fabs(sum - 1.0) < 1e-4);
            }
    }
    assert_true(maps >= 2);
}

static const hub_case neox = {
    .fixture = "tests/fixtures/neox_hf",
    .arch = "gpt-neox",
    .check_config = config_parallel,
    .check_probes = attention_maps,
};

static void test_safetensors(void **state)
{
    (void)state;
    hub_check_dir(&neox, "st");
}

static void test_pytorch_bin(void **state)
{
    (void)state;
    hub_check_dir(&neox, "bin");
}

static void test_sequential_variant(void **state)
{
    (void)state;
    hub_check_variant(&neox, "seq", config_sequential);
}

/* its config has no architecture of mtlab's: generate()'s beam search and length limit */
static void test_generate_rules(void **state)
{
    (void)state;
    hub_check_generate_rules(&neox);
}

static void test_save_round_trip(void **state)
{
    (void)state;
    hub_check_save_round_trip(&neox);
}

static void test_special_ids(void **state)
{
    (void)state;
    /* id 40 is a letter in tokenizer.json, not a special token */
    hub_expect_open_error(
        &neox, "\"eos_token_id\": 0", "\"eos_token_id\": 40",
        (const char *const[]){"config.json", "eos_token_id", "40", "tokenizer.json", NULL});
    hub_expect_open_error(
        &neox, "\"bos_token_id\": 0", "\"bos_token_id\": 0, \"pad_token_id\": 599",
        (const char *const[]){"config.json", "pad_token_id", "599", "tokenizer.json", NULL});
    /* a vocabulary the weights do not have */
    hub_expect_open_error(
        &neox, "\"vocab_size\": 600", "\"vocab_size\": 1000",
        (const char *const[]){"model.safetensors", "gpt_neox.embed_in.weight", "(1000, 64)", NULL});
    /* a template without its place for the source */
    hub_expect_open_error(&neox, "\"prompt\": \"{src}<sep>\"", "\"prompt\": \"<sep>\"",
                          (const char *const[]){"config.json", "mtlab.prompt", "{src}", NULL});
}

/* GPTNeoXConfig keys mtlab's model cannot follow, each refused naming the file and the key */
static void test_config_keys(void **state)
{
    (void)state;
    hub_expect_open_error(&neox, "\"hidden_act\": \"gelu\"", "\"hidden_act\": \"gelu_new\"",
                          (const char *const[]){"config.json", "hidden_act", "gelu_new", NULL});
    hub_expect_open_error(
        &neox, "\"rotary_pct\": 0.25", "\"rotary_pct\": 0.5",
        (const char *const[]){"config.json", "partial_rotary_factor", "rotary_pct", NULL});
    hub_expect_open_error(
        &neox, "\"rotary_emb_base\": 10000", "\"rotary_emb_base\": 500",
        (const char *const[]){"config.json", "rope_theta", "rotary_emb_base", NULL});
    hub_expect_open_error(&neox, "\"rope_scaling\": null",
                          "\"rope_scaling\": {\"type\": \"linear\"}",
                          (const char *const[]){"config.json", "rope_scaling", NULL});
    hub_expect_open_error(&neox, "\"attention_bias\": true", "\"attention_bias\": false",
                          (const char *const[]){"config.json", "attention_bias", NULL});
    hub_expect_open_error(&neox, "\"attention_dropout\": 0.0", "\"attention_dropout\": 0.1",
                          (const char *const[]){"config.json", "attention_dropout", NULL});
    hub_expect_open_error(&neox, "\"num_attention_heads\": 4", "\"num_attention_heads\": 3",
                          (const char *const[]){"heads", "hidden_size", NULL});
    /* heads of 16 dims: rotary_pct 0.2 rotates int(3.2) = 3, an odd number */
    {
        char *config = hub_config_with(&neox, "\"partial_rotary_factor\": 0.25",
                                       "\"partial_rotary_factor\": 0.2");
        char *at = strstr(config, "\"rotary_pct\": 0.25");
        assert_non_null(at);
        memcpy(at, "\"rotary_pct\": 0.20", strlen("\"rotary_pct\": 0.20"));
        char dir[256];
        hub_variant(&neox, dir, sizeof dir, "config.json", config);
        free(config);
        assert_null(mt_runner_open(dir, "cpu", 0));
        if (!strstr(mt_last_error(), "odd")) fail_msg("no 'odd' in: %s", mt_last_error());
        test_remove_tree(dir);
    }
}

static void test_other_tokenizer(void **state)
{
    (void)state;
    hub_check_other_tokenizer(&neox);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_safetensors),        cmocka_unit_test(test_pytorch_bin),
        cmocka_unit_test(test_sequential_variant), cmocka_unit_test(test_save_round_trip),
        cmocka_unit_test(test_generate_rules),     cmocka_unit_test(test_special_ids),
        cmocka_unit_test(test_config_keys),        cmocka_unit_test(test_other_tokenizer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
