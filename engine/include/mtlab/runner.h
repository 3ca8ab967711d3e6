/* A model bundle opened to run: its model on a device, its tokenizer and, when asked for, the
 * training-set entity frequencies stored beside it. The one way the CLI, the workbench,
 * `mtlab eval` and Lua open a bundle to translate with:
 *
 *   mt_runner *r = mt_runner_open("models/mamba-small", "cuda:0", 0);
 *   mt_translate(r->model, r->tok, texts, n, 0, &opts, &res);          (mtlab/decode.h)
 *   mt_runner_close(r);
 *
 * A CUDA backend binds its stream and memory pool to the thread that opens it, so every call
 * on r->model must come from the thread that called mt_runner_open (mtlab/worker.h runs a
 * runner on a thread of its own). */
#ifndef MTLAB_RUNNER_H
#define MTLAB_RUNNER_H

#include <stddef.h>

#include "mtlab/entities.h"
#include "mtlab/model.h"
#include "mtlab/tokenizer.h"

typedef struct {
    char *dir; /* the bundle directory, as given */
    const mt_backend *backend; /* the device's backend ("cpu", "cuda:0"...) */
    mt_model *model;
    mt_tokenizer *tok; /* the bundle's tokenizer.model */
    mt_corpus_stats *stats; /* corpus_stats.tsv with MT_RUNNER_STATS when the bundle has
                               one; NULL otherwise */
    size_t params; /* trainable parameters */
    double load_seconds; /* wall time of mt_runner_open */
} mt_runner;

enum {
    MT_RUNNER_STATS = 1, /* also read corpus_stats.tsv when the bundle has one (a file that
                            cannot be read fails the open: "PATH:LINE: problem") */
    MT_RUNNER_INT8 = 2, /* run the linear layers in int8 (mt_model_set_precision; a device
                           without int8 kernels fails the open, naming it) */
    MT_RUNNER_BF16 = 4, /* the same in bf16 (a CUDA device's) */
};
/* MT_RUNNER_INT8 for "int8", MT_RUNNER_BF16 for "bf16", 0 for "fp32" (or NULL); -1 +
 * mt_error for anything else. */
int mt_runner_precision_flags(const char *precision);
/* The precision such flags ask for (MT_PRECISION_FP32 for neither); its name is
 * mt_precision_name's. */
mt_precision mt_runner_precision(unsigned flags);

/* Open the bundle directory dir on device ("cpu", "cuda", "cuda:N"; NULL: cpu). NULL with the
 * reason: the device cannot be opened (naming it), the bundle is missing a file or holds a bad
 * one (naming it), the model does not fit in the device's memory. */
mt_runner *mt_runner_open(const char *dir, const char *device, unsigned flags);
/* NULL is fine. Call it on the thread that opened r. */
void mt_runner_close(mt_runner *r);

#endif
