/* An opus-mt checkpoint as the hub holds it (tests/fixtures/marian/opus-mt-tiny: config.json,
 * model.safetensors and pytorch_model.bin, source.spm, target.spm, vocab.json), against what
 * transformers gives for it (tests/fixtures/marian/make.py): MarianTokenizer's ids and decoded
 * text, logits, greedy and beam-5 generate() token for token, from either weights file; and the
 * errors a wrong or incomplete directory gets. */
#include "test_util.h"

#include <unistd.h>

#include "mtlab/decode.h"
#include "mtlab/error.h"
#include "mtlab/model.h"
#include "mtlab/runner.h"
#include "mtlab/safetensors.h"
#include "mtlab/tokenizer.h"

#define FIXTURE "tests/fixtures/marian"
#define CHECKPOINT FIXTURE "/opus-mt-tiny"
#define LOGIT_TOL 1e-4f
/* make.py's generate(max_length=20): the decoder start, at most 18 tokens, </s> */
#define MAX_NEW 18
#define N_LINES 20
#define MAX_IDS 64

static const char *const MEMBERS[] = {
    "config.json", "model.safetensors", "pytorch_model.bin",     "source.spm",
    "target.spm",  "vocab.json",        "tokenizer_config.json", NULL};

/* Copy the checkpoint into a fresh directory, leaving out the member `skip` (NULL: none). */
static void copy_checkpoint(char *dir, size_t len, const char *skip)
{
    assert_int_equal(test_make_tmpdir(dir, len, "marian"), 0);
    for (int i = 0; MEMBERS[i]; i++) {
        if (skip && !strcmp(MEMBERS[i], skip)) continue;
        char from[512], to[512];
        snprintf(from, sizeof from, "%s/%s", CHECKPOINT, MEMBERS[i]);
        snprintf(to, sizeof to, "%s/%s", dir, MEMBERS[i]);
        size_t n;
        char *data = test_read_file(from, &n);
        assert_non_null(data);
        test_write_file(to, data, n);
        free(data);
    }
}

/* Replace the first `from` in dir/file by `to`. */
static void patch(const char *dir, const char *file, const char *from, const char *to)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    char *text = test_read_file(path, NULL);
    assert_non_null(text);
    char *at = strstr(text, from);
    if (!at) fail_msg("%s: no '%s' to patch", path, from);
    size_t head = (size_t)(at - text), tail = strlen(at + strlen(from));
    char *out = malloc(head + strlen(to) + tail + 1);
    memcpy(out, text, head);
    strcpy(out + head, to);
    strcpy(out + head + strlen(to), at + strlen(from));
    test_write_text(path, out);
    free(out);
    free(text);
}

/* Lines of ids ("5 9 0"): n[i] ids each into ids[i]; returns the number of lines. */
static int read_ids(const char *name, int32_t ids[][MAX_IDS], int *n)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", FIXTURE, name);
    char *text = test_read_file(path, NULL);
    assert_non_null(text);
    int lines = 0;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        assert_true(lines < N_LINES);
        n[lines] = 0;
        char *end;
        for (long v = strtol(line, &end, 10); end != line; v = strtol(line, &end, 10)) {
            assert_true(n[lines] < MAX_IDS);
            ids[lines][n[lines]++] = (int32_t)v;
            line = end;
        }
        lines++;
    }
    free(text);
    return lines;
}

static char **read_lines(const char *name, int *n)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", FIXTURE, name);
    char *text = test_read_file(path, NULL);
    assert_non_null(text);
    char **lines = calloc(N_LINES + 1, sizeof *lines);
    *n = 0;
    for (char *p = text; *p && *n < N_LINES;) {
        char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        lines[*n] = strndup(p, len);
        (*n)++;
        p += len + (nl != NULL);
    }
    free(text);
    return lines;
}

static void free_lines(char **lines)
{
    for (int i = 0; lines[i]; i++) free(lines[i]);
    free(lines);
}

static void test_tokenizer_matches_marian_tokenizer(void **state)
{
    (void)state;
    mt_tokenizer *tok = mt_tokenizer_load(CHECKPOINT);
    if (!tok) fail_msg("%s", mt_last_error());
    assert_int_equal(mt_tokenizer_vocab_size(tok), 616);
    assert_int_equal(mt_tokenizer_special_id(tok, MT_ROLE_EOS), 0);
    assert_int_equal(mt_tokenizer_special_id(tok, MT_ROLE_UNK), 1);
    assert_int_equal(mt_tokenizer_special_id(tok, MT_ROLE_PAD), 615);
    int n_src, n_want[N_LINES];
    char **src = read_lines("sources.es", &n_src);
    static int32_t want[N_LINES][MAX_IDS];
    assert_int_equal(read_ids("source.ids", want, n_want), N_LINES);
    assert_int_equal(n_src, N_LINES);
    int unk = 0, code = 0;
    for (int i = 0; i < N_LINES; i++) {
        int *ids;
        size_t n;
        assert_int_equal(mt_tokenizer_encode(tok, src[i], &ids, &n), 0);
        /* MarianTokenizer appends </s>; mtlab's decoding does (decode.h) */
        assert_int_equal((int)n + 1, n_want[i]);
        for (size_t j = 0; j < n; j++) {
            if (ids[j] != want[i][j])
                fail_msg("line %d id %zu: %d, MarianTokenizer %d", i + 1, j, ids[j], want[i][j]);
            unk += ids[j] == 1;
        }
        code += n && !strcmp(mt_tokenizer_id_to_piece(tok, ids[0]), ">>en<<");
        free(ids);
    }
    assert_true(unk > 0); /* a piece vocab.json lacks */
    assert_int_equal(code, 1); /* the language code, one token */

    int n_greedy[N_LINES], n_text;
    static int32_t greedy[N_LINES][MAX_IDS];
    assert_int_equal(read_ids("greedy.ids", greedy, n_greedy), N_LINES);
    char **text = read_lines("greedy.txt", &n_text);
    for (int i = 0; i < N_LINES; i++) {
        char *got = mt_tokenizer_decode(tok, greedy[i], (size_t)n_greedy[i]);
        assert_non_null(got);
        assert_string_equal(got, text[i]);
        free(got);
    }
    free_lines(text);
    free_lines(src);
    mt_tokenizer_free(tok);
}

/* ref: the logits file under FIXTURE ("logits.safetensors", "sep/logits.safetensors") */
static void check_logits(const char *dir, const char *ref_name)
{
    mt_model *m = mt_model_load(dir, mt_backend_cpu(), 0);
    if (!m) fail_msg("%s: %s", dir, mt_last_error());
    char ref_path[256];
    snprintf(ref_path, sizeof ref_path, "%s/%s", FIXTURE, ref_name);
    mt_safetensors *ref = mt_st_open(ref_path);
    assert_non_null(ref);
    const mt_st_tensor *src = mt_st_find(ref, "src_ids"), *tgt = mt_st_find(ref, "tgt_ids"),
                       *want = mt_st_find(ref, "logits");
    assert_true(src && tgt && want);
    mt_batch b = {.B = (int)tgt->shape[0],
                  .T = (int)tgt->shape[1],
                  .ids = (const int32_t *)tgt->data,
                  .S = (int)src->shape[1],
                  .src = (const int32_t *)src->data};
    float *got = malloc(want->nbytes);
    assert_int_equal(mt_model_forward(m, &b, got), 0);
    float diff = max_abs_diff(got, (const float *)want->data, want->numel);
    print_message("%s: logits max |mtlab - transformers| = %.3g (tolerance %.0e)\n", dir, diff,
                  LOGIT_TOL);
    assert_true(diff < LOGIT_TOL);
    free(got);
    mt_st_close(ref);
    mt_model_free(m);
}

/* Decode every source line alone, as make.py's generate() did, under the given semantics
 * (mtlab/decode.h); the number of lines token-identical to generate()'s. */
static int lines_as_generate(const char *dir, int beam, const char *expected, int semantics)
{
    mt_runner *r = mt_runner_open(dir, NULL, 0);
    if (!r) fail_msg("%s: %s", dir, mt_last_error());
    int n_src[N_LINES], n_want[N_LINES];
    static int32_t src[N_LINES][MAX_IDS], want[N_LINES][MAX_IDS];
    /* the sources beside the expected ids ("beam5.ids", "sep/beam5.ids") */
    char source_ids[64];
    const char *slash = strrchr(expected, '/');
    snprintf(source_ids, sizeof source_ids, "%.*ssource.ids",
             slash ? (int)(slash - expected + 1) : 0, expected);
    assert_int_equal(read_ids(source_ids, src, n_src), N_LINES);
    assert_int_equal(read_ids(expected, want, n_want), N_LINES);
    mt_decode_opts o;
    mt_decode_opts_init(&o);
    o.beam = beam;
    o.max_new_tokens = MAX_NEW;
    o.semantics = semantics;
    int same = 0;
    for (int i = 0; i < N_LINES; i++) {
        const int32_t *s = src[i];
        int len = n_src[i] - 1; /* without MarianTokenizer's </s> */
        mt_decode_result res;
        assert_int_equal(mt_decode(r->model, &s, &len, 1, &o, &res), 0);
        const mt_hypothesis *h = &res.hyps[0];
        /* generate() ends every line with </s>, forced at the length limit */
        assert_int_equal(want[i][n_want[i] - 1], 0);
        int ok = h->n_ids == n_want[i] - 1 &&
                 (h->n_ids == 0 || !memcmp(h->ids, want[i], (size_t)h->n_ids * sizeof(int32_t)));
        if (semantics != MT_SEARCH_MTLAB) assert_true(h->finished);
        if (!ok && semantics != MT_SEARCH_MTLAB) {
            char got[512] = "";
            for (int j = 0; j < h->n_ids; j++)
                snprintf(got + strlen(got), sizeof got - strlen(got), " %d", h->ids[j]);
            print_error("%s beam %d line %d:%s\n", dir, beam, i + 1, got);
        }
        same += ok;
        mt_decode_result_free(&res);
    }
    print_message("%s: beam %d%s, %d/%d lines token-identical to generate()\n", dir, beam,
                  semantics == MT_SEARCH_MTLAB ? " with mtlab's own semantics" : "", same, N_LINES);
    mt_runner_close(r);
    return same;
}

static void check_generate(const char *dir, int beam, const char *expected)
{
    /* a checkpoint without an mtlab block decodes as generate() by itself (MT_SEARCH_AUTO) */
    assert_int_equal(lines_as_generate(dir, beam, expected, MT_SEARCH_AUTO), N_LINES);
}

/* Special tokens typed in the text (</s>, <unk>, <pad>) are those tokens, as MarianTokenizer
 * splits them out before sentencepiece sees the text; the pieces between are segmented each on
 * their own. The ids are MarianTokenizer's (transformers 4.57) for the opus-mt-tiny fixture,
 * less its final </s>:
 *   MarianTokenizer.from_pretrained("tests/fixtures/marian/opus-mt-tiny")(text).input_ids */
static void test_special_tokens_in_the_text(void **state)
{
    (void)state;
    mt_tokenizer *tok = mt_tokenizer_load(CHECKPOINT);
    if (!tok) fail_msg("%s", mt_last_error());
    static const struct {
        const char *text;
        int n;
        int32_t ids[12];
    } cases[] = {
        {"hola </s> mundo", 8, {2, 40, 9, 69, 0, 219, 13, 42}},
        {"hola</s>mundo", 8, {2, 40, 9, 69, 0, 219, 13, 42}},
        {"a  </s>  b", 4, {81, 0, 2, 28}},
        {"</s>", 1, {0}},
        {"a <unk>b", 4, {81, 1, 2, 28}},
        {"x<pad>y", 4, {2, 379, 615, 5}},
        {">>es<< hola >>es<<", 9, {614, 2, 40, 9, 69, 2, 1, 58, 1}},
        {"</s >", 5, {2, 1, 4, 2, 1}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int *ids;
        size_t n;
        assert_int_equal(mt_tokenizer_encode(tok, cases[i].text, &ids, &n), 0);
        int same = (int)n == cases[i].n;
        for (size_t j = 0; same && j < n; j++) same = ids[j] == cases[i].ids[j];
        if (!same) {
            fprintf(stderr, "'%s': got", cases[i].text);
            for (size_t j = 0; j < n; j++) fprintf(stderr, " %d", ids[j]);
            fprintf(stderr, "\n");
            fail_msg("'%s' is not encoded as MarianTokenizer does", cases[i].text);
        }
        free(ids);
    }
    mt_tokenizer_free(tok);
}

static void test_safetensors_matches_transformers(void **state)
{
    (void)state;
    check_logits(CHECKPOINT, "logits.safetensors");
    check_generate(CHECKPOINT, 1, "greedy.ids");
    check_generate(CHECKPOINT, 5, "beam5.ids");
    /* the fixture tells the semantics apart (make.py's PAD_BIAS): mtlab's own beam search,
     * which normalises without <pad>, ends some line otherwise */
    assert_true(lines_as_generate(CHECKPOINT, 5, "beam5.ids", MT_SEARCH_MTLAB) < N_LINES);
}

static void test_pytorch_model_bin_matches_transformers(void **state)
{
    (void)state;
    char dir[256];
    copy_checkpoint(dir, sizeof dir, "model.safetensors");
    check_logits(dir, "logits.safetensors");
    check_generate(dir, 1, "greedy.ids");
    check_generate(dir, 5, "beam5.ids");
    test_remove_tree(dir);
}

/* translate() through the runner: the text MarianTokenizer decodes generate()'s ids to. */
static void test_translate_text(void **state)
{
    (void)state;
    mt_runner *r = mt_runner_open(CHECKPOINT, NULL, 0);
    if (!r) fail_msg("%s", mt_last_error());
    int n_src, n_text;
    char **src = read_lines("sources.es", &n_src), **text = read_lines("greedy.txt", &n_text);
    mt_decode_opts o;
    mt_decode_opts_init(&o);
    o.beam = 1;
    o.max_new_tokens = MAX_NEW;
    mt_decode_result res;
    assert_int_equal(mt_translate(r->model, r->tok, (const char *const *)src, n_src, 0, &o, &res),
                     0);
    for (int i = 0; i < n_src; i++) assert_string_equal(res.hyps[i].text, text[i]);
    mt_decode_result_free(&res);
    free_lines(src);
    free_lines(text);
    mt_runner_close(r);
}

/* Opening dir to run fails with a message holding every one of the `want` strings. */
static void expect_open_error(const char *dir, const char *want1, const char *want2)
{
    mt_runner *r = mt_runner_open(dir, NULL, 0);
    if (r) fail_msg("%s opened; expected an error with '%s'", dir, want1);
    const char *err = mt_last_error();
    print_message("  %s\n", err);
    if (!strstr(err, want1) || (want2 && !strstr(err, want2)))
        fail_msg("error '%s' lacks '%s'%s%s", err, want1, want2 ? " or " : "", want2 ? want2 : "");
}

static void test_errors_name_the_file_and_key(void **state)
{
    (void)state;
    char dir[256];
    copy_checkpoint(dir, sizeof dir, "target.spm");
    expect_open_error(dir, "target.spm", "source.spm, target.spm and vocab.json");
    test_remove_tree(dir);

    copy_checkpoint(dir, sizeof dir, "model.safetensors");
    char bin[300];
    snprintf(bin, sizeof bin, "%s/pytorch_model.bin", dir);
    assert_int_equal(unlink(bin), 0);
    expect_open_error(dir, "missing model.safetensors (or pytorch_model.bin)", NULL);
    test_remove_tree(dir);

    /* an eos_token_id that is not vocab.json's </s> */
    copy_checkpoint(dir, sizeof dir, NULL);
    patch(dir, "config.json", "\"eos_token_id\": 0", "\"eos_token_id\": 1");
    expect_open_error(dir, "config.json: eos_token_id 1 is '<unk>'",
                      "vocab.json, whose end of "
                      "sentence is '</s>' (id 0)");
    test_remove_tree(dir);

    /* a pad_token_id that is not <pad> (and bad_words_ids and decoder start to match) */
    copy_checkpoint(dir, sizeof dir, NULL);
    patch(dir, "config.json", "\"pad_token_id\": 615", "\"pad_token_id\": 614");
    patch(dir, "config.json", "[\n    [\n      615\n    ]\n  ]", "[[614]]");
    expect_open_error(dir, "config.json: pad_token_id 614", "whose padding is '<pad>' (id 615)");
    test_remove_tree(dir);

    copy_checkpoint(dir, sizeof dir, NULL);
    patch(dir, "config.json", "[\n    [\n      615\n    ]\n  ]", "[[615], [7]]");
    expect_open_error(dir, "config.json: bad_words_ids [[615], [7]] is not supported", NULL);
    test_remove_tree(dir);

    copy_checkpoint(dir, sizeof dir, NULL);
    patch(dir, "config.json", "\"normalize_before\": false", "\"normalize_before\": true");
    expect_open_error(dir, "config.json: normalize_before = true is not supported", NULL);
    test_remove_tree(dir);

    /* a vocabulary of another size than the model's */
    copy_checkpoint(dir, sizeof dir, NULL);
    patch(dir, "vocab.json", "\"<pad>\": 615", "\"<pad>\": 615, \"extra\": 616");
    expect_open_error(dir, "vocab.json has 617 pieces but the model", "has 616 rows");
    test_remove_tree(dir);

    copy_checkpoint(dir, sizeof dir, NULL);
    patch(dir, "vocab.json", "\"<unk>\": 1", "\"<unknown>\": 1");
    expect_open_error(dir, "vocab.json: no entry '<unk>'", NULL);
    test_remove_tree(dir);

    copy_checkpoint(dir, sizeof dir, NULL);
    patch(dir, "vocab.json", "\"<unk>\": 1", "\"<unk>\": 0");
    expect_open_error(dir, "vocab.json: id 0 is given to both '</s>' and '<unk>'", NULL);
    test_remove_tree(dir);
}

/* generate() without a length asks the generation config, which for a hub checkpoint is
 * generation_config.json, or config.json where that file was made from it (_from_model_config)
 * and config.json holds generation keys (the hub's opus-mt: max_length 512), or config.json
 * where there is none; max_length L counts the decoder start and the forced </s> (L - 2 new
 * tokens), except that the default 20 counts without the start (19). */
static int default_max_new(const char *dir, int src_len)
{
    mt_runner *r = mt_runner_open(dir, NULL, 0);
    if (!r) fail_msg("%s: %s", dir, mt_last_error());
    mt_decode_opts o;
    mt_decode_opts_init(&o);
    int n = mt_decode_max_new(r->model, src_len, &o);
    mt_runner_close(r);
    return n;
}

static void write_generation_config(const char *dir, const char *keys)
{
    char path[512], text[512];
    snprintf(path, sizeof path, "%s/generation_config.json", dir);
    snprintf(text, sizeof text,
             "{%s\"bad_words_ids\": [[615]], \"decoder_start_token_id\": 615, "
             "\"eos_token_id\": 0, \"forced_eos_token_id\": 0, \"pad_token_id\": 615}\n",
             keys);
    test_write_text(path, text);
}

static void test_max_length_as_generate(void **state)
{
    (void)state;
    char dir[256];
    copy_checkpoint(dir, sizeof dir, NULL);
    /* config.json's max_length 512: 510 new tokens, as many as the 64 positions hold */
    assert_int_equal(default_max_new(dir, 5), 64);
    write_generation_config(dir, "\"_from_model_config\": true, \"max_length\": 12, ");
    assert_int_equal(default_max_new(dir, 5), 64);
    write_generation_config(dir, "\"max_length\": 20, ");
    assert_int_equal(default_max_new(dir, 5), 19);
    write_generation_config(dir, "");
    assert_int_equal(default_max_new(dir, 5), 19);

    /* max_length 12: every greedy line of make.py's (max_length 20) cut to 10 tokens + </s> */
    write_generation_config(dir, "\"max_length\": 12, ");
    assert_int_equal(default_max_new(dir, 5), 10);
    mt_runner *r = mt_runner_open(dir, NULL, 0);
    if (!r) fail_msg("%s: %s", dir, mt_last_error());
    int n_src[N_LINES], n_want[N_LINES];
    static int32_t src[N_LINES][MAX_IDS], want[N_LINES][MAX_IDS];
    assert_int_equal(read_ids("source.ids", src, n_src), N_LINES);
    assert_int_equal(read_ids("greedy.ids", want, n_want), N_LINES);
    mt_decode_opts o;
    mt_decode_opts_init(&o);
    o.beam = 1;
    for (int i = 0; i < N_LINES; i++) {
        const int32_t *s = src[i];
        int len = n_src[i] - 1;
        mt_decode_result res;
        assert_int_equal(mt_decode(r->model, &s, &len, 1, &o, &res), 0);
        int n = n_want[i] - 1 < 10 ? n_want[i] - 1 : 10;
        assert_int_equal(res.hyps[0].n_ids, n);
        assert_true(res.hyps[0].finished);
        assert_memory_equal(res.hyps[0].ids, want[i], (size_t)n * sizeof(int32_t));
        mt_decode_result_free(&res);
    }
    mt_runner_close(r);

    write_generation_config(dir, "\"max_length\": \"long\", ");
    expect_open_error(dir, "generation_config.json", "max_length");
    write_generation_config(dir, "");
    patch(dir, "config.json", "\"max_length\": 512", "\"max_length\": 2");
    expect_open_error(dir, "config.json", "max_length");
    test_remove_tree(dir);
}

/* Separate vocabularies (tests/fixtures/marian/sep, make.py's make_separate): vocab.json gives
 * the source's ids, target_vocab.json the output's; the encoder and the decoder have an
 * embedding each, the output projection is the decoder's. */
#define SEP_CHECKPOINT FIXTURE "/sep/opus-mt-tiny-sep"

static void test_separate_vocabularies_match_transformers(void **state)
{
    (void)state;
    mt_tokenizer *tok = mt_tokenizer_load(SEP_CHECKPOINT);
    if (!tok) fail_msg("%s", mt_last_error());
    int n_src, n_want[N_LINES];
    char **src = read_lines("sources.es", &n_src);
    static int32_t want[N_LINES][MAX_IDS];
    assert_int_equal(read_ids("sep/source.ids", want, n_want), N_LINES);
    for (int i = 0; i < N_LINES; i++) {
        int *ids;
        size_t n;
        assert_int_equal(mt_tokenizer_encode(tok, src[i], &ids, &n), 0);
        assert_int_equal((int)n + 1, n_want[i]);
        assert_memory_equal(ids, want[i], n * sizeof(int));
        free(ids);
    }
    int n_greedy[N_LINES], n_text;
    static int32_t greedy[N_LINES][MAX_IDS];
    assert_int_equal(read_ids("sep/greedy.ids", greedy, n_greedy), N_LINES);
    char **text = read_lines("sep/greedy.txt", &n_text);
    for (int i = 0; i < N_LINES; i++) {
        char *got = mt_tokenizer_decode(tok, greedy[i], (size_t)n_greedy[i]);
        assert_non_null(got);
        assert_string_equal(got, text[i]);
        free(got);
    }
    free_lines(text);
    free_lines(src);
    mt_tokenizer_free(tok);

    check_logits(SEP_CHECKPOINT, "sep/logits.safetensors");
    check_generate(SEP_CHECKPOINT, 1, "sep/greedy.ids");
    check_generate(SEP_CHECKPOINT, 5, "sep/beam5.ids");
}

/* Saved (forward --save, a finetune), the model keeps its two vocabularies and embeddings: the
 * saved bundle decodes generate()'s ids to MarianTokenizer's text and searches as before. */
static void test_separate_vocabularies_saved(void **state)
{
    (void)state;
    mt_model *m = mt_model_load(SEP_CHECKPOINT, mt_backend_cpu(), 0);
    if (!m) fail_msg("%s", mt_last_error());
    char dir[256];
    assert_int_equal(test_make_tmpdir(dir, sizeof dir, "marian-sep-save"), 0);
    if (mt_model_save(m, dir, mt_model_tokenizer_path(m), MT_DT_F32))
        fail_msg("%s", mt_last_error());
    mt_model_free(m);
    mt_tokenizer *tok = mt_tokenizer_load(dir);
    if (!tok) fail_msg("%s", mt_last_error());
    int n_greedy[N_LINES], n_text;
    static int32_t greedy[N_LINES][MAX_IDS];
    assert_int_equal(read_ids("sep/greedy.ids", greedy, n_greedy), N_LINES);
    char **text = read_lines("sep/greedy.txt", &n_text);
    for (int i = 0; i < N_LINES; i++) {
        char *got = mt_tokenizer_decode(tok, greedy[i], (size_t)n_greedy[i]);
        assert_non_null(got);
        assert_string_equal(got, text[i]);
        free(got);
    }
    free_lines(text);
    mt_tokenizer_free(tok);
    /* a saved bundle is mtlab's (its config has an mtlab block): generate()'s semantics asked */
    assert_int_equal(lines_as_generate(dir, 5, "sep/beam5.ids", MT_SEARCH_HF), N_LINES);
    test_remove_tree(dir);
}

static void copy_separate(char *dir, size_t len, const char *skip)
{
    static const char *const members[] = {
        "config.json",       "model.safetensors",     "source.spm", "target.spm", "vocab.json",
        "target_vocab.json", "tokenizer_config.json", NULL};
    assert_int_equal(test_make_tmpdir(dir, len, "marian-sep"), 0);
    for (int i = 0; members[i]; i++) {
        if (skip && !strcmp(members[i], skip)) continue;
        char from[512], to[512];
        snprintf(from, sizeof from, "%s/%s", SEP_CHECKPOINT, members[i]);
        snprintf(to, sizeof to, "%s/%s", dir, members[i]);
        size_t n;
        char *data = test_read_file(from, &n);
        assert_non_null(data);
        test_write_file(to, data, n);
        free(data);
    }
}

static void test_separate_vocabulary_errors(void **state)
{
    (void)state;
    char dir[256];
    copy_separate(dir, sizeof dir, "target_vocab.json");
    expect_open_error(dir, "target_vocab.json", NULL);
    test_remove_tree(dir);

    /* the two vocabularies' </s> at other ids */
    copy_separate(dir, sizeof dir, NULL);
    patch(dir, "target_vocab.json", "\"</s>\": 0,", "\"</s>\": 5,");
    patch(dir, "target_vocab.json", "\".\": 5,", "\".\": 0,");
    expect_open_error(dir, "target_vocab.json: '</s>' is id 5", "the same ids");
    test_remove_tree(dir);

    copy_separate(dir, sizeof dir, NULL);
    patch(dir, "target_vocab.json", "\"<pad>\": 399", "\"<pad>\": 399, \"xyzzy\": 400");
    expect_open_error(dir, "target_vocab.json: 401 entries", "two sizes");
    test_remove_tree(dir);

    /* a shared embedding read from a file whose encoder and decoder embeddings differ would
     * be the encoder's for both: a different model */
    copy_separate(dir, sizeof dir, NULL);
    patch(dir, "config.json", "\"share_encoder_decoder_embeddings\": false",
          "\"share_encoder_decoder_embeddings\": true");
    patch(dir, "tokenizer_config.json", "\"separate_vocabs\": true", "\"separate_vocabs\": false");
    expect_open_error(dir, "model.decoder.embed_tokens.weight", "share_encoder_decoder_embeddings");
    test_remove_tree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tokenizer_matches_marian_tokenizer),
        cmocka_unit_test(test_special_tokens_in_the_text),
        cmocka_unit_test(test_safetensors_matches_transformers),
        cmocka_unit_test(test_pytorch_model_bin_matches_transformers),
        cmocka_unit_test(test_translate_text),
        cmocka_unit_test(test_errors_name_the_file_and_key),
        cmocka_unit_test(test_max_length_as_generate),
        cmocka_unit_test(test_separate_vocabularies_match_transformers),
        cmocka_unit_test(test_separate_vocabulary_errors),
        cmocka_unit_test(test_separate_vocabularies_saved),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
