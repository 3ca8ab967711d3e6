/* mtlab/worker.h on a tiny bundle: a worker serving requests on its thread, streaming partial
 * and final hypotheses, holding partials back by the interval, a request cancelled by a newer
 * one or by cancel, an attribution cancelled by a newer request or attribution, probes after a
 * request and on demand, stop in the middle of a request, and a load failure that says why. The
 * sink records every callback for the test thread. */
#include "test_util.h"

#include <pthread.h>
#include <time.h>

#include "mtlab/worker.h"
#include "tiny_bundle.h"

static char dir[64], bundle[96];

static int make_bundle(void **state)
{
    (void)state;
    if (test_make_tmpdir(dir, sizeof dir, "worker")) return -1;
    return test_tiny_bundle(dir, bundle, sizeof bundle);
}

static int remove_bundle(void **state)
{
    (void)state;
    return test_remove_tree(dir);
}

/* ---------------------------------------------------------------- a recording sink */

enum {
    EV_LOADED,
    EV_LOAD_FAILED,
    EV_PARTIAL,
    EV_FINAL,
    EV_DONE,
    EV_FAILED,
    EV_PROBE,
    EV_PROBE_FAILED,
    EV_ATTRIBUTION,
    EV_ATTRIBUTION_FAILED
};

typedef struct {
    int kind;
    unsigned long request;
    int text;
    char *str;
    int cancelled; /* EV_DONE */
    int method; /* EV_ATTRIBUTION */
    int n_tokens, n_labels; /* EV_PROBE */
    char *sep_label; /* EV_PROBE: the label of the last prompt position */
} record;

typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    record ev[4096];
    int n;
    mt_worker *w; /* for the callbacks that act on the worker */
    unsigned long submit_on_partial; /* submit request 2 at the first partial of this one */
    unsigned long cancel_on_partial; /* cancel at the first partial of this one */
    int final_matches_done; /* every final hypothesis equals the result's text */
    char *finals[8]; /* of the running request */
} recorder;

static void add(recorder *r, record e)
{
    pthread_mutex_lock(&r->lock);
    if (r->n < (int)(sizeof r->ev / sizeof r->ev[0])) r->ev[r->n++] = e;
    else free(e.str);
    pthread_cond_broadcast(&r->changed);
    pthread_mutex_unlock(&r->lock);
}

static void on_loaded(void *user, const mt_runner *rn)
{
    add(user, (record){.kind = EV_LOADED, .text = -1, .str = strdup(rn->backend->name)});
}

static void on_load_failed(void *user, const char *why)
{
    add(user, (record){.kind = EV_LOAD_FAILED, .text = -1, .str = strdup(why)});
}

static void on_partial(void *user, unsigned long request, int text, const char *hyp)
{
    recorder *r = user;
    if (request == r->submit_on_partial) {
        r->submit_on_partial = 0;
        mt_worker_request req = {
            .id = 2, .texts = test_verses(2), .n = 2, .beam = 1, .probe_text = -1};
        mt_worker_submit(r->w, &req);
    }
    if (request == r->cancel_on_partial) {
        r->cancel_on_partial = 0;
        mt_worker_cancel(r->w);
    }
    add(r, (record){.kind = EV_PARTIAL, .request = request, .text = text, .str = strdup(hyp)});
}

static void on_final(void *user, unsigned long request, int text, const char *hyp)
{
    recorder *r = user;
    if (text < 8) {
        free(r->finals[text]);
        r->finals[text] = strdup(hyp);
    }
    add(r, (record){.kind = EV_FINAL, .request = request, .text = text, .str = strdup(hyp)});
}

static void on_done(void *user, unsigned long request, const mt_decode_result *res)
{
    recorder *r = user;
    for (int i = 0; i < res->n && i < 8; i++) {
        if (!r->finals[i] || strcmp(r->finals[i], res->hyps[i].text)) r->final_matches_done = 0;
        free(r->finals[i]);
        r->finals[i] = NULL;
    }
    add(r, (record){.kind = EV_DONE, .request = request, .text = -1, .cancelled = res->cancelled});
}

static void on_failed(void *user, unsigned long request, int text, const char *why)
{
    add(user, (record){.kind = EV_FAILED, .request = request, .text = text, .str = strdup(why)});
}

static void on_probe(void *user, unsigned long request, int text, mt_labelled_probe *p)
{
    record e = {.kind = EV_PROBE, .request = request, .text = text, .n_tokens = p->rec.n_tokens};
    for (int i = 0; p->labels && i < p->rec.n_tokens; i++) e.n_labels += p->labels[i] != NULL;
    if (p->rec.n_prompt > 0) e.sep_label = strdup(p->labels[p->rec.n_prompt - 1]);
    mt_labelled_probe_free(p);
    add(user, e);
}

static void on_probe_failed(void *user, unsigned long request, int text, const char *why)
{
    add(user,
        (record){.kind = EV_PROBE_FAILED, .request = request, .text = text, .str = strdup(why)});
}

static void on_attribution(void *user, unsigned long request, int text, mt_labelled_attribution *a)
{
    int method = (int)a->attr.method;
    mt_labelled_attribution_free(a);
    add(user, (record){.kind = EV_ATTRIBUTION, .request = request, .text = text, .method = method});
}

static void on_attribution_failed(void *user, unsigned long request, int text, const char *why)
{
    add(user,
        (record){
            .kind = EV_ATTRIBUTION_FAILED, .request = request, .text = text, .str = strdup(why)});
}

static mt_worker *start(recorder *r, const char *path, const char *device, double interval)
{
    memset(r, 0, sizeof *r);
    pthread_mutex_init(&r->lock, NULL);
    pthread_cond_init(&r->changed, NULL);
    r->final_matches_done = 1;
    mt_worker_sink sink = {.user = r,
                           .loaded = on_loaded,
                           .load_failed = on_load_failed,
                           .partial = on_partial,
                           .final = on_final,
                           .done = on_done,
                           .failed = on_failed,
                           .probe = on_probe,
                           .probe_failed = on_probe_failed,
                           .attribution = on_attribution,
                           .attribution_failed = on_attribution_failed};
    r->w = mt_worker_start(path, device, 0, interval, &sink);
    assert_non_null(r->w);
    return r->w;
}

static void release(recorder *r)
{
    for (int i = 0; i < r->n; i++) {
        free(r->ev[i].str);
        free(r->ev[i].sep_label);
    }
    for (int i = 0; i < 8; i++) free(r->finals[i]);
    pthread_cond_destroy(&r->changed);
    pthread_mutex_destroy(&r->lock);
}

static void finish(recorder *r)
{
    mt_worker_stop(r->w);
    release(r);
}

/* The index of the first record of kind for request (any request for 0), waiting up to 20 s
 * for it; -1 after that. */
static int wait_for(recorder *r, int kind, unsigned long request)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 20;
    int found = -1;
    pthread_mutex_lock(&r->lock);
    for (;;) {
        for (int i = 0; i < r->n && found < 0; i++)
            if (r->ev[i].kind == kind && (request == 0 || r->ev[i].request == request)) found = i;
        if (found >= 0 || pthread_cond_timedwait(&r->changed, &r->lock, &until) != 0) break;
    }
    pthread_mutex_unlock(&r->lock);
    return found;
}

/* Records of kind for request (under the lock: the worker may still be adding). */
static int count(recorder *r, int kind, unsigned long request)
{
    pthread_mutex_lock(&r->lock);
    int k = 0;
    for (int i = 0; i < r->n; i++) k += r->ev[i].kind == kind && r->ev[i].request == request;
    pthread_mutex_unlock(&r->lock);
    return k;
}

/* ---------------------------------------------------------------- the worker */

static void test_worker_streams_partials_then_finals(void **state)
{
    (void)state;
    recorder r;
    start(&r, bundle, NULL, 0);
    int i = wait_for(&r, EV_LOADED, 0);
    assert_true(i >= 0);
    assert_string_equal(r.ev[i].str, "cpu");
    mt_worker_request req = {
        .id = 5, .texts = test_verses(3), .n = 3, .beam = 1, .threads = 1, .probe_text = -1};
    mt_worker_submit(r.w, &req);
    i = wait_for(&r, EV_DONE, 5);
    assert_true(i >= 0);
    assert_false(r.ev[i].cancelled);
    assert_int_equal(count(&r, EV_FINAL, 5), 3);
    assert_true(count(&r, EV_PARTIAL, 5) > 0); /* interval 0: every token */
    assert_true(r.final_matches_done);
    /* every partial comes before its text's final */
    int final_seen[3] = {0, 0, 0};
    for (int k = 0; k < i; k++) {
        if (r.ev[k].kind == EV_FINAL) final_seen[r.ev[k].text] = 1;
        if (r.ev[k].kind == EV_PARTIAL) assert_false(final_seen[r.ev[k].text]);
    }
    finish(&r);
}

static void test_worker_holds_partials_back_by_the_interval(void **state)
{
    (void)state;
    recorder r;
    start(&r, bundle, NULL, 1000.0);
    mt_worker_request req = {.id = 1, .texts = test_verses(2), .n = 2, .beam = 1, .probe_text = -1};
    mt_worker_submit(r.w, &req);
    assert_true(wait_for(&r, EV_DONE, 1) >= 0);
    assert_int_equal(count(&r, EV_FINAL, 1), 2);
    /* at most the first partial of each text goes out, then none for 1000 s */
    assert_true(count(&r, EV_PARTIAL, 1) <= 2);
    finish(&r);
}

static void test_worker_newer_request_cancels_the_running_one(void **state)
{
    (void)state;
    recorder r;
    start(&r, bundle, NULL, 0);
    r.submit_on_partial = 1; /* request 2 arrives while request 1 decodes */
    mt_worker_request req = {.id = 1,
                             .texts = test_verses(3),
                             .n = 3,
                             .beam = 1,
                             .max_new_tokens = 200,
                             .probe_text = -1};
    mt_worker_submit(r.w, &req);
    int one = wait_for(&r, EV_DONE, 1), two = wait_for(&r, EV_DONE, 2);
    assert_true(one >= 0 && two > one);
    assert_true(r.ev[one].cancelled);
    assert_false(r.ev[two].cancelled);
    assert_int_equal(count(&r, EV_FINAL, 2), 2);
    finish(&r);
}

static void test_worker_cancel_stops_the_request(void **state)
{
    (void)state;
    recorder r;
    start(&r, bundle, NULL, 0);
    r.cancel_on_partial = 3;
    mt_worker_request req = {.id = 3,
                             .texts = test_verses(2),
                             .n = 2,
                             .beam = 1,
                             .max_new_tokens = 200,
                             .probe_text = 0};
    mt_worker_submit(r.w, &req);
    int i = wait_for(&r, EV_DONE, 3);
    assert_true(i >= 0);
    assert_true(r.ev[i].cancelled);
    mt_worker_stop(r.w); /* joined: every callback has run */
    /* a cancelled translation has no probes to record */
    assert_int_equal(count(&r, EV_PROBE, 3) + count(&r, EV_PROBE_FAILED, 3), 0);
    release(&r);
}

/* A worker that translated request 1 and was then asked for its integrated gradients at the
 * most steps (minutes of work), given 200 ms to start on it (whether it has or not, the
 * cancellation tests' outcomes are the same); o holds that attribution's options. */
static void start_long_attribution(recorder *r, mt_attr_opts *o)
{
    start(r, bundle, NULL, 0);
    mt_worker_request req = {.id = 1, .texts = test_verses(2), .n = 2, .beam = 1, .probe_text = -1};
    mt_worker_submit(r->w, &req);
    assert_true(wait_for(r, EV_DONE, 1) >= 0);
    mt_attr_opts_init(o);
    o->method = MT_ATTR_INTEGRATED_GRADIENTS;
    o->steps = MT_ATTR_MAX_STEPS;
    mt_worker_attribute(r->w, 0, o, NULL);
    nanosleep(&(struct timespec){0, 200000000}, NULL);
}

/* A newer request stops an attribution in progress (integrated gradients at the most steps,
 * which would take minutes) between its passes: the new translation arrives and the
 * attribution is dropped, neither delivered nor reported as failed. */
static void test_worker_newer_request_cancels_an_attribution(void **state)
{
    (void)state;
    recorder r;
    mt_attr_opts o;
    start_long_attribution(&r, &o);
    mt_worker_request next = {
        .id = 2, .texts = test_verses(2), .n = 2, .beam = 1, .probe_text = -1};
    mt_worker_submit(r.w, &next);
    int two = wait_for(&r, EV_DONE, 2);
    assert_true(two >= 0);
    assert_false(r.ev[two].cancelled);
    mt_worker_stop(r.w); /* joined: every callback has run */
    assert_int_equal(count(&r, EV_ATTRIBUTION, 1) + count(&r, EV_ATTRIBUTION_FAILED, 1), 0);
    release(&r);
}

/* A newer attribution cancels one in progress (integrated gradients at the most steps): the
 * newer one (input x gradient) is the only one delivered. */
static void test_worker_newer_attribution_cancels_the_running_one(void **state)
{
    (void)state;
    recorder r;
    mt_attr_opts o;
    start_long_attribution(&r, &o);
    o.method = MT_ATTR_INPUT_X_GRADIENT;
    mt_worker_attribute(r.w, 0, &o, NULL);
    int i = wait_for(&r, EV_ATTRIBUTION, 1);
    assert_true(i >= 0);
    assert_int_equal(r.ev[i].method, MT_ATTR_INPUT_X_GRADIENT);
    mt_worker_stop(r.w); /* joined: every callback has run */
    assert_int_equal(count(&r, EV_ATTRIBUTION, 1), 1);
    assert_int_equal(count(&r, EV_ATTRIBUTION_FAILED, 1), 0);
    release(&r);
}

static void test_worker_records_probes(void **state)
{
    (void)state;
    recorder r;
    start(&r, bundle, NULL, 0.02);
    mt_worker_request req = {.id = 7, .texts = test_verses(2), .n = 2, .beam = 3, .probe_text = 1};
    mt_worker_submit(r.w, &req);
    int i = wait_for(&r, EV_PROBE, 7);
    assert_true(i >= 0);
    assert_int_equal(r.ev[i].text, 1);
    assert_true(r.ev[i].n_tokens > 0);
    assert_int_equal(r.ev[i].n_labels, r.ev[i].n_tokens);
    assert_string_equal(r.ev[i].sep_label, "<sep>");
    assert_true(wait_for(&r, EV_DONE, 7) < i); /* the translation first */
    /* and on demand, for the other text, under the same request */
    mt_worker_probe(r.w, 0);
    for (int round = 0; round < 200 && count(&r, EV_PROBE, 7) < 2; round++)
        nanosleep(&(struct timespec){0, 10000000}, NULL);
    assert_int_equal(count(&r, EV_PROBE, 7), 2);
    pthread_mutex_lock(&r.lock);
    int last = r.n - 1;
    pthread_mutex_unlock(&r.lock);
    assert_int_equal(r.ev[last].text, 0);
    finish(&r);
}

static void test_worker_stops_in_the_middle_of_a_request(void **state)
{
    (void)state;
    recorder r;
    start(&r, bundle, NULL, 0);
    mt_worker_request req = {.id = 1,
                             .texts = test_verses(3),
                             .n = 3,
                             .beam = 5,
                             .max_new_tokens = 500,
                             .probe_text = 2};
    mt_worker_submit(r.w, &req);
    assert_true(wait_for(&r, EV_PARTIAL, 1) >= 0);
    mt_worker_stop(r.w); /* cancels, joins, frees: nothing leaks (the ASan build checks) */
    release(&r);
}

static void test_worker_reports_a_load_failure(void **state)
{
    (void)state;
    recorder r;
    start(&r, "/nonexistent/bundle", NULL, 0);
    int i = wait_for(&r, EV_LOAD_FAILED, 0);
    assert_true(i >= 0);
    assert_non_null(strstr(r.ev[i].str, "/nonexistent/bundle"));
    mt_worker_request req = {.id = 1, .texts = test_verses(2), .n = 2, .beam = 1, .probe_text = -1};
    mt_worker_submit(r.w, &req); /* dropped: nothing loaded */
    mt_worker_probe(r.w, 0);
    finish(&r);
    assert_int_equal(r.n, 1);

    start(&r, bundle, "cuda:9", 0);
    i = wait_for(&r, EV_LOAD_FAILED, 0);
    assert_true(i >= 0);
    assert_non_null(strstr(r.ev[i].str, "cuda:9"));
    finish(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_worker_streams_partials_then_finals),
        cmocka_unit_test(test_worker_holds_partials_back_by_the_interval),
        cmocka_unit_test(test_worker_newer_request_cancels_the_running_one),
        cmocka_unit_test(test_worker_cancel_stops_the_request),
        cmocka_unit_test(test_worker_newer_request_cancels_an_attribution),
        cmocka_unit_test(test_worker_newer_attribution_cancels_the_running_one),
        cmocka_unit_test(test_worker_records_probes),
        cmocka_unit_test(test_worker_stops_in_the_middle_of_a_request),
        cmocka_unit_test(test_worker_reports_a_load_failure),
    };
    return cmocka_run_group_tests_name("worker", tests, make_bundle, remove_bundle);
}
