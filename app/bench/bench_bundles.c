/* Random-weight bundles of the two small presets, for `make bench-peers` when models/ holds no
 * trained ones: decoding speed does not depend on what the weights say. */
#include "bench/bench.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "mtlab/error.h"

int bench_make_bundles(const char *dir)
{
    if (mkdir(dir, 0755) && errno != EEXIST) return mt_error("%s: %s", dir, strerror(errno));
    static const char *const presets[] = {"transformer-small", "mamba-small"};
    for (int i = 0; i < 2; i++) {
        char path[4096];
        if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, presets[i]) >= sizeof path)
            return mt_error("%s: path too long", dir);
        mt_model_config cfg;
        if (mt_model_preset(&cfg, presets[i])) return -1;
        mt_model *m = mt_model_create(&cfg, mt_backend_cpu(), (uint64_t)(i + 1));
        if (!m) return -1;
        int rc = mt_model_save(m, path, NULL, MT_DT_F32);
        mt_model_free(m);
        if (rc) return -1;
    }
    return 0;
}
