/* The workers and their queue: events pushed from threads wake poll() through the self-pipe
 * and drain in order; a pane's worker turns the engine worker's results into events for its
 * pane: loaded, streamed segments, a job cancelled by a newer job (whose results are the ones
 * that finish), a bad bundle, probes on request. mtlab/worker.h itself: test_worker.c. */
#include "test_util.h"

#include <poll.h>
#include <pthread.h>
#include <unistd.h>

#include "tiny_bundle.h"
#include "tui/pane_worker.h"
#include "tui/queue.h"

typedef struct {
    tui_queue *q;
    int from, n;
} pusher;

static void *push_many(void *arg)
{
    pusher *p = arg;
    for (int i = 0; i < p->n; i++) {
        tui_event *ev = tui_event_new(TUI_EV_PARTIAL, p->from, (unsigned long)i);
        tui_queue_push(p->q, ev);
    }
    return NULL;
}

static void test_queue_wakes_poll_and_keeps_order(void **state)
{
    (void)state;
    tui_queue q;
    assert_int_equal(tui_queue_init(&q), 0);
    struct pollfd pfd = {.fd = tui_queue_fd(&q), .events = POLLIN};
    assert_int_equal(poll(&pfd, 1, 0), 0); /* nothing yet */
    pusher a = {&q, 1, 500}, b = {&q, 2, 500};
    pthread_t ta, tb;
    pthread_create(&ta, NULL, push_many, &a);
    pthread_create(&tb, NULL, push_many, &b);
    int seen[3] = {0, 0, 0};
    unsigned long next[3] = {0, 0, 0};
    while (seen[1] + seen[2] < 1000) {
        assert_int_equal(poll(&pfd, 1, 5000), 1);
        for (tui_event *ev = tui_queue_drain(&q), *nx; ev; ev = nx) {
            nx = ev->next;
            assert_int_equal(ev->request, next[ev->pane_id]); /* each thread's events in order */
            next[ev->pane_id]++;
            seen[ev->pane_id]++;
            tui_event_free(ev);
        }
    }
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    /* drained and quiet: the pipe holds no stale wake-up */
    assert_null(tui_queue_drain(&q));
    assert_int_equal(poll(&pfd, 1, 0), 0);
    tui_queue_destroy(&q);
}

/* ---------------------------------------------------------------- a worker on a tiny bundle */

static char dir[64], bundle[96];

static int make_bundle(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/mtlab-tui-worker-XXXXXX");
    if (!mkdtemp(dir)) return -1;
    return test_tiny_bundle(dir, bundle, sizeof bundle);
}

static int remove_bundle(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* Wait for an event of kind for job (any job when job is 0), freeing the others; NULL after
 * a timeout. Counts the segments finished for each job in finals when not NULL. */
static tui_event *wait_event(tui_queue *q, tui_event_kind kind, unsigned long job, int *finals)
{
    struct pollfd pfd = {.fd = tui_queue_fd(q), .events = POLLIN};
    for (int round = 0; round < 200; round++) {
        if (poll(&pfd, 1, 100) <= 0) continue;
        tui_event *found = NULL;
        for (tui_event *ev = tui_queue_drain(q), *nx; ev; ev = nx) {
            nx = ev->next;
            if (finals && ev->kind == TUI_EV_SEGMENT && ev->request < 8) finals[ev->request]++;
            if (!found && ev->kind == kind && (job == 0 || ev->request == job)) {
                found = ev;
                continue;
            }
            tui_event_free(ev);
        }
        if (found) return found;
    }
    return NULL;
}

static void test_worker_translates_streams_and_cancels(void **state)
{
    (void)state;
    tui_queue q;
    assert_int_equal(tui_queue_init(&q), 0);
    tui_worker *w = tui_worker_start(7, bundle, NULL, 0, &q);
    assert_non_null(w);
    tui_event *ev = wait_event(&q, TUI_EV_LOADED, 0, NULL);
    assert_non_null(ev);
    assert_int_equal(ev->pane_id, 7);
    assert_non_null(strstr(ev->info, "mamba, "));
    assert_non_null(strstr(ev->info, " params, cpu"));
    tui_event_free(ev);

    /* job 1 is replaced by job 2 at once: job 2 finishes, with all its segments */
    int finals[8] = {0};
    tui_worker_submit(w, 1, test_verses(3), 3, 1, 1, -1);
    tui_worker_submit(w, 2, test_verses(2), 2, 1, 2, -1);
    ev = wait_event(&q, TUI_EV_DONE, 2, finals);
    assert_non_null(ev);
    assert_false(ev->cancelled);
    assert_true(ev->tokens > 0);
    assert_true(ev->state_bytes > 0);
    assert_true(ev->seconds > 0);
    assert_int_equal(finals[2], 2);
    tui_event_free(ev);

    /* beam search with a probe request: the segment's maps come after the translation */
    tui_worker_submit(w, 3, test_verses(2), 2, 3, 1, 1);
    ev = wait_event(&q, TUI_EV_PROBE, 3, NULL);
    assert_non_null(ev);
    assert_int_equal(ev->segment, 1);
    assert_non_null(ev->probe);
    assert_true(ev->probe->rec.n_maps > 0);
    assert_non_null(ev->probe->labels);
    assert_string_equal(ev->probe->labels[ev->probe->rec.n_prompt - 1], "<sep>");
    tui_event_free(ev);
    /* and again on request for the other segment */
    tui_worker_probe(w, 0);
    ev = wait_event(&q, TUI_EV_PROBE, 3, NULL);
    assert_non_null(ev);
    assert_int_equal(ev->segment, 0);
    tui_event_free(ev);

    tui_worker_stop(w);
    tui_queue_destroy(&q);
}

static void test_bad_bundle_is_reported(void **state)
{
    (void)state;
    tui_queue q;
    assert_int_equal(tui_queue_init(&q), 0);
    tui_worker *w = tui_worker_start(1, "/nonexistent/bundle", NULL, 0, &q);
    tui_event *ev = wait_event(&q, TUI_EV_LOAD_FAILED, 0, NULL);
    assert_non_null(ev);
    assert_non_null(strstr(ev->text, "/nonexistent/bundle"));
    tui_event_free(ev);
    tui_worker_submit(w, 1, test_verses(1), 1, 1, 1, -1); /* ignored, never crashes */
    tui_worker_stop(w);
    tui_queue_destroy(&q);
}

/* A device that cannot be opened fails the load in the pane, naming the device; never a crash. */
static void test_bad_device_is_reported(void **state)
{
    (void)state;
    tui_queue q;
    assert_int_equal(tui_queue_init(&q), 0);
    tui_worker *w = tui_worker_start(2, bundle, "cuda:9", 0, &q);
    tui_event *ev = wait_event(&q, TUI_EV_LOAD_FAILED, 0, NULL);
    assert_non_null(ev);
    assert_non_null(strstr(ev->text, "cuda:9"));
    tui_event_free(ev);
    tui_worker_stop(w);
    tui_queue_destroy(&q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_queue_wakes_poll_and_keeps_order),
        cmocka_unit_test(test_worker_translates_streams_and_cancels),
        cmocka_unit_test(test_bad_bundle_is_reported),
        cmocka_unit_test(test_bad_device_is_reported),
    };
    return cmocka_run_group_tests_name("tui_worker", tests, make_bundle, remove_bundle);
}
