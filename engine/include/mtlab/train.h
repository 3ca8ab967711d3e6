/* Training runs: `mtlab train CONFIG.lua` fills an mt_train_config (app/ reads the Lua table),
 * and mt_train_run does the rest — data, model, AdamW with an inverse-sqrt schedule, gradient
 * accumulation, validation, atomic checkpoints, bit-exact resume.
 *
 * A run lives in its directory (runs/NAME/):
 *   log.jsonl          one JSON object per log interval and per validation
 *   checkpoint/        the latest checkpoint: a model bundle (config.json, model.safetensors,
 *                      tokenizer.model) plus trainer.safetensors (AdamW moments) and
 *                      trainer.json (step, epoch, position in the epoch, config fingerprint)
 *   best/              the bundle with the best validation BLEU so far
 *   steps/STEP/        with keep_every: the bundle of every keep_every-th step, kept
 * Everything the run does is a function of the config and its seed, so a run resumed from a
 * checkpoint produces the same losses as one that never stopped. */
#ifndef MTLAB_TRAIN_H
#define MTLAB_TRAIN_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "mtlab/model.h"
#include "mtlab/traindata.h"

/* The most micro-batches one optimiser step gathers (accum). */
#define MT_TRAIN_MAX_ACCUM 64

typedef struct {
    char name[128]; /* run name */
    char run_dir[512]; /* default runs/NAME */
    mt_model_config model; /* architecture and sizes (a preset plus overrides) */

    /* data: a dataset directory (mtlab/dataset.h) or aligned text files, and the tokenizer */
    char dataset[512]; /* "": the files below; else they (and the tokenizer, when not
                        * given) come from DIR/{train,valid}.{src_lang,tgt_lang} */
    char src_lang[36], tgt_lang[36]; /* the direction (the dataset's; default es, en) */
    char train_src[512], train_tgt[512];
    char valid_src[512], valid_tgt[512];
    char tokenizer[512]; /* sentencepiece .model; copied into every saved bundle */
    int max_len; /* ids per side, longer sides are cut (paper: 512) */
    int cat_n; /* CAT-N: 0/1 off, N >= 2 concatenates N pairs */
    int cat_min; /* CAT-N: 2..N-1 joins a drawn cat_min..N pairs instead (0: exactly N) */
    double cat_keep; /* CAT-N: probability a pair stays alone (0.5) */
    double
        name_substitution; /* probability a name shared verbatim by a training pair is replaced
                            * by a gazetteer name, per name and epoch (0: off; docs/data.md §8) */
    char gazetteer[512]; /* the names to substitute with, one per line */

    /* optimisation */
    size_t max_tokens; /* padded tokens per side per micro-batch (mt_batch_budget) */
    int accum; /* micro-batches per optimiser step, 1..MT_TRAIN_MAX_ACCUM */
    double lr; /* peak learning rate */
    long warmup; /* warm-up steps (0: HF timescale form, see mt_lr_inverse_sqrt) */
    double weight_decay, beta1, beta2, eps;
    float label_smoothing;
    long max_steps; /* stop after this many optimiser steps */
    uint64_t seed;
    char init[512]; /* a bundle whose weights a new run starts from (its architecture
                     * and sizes must be the config's), or "": fresh weights */
    long init_step; /* with init: the step the run counts on from (the learning-rate
                     * schedule's position); AdamW's moments start at zero */

    /* bookkeeping */
    int log_every; /* steps between log lines */
    int valid_every; /* steps between validations (0: only at the end) */
    int valid_bleu_lines; /* validation lines decoded greedily for BLEU (0: loss only) */
    int save_every; /* steps between checkpoints (0: only at the end) */
    int save_dtype_f16; /* 1: best/ and steps/ bundle weights in F16 (checkpoints stay F32) */
    int keep_every; /* steps between kept bundles steps/STEP (0: none), for averaging
                     * (mt_bundle_average) or a look back at a run */

    /* where it runs */
    char device[32]; /* "cpu" (default when empty), "cuda", "cuda:N" */
    int bf16; /* CUDA: matrix products in bf16, fp32 master weights and state */

    /* data parallelism (docs/distributed.md §3): how the ranks' gradients are summed */
    int overlap; /* 1 (default): bucket by bucket while backward goes on; 0: the whole block
                  * after backward (the naive reference; the same bits) */
    double bucket_mb; /* a bucket's size cap, MiB of fp32 gradients (25) */
    char grad_dtype[8]; /* "fp32" (default) or "bf16": what the gradients travel as */
} mt_train_config;

/* Defaults for every field but the model and the data paths. */
void mt_train_config_defaults(mt_train_config *cfg);
/* Check ranges and that the data and tokenizer files exist; errors name the key. */
int mt_train_config_check(const mt_train_config *cfg);

/* What the trainer reports while it runs (progress bars, the TUI job panel, log files). */
typedef struct {
    long step, max_steps;
    int epoch;
    double loss; /* mean target-token loss over the last log interval */
    double lr;
    double tokens_per_s; /* target tokens per second over the last interval */
    double elapsed_s; /* wall time of this process */
    double valid_loss; /* < 0 until the first validation */
    double valid_bleu; /* < 0 until the first validation with BLEU */
    int is_validation; /* 1 when this report follows a validation */
    int ranks; /* processes training together (mt_train_hooks.collective) */
    double step_s; /* mean wall time of a step over the last interval */
    double reduce_s; /* of it, the mean time in the gradient all-reduce */
} mt_train_progress;

typedef struct {
    void (*progress)(void *ud, const mt_train_progress *p);
    /* Messages for the user ("resumed from step 400", "saved checkpoint"). */
    void (*message)(void *ud, const char *text);
    void *ud;
    /* Set (e.g. by a SIGINT/SIGTERM handler) to stop: the trainer saves a checkpoint at the
     * next step boundary and returns 0. */
    volatile sig_atomic_t *stop;
    /* 1: the caller holds run_dir's lock (mt_run_lock) for the whole run; 0: mt_train_run takes
     * it itself and refuses to run when another process holds it. */
    int run_locked;
    /* Data parallelism (mtlab/collective.h; NULL: one process). Every rank calls mt_train_run
     * with the same config: each global batch (the plan of max_tokens x shards, where shards is
     * the number of ranks the run started with, kept in its checkpoints) is cut into shards,
     * rank r computes the gradient of shards r, r + N, ..., and the ranks' gradients are summed
     * in rank order, so a run gives the same losses on any N. Rank 0 alone takes the lock,
     * writes the log, validates and saves; the others only train. */
    struct mt_collective *collective;
} mt_train_hooks;

/* One process at a time works on a run directory: the trainer for its whole life, a job launcher
 * (app/jobs) while it checks and launches. It holds run_dir/train.lock with flock(2), which the
 * kernel releases when the process ends however it ends, so a killed trainer leaves no stale
 * lock; the file holds "PID trained" or "PID launched" for the message of whoever is refused. */
typedef enum { MT_RUN_TRAINER, MT_RUN_LAUNCHER } mt_run_holder;
/* Create run_dir if needed and lock it: the descriptor (close-on-exec), or -1 with
 * mt_last_error() "run DIR is already being trained by pid N". A lock held by a launcher (for
 * milliseconds) is waited for, up to 10 s; one held by a trainer is not. */
int mt_run_lock(const char *run_dir, mt_run_holder who);
/* Release a lock of mt_run_lock (fd < 0: nothing), even where forked children share it. */
void mt_run_unlock(int fd);

/* Train from scratch, or, with resume, continue from run_dir/checkpoint (the config must match
 * the one the checkpoint was made with, except max_steps and the bookkeeping intervals). */
int mt_train_run(const mt_train_config *cfg, int resume, const mt_train_hooks *hooks);

/* Length of example i as the model sees it (decoder-only: src + <sep> + tgt + <eos>, without
 * the <sep> where sep is 0: a prompt template's sources hold their separator; encoder-decoder:
 * the longer of `src <eos>` and `<bos> tgt <eos>`), for batch planning. */
int mt_example_packed_len(const mt_examples *e, size_t i, int encdec, int sep);
/* Pack examples (pairs or CAT-N joins) into a model batch following model.h's token
 * conventions; rows are example indices. A decoder-only model with a prompt template
 * (mc->prompt, whose corpus was loaded with mt_corpus_load_prompted) gets rows
 * `prompt tgt <eos>` and b->n_prompt. The arrays are malloc'd (mt_batch_free). */
void mt_batch_pack(mt_batch *b, int encdec, const mt_model_config *mc, const mt_corpus *c,
                   const mt_examples *e, const uint32_t *rows, int n_rows);
void mt_batch_free(mt_batch *b);

#endif
