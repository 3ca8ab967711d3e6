/* mt_decode: option checks, length limits, prompts, the decoding state and its prefill, then
 * greedy.c or beam.c (search.h). The helpers both searches share are in search.c. */
#include "decode/search.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mtlab/clock.h"
#include "mtlab/error.h"

/* Sizes past these are mistakes (a binary file read as text, a typo), not translations. */
#define MAX_SOURCE_TOKENS 65536
#define MAX_NEW_TOKENS 65536
#define MAX_ROWS 65536

void mt_decode_opts_init(mt_decode_opts *o)
{
    memset(o, 0, sizeof *o);
    o->beam = MT_DECODE_DEFAULT_BEAM;
    o->length_penalty = 1.0f;
}

void mt_decode_result_free(mt_decode_result *r)
{
    for (int i = 0; i < r->n; i++) mt_hypothesis_clear(&r->hyps[i]);
    free(r->hyps);
    r->hyps = NULL;
    r->n = 0;
}

/* Whether decoding follows transformers' generate() (decode.h). */
static int hf_semantics(const mt_model *m, const mt_decode_opts *o)
{
    return o->semantics == MT_SEARCH_HF ||
           (o->semantics == MT_SEARCH_AUTO && mt_model_get_config(m)->hf_generate);
}

/* The ids a decoder-only prompt holds besides the source's: mtlab's own <sep>, or none where
 * a text template put its separator among the source's ids (mt_source_encode). */
static int prompt_extra(const mt_model_config *cfg) { return mt_model_config_prompt_sep(cfg) >= 0; }

/* The new tokens generate() allows when asked for no length (transformers 4.57,
 * _prepare_generated_length), from its max_length L (cfg->hf_max_length):
 *   encoder-decoder: L counts the decoder start and the forced </s>: L - 2 new tokens; the
 *     default 20 is lengthened by the decoder prompt (1): 19;
 *   decoder-only: L counts the prompt of P ids: L - P new tokens, and a prompt of L or more is
 *     refused (as generate() raises); the default 20 is lengthened by the prompt: 20 new
 *     tokens, within max_position_embeddings where the config has one.
 * -1 with a message when the prompt leaves no room. */
static int hf_max_new(const mt_model_config *cfg, int P, int encdec)
{
    int L = cfg->hf_max_length, is_default = L == MT_GENERATE_DEFAULT_MAX_LENGTH;
    if (encdec) return (is_default ? L + 1 : L) - 2;
    if (is_default) {
        L += P;
        if (cfg->max_positions > 0 && L > cfg->max_positions) L = cfg->max_positions;
    }
    if (P >= L)
        return mt_error("a prompt of %d tokens leaves no room within the max_length %d of the "
                        "model's generation config (ask for a number of new tokens)",
                        P, L);
    return L - P;
}

int mt_decode_max_new(const mt_model *m, int src_len, const mt_decode_opts *o)
{
    const mt_model_config *cfg = mt_model_get_config(m);
    if (src_len < 0 || src_len > MAX_SOURCE_TOKENS)
        return mt_error("source of %d tokens is outside 0..%d", src_len, MAX_SOURCE_TOKENS);
    if (o->max_new_tokens < 0 || o->max_new_tokens > MAX_NEW_TOKENS)
        return mt_error("max new tokens %d is outside 1..%d", o->max_new_tokens, MAX_NEW_TOKENS);
    int n = o->max_new_tokens > 0 ? o->max_new_tokens : 2 * src_len + 10;
    /* a hub checkpoint asked for no length: generate()'s max_length (decode.h) */
    if (o->max_new_tokens == 0 && cfg->hf_max_length > 0 && hf_semantics(m, o)) {
        n = hf_max_new(cfg, src_len + (mt_model_is_encdec(m) ? 0 : prompt_extra(cfg)),
                       mt_model_is_encdec(m));
        if (n < 0) return -1;
    }
    if (n > MAX_NEW_TOKENS) n = MAX_NEW_TOKENS;
    /* An encoder-decoder model with a position table holds source `src <eos>` and decoder
     * positions 0 .. n-1 (the prefix and all generated tokens but the last). */
    if (mt_model_is_encdec(m) && cfg->max_positions > 0) {
        if (src_len + 1 > cfg->max_positions)
            return mt_error("source of %d tokens (+ <eos>) exceeds the model's %d positions",
                            src_len, cfg->max_positions);
        if (n > cfg->max_positions) n = cfg->max_positions;
    }
    return n;
}

/* The prompt batch of n sources (see decode.h): ids (n, T) and, for encoder-decoder models,
 * src (n, S). The arrays are malloc'd into *ids and *srcbuf (NULL when unused). */
static void build_prompts(const mt_model *m, const int32_t *const *src, const int *src_len, int n,
                          mt_batch *b, int32_t **ids, int32_t **srcbuf)
{
    const mt_model_config *cfg = mt_model_get_config(m);
    int longest = 0;
    for (int i = 0; i < n; i++)
        if (src_len[i] > longest) longest = src_len[i];
    memset(b, 0, sizeof *b);
    b->B = n;
    *srcbuf = NULL;
    if (mt_model_is_encdec(m)) {
        /* source `src <eos>` right padded; decoder prefix <decoder_start> */
        int S = longest + 1;
        int32_t *s = mt_xmalloc((size_t)n * S * sizeof *s);
        int32_t *d = mt_xmalloc((size_t)n * sizeof *d);
        for (int i = 0; i < n; i++) {
            int32_t *row = s + (size_t)i * S;
            if (src_len[i]) memcpy(row, src[i], (size_t)src_len[i] * sizeof *row);
            row[src_len[i]] = cfg->eos_id;
            for (int t = src_len[i] + 1; t < S; t++) row[t] = cfg->pad_id;
            d[i] = cfg->decoder_start_id;
        }
        b->T = 1;
        b->ids = d;
        b->S = S;
        b->src = s;
        *ids = d;
        *srcbuf = s;
        return;
    }
    /* `src <sep>` left padded; a model with a text template has its separator in src */
    int sep = mt_model_config_prompt_sep(cfg), T = longest + (sep >= 0);
    int32_t *d = mt_xmalloc((size_t)n * T * sizeof *d);
    for (int i = 0; i < n; i++) {
        int32_t *row = d + (size_t)i * T;
        int pad = T - (sep >= 0) - src_len[i];
        for (int t = 0; t < pad; t++) row[t] = cfg->pad_id;
        if (src_len[i]) memcpy(row + pad, src[i], (size_t)src_len[i] * sizeof *row);
        if (sep >= 0) row[T - 1] = sep;
    }
    b->T = T;
    b->ids = d;
    *ids = d;
}

/* Build the prompts of the n sources, allocate the state and prefill it: c->logits rows
 * 0..n-1 then hold each sentence's first next-token logits. 0 or -1. */
static int decode_start(mt_decode_ctx *c, const int32_t *const *src, const int *src_len)
{
    mt_batch b;
    int32_t *ids, *srcbuf;
    build_prompts(c->m, src, src_len, c->n, &b, &ids, &srcbuf);
    /* the last generated token is never fed back: T + max_new - 1 positions */
    int max_T = b.T + c->max_new_all - 1;
    int max_S = mt_model_is_encdec(c->m) ? b.S : 0;
    int rows = c->n * c->K;
    c->st = mt_decode_state_new(c->m, rows, max_T, max_S);
    c->logits = c->st ? mt_decode_state_logits(c->st) : NULL;
    int rc = c->logits ? mt_model_prefill(c->m, c->st, &b, c->logits) : -1;
    free(ids);
    free(srcbuf);
    return rc;
}

static int check_opts(const mt_model *m, const mt_decode_opts *o, int n);

int mt_decode_reserve(mt_model *m, const int32_t *const *src, const int *src_len, int n,
                      const mt_decode_opts *o)
{
    if (check_opts(m, o, n)) return -1;
    if (n == 0) return 0;
    int max_new = 0;
    for (int i = 0; i < n; i++) {
        int k = mt_decode_max_new(m, src_len[i], o);
        if (k < 0) return -1;
        if (k > max_new) max_new = k;
    }
    mt_batch b;
    int32_t *ids, *srcbuf;
    build_prompts(m, src, src_len, n, &b, &ids, &srcbuf);
    /* the state decode_start makes; one whose caches alone are past what the model may keep
     * would only be freed again */
    int S = mt_model_is_encdec(m) ? b.S : 0, rows = n * o->beam, max_T = b.T + max_new - 1;
    int rc = 0;
    if (mt_model_decode_state_bytes(m, rows, max_T, S) <= mt_model_decode_workspace_limit(m)) {
        mt_decode_state *st = mt_decode_state_new(m, rows, max_T, S);
        rc = st ? mt_decode_state_reserve(st, n, b.T, S) : -1;
        mt_decode_state_free(st);
    }
    free(ids);
    free(srcbuf);
    return rc;
}

static int check_opts(const mt_model *m, const mt_decode_opts *o, int n)
{
    int V = mt_model_get_config(m)->vocab_size;
    if (o->vocab_limit < 0 || o->vocab_limit > V)
        return mt_error("vocabulary limit %d is outside 0..%d", o->vocab_limit, V);
    if (o->vocab_limit > 0 && o->vocab_limit <= mt_model_get_config(m)->eos_id)
        return mt_error("vocabulary limit %d excludes <eos>", o->vocab_limit);
    if (o->vocab_limit > 0) V = o->vocab_limit;
    if (o->beam < 1 || o->beam > MT_DECODE_MAX_BEAM)
        return mt_error("beam size %d is outside 1..%d", o->beam, MT_DECODE_MAX_BEAM);
    /* the first step draws 2K candidates from one beam's tokens, <pad> excluded */
    if (o->beam > 1 && 2 * o->beam + 1 > V)
        return mt_error("beam size %d needs a vocabulary of at least %d tokens (%d here)", o->beam,
                        2 * o->beam + 1, V);
    if (!isfinite(o->length_penalty))
        return mt_error("length penalty %g is not a finite number", o->length_penalty);
    if (n < 0 || (size_t)n * (size_t)o->beam > MAX_ROWS)
        return mt_error("%d sentences x %d beams is more than %d decoding rows", n, o->beam,
                        MAX_ROWS);
    return 0;
}

int mt_decode(mt_model *m, const int32_t *const *src, const int *src_len, int n,
              const mt_decode_opts *o, mt_decode_result *res)
{
    memset(res, 0, sizeof *res);
    res->failed_input = -1;
    double t0 = mt_now_s();
    if (check_opts(m, o, n)) return -1;
    if (n == 0) return 0;
    mt_decode_ctx c = {
        .m = m,
        .o = o,
        .n = n,
        .K = o->beam,
        .t0 = t0,
        .res = res,
        .hf = hf_semantics(m, o),
        /* Marian's configs hold forced_eos_token_id = eos (transformer.c checks it); the
         * decoder-only ones (MambaConfig, GPTNeoXConfig, LlamaConfig) have none */
        .forced_eos = hf_semantics(m, o) && mt_model_is_encdec(m),
        .V = mt_model_get_config(m)->vocab_size,
    };
    c.n_gen = o->vocab_limit > 0 ? o->vocab_limit : c.V;
    c.max_new = mt_xmalloc((size_t)n * sizeof *c.max_new);
    for (int i = 0; i < n; i++) {
        c.max_new[i] = mt_decode_max_new(m, src_len[i], o);
        if (c.max_new[i] < 0) {
            res->failed_input = i;
            free(c.max_new);
            return -1;
        }
        if (c.max_new[i] > c.max_new_all) c.max_new_all = c.max_new[i];
    }
    res->hyps = mt_xcalloc((size_t)n, sizeof *res->hyps);
    res->n = n;
    int rc;
    if (mt_decode_cancelled(&c)) {
        /* nothing decoded: every sentence ends empty */
        res->cancelled = 1;
        for (int i = 0; i < n; i++) mt_decode_emit(&c, i, NULL, 0, 1);
        rc = 0;
    } else {
        rc = decode_start(&c, src, src_len);
        if (rc == 0) rc = c.K == 1 ? mt_decode_greedy_run(&c) : mt_decode_beam_run(&c);
    }
    /* what decoding held: caches, and the working set of its largest pass */
    if (c.st) res->state_bytes = mt_decode_state_bytes_held(c.st);
    /* and the model's state one sentence (its K rows) holds, without the working set */
    if (c.st) res->model_state_bytes = mt_decode_state_model_bytes(c.st, c.K);
    mt_decode_state_free(c.st);
    free(c.max_new);
    res->seconds = mt_now_s() - t0;
    if (rc) mt_decode_result_free(res);
    for (int i = 0; i < res->n; i++)
        res->tokens += (size_t)res->hyps[i].n_ids + (size_t)res->hyps[i].finished;
    return rc;
}
