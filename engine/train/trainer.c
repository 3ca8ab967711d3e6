/* The training loop: epochs of token-budget batches, gradient accumulation, AdamW under an
 * inverse-sqrt schedule, periodic logging, validation and checkpoints (checkpoint.c). */
#include "mtlab/clock.h"
#include "mtlab/collective.h"
#include "mtlab/device.h"
#include "mtlab/dataset.h"
#include "mtlab/error.h"
#include "mtlab/train.h"
#include "train_internal.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void mt_train_config_defaults(mt_train_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    snprintf(cfg->name, sizeof cfg->name, "run");
    snprintf(cfg->src_lang, sizeof cfg->src_lang, "%s", MT_DEFAULT_SRC_LANG);
    snprintf(cfg->tgt_lang, sizeof cfg->tgt_lang, "%s", MT_DEFAULT_TGT_LANG);
    cfg->max_len = 256;
    cfg->cat_keep = 0.5;
    cfg->max_tokens = 4096;
    cfg->accum = 1;
    cfg->lr = 1e-3;
    cfg->warmup = 1000;
    cfg->weight_decay = 0.001;
    cfg->beta1 = 0.9;
    cfg->beta2 = 0.98;
    cfg->eps = 1e-8;
    cfg->max_steps = 10000;
    cfg->seed = 1;
    cfg->log_every = 50;
    cfg->valid_every = 1000;
    cfg->valid_bleu_lines = 200;
    cfg->save_every = 1000;
    cfg->overlap = 1;
    cfg->bucket_mb = 25;
    snprintf(cfg->grad_dtype, sizeof cfg->grad_dtype, "fp32");
}

static int file_readable(const char *key, const char *path)
{
    struct stat st;
    if (!path[0]) return mt_error("train config: '%s' is not set", key);
    if (stat(path, &st) != 0)
        return mt_error("train config: %s = \"%s\": %s", key, path, strerror(errno));
    return 0;
}

int mt_train_config_check(const mt_train_config *cfg)
{
    if (!cfg->name[0]) return mt_error("train config: 'name' is empty");
    if (strchr(cfg->name, '/'))
        return mt_error("train config: name \"%s\" must not contain '/'", cfg->name);
    if (mt_model_config_check(&cfg->model) != 0) return mt_error_context("train config: model");
    if (file_readable("train_src", cfg->train_src) || file_readable("train_tgt", cfg->train_tgt) ||
        file_readable("tokenizer", cfg->tokenizer))
        return -1;
    if ((cfg->valid_src[0] || cfg->valid_tgt[0]) &&
        (file_readable("valid_src", cfg->valid_src) || file_readable("valid_tgt", cfg->valid_tgt)))
        return -1;
    if (cfg->max_len < 4)
        return mt_error("train config: max_len must be >= 4, got %d", cfg->max_len);
    if (cfg->max_tokens < (size_t)cfg->max_len * 2 + 4)
        return mt_error(
            "train config: max_tokens (%zu) must hold at least one example of max_len %d",
            cfg->max_tokens, cfg->max_len);
    if (cfg->accum < 1 || cfg->accum > MT_TRAIN_MAX_ACCUM)
        return mt_error("train config: accum must be in 1..%d, got %d", MT_TRAIN_MAX_ACCUM,
                        cfg->accum);
    if (!(cfg->lr > 0) || !(cfg->lr < 1))
        return mt_error("train config: lr must be in (0, 1), got %g", cfg->lr);
    if (cfg->warmup < 0) return mt_error("train config: warmup must be >= 0");
    if (cfg->weight_decay < 0 || cfg->beta1 < 0 || cfg->beta1 >= 1 || cfg->beta2 < 0 ||
        cfg->beta2 >= 1 || !(cfg->eps > 0))
        return mt_error(
            "train config: AdamW needs weight_decay >= 0, 0 <= beta1, beta2 < 1, eps > 0");
    if (cfg->label_smoothing < 0 || cfg->label_smoothing >= 1)
        return mt_error("train config: label_smoothing must be in [0, 1)");
    if (cfg->max_steps < 1) return mt_error("train config: max_steps must be >= 1");
    if (strcmp(cfg->grad_dtype, "fp32") != 0 && strcmp(cfg->grad_dtype, "bf16") != 0)
        return mt_error("train config: grad_dtype = \"%s\": it must be \"fp32\" or \"bf16\"",
                        cfg->grad_dtype);
    if (!(cfg->bucket_mb > 0) || cfg->bucket_mb > 4096)
        return mt_error("train config: bucket_mb must be in (0, 4096], got %g", cfg->bucket_mb);
    if (cfg->cat_n < 0 || cfg->cat_n > 64) return mt_error("train config: cat_n must be in 0..64");
    if (cfg->cat_min != 0 && (cfg->cat_min < 2 || cfg->cat_min > cfg->cat_n))
        return mt_error(
            "train config: cat_min = %d: it must be 0 (exactly cat_n pairs) or in 2..cat_n (%d)",
            cfg->cat_min, cfg->cat_n);
    if (cfg->cat_keep < 0 || cfg->cat_keep > 1)
        return mt_error("train config: cat_keep must be in [0, 1]");
    if (!(cfg->name_substitution >= 0 && cfg->name_substitution <= 1))
        return mt_error("train config: name_substitution must be in [0, 1], got %g",
                        cfg->name_substitution);
    if (cfg->name_substitution > 0 && file_readable("gazetteer", cfg->gazetteer))
        return mt_error_context("train config: name_substitution = %g needs a gazetteer",
                                cfg->name_substitution);
    if (cfg->model.prompt[0] && cfg->cat_n >= 2)
        return mt_error(
            "train config: cat_n = %d with the prompt template \"%s\": CAT-N joins sources, a "
            "template takes one (leave cat_n out)",
            cfg->cat_n, cfg->model.prompt);
    if (cfg->model.prompt[0] && cfg->name_substitution > 0)
        return mt_error(
            "train config: name_substitution = %g with the prompt template \"%s\" is not supported "
            "(leave name_substitution out)",
            cfg->name_substitution, cfg->model.prompt);
    if (cfg->init_step < 0 || cfg->init_step >= cfg->max_steps)
        return mt_error("train config: init_step must be in 0 .. max_steps - 1 (%ld), got %ld",
                        cfg->max_steps - 1, cfg->init_step);
    if (cfg->init[0] && file_readable("init", cfg->init)) return -1;
    if (cfg->init_step > 0 && !cfg->init[0])
        return mt_error("train config: init_step = %ld needs init (the bundle to start from)",
                        cfg->init_step);
    if (cfg->log_every < 1) return mt_error("train config: log_every must be >= 1");
    if (cfg->valid_every < 0 || cfg->save_every < 0 || cfg->keep_every < 0 ||
        cfg->valid_bleu_lines < 0)
        return mt_error(
            "train config: valid_every, save_every, keep_every and valid_bleu_lines must be >= 0");
    return 0;
}

static void say(const mt_train_hooks *hooks, const char *fmt, ...) MT_PRINTF(2, 3);
static void say(const mt_train_hooks *hooks, const char *fmt, ...)
{
    if (!hooks || !hooks->message) return;
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    hooks->message(hooks->ud, buf);
}

/* One epoch's data plan. */
typedef struct {
    mt_corpus named; /* the epoch's name-substituted corpus (empty without a pool) */
    const mt_corpus *corpus; /* what the examples index: &named, or the loaded corpus */
    mt_examples ex;
    mt_batch_plan plan;
    int *len;
} epoch_plan;

/* np, when not NULL, substitutes names first (docs/data.md §8). A batch holds max_tokens x
 * shards (one shard per rank). 0 or -1. */
static int epoch_plan_build(epoch_plan *ep, const mt_train_config *cfg, const mt_corpus *c,
                            const mt_name_pool *np, const mt_tokenizer *tok, int encdec, int epoch,
                            int shards)
{
    memset(ep, 0, sizeof *ep);
    ep->corpus = c;
    if (np) {
        if (mt_corpus_substitute_names(&ep->named, c, np, tok, cfg->max_len, cfg->seed,
                                       (uint64_t)epoch, NULL) != 0)
            return -1;
        ep->corpus = &ep->named;
    }
    c = ep->corpus;
    mt_examples_build(&ep->ex, c, cfg->cat_n, cfg->cat_min, cfg->cat_keep, cfg->max_len, cfg->seed,
                      (uint64_t)epoch);
    ep->len = mt_xmalloc(ep->ex.n * sizeof *ep->len);
    int sep = mt_model_config_prompt_sep(&cfg->model) >= 0;
    for (size_t i = 0; i < ep->ex.n; i++)
        ep->len[i] = mt_example_packed_len(&ep->ex, i, encdec, sep);
    mt_batch_plan_build(&ep->plan, ep->len, ep->ex.n,
                        mt_batch_budget(cfg->max_tokens * (size_t)shards, encdec), cfg->seed,
                        (uint64_t)epoch);
    return 0;
}

static void epoch_plan_free(epoch_plan *ep)
{
    mt_corpus_free(&ep->named);
    mt_examples_free(&ep->ex);
    mt_batch_plan_free(&ep->plan);
    free(ep->len);
    memset(ep, 0, sizeof *ep);
}

static void epoch_plan_delete(epoch_plan *ep)
{
    if (!ep) return;
    epoch_plan_free(ep);
    free(ep);
}

/* An epoch's plan of its own, which a step holding its last batches keeps while the next
 * epoch's is made (NULL: mt_last_error). */
static epoch_plan *epoch_plan_new(const mt_train_config *cfg, const mt_corpus *c,
                                  const mt_name_pool *np, const mt_tokenizer *tok, int encdec,
                                  int epoch, int shards)
{
    epoch_plan *ep = mt_xmalloc(sizeof *ep);
    if (epoch_plan_build(ep, cfg, c, np, tok, encdec, epoch, shards) == 0) return ep;
    epoch_plan_delete(ep);
    return NULL;
}

static void epoch_plans_delete(epoch_plan **eps, int *n)
{
    for (int i = 0; i < *n; i++) epoch_plan_delete(eps[i]);
    *n = 0;
}

/* Target tokens the loss counts for one example: the target and its <eos>. */
static size_t loss_tokens(const mt_examples *e, const uint32_t *rows, int n)
{
    size_t t = 0;
    for (int r = 0; r < n; r++) t += (size_t)e->tgt_len[rows[r]] + 1;
    return t;
}

/* Mean validation loss over the whole valid set (no dropout). */
static int valid_loss(mt_model *m, const mt_train_config *cfg, const mt_corpus *vc, double *out)
{
    int encdec = mt_model_is_encdec(m);
    epoch_plan ep;
    mt_train_config plain = *cfg;
    plain.cat_n = 0;
    epoch_plan_build(&ep, &plain, vc, NULL, NULL, encdec, 0, 1);
    double sum = 0;
    size_t count = 0;
    mt_step_opts opts = {0};
    int rc = 0;
    for (size_t b = 0; b < ep.plan.n_batches && rc == 0; b++) {
        mt_batch batch;
        const uint32_t *rows = ep.plan.order + ep.plan.start[b];
        mt_batch_pack(&batch, encdec, &cfg->model, vc, &ep.ex, rows, ep.plan.rows[b]);
        double loss;
        size_t n;
        rc = mt_model_loss(m, &batch, &opts, &loss, &n);
        sum += loss * (double)n;
        count += n;
        mt_batch_free(&batch);
    }
    epoch_plan_free(&ep);
    *out = count ? sum / (double)count : 0;
    return rc;
}

/* The config's model with the weights of the bundle cfg->init: the same architecture, the same
 * tensors by name and shape, and the same head count and window (which shape no tensor but
 * change what the weights mean); dropout and the initialisers' settings are the config's own. */
static mt_model *model_from_init(const mt_train_config *cfg, const mt_backend *be)
{
    mt_model *b = mt_model_load(cfg->init, be, 0);
    if (!b) {
        mt_error_context("train config: init = \"%s\"", cfg->init);
        return NULL;
    }
    char name[600];
    snprintf(name, sizeof name, "train config: init = \"%s\"", cfg->init);
    mt_model *m = mt_model_create(&cfg->model, be, cfg->seed);
    if (m && mt_model_check_same_layout(m, "the config's", b, name) != 0) {
        mt_model_free(m);
        m = NULL;
    }
    if (m)
        be->copy(mt_model_params(m), mt_model_params(b),
                 mt_model_param_block_size(m) * sizeof(float));
    mt_model_free(b);
    return m;
}

/* 1 when any rank was asked to stop (so all stop at the same step), 0 when none; -1 on error. */
static int stop_agreed(mt_collective *coll, const mt_train_hooks *hooks)
{
    int mine = hooks && hooks->stop && *hooks->stop;
    if (coll->size == 1) return mine;
    int *all = mt_xmalloc((size_t)coll->size * sizeof *all);
    int rc = coll->all_gather(coll, &mine, all, sizeof mine) != 0 ? -1 : 0;
    for (int r = 0; r < coll->size && rc == 0; r++) rc = all[r] != 0;
    free(all);
    return rc;
}

/* The step's loss summed over the ranks in rank order (host doubles), or -1. */
static int sum_over_ranks(mt_collective *coll, double *x)
{
    if (coll->size == 1) return 0;
    double *all = mt_xmalloc((size_t)coll->size * sizeof *all);
    int rc = coll->all_gather(coll, x, all, sizeof *x);
    if (rc == 0) {
        *x = 0;
        for (int r = 0; r < coll->size; r++) *x += all[r];
    }
    free(all);
    return rc;
}

/* Sum the ranks' gradient blocks; through a host copy when the collective cannot read the
 * backend's memory (MPI with a CUDA model). */
static int reduce_grads(mt_collective *coll, mt_model *m, int bf16, float **host, double *seconds)
{
    double t = mt_now_s();
    const mt_backend *be = mt_model_backend(m);
    size_t n = mt_model_param_block_size(m);
    float *g = mt_model_grads(m);
    int rc;
    if (bf16 || !(be->host_memory || coll->device_memory)) {
        /* host memory: the bf16 sum reads and writes host floats whatever the collective */
        float *x = g;
        if (!be->host_memory) {
            if (!*host) *host = mt_xmalloc(n * sizeof **host);
            be->download(*host, g, n * sizeof **host);
            x = *host;
        }
        rc = bf16 ? mt_collective_all_reduce_bf16(coll, x, n) : coll->all_reduce_sum(coll, x, n);
        if (rc == 0 && x != g) be->upload(g, x, n * sizeof **host);
    } else {
        rc = coll->all_reduce_sum(coll, g, n);
    }
    *seconds += mt_now_s() - t;
    return rc != 0 ? mt_error_context("step gradient all-reduce over %d ranks (%s)", coll->size,
                                      coll->name)
                   : 0;
}

/* The gradient block exists after the first backward; a rank whose first shards are empty
 * still needs one to receive the others' sum, so it runs one pair without training. */
static int ensure_grads(mt_model *m, const mt_train_config *cfg, const epoch_plan *ep, int encdec)
{
    if (mt_model_grads(m) || ep->plan.n_batches == 0) return 0;
    mt_batch batch;
    mt_batch_pack(&batch, encdec, &cfg->model, ep->corpus, &ep->ex, ep->plan.order, 1);
    mt_step_opts opts = {0};
    double loss;
    size_t n;
    int rc = mt_model_forward_backward(m, &batch, &opts, 1.0f, &loss, &n);
    mt_batch_free(&batch);
    mt_model_zero_grad(m);
    return rc;
}

int mt_train_run(const mt_train_config *cfg, int resume, const mt_train_hooks *hooks)
{
    if (mt_train_config_check(cfg) != 0) return -1;
    mt_collective *coll = hooks && hooks->collective ? hooks->collective : mt_collective_single();
    int lead = coll->rank == 0; /* the rank that logs, validates and saves */
    const mt_train_hooks *all_hooks = hooks;
    if (!lead) hooks = NULL; /* one voice: the others' errors come back as their return value */
    int lock = -1; /* run_dir's lock, when this call takes it */
    if (lead && !(hooks && hooks->run_locked) &&
        (lock = mt_run_lock(cfg->run_dir, MT_RUN_TRAINER)) < 0)
        return -1;

    mt_tokenizer *tok = mt_tokenizer_load(cfg->tokenizer);
    if (!tok) {
        mt_run_unlock(lock);
        return -1;
    }
    if (!mt_vocab_rows_fit(mt_tokenizer_vocab_size(tok), cfg->model.vocab_size)) {
        int v = mt_tokenizer_vocab_size(tok);
        mt_tokenizer_free(tok);
        mt_run_unlock(lock);
        return mt_error(
            "train config: the tokenizer %s has %d pieces but model.vocab_size is %d: a model's "
            "vocabulary holds the pieces, padded at most to the next multiple of %d (%d)",
            cfg->tokenizer, v, cfg->model.vocab_size, MT_VOCAB_PAD,
            (v + MT_VOCAB_PAD - 1) / MT_VOCAB_PAD * MT_VOCAB_PAD);
    }
    mt_corpus train = {0}, valid = {0};
    mt_name_pool names = {0};
    mt_model *m = NULL;
    train_state st = {0};
    log_file lf = {.fd = -1};
    epoch_plan *ep = NULL; /* the plan of the epoch under way */
    /* the plans of the epochs a step ran past the end of, kept until it has packed their
     * batches (each batch of a step but the first can begin a new epoch) */
    epoch_plan *finished[MT_TRAIN_MAX_ACCUM];
    int n_finished = 0;
    train_entities ent = {0};
    float *grads_host = NULL;
    grad_buckets *buckets = NULL; /* overlap: the all-reduce bucket by bucket during backward */
    int rc = -1, have_valid = cfg->valid_src[0] != '\0';
    double t0 = mt_now_s();

    /* a prompt template's sources are put into it, as decoding puts them (mt_source_encode) */
    const char *prompt = cfg->model.prompt;
    if (mt_corpus_load_prompted(&train, cfg->train_src, cfg->train_tgt, tok, cfg->max_len,
                                prompt) != 0)
        goto out;
    if (have_valid && mt_corpus_load_prompted(&valid, cfg->valid_src, cfg->valid_tgt, tok,
                                              cfg->max_len, prompt) != 0)
        goto out;
    if (lead && train_corpus_stats(cfg, &ent) != 0) goto out; /* for saved bundles */
    say(hooks, "data: %zu training pairs (%zu sides cut to %d ids), %zu validation pairs", train.n,
        train.truncated, cfg->max_len, valid.n);
    if (cfg->name_substitution > 0) {
        if (mt_name_pool_build(&names, cfg->train_src, cfg->train_tgt, train_target_lang(cfg),
                               cfg->gazetteer, cfg->name_substitution) != 0)
            goto out;
        say(hooks,
            "name substitution: %zu training pairs share a name verbatim, each name replaced with "
            "probability %g by one of %zu names of %s",
            names.n, names.p, names.gaz.n, cfg->gazetteer);
    }

    const mt_backend *be = mt_backend_for(cfg->device[0] ? cfg->device : "cpu", cfg->bf16);
    if (!be) goto out;
    if (resume) {
        m = checkpoint_load(cfg, be, &st);
        if (!m) goto out;
        say(hooks, "resumed from step %ld (epoch %d, batch %zu)", st.step, st.epoch, st.batch);
    } else {
        if (checkpoint_exists(cfg)) {
            mt_error("%s already holds a checkpoint: resume it (--resume) or choose another name",
                     cfg->run_dir);
            goto out;
        }
        m = cfg->init[0] ? model_from_init(cfg, be) : mt_model_create(&cfg->model, be, cfg->seed);
        if (!m) goto out;
        st.best_bleu = -1;
        st.step = cfg->init_step;
        st.shards = coll->size;
        if (cfg->init[0])
            say(hooks, "weights from %s, counting on from step %ld", cfg->init, cfg->init_step);
    }
    say(hooks, "model: %s, %zu parameters", cfg->model.arch, mt_model_param_count(m));
    say(hooks, "ranks %d (%s): each batch of max_tokens %zu x %d is cut into %d shards", coll->size,
        coll->name, cfg->max_tokens, st.shards, st.shards);
    if (coll->size > st.shards)
        say(hooks,
            "the run began on %d ranks, so its batches have %d shards: ranks %d..%d only wait",
            st.shards, st.shards, st.shards, coll->size - 1);
    long dropped = 0;
    if (lead && log_open(&lf, cfg, resume ? st.step : -1, &dropped) != 0) goto out;
    if (dropped)
        say(hooks, "%s: cut back to step %ld (%ld bytes logged after the checkpoint dropped)",
            lf.path, st.step, dropped);

    int encdec = mt_model_is_encdec(m);
    mt_train_progress pr = {
        .max_steps = cfg->max_steps, .valid_loss = -1, .valid_bleu = -1, .ranks = coll->size};
    double interval_loss = 0, interval_t0 = mt_now_s(), interval_step_s = 0, interval_reduce_s = 0;
    size_t interval_tokens = 0;
    long interval_steps = 0;
    const mt_name_pool *np = cfg->name_substitution > 0 ? &names : NULL;
    if (!(ep = epoch_plan_new(cfg, &train, np, tok, encdec, st.epoch, st.shards))) goto out;
    if (coll->size > 1 && ensure_grads(m, cfg, ep, encdec) != 0) goto out;
    int bf16_grads = !strcmp(cfg->grad_dtype, "bf16");
    if (coll->size > 1 && cfg->overlap) {
        /* a collective that queues sums (NCCL's stream) takes each bucket behind backward's
         * kernels, in the memory the backend computes in; else a thread of this rank reduces
         * buckets while backward runs on: the backend must be done with a unit when backward
         * moves on (host memory) and the collective callable from that thread */
        int queued = coll->all_reduce_sum_async != NULL;
        const char *why = queued && coll->device_memory == be->host_memory
                              ? "the gradients are not in the memory the collective reads"
                          : queued && bf16_grads ? "bf16 sums are made in host memory"
                          : queued               ? NULL
                          : !be->host_memory     ? "the backend computes in device memory"
                          : coll->device_memory  ? "the collective reads device memory"
                          : !coll->any_thread    ? "the collective takes calls from one thread"
                                                 : NULL;
        if (why) {
            say(hooks, "overlap: gradients all-reduced after backward (%s: %s)", coll->name, why);
        } else {
            if (!(buckets = grad_buckets_open(coll, m, cfg->bucket_mb, bf16_grads))) goto out;
            say(hooks,
                "overlap: gradients all-reduced in %d buckets (bucket_mb %g, %s) %s %s as "
                "backward %s their layers",
                grad_buckets_count(buckets), cfg->bucket_mb, cfg->grad_dtype,
                queued ? "queued on the stream of" : "by a thread over", coll->name,
                queued ? "queues" : "finishes");
        }
    }

    while (st.step < cfg->max_steps) {
        int stop = stop_agreed(coll, all_hooks);
        if (stop < 0) goto out;
        if (stop) {
            say(hooks, "stopping at step %ld: saving a checkpoint", st.step);
            break;
        }
        double step_t0 = mt_now_s();
        /* One optimiser step = accum consecutive batches of the epoch plans: the last batches of
         * one epoch and the first of the next when accum does not divide an epoch's, each
         * batch's rows indexing the examples of its own epoch. */
        const epoch_plan *mb_ep[MT_TRAIN_MAX_ACCUM];
        const uint32_t *mb_rows[MT_TRAIN_MAX_ACCUM];
        int mb_n[MT_TRAIN_MAX_ACCUM], n_mb = 0;
        size_t step_tokens = 0;
        while (n_mb < cfg->accum) {
            if (st.batch >= ep->plan.n_batches) {
                finished[n_finished++] = ep;
                st.epoch++;
                st.batch = 0;
                if (!(ep = epoch_plan_new(cfg, &train, np, tok, encdec, st.epoch, st.shards)))
                    goto out;
            }
            mb_ep[n_mb] = ep;
            mb_rows[n_mb] = ep->plan.order + ep->plan.start[st.batch];
            mb_n[n_mb] = ep->plan.rows[st.batch];
            step_tokens += loss_tokens(&ep->ex, mb_rows[n_mb], mb_n[n_mb]);
            n_mb++;
            st.batch++;
        }
        long step = st.step + 1;
        mt_model_zero_grad(m);
        mt_step_opts opts = {.train = 1,
                             .seed = cfg->seed,
                             .step = (uint64_t)step,
                             .label_smoothing = cfg->label_smoothing};
        double step_loss = 0;
        /* the step's global batch is its micro-batches' rows one after another: a row's dropout
         * masks follow its place there, whichever rank and call hold it */
        uint32_t mb_row0 = 0;
        /* the rank's last backward of the step hands its buckets over as it finishes them */
        int last_k = -1, last_s = -1;
        for (int k = 0; k < n_mb; k++)
            for (int s = coll->rank; s < st.shards; s += coll->size)
                if ((long)mb_n[k] * (s + 1) / st.shards > (long)mb_n[k] * s / st.shards)
                    last_k = k, last_s = s;
        for (int k = 0; k < n_mb; mb_row0 += (uint32_t)mb_n[k], k++) {
            /* this rank's shards of the batch: s = rank, rank + N, ... of st.shards row ranges */
            for (int s = coll->rank; s < st.shards; s += coll->size) {
                int lo = (int)((long)mb_n[k] * s / st.shards),
                    hi = (int)((long)mb_n[k] * (s + 1) / st.shards);
                if (hi == lo) continue;
                opts.row0 = mb_row0 + (uint32_t)lo;
                int last = buckets && k == last_k && s == last_s;
                opts.grads_ready = last ? grad_buckets_ready : NULL;
                opts.grads_ready_ud = last ? buckets : NULL;
                mt_batch batch;
                mt_batch_pack(&batch, encdec, &cfg->model, mb_ep[k]->corpus, &mb_ep[k]->ex,
                              mb_rows[k] + lo, hi - lo);
                double loss;
                size_t n;
                /* every token of the global batch weighs 1/step_tokens: the step's gradient is the
                 * mean */
                int frc = mt_model_forward_backward(m, &batch, &opts, 1.0f / (float)step_tokens,
                                                    &loss, &n);
                mt_batch_free(&batch);
                if (frc != 0) goto out;
                step_loss += loss * (double)n;
            }
        }
        epoch_plans_delete(finished, &n_finished);
        double reduce_s = 0;
        if (buckets) {
            if (grad_buckets_finish(buckets, &reduce_s, NULL) != 0) {
                mt_error_context("step gradient all-reduce over %d ranks (%s, overlapped)",
                                 coll->size, coll->name);
                goto out;
            }
        } else if (coll->size > 1 &&
                   reduce_grads(coll, m, bf16_grads, &grads_host, &reduce_s) != 0) {
            goto out;
        }
        if (coll->size > 1 && sum_over_ranks(coll, &step_loss) != 0) goto out;
        double lr = mt_lr_inverse_sqrt(cfg->lr, step, cfg->warmup);
        mt_adamw_hparams h = {(float)lr, (float)cfg->beta1, (float)cfg->beta2, (float)cfg->eps,
                              (float)cfg->weight_decay};
        if (mt_model_adamw_step(m, &h, (int)step) != 0) goto out;
        st.step = step;
        if (!isfinite(step_loss)) {
            mt_error("step %ld: the loss is not finite (lr %.3g): lower lr or raise warmup", step,
                     lr);
            goto out;
        }
        interval_loss += step_loss;
        interval_tokens += step_tokens;
        interval_step_s += mt_now_s() - step_t0;
        interval_reduce_s += reduce_s;
        interval_steps++;

        int last = st.step == cfg->max_steps;
        if (st.step % cfg->log_every == 0 || last) {
            double t = mt_now_s();
            pr = (mt_train_progress){.step = st.step,
                                     .max_steps = cfg->max_steps,
                                     .epoch = st.epoch,
                                     .loss = interval_loss / (double)interval_tokens,
                                     .lr = lr,
                                     .tokens_per_s = (double)interval_tokens / (t - interval_t0),
                                     .elapsed_s = t - t0,
                                     .valid_loss = pr.valid_loss,
                                     .valid_bleu = pr.valid_bleu,
                                     .ranks = coll->size,
                                     .step_s = interval_step_s / (double)interval_steps,
                                     .reduce_s = interval_reduce_s / (double)interval_steps};
            if (lead && log_step(&lf, &pr) != 0) goto out;
            if (hooks && hooks->progress) hooks->progress(hooks->ud, &pr);
            interval_loss = 0;
            interval_tokens = 0;
            interval_step_s = interval_reduce_s = 0;
            interval_steps = 0;
            interval_t0 = mt_now_s();
        }

        if (!lead) continue; /* validation and saving are rank 0's */
        if (have_valid && ((cfg->valid_every && st.step % cfg->valid_every == 0) || last)) {
            if (valid_loss(m, cfg, &valid, &pr.valid_loss) != 0) goto out;
            if (cfg->valid_bleu_lines > 0 && validate_bleu(m, tok, cfg, &pr.valid_bleu) != 0)
                goto out;
            /* the step validated, not the last one logged (log_every need not divide it) */
            pr.step = st.step;
            pr.epoch = st.epoch;
            pr.elapsed_s = mt_now_s() - t0;
            pr.is_validation = 1;
            if (log_validation(&lf, &pr) != 0) goto out;
            if (hooks && hooks->progress) hooks->progress(hooks->ud, &pr);
            pr.is_validation = 0;
            interval_t0 = mt_now_s(); /* validation time is not training throughput */
            if (pr.valid_bleu > st.best_bleu) {
                st.best_bleu = pr.valid_bleu;
                if (save_best(m, cfg, &ent) != 0) goto out;
                say(hooks, "step %ld: best validation BLEU so far (%.2f): saved %s/best", st.step,
                    pr.valid_bleu, cfg->run_dir);
            }
        }
        if (cfg->keep_every && st.step % cfg->keep_every == 0) {
            if (save_kept(m, cfg, &ent, st.step) != 0) goto out;
            say(hooks, "step %ld: kept %s/steps/%ld", st.step, cfg->run_dir, st.step);
        }
        if (cfg->save_every && st.step % cfg->save_every == 0 && !last) {
            if (checkpoint_save(m, cfg, &st, &ent) != 0) goto out;
            say(hooks, "step %ld: checkpoint saved", st.step);
        }
    }
    if (lead && checkpoint_save(m, cfg, &st, &ent) != 0) goto out;
    say(hooks, "step %ld: checkpoint saved to %s/checkpoint (%.1f s)", st.step, cfg->run_dir,
        mt_now_s() - t0);
    rc = 0;
out:
    grad_buckets_close(buckets);
    free(grads_host);
    train_entities_free(&ent);
    epoch_plans_delete(finished, &n_finished);
    epoch_plan_delete(ep);
    log_close(&lf);
    mt_model_free(m);
    mt_corpus_free(&train);
    mt_corpus_free(&valid);
    mt_name_pool_free(&names);
    mt_tokenizer_free(tok);
    mt_run_unlock(lock);
    return rc;
}
