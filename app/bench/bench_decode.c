/* Fixed-length greedy decoding for the decode figures, straight on the model's incremental API
 * (prefill, then one mt_model_step per token), and the parameter bytes one step reads. */
#include "bench/bench.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mtlab/clock.h"
#include "mtlab/decode.h"
#include "mtlab/error.h"

/* Prompts as mt_decode builds them (decode.h):
 *   encoder-decoder  src (n, S) = `src <eos>` right padded, ids (n, 1) = <decoder_start>
 *   decoder-only     ids (n, T) = `src <sep>` left padded */
static void build_prompts(const mt_model_config *cfg, int encdec, const int32_t *const *src,
                          const int *src_len, int n, mt_batch *b, int32_t **ids, int32_t **srcbuf)
{
    int longest = 0;
    for (int i = 0; i < n; i++)
        if (src_len[i] > longest) longest = src_len[i];
    int L = longest + 1;
    int32_t *p = mt_xmalloc((size_t)n * L * sizeof *p);
    for (int i = 0; i < n; i++) {
        int32_t *row = p + (size_t)i * L;
        int pad = L - 1 - src_len[i];
        int32_t *words = encdec ? row : row + pad;
        if (src_len[i]) memcpy(words, src[i], (size_t)src_len[i] * sizeof *row);
        words[src_len[i]] = encdec ? cfg->eos_id : cfg->sep_id;
        int32_t *fill = encdec ? words + src_len[i] + 1 : row;
        for (int t = 0; t < pad; t++) fill[t] = cfg->pad_id;
    }
    *b = (mt_batch){.B = n};
    if (encdec) {
        int32_t *d = mt_xmalloc((size_t)n * sizeof *d);
        for (int i = 0; i < n; i++) d[i] = cfg->decoder_start_id;
        b->T = 1, b->ids = d, b->S = L, b->src = p;
        *ids = d, *srcbuf = p;
    } else {
        b->T = L, b->ids = p;
        *ids = p, *srcbuf = NULL;
    }
}

/* The most likely token of each row (the first, on ties) as greedy decoding picks it
 * (mt_argmax), <pad> (mt_decode never generates it) and <eos> (every row runs to its fixed
 * length) excluded. The logits are the caller's scratch: <eos> is overwritten with -inf. */
static void pick_tokens(int32_t *tok, float *logits, int n, int V, int pad_id, int eos_id)
{
    for (int r = 0; r < n; r++) {
        float *row = logits + (size_t)r * V;
        if (eos_id >= 0 && eos_id < V && eos_id != pad_id) row[eos_id] = -INFINITY;
        tok[r] = mt_argmax(row, V, pad_id);
    }
}

/* seconds of CPU time this process has used, all threads */
static double cpu_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* device_pick: after the prefill, each row's next token is the maximum chosen where the logits
 * are (mt_model_step_argmax), pad and eos not excluded */
static int decode_fixed(mt_model *m, const int32_t *const *src, const int *src_len, int n,
                        int new_tokens, int32_t *tokens_out, bench_decode_time *t, int device_pick)
{
    const mt_model_config *cfg = mt_model_get_config(m);
    int encdec = mt_model_is_encdec(m), V = cfg->vocab_size;
    if (n <= 0 || new_tokens <= 0)
        return mt_error("decode: %d rows x %d new tokens", n, new_tokens);
    mt_batch b;
    int32_t *ids, *srcbuf;
    build_prompts(cfg, encdec, src, src_len, n, &b, &ids, &srcbuf);
    /* the last generated token is never fed back */
    mt_decode_state *st = mt_decode_state_new(m, n, b.T + new_tokens - 1, encdec ? b.S : 0);
    float *logits = mt_xmalloc((size_t)n * V * sizeof *logits);
    int32_t *tok = mt_xmalloc((size_t)n * sizeof *tok);
    int rc = st ? 0 : -1;
    double t0 = mt_now_s();
    if (!rc) rc = mt_model_prefill(m, st, &b, logits);
    double t1 = mt_now_s(), c1 = cpu_now_s();
    if (!rc) pick_tokens(tok, logits, n, V, cfg->pad_id, cfg->eos_id);
    for (int k = 0; k < new_tokens && !rc; k++) {
        if (tokens_out)
            for (int r = 0; r < n; r++) tokens_out[(size_t)r * new_tokens + k] = tok[r];
        if (k + 1 == new_tokens) break;
        if (device_pick) {
            rc = mt_model_step_argmax(m, st, tok, tok);
        } else {
            rc = mt_model_step(m, st, tok, logits);
            if (!rc) pick_tokens(tok, logits, n, V, cfg->pad_id, cfg->eos_id);
        }
    }
    t->prefill_seconds = t1 - t0;
    t->step_seconds = mt_now_s() - t1;
    t->step_cpu_seconds = cpu_now_s() - c1;
    free(tok);
    free(logits);
    mt_decode_state_free(st);
    free(ids);
    free(srcbuf);
    return rc;
}

int bench_decode_fixed(mt_model *m, const int32_t *const *src, const int *src_len, int n,
                       int new_tokens, int32_t *tokens_out, bench_decode_time *t)
{
    return decode_fixed(m, src, src_len, n, new_tokens, tokens_out, t, 0);
}

int bench_decode_device_pick(mt_model *m, const int32_t *const *src, const int *src_len, int n,
                             int new_tokens, bench_decode_time *t)
{
    return decode_fixed(m, src, src_len, n, new_tokens, NULL, t, 1);
}

int bench_step_param_bytes(const mt_model_config *cfg, size_t *step_bytes, size_t *all_bytes)
{
    mt_model *m = mt_model_create(cfg, bench_counting_backend(), 1);
    if (!m) return -1;
    enum { PROMPT = 16 };
    int32_t words[PROMPT];
    for (int i = 0; i < PROMPT; i++) words[i] = (int32_t)(cfg->unk_id + 1 + i) % cfg->vocab_size;
    const int32_t *src[1] = {words};
    int len[1] = {PROMPT};
    mt_batch b;
    int32_t *ids, *srcbuf;
    build_prompts(cfg, mt_model_is_encdec(m), src, len, 1, &b, &ids, &srcbuf);
    mt_decode_state *st = mt_decode_state_new(m, 1, b.T + 1, mt_model_is_encdec(m) ? b.S : 0);
    float *logits = mt_xmalloc((size_t)cfg->vocab_size * sizeof *logits);
    int rc = st ? mt_model_prefill(m, st, &b, logits) : -1;
    if (!rc) {
        bench_counters_reset(mt_model_params(m), mt_model_param_block_size(m));
        int32_t next = words[0];
        rc = mt_model_step(m, st, &next, logits);
        *step_bytes = bench_counters_get()->param_bytes;
        *all_bytes = mt_model_param_block_size(m) * sizeof(float);
        bench_counters_reset(NULL, 0);
    }
    free(logits);
    mt_decode_state_free(st);
    free(ids);
    free(srcbuf);
    mt_model_free(m);
    return rc;
}
