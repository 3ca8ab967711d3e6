/* Name substitution (docs/data.md §7–8): which names a pair shares, whole-word replacement on
 * both sides, the gazetteer's checks, and the trainer's per-epoch corpus (determinism by seed
 * and epoch, p = 0 leaves the corpus as loaded, CAT-N joins the substituted pairs). */
#include "test_util.h"
#include "mtlab/error.h"
#include "mtlab/files.h"
#include "mtlab/names.h"
#include "mtlab/tokenizer.h"
#include "mtlab/train.h"
#include "mtlab/traindata.h"

static char tmpdir[64];

static void expect_names(const char *src, const char *tgt, const char *const *want, size_t n_want)
{
    mt_entity_set s;
    assert_int_equal(mt_names_shared(&s, src, tgt, MT_NER_ENGLISH), 0);
    if (s.n != n_want) fail_msg("%zu names, expected %zu, in: %s", s.n, n_want, tgt);
    for (size_t i = 0; i < n_want; i++) assert_string_equal(s.names[i], want[i]);
    mt_entity_set_free(&s);
}

static void test_shared_names(void **state)
{
    (void)state;
    /* verbatim on both sides, each once, in target order; spelling variants are not shared */
    expect_names("Y David habló á Abraham en Jerusalén; y David calló.",
                 "Abraham spoke with David in Jerusalem, and David’s son was silent.",
                 (const char *const[]){"Abraham", "David"}, 2);
    /* a word inside a longer source word is no shared name (Jacob / Jacobo) */
    expect_names("Jacobo fué á Moab.", "Jacob went to Moab.", (const char *const[]){"Moab"}, 1);
    /* words capitalised only by position, all-capital words and single letters are no names */
    expect_names("No, dijo él. He aquí OK A.", "No, he said. He is here. OK A.", NULL, 0);
    expect_names("sin nombres", "no names", NULL, 0);
    mt_entity_set s;
    assert_int_equal(mt_names_shared(&s, "ok", "bad \xc3\x28", MT_NER_ENGLISH), -1);
}

static void test_replace_whole_words(void **state)
{
    (void)state;
    size_t count;
    char *out = mt_name_replace("David, Davidson y David’s; ¿David?", "David", "Zanzibar", &count);
    assert_string_equal(out, "Zanzibar, Davidson y Zanzibar’s; ¿Zanzibar?");
    assert_int_equal(count, 3);
    free(out);
    out = mt_name_replace("nothing here", "David", "Zanzibar", &count);
    assert_string_equal(out, "nothing here");
    assert_int_equal(count, 0);
    free(out);
    assert_null(mt_name_replace("bad \xc3\x28", "David", "X", NULL));
}

static void test_gazetteer_checks(void **state)
{
    (void)state;
    char path[128];
    snprintf(path, sizeof path, "%s/g.txt", tmpdir);
    mt_gazetteer g;
    struct {
        const char *text, *error;
    } bad[] = {
        {"Aachen\nzebra\n", "g.txt:2: \"zebra\": not a name"},
        {"Aachen\nNew York\n", "g.txt:2: \"New York\": not a single word"},
        {"Aachen\nNASA\n", "g.txt:2: \"NASA\": not a name"},
        {"Aachen\nBoise\nAachen\n", "g.txt:3: \"Aachen\" is listed twice"},
        {"", "g.txt: no names"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        test_write_text(path, bad[i].text);
        assert_int_equal(mt_gazetteer_load(&g, path), -1);
        if (!strstr(mt_last_error(), bad[i].error))
            fail_msg("expected '%s' in: %s", bad[i].error, mt_last_error());
    }
    assert_int_equal(mt_gazetteer_load(&g, "no/such/gazetteer.txt"), -1);
    assert_non_null(strstr(mt_last_error(), "no/such/gazetteer.txt"));
    /* read through the one line reader: a NUL byte is named (it cut the name short), and the
     * line limit applies while reading */
    test_write_file(path, "Aachen\nBo\0ise\n", 14);
    assert_int_equal(mt_gazetteer_load(&g, path), -1);
    if (!strstr(mt_last_error(), "g.txt:2: NUL byte at byte 2")) fail_msg("%s", mt_last_error());
    size_t n = MT_LINE_MAX_BYTES + 2;
    char *long_line = malloc(n);
    long_line[0] = 'A';
    memset(long_line + 1, 'b', n - 2);
    long_line[n - 1] = '\n';
    test_write_file(path, long_line, n);
    free(long_line);
    assert_int_equal(mt_gazetteer_load(&g, path), -1);
    if (!strstr(mt_last_error(), "g.txt:1: line longer than the 1048576-byte limit"))
        fail_msg("%s", mt_last_error());
    /* the shipped parts load, and none of their names is shared with the other part */
    mt_gazetteer train, test;
    if (mt_gazetteer_load(&train, "scripts/data/gazetteer.train.txt") != 0)
        fail_msg("%s", mt_last_error());
    if (mt_gazetteer_load(&test, "scripts/data/gazetteer.test.txt") != 0)
        fail_msg("%s", mt_last_error());
    assert_true(train.n > 1000 && test.n > 300);
    for (size_t i = 0; i < test.n; i++)
        for (size_t j = 0; j < train.n; j++)
            if (!strcmp(test.names[i], train.names[j]))
                fail_msg("%s is in both parts", test.names[i]);
    mt_gazetteer_free(&train);
    mt_gazetteer_free(&test);
}

static void test_substitute_pair(void **state)
{
    (void)state;
    char path[128];
    snprintf(path, sizeof path, "%s/g.txt", tmpdir);
    test_write_text(path, "Aachen\nBoise\nCairns\n");
    mt_gazetteer g;
    assert_int_equal(mt_gazetteer_load(&g, path), 0);
    const char *src = "David vió á Abraham; David calló.",
               *tgt = "David saw Abraham; David was silent.";
    mt_entity_set names;
    assert_int_equal(mt_names_shared(&names, src, tgt, MT_NER_ENGLISH), 0);
    assert_int_equal(names.n, 2);
    const char *chosen[2];
    char *s, *t;
    mt_rng rng;
    /* p = 1: every name, both sides, every occurrence, by different gazetteer names */
    mt_rng_init(&rng, 3, 0);
    assert_int_equal(
        mt_names_substitute(&s, &t, chosen, src, tgt, &names, &(mt_name_draw){&g, 1.0, &rng}), 2);
    assert_non_null(chosen[0]);
    assert_non_null(chosen[1]);
    assert_string_not_equal(chosen[0], chosen[1]);
    char want_s[128], want_t[128];
    snprintf(want_s, sizeof want_s, "%s vió á %s; %s calló.", chosen[0], chosen[1], chosen[0]);
    snprintf(want_t, sizeof want_t, "%s saw %s; %s was silent.", chosen[0], chosen[1], chosen[0]);
    assert_string_equal(s, want_s);
    assert_string_equal(t, want_t);
    free(s);
    free(t);
    /* the same stream state gives the same substitution */
    const char *again[2];
    mt_rng_init(&rng, 3, 0);
    assert_int_equal(
        mt_names_substitute(&s, &t, again, src, tgt, &names, &(mt_name_draw){&g, 1.0, &rng}), 2);
    assert_ptr_equal(again[0], chosen[0]);
    assert_ptr_equal(again[1], chosen[1]);
    free(s);
    free(t);
    /* p = 0: nothing */
    assert_int_equal(
        mt_names_substitute(&s, &t, chosen, src, tgt, &names, &(mt_name_draw){&g, 0.0, &rng}), 0);
    assert_null(s);
    assert_null(t);
    assert_null(chosen[0]);
    /* p = 0.5 over many draws: about half the names */
    size_t hits = 0;
    mt_rng_init(&rng, 4, 0);
    for (int i = 0; i < 1000; i++) {
        hits += (size_t)mt_names_substitute(&s, &t, chosen, src, tgt, &names,
                                            &(mt_name_draw){&g, 0.5, &rng});
        free(s);
        free(t);
    }
    assert_true(hits > 850 && hits < 1150);
    mt_entity_set_free(&names);
    mt_gazetteer_free(&g);
}

static int corpus_equal(const mt_corpus *a, const mt_corpus *b)
{
    if (a->n != b->n) return 0;
    for (size_t i = 0; i < a->n; i++) {
        if (a->src_len[i] != b->src_len[i] || a->tgt_len[i] != b->tgt_len[i]) return 0;
        if (memcmp(a->ids + a->src_start[i], b->ids + b->src_start[i],
                   (size_t)a->src_len[i] * sizeof *a->ids) ||
            memcmp(a->ids + a->tgt_start[i], b->ids + b->tgt_start[i],
                   (size_t)a->tgt_len[i] * sizeof *a->ids))
            return 0;
    }
    return 1;
}

/* The text of ids[0..n). */
static char *decode(const mt_tokenizer *tok, const int32_t *ids, size_t n)
{
    int *v = malloc((n ? n : 1) * sizeof *v);
    for (size_t i = 0; i < n; i++) v[i] = ids[i];
    char *text = mt_tokenizer_decode(tok, v, n);
    free(v);
    return text;
}

static void test_epoch_corpus(void **state)
{
    (void)state;
    const char *es = "tests/fixtures/tokenizer/corpus.es",
               *en = "tests/fixtures/tokenizer/corpus.en";
    char spm[128], gaz[128];
    snprintf(spm, sizeof spm, "%s/spm.model", tmpdir);
    snprintf(gaz, sizeof gaz, "%s/names.txt", tmpdir);
    /* names the tokenizer can spell (its pieces come from the fixture corpus), so they decode */
    test_write_text(gaz, "Minerva\nTheodora\nWinona\nOdette\nCelestina\nMarisol\n");
    mt_tokenizer *tok = mt_tokenizer_load(spm);
    if (!tok) fail_msg("%s", mt_last_error());
    mt_corpus base, a, b, c;
    assert_int_equal(mt_corpus_load(&base, es, en, tok, 0), 0);
    mt_name_pool np;
    if (mt_name_pool_build(&np, es, en, MT_NER_ENGLISH, gaz, 0.0) != 0)
        fail_msg("%s", mt_last_error());
    assert_true(np.n > 100); /* Cádiz, Núñez, Martín, ... */

    /* p = 0: the corpus exactly as loaded */
    size_t subs;
    assert_int_equal(mt_corpus_substitute_names(&a, &base, &np, tok, 0, 1, 0, &subs), 0);
    assert_int_equal(subs, 0);
    assert_true(corpus_equal(&a, &base));
    mt_corpus_free(&a);

    /* p = 0.5: the same (seed, epoch) twice gives the same corpus, another seed or epoch not */
    np.p = 0.5;
    assert_int_equal(mt_corpus_substitute_names(&a, &base, &np, tok, 0, 1, 0, &subs), 0);
    assert_true(subs > 40);
    assert_int_equal(mt_corpus_substitute_names(&b, &base, &np, tok, 0, 1, 0, NULL), 0);
    assert_true(corpus_equal(&a, &b));
    assert_false(corpus_equal(&a, &base));
    mt_corpus_free(&b);
    assert_int_equal(mt_corpus_substitute_names(&b, &base, &np, tok, 0, 2, 0, NULL), 0);
    assert_int_equal(mt_corpus_substitute_names(&c, &base, &np, tok, 0, 1, 1, NULL), 0);
    assert_false(corpus_equal(&a, &b));
    assert_false(corpus_equal(&a, &c));
    mt_corpus_free(&b);
    mt_corpus_free(&c);

    /* pairs without a shared name keep their ids; a substituted pair carries one gazetteer name
     * on both sides in place of its own */
    size_t k = 0, changed = 0;
    for (size_t i = 0; i < base.n; i++) {
        mt_corpus one = {.n = 1,
                         .ids = a.ids,
                         .src_start = &a.src_start[i],
                         .tgt_start = &a.tgt_start[i],
                         .src_len = &a.src_len[i],
                         .tgt_len = &a.tgt_len[i]};
        mt_corpus orig = {.n = 1,
                          .ids = base.ids,
                          .src_start = &base.src_start[i],
                          .tgt_start = &base.tgt_start[i],
                          .src_len = &base.src_len[i],
                          .tgt_len = &base.tgt_len[i]};
        int in_pool = k < np.n && np.pair[k] == i;
        if (!in_pool) {
            assert_true(corpus_equal(&one, &orig));
            continue;
        }
        if (!corpus_equal(&one, &orig)) {
            changed++;
            char *s = decode(tok, a.ids + a.src_start[i], (size_t)a.src_len[i]);
            char *t = decode(tok, a.ids + a.tgt_start[i], (size_t)a.tgt_len[i]);
            size_t gone = 0;
            for (size_t j = 0; j < np.names[k].n; j++) gone += !strstr(s, np.names[k].names[j]);
            assert_true(gone > 0);
            /* whatever replaced a name in the source stands in the target too */
            int found = 0;
            for (size_t g = 0; g < np.gaz.n && !found; g++)
                found = strstr(s, np.gaz.names[g]) && strstr(t, np.gaz.names[g]);
            if (!found) fail_msg("no gazetteer name on both sides: %s / %s", s, t);
            free(s);
            free(t);
        }
        k++;
    }
    assert_true(changed > 20);

    /* CAT-N joins the epoch's substituted pairs: lengths and ids come from that corpus */
    mt_examples ex;
    mt_examples_build(&ex, &a, 3, 0, 0.0, 0, 1, 0);
    mt_model_config mc;
    assert_int_equal(mt_model_preset(&mc, "transformer-small"), 0);
    for (size_t e = 0; e < ex.n; e++) {
        int sl = 0;
        for (int p = 0; p < ex.n_parts[e]; p++) sl += a.src_len[ex.parts[ex.start[e] + (size_t)p]];
        assert_int_equal(ex.src_len[e], sl);
    }
    uint32_t row = 0;
    while (row < ex.n && ex.n_parts[row] < 3) row++;
    assert_true(row < ex.n);
    mt_batch batch;
    mt_batch_pack(&batch, 1, &mc, &a, &ex, &row, 1);
    int32_t *want = malloc((size_t)ex.src_len[row] * sizeof *want);
    size_t at = 0;
    for (int p = 0; p < ex.n_parts[row]; p++) {
        uint32_t pair = ex.parts[ex.start[row] + (size_t)p];
        memcpy(want + at, a.ids + a.src_start[pair], (size_t)a.src_len[pair] * sizeof *want);
        at += (size_t)a.src_len[pair];
    }
    assert_memory_equal(batch.src, want, at * sizeof *want);
    free(want);
    mt_batch_free(&batch);
    mt_examples_free(&ex);

    mt_corpus_free(&a);
    mt_name_pool_free(&np);
    mt_corpus_free(&base);
    mt_tokenizer_free(tok);
}

static void test_names_list_and_recall(void **state)
{
    (void)state;
    char path[128];
    snprintf(path, sizeof path, "%s/names.tsv", tmpdir);
    test_write_text(
        path, "# mtlab names 1\n# segments=3\n1\tAachen\tDavid\n1\tBoise\tMoab\n3\tCairns\tEdom\n");
    mt_names_list l;
    if (mt_names_list_read(&l, path) < 0) fail_msg("%s", mt_last_error());
    assert_int_equal(l.n_segments, 3);
    assert_int_equal(l.first[1], 2);
    assert_int_equal(l.first[2], 2);
    assert_int_equal(l.first[3], 3);
    assert_string_equal(l.names[2], "Cairns");
    /* whole words only: "Aacheners" is no copy of Aachen, "Boise’s" is */
    const char *hyps[] = {"Aacheners met Boise’s king.", "nothing", "Cairns."};
    mt_names_recall r;
    mt_names_recall_score(&r, &l, hyps);
    assert_int_equal(r.names, 3);
    assert_int_equal(r.hits, 2);
    assert_float_equal(r.recall, 2.0 / 3.0, 1e-12);
    mt_names_list_free(&l);

    struct {
        const char *text, *error;
    } bad[] = {
        {"# mtlab names 2\n", ":1: not a names file"},
        {"# mtlab names 1\n# pairs=3\n", ":2: expected '# segments=N'"},
        {"# mtlab names 1\n# segments=2\n3\tAachen\tDavid\n", ":3: segment '3' is not in 1..2"},
        {"# mtlab names 1\n# segments=2\n2\tAachen\tDavid\n1\tBoise\tMoab\n",
         ":4: segment 1 after segment 2"},
        {"# mtlab names 1\n# segments=2\n1\tNew York\tDavid\n",
         ":3: 'New York' is not a single word"},
        {"# mtlab names 1\n# segments=2\n1\tAachen\n",
         ":3: expected SEGMENT<TAB>NAME<TAB>ORIGINAL"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        test_write_text(path, bad[i].text);
        assert_int_equal(mt_names_list_read(&l, path), -1);
        if (!strstr(mt_last_error(), bad[i].error))
            fail_msg("expected '%s' in: %s", bad[i].error, mt_last_error());
    }
}

static int setup(void **state)
{
    (void)state;
    return test_tokenizer_tmpdir(tmpdir, sizeof tmpdir, "names");
}

static int teardown(void **state)
{
    (void)state;
    return test_remove_tree(tmpdir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shared_names),     cmocka_unit_test(test_replace_whole_words),
        cmocka_unit_test(test_gazetteer_checks), cmocka_unit_test(test_substitute_pair),
        cmocka_unit_test(test_epoch_corpus),     cmocka_unit_test(test_names_list_and_recall),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
