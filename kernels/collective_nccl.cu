/* The collectives on CUDA devices over NCCL (mtlab/collective.h): gradients stay in device
 * memory. The NCCL communicator's unique id goes from rank 0 to the others over the host
 * collective (MPI), as llm.c does; the small host operations (gather, broadcast, barrier) stay
 * the host collective's.
 *
 * all_reduce_sum adds in rank order, as the MPI one does (ncclAllReduce promises no order): the
 * vector, padded to N slices, goes slice r to rank r (grouped ncclSend/ncclRecv), each rank adds
 * its N received slices in rank order, and ncclAllGather brings the sums to everyone. All of it
 * is queued on the collective's own stream (queue_sum): all_reduce_sum waits for the device
 * and then for that stream; all_reduce_sum_async, the gradient buckets' overlap with backward
 * (docs/distributed.md §3.1), makes that stream wait on an event of the calling thread's
 * compute stream instead and returns, and all_reduce_wait makes the compute stream wait on an
 * event of the collective's stream. Built only when the toolkit has nccl.h; otherwise
 * mt_cuda_collective_nccl says so. libnccl.so.2 is opened on the first call (dlopen), as
 * libmtlab-cuda.so itself is, so the CUDA backend loads and works on machines without it. */
#include "cuda_api.h"
#include "cuda_ops.h"
#include "mtlab/collective.h"

#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

extern "C" {
#include "mtlab/error.h"
}

#if __has_include(<nccl.h>)
#include <dlfcn.h>
#include <nccl.h>

/* NCCL's functions, from libnccl.so.2 */
static struct {
    ncclResult_t (*GetUniqueId)(ncclUniqueId *);
    ncclResult_t (*CommInitRank)(ncclComm_t *, int, ncclUniqueId, int);
    ncclResult_t (*CommDestroy)(ncclComm_t);
    ncclResult_t (*GroupStart)(void);
    ncclResult_t (*GroupEnd)(void);
    ncclResult_t (*Send)(const void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
    ncclResult_t (*Recv)(void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
    ncclResult_t (*AllGather)(const void *, void *, size_t, ncclDataType_t, ncclComm_t,
                              cudaStream_t);
    const char *(*GetErrorString)(ncclResult_t);
} nccl;

/* 0, or -1 with why */
static int nccl_load(char *why, size_t why_len)
{
    if (nccl.AllGather) return 0;
    void *h = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(why, why_len, "libnccl.so.2 did not load: %s", dlerror());
        return -1;
    }
    static const char *const names[] = {
        "ncclGetUniqueId", "ncclCommInitRank", "ncclCommDestroy",
        "ncclGroupStart",  "ncclGroupEnd",     "ncclSend",
        "ncclRecv",        "ncclAllGather",    "ncclGetErrorString"};
    void **slots[] = {
        (void **)&nccl.GetUniqueId, (void **)&nccl.CommInitRank, (void **)&nccl.CommDestroy,
        (void **)&nccl.GroupStart,  (void **)&nccl.GroupEnd,     (void **)&nccl.Send,
        (void **)&nccl.Recv,        (void **)&nccl.AllGather,    (void **)&nccl.GetErrorString};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        *slots[i] = dlsym(h, names[i]);
        if (!*slots[i]) {
            snprintf(why, why_len, "libnccl.so.2 lacks %s", names[i]);
            nccl.AllGather = NULL;
            return -1;
        }
    }
    return 0;
}

typedef struct {
    mt_collective *host; /* MPI (or single): the id's broadcast and the host operations */
    ncclComm_t comm;
    cudaStream_t stream; /* where every sum is queued, in the order asked */
    cudaEvent_t queued; /* recorded on the compute stream: what a queued sum waits for */
    cudaEvent_t summed; /* recorded on stream: what the compute stream waits for */
    float *send, *recv; /* (size, slice) device buffers */
    size_t cap; /* floats each holds */
} nccl_state;

static int cuda_fail(cudaError_t e, const char *what)
{
    return mt_error("NCCL collective: %s: %s", what, cudaGetErrorString(e));
}

static int nccl_fail(ncclResult_t r, const char *what)
{
    return mt_error("NCCL collective: %s: %s", what, nccl.GetErrorString(r));
}

/* out (slice) = parts[0] + parts[1] + ... + parts[size - 1] (each slice floats apart), in order */
__global__ void sum_in_rank_order(float *out, const float *parts, int size, size_t slice)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= slice) return;
    float acc = parts[i];
    for (int r = 1; r < size; r++) acc += parts[(size_t)r * slice + i];
    out[i] = acc;
}

/* Queue on the collective's stream the rank-order sum of x (n, device): what is queued there
 * before runs first. One code path for the whole block after backward and for one bucket. */
static int queue_sum(mt_collective *c, float *x, size_t n)
{
    nccl_state *s = (nccl_state *)c->impl;
    int size = c->size;
    size_t slice = (n + (size_t)size - 1) / (size_t)size;
    if (slice == 0) return 0;
    cudaError_t e;
    if ((size_t)size * slice > s->cap) {
        /* sums queued before may still read the buffers */
        if ((e = cudaStreamSynchronize(s->stream)) != cudaSuccess)
            return cuda_fail(e, "waiting for the queued sums");
        cudaFree(s->send);
        cudaFree(s->recv);
        s->send = s->recv = NULL;
        s->cap = 0;
        size_t cap = (size_t)size * slice;
        if ((e = cudaMalloc(&s->send, cap * sizeof(float))) != cudaSuccess ||
            (e = cudaMalloc(&s->recv, cap * sizeof(float))) != cudaSuccess) {
            cudaFree(s->send);
            s->send = NULL;
            return cuda_fail(e, "cudaMalloc (slices)");
        }
        s->cap = cap;
    }
    cudaMemcpyAsync(s->send, x, n * sizeof(float), cudaMemcpyDeviceToDevice, s->stream);
    cudaMemsetAsync(s->send + n, 0, ((size_t)size * slice - n) * sizeof(float), s->stream);
    ncclResult_t rc = nccl.GroupStart();
    for (int r = 0; r < size && rc == ncclSuccess; r++) {
        rc = nccl.Send(s->send + (size_t)r * slice, slice, ncclFloat, r, s->comm, s->stream);
        if (rc == ncclSuccess)
            rc = nccl.Recv(s->recv + (size_t)r * slice, slice, ncclFloat, r, s->comm, s->stream);
    }
    ncclResult_t end = nccl.GroupEnd();
    if (rc != ncclSuccess || end != ncclSuccess)
        return nccl_fail(rc != ncclSuccess ? rc : end, "grouped ncclSend/ncclRecv (slices)");
    float *mine = s->send + (size_t)c->rank * slice;
    unsigned blocks = (unsigned)((slice + 255) / 256);
    sum_in_rank_order<<<blocks, 256, 0, s->stream>>>(mine, s->recv, size, slice);
    if ((rc = nccl.AllGather(mine, s->send, slice, ncclFloat, s->comm, s->stream)) != ncclSuccess)
        return nccl_fail(rc, "ncclAllGather (summed slices)");
    cudaMemcpyAsync(x, s->send, n * sizeof(float), cudaMemcpyDeviceToDevice, s->stream);
    if ((e = cudaGetLastError()) != cudaSuccess) return cuda_fail(e, "queueing the sum");
    return 0;
}

static int nccl_all_reduce_sum(mt_collective *c, float *x, size_t n)
{
    nccl_state *s = (nccl_state *)c->impl;
    cudaError_t e;
    /* the backend's kernels that wrote x ran on its own stream */
    if ((e = cudaDeviceSynchronize()) != cudaSuccess) return cuda_fail(e, "cudaDeviceSynchronize");
    if (queue_sum(c, x, n) != 0) return -1;
    if ((e = cudaStreamSynchronize(s->stream)) != cudaSuccess) return cuda_fail(e, "the sum");
    return 0;
}

/* Behind the kernels the calling thread's backend has queued so far (backward's, up to the
 * bucket's last unit): the collective's stream waits on an event of the compute stream. */
static int nccl_all_reduce_sum_async(mt_collective *c, float *x, size_t n)
{
    nccl_state *s = (nccl_state *)c->impl;
    cudaStream_t compute = cu_stream();
    if (!compute)
        return mt_error("NCCL collective: this thread runs no CUDA backend to queue the sum "
                        "behind");
    cudaError_t e;
    if ((e = cudaEventRecord(s->queued, compute)) != cudaSuccess ||
        (e = cudaStreamWaitEvent(s->stream, s->queued, 0)) != cudaSuccess)
        return cuda_fail(e, "waiting on the compute stream");
    return queue_sum(c, x, n);
}

/* The compute stream's next kernels (the optimiser step) wait for every sum queued. */
static int nccl_all_reduce_wait(mt_collective *c)
{
    nccl_state *s = (nccl_state *)c->impl;
    cudaStream_t compute = cu_stream();
    if (!compute)
        return mt_error("NCCL collective: this thread runs no CUDA backend to wait for the sums");
    cudaError_t e;
    if ((e = cudaEventRecord(s->summed, s->stream)) != cudaSuccess ||
        (e = cudaStreamWaitEvent(compute, s->summed, 0)) != cudaSuccess)
        return cuda_fail(e, "the compute stream waiting for the sums");
    return 0;
}

static int nccl_all_gather(mt_collective *c, const void *mine, void *all, size_t bytes)
{
    nccl_state *s = (nccl_state *)c->impl;
    return s->host->all_gather(s->host, mine, all, bytes);
}

static int nccl_broadcast(mt_collective *c, void *buf, size_t bytes, int root)
{
    nccl_state *s = (nccl_state *)c->impl;
    return s->host->broadcast(s->host, buf, bytes, root);
}

static int nccl_barrier(mt_collective *c)
{
    nccl_state *s = (nccl_state *)c->impl;
    return s->host->barrier(s->host);
}

static void nccl_close(mt_collective *c)
{
    nccl_state *s = (nccl_state *)c->impl;
    cudaStreamSynchronize(s->stream);
    nccl.CommDestroy(s->comm);
    cudaEventDestroy(s->queued);
    cudaEventDestroy(s->summed);
    cudaStreamDestroy(s->stream);
    cudaFree(s->send);
    cudaFree(s->recv);
    mt_collective *host = s->host;
    free(s);
    free(c);
    host->close(host);
}

extern "C" mt_collective *mt_cuda_collective_nccl(mt_collective *host, int index, char *why,
                                                  size_t why_len)
{
    /* every rank loads NCCL before the broadcast, so none waits for one that cannot */
    if (nccl_load(why, why_len) != 0) return NULL;
    ncclUniqueId id;
    if (host->rank == 0 && nccl.GetUniqueId(&id) != ncclSuccess) {
        snprintf(why, why_len, "ncclGetUniqueId failed");
        return NULL;
    }
    if (host->broadcast(host, &id, sizeof id, 0) != 0) {
        snprintf(why, why_len, "the NCCL id could not be sent over %s", host->name);
        return NULL;
    }
    cudaError_t ce = cudaSetDevice(index);
    if (ce != cudaSuccess) {
        snprintf(why, why_len, "cuda:%d: %s", index, cudaGetErrorString(ce));
        return NULL;
    }
    nccl_state *s = (nccl_state *)calloc(1, sizeof *s);
    mt_collective *c = (mt_collective *)calloc(1, sizeof *c);
    ncclResult_t rc = nccl.CommInitRank(&s->comm, host->size, id, host->rank);
    if (rc != ncclSuccess) {
        snprintf(why, why_len, "ncclCommInitRank (rank %d of %d on cuda:%d): %s", host->rank,
                 host->size, index, nccl.GetErrorString(rc));
        free(s);
        free(c);
        return NULL;
    }
    if ((ce = cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking)) != cudaSuccess ||
        (ce = cudaEventCreateWithFlags(&s->queued, cudaEventDisableTiming)) != cudaSuccess ||
        (ce = cudaEventCreateWithFlags(&s->summed, cudaEventDisableTiming)) != cudaSuccess) {
        snprintf(why, why_len, "cuda:%d: the collective's stream and events: %s", index,
                 cudaGetErrorString(ce));
        nccl.CommDestroy(s->comm);
        free(s);
        free(c);
        return NULL;
    }
    s->host = host;
    c->rank = host->rank;
    c->size = host->size;
    c->device_memory = 1;
    c->name = "nccl";
    c->all_reduce_sum = nccl_all_reduce_sum;
    c->all_reduce_sum_async = nccl_all_reduce_sum_async;
    c->all_reduce_wait = nccl_all_reduce_wait;
    c->all_gather = nccl_all_gather;
    c->broadcast = nccl_broadcast;
    c->barrier = nccl_barrier;
    c->close = nccl_close;
    c->impl = s;
    return c;
}

#else

extern "C" mt_collective *mt_cuda_collective_nccl(mt_collective *host, int index, char *why,
                                                  size_t why_len)
{
    (void)host;
    (void)index;
    snprintf(why, why_len, "the CUDA backend was built without NCCL (no nccl.h in the toolkit)");
    return NULL;
}

#endif
