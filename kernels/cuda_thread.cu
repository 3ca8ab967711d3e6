// What every kernel file shares: the calling thread's binding to a device (its own stream,
// memory pool and cuBLAS handles), error recording for operations that cannot return errors,
// device memory, and the reductions that return host results. Below the kernel files and the
// backend table (cuda_backend.cu); it uses neither.
//
// Why per thread: the backend contract is a table of plain function pointers with no context
// argument, and each loaded model is driven by one thread (a TUI worker, the trainer, a CLI
// command). Binding the stream and pool to the thread gives every model its own queue and
// allocator, so several models on one GPU decode concurrently without serialising on one stream.
#include "cuda_api.h"
#include "cuda_ops.h"
#include "cuda_rows.cuh"

#include <cublasLt.h>
#include <cublas_v2.h>
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "mtlab/error.h"
}

typedef struct {
    int bound; // 1 once cu_bind_thread has set this thread up
    int device;
    int bf16; // matrix products with bf16 inputs
    cudaStream_t stream;
    cudaMemPool_t pool;
    cublasHandle_t blas;
    cublasLtHandle_t lt;
    unsigned *tickets; // CU_TICKETS counters, zero between launches (cu_tickets)
    float *partials; // a split k's partial sums (cu_partials), partials_floats of them
    size_t partials_floats;
    char error[512]; // the first failure an operation recorded, "" when none
} cu_thread;

static thread_local cu_thread ctx;

cudaStream_t cu_stream(void) { return ctx.stream; }
int cu_gemm_bf16(void) { return ctx.bf16; }
cublasHandle_t cu_blas(void) { return ctx.blas; }
unsigned *cu_tickets(void) { return ctx.tickets; }
float *cu_partials(size_t floats) { return floats <= ctx.partials_floats ? ctx.partials : NULL; }

int cu_env_is(const char *name, const char *value)
{
    const char *v = getenv(name);
    return v && !strcmp(v, value);
}

void cu_check(cudaError_t e, const char *what)
{
    if (e == cudaSuccess || ctx.error[0]) return;
    snprintf(ctx.error, sizeof ctx.error, "cuda:%d: %s: %s", ctx.device, what,
             cudaGetErrorString(e));
}

void cu_check_blas(cublasStatus_t s, const char *what)
{
    if (s == CUBLAS_STATUS_SUCCESS || ctx.error[0]) return;
    snprintf(ctx.error, sizeof ctx.error, "cuda:%d: %s: %s", ctx.device, what,
             cublasGetStatusString(s));
}

// Move a recorded operation failure into mt_error (the caller's fallible call reports it).
// Returns -1 when there was one.
static int take_error(void)
{
    if (!ctx.error[0]) return 0;
    mt_error("%s", ctx.error);
    ctx.error[0] = '\0';
    return -1;
}

static void describe_bytes(char *out, size_t len, double bytes)
{
    if (bytes >= 1073741824.0) snprintf(out, len, "%.1f GiB", bytes / 1073741824.0);
    else snprintf(out, len, "%.1f MiB", bytes / 1048576.0);
}

// ---------------------------------------------------------------- binding a thread
int cu_bind_thread(int index, int max_devices, int bf16_gemm, char *why, size_t why_len)
{
    if (ctx.bound) {
        if (index != ctx.device) {
            snprintf(why, why_len, "this thread already runs on cuda:%d; one device per thread",
                     ctx.device);
            return -1;
        }
        ctx.bf16 = bf16_gemm != 0;
        return 1;
    }
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        snprintf(why, why_len, "no CUDA device: %s", cudaGetErrorString(e));
        cudaGetLastError();
        return -1;
    }
    if (index < 0 || index >= n || index >= max_devices) {
        snprintf(why, why_len, "no such device (this machine has %d CUDA device%s)", n,
                 n == 1 ? "" : "s");
        return -1;
    }
    const char *step = "cudaSetDevice";
    cublasStatus_t bs = CUBLAS_STATUS_SUCCESS;
    cudaMemPoolProps props;
    uint64_t keep = UINT64_MAX; // freed blocks stay in the pool for the next step's buffers
    if ((e = cudaSetDevice(index)) != cudaSuccess) goto fail;
    step = "cudaStreamCreateWithFlags";
    if ((e = cudaStreamCreateWithFlags(&ctx.stream, cudaStreamNonBlocking)) != cudaSuccess)
        goto fail;
    memset(&props, 0, sizeof props);
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = index;
    step = "cudaMemPoolCreate";
    if ((e = cudaMemPoolCreate(&ctx.pool, &props)) != cudaSuccess) goto fail;
    step = "cudaMemPoolSetAttribute";
    if ((e = cudaMemPoolSetAttribute(ctx.pool, cudaMemPoolAttrReleaseThreshold, &keep)) !=
        cudaSuccess)
        goto fail;
    if ((bs = cublasCreate(&ctx.blas)) != CUBLAS_STATUS_SUCCESS) goto blas_fail;
    if ((bs = cublasSetStream(ctx.blas, ctx.stream)) != CUBLAS_STATUS_SUCCESS) goto blas_fail;
    // parity with the CPU: no TF32 in the fp32 products
    if ((bs = cublasSetMathMode(ctx.blas, CUBLAS_DEFAULT_MATH)) != CUBLAS_STATUS_SUCCESS)
        goto blas_fail;
    if ((bs = cublasLtCreate(&ctx.lt)) != CUBLAS_STATUS_SUCCESS) goto blas_fail;
    // zeroed here, outside any recording, and left zero by every kernel that takes them
    step = "cudaMalloc (tickets)";
    if ((e = cudaMalloc((void **)&ctx.tickets, CU_TICKETS * sizeof(unsigned))) != cudaSuccess)
        goto fail;
    step = "cudaMemset (tickets)";
    if ((e = cudaMemset(ctx.tickets, 0, CU_TICKETS * sizeof(unsigned))) != cudaSuccess) goto fail;
    step = "cudaDeviceGetAttribute (multiprocessors)";
    int sms;
    if ((e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, index)) != cudaSuccess)
        goto fail;
    ctx.partials_floats = (size_t)CU_PARTIALS_PER_SM * (sms > 0 ? sms : 1);
    step = "cudaMalloc (partial sums)";
    if ((e = cudaMalloc((void **)&ctx.partials, ctx.partials_floats * sizeof(float))) !=
        cudaSuccess)
        goto fail;
    ctx.bound = 1;
    ctx.device = index;
    ctx.bf16 = bf16_gemm != 0;
    ctx.error[0] = '\0';
    return 0;
blas_fail:
    snprintf(why, why_len, "cuBLAS setup: %s", cublasGetStatusString(bs));
    return -1;
fail:
    snprintf(why, why_len, "%s: %s", step, cudaGetErrorString(e));
    cudaGetLastError();
    return -1;
}

extern "C" int mt_cuda_memory(size_t *used, size_t *reserved, size_t *dev_free, size_t *dev_total,
                              char *why, size_t why_len)
{
    if (!ctx.bound) {
        snprintf(why, why_len, "this thread has no CUDA backend");
        return -1;
    }
    uint64_t u = 0, r = 0;
    cudaError_t e = cudaMemPoolGetAttribute(ctx.pool, cudaMemPoolAttrUsedMemCurrent, &u);
    if (e == cudaSuccess)
        e = cudaMemPoolGetAttribute(ctx.pool, cudaMemPoolAttrReservedMemCurrent, &r);
    if (e == cudaSuccess) e = cudaMemGetInfo(dev_free, dev_total);
    if (e != cudaSuccess) {
        snprintf(why, why_len, "memory query: %s", cudaGetErrorString(e));
        return -1;
    }
    *used = (size_t)u, *reserved = (size_t)r;
    return 0;
}

// ---------------------------------------------------------------- memory
void *cu_alloc(size_t bytes)
{
    if (take_error()) return NULL;
    void *p = NULL;
    cudaError_t e = cudaMallocFromPoolAsync(&p, bytes ? bytes : 1, ctx.pool, ctx.stream);
    if (e != cudaSuccess) {
        cudaGetLastError();
        size_t free_b = 0, total_b = 0;
        char want[32], have[32], all[32];
        cudaMemGetInfo(&free_b, &total_b);
        describe_bytes(want, sizeof want, (double)bytes);
        describe_bytes(have, sizeof have, (double)free_b);
        describe_bytes(all, sizeof all, (double)total_b);
        if (e == cudaErrorMemoryAllocation)
            mt_error("cuda:%d: out of memory allocating %s (%s free of %s)", ctx.device, want, have,
                     all);
        else mt_error("cuda:%d: allocating %s: %s", ctx.device, want, cudaGetErrorString(e));
        return NULL;
    }
    // the contract: zero-filled
    cu_check(cudaMemsetAsync(p, 0, bytes, ctx.stream), "cudaMemsetAsync");
    if (take_error()) {
        cudaFreeAsync(p, ctx.stream);
        return NULL;
    }
    return p;
}

void cu_free(void *p)
{
    if (p) cu_check(cudaFreeAsync(p, ctx.stream), "cudaFreeAsync");
}

// The host buffer may be pageable and freed by the caller right after: wait for the copy.
void cu_upload(void *dst, const void *host_src, size_t bytes)
{
    if (!bytes) return;
    cu_check(cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, ctx.stream), "upload");
    cu_check(cudaStreamSynchronize(ctx.stream), "upload");
}

void cu_download(void *host_dst, const void *src, size_t bytes)
{
    if (bytes)
        cu_check(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, ctx.stream),
                 "download");
    cu_check(cudaStreamSynchronize(ctx.stream), "download");
    take_error();
}

void cu_copy(void *dst, const void *src, size_t bytes)
{
    if (bytes)
        cu_check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, ctx.stream), "copy");
}

void cu_memzero(void *p, size_t bytes)
{
    if (bytes) cu_check(cudaMemsetAsync(p, 0, bytes, ctx.stream), "memzero");
}

void cu_sync(void)
{
    cu_check(cudaStreamSynchronize(ctx.stream), "sync");
    take_error();
}

// ---------------------------------------------------------------- recorded steps
// The thread's stream is captured (thread-local mode: other threads, other panes, go on
// unhindered) and the capture instantiated once; a replay is one cudaGraphLaunch for the
// thousand-odd kernels of a large Mamba's decoding step, whose launches otherwise cost the host
// more than the kernels cost the GPU (docs/cuda.md §4). Scratch taken from the thread's pool
// while capturing becomes the graph's own allocation nodes. MTLAB_CUDA_GRAPHS=0 turns recording
// off (every step then runs its operations one by one, as before).
int cu_graph_begin(void)
{
    if (cu_env_is("MTLAB_CUDA_GRAPHS", "0") || ctx.error[0]) return -1;
    if (cudaStreamBeginCapture(ctx.stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
        cudaGetLastError();
        return -1;
    }
    return 0;
}

void *cu_graph_end(void)
{
    cudaGraph_t g = NULL;
    cudaGraphExec_t x = NULL;
    int failed = cudaStreamEndCapture(ctx.stream, &g) != cudaSuccess || !g || ctx.error[0];
    if (!failed && cudaGraphInstantiate(&x, g, 0) != cudaSuccess) failed = 1;
    if (g) cudaGraphDestroy(g);
    if (failed) {
        // nothing that was captured ran, and the caller runs it all itself: what went wrong
        // while capturing (an operation that cannot be captured) is not its error
        cudaGetLastError();
        ctx.error[0] = '\0';
        return NULL;
    }
    return x;
}

void cu_graph_run(void *graph)
{
    cu_check(cudaGraphLaunch((cudaGraphExec_t)graph, ctx.stream), "cudaGraphLaunch");
}

// A graph still running is freed when it ends.
void cu_graph_free(void *graph)
{
    if (graph) cu_check(cudaGraphExecDestroy((cudaGraphExec_t)graph), "cudaGraphExecDestroy");
}

void *cu_scratch(size_t bytes)
{
    void *p = NULL;
    cudaError_t e = cudaMallocFromPoolAsync(&p, bytes ? bytes : 1, ctx.pool, ctx.stream);
    if (e != cudaSuccess) {
        cudaGetLastError();
        char want[32];
        describe_bytes(want, sizeof want, (double)bytes);
        char what[64];
        snprintf(what, sizeof what, "scratch of %s", want);
        cu_check(e, what);
        return NULL;
    }
    return p;
}

void cu_scratch_free(void *p)
{
    if (p) cu_check(cudaFreeAsync(p, ctx.stream), "cudaFreeAsync (scratch)");
}

// ---------------------------------------------------------------- host-result reductions
// Sums in double: each block of the grid writes a partial, a second pass adds those.
#define RED_THREADS 256

__global__ void sum_partials_kernel(double *partial, const float *x, size_t n, int squares)
{
    double acc = 0.0;
    CU_FOR_EACH(i, n)
    {
        double v = x[i];
        acc += squares ? v * v : v;
    }
    acc = cu_block_sum(acc);
    if (threadIdx.x == 0) partial[blockIdx.x] = acc;
}

__global__ void sum_final_kernel(double *out, const double *partial, int n)
{
    double acc = 0.0;
    for (int i = threadIdx.x; i < n; i += blockDim.x) acc += partial[i];
    acc = cu_block_sum(acc);
    if (threadIdx.x == 0) *out = acc;
}

static double reduce(const float *x, size_t n, int squares)
{
    if (n == 0) return 0.0;
    unsigned blocks = cu_blocks(n, RED_THREADS * 64);
    if (blocks > 1024) blocks = 1024;
    double *partial = (double *)cu_scratch((blocks + 1) * sizeof(double)), result = 0.0;
    if (!partial) return NAN;
    sum_partials_kernel<<<blocks, RED_THREADS, 0, ctx.stream>>>(partial, x, n, squares);
    cu_check(cudaGetLastError(), "sum_partials_kernel");
    sum_final_kernel<<<1, RED_THREADS, 0, ctx.stream>>>(partial + blocks, partial, (int)blocks);
    cu_check(cudaGetLastError(), "sum_final_kernel");
    cu_check(cudaMemcpyAsync(&result, partial + blocks, sizeof result, cudaMemcpyDeviceToHost,
                             ctx.stream),
             "sum");
    cu_check(cudaStreamSynchronize(ctx.stream), "sum");
    cu_scratch_free(partial);
    return result;
}

double cu_sum(const float *x, size_t n) { return reduce(x, n, 0); }
double cu_sum_squares(const float *x, size_t n) { return reduce(x, n, 1); }

// out[r] = first index of the row's maximum, as the CPU's sequential `>` scan gives it: NaN
// never wins, and a NaN first element wins outright (nothing compares greater than it)
__global__ void argmax_rows_kernel(int32_t *out, const float *x, int cols)
{
    const float *row = x + (size_t)blockIdx.x * cols;
    float best = -INFINITY;
    int at = -1;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) {
        float v = row[j];
        if (!isnan(v) && (at < 0 || v > best)) best = v, at = j;
    }
    __shared__ float sv[RED_THREADS];
    __shared__ int si[RED_THREADS];
    sv[threadIdx.x] = best, si[threadIdx.x] = at;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) {
            float v = sv[threadIdx.x + s];
            int i = si[threadIdx.x + s];
            int mine = si[threadIdx.x];
            // a candidate wins when larger, or equal with a lower index; empty slots never
            if (i >= 0 && (mine < 0 || v > sv[threadIdx.x] || (v == sv[threadIdx.x] && i < mine)))
                sv[threadIdx.x] = v, si[threadIdx.x] = i;
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = si[0] < 0 || isnan(row[0]) ? 0 : si[0];
}

void cu_argmax_rows(int32_t *out, const float *x, size_t rows, int cols)
{
    if (!rows) return;
    argmax_rows_kernel<<<(unsigned)rows, RED_THREADS, 0, ctx.stream>>>(out, x, cols);
    cu_check(cudaGetLastError(), "argmax_rows_kernel");
}
