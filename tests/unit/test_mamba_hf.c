/* A MambaForCausalLM checkpoint laid out as the hub's state-spaces/mamba-130m-hf against
 * transformers itself: tests/fixtures/mamba_hf/ holds a tiny one (hidden 32, 2 layers, state 8,
 * vocabulary padded from 597 tokens to 600) as model.safetensors (st/) and as
 * pytorch_model.bin (bin/), its byte-level BPE tokenizer.json, prompts with their ids, the
 * logits of the first few and what generate() gave greedily and with 5 beams (make.py). */
#include "test_util.h"

#include "hub_checkpoint.h"

/* MambaConfig's other options in bias/: use_bias, use_conv_bias false, residual_in_fp32 false,
 * an untied lm_head */
static void config_bias(const mt_model_config *cfg)
{
    assert_int_equal(cfg->mamba_bias, 1);
    assert_int_equal(cfg->mamba_no_conv_bias, 1);
    assert_int_equal(cfg->tie_embeddings, 0);
}

/* the state norms */
static void state_norms(const mt_probe_record *rec)
{
    int norms = 0;
    for (int i = 0; i < rec->n_maps; i++) norms += rec->maps[i].kind == MT_PROBE_STATE_NORMS;
    assert_true(norms > 0);
}

static const hub_case mamba = {
    .fixture = "tests/fixtures/mamba_hf",
    .arch = "mamba",
    .check_probes = state_norms,
};

static void test_safetensors(void **state)
{
    (void)state;
    hub_check_dir(&mamba, "st");
}

static void test_pytorch_bin(void **state)
{
    (void)state;
    hub_check_dir(&mamba, "bin");
}

static void test_bias_variant(void **state)
{
    (void)state;
    hub_check_variant(&mamba, "bias", config_bias);
}

/* its config has no architecture of mtlab's: generate()'s beam search and length limit */
static void test_generate_rules(void **state)
{
    (void)state;
    hub_check_generate_rules(&mamba);
}

static void test_save_round_trip(void **state)
{
    (void)state;
    hub_check_save_round_trip(&mamba);
}

static void test_special_ids(void **state)
{
    (void)state;
    /* id 40 is a letter in tokenizer.json, not a special token */
    hub_expect_open_error(
        &mamba, "\"eos_token_id\": 0", "\"eos_token_id\": 40",
        (const char *const[]){"config.json", "eos_token_id", "40", "tokenizer.json", NULL});
    hub_expect_open_error(
        &mamba, "\"pad_token_id\": 0", "\"pad_token_id\": 599",
        (const char *const[]){"config.json", "pad_token_id", "599", "tokenizer.json", NULL});
    /* a vocabulary the weights do not have */
    hub_expect_open_error(&mamba, "\"vocab_size\": 600", "\"vocab_size\": 1000",
                          (const char *const[]){"model.safetensors", "backbone.embeddings.weight",
                                                "(1000, 32)", NULL});
    /* a template without its place for the source */
    hub_expect_open_error(&mamba, "\"prompt\": \"{src}<sep>\"", "\"prompt\": \"<sep>\"",
                          (const char *const[]){"config.json", "mtlab.prompt", "{src}", NULL});
}

static void test_other_tokenizer(void **state)
{
    (void)state;
    hub_check_other_tokenizer(&mamba);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_safetensors),     cmocka_unit_test(test_pytorch_bin),
        cmocka_unit_test(test_bias_variant),    cmocka_unit_test(test_save_round_trip),
        cmocka_unit_test(test_generate_rules),  cmocka_unit_test(test_special_ids),
        cmocka_unit_test(test_other_tokenizer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
