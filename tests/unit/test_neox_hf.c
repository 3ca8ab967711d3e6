/* A GPTNeoXForCausalLM checkpoint laid out as the hub's EleutherAI/pythia-160m against
 * transformers itself: tests/fixtures/neox_hf/ holds a tiny one (hidden 64, 4 heads of 16 with
 * rotary_pct 0.25, 2 layers, parallel residual, untied embed_out, vocabulary padded from 597
 * tokens to 600) as model.safetensors (st/) and as pytorch_model.bin (bin/), its byte-level
 * BPE tokenizer.json, prompts with their ids, the logits of the first few and what generate()
 * gave greedily and with 5 beams; seq/ is the sequential residual (make.py). */
#include "test_util.h"

#include <unistd.h>

#include "mtlab/backend.h"
#include "mtlab/decode.h"
#include "mtlab/error.h"
#include "mtlab/model.h"
#include "mtlab/probe.h"
#include "mtlab/runner.h"

#define FIX "tests/fixtures/neox_hf"
#define MAX_PROMPTS 32
#define MAX_IDS 512

typedef struct {
    int V, max_new, n_logits, n;
    char *text[MAX_PROMPTS];
    int32_t ids[MAX_PROMPTS][MAX_IDS], greedy[MAX_PROMPTS][MAX_IDS], beam[MAX_PROMPTS][MAX_IDS];
    int n_ids[MAX_PROMPTS], n_greedy[MAX_PROMPTS], n_beam[MAX_PROMPTS];
    char *file;
} reference;

static int parse_ids(const char *s, int32_t *out)
{
    int n = 0;
    char *end;
    for (long v = strtol(s, &end, 10); end != s; v = strtol(s, &end, 10)) {
        assert_true(n < MAX_IDS);
        out[n++] = (int32_t)v;
        s = end;
    }
    return n;
}

static reference *load_reference(void)
{
    reference *r = calloc(1, sizeof *r);
    r->file = test_read_file(FIX "/reference.txt", NULL);
    assert_non_null(r->file);
    char *line = r->file;
    assert_int_equal(
        sscanf(line, "# vocab %d max_new %d logits_prompts %d", &r->V, &r->max_new, &r->n_logits),
        3);
    for (line = strchr(line, '\n') + 1; *line;) {
        char *nl = strchr(line, '\n');
        assert_non_null(nl);
        *nl = '\0';
        if (!strncmp(line, "text: ", 6)) {
            assert_true(r->n < MAX_PROMPTS);
            r->text[r->n++] = line + 6;
        } else if (!strncmp(line, "ids: ", 5)) {
            r->n_ids[r->n - 1] = parse_ids(line + 5, r->ids[r->n - 1]);
        } else if (!strncmp(line, "greedy: ", 8)) {
            r->n_greedy[r->n - 1] = parse_ids(line + 8, r->greedy[r->n - 1]);
        } else if (!strncmp(line, "beam5: ", 7)) {
            r->n_beam[r->n - 1] = parse_ids(line + 7, r->beam[r->n - 1]);
        } else {
            fail_msg("%s/reference.txt: unexpected line '%s'", FIX, line);
        }
        line = nl + 1;
    }
    assert_true(r->n >= 10);
    return r;
}

static void free_reference(reference *r)
{
    free(r->file);
    free(r);
}

/* generate()'s ids end with <eos> when it stopped there; mtlab's result leaves it out */
static void assert_same_ids(const int32_t *want, int n_want, const mt_hypothesis *h, int eos,
                            const char *what, int prompt)
{
    int n = n_want, finished = n_want > 0 && want[n_want - 1] == eos;
    if (finished) n--;
    if (h->n_ids != n || h->finished != finished ||
        (n && memcmp(h->ids, want, (size_t)n * sizeof *want))) {
        fprintf(stderr, "prompt %d %s: want", prompt, what);
        for (int i = 0; i < n_want; i++) fprintf(stderr, " %d", want[i]);
        fprintf(stderr, "\n                 got ");
        for (int i = 0; i < h->n_ids; i++) fprintf(stderr, " %d", h->ids[i]);
        fprintf(stderr, "%s\n", h->finished ? " <eos>" : "");
        fail_msg("prompt %d: %s differs from transformers' generate", prompt, what);
    }
}

static void check_dir(const char *dir)
{
    reference *r = load_reference();
    mt_runner *run = mt_runner_open(dir, "cpu", 0);
    if (!run) fail_msg("%s", mt_last_error());
    mt_model *m = run->model;
    const mt_model_config *cfg = mt_model_get_config(m);
    assert_string_equal(cfg->arch, "gpt-neox");
    assert_int_equal(cfg->parallel_residual, 1);
    assert_int_equal(cfg->tie_embeddings, 0);
    assert_int_equal(cfg->vocab_size, r->V);
    assert_int_equal(mt_tokenizer_vocab_size(run->tok), 597);
    assert_string_equal(cfg->prompt, "{src}<sep>");

    /* the prompt template and the tokenizer.json give the ids transformers was given */
    for (int i = 0; i < r->n; i++) {
        int *ids;
        size_t n;
        assert_int_equal(mt_source_encode(m, run->tok, r->text[i], &ids, &n), 0);
        assert_int_equal((int)n, r->n_ids[i]);
        for (size_t t = 0; t < n; t++) assert_int_equal(ids[t], r->ids[i][t]);
        free(ids);
    }

    /* logits within 1e-4 */
    size_t n_logits = 0;
    float *want = (float *)test_read_file(FIX "/logits.f32", &n_logits);
    assert_non_null(want);
    const float *w = want;
    float worst = 0;
    for (int i = 0; i < r->n_logits; i++) {
        int T = r->n_ids[i];
        float *got = malloc((size_t)T * r->V * sizeof *got);
        mt_batch b = {.B = 1, .T = T, .ids = r->ids[i]};
        assert_int_equal(mt_model_forward(m, &b, got), 0);
        float d = max_abs_diff(got, w, (size_t)T * r->V);
        if (d > worst) worst = d;
        w += (size_t)T * r->V;
        free(got);
    }
    assert_int_equal((size_t)(w - want) * sizeof *want, n_logits);
    printf("%s: logits within %.3g of transformers'\n", dir, worst);
    assert_true(worst < 1e-4f);
    free(want);

    /* greedy and beam 5, ids as generate() gave them (no vocabulary limit: generate may pick a
     * padding row; it does not here) */
    const int32_t *src[MAX_PROMPTS];
    for (int i = 0; i < r->n; i++) src[i] = r->ids[i];
    for (int beam = 1; beam <= 5; beam += 4) {
        mt_decode_opts o;
        mt_decode_opts_init(&o);
        o.beam = beam;
        o.max_new_tokens = r->max_new;
        /* generate()'s beam search (decode.h): its stopping test, no forced <eos> at the
         * limit (GPTNeoXConfig has no forced_eos_token_id) */
        o.semantics = MT_SEARCH_HF;
        mt_decode_result res;
        for (int i = 0; i < r->n; i++) {
            if (mt_decode(m, &src[i], &r->n_ids[i], 1, &o, &res)) fail_msg("%s", mt_last_error());
            if (beam == 1)
                assert_same_ids(r->greedy[i], r->n_greedy[i], &res.hyps[0], cfg->eos_id, "greedy",
                                i);
            else assert_same_ids(r->beam[i], r->n_beam[i], &res.hyps[0], cfg->eos_id, "beam 5", i);
            mt_decode_result_free(&res);
        }
        /* batched, left padded, the same */
        if (mt_decode(m, src, r->n_ids, r->n, &o, &res)) fail_msg("%s", mt_last_error());
        for (int i = 0; i < r->n; i++) {
            if (beam == 1)
                assert_same_ids(r->greedy[i], r->n_greedy[i], &res.hyps[i], cfg->eos_id,
                                "batched greedy", i);
            else
                assert_same_ids(r->beam[i], r->n_beam[i], &res.hyps[i], cfg->eos_id,
                                "batched beam 5", i);
        }
        mt_decode_result_free(&res);
    }

    /* translation through the template: the text of the greedy ids */
    mt_decode_opts o;
    mt_decode_opts_init(&o);
    o.beam = 1;
    o.max_new_tokens = r->max_new;
    mt_decode_result res;
    assert_int_equal(mt_translate(m, run->tok, (const char *const *)r->text, 3, 0, &o, &res), 0);
    for (int i = 0; i < 3; i++) {
        int n =
            r->n_greedy[i] - (r->n_greedy[i] && r->greedy[i][r->n_greedy[i] - 1] == cfg->eos_id);
        int *ids = malloc((size_t)(n + 1) * sizeof *ids);
        for (int t = 0; t < n; t++) ids[t] = r->greedy[i][t];
        char *text = mt_tokenizer_decode(run->tok, ids, (size_t)n);
        assert_string_equal(res.hyps[i].text, text);
        free(text);
        free(ids);
    }
    mt_decode_result_free(&res);

    /* the loss of `prompt hypothesis <eos>` counts every hypothesis token and the <eos>, which
     * is also <pad> here (a finetune learns where to stop) */
    {
        int32_t row[MAX_IDS * 2];
        int n = r->n_ids[0];
        memcpy(row, r->ids[0], (size_t)n * sizeof *row);
        memcpy(row + n, r->greedy[0], (size_t)r->n_greedy[0] * sizeof *row);
        assert_int_equal(r->greedy[0][r->n_greedy[0] - 1], cfg->eos_id);
        mt_batch b = {.B = 1, .T = n + r->n_greedy[0], .ids = row};
        mt_step_opts so = {0};
        double loss;
        size_t n_tokens;
        assert_int_equal(mt_model_loss(m, &b, &so, &loss, &n_tokens), 0);
        assert_int_equal(n_tokens, (size_t)r->n_greedy[0]);
    }

    /* probes: the attention maps of both layers over the template's prompt and the hypothesis,
     * each row of each head a distribution over the positions up to its own */
    mt_probe_record rec;
    assert_int_equal(mt_probe_run(m, r->ids[0], r->n_ids[0], r->greedy[0], 3, NULL, &rec), 0);
    assert_int_equal(rec.n_prompt, r->n_ids[0]);
    assert_int_equal(rec.n_tokens, r->n_ids[0] + 3);
    int maps = 0;
    for (int i = 0; i < rec.n_maps; i++) {
        const mt_probe_map *map = &rec.maps[i];
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
    mt_probe_record_free(&rec);

    mt_runner_close(run);
    free_reference(r);
}

static void test_safetensors(void **state)
{
    (void)state;
    check_dir(FIX "/st");
}

static void test_pytorch_bin(void **state)
{
    (void)state;
    check_dir(FIX "/bin");
}

/* GPTNeoXConfig's other options: use_parallel_residual false, rotary_pct 0.5 at base 100, a
 * tied embedding, random biases and norms; a config.json without an mtlab block, so the prompt
 * is the text alone */
static void test_sequential_variant(void **state)
{
    (void)state;
    reference *r = load_reference();
    mt_runner *run = mt_runner_open(FIX "/seq", "cpu", 0);
    if (!run) fail_msg("%s", mt_last_error());
    const mt_model_config *cfg = mt_model_get_config(run->model);
    assert_int_equal(cfg->parallel_residual, 0);
    assert_true(cfg->rotary_pct == 0.5f);
    assert_true(cfg->rope_theta == 100.0f);
    assert_int_equal(cfg->tie_embeddings, 1);
    assert_int_equal(cfg->pad_id, cfg->eos_id); /* no pad_token_id: generate() pads with eos */
    assert_string_equal(cfg->prompt, "{src}");
    size_t n_logits = 0;
    float *want = (float *)test_read_file(FIX "/seq_logits.f32", &n_logits);
    assert_non_null(want);
    const float *w = want;
    float worst = 0;
    for (int i = 0; i < 2; i++) {
        int *ids;
        size_t T;
        assert_int_equal(mt_source_encode(run->model, run->tok, r->text[i], &ids, &T), 0);
        float *got = malloc(T * r->V * sizeof *got);
        mt_batch b = {.B = 1, .T = (int)T, .ids = (int32_t *)ids};
        assert_int_equal(mt_model_forward(run->model, &b, got), 0);
        float d = max_abs_diff(got, w, T * r->V);
        if (d > worst) worst = d;
        w += T * r->V;
        free(got);
        free(ids);
    }
    assert_int_equal((size_t)(w - want) * sizeof *want, n_logits);
    printf("sequential variant: logits within %.3g of transformers'\n", worst);
    assert_true(worst < 1e-4f);
    free(want);
    mt_runner_close(run);
    free_reference(r);
}

/* Saved again (a finetune's bundle, forward --save): tokenizer.json keeps its name, so that
 * transformers finds it, config.json keeps the prompt, and the copy reloads the same model. */
static void test_save_round_trip(void **state)
{
    (void)state;
    mt_runner *run = mt_runner_open(FIX "/bin", "cpu", 0);
    if (!run) fail_msg("%s", mt_last_error());
    char dir[256];
    assert_int_equal(test_make_tmpdir(dir, sizeof dir, "neox-hf-save"), 0);
    char out[300];
    snprintf(out, sizeof out, "%s/copy", dir);
    if (mt_model_save(run->model, out, mt_model_tokenizer_path(run->model), MT_DT_F32))
        fail_msg("%s", mt_last_error());
    char path[400];
    snprintf(path, sizeof path, "%s/tokenizer.json", out);
    assert_int_equal(access(path, R_OK), 0);
    snprintf(path, sizeof path, "%s/tokenizer.model", out);
    assert_int_not_equal(access(path, F_OK), 0);
    mt_runner *again = mt_runner_open(out, "cpu", 0);
    if (!again) fail_msg("%s", mt_last_error());
    assert_string_equal(mt_model_get_config(again->model)->prompt, "{src}<sep>");
    size_t n = mt_model_param_block_size(run->model);
    assert_int_equal(mt_model_param_block_size(again->model), n);
    assert_memory_equal(mt_model_params(run->model), mt_model_params(again->model),
                        n * sizeof(float));
    mt_runner_close(again);
    mt_runner_close(run);
    test_remove_tree(dir);
}

/* A copy of st/ with one file replaced by text. */
static void variant(char *dir, size_t len, const char *file, const char *text)
{
    assert_int_equal(test_make_tmpdir(dir, len, "neox-hf"), 0);
    static const char *const files[] = {"config.json", "model.safetensors", "tokenizer.json",
                                        "tokenizer_config.json", "special_tokens_map.json"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char from[512], to[512];
        snprintf(from, sizeof from, FIX "/st/%s", files[i]);
        snprintf(to, sizeof to, "%s/%s", dir, files[i]);
        size_t n;
        char *data = test_read_file(from, &n);
        assert_non_null(data);
        if (!strcmp(files[i], file)) test_write_text(to, text);
        else test_write_file(to, data, n);
        free(data);
    }
}

/* config.json with `key` set to value (text replaced in the fixture's) */
static char *config_with(const char *from, const char *to)
{
    char *text = test_read_file(FIX "/st/config.json", NULL);
    assert_non_null(text);
    char *at = strstr(text, from);
    assert_non_null(at);
    char *out = malloc(strlen(text) + strlen(to) + 1);
    sprintf(out, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    free(text);
    return out;
}

static void expect_open_error(const char *from, const char *to, const char *const *want)
{
    char dir[256];
    char *config = config_with(from, to);
    variant(dir, sizeof dir, "config.json", config);
    free(config);
    mt_runner *run = mt_runner_open(dir, "cpu", 0);
    assert_null(run);
    const char *err = mt_last_error();
    for (int i = 0; want[i]; i++)
        if (!strstr(err, want[i])) fail_msg("'%s' not in: %s", want[i], err);
    test_remove_tree(dir);
}

static void test_special_ids(void **state)
{
    (void)state;
    /* id 40 is a letter in tokenizer.json, not a special token */
    expect_open_error(
        "\"eos_token_id\": 0", "\"eos_token_id\": 40",
        (const char *const[]){"config.json", "eos_token_id", "40", "tokenizer.json", NULL});
    expect_open_error(
        "\"bos_token_id\": 0", "\"bos_token_id\": 0, \"pad_token_id\": 599",
        (const char *const[]){"config.json", "pad_token_id", "599", "tokenizer.json", NULL});
    /* a vocabulary the weights do not have */
    expect_open_error(
        "\"vocab_size\": 600", "\"vocab_size\": 1000",
        (const char *const[]){"model.safetensors", "gpt_neox.embed_in.weight", "(1000, 64)", NULL});
    /* a template without its place for the source */
    expect_open_error("\"prompt\": \"{src}<sep>\"", "\"prompt\": \"<sep>\"",
                      (const char *const[]){"config.json", "mtlab.prompt", "{src}", NULL});
}

/* GPTNeoXConfig keys mtlab's model cannot follow, each refused naming the file and the key */
static void test_config_keys(void **state)
{
    (void)state;
    expect_open_error("\"hidden_act\": \"gelu\"", "\"hidden_act\": \"gelu_new\"",
                      (const char *const[]){"config.json", "hidden_act", "gelu_new", NULL});
    expect_open_error(
        "\"rotary_pct\": 0.25", "\"rotary_pct\": 0.5",
        (const char *const[]){"config.json", "partial_rotary_factor", "rotary_pct", NULL});
    expect_open_error("\"rotary_emb_base\": 10000", "\"rotary_emb_base\": 500",
                      (const char *const[]){"config.json", "rope_theta", "rotary_emb_base", NULL});
    expect_open_error("\"rope_scaling\": null", "\"rope_scaling\": {\"type\": \"linear\"}",
                      (const char *const[]){"config.json", "rope_scaling", NULL});
    expect_open_error("\"attention_bias\": true", "\"attention_bias\": false",
                      (const char *const[]){"config.json", "attention_bias", NULL});
    expect_open_error("\"attention_dropout\": 0.0", "\"attention_dropout\": 0.1",
                      (const char *const[]){"config.json", "attention_dropout", NULL});
    expect_open_error("\"num_attention_heads\": 4", "\"num_attention_heads\": 3",
                      (const char *const[]){"heads", "hidden_size", NULL});
    /* heads of 16 dims: rotary_pct 0.2 rotates int(3.2) = 3, an odd number */
    {
        char *config =
            config_with("\"partial_rotary_factor\": 0.25", "\"partial_rotary_factor\": 0.2");
        char *at = strstr(config, "\"rotary_pct\": 0.25");
        assert_non_null(at);
        memcpy(at, "\"rotary_pct\": 0.20", strlen("\"rotary_pct\": 0.20"));
        char dir[256];
        variant(dir, sizeof dir, "config.json", config);
        free(config);
        assert_null(mt_runner_open(dir, "cpu", 0));
        if (!strstr(mt_last_error(), "odd")) fail_msg("no 'odd' in: %s", mt_last_error());
        test_remove_tree(dir);
    }
}

/* another model's tokenizer.json beside the config */
static void test_other_tokenizer(void **state)
{
    (void)state;
    char dir[256];
    char *other = test_read_file("tests/fixtures/hf_tokenizer/gpt2.json", NULL);
    assert_non_null(other);
    variant(dir, sizeof dir, "tokenizer.json", other);
    free(other);
    assert_null(mt_runner_open(dir, "cpu", 0));
    const char *err = mt_last_error();
    static const char *const want[] = {"tokenizer.json", "config.json vocab_size", "600", NULL};
    for (int i = 0; want[i]; i++)
        if (!strstr(err, want[i])) fail_msg("'%s' not in: %s", want[i], err);
    test_remove_tree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_safetensors),        cmocka_unit_test(test_pytorch_bin),
        cmocka_unit_test(test_sequential_variant), cmocka_unit_test(test_save_round_trip),
        cmocka_unit_test(test_special_ids),        cmocka_unit_test(test_config_keys),
        cmocka_unit_test(test_other_tokenizer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
