#include "mtlab/device.h"
#include "mtlab/backend.h"
#include "mtlab/collective.h"
#include "mtlab/error.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const mt_backend *cuda_backend(int index, int bf16_gemm);

const mt_backend *mt_backend_for(const char *device, int bf16_gemm)
{
    if (!device || !strcmp(device, "cpu")) return mt_backend_cpu();
    if (!strncmp(device, "cuda", 4) && (device[4] == '\0' || device[4] == ':')) {
        long index = 0;
        if (device[4] == ':') {
            char *end;
            errno = 0;
            index = strtol(device + 5, &end, 10);
            if (errno || end == device + 5 || *end || index < 0 || index > 255) {
                mt_error("device '%s': expected cuda:N with N a device number such as cuda:0",
                         device);
                return NULL;
            }
        }
        return cuda_backend((int)index, bf16_gemm);
    }
    mt_error("unknown device '%s': expected cpu, cuda or cuda:N", device);
    return NULL;
}

#if MTLAB_HAVE_CUDA
/* The CUDA backend (kernels/, cuBLAS, cudart) is a shared object loaded on the first call that
 * asks for a CUDA device: cudart and cuBLAS take ~200 MB of address space and their
 * initialisers run at load, so a CPU user (and every `--help`) pays nothing. Looked for in
 * $MTLAB_CUDA_LIB, beside the executable, then where the build put it (MTLAB_CUDA_SO). */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <unistd.h>

#include "cuda_api.h"

#define CUDA_SO_NAME "libmtlab-cuda.so"

static struct {
    int (*device_count)(char *why, size_t why_len);
    int (*device_name)(int index, char *out, size_t out_len);
    const struct mt_backend *(*backend)(int index, int bf16_gemm, char *why, size_t why_len);
    /* optional: NULL in a backend built before the NCCL collectives */
    struct mt_collective *(*collective_nccl)(struct mt_collective *host, int index, char *why,
                                             size_t why_len);
    char why[768]; /* why it did not load ("" when it did) */
} cuda_so;
static pthread_once_t cuda_so_once = PTHREAD_ONCE_INIT;

static void *open_cuda_so(const char *path, char *tried, size_t tried_len)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        size_t used = strlen(tried);
        snprintf(tried + used, tried_len - used, "%s%s", used ? "; " : "", dlerror());
    }
    return h;
}

static void load_cuda_so(void)
{
    char tried[512] = "", path[PATH_MAX];
    void *h = NULL;
    const char *env = getenv("MTLAB_CUDA_LIB");
    if (env && env[0]) {
        h = open_cuda_so(env, tried, sizeof tried);
    } else {
        ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
        if (n > 0) {
            path[n] = '\0';
            char *slash = strrchr(path, '/');
            if (slash && (size_t)(slash - path) + sizeof CUDA_SO_NAME + 1 < sizeof path) {
                strcpy(slash + 1, CUDA_SO_NAME);
                if (access(path, F_OK) == 0) h = open_cuda_so(path, tried, sizeof tried);
            }
        }
        if (!h) h = open_cuda_so(MTLAB_CUDA_SO, tried, sizeof tried);
    }
    if (!h) {
        snprintf(cuda_so.why, sizeof cuda_so.why, "the CUDA backend (%s) did not load: %s",
                 CUDA_SO_NAME, tried);
        return;
    }
    *(void **)&cuda_so.device_count = dlsym(h, "mt_cuda_device_count");
    *(void **)&cuda_so.device_name = dlsym(h, "mt_cuda_device_name");
    *(void **)&cuda_so.backend = dlsym(h, "mt_cuda_backend");
    *(void **)&cuda_so.collective_nccl = dlsym(h, "mt_cuda_collective_nccl");
    if (!cuda_so.device_count || !cuda_so.device_name || !cuda_so.backend) {
        snprintf(cuda_so.why, sizeof cuda_so.why, "the CUDA backend (%s) lacks a function: %s",
                 CUDA_SO_NAME, dlerror());
        cuda_so.device_count = NULL;
        cuda_so.device_name = NULL;
        cuda_so.backend = NULL;
    }
}

/* 0 when the CUDA backend is loaded, else -1 with the reason in why */
static int cuda_so_ready(char *why, size_t why_len)
{
    pthread_once(&cuda_so_once, load_cuda_so);
    if (cuda_so.backend) return 0;
    if (why && why_len) snprintf(why, why_len, "%s", cuda_so.why);
    return -1;
}

int mt_cuda_devices(char *why, size_t why_len)
{
    if (cuda_so_ready(why, why_len) != 0) return 0;
    return cuda_so.device_count(why, why_len);
}

int mt_cuda_describe(int index, char *out, size_t out_len)
{
    char why[768];
    if (cuda_so_ready(why, sizeof why) != 0) {
        if (out && out_len) out[0] = '\0';
        return mt_error("cuda:%d: %s", index, why);
    }
    if (cuda_so.device_name(index, out, out_len) != 0) return mt_error("cuda:%d: %s", index, out);
    return 0;
}

static const mt_backend *cuda_backend(int index, int bf16_gemm)
{
    char why[768] = "";
    if (cuda_so_ready(why, sizeof why) != 0) {
        mt_error("cuda:%d: %s", index, why);
        return NULL;
    }
    const mt_backend *be = cuda_so.backend(index, bf16_gemm, why, sizeof why);
    if (!be) mt_error("cuda:%d: %s", index, why);
    return be;
}

mt_collective *mt_collective_nccl(mt_collective *host, int index)
{
    char why[768] = "";
    if (cuda_so_ready(why, sizeof why) != 0) {
        mt_error("NCCL on cuda:%d: %s", index, why);
        return NULL;
    }
    if (!cuda_so.collective_nccl) {
        mt_error("NCCL on cuda:%d: %s has no NCCL collectives (rebuild it)", index, CUDA_SO_NAME);
        return NULL;
    }
    mt_collective *c = cuda_so.collective_nccl(host, index, why, sizeof why);
    if (!c) mt_error("NCCL on cuda:%d: %s", index, why);
    return c;
}
#else
mt_collective *mt_collective_nccl(mt_collective *host, int index)
{
    (void)host;
    mt_error("NCCL on cuda:%d: this mtlab was built without CUDA (no nvcc at build time)", index);
    return NULL;
}

int mt_cuda_devices(char *why, size_t why_len)
{
    if (why && why_len)
        snprintf(why, why_len, "this mtlab was built without CUDA (no nvcc at build time)");
    return 0;
}

int mt_cuda_describe(int index, char *out, size_t out_len)
{
    if (out && out_len) out[0] = '\0';
    return mt_error("cuda:%d: this mtlab was built without CUDA", index);
}

static const mt_backend *cuda_backend(int index, int bf16_gemm)
{
    (void)bf16_gemm;
    mt_error("cuda:%d: this mtlab was built without CUDA (no nvcc at build time)", index);
    return NULL;
}
#endif
