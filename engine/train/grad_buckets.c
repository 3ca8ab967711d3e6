/* The gradient all-reduce overlapped with the backward pass (docs/distributed.md §3).
 *
 * Backward finishes the model's units one after another, last layer first
 * (mt_model_grad_ranges); consecutive units whose tensors lie side by side in the gradient
 * block form a bucket of at most cap floats. As backward finishes a bucket's last unit
 * (mt_step_opts.grads_ready), the bucket is handed over while backward goes on with earlier
 * layers. The collective says how it takes it:
 * - one with blocking sums only (MPI over host memory): a thread of this rank all-reduces the
 *   bucket with the collective's rank-order sum; backward has computed the unit when
 *   grads_ready fires (the CPU backend);
 * - one that queues sums behind the backend's work (all_reduce_sum_async: NCCL on its own CUDA
 *   stream): backward's thread queues the bucket's sum as it hands it over, no thread. On a
 *   device grads_ready fires once the unit's kernels are queued, not run; the collective's
 *   stream waits for them on an event of the compute stream.
 * What no unit owns (embeddings, final norms, the output projection) is complete only when
 * backward returns; it follows as the last buckets. grad_buckets_finish hands those over and
 * waits for them all before the optimiser step (on a stream: the compute stream waits, the
 * host goes on).
 *
 * Every element is still summed in rank order by the same collective, so the bits are those of
 * one all-reduce of the whole block after backward (the naive path, `overlap = false`): only
 * the time the sum happens moves. Every rank runs the same plan of buckets in the same order,
 * whether or not it ran a backward in the step (a rank with no shard posts all at the end). */
#include "mtlab/clock.h"
#include "mtlab/collective.h"
#include "mtlab/error.h"
#include "train_internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    size_t lo, hi; /* floats of the gradient block */
} bucket;

struct grad_buckets {
    mt_collective *coll;
    float *grads; /* the model's gradient block (the collective's memory) */
    int bf16; /* 1: all-reduce as bf16 (mt_collective_all_reduce_bf16) */
    int queued; /* 1: the collective queues the sums (all_reduce_sum_async), no thread */
    bucket *buckets; /* (n_buckets) in the order they are reduced */
    int n_buckets;
    int *ready_after; /* (n_ranges) buckets complete once range i is: a prefix of buckets */
    int n_ranges;

    /* the thread, when the collective's sums block (queued: no thread; backward's thread
     * keeps posted, failed and error) */
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t work, idle;
    int posted, done; /* buckets handed to the thread, and reduced, this step */
    int quit;
    int failed;
    char error[1024]; /* the first failure's message (errors are per thread) */
    double busy_s; /* the thread's time in the all-reduce, this step */
};

/* the first failure, which stops the buckets after it (the plan's order on every rank) */
static void fail_bucket(grad_buckets *b, int k)
{
    if (b->failed) return;
    b->failed = 1;
    snprintf(b->error, sizeof b->error, "bucket %d (floats %zu..%zu): %s", k, b->buckets[k].lo,
             b->buckets[k].hi, mt_last_error());
}

static void *reduce_thread(void *arg)
{
    grad_buckets *b = arg;
    pthread_mutex_lock(&b->lock);
    for (;;) {
        while (b->done == b->posted && !b->quit) pthread_cond_wait(&b->work, &b->lock);
        if (b->done == b->posted) break; /* quit, nothing left */
        const bucket *k = &b->buckets[b->done];
        int skip = b->failed;
        pthread_mutex_unlock(&b->lock);
        int rc = 0;
        double t = mt_now_s();
        if (!skip) {
            float *x = b->grads + k->lo;
            size_t n = k->hi - k->lo;
            rc = b->bf16 ? mt_collective_all_reduce_bf16(b->coll, x, n)
                         : b->coll->all_reduce_sum(b->coll, x, n);
        }
        t = mt_now_s() - t;
        pthread_mutex_lock(&b->lock);
        if (rc != 0) fail_bucket(b, b->done);
        b->busy_s += t;
        b->done++;
        pthread_cond_broadcast(&b->idle);
    }
    pthread_mutex_unlock(&b->lock);
    return NULL;
}

static void add_bucket(grad_buckets *b, int *cap, size_t lo, size_t hi)
{
    if (b->n_buckets == *cap) {
        *cap = *cap ? 2 * *cap : 16;
        b->buckets = mt_xrealloc(b->buckets, (size_t)*cap * sizeof *b->buckets);
    }
    b->buckets[b->n_buckets++] = (bucket){lo, hi};
}

static int by_lo(const void *x, const void *y)
{
    const bucket *a = x, *c = y;
    return a->lo < c->lo ? -1 : a->lo > c->lo;
}

/* The plan: the units' ranges merged while adjacent and within cap, then the rest of the block
 * (what no unit owns) cut at cap. */
static void plan(grad_buckets *b, mt_model *m, size_t cap_floats)
{
    size_t n = mt_model_param_block_size(m);
    int nr = mt_model_grad_ranges(m, NULL, NULL, 0);
    size_t *lo = mt_xmalloc(((size_t)nr + 1) * sizeof *lo),
           *hi = mt_xmalloc(((size_t)nr + 1) * sizeof *hi);
    mt_model_grad_ranges(m, lo, hi, nr);
    b->n_ranges = nr;
    b->ready_after = mt_xcalloc((size_t)nr + 1, sizeof *b->ready_after);
    int cap = 0;
    bucket cur = {0, 0};
    for (int i = 0; i < nr; i++) {
        if (cur.hi > cur.lo) {
            if (hi[i] == cur.lo) cur.lo = lo[i]; /* the layer below: the usual order */
            else cur.hi = hi[i];
        } else {
            cur = (bucket){lo[i], hi[i]};
        }
        /* close the bucket when the next unit cannot join it: the last, not beside it, or too
         * big together */
        int next = i + 1 < nr && (hi[i + 1] == cur.lo || lo[i + 1] == cur.hi) &&
                   cur.hi - cur.lo + (hi[i + 1] - lo[i + 1]) <= cap_floats;
        if (!next) {
            add_bucket(b, &cap, cur.lo, cur.hi);
            cur = (bucket){0, 0};
        }
        b->ready_after[i] = b->n_buckets; /* range i done: these buckets are complete */
    }
    /* the gaps between the units' buckets, in block order */
    int units = b->n_buckets;
    bucket *sorted = mt_xmalloc(((size_t)units + 1) * sizeof *sorted);
    memcpy(sorted, b->buckets, (size_t)units * sizeof *sorted);
    qsort(sorted, (size_t)units, sizeof *sorted, by_lo);
    size_t at = 0;
    for (int k = 0; k <= units; k++) {
        size_t end = k < units ? sorted[k].lo : n;
        for (; at < end; at += cap_floats)
            add_bucket(b, &cap, at, end - at < cap_floats ? end : at + cap_floats);
        if (k < units) at = sorted[k].hi;
    }
    free(sorted);
    free(lo);
    free(hi);
}

grad_buckets *grad_buckets_open(mt_collective *coll, mt_model *m, double bucket_mb, int bf16)
{
    int queued = coll->all_reduce_sum_async != NULL;
    if (queued && bf16) {
        mt_error("gradient buckets: bf16 sums are made in host memory; %s queues fp32 sums on "
                 "its stream",
                 coll->name);
        return NULL;
    }
    size_t cap = (size_t)(bucket_mb * (1 << 20) / sizeof(float));
    if (cap < 1) cap = 1;
    grad_buckets *b = mt_xcalloc(1, sizeof *b);
    b->coll = coll;
    b->grads = mt_model_grads(m);
    b->bf16 = bf16;
    b->queued = queued;
    plan(b, m, cap);
    if (queued) return b;
    pthread_mutex_init(&b->lock, NULL);
    pthread_cond_init(&b->work, NULL);
    pthread_cond_init(&b->idle, NULL);
    if (pthread_create(&b->thread, NULL, reduce_thread, b) != 0) {
        pthread_mutex_destroy(&b->lock);
        pthread_cond_destroy(&b->work);
        pthread_cond_destroy(&b->idle);
        free(b->buckets);
        free(b->ready_after);
        free(b);
        mt_error("gradient buckets: cannot start the all-reduce thread");
        return NULL;
    }
    return b;
}

int grad_buckets_count(const grad_buckets *b) { return b->n_buckets; }

/* Buckets up to upto (exclusive) are complete: queue their sums behind the backend's work, or
 * wake the thread. */
static void post(grad_buckets *b, int upto)
{
    if (b->queued) {
        for (; b->posted < upto; b->posted++) {
            const bucket *k = &b->buckets[b->posted];
            if (!b->failed &&
                b->coll->all_reduce_sum_async(b->coll, b->grads + k->lo, k->hi - k->lo) != 0)
                fail_bucket(b, b->posted);
        }
        return;
    }
    pthread_mutex_lock(&b->lock);
    if (upto > b->posted) {
        b->posted = upto;
        pthread_cond_signal(&b->work);
    }
    pthread_mutex_unlock(&b->lock);
}

void grad_buckets_ready(void *ud, int range)
{
    grad_buckets *b = ud;
    if (range >= 0 && range < b->n_ranges) post(b, b->ready_after[range]);
}

/* The sums queued, the rest of the step's backend work waits for them (the host does not). */
static int finish_queued(grad_buckets *b)
{
    post(b, b->n_buckets);
    /* a failed bucket stopped the rest; the compute stream still waits for those queued */
    int rc = b->coll->all_reduce_wait(b->coll);
    if (rc != 0 && !b->failed)
        snprintf(b->error, sizeof b->error, "waiting for the %d queued buckets: %s", b->n_buckets,
                 mt_last_error());
    int failed = b->failed || rc != 0;
    b->posted = 0;
    b->failed = 0;
    return failed ? mt_error("%s", b->error) : 0;
}

int grad_buckets_finish(grad_buckets *b, double *wait_s, double *busy_s)
{
    double t = mt_now_s();
    if (b->queued) {
        int rc = finish_queued(b);
        if (wait_s) *wait_s += mt_now_s() - t;
        return rc;
    }
    post(b, b->n_buckets);
    pthread_mutex_lock(&b->lock);
    while (b->done < b->n_buckets) pthread_cond_wait(&b->idle, &b->lock);
    int failed = b->failed;
    if (busy_s) *busy_s += b->busy_s;
    b->posted = b->done = 0;
    b->failed = 0;
    b->busy_s = 0;
    pthread_mutex_unlock(&b->lock);
    if (wait_s) *wait_s += mt_now_s() - t;
    return failed ? mt_error("%s", b->error) : 0;
}

void grad_buckets_close(grad_buckets *b)
{
    if (!b) return;
    if (!b->queued) {
        pthread_mutex_lock(&b->lock);
        b->quit = 1;
        pthread_cond_signal(&b->work);
        pthread_mutex_unlock(&b->lock);
        pthread_join(b->thread, NULL);
        pthread_mutex_destroy(&b->lock);
        pthread_cond_destroy(&b->work);
        pthread_cond_destroy(&b->idle);
    }
    free(b->buckets);
    free(b->ready_after);
    free(b);
}
