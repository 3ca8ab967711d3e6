/* `mtlab bench --peer-inputs FILE -m BUNDLE`: decode a file of token-id sources with a bundle,
 * exactly N new tokens per source, in consecutive batches, in fp32 or int8 (--precision), and
 * print tokens/s. The peers in
 * tests/bench/bench_peers.py (CTranslate2, transformers) decode the same file the same way,
 * so the figures divide; with --tokens-out the generated ids are written too, one line per
 * source, so `make test-peers` can check that every peer decodes the same tokens. */
#include "bench/bench.h"

#include <errno.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mtlab/error.h"

/* Seconds to decode every source once, batch by batch in file order; tokens (n, new_tokens)
 * receives the generated ids when not NULL. */
static int decode_all(mt_model *m, const bench_ids *in, int new_tokens, int batch, int32_t *tokens,
                      double *seconds)
{
    *seconds = 0;
    for (int i = 0; i < in->n; i += batch) {
        int n = in->n - i < batch ? in->n - i : batch;
        bench_decode_time t;
        if (bench_decode_fixed(m, (const int32_t *const *)in->ids + i, in->len + i, n, new_tokens,
                               tokens ? tokens + (size_t)i * new_tokens : NULL, &t))
            return mt_error_context("sources %d..%d", i + 1, i + n);
        *seconds += t.prefill_seconds + t.step_seconds;
    }
    return 0;
}

/* One line of space-separated ids per source. */
static int write_tokens(const char *path, const int32_t *tokens, int n, int new_tokens)
{
    FILE *f = fopen(path, "w");
    if (!f) return mt_error("%s: %s", path, strerror(errno));
    for (int i = 0; i < n; i++)
        for (int k = 0; k < new_tokens; k++)
            fprintf(f, "%d%c", tokens[(size_t)i * new_tokens + k], k + 1 < new_tokens ? ' ' : '\n');
    int bad = ferror(f);
    if (fclose(f) || bad) return mt_error("%s: write error", path);
    return 0;
}

int bench_run_peer(const char *bundle, const char *inputs, const char *tokens_out, int new_tokens,
                   int batch, int repeat, mt_precision precision)
{
    mt_model *m = mt_model_load(bundle, mt_backend_cpu(), MT_MODEL_LOAD_NO_TOKENIZER);
    if (!m) return -1;
    if (mt_model_set_precision(m, precision) || mt_model_set_fp32_panels(m, 1)) {
        mt_model_free(m);
        return -1;
    }
    bench_ids in;
    if (bench_ids_read(inputs, mt_model_get_config(m), &in)) {
        mt_model_free(m);
        return -1;
    }
    double *t = mt_xmalloc((size_t)repeat * sizeof *t), warm;
    int first = in.n < batch ? in.n : batch;
    bench_ids head = {in.ids, in.len, first};
    int rc = decode_all(m, &head, new_tokens, batch, NULL, &warm);
    for (int i = 0; i < repeat && !rc; i++) rc = decode_all(m, &in, new_tokens, batch, NULL, &t[i]);
    if (!rc) {
        double median = bench_median(t, repeat);
        double tokens = (double)in.n * new_tokens;
        printf("%s on %s: %d sources x %d new tokens, batch %d, %d threads, %s: %.0f tokens "
               "in %.3f s (median of %d) = %.1f tokens/s\n",
               bundle, inputs, in.n, new_tokens, batch, omp_get_max_threads(),
               mt_precision_name(precision), tokens, median, repeat, tokens / median);
    }
    if (!rc && tokens_out) {
        int32_t *ids = mt_xmalloc((size_t)in.n * new_tokens * sizeof *ids);
        rc = decode_all(m, &in, new_tokens, batch, ids, &warm);
        if (!rc) rc = write_tokens(tokens_out, ids, in.n, new_tokens);
        free(ids);
    }
    free(t);
    bench_ids_free(&in);
    mt_model_free(m);
    return rc;
}
