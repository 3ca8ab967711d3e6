#include "mtlab/device.h"
#include "mtlab/backend.h"
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
                mt_error("device '%s': expected cuda:N with N a device number such as cuda:0", device);
                return NULL;
            }
        }
        return cuda_backend((int)index, bf16_gemm);
    }
    mt_error("unknown device '%s': expected cpu, cuda or cuda:N", device);
    return NULL;
}

#if MTLAB_HAVE_CUDA
#include "cuda_api.h"

int mt_cuda_devices(char *why, size_t why_len) { return mt_cuda_device_count(why, why_len); }

int mt_cuda_describe(int index, char *out, size_t out_len)
{
    if (mt_cuda_device_name(index, out, out_len) != 0) return mt_error("cuda:%d: %s", index, out);
    return 0;
}

static const mt_backend *cuda_backend(int index, int bf16_gemm)
{
    char why[256] = "";
    const mt_backend *be = mt_cuda_backend(index, bf16_gemm, why, sizeof why);
    if (!be) mt_error("cuda:%d: %s", index, why);
    return be;
}
#else
int mt_cuda_devices(char *why, size_t why_len)
{
    if (why && why_len) snprintf(why, why_len, "this mtlab was built without CUDA (no nvcc at build time)");
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
