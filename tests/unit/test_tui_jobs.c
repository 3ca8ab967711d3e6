/* The jobs view's pure pieces (app/tui/jobs_format.c): the ETA from the recent rate, its
 * format, the progress bar in UTF-8 and ASCII, a run's list columns, and a name cut in its
 * middle. */
#include "test_util.h"

#include <locale.h>

#include "common/columns.h"
#include "tui/jobs_view.h"

/* display widths come from wcwidth(3): a UTF-8 LC_CTYPE */
static int setup(void **state)
{
    (void)state;
    return setlocale(LC_CTYPE, "C.UTF-8") ? 0 : -1;
}

static void test_eta_from_recent_rate(void **state)
{
    (void)state;
    /* 10 steps a second throughout: 100 steps left take 10 s */
    double step[] = {10, 20, 30, 40}, t[] = {1, 2, 3, 4};
    assert_float_equal(tui_job_eta_s(step, t, 4, 140), 10.0, 1e-9);
    /* slow at first (1 step/s), fast in the last minute (10 steps/s): the recent rate counts */
    double step2[] = {0, 100, 200, 1200}, t2[] = {0, 100, 200, 300};
    assert_float_equal(tui_job_eta_s(step2, t2, 4, 2200), 100.0, 1e-9);
    /* a resumed run restarts its clock: only the records since then */
    double step3[] = {100, 200, 210, 220}, t3[] = {50, 100, 1, 2};
    assert_float_equal(tui_job_eta_s(step3, t3, 4, 320), 10.0, 1e-9);
    /* records further apart than the window: the last two */
    double step4[] = {0, 100, 200}, t4[] = {0, 1000, 2000};
    assert_float_equal(tui_job_eta_s(step4, t4, 3, 300), 1000.0, 1e-9);
    /* unknown: one record, no progress, no time; done: 0 */
    assert_true(tui_job_eta_s(step, t, 1, 140) < 0);
    double flat[] = {5, 5}, same[] = {3, 3};
    assert_true(tui_job_eta_s(flat, t, 2, 100) < 0);
    assert_true(tui_job_eta_s(step, same, 2, 100) < 0);
    assert_float_equal(tui_job_eta_s(step, t, 4, 40), 0.0, 0);
}

static void test_eta_format(void **state)
{
    (void)state;
    static const struct {
        double s;
        const char *want;
    } cases[] = {{-1, "-"},       {0, "0s"},        {44.6, "45s"},    {59.4, "59s"},
                 {725, "12m05s"}, {12000, "3h20m"}, {187200, "2d04h"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char buf[16];
        tui_format_eta(buf, sizeof buf, cases[i].s);
        assert_string_equal(buf, cases[i].want);
    }
}

static void test_progress_bar(void **state)
{
    (void)state;
    char buf[64];
    tui_progress_bar(buf, sizeof buf, 5, 10, 4, 1);
    assert_string_equal(buf, "##--");
    tui_progress_bar(buf, sizeof buf, 0, 10, 3, 1);
    assert_string_equal(buf, "---");
    tui_progress_bar(buf, sizeof buf, 12, 10, 3, 1); /* past the end: full */
    assert_string_equal(buf, "###");
    tui_progress_bar(buf, sizeof buf, 7, 0, 3, 1); /* no total: empty */
    assert_string_equal(buf, "---");
    /* 9/16 of 2 cells = 9 eighths: a full cell, then one eighth */
    tui_progress_bar(buf, sizeof buf, 9, 16, 2, 0);
    assert_string_equal(buf, "\xe2\x96\x88\xe2\x96\x8f");
    tui_progress_bar(buf, sizeof buf, 1, 4, 2, 0); /* 4 eighths: a half cell, then shade */
    assert_string_equal(buf, "\xe2\x96\x8c\xe2\x96\x91");
    /* a short buffer holds whole glyphs only */
    char small[5];
    tui_progress_bar(small, sizeof small, 4, 4, 3, 0);
    assert_string_equal(small, "\xe2\x96\x88");
}

static void test_columns(void **state)
{
    (void)state;
    job_info j = {.state = JOB_RUNNING,
                  .ranks = 2,
                  .max_steps = 400,
                  .step = 120,
                  .tokens_per_s = 1234,
                  .valid_bleu = 12.346};
    tui_job_cols c;
    tui_job_columns(&c, &j, 185);
    assert_string_equal(c.state, "running");
    assert_string_equal(c.ranks, "2"); /* the ranks it trains on */
    assert_string_equal(c.steps, "120/400");
    assert_string_equal(c.tokens_per_s, "1.23K");
    assert_string_equal(c.eta, "3m05s");
    assert_string_equal(c.bleu, "12.35");
    /* nothing yet; a run that is not running has no ETA */
    job_info k = {.state = JOB_COMPLETED, .max_steps = 0, .step = 0, .valid_bleu = -1};
    tui_job_columns(&c, &k, 10);
    assert_string_equal(c.state, "completed");
    assert_string_equal(c.ranks, "1"); /* a job.json without ranks: one process */
    assert_string_equal(c.steps, "0");
    assert_string_equal(c.tokens_per_s, "-");
    assert_string_equal(c.eta, "-");
    assert_string_equal(c.bleu, "-");
}

/* A state's colour is its meaning: a run whose job.json cannot be read is an error, as a
 * failed one is, not the dim of a cancelled one. */
static void test_state_meanings(void **state)
{
    (void)state;
    static const struct {
        job_state s;
        tui_meaning m;
    } want[] = {
        {JOB_PENDING, TUI_C_DIM},   {JOB_RUNNING, TUI_C_BUSY}, {JOB_COMPLETED, TUI_C_DONE},
        {JOB_CANCELLED, TUI_C_DIM}, {JOB_FAILED, TUI_C_ERROR}, {JOB_BROKEN, TUI_C_ERROR},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        job_info j = {.state = want[i].s, .valid_bleu = -1};
        tui_job_cols c;
        tui_job_columns(&c, &j, -1);
        if (c.state_meaning != want[i].m)
            fail_msg("%s: meaning %d, expected %d", c.state, c.state_meaning, want[i].m);
    }
}

static void test_fit_middle(void **state)
{
    (void)state;
    char buf[256];
    /* whole when it fits */
    tui_fit_middle(buf, sizeof buf, "mamba-local-small-reg", 21, "\u2026");
    assert_string_equal(buf, "mamba-local-small-reg");
    /* else start and end around the ellipsis, the end the larger half: two runs of one
     * preset stay apart */
    tui_fit_middle(buf, sizeof buf, "mamba-local-small-reg", 16, "\u2026");
    assert_string_equal(buf, "mamba-l\u2026mall-reg");
    tui_fit_middle(buf, sizeof buf, "mamba-local-small-10k-cont", 16, "\u2026");
    assert_string_equal(buf, "mamba-l\u202610k-cont");
    tui_fit_middle(buf, sizeof buf, "mamba-local-small-reg", 16, "...");
    assert_string_equal(buf, "mamba-...all-reg");
    /* columns, not bytes: wide and combining characters */
    tui_fit_middle(buf, sizeof buf, "\u65e5\u672c\u8a9e-run-e\u0301t\u00e9", 9, "\u2026");
    assert_int_equal(tui_text_width_z(buf), 9);
    assert_string_equal(buf, "\u65e5\u672c\u2026-e\u0301t\u00e9");
    /* no room beside the ellipsis: the start alone */
    tui_fit_middle(buf, sizeof buf, "mamba-local-small-reg", 1, "\u2026");
    assert_string_equal(buf, "m");
    tui_fit_middle(buf, sizeof buf, "mamba", 0, "\u2026");
    assert_string_equal(buf, "");
    /* down a column (a heatmap's column labels): one character a line, whatever its width */
    tui_fit_middle_lines(buf, sizeof buf, "blessed", 7, "\u2026");
    assert_string_equal(buf, "blessed");
    tui_fit_middle_lines(buf, sizeof buf, "blessed", 6, "\u2026");
    assert_string_equal(buf, "bl\u2026sed");
    tui_fit_middle_lines(buf, sizeof buf, "blessed", 6, "...");
    assert_string_equal(buf, "b...ed");
    tui_fit_middle_lines(buf, sizeof buf, "\u65e5\u672c\u8a9e\u3067\u3059", 4, "\u2026");
    assert_string_equal(buf, "\u65e5\u2026\u3067\u3059");
    tui_fit_middle_lines(buf, sizeof buf, "blessed", 1, "\u2026");
    assert_string_equal(buf, "b");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_eta_from_recent_rate), cmocka_unit_test(test_eta_format),
        cmocka_unit_test(test_progress_bar),         cmocka_unit_test(test_columns),
        cmocka_unit_test(test_state_meanings),       cmocka_unit_test(test_fit_middle),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
