/* Text in and out: mt_translate (encode, sort by length, batch, restore input order, decode
 * to text, vocabulary limit) and the `mtlab translate` command run in-process with its
 * stdout/stderr captured (sentences, paragraphs, windows, errors), plus the paragraph
 * splitter. A small sentencepiece model is trained per test from the tokenizer fixtures and a
 * tiny random Mamba bundle is saved beside it in a mkdtemp directory. */
#include "test_util.h"

#include <fcntl.h>
#include <ftw.h>
#include <omp.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/commands.h"
#include "common/translate_input.h"
#include "mtlab/decode.h"
#include "mtlab/error.h"
#include "mtlab/model.h"
#include "mtlab/tokenizer.h"

static mt_decode_opts opts_beam(int beam, int max_new)
{
    mt_decode_opts o;
    mt_decode_opts_init(&o);
    o.beam = beam;
    o.max_new_tokens = max_new;
    return o;
}

/* a[0..n) == b[0..n); either may be NULL when n is 0 */
static int same_ids(const int32_t *a, const int32_t *b, int n)
{
    return n == 0 || !memcmp(a, b, (size_t)n * sizeof *a);
}

/* The same search on the same sentence, batched differently: the same ids and scores. */
static void assert_same_hyp(const mt_hypothesis *a, const mt_hypothesis *b, int sentence)
{
    if (a->n_ids != b->n_ids || a->finished != b->finished || !same_ids(a->ids, b->ids, a->n_ids))
        fail_msg("sentence %d: %d ids (finished %d) vs %d ids (finished %d)", sentence, a->n_ids,
                 a->finished, b->n_ids, b->finished);
    double tol = 1e-3 * (1.0 + fabs(a->logprob));
    if (fabs(a->logprob - b->logprob) > tol)
        fail_msg("sentence %d: logprob %.6f vs %.6f", sentence, a->logprob, b->logprob);
}

/* ---------------------------------------------------------------- paragraph splitting */

static void test_paragraph_splitting(void **state)
{
    (void)state;
    const char *const sentences[] = {"  ", "uno", "dos  dos", "", "\t"};
    tr_units u;
    tr_split(&u, sentences, 5, 0);
    assert_int_equal(u.n, 5); /* one unit per line, blank ones too: the output stays aligned */
    assert_string_equal(u.units[0].text, "  ");
    assert_string_equal(u.units[1].text, "uno");
    assert_string_equal(u.units[2].text, "dos  dos");
    assert_int_equal(u.units[2].line, 3);
    assert_string_equal(u.units[4].text, "\t");
    tr_units_free(&u);

    const char *const paras[] = {"", "Uno,", "  dos. ", " \t", "", "Tres.", "", "cuatro", "x", ""};
    tr_split(&u, paras, 10, 0); /* a blank line in sentence mode is an empty translation */
    assert_int_equal(u.n, 10);
    tr_units_free(&u);
    tr_split(&u, paras, 10, 1);
    assert_int_equal(u.n, 3);
    assert_string_equal(u.units[0].text, "Uno, dos.");
    assert_int_equal(u.units[0].line, 2);
    assert_string_equal(u.units[1].text, "Tres.");
    assert_int_equal(u.units[1].line, 6);
    assert_string_equal(u.units[2].text, "cuatro x");
    assert_int_equal(u.units[2].line, 8);
    assert_int_equal(u.paragraphs, 1);
    tr_units_free(&u);

    /* forced paragraphs without blank lines: the whole input is one paragraph */
    tr_split(&u, sentences, 5, 1);
    assert_int_equal(u.n, 1);
    assert_string_equal(u.units[0].text, "uno dos  dos");
    tr_units_free(&u);

    tr_split(&u, sentences, 0, 1);
    assert_int_equal(u.n, 0);
    const char *const blanks[] = {"", " "};
    tr_split(&u, blanks, 2, 1);
    assert_int_equal(u.n, 0);
    tr_split(&u, blanks, 2, 0);
    assert_int_equal(u.n, 2); /* two empty translations, one per line */
    tr_units_free(&u);
}

/* ---------------------------------------------------------------- mt_translate and the CLI */

/* The model's vocabulary is 4 larger, as a padded one is: ids 100..103 must never come out. */
#define TOK_VOCAB 100

typedef struct {
    char dir[64];
    char tok_path[128], bundle[128];
    mt_tokenizer *tok;
    mt_model *m;
} text_fixture;

static int text_setup(void **state)
{
    text_fixture *fx = calloc(1, sizeof *fx);
    snprintf(fx->dir, sizeof fx->dir, "/tmp/mtlab-decode-XXXXXX");
    if (!mkdtemp(fx->dir)) return -1;
    snprintf(fx->tok_path, sizeof fx->tok_path, "%s/spm.model", fx->dir);
    snprintf(fx->bundle, sizeof fx->bundle, "%s/bundle", fx->dir);
    if (test_train_fixture_tokenizer(fx->dir, TOK_VOCAB, 3) ||
        !(fx->tok = mt_tokenizer_load(fx->tok_path))) {
        fprintf(stderr, "tokenizer: %s\n", mt_last_error());
        return -1;
    }
    mt_model_config cfg;
    mt_model_preset(&cfg, "mamba-small");
    cfg.vocab_size = TOK_VOCAB + 4;
    cfg.d_model = 32;
    cfg.n_layers = 2;
    cfg.d_state = 8;
    cfg.dt_rank = 2;
    fx->m = mt_model_create(&cfg, mt_backend_cpu(), 5);
    if (!fx->m || mt_model_save(fx->m, fx->bundle, fx->tok_path, MT_DT_F32)) {
        fprintf(stderr, "model: %s\n", mt_last_error());
        return -1;
    }
    *state = fx;
    return 0;
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

static int text_teardown(void **state)
{
    text_fixture *fx = *state;
    mt_model_free(fx->m);
    mt_tokenizer_free(fx->tok);
    nftw(fx->dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
    free(fx);
    return 0;
}

static const char *const TEXTS[] = {
    "El pingüino sigue en Cádiz.",
    "¡Qué lástima!",
    "“Nunca es tarde”, dijo el cigüeñal del camión, y el jardín siguió en silencio.",
    "sí",
    "The penguin is still in the garden.",
    "Cuidado con el escalón",
};
#define N_TEXTS 6

typedef struct {
    int finals[N_TEXTS];
    int32_t final[N_TEXTS][64];
    int n_final[N_TEXTS];
} index_recorder;

static void record_index(void *user, const mt_decode_event *ev)
{
    index_recorder *r = user;
    assert_true(ev->sentence >= 0 && ev->sentence < N_TEXTS);
    if (!ev->final) return;
    r->finals[ev->sentence]++;
    r->n_final[ev->sentence] = ev->n_tokens;
    if (ev->n_tokens)
        memcpy(r->final[ev->sentence], ev->tokens, (size_t)ev->n_tokens * sizeof(int32_t));
}

static void test_translate_texts(void **state)
{
    text_fixture *fx = *state;
    mt_decode_opts o = opts_beam(3, 12);
    index_recorder rec = {0};
    o.on_token = record_index;
    o.user = &rec;
    mt_decode_result all;
    /* batches of 2 after sorting by length: the callback and results still use input order */
    if (mt_translate(fx->m, fx->tok, TEXTS, N_TEXTS, 2, &o, &all)) fail_msg("%s", mt_last_error());
    assert_int_equal(all.n, N_TEXTS);
    o.on_token = NULL;
    for (int i = 0; i < N_TEXTS; i++) {
        const mt_hypothesis *h = &all.hyps[i];
        assert_non_null(h->text);
        assert_int_equal(rec.finals[i], 1);
        assert_int_equal(rec.n_final[i], h->n_ids);
        assert_true(same_ids(rec.final[i], h->ids, h->n_ids));
        for (int t = 0; t < h->n_ids; t++) assert_true(h->ids[t] < TOK_VOCAB);
        char *text = mt_tokenizer_decode(fx->tok, (const int *)h->ids, (size_t)h->n_ids);
        assert_string_equal(text, h->text);
        free(text);
        mt_decode_result one;
        assert_int_equal(mt_translate(fx->m, fx->tok, &TEXTS[i], 1, 1, &o, &one), 0);
        assert_same_hyp(&one.hyps[0], h, i);
        assert_string_equal(one.hyps[0].text, h->text);
        mt_decode_result_free(&one);
    }
    mt_decode_result_free(&all);

    const char *const bad[] = {"bien", "mal \xC3\x28 aqui"};
    assert_int_equal(mt_translate(fx->m, fx->tok, bad, 2, 2, &o, &all), -1);
    assert_int_equal(all.failed_input, 1);
    assert_non_null(strstr(mt_last_error(), "input 1: invalid UTF-8 at byte 4"));
    assert_int_equal(mt_translate(fx->m, fx->tok, bad, 0, 2, &o, &all), 0);
    assert_int_equal(all.n, 0);
    assert_null(all.hyps);
}

static size_t backend_allocs;
static void *counted_alloc(size_t bytes)
{
    backend_allocs++;
    return mt_backend_cpu()->alloc(bytes);
}

/* A fresh model with the fixture's weights whose backend counts its allocations. */
static mt_model *counted_model(const text_fixture *fx, mt_backend *counting)
{
    *counting = *mt_backend_cpu();
    counting->alloc = counted_alloc;
    mt_model *m = mt_model_create(mt_model_get_config(fx->m), counting, 5);
    assert_non_null(m);
    return m;
}

/* Batches run shortest first, each needing a larger decoding state than the one before: the
 * longest batch's memory is reserved before the first, and no batch allocates any more. */
static void test_translate_reserves_longest_batch(void **state)
{
    text_fixture *fx = *state;
    /* the last batch: the two longest sources, ties to the later text (mt_translate's order) */
    int *ids[N_TEXTS], len[N_TEXTS], last = -1, second = -1;
    for (int i = 0; i < N_TEXTS; i++) {
        size_t n;
        assert_int_equal(mt_source_encode(fx->m, fx->tok, TEXTS[i], &ids[i], &n), 0);
        len[i] = (int)n;
        if (last < 0 || len[i] >= len[last]) second = last, last = i;
        else if (second < 0 || len[i] >= len[second]) second = i;
    }
    const int32_t *longest[] = {(const int32_t *)ids[second], (const int32_t *)ids[last]};
    int longest_len[] = {len[second], len[last]};
    for (int beam = 1; beam <= 3; beam += 2) {
        mt_backend counting;
        mt_decode_opts o = opts_beam(beam, 12);
        o.vocab_limit = mt_tokenizer_vocab_size(fx->tok); /* as mt_translate decodes */
        mt_model *m = counted_model(fx, &counting);
        size_t before = backend_allocs;
        assert_int_equal(mt_decode_reserve(m, longest, longest_len, 2, &o), 0);
        size_t reserved = backend_allocs - before;
        mt_model_free(m);

        m = counted_model(fx, &counting);
        mt_decode_result r;
        before = backend_allocs;
        if (mt_translate(m, fx->tok, TEXTS, N_TEXTS, 2, &o, &r)) fail_msg("%s", mt_last_error());
        size_t all = backend_allocs - before;
        mt_decode_result_free(&r);
        mt_model_free(m);
        if (all != reserved)
            fail_msg("beam %d: %zu backend allocations for 3 batches, %zu to reserve the longest",
                     beam, all, reserved);
    }
    for (int i = 0; i < N_TEXTS; i++) free(ids[i]);
}

/* Encoding once and translating the ids (in windows) gives what mt_translate gives; a bad
 * source is found before anything is decoded, by index, with a message that names no index. */
static void test_translate_encoded_sources(void **state)
{
    text_fixture *fx = *state;
    mt_decode_opts o = opts_beam(2, 0);
    mt_decode_result all, part;
    assert_int_equal(mt_translate(fx->m, fx->tok, TEXTS, N_TEXTS, 2, &o, &all), 0);
    mt_sources s;
    int bad = 7;
    assert_int_equal(mt_sources_encode(&s, fx->m, fx->tok, TEXTS, N_TEXTS, &o, &bad), 0);
    assert_int_equal(bad, -1);
    assert_int_equal(s.n, N_TEXTS);
    for (int first = 0; first < N_TEXTS; first += 4) {
        int n = N_TEXTS - first < 4 ? N_TEXTS - first : 4;
        assert_int_equal(mt_translate_ids(fx->m, fx->tok, (const int32_t *const *)s.ids + first,
                                          s.len + first, n, 2, &o, &part),
                         0);
        assert_int_equal(part.n, n);
        for (int i = 0; i < n; i++) {
            assert_same_hyp(&part.hyps[i], &all.hyps[first + i], first + i);
            assert_string_equal(part.hyps[i].text, all.hyps[first + i].text);
        }
        mt_decode_result_free(&part);
    }
    mt_sources_free(&s);
    mt_decode_result_free(&all);

    const char *const texts[] = {"bien", "sí", "mal \xC3\x28 aqui", "otra \xFF"};
    assert_int_equal(mt_sources_encode(&s, fx->m, fx->tok, texts, 4, &o, &bad), -1);
    assert_int_equal(bad, 2);
    assert_string_equal(mt_last_error(), "invalid UTF-8 at byte 4 (0xC3)");
    assert_int_equal(s.n, 0);
    assert_null(s.ids);
    /* a source longer than the decoder takes is found here too, not when its batch comes */
    size_t len = 3 * 70000;
    char *huge = malloc(len + 1);
    for (size_t i = 0; i < len; i += 3) memcpy(huge + i, "sí ", 3);
    huge[len] = '\0';
    const char *const long_texts[] = {"bien", huge};
    assert_int_equal(mt_sources_encode(&s, fx->m, fx->tok, long_texts, 2, &o, &bad), -1);
    assert_int_equal(bad, 1);
    assert_non_null(strstr(mt_last_error(), "is outside 0..65536"));
    assert_null(strstr(mt_last_error(), "input"));
    free(huge);
}

/* Run `mtlab translate ARGS` with stdout and stderr captured into files; returns its status. */
static int run_translate(const text_fixture *fx, const char *const *args, int n_args, char *out,
                         size_t out_cap, char *err, size_t err_cap)
{
    char out_path[160], err_path[160];
    snprintf(out_path, sizeof out_path, "%s/stdout", fx->dir);
    snprintf(err_path, sizeof err_path, "%s/stderr", fx->dir);
    char *argv[16];
    argv[0] = (char *)"translate";
    for (int i = 0; i < n_args; i++) argv[i + 1] = (char *)args[i];
    fflush(stdout);
    fflush(stderr);
    int saved_out = dup(1), saved_err = dup(2);
    int fo = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int fe = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fo, 1);
    dup2(fe, 2);
    int rc = cmd_translate.run(n_args + 1, argv);
    fflush(stdout);
    fflush(stderr);
    dup2(saved_out, 1);
    dup2(saved_err, 2);
    close(fo), close(fe), close(saved_out), close(saved_err);
    const char *paths[2] = {out_path, err_path};
    char *bufs[2] = {out, err};
    size_t caps[2] = {out_cap, err_cap};
    for (int k = 0; k < 2; k++) {
        FILE *f = fopen(paths[k], "rb");
        size_t got = fread(bufs[k], 1, caps[k] - 1, f);
        bufs[k][got] = '\0';
        fclose(f);
    }
    return rc;
}

static void write_text(const text_fixture *fx, const char *name, const char *text, char *path,
                       size_t cap)
{
    snprintf(path, cap, "%s/%s", fx->dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* What the engine gives for texts, one translation per line joined by sep. */
static void expected_output(const text_fixture *fx, const char *const *texts, int n,
                            const char *sep, char *out, size_t cap)
{
    mt_decode_opts o = opts_beam(2, 0);
    mt_decode_result r;
    assert_int_equal(mt_translate(fx->m, fx->tok, texts, n, 1, &o, &r), 0);
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        if (i) strncat(out, sep, cap - strlen(out) - 1);
        strncat(out, r.hyps[i].text, cap - strlen(out) - 1);
        strncat(out, "\n", cap - strlen(out) - 1);
    }
    mt_decode_result_free(&r);
}

static void test_translate_command(void **state)
{
    text_fixture *fx = *state;
    static char out[1 << 16], err[4096], want[1 << 16];
    char in[160];

    /* 20 sentences, batch 2: three windows of up to 16, each sorted by length */
    const char *lines[20];
    char sentences[4096] = "";
    for (int i = 0; i < 20; i++) {
        lines[i] = TEXTS[(i * 5) % N_TEXTS];
        strcat(sentences, lines[i]);
        strcat(sentences, "\n");
    }
    write_text(fx, "sentences.txt", sentences, in, sizeof in);
    const char *a1[] = {"-m", fx->bundle, "-i", in, "--beam", "2", "--batch", "2"};
    assert_int_equal(run_translate(fx, a1, 8, out, sizeof out, err, sizeof err), 0);
    expected_output(fx, lines, 20, "", want, sizeof want);
    assert_string_equal(out, want);
    assert_string_equal(err, "");

    /* with --paragraphs, blank-line separated blocks are paragraphs: lines joined, outputs a
     * blank line apart */
    write_text(fx, "paras.txt", "\nEl pingüino sigue\n  en Cádiz. \n\n\n¡Qué lástima!\r\n\n", in,
               sizeof in);
    const char *paras[] = {"El pingüino sigue en Cádiz.", "¡Qué lástima!"};
    const char *a2[] = {"-m", fx->bundle, "-i", in, "--beam", "2", "--verbose", "--paragraphs"};
    assert_int_equal(run_translate(fx, a2, 8, out, sizeof out, err, sizeof err), 0);
    expected_output(fx, paras, 2, "\n", want, sizeof want);
    assert_string_equal(out, want);
    assert_non_null(strstr(err, "2 inputs"));
    /* without it the same input keeps one output line per input line: blank ones stay blank */
    const char *a2l[] = {"-m", fx->bundle, "-i", in, "--beam", "2"};
    assert_int_equal(run_translate(fx, a2l, 6, out, sizeof out, err, sizeof err), 0);
    size_t newlines = 0;
    for (const char *c = out; *c; c++) newlines += *c == '\n';
    assert_int_equal(newlines, 7);
    assert_true(out[0] == '\n' && !strncmp(out + strlen(out) - 2, "\n\n", 2));

    /* --paragraphs makes a block of the whole input */
    write_text(fx, "one.txt", "El pingüino sigue\nen Cádiz.\n", in, sizeof in);
    const char *a3[] = {"-m", fx->bundle, "-i", in, "--beam", "2", "--paragraphs"};
    assert_int_equal(run_translate(fx, a3, 7, out, sizeof out, err, sizeof err), 0);
    expected_output(fx, paras, 1, "", want, sizeof want);
    assert_string_equal(out, want);

    /* errors: invalid UTF-8 names file and line, a bad bundle gives the loader's message */
    write_text(fx, "bad.txt", "bien\nmal \xC3\x28\n", in, sizeof in);
    const char *a4[] = {"-m", fx->bundle, "-i", in};
    assert_int_equal(run_translate(fx, a4, 4, out, sizeof out, err, sizeof err), 1);
    assert_string_equal(out, "");
    assert_non_null(strstr(err, "bad.txt:2: invalid UTF-8 at byte 4"));
    /* nothing is printed before a bad line, however far into the input (here in the second
     * window of 16), and a line inside a paragraph is named by its own number */
    char many[1 << 12] = "";
    for (int i = 0; i < 20; i++) {
        strcat(many, i == 17 ? "mal \xC3\x28" : TEXTS[i % N_TEXTS]);
        strcat(many, "\n");
    }
    write_text(fx, "late.txt", many, in, sizeof in);
    const char *late[] = {"-m", fx->bundle, "-i", in, "--batch", "2"};
    assert_int_equal(run_translate(fx, late, 6, out, sizeof out, err, sizeof err), 1);
    assert_string_equal(out, "");
    assert_non_null(strstr(err, "late.txt:18: invalid UTF-8 at byte 4 (0xC3)"));
    write_text(fx, "para.txt", "uno\n\ndos\ntres \xFF\n", in, sizeof in);
    const char *a4p[] = {"-m", fx->bundle, "-i", in, "--paragraphs"};
    assert_int_equal(run_translate(fx, a4p, 5, out, sizeof out, err, sizeof err), 1);
    assert_string_equal(out, "");
    assert_non_null(strstr(err, "para.txt:4: invalid UTF-8 at byte 5 (0xFF)"));
    /* a source too long for the model in a later window fails before any output too */
    static char longer[1 << 19];
    char *end = longer;
    for (int i = 0; i < 20; i++) {
        if (i == 18)
            for (int k = 0; k < 70000; k++) end += sprintf(end, "sí ");
        else end += sprintf(end, "%s", TEXTS[i % N_TEXTS]);
        *end++ = '\n';
    }
    *end = '\0';
    write_text(fx, "long.txt", longer, in, sizeof in);
    assert_int_equal(run_translate(fx, late, 6, out, sizeof out, err, sizeof err), 1);
    assert_string_equal(out, "");
    assert_non_null(strstr(err, "long.txt:19: source of "));
    const char *a5[] = {"-m", fx->dir, "-i", in};
    assert_int_equal(run_translate(fx, a5, 4, out, sizeof out, err, sizeof err), 1);
    assert_non_null(strstr(err, "config.json"));
    const char *a6[] = {"-m", fx->bundle, "--beam", "0"};
    assert_int_equal(run_translate(fx, a6, 4, out, sizeof out, err, sizeof err), 2);
    assert_string_equal(err,
                        "mtlab translate: --beam takes a whole number from 1 to 256, not '0'\n");

    /* blank input: blank lines out, one per line; as paragraphs, nothing to do */
    write_text(fx, "empty.txt", "\n \n", in, sizeof in);
    const char *a7[] = {"-m", fx->bundle, "-i", in};
    assert_int_equal(run_translate(fx, a7, 4, out, sizeof out, err, sizeof err), 0);
    assert_string_equal(out, "\n\n");
    assert_string_equal(err, "");
    const char *a8[] = {"-m", fx->bundle, "-i", in, "--paragraphs"};
    assert_int_equal(run_translate(fx, a8, 5, out, sizeof out, err, sizeof err), 0);
    assert_string_equal(out, "");
}

int main(void)
{
    /* tiny models: OpenMP's fork/join would cost more than the work (see test_decode.c) */
    omp_set_num_threads(1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_paragraph_splitting),
        cmocka_unit_test_setup_teardown(test_translate_texts, text_setup, text_teardown),
        cmocka_unit_test_setup_teardown(test_translate_reserves_longest_batch, text_setup,
                                        text_teardown),
        cmocka_unit_test_setup_teardown(test_translate_encoded_sources, text_setup, text_teardown),
        cmocka_unit_test_setup_teardown(test_translate_command, text_setup, text_teardown),
    };
    return cmocka_run_group_tests_name("translate", tests, NULL, NULL);
}
