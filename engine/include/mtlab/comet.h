/* COMET (Rei et al. 2020/2022) as Unbabel's wmt22-comet-da computes it: a regression metric
 * over an XLM-R encoder (engine/models/xlmr.h), on the CPU or CUDA backend.
 *
 * For each segment, source, hypothesis and reference are encoded separately, each as
 *   <s> pieces </s>  (XLM-R's fairseq ids: <s>=0 <pad>=1 </s>=2 <unk>=3, piece = spm id + 1),
 *   truncated to P - 4 ids (510 for XLM-R's 514 positions) as COMET's tokenizer call does.
 * Sentence embedding (hparams "layer: mix", "pool: avg"):
 *   w = transform(s_0 .. s_L)  transform = sparsemax or softmax ("layer_transformation";
 *                              "sparsemax_patch" is softmax, as COMET >= 2.2.4 reads it)
 *   e = gamma * sum_l w_l * X_l          X_l the hidden states, l = 0 the embeddings; with
 *                                        "layer_norm: true" each X_l is first normalised over
 *                                        all the sentence's real positions and channels
 *   emb = mean of e over the real positions ("avg"), or e at <s> ("cls")
 * Score: the estimator, Linear -> act -> ... -> Linear (1), on
 *   [h, r, h*r, |h-r|, h*s, |h-s|]  (h, r, s: the embeddings of hypothesis, reference, source)
 * The system score is the mean of the segment scores (both on COMET's own scale, about 0..1
 * for wmt22-comet-da; x 100 only in the significance tests, below).
 *
 * A model directory holds what Unbabel releases plus XLM-R's tokenizer:
 *   hparams.yaml                  the RegressionMetric's hyper-parameters
 *   checkpoints/model.ckpt        the Lightning checkpoint (its "state_dict"), or
 *   model.safetensors             the same state_dict as safetensors (read first when present)
 *   sentencepiece.bpe.model       xlm-roberta-large's tokenizer (not in Unbabel's download)
 *   config.json                   optional: xlm-roberta's config (heads, layer_norm_eps);
 *                                 without it heads = C / 64 and eps = 1e-5, XLM-R's own
 * Tests: tests/unit/test_comet.c against unbabel-comet on tests/fixtures/comet/. */
#ifndef MTLAB_COMET_H
#define MTLAB_COMET_H

#include <stddef.h>
#include <stdint.h>

#include "mtlab/backend.h"
#include "mtlab/significance.h"

#define MT_COMET_MAX_HIDDEN 8

typedef enum { MT_COMET_POOL_AVG, MT_COMET_POOL_CLS, MT_COMET_POOL_DEFAULT } mt_comet_pool;

typedef struct {
    /* the XLM-R encoder */
    int V, C, H, F, L, P; /* vocabulary, hidden, heads, FFN width, layers, position rows */
    float eps;
    /* the sentence embedding */
    int layer; /* -1: "mix" of all L + 1 hidden states; else that hidden state alone */
    int sparsemax; /* 1: sparsemax, 0: softmax over the mix's scalars */
    int layer_norm; /* normalise each hidden state before mixing */
    mt_comet_pool pool;
    /* the estimator: n_hidden hidden layers, then one output */
    int n_hidden;
    int hidden[MT_COMET_MAX_HIDDEN];
    mt_act act;
    int final_act; /* -1: none, else an mt_act */
} mt_comet_config;

/* wmt22-comet-da's shapes: XLM-R large (V 250002, C 1024, H 16, F 4096, L 24, P 514), mix
 * with sparsemax, avg pooling, estimator 3072 -> 1024 with Tanh. */
mt_comet_config mt_comet_config_wmt22(void);

typedef struct mt_comet mt_comet;

/* Read a model directory (above) onto be; NULL with mt_last_error() naming the file, line or
 * tensor at fault. */
mt_comet *mt_comet_open(const char *dir, const mt_backend *be);
/* A model of cfg's shapes with random weights (N(0, 0.02), layer norms 1, mix scalars 0),
 * no tokenizer: for benchmarks through mt_comet_score_ids. */
mt_comet *mt_comet_random(const mt_comet_config *cfg, const mt_backend *be, uint64_t seed);
void mt_comet_free(mt_comet *m);
const mt_comet_config *mt_comet_config_of(const mt_comet *m);

/* Segment scores of n (source, hypothesis, reference) triples (UTF-8, one segment each):
 * scores (n) host. 0, or -1 (invalid UTF-8 naming the side and segment, out of memory). */
int mt_comet_score(mt_comet *m, const char *const *src, const char *const *hyp,
                   const char *const *ref, size_t n, float *scores);

/* The same over ids already in the model's numbering, each sequence with its <s> and </s>
 * (what mt_comet_encode returns). */
typedef struct {
    const int32_t *ids;
    int len;
} mt_comet_seq;
int mt_comet_score_ids(mt_comet *m, const mt_comet_seq *src, const mt_comet_seq *hyp,
                       const mt_comet_seq *ref, size_t n, float *scores);
/* text -> <s> pieces </s> in the model's ids, truncated as COMET does; *ids malloc'd. */
int mt_comet_encode(const mt_comet *m, const char *text, int32_t **ids, int *len);

/* COMET for the paired significance tests: per-segment statistics [score, 1]; the corpus
 * score is 100 * sums[0] / sums[1], the mean segment score x 100 (84.56 for 0.8456), on the
 * 0..100 scale of the tests' other metrics and of their tables' two decimals. */
#define MT_SIG_COMET_STATS 2
void mt_sig_comet_row(double *row, float score);
mt_sig_metric mt_sig_comet_metric(void);

#endif
