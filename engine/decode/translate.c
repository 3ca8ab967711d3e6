/* Text in, text out: encode with the tokenizer, sort the sentences by length so each batch
 * pads little, decode batch by batch (mt_decode), put the results back in input order and
 * decode their ids to text. */
#include "decode/search.h"

#include <stdlib.h>
#include <string.h>

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

static void free_ids(int **ids, int n)
{
    for (int i = 0; i < n; i++) free(ids[i]);
    free(ids);
}

/* Encode every text; on failure the input's index goes to *bad. */
static int encode_all(const mt_tokenizer *tok, const char *const *texts, int n, int **ids,
                      int *lens, int *bad)
{
    for (int i = 0; i < n; i++) {
        size_t len = 0;
        if (mt_tokenizer_encode(tok, texts[i], &ids[i], &len)) {
            *bad = i;
            return mt_error_context("input %d", i);
        }
        if (len > (size_t)1 << 24) {
            *bad = i;
            return mt_error("input %d: %zu tokens is too long to translate", i, len);
        }
        lens[i] = (int)len;
    }
    return 0;
}

/* Decode one batch of the sorted inputs into res (input order). */
static int run_batch(mt_model *m, int **ids, const by_length *order, int count,
                     const mt_decode_opts *o, int vocab_limit, mt_decode_result *res)
{
    const int32_t **src = mt_xmalloc((size_t)count * sizeof *src);
    int *lens = mt_xmalloc((size_t)count * sizeof *lens);
    int *index = mt_xmalloc((size_t)count * sizeof *index);
    for (int j = 0; j < count; j++) {
        index[j] = order[j].index;
        src[j] = (const int32_t *)ids[index[j]];
        lens[j] = order[j].len;
    }
    remap r = {o->on_token, o->user, index};
    mt_decode_opts bo = *o;
    if (o->vocab_limit <= 0 || o->vocab_limit > vocab_limit) bo.vocab_limit = vocab_limit;
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
    }
    free(src);
    free(lens);
    free(index);
    return rc;
}

int mt_translate(mt_model *m, const mt_tokenizer *tok, const char *const *texts, int n,
                 int batch, const mt_decode_opts *o, mt_decode_result *res)
{
    memset(res, 0, sizeof *res);
    res->failed_input = -1;
    double t0 = mt_decode_now();
    int V = mt_model_get_config(m)->vocab_size, pieces = mt_tokenizer_vocab_size(tok);
    if (pieces > V)
        return mt_error("the tokenizer has %d pieces but the model's vocabulary only %d", pieces,
                        V);
    if (n < 0) return mt_error("translate: %d inputs", n);
    if (batch <= 0) batch = MT_DECODE_DEFAULT_BATCH;
    int **ids = mt_xcalloc((size_t)n + 1, sizeof *ids);
    by_length *order = mt_xmalloc(((size_t)n + 1) * sizeof *order);
    int *lens = mt_xmalloc(((size_t)n + 1) * sizeof *lens);
    int rc = encode_all(tok, texts, n, ids, lens, &res->failed_input);
    if (rc == 0 && n > 0) {
        for (int i = 0; i < n; i++) order[i] = (by_length){lens[i], i};
        qsort(order, (size_t)n, sizeof *order, length_order);
        res->hyps = mt_xcalloc((size_t)n, sizeof *res->hyps);
        res->n = n;
    }
    for (int start = 0; rc == 0 && start < n; start += batch) {
        int count = n - start < batch ? n - start : batch;
        rc = run_batch(m, ids, order + start, count, o, pieces, res);
    }
    for (int i = 0; rc == 0 && i < n; i++) {
        mt_hypothesis *h = &res->hyps[i];
        h->text = mt_tokenizer_decode(tok, (const int *)h->ids, (size_t)h->n_ids);
        if (!h->text) {
            res->failed_input = i;
            rc = mt_error_context("input %d", i);
        }
        res->tokens += (size_t)h->n_ids + (size_t)h->finished;
    }
    free_ids(ids, n);
    free(order);
    free(lens);
    if (rc) {
        int bad = res->failed_input;
        mt_decode_result_free(res);
        res->failed_input = bad;
    }
    res->seconds = mt_decode_now() - t0;
    return rc;
}
