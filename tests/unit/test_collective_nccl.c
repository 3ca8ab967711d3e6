/* The NCCL collectives (kernels/collective_nccl.cu) on one GPU: the lent GPU machines have one,
 * so this is rank 0 of 1 — the communicator set up from an id "broadcast" over the
 * single-process collective, the padded slices sent to and received from itself, added, and
 * gathered back: the vector must come back bit for bit, whatever its length. Skips without a
 * CUDA device (cuda_check.h); without NCCL in the toolkit the collective is refused by name. */
#include "test_util.h"
#include "cuda_check.h"

#include "mtlab/collective.h"
#include "mtlab/error.h"

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_rank_gives_the_vector_back),
    };
    return cmocka_run_group_tests_name("collective_nccl", tests, NULL, NULL);
}
