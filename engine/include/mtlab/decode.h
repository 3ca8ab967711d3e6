/* Translation decoding: greedy and beam search over the model's incremental decoding API
 * (mt_model_prefill / mt_model_step / mt_decode_state_reorder in mtlab/model.h), batched over
 * several sentences, with tokens streamed to a callback as they are produced.
 *
 * Prompts (docs/decoding.md §2):
 *   decoder-only     `src <sep>`, LEFT padded with <pad> to the longest prompt of the batch;
 *   encoder-decoder  source `src <eos>` (right padded), decoder prefix <decoder_start_id>.
 * Sources are token ids without special tokens; results hold the generated ids without <eos>.
 * <pad> is never generated: the model masks it wherever it appears, so a generated <pad>
 * would be invisible to the full-sequence forward and the cached steps alike.
 *
 * Scores (both searches report the same quantity, so they can be compared):
 *   logprob = sum over generated tokens (and the final <eos> when one was emitted) of log p
 *   score   = logprob / generated_length ^ length_penalty
 * where generated_length counts the generated tokens including that <eos>. Hugging Face's
 * BeamSearchScorer, as ssm-mt calls it for decoder-only models, divides by the whole sequence
 * length, prompt and left pads included; we normalise by the generated length only, so a
 * score does not depend on the source length or on the batch it was decoded in.
 *
 * Beam search follows BeamSearchScorer with early_stopping = False: log-softmax, the top 2K
 * candidates of each sentence, a candidate ending in <eos> becomes a finished hypothesis when it
 * ranks among the top K (the K best finished hypotheses are kept), the K best others continue;
 * a sentence is done when it holds K finished hypotheses and the best candidate of the step,
 * normalised by the current length, cannot beat the worst of them; at the length limit the
 * running beams join the finished ones. The result is the best-scoring hypothesis. Width 1
 * is exactly greedy search; a wider beam usually scores better than greedy but need not: the
 * greedy path can be pruned by beams that lead early and end worse.
 *
 * A checkpoint from the Hugging Face hub (config.json without mtlab's "architecture": an
 * opus-mt model, a MambaForCausalLM or GPTNeoXForCausalLM as downloaded or given a prompt
 * template by hand, mt_model_config.hf_generate) decodes as transformers' generate() (4.50 and
 * later) does, early_stopping False, with a Marian config's bad_words_ids = [[pad]] and
 * forced_eos_token_id = eos (MT_SEARCH_HF; mtlab's own bundles decode with MT_SEARCH_MTLAB
 * unless asked otherwise; MT_SEARCH_AUTO, which every front end passes, picks):
 *   - the log-softmax runs over every id, <pad> and ids past vocab_limit included, which
 *     are then masked (mtlab normalises over the ids that may be generated);
 *   - the stopping test holds the worst finished hypothesis against the best *running* beam
 *     (mtlab: the best candidate of the step, which may be one that just ended);
 *   - at the length limit every running beam ends with a forced <eos> of log-probability 0,
 *     counted in its length (mtlab: they end there without one), where the config has
 *     forced_eos_token_id (Marian's; a decoder-only hub model's, GPT-NeoX or Mamba, has none:
 *     its beams end at the limit as they are). max_new_tokens is generate()'s
 *     max_new_tokens; asked for none, the max_length L of the model's generation config
 *     counts, for an encoder-decoder model, the decoder start and that <eos> (L - 2 new
 *     tokens), for a decoder-only one its prompt of P ids (L - P, a prompt of L or more is
 *     refused, as generate() refuses it); the default L = 20 allows 19 and 20 new tokens
 *     (generate() lengthens it by the prompt, within max_position_embeddings).
 * The generated ids are the same either way for greedy search. */
#ifndef MTLAB_DECODE_H
#define MTLAB_DECODE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "mtlab/model.h"
#include "mtlab/tokenizer.h"

#define MT_DECODE_DEFAULT_BEAM 5
#define MT_DECODE_MAX_BEAM 256
#define MT_DECODE_DEFAULT_BATCH 16 /* the paper's test batch size */

enum { MT_SEARCH_AUTO = 0, MT_SEARCH_MTLAB = 1, MT_SEARCH_HF = 2 };

/* What the stream callback receives. */
typedef struct {
    int sentence; /* index of the source in the call's input */
    const int32_t *tokens; /* the sentence's current best hypothesis (n_tokens ids, no <eos>);
                              greedy extends it by one token per event, beam search may
                              replace it when another beam takes the lead */
    int n_tokens;
    int32_t token; /* the newest token, tokens[n_tokens - 1]; -1 when n_tokens is 0 */
    int final; /* 1: the sentence is done and tokens is its result */
} mt_decode_event;

/* Called on the decoding thread, once per live sentence per step, then once with final = 1
 * for every sentence; the arrays are valid only during the call. */
typedef void (*mt_decode_callback)(void *user, const mt_decode_event *ev);

typedef struct {
    int beam; /* 1: greedy; K > 1: beam search with K beams */
    int max_new_tokens; /* 0: 2 * source tokens + 10 for each sentence, or where decoding
                           is generate()'s, what the max_length of its generation config
                           allows (above; docs/bundles.md §2.4, §3.1); either way capped by
                           what the model can hold (encoder-decoder: its positions) */
    float length_penalty; /* exponent of the generated length in the score (1.0) */
    int vocab_limit; /* > 0: only ids below it are generated (the tokenizer's pieces when
                        the model's vocabulary is padded past them); 0: every id */
    int semantics; /* MT_SEARCH_AUTO (0): as the model's config says; MT_SEARCH_MTLAB;
                      MT_SEARCH_HF (transformers' generate, above) */
    mt_decode_callback on_token; /* NULL: no streaming */
    void *user;
    const atomic_int *cancel; /* checked before every step; non-zero stops decoding and each
                                 sentence keeps its best hypothesis so far (NULL: never) */
} mt_decode_opts;

/* beam 5, default lengths, length penalty 1, no callback, no cancel flag. */
void mt_decode_opts_init(mt_decode_opts *o);

typedef struct {
    int32_t *ids; /* generated ids without <eos> (malloc'd, may be NULL when n_ids = 0) */
    int n_ids;
    char *text; /* the ids through the tokenizer (mt_translate), else NULL */
    double logprob; /* see the scores above */
    double score;
    int finished; /* 1: ended with <eos>; 0: stopped by the length limit or a cancel */
    double seconds; /* from the start of its batch's decoding to this sentence's end */
} mt_hypothesis;

typedef struct {
    mt_hypothesis *hyps; /* (n) in input order */
    int n;
    int cancelled; /* 1: the cancel flag stopped decoding */
    int steps; /* decoding steps after the prefills */
    size_t tokens; /* ids of the results, all sentences (<eos> included) */
    double seconds; /* wall-clock time of the whole call */
    size_t state_bytes; /* the largest decoding state used: caches for every row and the
                         * working set of its passes (mt_decode_state_bytes_held) */
    size_t model_state_bytes; /* the model's own state for one sentence when decoding ended,
                               * without any working set: its KV caches at the length decoded (the
                               * longest sentence's), Mamba conv + SSM states, retention states, for
                               * its beam's rows (mt_decode_state_model_bytes); a recurrent model's
                               * is the same whatever the length and the number of sentences */
    int failed_input; /* on failure, the input at fault or -1 (the message says why) */
} mt_decode_result;

void mt_decode_result_free(mt_decode_result *r);

/* Decode n sources at once: one decoding state with n rows (greedy) or n * K rows (beam; one
 * prefill row per sentence expanded into its beams). src[i] holds src_len[i] ids. 0 or -1;
 * a source the model cannot take sets res->failed_input, and the message says what is wrong
 * with it without naming it. */
int mt_decode(mt_model *m, const int32_t *const *src, const int *src_len, int n,
              const mt_decode_opts *o, mt_decode_result *res);

/* Translate n UTF-8 texts: encode and check them all (mt_sources_encode), sort by length,
 * decode batches of up to batch sentences (0: MT_DECODE_DEFAULT_BATCH) and decode the ids back
 * to text. Only ids the tokenizer knows are generated (vocab_limit = its size). Results and
 * callback indices are in input order. A cancel leaves the sentences of later batches empty
 * and unfinished. 0 or -1: res->failed_input names a bad input, and the message then starts
 * "input N: ". */
int mt_translate(mt_model *m, const mt_tokenizer *tok, const char *const *texts, int n, int batch,
                 const mt_decode_opts *o, mt_decode_result *res);

/* Encode one source text as the model's prompt takes it: put in its text template first
 * (mt_model_config.prompt, "{src}<sep>"), or as it is for a model whose prompt is `src <sep>`
 * in ids (mt_decode appends <sep>). As mt_tokenizer_encode: 0 or -1, *ids malloc'd. */
int mt_source_encode(const mt_model *m, const mt_tokenizer *tok, const char *text, int **ids,
                     size_t *n);

/* Sources encoded once, for callers that check every input before translating any (a file
 * whose line 900 is bad fails before line 1 is printed) and then translate in pieces. */
typedef struct {
    int32_t **ids; /* (n) source ids without special tokens, len[i] each */
    int *len; /* (n) */
    int n;
} mt_sources;

/* Encode texts[0..n) with tok and check that m takes each as a source under o (its length
 * limits, mt_decode_max_new). 0, or -1 with *bad the text at fault, *s empty, and a message
 * that says what is wrong with that text without naming it ("invalid UTF-8 at byte 3 (0xFF)"),
 * so the caller can name it its own way ("in.txt:7: ..."). */
int mt_sources_encode(mt_sources *s, const mt_model *m, const mt_tokenizer *tok,
                      const char *const *texts, int n, const mt_decode_opts *o, int *bad);
void mt_sources_free(mt_sources *s);

/* mt_translate on sources encoded with tok: src[i] holds src_len[i] ids (a window of an
 * mt_sources). On failure res->failed_input names the source at fault and the message does
 * not. */
int mt_translate_ids(mt_model *m, const mt_tokenizer *tok, const int32_t *const *src,
                     const int *src_len, int n, int batch, const mt_decode_opts *o,
                     mt_decode_result *res);

/* The token greedy search takes from a row of logits x[0..V): the first index of the maximum
 * except skip (skip outside 0..V-1: none), as torch.argmax picks it; NaN is never chosen. One
 * vectorised pass; host memory. */
int32_t mt_argmax(const float *x, int V, int skip);

/* Make and free the decoding state mt_decode would make for these sources under o, its working
 * set and reorder scratch taken too, so the model keeps that memory for the calls that follow
 * (mtlab/model.h, decode workspace): a caller decoding batches shortest first reserves for its
 * longest batch once, and no batch allocates. 0, or -1 where mt_decode would fail too. */
int mt_decode_reserve(mt_model *m, const int32_t *const *src, const int *src_len, int n,
                      const mt_decode_opts *o);

/* The number of new tokens sentence of src_len ids may generate under o, or -1 when the model
 * cannot take such a source (mt_last_error says why). */
int mt_decode_max_new(const mt_model *m, int src_len, const mt_decode_opts *o);

/* ---------------------------------------------------------------- naive references
 * One sentence, no caches: every new token recomputes the whole forward pass
 * (mt_model_forward) over prompt + tokens so far. Slow, O(T^2) forwards; the tests hold the
 * fast searches to them. max_new as mt_decode_max_new gives it. */
int mt_decode_greedy_naive(mt_model *m, const int32_t *src, int src_len, int max_new,
                           float length_penalty, mt_hypothesis *out);
int mt_decode_beam_naive(mt_model *m, const int32_t *src, int src_len, int max_new, int beam,
                         float length_penalty, mt_hypothesis *out);

/* Release what a hypothesis holds. */
void mt_hypothesis_clear(mt_hypothesis *h);

#endif
