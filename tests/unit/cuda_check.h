/* What the CUDA tests share: whether to run at all. Without a device they skip with the
 * reason, unless MTLAB_REQUIRE_CUDA=1 (set by `make test-cuda` on a GPU machine), where a
 * missing device is a failure rather than a silent skip. */
#ifndef MTLAB_TEST_CUDA_CHECK_H
#define MTLAB_TEST_CUDA_CHECK_H

#include "mtlab/backend.h"

/* The fp32 CUDA backend for device 0 bound to this thread, or NULL after skip() / fail. */
const mt_backend *cuda_or_skip(int bf16_gemm);

#endif
