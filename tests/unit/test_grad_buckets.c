/* The buckets of the gradient all-reduce overlapped with backward (engine/train/grad_buckets.c,
 * docs/distributed.md §3.1), as a collective sees them. A collective that queues sums behind
 * the backend's work (all_reduce_sum_async: NCCL on its own CUDA stream) gets each bucket on
 * backward's own thread as soon as backward has queued the bucket's last unit, the rest when the
 * step finishes, then one all_reduce_wait; the same buckets in the same order as a collective
 * reduced by the thread (all_reduce_sum: MPI). Both collectives here are test doubles that
 * record their calls; the sums themselves are tested with MPI in tests/jobs and with NCCL in
 * test_collective_nccl. */
#include "test_util.h"
#include "model_parity.h"

#include "mtlab/collective.h"
#include "mtlab/error.h"
#include "mtlab/model.h"
#include "train/train_internal.h"

#include <pthread.h>

enum { MAX_CALLS = 256, MAX_RANGES = 64 };

typedef struct {
    size_t lo, n; /* floats of the gradient block */
    int ranges_seen; /* grads_ready calls of the backward under way before this call */
    int in_finish; /* 1: made by grad_buckets_finish, after backward returned */
    int on_main; /* 1: made on the thread that runs backward */
} sum_call;

/* what the collective saw; impl of both doubles */
typedef struct {
    const float *grads; /* the model's gradient block */
    pthread_t main; /* the thread that runs backward */
    int ranges_seen, in_finish;
    sum_call calls[MAX_CALLS];
    int n_calls; /* all_reduce_sum_async or all_reduce_sum calls */
    int blocking; /* of them, all_reduce_sum */
    int waits, calls_before_wait; /* all_reduce_wait calls; n_calls at the last */
    int fail_at; /* the call that fails (-1: none) */
} recorder;

static int record(mt_collective *c, float *x, size_t n)
{
    recorder *r = c->impl;
    assert_true(r->n_calls < MAX_CALLS);
    r->calls[r->n_calls] = (sum_call){.lo = (size_t)(x - r->grads),
                                      .n = n,
                                      .ranges_seen = r->ranges_seen,
                                      .in_finish = r->in_finish,
                                      .on_main = pthread_equal(pthread_self(), r->main)};
    if (r->n_calls++ == r->fail_at) return mt_error("the double fails this sum");
    return 0;
}

static int recorded_sum(mt_collective *c, float *x, size_t n)
{
    ((recorder *)c->impl)->blocking++;
    return record(c, x, n);
}

static int recorded_wait(mt_collective *c)
{
    recorder *r = c->impl;
    r->waits++;
    r->calls_before_wait = r->n_calls;
    return 0;
}

static int no_gather(mt_collective *c, const void *mine, void *all, size_t bytes) { return -1; }
static int no_broadcast(mt_collective *c, void *buf, size_t bytes, int root) { return -1; }
static int no_barrier(mt_collective *c) { return -1; }
static void no_close(mt_collective *c) {}

/* rank 0 of 2: a collective whose sums run on a stream (async = 1) or one a thread calls */
static mt_collective double_of(recorder *r, int async)
{
    return (mt_collective){.rank = 0,
                           .size = 2,
                           .any_thread = !async,
                           .name = async ? "stream double" : "thread double",
                           .all_reduce_sum = recorded_sum,
                           .all_reduce_sum_async = async ? record : NULL,
                           .all_reduce_wait = async ? recorded_wait : NULL,
                           .all_gather = no_gather,
                           .broadcast = no_broadcast,
                           .barrier = no_barrier,
                           .close = no_close,
                           .impl = r};
}

/* grads_ready as the trainer passes it, counting the ranges backward reports first */
typedef struct {
    recorder *rec;
    grad_buckets *b;
} ready_hook;

static void counted_ready(void *ud, int range)
{
    ready_hook *h = ud;
    h->rec->ranges_seen++;
    grad_buckets_ready(h->b, range);
}

/* encoder `src </s>` and decoder `<s> tgt </s>`, right padded */
static const int32_t src[2 * 5] = {5, 6, 7, 8, 1, 9, 10, 1, 0, 0};
static const int32_t tgt[2 * 4] = {3, 5, 6, 1, 3, 7, 1, 0};

/* A tiny encoder-decoder Transformer (3 decoder and 2 encoder layers) with its gradient block,
 * which the first backward allocates (the trainer runs one before it opens its buckets). */
static mt_model *tiny_model(void)
{
    mt_model_config c;
    tiny_model_config(&c, "transformer", 0.0f);
    mt_model *m = mt_model_create(&c, mt_backend_cpu(), 3);
    if (!m) fail_msg("%s", mt_last_error());
    mt_batch batch = {.B = 2, .T = 4, .ids = tgt, .S = 5, .src = src};
    mt_step_opts opts = {0};
    double loss;
    assert_int_equal(mt_model_forward_backward(m, &batch, &opts, 1.0f, &loss, NULL), 0);
    return m;
}

/* One backward of m with its buckets over c handed over as it goes, then the step's finish;
 * what grad_buckets_finish returned. */
static int step(mt_model *m, grad_buckets *b, recorder *r)
{
    mt_batch batch = {.B = 2, .T = 4, .ids = tgt, .S = 5, .src = src};
    ready_hook hook = {r, b};
    mt_step_opts opts = {.train = 1, .seed = 1, .step = 1};
    opts.grads_ready = counted_ready;
    opts.grads_ready_ud = &hook;
    r->main = pthread_self();
    r->grads = mt_model_grads(m);
    r->ranges_seen = r->in_finish = 0;
    mt_model_zero_grad(m);
    double loss;
    assert_int_equal(mt_model_forward_backward(m, &batch, &opts, 1.0f, &loss, NULL), 0);
    r->in_finish = 1;
    return grad_buckets_finish(b, NULL, NULL);
}

/* does [lo, hi) hold [a, b)? */
static int holds(size_t lo, size_t hi, size_t a, size_t b) { return lo <= a && b <= hi; }

/* The calls of a stream collective over one step with buckets of bucket_mb: each unit's bucket
 * on backward's thread as soon as its last unit is reported, the rest at the finish, one wait
 * after all; the buckets tile the block and are those (and in the order) a thread reduces. */
static void check_schedule(mt_model *m, double bucket_mb, int min_in_backward)
{
    size_t lo[MAX_RANGES], hi[MAX_RANGES], n = mt_model_param_block_size(m);
    int nr = mt_model_grad_ranges(m, lo, hi, MAX_RANGES);
    assert_true(nr >= 5 && nr <= MAX_RANGES);

    recorder rs = {.fail_at = -1}, rt = {.fail_at = -1};
    mt_collective stream = double_of(&rs, 1), thread = double_of(&rt, 0);
    grad_buckets *bs = grad_buckets_open(&stream, m, bucket_mb, 0);
    grad_buckets *bt = grad_buckets_open(&thread, m, bucket_mb, 0);
    if (!bs || !bt) fail_msg("%s", mt_last_error());
    assert_int_equal(grad_buckets_count(bs), grad_buckets_count(bt));
    for (int s = 0; s < 2; s++) { /* a second step runs the same plan again */
        rs.n_calls = rs.blocking = rs.waits = rt.n_calls = rt.blocking = 0;
        assert_int_equal(step(m, bs, &rs), 0);
        assert_int_equal(step(m, bt, &rt), 0);

        /* the stream collective: queued sums only, each on backward's thread, then one wait */
        assert_int_equal(rs.n_calls, grad_buckets_count(bs));
        assert_int_equal(rs.blocking, 0);
        assert_int_equal(rs.waits, 1);
        assert_int_equal(rs.calls_before_wait, rs.n_calls);
        /* the same buckets in the same order as the thread's blocking sums */
        assert_int_equal(rt.n_calls, rs.n_calls);
        assert_int_equal(rt.blocking, rt.n_calls);
        for (int k = 0; k < rs.n_calls; k++) {
            assert_true(rs.calls[k].on_main);
            assert_false(rt.calls[k].on_main);
            assert_int_equal(rs.calls[k].lo, rt.calls[k].lo);
            assert_int_equal(rs.calls[k].n, rt.calls[k].n);
        }
        /* the buckets tile the block once */
        char *seen = calloc(n, 1);
        for (int k = 0; k < rs.n_calls; k++)
            for (size_t i = rs.calls[k].lo; i < rs.calls[k].lo + rs.calls[k].n; i++) {
                assert_true(i < n);
                assert_int_equal(seen[i]++, 0);
            }
        for (size_t i = 0; i < n; i++) assert_int_equal(seen[i], 1);
        free(seen);
        /* a bucket queued during backward holds only units reported, the last reported one
         * among them (it was queued when that unit was); every unit's floats are queued before
         * backward returns */
        int in_backward = 0;
        for (int k = 0; k < rs.n_calls; k++) {
            const sum_call *c = &rs.calls[k];
            if (c->in_finish) continue;
            in_backward++;
            int last = c->ranges_seen - 1;
            assert_true(last >= 0);
            assert_true(holds(c->lo, c->lo + c->n, lo[last], hi[last]));
            for (int i = c->ranges_seen; i < nr; i++)
                assert_false(lo[i] < c->lo + c->n && c->lo < hi[i]);
        }
        for (int i = 0; i < nr; i++) {
            int queued = 0;
            for (int k = 0; k < rs.n_calls && !queued; k++)
                queued = !rs.calls[k].in_finish &&
                         holds(rs.calls[k].lo, rs.calls[k].lo + rs.calls[k].n, lo[i], hi[i]);
            if (!queued)
                fail_msg("range %d (%zu..%zu) not queued during backward", i, lo[i], hi[i]);
        }
        if (s == 0)
            print_message("bucket_mb %g: %d buckets, %d queued during backward\n", bucket_mb,
                          rs.n_calls, in_backward);
        assert_true(in_backward >= min_in_backward);
    }
    grad_buckets_close(bs);
    grad_buckets_close(bt);
}

static void test_stream_collective_gets_each_bucket_as_backward_queues_it(void **state)
{
    mt_model *m = tiny_model();
    int nr = mt_model_grad_ranges(m, NULL, NULL, 0);
    check_schedule(m, 1e-4, nr); /* 26 floats: every unit a bucket alone */
    check_schedule(m, 25, 1); /* every unit in one bucket, queued with the last */
    mt_model_free(m);
}

/* A queued sum that fails: the buckets after it are not queued, the compute stream still waits
 * for those that were, and the step fails naming the bucket; the next step starts afresh. */
static void test_failed_queued_sum_names_its_bucket(void **state)
{
    mt_model *m = tiny_model();
    recorder r = {.fail_at = 1};
    mt_collective c = double_of(&r, 1);
    grad_buckets *b = grad_buckets_open(&c, m, 1e-4, 0);
    assert_non_null(b);
    assert_true(grad_buckets_count(b) > 3);
    assert_int_equal(step(m, b, &r), -1);
    assert_non_null(strstr(mt_last_error(), "bucket 1 (floats"));
    assert_non_null(strstr(mt_last_error(), "the double fails this sum"));
    assert_int_equal(r.n_calls, 2);
    assert_int_equal(r.waits, 1);
    r.fail_at = -1;
    r.n_calls = r.waits = 0;
    assert_int_equal(step(m, b, &r), 0);
    assert_int_equal(r.n_calls, grad_buckets_count(b));
    assert_int_equal(r.waits, 1);
    grad_buckets_close(b);
    mt_model_free(m);
}

/* bf16 sums are made in host memory (mt_collective_all_reduce_bf16): a stream collective
 * cannot take them bucket by bucket, and says so. */
static void test_bf16_refused_on_a_stream(void **state)
{
    mt_model *m = tiny_model();
    recorder r = {.fail_at = -1};
    mt_collective c = double_of(&r, 1);
    assert_null(grad_buckets_open(&c, m, 25, 1));
    assert_non_null(strstr(mt_last_error(), "bf16"));
    assert_non_null(strstr(mt_last_error(), "stream double"));
    mt_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stream_collective_gets_each_bucket_as_backward_queues_it),
        cmocka_unit_test(test_failed_queued_sum_names_its_bucket),
        cmocka_unit_test(test_bf16_refused_on_a_stream),
    };
    return cmocka_run_group_tests_name("grad_buckets", tests, NULL, NULL);
}
