/* `mtlab bench --only comet`: COMET segments per second at wmt22-comet-da's real size (XLM-R
 * large: 24 layers, 1024 wide, 250,002-row vocabulary, 560M parameters, 2.2 GB in fp32; the
 * estimator 6144 -> 3072 -> 1024 -> 1), random weights, so that no download is needed. A
 * segment is three encoder passes (source, hypothesis, reference) and the estimator; lengths
 * are drawn from 16 to 48 ids each, about a WMT news sentence's pieces. */
#include "bench/bench.h"

#include <stdio.h>
#include <stdlib.h>

#include "mtlab/clock.h"
#include "mtlab/comet.h"
#include "mtlab/device.h"
#include "mtlab/error.h"
#include "mtlab/rng.h"

int bench_run_comet(const char *device, int repeat)
{
    const mt_backend *be = device ? mt_backend_for(device, 0) : mt_backend_cpu();
    if (!be) return -1;
    mt_comet_config cfg = mt_comet_config_wmt22();
    double t0 = mt_now_s();
    mt_comet *m = mt_comet_random(&cfg, be, 43);
    if (!m) return -1;
    double init_s = mt_now_s() - t0;
    /* a handful on the CPU (seconds each), a batch's worth on a GPU */
    const size_t n = device ? 256 : 8;
    mt_rng r;
    mt_rng_init(&r, 43, 1);
    mt_comet_seq *seqs = calloc(3 * n, sizeof *seqs);
    size_t tokens = 0;
    for (size_t i = 0; i < 3 * n; i++) {
        int len = 16 + (int)mt_rng_below(&r, 33);
        int32_t *ids = malloc((size_t)len * sizeof *ids);
        ids[0] = 0, ids[len - 1] = 2;
        for (int t = 1; t < len - 1; t++)
            ids[t] = 4 + (int32_t)mt_rng_below(&r, (uint64_t)cfg.V - 5);
        seqs[i].ids = ids, seqs[i].len = len;
        tokens += (size_t)len;
    }
    float *scores = malloc(n * sizeof *scores);
    double *times = malloc(((size_t)repeat + 1) * sizeof *times);
    int rc = 0;
    for (int k = 0; k <= repeat && !rc; k++) { /* k = 0 warms up */
        double s = mt_now_s();
        rc = mt_comet_score_ids(m, seqs, seqs + n, seqs + 2 * n, n, scores);
        times[k] = mt_now_s() - s;
    }
    if (!rc) {
        double med = bench_median(times + 1, repeat);
        printf("COMET (wmt22-comet-da shapes: XLM-R large, %d layers, C %d, V %d; random weights) "
               "on %s\n",
               cfg.L, cfg.C, cfg.V, be->name);
        printf("  set-up (random init, 560M parameters): %.1f s\n", init_s);
        printf("  %zu segments (%zu tokens over source, hypothesis and reference): median %.3f s "
               "of %d -> %.2f segments/s, %.0f tokens/s\n",
               n, tokens, med, repeat, (double)n / med, (double)tokens / med);
    }
    for (size_t i = 0; i < 3 * n; i++) free((void *)seqs[i].ids);
    free(seqs), free(scores), free(times);
    mt_comet_free(m);
    return rc;
}
