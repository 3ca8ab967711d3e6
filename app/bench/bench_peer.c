/* `mtlab bench --peer-inputs FILE -m BUNDLE`: decode a file of token-id sources with a bundle,
 * exactly N new tokens per source, in consecutive batches, in fp32 or int8 (--precision), and
 * print tokens/s. The peers in
 * tests/bench/bench_peers.py (CTranslate2, transformers) decode the same file the same way,
 * so the figures divide. */
#include "bench/bench.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#include "mtlab/error.h"

/* Seconds to decode every source once, batch by batch in file order. */
static int decode_all(mt_model *m, const bench_ids *in, int new_tokens, int batch,
                      double *seconds)
{
    *seconds = 0;
    for (int i = 0; i < in->n; i += batch) {
        int n = in->n - i < batch ? in->n - i : batch;
        bench_decode_time t;
        if (bench_decode_fixed(m, (const int32_t *const *)in->ids + i, in->len + i, n,
                               new_tokens, NULL, &t))
            return mt_error_context("sources %d..%d", i + 1, i + n);
        *seconds += t.prefill_seconds + t.step_seconds;
    }
    return 0;
}

int bench_run_peer(const char *bundle, const char *inputs, int new_tokens, int batch,
                   int repeat, mt_precision precision)
{
    mt_model *m = mt_model_load(bundle, mt_backend_cpu(), MT_MODEL_LOAD_NO_TOKENIZER);
    if (!m) return -1;
    if (mt_model_set_precision(m, precision)) {
        mt_model_free(m);
        return -1;
    }
    bench_ids in;
    if (bench_ids_read(inputs, mt_model_get_config(m)->vocab_size, &in)) {
        mt_model_free(m);
        return -1;
    }
    double *t = mt_xmalloc((size_t)repeat * sizeof *t), warm;
    int first = in.n < batch ? in.n : batch;
    bench_ids head = {in.ids, in.len, first};
    int rc = decode_all(m, &head, new_tokens, batch, &warm);
    for (int i = 0; i < repeat && !rc; i++) rc = decode_all(m, &in, new_tokens, batch, &t[i]);
    if (!rc) {
        double median = bench_median(t, repeat);
        double tokens = (double)in.n * new_tokens;
        printf("%s on %s: %d sources x %d new tokens, batch %d, %d threads, %s: %.0f tokens "
               "in %.3f s (median of %d) = %.1f tokens/s\n",
               bundle, inputs, in.n, new_tokens, batch, omp_get_max_threads(),
               mt_precision_name(precision), tokens, median, repeat, tokens / median);
    }
    free(t);
    bench_ids_free(&in);
    mt_model_free(m);
    return rc;
}
