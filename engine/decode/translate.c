/* Text in, text out: encode with the tokenizer and check every source before decoding any,
 * sort the sentences by length so each batch pads little, decode batch by batch (mt_decode),
 * put the results back in input order and decode their ids to text. */
#include "decode/search.h"

#include <stdlib.h>
#include <string.h>

#include "mtlab/clock.h"
#include "mtlab/error.h"

/* The tokenizer hands out int ids; the decoder takes int32_t: the same type here. */
_Static_assert(sizeof(int) == sizeof(int32_t), "int and int32_t differ");

typedef struct {
    mt_decode_callback on_token;
    void *user;
    const int *index; /* batch position -> input index */
} remap;

/* Report a batch's event under the sentence's input index. */
static void remap_event(void *user, const mt_decode_event *ev)
{
    const remap *r = user;
    mt_decode_event e = *ev;
    e.sentence = r->index[ev->sentence];
    r->on_token(r->user, &e);
}

typedef struct {
    int len, index;
} by_length;

/* shorter first; equal lengths keep input order */
static int length_order(const void *pa, const void *pb)
{
    const by_length *a = pa, *b = pb;
    if (a->len != b->len) return (a->len > b->len) - (a->len < b->len);
    return (a->index > b->index) - (a->index < b->index);
}

void mt_sources_free(mt_sources *s)
{
    for (int i = 0; i < s->n; i++) free(s->ids[i]);
    free(s->ids);
    free(s->len);
    memset(s, 0, sizeof *s);
}

int mt_source_encode(const mt_model *m, const mt_tokenizer *tok, const char *text, int **ids,
                     size_t *n)
{
    return mt_prompt_encode(tok, mt_model_get_config(m)->prompt, text, ids, n);
}

int mt_sources_encode(mt_sources *s, const mt_model *m, const mt_tokenizer *tok,
                      const char *const *texts, int n, const mt_decode_opts *o, int *bad)
{
    memset(s, 0, sizeof *s);
    *bad = -1;
    if (n < 0) return mt_error("translate: %d inputs", n);
    s->ids = mt_xcalloc((size_t)n + 1, sizeof *s->ids);
    s->len = mt_xcalloc((size_t)n + 1, sizeof *s->len);
    for (int i = 0; i < n; i++) {
        int *ids;
        size_t len = 0;
        int rc = mt_source_encode(m, tok, texts[i], &ids, &len);
        if (rc == 0 && len > (size_t)1 << 24) {
            free(ids);
            rc = mt_error("%zu tokens is too long to translate", len);
        }
        /* the model must take it as a source: too long for its positions fails here, before
         * anything is decoded, not in some later batch */
        if (rc == 0) {
            s->ids[s->n] = (int32_t *)ids;
            s->len[s->n++] = (int)len;
            rc = mt_decode_max_new(m, (int)len, o) < 0 ? -1 : 0;
        }
        if (rc != 0) {
            *bad = i;
            mt_sources_free(s);
            return -1;
        }
    }
    return 0;
}

/* The options a batch decodes with: the caller's, generation limited to the tokenizer's ids. */
static mt_decode_opts batch_opts(const mt_decode_opts *o, int vocab_limit)
{
    mt_decode_opts bo = *o;
    if (o->vocab_limit <= 0 || o->vocab_limit > vocab_limit) bo.vocab_limit = vocab_limit;
    return bo;
}

/* The sources of one batch of the sorted inputs and their lengths (the caller frees both) */
static void batch_sources(const int32_t *const *ids, const by_length *order, int count,
                          const int32_t ***src, int **lens)
{
    *src = mt_xmalloc((size_t)count * sizeof **src);
    *lens = mt_xmalloc((size_t)count * sizeof **lens);
    for (int j = 0; j < count; j++) {
        (*src)[j] = ids[order[j].index];
        (*lens)[j] = order[j].len;
    }
}

/* mt_decode_reserve for one batch of the sorted inputs; a failure is left to its decoding. */
static void reserve_batch(mt_model *m, const int32_t *const *ids, const by_length *order, int count,
                          const mt_decode_opts *o, int vocab_limit)
{
    const int32_t **src;
    int *lens;
    batch_sources(ids, order, count, &src, &lens);
    mt_decode_opts bo = batch_opts(o, vocab_limit);
    (void)mt_decode_reserve(m, src, lens, count, &bo);
    free(src);
    free(lens);
}

/* Decode one batch of the sorted inputs into res (input order). */
static int run_batch(mt_model *m, const int32_t *const *ids, const by_length *order, int count,
                     const mt_decode_opts *o, int vocab_limit, mt_decode_result *res)
{
    const int32_t **src;
    int *lens, *index = mt_xmalloc((size_t)count * sizeof *index);
    batch_sources(ids, order, count, &src, &lens);
    for (int j = 0; j < count; j++) index[j] = order[j].index;
    remap r = {o->on_token, o->user, index};
    mt_decode_opts bo = batch_opts(o, vocab_limit);
    if (o->on_token) {
        bo.on_token = remap_event;
        bo.user = &r;
    }
    mt_decode_result sub;
    int rc = mt_decode(m, src, lens, count, &bo, &sub);
    if (rc) {
        if (sub.failed_input >= 0) res->failed_input = index[sub.failed_input];
    } else {
        for (int j = 0; j < count; j++) res->hyps[index[j]] = sub.hyps[j];
        free(sub.hyps);
        res->steps += sub.steps;
        res->cancelled |= sub.cancelled;
        if (sub.state_bytes > res->state_bytes) res->state_bytes = sub.state_bytes;
        if (sub.model_state_bytes > res->model_state_bytes)
            res->model_state_bytes = sub.model_state_bytes;
    }
    free(src);
    free(lens);
    free(index);
    return rc;
}

int mt_translate_ids(mt_model *m, const mt_tokenizer *tok, const int32_t *const *src,
                     const int *src_len, int n, int batch, const mt_decode_opts *o,
                     mt_decode_result *res)
{
    memset(res, 0, sizeof *res);
    res->failed_input = -1;
    double t0 = mt_now_s();
    int V = mt_model_get_config(m)->vocab_size, pieces = mt_tokenizer_vocab_size(tok);
    if (pieces > V)
        return mt_error("the tokenizer has %d pieces but the model's vocabulary only %d", pieces,
                        V);
    if (n < 0) return mt_error("translate: %d inputs", n);
    if (batch <= 0) batch = MT_DECODE_DEFAULT_BATCH;
    by_length *order = mt_xmalloc(((size_t)n + 1) * sizeof *order);
    if (n > 0) {
        for (int i = 0; i < n; i++) order[i] = (by_length){src_len[i], i};
        qsort(order, (size_t)n, sizeof *order, length_order);
        res->hyps = mt_xcalloc((size_t)n, sizeof *res->hyps);
        res->n = n;
    }
    /* the batches run shortest first, each wanting a larger decoding state than the last: the
     * longest one's memory, taken first, serves them all (decode workspace, mtlab/model.h); a
     * source it fails on fails its own batch below, with its index */
    if (n > batch) reserve_batch(m, src, order + n - batch, batch, o, pieces);
    int rc = 0;
    for (int start = 0; rc == 0 && start < n; start += batch) {
        int count = n - start < batch ? n - start : batch;
        rc = run_batch(m, src, order + start, count, o, pieces, res);
    }
    for (int i = 0; rc == 0 && i < n; i++) {
        mt_hypothesis *h = &res->hyps[i];
        h->text = mt_tokenizer_decode(tok, (const int *)h->ids, (size_t)h->n_ids);
        if (!h->text) {
            res->failed_input = i;
            rc = -1;
        }
        res->tokens += (size_t)h->n_ids + (size_t)h->finished;
    }
    free(order);
    if (rc) {
        int bad = res->failed_input;
        mt_decode_result_free(res);
        res->failed_input = bad;
    }
    res->seconds = mt_now_s() - t0;
    return rc;
}

int mt_translate(mt_model *m, const mt_tokenizer *tok, const char *const *texts, int n, int batch,
                 const mt_decode_opts *o, mt_decode_result *res)
{
    double t0 = mt_now_s();
    mt_sources s;
    int bad;
    int rc = mt_sources_encode(&s, m, tok, texts, n, o, &bad);
    if (rc == 0) {
        rc = mt_translate_ids(m, tok, (const int32_t *const *)s.ids, s.len, s.n, batch, o, res);
        bad = res->failed_input;
        mt_sources_free(&s);
    } else {
        memset(res, 0, sizeof *res);
        res->failed_input = bad;
    }
    if (rc != 0 && bad >= 0) mt_error_context("input %d", bad);
    res->seconds = mt_now_s() - t0;
    return rc;
}
