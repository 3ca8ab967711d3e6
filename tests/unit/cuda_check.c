/* See cuda_check.h. */
#include "cuda_check.h"
#include "test_util.h"

#include "mtlab/device.h"
#include "mtlab/error.h"

const mt_backend *cuda_or_skip(int bf16_gemm)
{
    char why[256] = "";
    const char *require = getenv("MTLAB_REQUIRE_CUDA");
    int required = require && !strcmp(require, "1");
    if (mt_cuda_devices(why, sizeof why) == 0) {
        if (required) fail_msg("MTLAB_REQUIRE_CUDA=1 but no CUDA device: %s", why);
        print_message("skip: no CUDA device (%s)\n", why);
        skip();
        return NULL;
    }
    const mt_backend *be = mt_backend_for("cuda:0", bf16_gemm);
    if (!be) fail_msg("cuda:0: %s", mt_last_error());
    return be;
}
