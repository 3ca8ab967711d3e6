/* The workbench's result cache: hits and misses, a key made of model, mode and text (a
 * different beam is a different result), eviction of the least recently used entry under
 * both bounds, and the whole against a naive reference (an array scanned in recency order)
 * over a long random sequence of gets and puts. */
#include "test_util.h"

#include <sys/stat.h>

#include "mtlab/runner.h"
#include "tui/app.h"
#include "tui/result_cache.h"

static void test_hit_miss_and_key_parts(void **state)
{
    (void)state;
    tui_result_cache c;
    tui_cache_init(&c, 16, 1 << 20);
    assert_null(tui_cache_get(&c, "models/mamba", "beam=1", "Sea la luz"));
    tui_cache_put(&c, "models/mamba", "beam=1", "Sea la luz", "Let there be light");
    assert_string_equal(tui_cache_get(&c, "models/mamba", "beam=1", "Sea la luz"),
                        "Let there be light");
    /* each part of the key matters: mode, model, text */
    assert_null(tui_cache_get(&c, "models/mamba", "beam=5", "Sea la luz"));
    assert_null(tui_cache_get(&c, "models/retnet", "beam=1", "Sea la luz"));
    assert_null(tui_cache_get(&c, "models/mamba", "beam=1", "Sea la luz."));
    /* the parts cannot run into each other */
    tui_cache_put(&c, "ab", "c", "d", "one");
    assert_null(tui_cache_get(&c, "a", "bc", "d"));
    assert_int_equal(c.hits, 1);
    assert_int_equal(c.misses, 5);
    /* a put replaces */
    tui_cache_put(&c, "models/mamba", "beam=1", "Sea la luz", "Be light");
    assert_string_equal(tui_cache_get(&c, "models/mamba", "beam=1", "Sea la luz"), "Be light");
    assert_int_equal(c.n, 2);
    tui_cache_free(&c);
}

/* A pane's model key names everything that changes its translations besides the mode: the
 * bundle (by its real path), the device, the precision (an int8 pane must not be shown an fp32
 * pane's results) and the weights file as it is now. */
static void test_model_key_parts(void **state)
{
    (void)state;
    char dir[256], link[300], weights[300];
    assert_int_equal(test_make_tmpdir(dir, sizeof dir, "cachekey"), 0);
    snprintf(weights, sizeof weights, "%s/model.safetensors", dir);
    test_write_text(weights, "weights");
    char *fp32 = tui_pane_model_key(dir, NULL, 0);
    char *fp32_cpu = tui_pane_model_key(dir, "cpu", 0);
    char *int8 = tui_pane_model_key(dir, NULL, MT_RUNNER_INT8);
    char *bf16 = tui_pane_model_key(dir, NULL, MT_RUNNER_BF16);
    char *cuda = tui_pane_model_key(dir, "cuda:0", 0);
    snprintf(link, sizeof link, "%s/../%s", dir, strrchr(dir, '/') + 1);
    char *via_link = tui_pane_model_key(link, NULL, 0);
    assert_string_equal(fp32, fp32_cpu);
    assert_string_equal(fp32, via_link);
    assert_string_not_equal(fp32, int8);
    assert_string_not_equal(fp32, bf16);
    assert_string_not_equal(int8, bf16);
    assert_string_not_equal(fp32, cuda);
    /* new weights (a run's best/ rewritten): another key */
    test_write_text(weights, "other weights");
    char *rewritten = tui_pane_model_key(dir, NULL, 0);
    assert_string_not_equal(fp32, rewritten);
    char *keys[] = {fp32, fp32_cpu, int8, bf16, cuda, via_link, rewritten};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) free(keys[i]);
    test_remove_tree(dir);
}

static void test_eviction_least_recently_used(void **state)
{
    (void)state;
    tui_result_cache c;
    tui_cache_init(&c, 3, 1 << 20);
    tui_cache_put(&c, "m", "g", "uno", "one");
    tui_cache_put(&c, "m", "g", "dos", "two");
    tui_cache_put(&c, "m", "g", "tres", "three");
    assert_non_null(tui_cache_get(&c, "m", "g", "uno")); /* now the most recent */
    tui_cache_put(&c, "m", "g", "cuatro", "four"); /* evicts dos */
    assert_null(tui_cache_get(&c, "m", "g", "dos"));
    assert_non_null(tui_cache_get(&c, "m", "g", "uno"));
    assert_non_null(tui_cache_get(&c, "m", "g", "tres"));
    assert_int_equal(c.n, 3);
    assert_int_equal(c.evictions, 1);
    tui_cache_free(&c);

    /* the byte bound: each entry here is 7 key bytes (m NUL g NUL aaa) + 6 value bytes = 13 */
    tui_cache_init(&c, 100, 30);
    tui_cache_put(&c, "m", "g", "aaa", "xxxxx");
    tui_cache_put(&c, "m", "g", "bbb", "xxxxx");
    assert_int_equal(c.bytes, 26);
    tui_cache_put(&c, "m", "g", "ccc", "xxxxx");
    assert_int_equal(c.n, 2);
    assert_true(c.bytes <= 30);
    assert_null(tui_cache_get(&c, "m", "g", "aaa"));
    /* an entry bigger than the whole bound is not kept, and evicts nothing */
    tui_cache_put(&c, "m", "g", "huge", "0123456789012345678901234567890123456789");
    assert_null(tui_cache_get(&c, "m", "g", "huge"));
    assert_int_equal(c.n, 2);
    tui_cache_free(&c);
}

/* The naive reference: entries in an array, most recent last. */
typedef struct {
    char key[16], value[16];
} ref_entry;

static void test_matches_naive_lru(void **state)
{
    (void)state;
    enum { MAX = 7, KEYS = 20, OPS = 20000 };
    ref_entry ref[MAX];
    int n_ref = 0;
    tui_result_cache c;
    tui_cache_init(&c, MAX, 1 << 20);
    unsigned long long rng = 42;
    for (int op = 0; op < OPS; op++) {
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        int k = (int)(rng >> 33) % KEYS, put = (int)(rng >> 20) % 3 == 0;
        char key[16], value[16];
        snprintf(key, sizeof key, "seg%d", k);
        snprintf(value, sizeof value, "v%d", op);
        int at = -1;
        for (int i = 0; i < n_ref; i++)
            if (!strcmp(ref[i].key, key)) at = i;
        ref_entry e;
        if (at >= 0) {
            e = ref[at];
            memmove(ref + at, ref + at + 1, (size_t)(n_ref - at - 1) * sizeof *ref);
            n_ref--;
        }
        if (put) {
            snprintf(e.key, sizeof e.key, "%s", key);
            snprintf(e.value, sizeof e.value, "%s", value);
            if (n_ref == MAX) memmove(ref, ref + 1, (size_t)--n_ref * sizeof *ref);
            ref[n_ref++] = e;
            tui_cache_put(&c, "model", "beam=1", key, value);
        } else {
            const char *got = tui_cache_get(&c, "model", "beam=1", key);
            if (at >= 0) ref[n_ref++] = e;
            if ((at >= 0) != (got != NULL) || (got && strcmp(got, e.value)))
                fail_msg("op %d: get %s: cache %s, reference %s", op, key, got ? got : "miss",
                         at >= 0 ? e.value : "miss");
        }
        assert_int_equal(c.n, (size_t)n_ref);
    }
    tui_cache_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hit_miss_and_key_parts),
        cmocka_unit_test(test_model_key_parts),
        cmocka_unit_test(test_eviction_least_recently_used),
        cmocka_unit_test(test_matches_naive_lru),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
