/* Per-segment COMET in the workbench (app/tui/comet_worker.c) on the COMET fixture
 * (tests/fixtures/comet/model, a tiny wmt22-comet-da-shaped model): each triple asked for is
 * scored once off the UI thread and reported through the UI's queue, with the score
 * mt_comet_score gives the same triple; a model that cannot be loaded makes every score
 * unavailable and says why. */
#include "test_util.h"

#include <math.h>
#include <poll.h>

#include "mtlab/comet.h"
#include "mtlab/error.h"
#include "mtlab/metrics.h"
#include "tui/comet_worker.h"

#define FIX "tests/fixtures/comet"
enum { N = 4 };

/* Apply the queue's COMET events until want of them came (at most 60 s). */
static int pump(tui_queue *q, tui_comet *c, int want)
{
    struct pollfd pfd = {.fd = tui_queue_fd(q), .events = POLLIN};
    int got = 0;
    for (int round = 0; round < 600 && got < want; round++) {
        if (poll(&pfd, 1, 100) <= 0) continue;
        for (tui_event *ev = tui_queue_drain(q), *nx; ev; ev = nx) {
            nx = ev->next;
            if (ev->kind == TUI_EV_COMET || ev->kind == TUI_EV_COMET_FAILED) {
                tui_comet_take(c, ev);
                got++;
            }
            tui_event_free(ev);
        }
    }
    return got;
}

static void test_scores_off_the_ui_thread(void **state)
{
    (void)state;
    mt_text_lines t[3];
    const char *files[3] = {FIX "/src.txt", FIX "/hyp.txt", FIX "/ref.txt"};
    for (int k = 0; k < 3; k++) assert_int_equal(mt_text_lines_read(&t[k], files[k]), 0);
    float want[N];
    mt_comet *m = mt_comet_open(FIX "/model", mt_backend_cpu());
    assert_non_null(m);
    assert_int_equal(mt_comet_score(m, (const char *const *)t[0].lines,
                                    (const char *const *)t[1].lines,
                                    (const char *const *)t[2].lines, N, want),
                     0);
    mt_comet_free(m);

    tui_queue q;
    assert_int_equal(tui_queue_init(&q), 0);
    tui_comet *c = tui_comet_start(FIX "/model", &q);
    assert_non_null(c);
    float s;
    for (int i = 0; i < N; i++)
        assert_int_equal(tui_comet_get(c, t[0].lines[i], t[1].lines[i], t[2].lines[i], &s),
                         TUI_COMET_PENDING);
    /* asked again while pending: not queued a second time (one report each) */
    assert_int_equal(tui_comet_get(c, t[0].lines[0], t[1].lines[0], t[2].lines[0], &s),
                     TUI_COMET_PENDING);
    assert_int_equal(pump(&q, c, N), N);
    for (int i = 0; i < N; i++) {
        assert_int_equal(tui_comet_get(c, t[0].lines[i], t[1].lines[i], t[2].lines[i], &s),
                         TUI_COMET_KNOWN);
        if (fabsf(s - want[i]) > 1e-5f)
            fail_msg("segment %d: %.7f, mt_comet_score %.7f", i + 1, s, want[i]);
    }
    /* the same translation against another reference is another score */
    assert_int_equal(tui_comet_get(c, t[0].lines[0], t[1].lines[0], t[2].lines[1], &s),
                     TUI_COMET_PENDING);
    assert_int_equal(pump(&q, c, 1), 1);
    assert_int_equal(tui_comet_get(c, t[0].lines[0], t[1].lines[0], t[2].lines[1], &s),
                     TUI_COMET_KNOWN);
    assert_null(tui_comet_error(c));
    tui_comet_stop(c);
    tui_queue_destroy(&q);
    for (int k = 0; k < 3; k++) mt_text_lines_free(&t[k]);
}

static void test_a_model_that_does_not_load(void **state)
{
    (void)state;
    tui_queue q;
    assert_int_equal(tui_queue_init(&q), 0);
    tui_comet *c = tui_comet_start("/nonexistent/comet", &q);
    assert_non_null(c);
    assert_int_equal(pump(&q, c, 1), 1);
    assert_non_null(tui_comet_error(c));
    assert_non_null(strstr(tui_comet_error(c), "/nonexistent/comet"));
    float s;
    assert_int_equal(tui_comet_get(c, "a", "b", "c", &s), TUI_COMET_FAILED);
    tui_comet_stop(c);
    tui_queue_destroy(&q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scores_off_the_ui_thread),
        cmocka_unit_test(test_a_model_that_does_not_load),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
