/* The checks every decoder-only checkpoint from the hub goes through against transformers
 * (hub_checkpoint.h). */
#include "hub_checkpoint.h"

#include "test_util.h"

#include <unistd.h>

#include "mtlab/backend.h"
#include "mtlab/decode.h"
#include "mtlab/error.h"
#include "mtlab/runner.h"

#define MAX_PROMPTS 32
#define MAX_IDS 512

typedef struct {
    int V, max_new, n_logits, n;
    char *text[MAX_PROMPTS];
    int32_t ids[MAX_PROMPTS][MAX_IDS], greedy[MAX_PROMPTS][MAX_IDS], beam[MAX_PROMPTS][MAX_IDS];
    int n_ids[MAX_PROMPTS], n_greedy[MAX_PROMPTS], n_beam[MAX_PROMPTS];
    char *file;
} hub_reference;

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

static hub_reference *load_reference(const char *fix)
{
    char path[300];
    snprintf(path, sizeof path, "%s/reference.txt", fix);
    hub_reference *r = calloc(1, sizeof *r);
    r->file = test_read_file(path, NULL);
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
            fail_msg("%s: unexpected line '%s'", path, line);
        }
        line = nl + 1;
    }
    assert_true(r->n >= 10);
    return r;
}

static void free_reference(hub_reference *r)
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

void hub_check_dir(const hub_case *c, const char *subdir)
{
    char dir[300], path[300];
    snprintf(dir, sizeof dir, "%s/%s", c->fixture, subdir);
    hub_reference *r = load_reference(c->fixture);
    mt_runner *run = mt_runner_open(dir, "cpu", 0);
    if (!run) fail_msg("%s", mt_last_error());
    mt_model *m = run->model;
    const mt_model_config *cfg = mt_model_get_config(m);
    assert_string_equal(cfg->arch, c->arch);
    if (c->check_config) c->check_config(cfg);
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
    snprintf(path, sizeof path, "%s/logits.f32", c->fixture);
    float *want = (float *)test_read_file(path, &n_logits);
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

    /* probes over the template's prompt and the hypothesis */
    mt_probe_record rec;
    assert_int_equal(mt_probe_run(m, r->ids[0], r->n_ids[0], r->greedy[0], 3, NULL, &rec), 0);
    assert_int_equal(rec.n_prompt, r->n_ids[0]);
    assert_int_equal(rec.n_tokens, r->n_ids[0] + 3);
    c->check_probes(&rec);
    mt_probe_record_free(&rec);

    mt_runner_close(run);
    free_reference(r);
}

/* What mt_decode_max_new allows a prompt of P ids with the options every front end starts from;
 * *hf: whether the config picks generate()'s rules. */
static int default_max_new(const char *dir, int P, int *hf)
{
    mt_runner *run = mt_runner_open(dir, "cpu", 0);
    if (!run) fail_msg("%s: %s", dir, mt_last_error());
    *hf = mt_model_get_config(run->model)->hf_generate;
    mt_decode_opts o;
    mt_decode_opts_init(&o);
    int n = mt_decode_max_new(run->model, P, &o);
    mt_runner_close(run);
    return n;
}

static void write_generation_config(const char *dir, int max_length)
{
    char path[300], text[200];
    snprintf(path, sizeof path, "%s/generation_config.json", dir);
    snprintf(text, sizeof text,
             "{\"_from_model_config\": true, \"bos_token_id\": 0, \"eos_token_id\": 0, "
             "\"max_length\": %d}\n",
             max_length);
    test_write_text(path, text);
}

void hub_check_generate_rules(const hub_case *c)
{
    hub_reference *r = load_reference(c->fixture);
    char dir[256];
    hub_variant(c, dir, sizeof dir, "", NULL); /* st/ as it is */
    int hf, P = r->n_ids[0];
    /* no generation config: GenerationConfig's max_length 20, lengthened by the prompt (20
     * new tokens), within max_position_embeddings where the config has one */
    assert_int_equal(default_max_new(dir, P, &hf), 20);
    assert_int_equal(hf, 1);
    mt_runner *run = mt_runner_open(dir, "cpu", 0);
    if (!run) fail_msg("%s", mt_last_error());
    int positions = mt_model_get_config(run->model)->max_positions;
    mt_runner_close(run);
    if (positions > 0) {
        assert_int_equal(default_max_new(dir, positions - 5, &hf), 5);
        assert_int_equal(default_max_new(dir, positions, &hf), -1);
        if (!strstr(mt_last_error(), "no room")) fail_msg("%s", mt_last_error());
    } else {
        assert_int_equal(default_max_new(dir, 4000, &hf), 20);
    }

    /* generation_config.json's max_length counts the prompt: P + 3 allows 3 new tokens, and
     * decoding without a length asked for stops there (generate(max_length=P + 3) gives
     * the greedy reference's first 3) */
    write_generation_config(dir, P + 3);
    assert_int_equal(default_max_new(dir, P, &hf), 3);
    assert_int_equal(default_max_new(dir, P + 3, &hf), -1);
    if (!strstr(mt_last_error(), "max_length")) fail_msg("%s", mt_last_error());
    run = mt_runner_open(dir, "cpu", 0);
    if (!run) fail_msg("%s", mt_last_error());
    mt_decode_opts o;
    mt_decode_opts_init(&o);
    o.beam = 1;
    mt_decode_result res;
    const int32_t *src = r->ids[0];
    if (mt_decode(run->model, &src, &P, 1, &o, &res)) fail_msg("%s", mt_last_error());
    assert_true(r->n_greedy[0] > 3 && r->greedy[0][2] != mt_model_get_config(run->model)->eos_id);
    assert_int_equal(res.hyps[0].n_ids, 3);
    assert_int_equal(res.hyps[0].finished, 0);
    assert_memory_equal(res.hyps[0].ids, r->greedy[0], 3 * sizeof(int32_t));
    mt_decode_result_free(&res);
    mt_runner_close(run);
    test_remove_tree(dir);

    /* what the front ends decode with (mt_translate: only the tokenizer's 597 ids generated)
     * scores as generate() does, over the whole padded vocabulary: the same ids and the same
     * log-probabilities as without the limit */
    char st[300];
    snprintf(st, sizeof st, "%s/st", c->fixture);
    run = mt_runner_open(st, "cpu", 0);
    if (!run) fail_msg("%s", mt_last_error());
    for (int beam = 1; beam <= 5; beam += 4) {
        mt_decode_opts_init(&o);
        o.beam = beam;
        o.max_new_tokens = r->max_new;
        mt_decode_result all, limited;
        const int32_t *srcs[MAX_PROMPTS];
        for (int i = 0; i < r->n; i++) srcs[i] = r->ids[i];
        if (mt_decode(run->model, srcs, r->n_ids, r->n, &o, &all)) fail_msg("%s", mt_last_error());
        o.vocab_limit = mt_tokenizer_vocab_size(run->tok);
        if (mt_decode(run->model, srcs, r->n_ids, r->n, &o, &limited))
            fail_msg("%s", mt_last_error());
        for (int i = 0; i < r->n; i++) {
            assert_int_equal(limited.hyps[i].n_ids, all.hyps[i].n_ids);
            assert_memory_equal(limited.hyps[i].ids, all.hyps[i].ids,
                                (size_t)all.hyps[i].n_ids * sizeof(int32_t));
            if (limited.hyps[i].logprob != all.hyps[i].logprob)
                fail_msg("beam %d, prompt %d: log p %.17g with the limit, %.17g without", beam, i,
                         limited.hyps[i].logprob, all.hyps[i].logprob);
        }
        mt_decode_result_free(&all);
        mt_decode_result_free(&limited);
    }
    mt_runner_close(run);

    /* a bundle mtlab saved names its architecture: mtlab's rules and default length */
    char block[200];
    snprintf(block, sizeof block, "\"architecture\": \"%s\", \"prompt\"", c->arch);
    char *config = hub_config_with(c, "\"prompt\"", block);
    hub_variant(c, dir, sizeof dir, "config.json", config);
    free(config);
    assert_int_equal(default_max_new(dir, P, &hf), 2 * P + 10);
    assert_int_equal(hf, 0);
    test_remove_tree(dir);
    free_reference(r);
}

void hub_check_variant(const hub_case *c, const char *subdir,
                       void (*check_config)(const mt_model_config *cfg))
{
    char dir[300], path[300];
    snprintf(dir, sizeof dir, "%s/%s", c->fixture, subdir);
    hub_reference *r = load_reference(c->fixture);
    mt_runner *run = mt_runner_open(dir, "cpu", 0);
    if (!run) fail_msg("%s", mt_last_error());
    check_config(mt_model_get_config(run->model));
    assert_string_equal(mt_model_get_config(run->model)->prompt, "{src}");
    size_t n_logits = 0;
    snprintf(path, sizeof path, "%s/%s_logits.f32", c->fixture, subdir);
    float *want = (float *)test_read_file(path, &n_logits);
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
    printf("%s: logits within %.3g of transformers'\n", dir, worst);
    assert_true(worst < 1e-4f);
    free(want);
    mt_runner_close(run);
    free_reference(r);
}

void hub_check_save_round_trip(const hub_case *c)
{
    char from[300];
    snprintf(from, sizeof from, "%s/bin", c->fixture);
    mt_runner *run = mt_runner_open(from, "cpu", 0);
    if (!run) fail_msg("%s", mt_last_error());
    char dir[256];
    assert_int_equal(test_make_tmpdir(dir, sizeof dir, "hub-save"), 0);
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

void hub_variant(const hub_case *c, char *dir, size_t len, const char *file, const char *text)
{
    assert_int_equal(test_make_tmpdir(dir, len, "hub"), 0);
    static const char *const files[] = {"config.json", "model.safetensors", "tokenizer.json",
                                        "tokenizer_config.json", "special_tokens_map.json"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char from[512], to[512];
        snprintf(from, sizeof from, "%s/st/%s", c->fixture, files[i]);
        snprintf(to, sizeof to, "%s/%s", dir, files[i]);
        size_t n;
        char *data = test_read_file(from, &n);
        assert_non_null(data);
        if (!strcmp(files[i], file)) test_write_text(to, text);
        else test_write_file(to, data, n);
        free(data);
    }
}

char *hub_config_with(const hub_case *c, const char *from, const char *to)
{
    char path[300];
    snprintf(path, sizeof path, "%s/st/config.json", c->fixture);
    char *text = test_read_file(path, NULL);
    assert_non_null(text);
    char *at = strstr(text, from);
    assert_non_null(at);
    char *out = malloc(strlen(text) + strlen(to) + 1);
    sprintf(out, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    free(text);
    return out;
}

void hub_expect_open_error(const hub_case *c, const char *from, const char *to,
                           const char *const *want)
{
    char dir[256];
    char *config = hub_config_with(c, from, to);
    hub_variant(c, dir, sizeof dir, "config.json", config);
    free(config);
    mt_runner *run = mt_runner_open(dir, "cpu", 0);
    assert_null(run);
    const char *err = mt_last_error();
    for (int i = 0; want[i]; i++)
        if (!strstr(err, want[i])) fail_msg("'%s' not in: %s", want[i], err);
    test_remove_tree(dir);
}

void hub_check_other_tokenizer(const hub_case *c)
{
    char dir[256];
    char *other = test_read_file("tests/fixtures/hf_tokenizer/gpt2.json", NULL);
    assert_non_null(other);
    hub_variant(c, dir, sizeof dir, "tokenizer.json", other);
    free(other);
    assert_null(mt_runner_open(dir, "cpu", 0));
    const char *err = mt_last_error();
    static const char *const want[] = {"tokenizer.json", "config.json vocab_size", "600", NULL};
    for (int i = 0; want[i]; i++)
        if (!strstr(err, want[i])) fail_msg("'%s' not in: %s", want[i], err);
    test_remove_tree(dir);
}
