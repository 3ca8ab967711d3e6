/* Data-parallel training (mtlab/collective.h): N ranks of mt_train_run, here threads joined by
 * a collective over shared memory that adds in rank order as the MPI one does, give the losses
 * of one process with max_tokens x N; two runs of the same N give the same bits; a run resumed
 * on another number of ranks goes on with the same losses. The MPI path itself runs in
 * tests/jobs/run.sh (mpirun and srun). */
#include "test_util.h"
#include "mtlab/collective.h"
#include "mtlab/error.h"
#include "mtlab/train.h"

#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

static char tmpdir[64];

/* ---- a collective of threads */
enum { MAX_RANKS = 4 };
typedef struct {
    pthread_barrier_t barrier;
    int size;
    void *slot[MAX_RANKS]; /* what each rank published for the operation under way */
    float *sum; /* all_reduce_sum's result, n floats */
    size_t cap;
    pthread_t main_of[MAX_RANKS]; /* the thread each rank's mt_train_run runs on */
    long reduces[MAX_RANKS], reduces_off_main[MAX_RANKS]; /* all_reduce_sum calls, from another
                                                           * thread than the rank's own */
    size_t floats[MAX_RANKS]; /* floats they summed */
    long queued[MAX_RANKS], queued_off_main[MAX_RANKS]; /* all_reduce_sum_async calls */
    long waits[MAX_RANKS]; /* all_reduce_wait calls */
    char overlap[256]; /* rank 0's train.log line on the overlap */
} thread_group;

/* 1: run_ranks' collectives queue their sums (all_reduce_sum_async, as NCCL does on its
 * stream) instead of leaving the overlap to a thread */
static int queue_sums;

static int threads_all_reduce_sum(mt_collective *c, float *x, size_t n)
{
    thread_group *g = c->impl;
    g->reduces[c->rank]++;
    g->floats[c->rank] += n;
    if (!pthread_equal(pthread_self(), g->main_of[c->rank])) g->reduces_off_main[c->rank]++;
    g->slot[c->rank] = x;
    pthread_barrier_wait(&g->barrier);
    if (c->rank == 0) {
        if (n > g->cap) {
            free(g->sum);
            g->sum = mt_xmalloc(n * sizeof *g->sum);
            g->cap = n;
        }
        for (size_t i = 0; i < n; i++) {
            float s = ((float *)g->slot[0])[i];
            for (int r = 1; r < g->size; r++) s += ((float *)g->slot[r])[i];
            g->sum[i] = s;
        }
    }
    pthread_barrier_wait(&g->barrier);
    memcpy(x, g->sum, n * sizeof *x);
    pthread_barrier_wait(&g->barrier);
    return 0;
}

/* Queued behind the backend's work: on the CPU a unit is computed when backward reports it,
 * so the sum can run at once. */
static int threads_all_reduce_sum_async(mt_collective *c, float *x, size_t n)
{
    thread_group *g = c->impl;
    g->queued[c->rank]++;
    if (!pthread_equal(pthread_self(), g->main_of[c->rank])) g->queued_off_main[c->rank]++;
    return threads_all_reduce_sum(c, x, n);
}

static int threads_all_reduce_wait(mt_collective *c)
{
    ((thread_group *)c->impl)->waits[c->rank]++;
    return 0;
}

static int threads_all_gather(mt_collective *c, const void *mine, void *all, size_t bytes)
{
    thread_group *g = c->impl;
    g->slot[c->rank] = (void *)mine;
    pthread_barrier_wait(&g->barrier);
    for (int r = 0; r < g->size; r++) memcpy((char *)all + (size_t)r * bytes, g->slot[r], bytes);
    pthread_barrier_wait(&g->barrier);
    return 0;
}

static int threads_broadcast(mt_collective *c, void *buf, size_t bytes, int root)
{
    thread_group *g = c->impl;
    g->slot[c->rank] = buf;
    pthread_barrier_wait(&g->barrier);
    if (c->rank != root) memcpy(buf, g->slot[root], bytes);
    pthread_barrier_wait(&g->barrier);
    return 0;
}

static int threads_barrier(mt_collective *c)
{
    pthread_barrier_wait(&((thread_group *)c->impl)->barrier);
    return 0;
}

static void threads_close(mt_collective *c) {}

typedef struct {
    mt_collective coll;
    const mt_train_config *cfg;
    int resume, rc;
    char error[1024];
} rank_thread;

static void keep_overlap_line(void *ud, const char *text)
{
    if (!strncmp(text, "overlap:", 8))
        snprintf(((thread_group *)ud)->overlap, sizeof((thread_group *)ud)->overlap, "%s", text);
}

static void *rank_main(void *arg)
{
    rank_thread *t = arg;
    ((thread_group *)t->coll.impl)->main_of[t->coll.rank] = pthread_self();
    /* ranks share the cores as processes would: OpenMP teams of each spinning would starve
     * the other rank */
    if (t->coll.size > 1) omp_set_num_threads(1);
    mt_train_hooks hooks = {
        .collective = &t->coll, .message = keep_overlap_line, .ud = t->coll.impl};
    t->rc = mt_train_run(t->cfg, t->resume, &hooks);
    if (t->rc != 0) snprintf(t->error, sizeof t->error, "%s", mt_last_error());
    return NULL;
}

/* What the last run_ranks saw of its collective's all-reduces. */
static thread_group last_group;

/* The config trained by `ranks` ranks at once. */
static void run_ranks(const mt_train_config *cfg, int ranks, int resume)
{
    thread_group g = {.size = ranks};
    pthread_barrier_init(&g.barrier, NULL, (unsigned)ranks);
    rank_thread t[MAX_RANKS];
    pthread_t th[MAX_RANKS];
    for (int r = 0; r < ranks; r++) {
        t[r] = (rank_thread){.cfg = cfg, .resume = resume};
        t[r].coll = (mt_collective){.rank = r,
                                    .size = ranks,
                                    .any_thread = 1,
                                    .name = "threads",
                                    .impl = &g,
                                    .all_reduce_sum = threads_all_reduce_sum,
                                    .all_reduce_sum_async =
                                        queue_sums ? threads_all_reduce_sum_async : NULL,
                                    .all_reduce_wait = queue_sums ? threads_all_reduce_wait : NULL,
                                    .all_gather = threads_all_gather,
                                    .broadcast = threads_broadcast,
                                    .barrier = threads_barrier,
                                    .close = threads_close};
        assert_int_equal(pthread_create(&th[r], NULL, rank_main, &t[r]), 0);
    }
    for (int r = 0; r < ranks; r++) pthread_join(th[r], NULL);
    pthread_barrier_destroy(&g.barrier);
    free(g.sum);
    g.sum = NULL;
    last_group = g;
    for (int r = 0; r < ranks; r++)
        if (t[r].rc != 0) fail_msg("%s, rank %d of %d: %s", cfg->name, r, ranks, t[r].error);
}

/* ---- runs */
static void tiny_config(mt_train_config *cfg, const char *run, size_t max_tokens, long max_steps)
{
    test_tiny_train_config(cfg, "mamba-small", tmpdir, run, max_steps);
    cfg->model.d_state = 4;
    /* each row draws its dropout masks from its index in the step's global batch, so the
     * runs agree with dropout on (docs/distributed.md) */
    cfg->model.dropout = 0.1f;
    cfg->max_tokens = max_tokens;
    cfg->seed = 5;
}

/* The losses of the log's train records, in step order (n: how many). */
static int read_losses(const mt_train_config *cfg, double *loss, int cap, char *ranks_seen,
                       size_t n_seen)
{
    char path[700];
    snprintf(path, sizeof path, "%s/log.jsonl", cfg->run_dir);
    char *log = test_read_file(path, NULL);
    if (!log) fail_msg("%s: cannot read", path);
    int n = 0;
    for (char *p = strstr(log, "\"loss\":"); p && n < cap; p = strstr(p + 1, "\"loss\":"))
        loss[n++] = strtod(p + 7, NULL);
    if (ranks_seen) {
        char *r = strstr(log, "\"ranks\":");
        snprintf(ranks_seen, n_seen, "%.*s", r ? 9 : 0, r ? r : "");
    }
    free(log);
    return n;
}

/* The epoch of the log's train records, in step order (n: how many). */
static int read_epochs(const mt_train_config *cfg, int *epoch, int cap)
{
    char path[700];
    snprintf(path, sizeof path, "%s/log.jsonl", cfg->run_dir);
    char *log = test_read_file(path, NULL);
    if (!log) fail_msg("%s: cannot read", path);
    int n = 0;
    for (char *p = strstr(log, "\"epoch\":"); p && n < cap; p = strstr(p + 1, "\"epoch\":"))
        epoch[n++] = atoi(p + 8);
    free(log);
    return n;
}

static void assert_close(const double *a, const double *b, int n, double rel, const char *what)
{
    for (int i = 0; i < n; i++)
        if (!(fabs(a[i] - b[i]) <= rel * fabs(b[i])))
            fail_msg("%s: step %d: %.17g vs %.17g (relative %.3g > %.1g)", what, i + 1, a[i], b[i],
                     fabs(a[i] - b[i]) / fabs(b[i]), rel);
}

/* The 20 losses of the uninterrupted runs the tests compare with, each trained once:
 * 1 rank x 1200, 2 ranks x 600, 1 rank x 600. */
static double ref_one[20], ref_two[20], ref_half[20];

static void reference_runs(void)
{
    static int done;
    if (done) return;
    mt_train_config one, two, half;
    tiny_config(&one, "one", 1200, 20);
    tiny_config(&two, "two", 600, 20);
    tiny_config(&half, "half", 600, 20);
    run_ranks(&one, 1, 0);
    run_ranks(&two, 2, 0);
    run_ranks(&half, 1, 0);
    char ranks[16];
    assert_int_equal(read_losses(&one, ref_one, 20, NULL, 0), 20);
    assert_int_equal(read_losses(&two, ref_two, 20, ranks, sizeof ranks), 20);
    assert_string_equal(ranks, "\"ranks\":2");
    assert_int_equal(read_losses(&half, ref_half, 20, NULL, 0), 20);
    done = 1;
}

static void test_two_ranks_equal_one_process_with_twice_the_batch(void **state)
{
    reference_runs();
    assert_close(ref_two, ref_one, 20, 1e-5, "2 ranks x 600 vs 1 x 1200");
    mt_train_config again;
    tiny_config(&again, "two-again", 600, 20);
    run_ranks(&again, 2, 0);
    double l3[32];
    assert_int_equal(read_losses(&again, l3, 32, NULL, 0), 20);
    assert_memory_equal(ref_two, l3, sizeof l3[0] * 20); /* bit-identical runs */
    /* the data really is shared out: one rank alone with 600 trains on other batches */
    assert_true(ref_half[1] != ref_one[1]);
}

/* The bytes of a run's checkpoint weights (n: how many). */
static char *checkpoint_weights(const mt_train_config *cfg, size_t *n)
{
    char path[700];
    snprintf(path, sizeof path, "%s/checkpoint/model.safetensors", cfg->run_dir);
    char *w = test_read_file(path, n);
    if (!w) fail_msg("%s: cannot read", path);
    return w;
}

static void assert_same_weights(const mt_train_config *a, const mt_train_config *b)
{
    size_t na, nb;
    char *wa = checkpoint_weights(a, &na), *wb = checkpoint_weights(b, &nb);
    assert_int_equal(na, nb);
    if (memcmp(wa, wb, na) != 0) fail_msg("%s and %s: the weights differ", a->name, b->name);
    free(wa);
    free(wb);
}

/* Overlapped (buckets reduced by a thread while backward goes on) and naive (the whole block
 * after backward) give the same bits; the buckets really are several and off the rank's
 * thread, and together they cover the block once per step. */
static void test_overlapped_reduce_equals_naive(void **state)
{
    reference_runs();
    mt_train_config naive, small;
    tiny_config(&naive, "naive", 600, 20);
    naive.overlap = 0;
    run_ranks(&naive, 2, 0);
    thread_group g = last_group;
    assert_int_equal(g.reduces[0], 20); /* one call a step */
    assert_int_equal(g.reduces_off_main[0], 0);
    size_t block = g.floats[0] / 20;
    double l[32];
    assert_int_equal(read_losses(&naive, l, 32, NULL, 0), 20);
    assert_memory_equal(ref_two, l, sizeof l[0] * 20);

    /* buckets of ~1 KB: every unit's gradients on their own */
    tiny_config(&small, "small-buckets", 600, 20);
    small.bucket_mb = 1e-3;
    run_ranks(&small, 2, 0);
    g = last_group;
    for (int r = 0; r < 2; r++) {
        assert_true(g.reduces[r] > 2 * 20);
        assert_int_equal(g.reduces_off_main[r], g.reduces[r]);
        assert_int_equal(g.floats[r], 20 * block);
    }
    assert_int_equal(read_losses(&small, l, 32, NULL, 0), 20);
    assert_memory_equal(ref_two, l, sizeof l[0] * 20);
    assert_same_weights(&naive, &small);
    mt_train_config def;
    tiny_config(&def, "two-weights", 600, 20);
    run_ranks(&def, 2, 0);
    assert_same_weights(&naive, &def);
}

/* A collective that queues its sums (NCCL on its stream) gets the buckets on the rank's own
 * thread, one wait a step, and the same bits as the thread's buckets and the naive sum; the
 * log says which way it reduces. bf16 gradients, summed in host memory, go after backward. */
static void test_queued_sums_equal_thread_and_naive(void **state)
{
    reference_runs();
    mt_train_config queued, two, bf16;
    tiny_config(&queued, "queued-buckets", 600, 20);
    queued.bucket_mb = 1e-3;
    tiny_config(&two, "two", 600, 20); /* reference_runs': buckets reduced by a thread */
    queue_sums = 1;
    run_ranks(&queued, 2, 0);
    queue_sums = 0;
    thread_group g = last_group;
    for (int r = 0; r < 2; r++) {
        assert_true(g.queued[r] > 2 * 20);
        assert_int_equal(g.queued_off_main[r], 0);
        assert_int_equal(g.reduces[r], g.queued[r]); /* no blocking sum */
        assert_int_equal(g.waits[r], 20);
    }
    assert_non_null(strstr(g.overlap, "buckets (bucket_mb 0.001, fp32) queued on the stream of "
                                      "threads as backward queues their layers"));
    double l[32];
    assert_int_equal(read_losses(&queued, l, 32, NULL, 0), 20);
    assert_memory_equal(ref_two, l, sizeof l[0] * 20);
    assert_same_weights(&two, &queued);

    tiny_config(&bf16, "queued-bf16", 600, 2);
    snprintf(bf16.grad_dtype, sizeof bf16.grad_dtype, "bf16");
    queue_sums = 1;
    run_ranks(&bf16, 2, 0);
    queue_sums = 0;
    assert_int_equal(last_group.queued[0], 0);
    assert_int_equal(last_group.waits[0], 0);
    assert_string_equal(last_group.overlap, "overlap: gradients all-reduced after backward "
                                            "(threads: bf16 sums are made in host memory)");
}

/* The same for every architecture of the registry (encoder-decoders with two stacks,
 * cross-attention and post-norm units; decoder-only stacks with rotary attention, retention,
 * hybrids) with accum 2, where only each step's last backward hands buckets over: buckets of
 * one unit, of several, naive, all the same bits. */
static void test_overlap_equals_naive_across_architectures(void **state)
{
    static const double bucket_mb[] = {0, 1e-3, 0.05};
    for (const char *const *arch = mt_model_arch_list(); *arch; arch++) {
        char preset[64];
        snprintf(preset, sizeof preset, "%s-small", *arch);
        mt_train_config cfg[3];
        for (int k = 0; k < 3; k++) {
            char run[96];
            snprintf(run, sizeof run, "%s-%d", preset, k);
            test_tiny_train_config(&cfg[k], preset, tmpdir, run, 6);
            cfg[k].model.n_encoder_layers = 2;
            cfg[k].model.n_heads = 2;
            cfg[k].model.ffn_dim = 32;
            cfg[k].model.d_state = 4;
            /* the hybrids' second layer attends */
            if (cfg[k].model.n_attn_layers) cfg[k].model.n_attn_layers = 1;
            cfg[k].model.attn_layers[0] = 1;
            cfg[k].model.dropout = 0.1f;
            cfg[k].accum = 2;
            cfg[k].overlap = bucket_mb[k] > 0;
            if (bucket_mb[k] > 0) cfg[k].bucket_mb = bucket_mb[k];
            run_ranks(&cfg[k], 2, 0);
            if (k > 0) assert_true(last_group.reduces_off_main[0] > 6);
        }
        double l0[8], l[8];
        assert_int_equal(read_losses(&cfg[0], l0, 8, NULL, 0), 6);
        for (int k = 1; k < 3; k++) {
            assert_int_equal(read_losses(&cfg[k], l, 8, NULL, 0), 6);
            for (int i = 0; i < 6; i++)
                if (memcmp(&l0[i], &l[i], sizeof l[i]) != 0)
                    fail_msg("%s: step %d: overlapped %.17g, naive %.17g", cfg[k].name, i + 1, l[i],
                             l0[i]);
            assert_same_weights(&cfg[0], &cfg[k]);
        }
    }
}

/* grad_dtype = "bf16": gradients travel rounded to bf16 and are added in fp32 in rank order;
 * the run trains as fp32 does (1e-2 relative over 20 steps), really differs from it, and two
 * runs, overlapped or not, give the same bits. */
static void test_bf16_gradients_train_and_reproduce(void **state)
{
    reference_runs();
    mt_train_config a, b, naive;
    tiny_config(&a, "bf16", 600, 20);
    snprintf(a.grad_dtype, sizeof a.grad_dtype, "bf16");
    b = a;
    snprintf(b.name, sizeof b.name, "bf16-again");
    snprintf(b.run_dir, sizeof b.run_dir, "%s/bf16-again", tmpdir);
    naive = a;
    naive.overlap = 0;
    snprintf(naive.name, sizeof naive.name, "bf16-naive");
    snprintf(naive.run_dir, sizeof naive.run_dir, "%s/bf16-naive", tmpdir);
    run_ranks(&a, 2, 0);
    run_ranks(&b, 2, 0);
    run_ranks(&naive, 2, 0);
    double la[32], lb[32], ln[32];
    assert_int_equal(read_losses(&a, la, 32, NULL, 0), 20);
    assert_int_equal(read_losses(&b, lb, 32, NULL, 0), 20);
    assert_int_equal(read_losses(&naive, ln, 32, NULL, 0), 20);
    assert_close(la, ref_two, 20, 1e-2, "bf16 vs fp32 gradients, 2 ranks");
    assert_memory_equal(la, lb, sizeof la[0] * 20);
    assert_memory_equal(la, ln, sizeof la[0] * 20);
    assert_same_weights(&a, &naive);
    assert_true(memcmp(la, ref_two, sizeof la[0] * 20) != 0);
}

/* The bf16 all-reduce any collective runs (all_gather, then the sum here) rounds to nearest
 * even and adds the widened parts in rank order. */
static void test_bf16_sum_rounds_and_adds_in_rank_order(void **state)
{
    /* 1 + 2^-8 is a tie between bf16's 1 and 1 + 2^-7: even gives 1 */
    uint16_t parts[3] = {0x3F80, 0x3F81, 0xBF80}; /* 1, 1 + 2^-7, -1 */
    float out;
    mt_collective_sum_ranks_bf16(&out, parts, 3, 1);
    assert_true(out == 1.0f + 0x1p-7f);
    float x = 1.0f + 0x1p-8f;
    assert_int_equal(mt_collective_all_reduce_bf16(mt_collective_single(), &x, 1), 0);
    assert_true(x == 1.0f);
    x = 1.0f + 0x1p-8f + 0x1p-20f; /* above the tie: up */
    assert_int_equal(mt_collective_all_reduce_bf16(mt_collective_single(), &x, 1), 0);
    assert_true(x == 1.0f + 0x1p-7f);
}

static void test_grad_keys_are_checked(void **state)
{
    mt_train_config cfg;
    tiny_config(&cfg, "bad-dtype", 600, 2);
    snprintf(cfg.grad_dtype, sizeof cfg.grad_dtype, "fp16");
    assert_int_not_equal(mt_train_config_check(&cfg), 0);
    assert_non_null(strstr(mt_last_error(), "grad_dtype = \"fp16\": it must be"));
    snprintf(cfg.grad_dtype, sizeof cfg.grad_dtype, "bf16");
    cfg.bucket_mb = 0;
    assert_int_not_equal(mt_train_config_check(&cfg), 0);
    assert_non_null(strstr(mt_last_error(), "bucket_mb must be in"));
}

/* A step of accum micro-batches where accum does not divide the epoch's batches takes the last
 * batches of one epoch and the first of the next, each from its own epoch's plan. With the
 * weights held still (lr 1e-30), such a step's loss is the mean of the losses of the same
 * batches trained one a step and logged accum at a time. */
static void epoch_straddling_step(int ranks)
{
    char name[64];
    enum { PROBE_STEPS = 24 };
    mt_train_config probe, one, acc;
    snprintf(name, sizeof name, "epochs-probe-%d", ranks);
    tiny_config(&probe, name, 1200 / (size_t)ranks, PROBE_STEPS); /* the same plan */
    probe.model.dropout = 0;
    probe.lr = 1e-30;
    run_ranks(&probe, ranks, 0);
    /* B: batches of an epoch, the steps logged in epoch 0 (a step logs its last batch's) */
    int epoch[64], B = 0;
    assert_int_equal(read_epochs(&probe, epoch, 64), PROBE_STEPS);
    while (B < PROBE_STEPS && epoch[B] == 0) B++;
    if (B < 1 || B > PROBE_STEPS / 2 - 1)
        fail_msg("%s: %d batches an epoch: the test needs 1..%d", name, B, PROBE_STEPS / 2 - 1);
    int a = 2;
    while (B % a == 0) a++;
    int steps = B / a + 2; /* past the end of epoch 0, within a step */

    one = probe;
    snprintf(one.name, sizeof one.name, "epochs-one-%d", ranks);
    snprintf(one.run_dir, sizeof one.run_dir, "%s/%s", tmpdir, one.name);
    one.max_steps = (long)a * steps;
    one.log_every = a;
    acc = probe;
    snprintf(acc.name, sizeof acc.name, "epochs-accum-%d", ranks);
    snprintf(acc.run_dir, sizeof acc.run_dir, "%s/%s", tmpdir, acc.name);
    acc.max_steps = steps;
    acc.accum = a;
    run_ranks(&one, ranks, 0);
    run_ranks(&acc, ranks, 0);
    double l1[64], la[64];
    int e1[64], ea[64];
    assert_int_equal(read_losses(&one, l1, 64, NULL, 0), steps);
    assert_int_equal(read_losses(&acc, la, 64, NULL, 0), steps);
    assert_int_equal(read_epochs(&one, e1, 64), steps);
    assert_int_equal(read_epochs(&acc, ea, 64), steps);
    assert_memory_equal(e1, ea, sizeof e1[0] * (size_t)steps);
    assert_int_equal(ea[steps - 1], 1);
    char what[160];
    snprintf(what, sizeof what,
             "%d ranks, %d batches an epoch: accum %d vs %d steps logged together", ranks, B, a, a);
    assert_close(la, l1, steps, 1e-12, what);
}

static void test_step_straddling_epochs_one_rank(void **state) { epoch_straddling_step(1); }

static void test_step_straddling_epochs_two_ranks(void **state) { epoch_straddling_step(2); }

/* Stopped after 8 steps on one number of ranks, resumed on another: the losses of steps 9..20
 * are those of the run that never stopped. */
static void resumed_across(int first, int then, const char *name)
{
    reference_runs();
    mt_train_config cut;
    tiny_config(&cut, name, 600, 8);
    run_ranks(&cut, first, 0);
    cut.max_steps = 20;
    run_ranks(&cut, then, 1);
    double lc[32];
    assert_int_equal(read_losses(&cut, lc, 32, NULL, 0), 20);
    assert_close(lc, first == 2 ? ref_two : ref_half, 20, 1e-5, name);
}

static void test_resume_from_two_ranks_on_one(void **state) { resumed_across(2, 1, "two-to-one"); }

/* A run begun on one rank keeps one shard per batch: the second rank waits and the losses stay. */
static void test_resume_from_one_rank_on_two(void **state) { resumed_across(1, 2, "one-to-two"); }

static void test_sum_ranks_adds_in_rank_order(void **state)
{
    /* 1e8 + 1 - 1e8: in rank order (1e8 + 1) rounds to 1e8, so the sum is 0, not 1 */
    float parts[3] = {1e8f, 1.0f, -1e8f}, out;
    mt_collective_sum_ranks(&out, parts, 3, 1);
    assert_true(out == 0.0f);
    float p2[3] = {1.0f, 1e8f, -1e8f};
    mt_collective_sum_ranks(&out, p2, 3, 1);
    assert_true(out == 0.0f);
    float p3[3] = {1e8f, -1e8f, 1.0f};
    mt_collective_sum_ranks(&out, p3, 3, 1);
    assert_true(out == 1.0f);
}

static void test_launched_reads_the_launchers_environment(void **state)
{
    static const char *const vars[] = {
        "OMPI_COMM_WORLD_SIZE", "PMIX_SIZE",     "PMI_SIZE",
        "SLURM_PROCID",         "SLURM_STEP_ID", "SLURM_STEP_NUM_TASKS"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) unsetenv(vars[i]);
    int n = 0;
    assert_int_equal(mt_collective_launched(&n), 0);
    assert_int_equal(n, 1);
    setenv("OMPI_COMM_WORLD_SIZE", "1", 1);
    assert_int_equal(mt_collective_launched(&n), 0);
    setenv("OMPI_COMM_WORLD_SIZE", "3", 1);
    assert_int_equal(mt_collective_launched(&n), 1);
    assert_int_equal(n, 3);
    unsetenv("OMPI_COMM_WORLD_SIZE");
    /* an sbatch script's shell has SLURM_PROCID but no step: not a rank */
    setenv("SLURM_PROCID", "0", 1);
    setenv("SLURM_STEP_NUM_TASKS", "2", 1);
    assert_int_equal(mt_collective_launched(&n), 0);
    setenv("SLURM_STEP_ID", "0", 1);
    assert_int_equal(mt_collective_launched(&n), 1);
    assert_int_equal(n, 2);
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) unsetenv(vars[i]);
}

static void test_checkpoint_shards_out_of_range_named(void **state)
{
    mt_train_config cfg;
    tiny_config(&cfg, "bad-shards", 600, 2);
    run_ranks(&cfg, 1, 0);
    char path[700];
    snprintf(path, sizeof path, "%s/checkpoint/trainer.json", cfg.run_dir);
    char *text = test_read_file(path, NULL);
    char *at = strstr(text, "\"shards\": 1");
    assert_non_null(at);
    FILE *f = fopen(path, "w");
    fprintf(f, "%.*s\"shards\": 0%s", (int)(at - text), text, at + strlen("\"shards\": 1"));
    fclose(f);
    free(text);
    cfg.max_steps = 4;
    assert_int_not_equal(mt_train_run(&cfg, 1, NULL), 0);
    assert_non_null(strstr(mt_last_error(), "trainer.json: shards = 0: it must be in 1..4096"));
}

static int setup(void **state)
{
    if (test_make_tmpdir(tmpdir, sizeof tmpdir, "ranks") != 0) return -1;
    if (test_train_fixture_tokenizer(tmpdir, 256, 1) != 0) {
        fprintf(stderr, "tokenizer: %s\n", mt_last_error());
        return -1;
    }
    return 0;
}

static int teardown(void **state) { return test_remove_tree(tmpdir); }

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sum_ranks_adds_in_rank_order),
        cmocka_unit_test(test_launched_reads_the_launchers_environment),
        cmocka_unit_test(test_two_ranks_equal_one_process_with_twice_the_batch),
        cmocka_unit_test(test_resume_from_two_ranks_on_one),
        cmocka_unit_test(test_resume_from_one_rank_on_two),
        cmocka_unit_test(test_checkpoint_shards_out_of_range_named),
        cmocka_unit_test(test_step_straddling_epochs_one_rank),
        cmocka_unit_test(test_step_straddling_epochs_two_ranks),
        cmocka_unit_test(test_overlapped_reduce_equals_naive),
        cmocka_unit_test(test_overlap_equals_naive_across_architectures),
        cmocka_unit_test(test_queued_sums_equal_thread_and_naive),
        cmocka_unit_test(test_bf16_gradients_train_and_reproduce),
        cmocka_unit_test(test_bf16_sum_rounds_and_adds_in_rank_order),
        cmocka_unit_test(test_grad_keys_are_checked),
    };
    return cmocka_run_group_tests_name("train_ranks", tests, setup, teardown);
}
