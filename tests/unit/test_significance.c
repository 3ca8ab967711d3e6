/* Paired significance tests and the NumPy generator under them, against what NumPy and
 * sacreBLEU 2.6.0 themselves produced (tests/fixtures/metrics/make_significance.py): every
 * draw and sum, and p-values, bootstrap means and intervals of BLEU, chrF2 and TER for a baseline
 * and two systems under the paired bootstrap and approximate randomization, to the bit; and the
 * table `mtlab score --paired-bs|ar` prints, byte for byte as `sacrebleu -f text` prints it. */
#include "test_util.h"

#include "cli/commands.h"
#include "common/sig_table.h"
#include "eval/np_random.h"
#include "mtlab/error.h"
#include "mtlab/metrics.h"
#include "mtlab/significance.h"

#include <jansson.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FIXTURE "tests/fixtures/metrics/significance.json"

static json_t *load(void)
{
    json_error_t err;
    json_t *j = json_load_file(FIXTURE, 0, &err);
    if (!j) fail_msg("%s:%d: %s", FIXTURE, err.line, err.text);
    assert_string_equal(json_string_value(json_object_get(j, "sacrebleu")), MT_SACREBLEU_VERSION);
    return j;
}

static void test_numpy_draws(void **state)
{
    (void)state;
    json_t *j = load(), *draws = json_object_get(j, "numpy_draws"), *d;
    size_t i;
    json_array_foreach(draws, i, d)
    {
        uint64_t seed = (uint64_t)json_integer_value(json_object_get(d, "seed"));
        mt_np_rng g;
        json_t *raw = json_object_get(d, "raw");
        mt_np_rng_seed(&g, seed);
        for (size_t k = 0; k < json_array_size(raw); k++) {
            uint64_t want = strtoull(json_string_value(json_array_get(raw, k)), NULL, 10);
            uint64_t got = mt_np_next_u64(&g);
            if (got != want)
                fail_msg("seed %llu: raw draw %zu is %llu, numpy %llu", (unsigned long long)seed, k,
                         (unsigned long long)got, (unsigned long long)want);
        }
        static const char *const keys[] = {"choice97", "choice_big", "bools"};
        for (int kind = 0; kind < 3; kind++) {
            json_t *want = json_object_get(d, keys[kind]);
            size_t n = json_array_size(want);
            uint32_t *got = calloc(n, sizeof *got);
            unsigned char *b = calloc(n, 1);
            mt_np_rng_seed(&g, seed);
            if (kind == 0) mt_np_choice(&g, 97, got, n);
            if (kind == 1)
                mt_np_choice(&g, (uint32_t)json_integer_value(json_object_get(d, "choice_big_n")),
                             got, n);
            if (kind == 2) {
                mt_np_booleans(&g, b, n);
                for (size_t k = 0; k < n; k++) got[k] = b[k];
            }
            for (size_t k = 0; k < n; k++)
                if (got[k] != (uint32_t)json_integer_value(json_array_get(want, k)))
                    fail_msg("seed %llu: %s[%zu] is %u, numpy %lld", (unsigned long long)seed,
                             keys[kind], k, got[k], json_integer_value(json_array_get(want, k)));
            free(got);
            free(b);
        }
    }
    json_t *sums = json_object_get(j, "sums");
    json_array_foreach(sums, i, d)
    {
        json_t *v = json_object_get(d, "values");
        size_t n = json_array_size(v);
        double *a = malloc(n * sizeof *a);
        for (size_t k = 0; k < n; k++) a[k] = json_number_value(json_array_get(v, k));
        double got = mt_np_sum(a, n), want = json_number_value(json_object_get(d, "sum"));
        if (got != want) fail_msg("np.sum of %zu values: %.17g, numpy %.17g", n, got, want);
        free(a);
    }
    json_decref(j);
}

/* the fixture's systems: lines[s][i], refs[0][i] */
typedef struct {
    size_t n_sys, n_seg;
    const char **lines[8];
    const char **ref;
} systems;

static void read_systems(json_t *j, systems *s)
{
    json_t *ref = json_object_get(j, "reference"), *sys = json_object_get(j, "systems");
    s->n_seg = json_array_size(ref);
    s->n_sys = json_array_size(sys);
    assert_true(s->n_sys >= 2 && s->n_sys <= 8);
    s->ref = malloc(s->n_seg * sizeof *s->ref);
    for (size_t i = 0; i < s->n_seg; i++) s->ref[i] = json_string_value(json_array_get(ref, i));
    for (size_t k = 0; k < s->n_sys; k++) {
        json_t *lines = json_object_get(json_array_get(sys, k), "lines");
        assert_int_equal(json_array_size(lines), s->n_seg);
        s->lines[k] = malloc(s->n_seg * sizeof *s->lines[k]);
        for (size_t i = 0; i < s->n_seg; i++)
            s->lines[k][i] = json_string_value(json_array_get(lines, i));
    }
}

static void free_systems(systems *s)
{
    for (size_t k = 0; k < s->n_sys; k++) free(s->lines[k]);
    free(s->ref);
}

/* per-segment statistics of every system for BLEU (metric 0), chrF2 (1) or TER (2) */
static double **stats_of(const systems *s, int metric, const mt_bleu_opts *bo,
                         const mt_chrf_opts *co, size_t n_stats)
{
    double **st = malloc(s->n_sys * sizeof *st);
    for (size_t k = 0; k < s->n_sys; k++) {
        st[k] = malloc(s->n_seg * n_stats * sizeof *st[k]);
        for (size_t i = 0; i < s->n_seg; i++) {
            const char *refs[1] = {s->ref[i]};
            if (metric == 0) {
                mt_bleu_stats b;
                assert_int_equal(mt_bleu_segment_stats(&b, s->lines[k][i], refs, 1, bo), 0);
                mt_sig_bleu_row(st[k] + i * n_stats, &b);
            } else if (metric == 1) {
                mt_chrf_stats c;
                assert_int_equal(mt_chrf_segment_stats(&c, s->lines[k][i], refs, 1, co), 0);
                mt_sig_chrf_row(st[k] + i * n_stats, &c);
            } else {
                mt_ter_opts to = mt_ter_defaults();
                mt_ter_stats t;
                assert_int_equal(mt_ter_segment_stats(&t, s->lines[k][i], refs, 1, &to), 0);
                mt_sig_ter_row(st[k] + i * n_stats, &t);
            }
        }
    }
    return st;
}

static void check(double got, double want, const char *what, const char *test, const char *metric,
                  size_t sys)
{
    if (got != want) /* to the bit: the same draws, sums and float32 steps */
        fail_msg("%s %s system %zu: %s is %.17g, sacreBLEU %.17g", test, metric, sys, what, got,
                 want);
}

static void test_paired_tests_match_sacrebleu(void **state)
{
    (void)state;
    json_t *j = load(), *tests = json_object_get(j, "tests"), *t;
    systems s;
    read_systems(j, &s);
    mt_bleu_opts bo = mt_bleu_defaults();
    mt_chrf_opts co = mt_chrf_defaults();
    char chrf_name[32];
    mt_ter_opts to = mt_ter_defaults();
    mt_sig_metric metrics[3] = {mt_sig_bleu_metric(&bo),
                                mt_sig_chrf_metric(&co, chrf_name, sizeof chrf_name),
                                mt_sig_ter_metric(&to)};
    assert_string_equal(metrics[1].name, "chrF2");
    assert_string_equal(metrics[2].name, "TER");
    size_t ti;
    json_array_foreach(tests, ti, t)
    {
        const char *kind = json_string_value(json_object_get(t, "test"));
        mt_sig_opts o =
            mt_sig_defaults(!strcmp(kind, "bs") ? MT_SIG_BOOTSTRAP : MT_SIG_RANDOMIZATION);
        mt_sig_result all[3][8];
        for (int mi = 0; mi < 3; mi++) {
            const mt_sig_metric *m = &metrics[mi];
            double **st = stats_of(&s, mi, &bo, &co, m->n_stats);
            mt_sig_result *res = all[mi];
            assert_int_equal(mt_sig_paired(res, (const double *const *)st, s.n_sys, s.n_seg, m, &o),
                             0);
            json_t *want = json_object_get(json_object_get(t, "metrics"), m->name);
            assert_int_equal(json_array_size(want), s.n_sys);
            for (size_t k = 0; k < s.n_sys; k++) {
                json_t *w = json_array_get(want, k), *p = json_object_get(w, "p"),
                       *mean = json_object_get(w, "mean"), *ci = json_object_get(w, "ci");
                check(res[k].score, json_number_value(json_object_get(w, "score")), "score", kind,
                      m->name, k);
                assert_int_equal(res[k].has_p, !json_is_null(p));
                if (res[k].has_p) check(res[k].p, json_number_value(p), "p", kind, m->name, k);
                assert_int_equal(res[k].has_ci, !json_is_null(mean));
                if (res[k].has_ci) {
                    check(res[k].mean, json_number_value(mean), "mean", kind, m->name, k);
                    check(res[k].ci, json_number_value(ci), "95% CI", kind, m->name, k);
                }
            }
            for (size_t k = 0; k < s.n_sys; k++) free(st[k]);
            free(st);
            /* the signature's additions, as sacreBLEU writes them into each metric's */
            char sig[64];
            mt_sig_signature(sig, sizeof sig, &o);
            const char *full =
                json_string_value(json_object_get(json_object_get(t, "signatures"), m->name));
            assert_non_null(strstr(full, sig));
        }
        const char *names[3] = {metrics[0].name, metrics[1].name, metrics[2].name};
        const char *sys_names[8];
        json_t *sys = json_object_get(j, "systems");
        for (size_t k = 0; k < s.n_sys; k++)
            sys_names[k] = json_string_value(json_object_get(json_array_get(sys, k), "name"));
        const mt_sig_result *cols[3] = {all[0], all[1], all[2]};
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        sig_table_print(f, sys_names, s.n_sys, names, cols, 3, 2);
        fclose(f);
        const char *want = json_string_value(json_object_get(json_object_get(j, "tables"), kind));
        if (strcmp(text, want)) fail_msg("%s table:\n%s\nsacreBLEU:\n%s", kind, text, want);
        free(text);
    }
    free_systems(&s);
    json_decref(j);
}

/* A system against itself: sacreBLEU counts only resampled differences strictly above the
 * real one (zero), so p is its smallest value, 1 / (n + 1), under both tests. */
static void test_identical_systems(void **state)
{
    (void)state;
    json_t *j = load();
    systems s;
    read_systems(j, &s);
    mt_bleu_opts bo = mt_bleu_defaults();
    mt_sig_metric m = mt_sig_bleu_metric(&bo);
    double **st = stats_of(&s, 0, &bo, NULL, m.n_stats);
    const double *same[2] = {st[0], st[0]};
    for (int test = 0; test < 2; test++) {
        mt_sig_opts o = mt_sig_defaults(test ? MT_SIG_RANDOMIZATION : MT_SIG_BOOTSTRAP);
        mt_sig_result res[2];
        assert_int_equal(mt_sig_paired(res, same, 2, s.n_seg, &m, &o), 0);
        size_t n = test ? MT_SIG_RANDOMIZATION_TRIALS : MT_SIG_BOOTSTRAP_SAMPLES;
        assert_true(res[1].p == 1.0 / (double)(n + 1));
        assert_true(res[0].score == res[1].score);
    }
    mt_sig_opts o = mt_sig_defaults(MT_SIG_BOOTSTRAP);
    mt_sig_result res[2];
    assert_int_equal(mt_sig_paired(res, same, 1, s.n_seg, &m, &o), -1);
    assert_non_null(strstr(mt_last_error(), "baseline"));
    assert_int_equal(mt_sig_paired(res, same, 2, 0, &m, &o), -1);
    for (size_t k = 0; k < s.n_sys; k++) free(st[k]);
    free(st);
    free_systems(&s);
    json_decref(j);
}

static void write_lines(const char *path, const char *const *lines, size_t n)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    for (size_t i = 0; i < n; i++) fprintf(f, "%s\n", lines[i]);
    assert_int_equal(fclose(f), 0);
}

/* `mtlab score --hyp base --hyp close --hyp far --ref ref -m bleu chrf ter --paired-bs` (and -ar)
 * prints sacreBLEU's table and signatures; bad uses are refused. */
static void test_score_command(void **state)
{
    (void)state;
    json_t *j = load();
    systems s;
    read_systems(j, &s);
    char dir[PATH_MAX], cwd[PATH_MAX];
    assert_int_equal(test_make_tmpdir(dir, sizeof dir, "sig"), 0);
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_int_equal(chdir(dir), 0);
    json_t *sys = json_object_get(j, "systems");
    for (size_t k = 0; k < s.n_sys; k++)
        write_lines(json_string_value(json_object_get(json_array_get(sys, k), "name")), s.lines[k],
                    s.n_seg);
    write_lines("ref", s.ref, s.n_seg);
    static const char *const kinds[] = {"bs", "ar"};
    for (int k = 0; k < 2; k++) {
        const char *flag = k ? "--paired-ar" : "--paired-bs";
        test_captured c = test_run_command(
            &cmd_score, (const char *[]){"--hyp", "base", "-i", "close", "far", "--ref", "ref",
                                         "-m", "bleu", "chrf", "ter", flag, NULL});
        assert_int_equal(c.rc, 0);
        const char *want =
            json_string_value(json_object_get(json_object_get(j, "tables"), kinds[k]));
        if (strncmp(c.out, want, strlen(want)))
            fail_msg("%s:\n%s\nsacreBLEU:\n%s", flag, c.out, want);
        /* the signatures carry the test's fields after nrefs, as sacreBLEU's do */
        json_t *t = json_array_get(json_object_get(j, "tests"), (size_t)k);
        static const char *const metric_names[] = {"BLEU", "chrF2", "TER"};
        for (int mi = 0; mi < 3; mi++) {
            const char *sig = json_string_value(
                json_object_get(json_object_get(t, "signatures"), metric_names[mi]));
            char line[256];
            snprintf(line, sizeof line, " - %-10s %s\n", metric_names[mi], sig);
            if (!strstr(c.out, line)) fail_msg("no line '%s' in:\n%s", line, c.out);
        }
        test_captured_free(&c);
    }
    /* a paired test needs a baseline and a system; counts are checked */
    test_captured c = test_run_command(
        &cmd_score, (const char *[]){"--hyp", "base", "--ref", "ref", "--paired-bs", NULL});
    assert_int_equal(c.rc, 1);
    assert_non_null(strstr(c.err, "baseline"));
    test_captured_free(&c);
    c = test_run_command(&cmd_score, (const char *[]){"-i", "base", "far", "--ref", "ref",
                                                      "--paired-ar", "--paired-n", "0", NULL});
    assert_int_equal(c.rc, 1);
    assert_non_null(strstr(c.err, "--paired-n"));
    test_captured_free(&c);
    /* --json: one object per system, the p-values as numbers */
    c = test_run_command(&cmd_score, (const char *[]){"-i", "base", "far", "--ref", "ref", "-m",
                                                      "bleu", "--paired-bs", "--json", NULL});
    assert_int_equal(c.rc, 0);
    json_error_t err;
    json_t *out = json_loads(c.out, 0, &err);
    assert_non_null(out);
    assert_int_equal(json_array_size(out), 2);
    json_t *far = json_object_get(json_array_get(out, 1), "BLEU");
    json_t *want_far = json_array_get(
        json_object_get(json_object_get(json_array_get(json_object_get(j, "tests"), 0), "metrics"),
                        "BLEU"),
        2);
    assert_true(json_number_value(json_object_get(far, "p_value")) ==
                json_number_value(json_object_get(want_far, "p")));
    json_decref(out);
    test_captured_free(&c);
    assert_int_equal(chdir(cwd), 0);
    test_remove_tree(dir);
    free_systems(&s);
    json_decref(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_numpy_draws),
        cmocka_unit_test(test_paired_tests_match_sacrebleu),
        cmocka_unit_test(test_identical_systems),
        cmocka_unit_test(test_score_command),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
