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
} thread_group;

static int threads_all_reduce_sum(mt_collective *c, float *x, size_t n)
{
    thread_group *g = c->impl;
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

static void *rank_main(void *arg)
{
    rank_thread *t = arg;
    /* ranks share the cores as processes would: OpenMP teams of each spinning would starve
     * the other rank */
    if (t->coll.size > 1) omp_set_num_threads(1);
    mt_train_hooks hooks = {.collective = &t->coll};
    t->rc = mt_train_run(t->cfg, t->resume, &hooks);
    if (t->rc != 0) snprintf(t->error, sizeof t->error, "%s", mt_last_error());
    return NULL;
}

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
                                    .name = "threads",
                                    .impl = &g,
                                    .all_reduce_sum = threads_all_reduce_sum,
                                    .all_gather = threads_all_gather,
                                    .broadcast = threads_broadcast,
                                    .barrier = threads_barrier,
                                    .close = threads_close};
        assert_int_equal(pthread_create(&th[r], NULL, rank_main, &t[r]), 0);
    }
    for (int r = 0; r < ranks; r++) pthread_join(th[r], NULL);
    pthread_barrier_destroy(&g.barrier);
    free(g.sum);
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
    };
    return cmocka_run_group_tests_name("train_ranks", tests, setup, teardown);
}
