/* mtlab/runner.h on a tiny bundle: the model on its backend, the tokenizer, the corpus stats
 * when asked for (a broken file is an error naming it), and errors that name the device or
 * the bundle. */
#include "test_util.h"

#include "mtlab/error.h"
#include "mtlab/runner.h"
#include "mtlab/safetensors.h"

#include <math.h>
#include <stdint.h>
#include "tiny_bundle.h"

static char dir[64], bundle[96];

static int make_bundle(void **state)
{
    (void)state;
    if (test_make_tmpdir(dir, sizeof dir, "runner")) return -1;
    return test_tiny_bundle(dir, bundle, sizeof bundle);
}

static int remove_bundle(void **state)
{
    (void)state;
    return test_remove_tree(dir);
}

static void test_runner_opens_model_tokenizer_and_stats(void **state)
{
    (void)state;
    mt_runner *r = mt_runner_open(bundle, NULL, 0);
    assert_non_null(r);
    assert_string_equal(r->dir, bundle);
    assert_string_equal(r->backend->name, "cpu");
    assert_string_equal(mt_model_get_config(r->model)->arch, "mamba");
    assert_int_equal(r->params, mt_model_param_count(r->model));
    assert_true(r->params > 0);
    assert_true(r->load_seconds >= 0);
    assert_null(r->stats); /* the bundle has none */
    int *ids;
    size_t n;
    assert_int_equal(mt_tokenizer_encode(r->tok, "Y dijo Dios", &ids, &n), 0);
    assert_true(n > 0);
    free(ids);
    mt_runner_close(r);

    char path[160];
    snprintf(path, sizeof path, "%s/corpus_stats.tsv", bundle);
    test_write_text(path, "# mtlab corpus_stats 1\n# pairs=3 ner=english\nIsrael\t2\n");
    r = mt_runner_open(bundle, "cpu", MT_RUNNER_STATS);
    assert_non_null(r);
    assert_non_null(r->stats);
    assert_int_equal(mt_corpus_stats_count(r->stats, "Israel", 6), 2);
    mt_runner_close(r);
    /* a broken file fails the open when asked for, and is not read otherwise */
    test_write_text(path, "not stats\n");
    assert_null(mt_runner_open(bundle, "cpu", MT_RUNNER_STATS));
    assert_non_null(strstr(mt_last_error(), "corpus_stats.tsv"));
    r = mt_runner_open(bundle, "cpu", 0);
    assert_non_null(r);
    mt_runner_close(r);
    remove(path);
}

static void test_runner_names_what_is_wrong(void **state)
{
    (void)state;
    assert_null(mt_runner_open(bundle, "cuda:9", 0));
    assert_non_null(strstr(mt_last_error(), "cuda:9"));
    assert_null(mt_runner_open(bundle, "tpu", 0));
    assert_non_null(strstr(mt_last_error(), "unknown device 'tpu'"));
    assert_null(mt_runner_open("/nonexistent/bundle", NULL, 0));
    assert_non_null(strstr(mt_last_error(), "/nonexistent/bundle"));
    char tok[160], moved[176];
    snprintf(tok, sizeof tok, "%s/tokenizer.model", bundle);
    snprintf(moved, sizeof moved, "%s.moved", tok);
    assert_int_equal(rename(tok, moved), 0);
    assert_null(mt_runner_open(bundle, NULL, 0));
    assert_non_null(strstr(mt_last_error(), "tokenizer.model"));
    assert_int_equal(rename(moved, tok), 0);
}

/* Write value over element `element` of tensor `name` in the bundle's F32 safetensors file. */
static void poke_f32(const char *name, size_t element, float value)
{
    char path[160];
    snprintf(path, sizeof path, "%s/model.safetensors", bundle);
    mt_safetensors *st = mt_st_open(path);
    assert_non_null(st);
    const mt_st_tensor *t = mt_st_find(st, name);
    assert_non_null(t);
    size_t offset = t->offset;
    mt_st_close(st);
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    unsigned char len8[8];
    assert_int_equal(fread(len8, 1, 8, f), 8);
    uint64_t header = 0;
    for (int i = 7; i >= 0; i--) header = header << 8 | len8[i];
    assert_int_equal(fseek(f, (long)(8 + header + offset + 4 * element), SEEK_SET), 0);
    assert_int_equal(fwrite(&value, 4, 1, f), 1);
    fclose(f);
}

/* Damaged weights are refused with the tensor and the element named, not loaded silently. */
static void test_runner_refuses_nan_and_inf_weights(void **state)
{
    (void)state;
    const char *name = "backbone.layers.1.mixer.D";
    poke_f32(name, 3, NAN);
    assert_null(mt_runner_open(bundle, NULL, 0));
    assert_non_null(
        strstr(mt_last_error(), "tensor 'backbone.layers.1.mixer.D' holds NaN at element 3"));
    poke_f32(name, 3, -INFINITY);
    assert_null(mt_runner_open(bundle, NULL, 0));
    assert_non_null(strstr(mt_last_error(), "holds -inf at element 3"));
    poke_f32(name, 3, 1.0f);
    mt_runner *r = mt_runner_open(bundle, NULL, 0);
    assert_non_null(r);
    mt_runner_close(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_runner_opens_model_tokenizer_and_stats),
        cmocka_unit_test(test_runner_names_what_is_wrong),
        cmocka_unit_test(test_runner_refuses_nan_and_inf_weights),
    };
    return cmocka_run_group_tests_name("runner", tests, make_bundle, remove_bundle);
}
