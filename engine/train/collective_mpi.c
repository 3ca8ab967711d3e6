/* The collectives over MPI (host memory). all_reduce_sum does not call MPI_Allreduce, whose
 * order of additions depends on the library and the message sizes: each rank owns one slice
 * of the vector, receives that slice from every rank (MPI_Alltoallv), adds the slices in rank
 * order (mt_collective_sum_ranks) and the summed slices go back to everyone (MPI_Allgatherv).
 * That moves what a ring all-reduce moves (2 (N-1)/N of the vector per rank) and gives the same
 * bits on every rank and in every run of the same N. */
#include "mtlab/collective.h"
#include "mtlab/error.h"
#include "math/half.h"

#if __has_include(<mpi.h>)
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

/* Elements per round: MPI counts are ints. */
#define MPI_ROUND ((size_t)1 << 26)

typedef struct {
    float *slices; /* (size, slice) received slices */
    size_t cap; /* floats slices holds */
    int *counts, *displs; /* (2 size): the round's slices, then what this rank receives */
    uint16_t *half; /* bf16: (round) the vector to send, then the summed round gathered */
    uint16_t *half_slices; /* bf16: (size, slice) received slices */
    size_t half_cap, half_slices_cap; /* elements they hold */
} mpi_state;

/* The round's slices: slice r is [displs[r], displs[r] + counts[r]) of len elements; this rank
 * receives its slice of every rank, one after another (counts + size, displs + size). Returns
 * the length of this rank's slice. */
static size_t cut_slices(mt_collective *c, mpi_state *s, size_t len)
{
    int size = c->size;
    for (int r = 0; r < size; r++) {
        size_t lo = len * (size_t)r / (size_t)size, hi = len * (size_t)(r + 1) / (size_t)size;
        s->counts[r] = (int)(hi - lo);
        s->displs[r] = (int)lo;
    }
    size_t mine = (size_t)s->counts[c->rank];
    for (int r = 0; r < size; r++) {
        s->counts[size + r] = (int)mine;
        s->displs[size + r] = (int)((size_t)r * mine);
    }
    return mine;
}

static int mpi_fail(int rc, const char *what)
{
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, text, &len);
    return mt_error("MPI: %s failed: %.*s", what, len, text);
}

#define MPI_CHECK(call, what)                               \
    do {                                                    \
        int rc_ = (call);                                   \
        if (rc_ != MPI_SUCCESS) return mpi_fail(rc_, what); \
    } while (0)

static int mpi_all_reduce_sum(mt_collective *c, float *x, size_t n)
{
    mpi_state *s = c->impl;
    int size = c->size;
    for (size_t at = 0; at < n; at += MPI_ROUND) {
        size_t len = n - at < MPI_ROUND ? n - at : MPI_ROUND;
        size_t mine = cut_slices(c, s, len);
        if ((size_t)size * mine > s->cap) {
            free(s->slices);
            s->cap = (size_t)size * mine;
            s->slices = mt_xmalloc(s->cap * sizeof *s->slices);
        }
        int *rcounts = s->counts + size, *rdispls = s->displs + size;
        float *v = x + at;
        MPI_CHECK(MPI_Alltoallv(v, s->counts, s->displs, MPI_FLOAT, s->slices, rcounts, rdispls,
                                MPI_FLOAT, MPI_COMM_WORLD),
                  "MPI_Alltoallv (gradient slices)");
        float *sum = v + s->displs[c->rank];
        mt_collective_sum_ranks(sum, s->slices, size, mine);
        MPI_CHECK(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_FLOAT, v, s->counts, s->displs, MPI_FLOAT,
                                 MPI_COMM_WORLD),
                  "MPI_Allgatherv (summed slices)");
    }
    return 0;
}

/* The same in bf16 (half the bytes each way): the slices travel rounded to bf16, the owner
 * adds them widened to fp32 in rank order and rounds the sum to bf16, which goes to everyone;
 * every rank widens the gathered sums (mt_collective_all_reduce_bf16's result, bit for bit). */
static int mpi_all_reduce_sum_bf16(mt_collective *c, float *x, size_t n)
{
    mpi_state *s = c->impl;
    int size = c->size;
    for (size_t at = 0; at < n; at += MPI_ROUND) {
        size_t len = n - at < MPI_ROUND ? n - at : MPI_ROUND;
        size_t mine = cut_slices(c, s, len);
        if (len > s->half_cap) {
            free(s->half);
            s->half_cap = len;
            s->half = mt_xmalloc(len * sizeof *s->half);
        }
        if ((size_t)size * mine > s->half_slices_cap) {
            free(s->half_slices);
            s->half_slices_cap = (size_t)size * mine;
            s->half_slices = mt_xmalloc(s->half_slices_cap * sizeof *s->half_slices);
        }
        if (mine > s->cap) {
            free(s->slices);
            s->cap = mine;
            s->slices = mt_xmalloc(s->cap * sizeof *s->slices);
        }
        float *v = x + at;
        for (size_t i = 0; i < len; i++) s->half[i] = mt_f32_to_bf16(v[i]);
        MPI_CHECK(MPI_Alltoallv(s->half, s->counts, s->displs, MPI_UINT16_T, s->half_slices,
                                s->counts + size, s->displs + size, MPI_UINT16_T, MPI_COMM_WORLD),
                  "MPI_Alltoallv (bf16 gradient slices)");
        mt_collective_sum_ranks_bf16(s->slices, s->half_slices, size, mine);
        uint16_t *sum = s->half + s->displs[c->rank];
        for (size_t i = 0; i < mine; i++) sum[i] = mt_f32_to_bf16(s->slices[i]);
        MPI_CHECK(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_UINT16_T, s->half, s->counts, s->displs,
                                 MPI_UINT16_T, MPI_COMM_WORLD),
                  "MPI_Allgatherv (bf16 summed slices)");
        for (size_t i = 0; i < len; i++) v[i] = mt_bf16_to_f32(s->half[i]);
    }
    return 0;
}

static int mpi_all_gather(mt_collective *c, const void *mine, void *all, size_t bytes)
{
    MPI_CHECK(MPI_Allgather(mine, (int)bytes, MPI_BYTE, all, (int)bytes, MPI_BYTE, MPI_COMM_WORLD),
              "MPI_Allgather");
    return 0;
}

static int mpi_broadcast(mt_collective *c, void *buf, size_t bytes, int root)
{
    MPI_CHECK(MPI_Bcast(buf, (int)bytes, MPI_BYTE, root, MPI_COMM_WORLD), "MPI_Bcast");
    return 0;
}

static int mpi_barrier(mt_collective *c)
{
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
    return 0;
}

static void mpi_close(mt_collective *c)
{
    mpi_state *s = c->impl;
    free(s->slices);
    free(s->half);
    free(s->half_slices);
    free(s->counts);
    free(s->displs);
    free(s);
    free(c);
    MPI_Finalize();
}

mt_collective *mt_collective_mpi(void)
{
    int inited = 0, threads = MPI_THREAD_SINGLE;
    MPI_Initialized(&inited);
    /* serialized: the trainer's all-reduce thread calls MPI while the main thread does not */
    if (inited) MPI_Query_thread(&threads);
    else if (MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &threads) != MPI_SUCCESS) {
        mt_error("MPI: MPI_Init_thread failed");
        return NULL;
    }
    /* errors come back as codes with a message, not as an abort inside the library */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    mt_collective *c = mt_xcalloc(1, sizeof *c);
    mpi_state *s = mt_xcalloc(1, sizeof *s);
    MPI_Comm_rank(MPI_COMM_WORLD, &c->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &c->size);
    s->counts = mt_xcalloc(2 * (size_t)c->size, sizeof *s->counts);
    s->displs = mt_xcalloc(2 * (size_t)c->size, sizeof *s->displs);
    c->impl = s;
    c->name = "mpi";
    c->any_thread = threads >= MPI_THREAD_SERIALIZED;
    c->all_reduce_sum = mpi_all_reduce_sum;
    c->all_reduce_sum_bf16 = mpi_all_reduce_sum_bf16;
    c->all_gather = mpi_all_gather;
    c->broadcast = mpi_broadcast;
    c->barrier = mpi_barrier;
    c->close = mpi_close;
    return c;
}

#else

mt_collective *mt_collective_mpi(void)
{
    mt_error("this mtlab was built without MPI (install libopenmpi-dev and rebuild)");
    return NULL;
}

#endif
