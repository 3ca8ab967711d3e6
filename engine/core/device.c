#include "mtlab/device.h"
#include "mtlab/error.h"

#include <stdio.h>

#if MTLAB_HAVE_CUDA
#include "cuda_api.h"

int mt_have_cuda_build(void) { return 1; }

int mt_cuda_devices(char *why, size_t why_len) { return mt_cuda_device_count(why, why_len); }

int mt_cuda_describe(int index, char *out, size_t out_len)
{
    if (mt_cuda_device_name(index, out, out_len) != 0) return mt_error("cuda:%d: %s", index, out);
    return 0;
}

int mt_cuda_silu_check(float *y, const float *x, size_t n)
{
    char why[256];
    if (mt_cuda_silu(y, x, n, why, sizeof why) != 0) return mt_error("cuda:0: %s", why);
    return 0;
}
#else
int mt_have_cuda_build(void) { return 0; }

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

int mt_cuda_silu_check(float *y, const float *x, size_t n)
{
    (void)y, (void)x, (void)n;
    return mt_error("cuda:0: this mtlab was built without CUDA");
}
#endif
