/* Checkpoints: runs/NAME/checkpoint/ is a complete model bundle (weights in F32, so resuming is
 * exact) plus trainer.safetensors (AdamW moments) and trainer.json (position and a fingerprint
 * of the settings a resumed run must share).
 *
 * Atomicity: everything is written into checkpoint.new/, then checkpoint/ is renamed to
 * checkpoint.old/, checkpoint.new/ to checkpoint/, and checkpoint.old/ removed. A crash at any
 * point leaves a complete checkpoint under one of the two names; loading falls back to .old.
 * Every file is fsynced before the renames and the run directory after them. */
#include "mtlab/error.h"
#include "mtlab/files.h"
#include "io/atomic_file.h"
#include "mtlab/safetensors.h"
#include "train_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int mkdir_p(const char *path)
{
    char buf[1024];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
        return mt_error("%s: path too long", path);
    for (char *p = buf + 1;; p++) {
        if (*p == '/' || *p == '\0') {
            char c = *p;
            *p = '\0';
            if (mkdir(buf, 0777) != 0 && errno != EEXIST)
                return mt_error("%s: %s", buf, strerror(errno));
            *p = c;
            if (!c) break;
        }
    }
    return 0;
}

/* Remove a directory of plain files (a bundle); missing is fine. */
static int remove_flat_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return errno == ENOENT ? 0 : mt_error("%s: %s", dir, strerror(errno));
    struct dirent *e;
    char path[1200];
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    closedir(d);
    if (rmdir(dir) != 0) return mt_error("%s: %s", dir, strerror(errno));
    return 0;
}

static int dir_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* FNV-1a over the settings that determine the loss sequence. */
static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

static char *fingerprint(const mt_train_config *c, char *out, size_t n)
{
    uint64_t h = 14695981039346656037ull;
    h = fnv(h, &c->model, sizeof c->model);
    h = fnv(h, c->train_src, strlen(c->train_src));
    h = fnv(h, c->train_tgt, strlen(c->train_tgt));
    h = fnv(h, c->tokenizer, strlen(c->tokenizer));
    /* the batch plan's budget rather than max_tokens itself, so checkpoints of decoder-only
     * models made before their budget doubled (mt_batch_budget) are not resumed on the new plan */
    size_t budget = mt_batch_budget(c->max_tokens, mt_model_config_is_encdec(&c->model));
    const long long ints[] = {c->max_len, c->cat_n,  (long long)budget,
                              c->accum,   c->warmup, (long long)c->seed};
    const double reals[] = {c->cat_keep, c->lr,  c->weight_decay,   c->beta1,
                            c->beta2,    c->eps, c->label_smoothing};
    h = fnv(h, ints, sizeof ints);
    h = fnv(h, reals, sizeof reals);
    /* only when it draws the join's size, so checkpoints made before cat_min existed still resume
     */
    if (mt_cat_fewest(c->cat_n, c->cat_min) < c->cat_n) h = fnv(h, &c->cat_min, sizeof c->cat_min);
    /* only when on, so checkpoints made before name substitution existed still resume */
    if (c->name_substitution > 0) {
        h = fnv(h, &c->name_substitution, sizeof c->name_substitution);
        h = fnv(h, c->gazetteer, strlen(c->gazetteer));
    }
    snprintf(out, n, "%016llx", (unsigned long long)h);
    return out;
}

int checkpoint_exists(const mt_train_config *cfg)
{
    char p[700];
    snprintf(p, sizeof p, "%s/checkpoint", cfg->run_dir);
    if (dir_exists(p)) return 1;
    snprintf(p, sizeof p, "%s/checkpoint.old", cfg->run_dir);
    return dir_exists(p);
}

static int write_trainer_state(const char *dir, mt_model *m, const mt_train_config *cfg,
                               const train_state *st)
{
    const mt_backend *be = mt_model_backend(m);
    size_t n = mt_model_param_block_size(m);
    float *v_dev, *m_dev = mt_model_adam_moments(m, &v_dev);
    if (!m_dev) return -1;
    float *host = mt_xmalloc(2 * n * sizeof *host);
    be->download(host, m_dev, n * sizeof *host);
    be->download(host + n, v_dev, n * sizeof *host);
    mt_st_write_tensor t[2] = {
        {.name = "adam.m", .dtype = MT_DT_F32, .ndim = 1, .shape = {(int64_t)n}, .f32 = host},
        {.name = "adam.v", .dtype = MT_DT_F32, .ndim = 1, .shape = {(int64_t)n}, .f32 = host + n},
    };
    char path[800];
    snprintf(path, sizeof path, "%s/trainer.safetensors", dir);
    int rc = mt_st_write(path, t, 2, NULL, 0);
    free(host);
    if (rc != 0) return -1;

    char fp[32];
    json_t *o = json_pack("{s:I, s:i, s:I, s:f, s:s, s:s, s:i}", "step", (json_int_t)st->step,
                          "epoch", st->epoch, "batch", (json_int_t)st->batch, "best_bleu",
                          st->best_bleu, "fingerprint", fingerprint(cfg, fp, sizeof fp), "name",
                          cfg->name, "shards", st->shards);
    snprintf(path, sizeof path, "%s/trainer.json", dir);
    char *text = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
    json_decref(o);
    rc = text ? atomic_file_replace(path, text, strlen(text)) : mt_error("%s: cannot encode", path);
    free(text);
    return rc;
}

/* After the renames: make them durable, so a power cut cannot bring back the old names. */
static int sync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int rc = fd < 0 || fsync(fd) != 0
                 ? mt_error("%s: cannot sync the directory: %s", dir, strerror(errno))
                 : 0;
    if (fd >= 0) close(fd);
    return rc;
}

/* dir/corpus_stats.tsv and dir/entity_lexicon.tsv */
static int write_stats(const char *dir, const train_entities *ent)
{
    char path[800];
    snprintf(path, sizeof path, "%s/corpus_stats.tsv", dir);
    if (mt_corpus_stats_write(ent->stats, path) != 0) return -1;
    snprintf(path, sizeof path, "%s/entity_lexicon.tsv", dir);
    return mt_entity_lexicon_write(ent->lexicon, path);
}

long checkpoint_stop_step;
checkpoint_stage checkpoint_stop_stage;

/* 1 when a test asked the save of this step to stop after stage (with the error set). */
static int stop_here(const train_state *st, checkpoint_stage stage)
{
    if (checkpoint_stop_stage != stage || checkpoint_stop_step != st->step) return 0;
    mt_error("checkpoint of step %ld: stopped after stage %d of the swap (checkpoint_stop_stage)",
             st->step, stage);
    return 1;
}

int checkpoint_save(const mt_model *cm, const mt_train_config *cfg, const train_state *st,
                    const train_entities *ent)
{
    mt_model *m = (mt_model *)cm; /* the moments may be allocated on first use */
    char cur[700], tmp[700], old[700];
    snprintf(cur, sizeof cur, "%s/checkpoint", cfg->run_dir);
    snprintf(tmp, sizeof tmp, "%s/checkpoint.new", cfg->run_dir);
    snprintf(old, sizeof old, "%s/checkpoint.old", cfg->run_dir);
    if (remove_flat_dir(tmp) != 0) return -1;
    if (mt_model_save(m, tmp, cfg->tokenizer, MT_DT_F32) != 0) return -1;
    if (write_trainer_state(tmp, m, cfg, st) != 0 || write_stats(tmp, ent) != 0) return -1;
    if (stop_here(st, CHECKPOINT_NEW_WRITTEN)) return -1;
    if (dir_exists(cur)) {
        if (remove_flat_dir(old) != 0) return -1;
        if (rename(cur, old) != 0) return mt_error("%s: %s", cur, strerror(errno));
    }
    if (stop_here(st, CHECKPOINT_OLD_RENAMED)) return -1;
    if (rename(tmp, cur) != 0) return mt_error("%s: %s", tmp, strerror(errno));
    if (sync_dir(cfg->run_dir) != 0) return -1;
    if (stop_here(st, CHECKPOINT_NEW_RENAMED)) return -1;
    return remove_flat_dir(old);
}

/* A bundle of the current weights in run_dir/sub, in the dtype of shipped bundles. */
static int save_bundle(const mt_model *m, const mt_train_config *cfg, const train_entities *ent,
                       const char *sub)
{
    char dir[700];
    snprintf(dir, sizeof dir, "%s/%s", cfg->run_dir, sub);
    if (mt_model_save(m, dir, cfg->tokenizer, cfg->save_dtype_f16 ? MT_DT_F16 : MT_DT_F32) != 0)
        return -1;
    return write_stats(dir, ent);
}

int save_best(const mt_model *m, const mt_train_config *cfg, const train_entities *ent)
{
    return save_bundle(m, cfg, ent, "best");
}

int save_kept(const mt_model *m, const mt_train_config *cfg, const train_entities *ent, long step)
{
    char parent[700], sub[64];
    snprintf(parent, sizeof parent, "%s/steps", cfg->run_dir);
    if (mkdir_p(parent) != 0) return -1;
    snprintf(sub, sizeof sub, "steps/%ld", step);
    return save_bundle(m, cfg, ent, sub);
}

static int read_state(const char *dir, const mt_train_config *cfg, train_state *st)
{
    char path[800], fp[32];
    snprintf(path, sizeof path, "%s/trainer.json", dir);
    json_error_t err;
    FILE *f = mt_file_fopen(path, MT_FILE_REGULAR);
    if (!f) return -1;
    json_t *o = json_loadf(f, 0, &err);
    fclose(f);
    if (!o) return mt_error("%s:%d: %s", path, err.line, mt_error_oneline(err.text));
    json_int_t step, batch;
    const char *fprint;
    st->shards = 1;
    int rc = json_unpack_ex(o, &err, 0, "{s:I, s:i, s:I, s:F, s:s, s?i}", "step", &step, "epoch",
                            &st->epoch, "batch", &batch, "best_bleu", &st->best_bleu, "fingerprint",
                            &fprint, "shards", &st->shards);
    if (rc != 0) {
        json_decref(o);
        return mt_error("%s: %s", path, mt_error_oneline(err.text));
    }
    st->step = (long)step;
    st->batch = (size_t)batch;
    if (st->shards < 1 || st->shards > 4096) {
        json_decref(o);
        return mt_error("%s: shards = %d: it must be in 1..4096", path, st->shards);
    }
    if (strcmp(fprint, fingerprint(cfg, fp, sizeof fp)) != 0) {
        json_decref(o);
        return mt_error(
            "%s: this checkpoint was made with other settings (model, data, batching, "
            "optimiser or seed differ); only max_steps and the log/valid/save intervals "
            "may change on resume",
            path);
    }
    json_decref(o);
    return 0;
}

mt_model *checkpoint_load(const mt_train_config *cfg, const mt_backend *be, train_state *st)
{
    char dir[700];
    snprintf(dir, sizeof dir, "%s/checkpoint", cfg->run_dir);
    if (!dir_exists(dir)) snprintf(dir, sizeof dir, "%s/checkpoint.old", cfg->run_dir);
    if (!dir_exists(dir)) {
        mt_error("%s: no checkpoint to resume from", cfg->run_dir);
        return NULL;
    }
    if (read_state(dir, cfg, st) != 0) return NULL;
    mt_model *m = mt_model_load(dir, be, 0);
    if (!m) return NULL;
    char path[800];
    snprintf(path, sizeof path, "%s/trainer.safetensors", dir);
    mt_safetensors *sf = mt_st_open(path);
    size_t n = mt_model_param_block_size(m);
    float *v_dev, *m_dev = mt_model_adam_moments(m, &v_dev);
    float *host = mt_xmalloc(2 * n * sizeof *host);
    int64_t shape[1] = {(int64_t)n};
    int rc = !sf || !m_dev || mt_st_read_f32(sf, "adam.m", 1, shape, host) != 0 ||
             mt_st_read_f32(sf, "adam.v", 1, shape, host + n) != 0;
    if (!rc) {
        be->upload(m_dev, host, n * sizeof *host);
        be->upload(v_dev, host + n, n * sizeof *host);
    }
    free(host);
    mt_st_close(sf);
    if (rc) {
        mt_model_free(m);
        return NULL;
    }
    return m;
}
