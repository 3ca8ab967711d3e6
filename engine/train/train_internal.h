/* Pieces of the trainer shared between its files (not public API). */
#ifndef MTLAB_TRAIN_INTERNAL_H
#define MTLAB_TRAIN_INTERNAL_H

#include <stdio.h>

#include "mtlab/collective.h"
#include "mtlab/entities.h"
#include "mtlab/tokenizer.h"
#include "mtlab/train.h"

/* Where a run stands; saved in trainer.json. */
typedef struct {
    long step; /* optimiser steps done */
    int epoch; /* current epoch */
    size_t batch; /* next batch of the epoch plan */
    double best_bleu; /* best validation BLEU so far (-1: none) */
    int shards; /* each global batch is cut into this many shards (the ranks the run began
                 * with; 1 in checkpoints made before data parallelism) */
} train_state;

/* mkdir -p; errors name the path. */
int mkdir_p(const char *path);

/* ---- log.jsonl (run_log.c) */
typedef struct {
    int fd; /* -1: closed */
    char path[600];
} log_file;
/* A fresh log (resume_step < 0), or the log cut back to the records up to resume_step (*dropped:
 * the bytes cut). 0, or -1 with the file closed. */
int log_open(log_file *lf, const mt_train_config *cfg, long resume_step, long *dropped);
/* 0, or -1 when the line could not be written whole (the run stops: it would go on unlogged). */
int log_step(log_file *lf, const mt_train_progress *p);
int log_validation(log_file *lf, const mt_train_progress *p);
void log_close(log_file *lf);

/* What every saved bundle gets from the training corpus besides weights: its entity
 * frequencies (corpus_stats.tsv) and entity lexicon (entity_lexicon.tsv), so recall bins and
 * the workbench's entity marks work without the corpus (mtlab/entities.h). */
typedef struct {
    mt_corpus_stats *stats;
    mt_entity_lexicon *lexicon;
} train_entities;

/* ---- checkpoints (checkpoint.c) */
int checkpoint_exists(const mt_train_config *cfg);
/* The states checkpoint_save passes through; a crash leaves the run in one of them. */
typedef enum {
    CHECKPOINT_NEW_WRITTEN = 1, /* checkpoint.new/ complete, checkpoint/ untouched */
    CHECKPOINT_OLD_RENAMED, /* checkpoint/ renamed to checkpoint.old/ */
    CHECKPOINT_NEW_RENAMED, /* checkpoint.new/ renamed to checkpoint/, .old/ not yet removed */
} checkpoint_stage;
/* For tests: the save of step checkpoint_stop_step stops after checkpoint_stop_stage and fails,
 * leaving the run directory as a crash there would (stage 0: never). */
extern long checkpoint_stop_step;
extern checkpoint_stage checkpoint_stop_stage;
int checkpoint_save(const mt_model *m, const mt_train_config *cfg, const train_state *st,
                    const train_entities *ent);
mt_model *checkpoint_load(const mt_train_config *cfg, const mt_backend *be, train_state *st);
int save_best(const mt_model *m, const mt_train_config *cfg, const train_entities *ent);
/* run_dir/steps/STEP: the bundle a run keeps every keep_every steps */
int save_kept(const mt_model *m, const mt_train_config *cfg, const train_entities *ent, long step);
/* The entity recogniser of the training targets, picked by the target file's suffix. */
mt_ner_lang train_target_lang(const mt_train_config *cfg);
/* Entity frequencies (the target file's suffix picks the recogniser) and lexicon of the
 * training pairs. 0, or -1 with both left NULL. */
int train_corpus_stats(const mt_train_config *cfg, train_entities *ent);
void train_entities_free(train_entities *ent);

/* ---- validation BLEU: greedy decoding of the first valid_bleu_lines pairs (validate.c) */
int validate_bleu(mt_model *m, const mt_tokenizer *tok, const mt_train_config *cfg, double *bleu);

/* ---- the gradient all-reduce overlapped with backward, bucket by bucket (grad_buckets.c) */
typedef struct grad_buckets grad_buckets;
/* The buckets of m's gradient block (at most bucket_mb MiB each), reduced over coll: queued
 * on its stream when it has all_reduce_sum_async (fp32 only), else by a thread (host memory;
 * coll->any_thread); NULL with mt_last_error() on failure. */
grad_buckets *grad_buckets_open(mt_collective *coll, mt_model *m, double bucket_mb, int bf16);
int grad_buckets_count(const grad_buckets *b);
/* mt_step_opts.grads_ready for the rank's last backward of a step (ud: the grad_buckets). */
void grad_buckets_ready(void *ud, int range);
/* Hands over the buckets not yet handed over and waits for all (queued: the backend work
 * queued next waits, the host does not); *wait_s gets the time waited, *busy_s the reducing
 * thread's time. */
int grad_buckets_finish(grad_buckets *b, double *wait_s, double *busy_s);
void grad_buckets_close(grad_buckets *b);

#endif
