/* The NCCL collectives (kernels/collective_nccl.cu) on one GPU: the lent GPU machines have one,
 * so this is rank 0 of 1 — the communicator set up from an id "broadcast" over the
 * single-process collective, the padded slices sent to and received from itself, added, and
 * gathered back: the vector must come back bit for bit, whatever its length; and the same sum
 * queued bucket by bucket on NCCL's stream while backward runs (the gradient buckets of
 * docs/distributed.md §3.1) gives the bits of the sum after backward. Skips without a CUDA
 * device (cuda_check.h); without NCCL in the toolkit the collective is refused by name. */
#include "test_util.h"
#include "cuda_check.h"
#include "model_parity.h"

#include "mtlab/collective.h"
#include "mtlab/error.h"
#include "mtlab/model.h"
#include "train/train_internal.h"

static void test_one_rank_gives_the_vector_back(void **state)
{
    const mt_backend *be = cuda_or_skip(0);
    if (!be) return;
    mt_collective *c = mt_collective_nccl(mt_collective_single(), 0);
    if (!c) fail_msg("%s", mt_last_error());
    assert_int_equal(c->size, 1);
    assert_int_equal(c->device_memory, 1);
    assert_string_equal(c->name, "nccl");
    static const size_t lengths[] = {1, 3, 1000, 1 << 20};
    for (size_t k = 0; k < sizeof lengths / sizeof lengths[0]; k++) {
        size_t n = lengths[k];
        float *host = malloc(n * sizeof *host), *back = malloc(n * sizeof *back);
        for (size_t i = 0; i < n; i++) host[i] = (float)i * 0.37f - 11.0f;
        float *dev = be->alloc(n * sizeof *dev);
        assert_non_null(dev);
        be->upload(dev, host, n * sizeof *dev);
        assert_int_equal(c->all_reduce_sum(c, dev, n), 0);
        be->download(back, dev, n * sizeof *back);
        assert_memory_equal(back, host, n * sizeof *back);
        be->free(dev);
        free(host);
        free(back);
    }
    int mine = 7, all = 0;
    assert_int_equal(c->all_gather(c, &mine, &all, sizeof mine), 0);
    assert_int_equal(all, 7);
    c->close(c);
}

enum { ROW = 128 }; /* tokens of the one-row batch */

/* A decoder-only model whose backward keeps the GPU busy for a while (8 layers of 256), so a
 * sum that ran before its bucket's kernels, or an optimiser step before the sums, would see
 * other numbers; its gradient block allocated. */
static mt_model *busy_model(const mt_backend *be)
{
    mt_model_config c;
    tiny_model_config(&c, "gpt-neox", 0.0f);
    c.vocab_size = 256;
    c.d_model = 256;
    c.n_heads = 4;
    c.n_layers = 8;
    c.ffn_dim = 1024;
    mt_model *m = mt_model_create(&c, be, 7);
    if (!m) fail_msg("gpt-neox on cuda: %s", mt_last_error());
    return m;
}

/* One row `prompt <sep> target </s>` of distinct ids: the embedding gradient's atomic adds then
 * meet no repeated id, so backward gives the same bits every time. */
static mt_batch one_row(const mt_model *m, int32_t *ids)
{
    const mt_model_config *c = mt_model_get_config(m);
    int32_t next = 5; /* ids below are specials */
    for (int j = 0; j < ROW; j++) {
        ids[j] = j == ROW / 2 ? c->sep_id : j == ROW - 1 ? c->eos_id : next++;
        assert_true(ids[j] < c->vocab_size);
    }
    return (mt_batch){.B = 1, .T = ROW, .ids = ids};
}

/* One backward of m, its gradient block handed to buckets as it goes when b is given. */
static void backward(mt_model *m, const mt_batch *batch, grad_buckets *b)
{
    mt_step_opts opts = {.train = 1, .seed = 3, .step = 1};
    opts.grads_ready = b ? grad_buckets_ready : NULL;
    opts.grads_ready_ud = b;
    mt_model_zero_grad(m);
    double loss;
    if (mt_model_forward_backward(m, batch, &opts, 1.0f, &loss, NULL) != 0)
        fail_msg("backward on cuda: %s", mt_last_error());
}

static float *download_grads(mt_model *m)
{
    size_t n = mt_model_param_block_size(m);
    float *h = malloc(n * sizeof *h);
    mt_model_backend(m)->download(h, mt_model_grads(m), n * sizeof *h);
    return h;
}

/* The buckets' sums queued on NCCL's stream as backward queues their layers, waited for by the
 * compute stream, give the bits of the blocking sum after backward, which are the CPU's
 * rank-order sum of the gradients; work the compute stream queues after grad_buckets_finish
 * runs after every sum (a sum still running would write its bucket back over the zeros). */
static void test_queued_buckets_equal_the_sum_after_backward(void **state)
{
    const mt_backend *be = cuda_or_skip(0);
    if (!be) return;
    mt_collective *c = mt_collective_nccl(mt_collective_single(), 0);
    if (!c) fail_msg("%s", mt_last_error());
    assert_non_null(c->all_reduce_sum_async);
    assert_non_null(c->all_reduce_wait);
    mt_model *m = busy_model(be);
    int32_t ids[ROW];
    mt_batch batch = one_row(m, ids);
    size_t n = mt_model_param_block_size(m);
    backward(m, &batch, NULL); /* allocates the gradient block */

    /* after backward: the gradients, and their sum by the blocking call */
    backward(m, &batch, NULL);
    float *plain = download_grads(m);
    assert_int_equal(c->all_reduce_sum(c, mt_model_grads(m), n), 0);
    float *after = download_grads(m);
    backward(m, &batch, NULL);
    float *again = download_grads(m);
    if (memcmp(plain, again, n * sizeof *plain) != 0)
        fail_msg("two backward passes on cuda differ: nothing to compare bit for bit");
    float *cpu = malloc(n * sizeof *cpu);
    mt_collective_sum_ranks(cpu, plain, c->size, n);
    assert_memory_equal(after, cpu, n * sizeof *cpu);

    static const double bucket_mb[] = {4, 1e-3}; /* a few layers a bucket; every unit alone */
    for (size_t k = 0; k < sizeof bucket_mb / sizeof bucket_mb[0]; k++) {
        grad_buckets *b = grad_buckets_open(c, m, bucket_mb[k], 0);
        if (!b) fail_msg("%s", mt_last_error());
        print_message("bucket_mb %g: %d buckets\n", bucket_mb[k], grad_buckets_count(b));
        assert_true(grad_buckets_count(b) > 2);
        backward(m, &batch, b);
        assert_int_equal(grad_buckets_finish(b, NULL, NULL), 0);
        float *queued = download_grads(m);
        if (memcmp(queued, after, n * sizeof *after) != 0) {
            size_t i = 0;
            while (!memcmp(&queued[i], &after[i], sizeof *after)) i++;
            fail_msg("bucket_mb %g: float %zu of %zu: queued %.9g, after backward %.9g",
                     bucket_mb[k], i, n, queued[i], after[i]);
        }
        free(queued);

        backward(m, &batch, b);
        assert_int_equal(grad_buckets_finish(b, NULL, NULL), 0);
        be->memzero(mt_model_grads(m), n * sizeof(float));
        float *zeroed = download_grads(m);
        for (size_t i = 0; i < n; i++)
            if (zeroed[i] != 0.0f)
                fail_msg("bucket_mb %g: float %zu is %g after the block was zeroed behind the "
                         "sums",
                         bucket_mb[k], i, zeroed[i]);
        free(zeroed);
        grad_buckets_close(b);
    }
    free(plain);
    free(after);
    free(again);
    free(cpu);
    mt_model_free(m);
    c->close(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_rank_gives_the_vector_back),
        cmocka_unit_test(test_queued_buckets_equal_the_sum_after_backward),
    };
    return cmocka_run_group_tests_name("collective_nccl", tests, NULL, NULL);
}
