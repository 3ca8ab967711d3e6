/* runs/NAME/log.jsonl: one JSON object per line, appended and flushed as the run goes, so a
 * watcher (the TUI job panel, `tail -f`) sees progress and a killed run loses nothing. */
#include "mtlab/error.h"
#include "train_internal.h"

#include <errno.h>
#include <jansson.h>
#include <string.h>

int log_open(log_file *lf, const mt_train_config *cfg, int resume)
{
    snprintf(lf->path, sizeof lf->path, "%s/log.jsonl", cfg->run_dir);
    lf->f = fopen(lf->path, resume ? "a" : "w");
    if (!lf->f) return mt_error("%s: %s", lf->path, strerror(errno));
    return 0;
}

static void emit(log_file *lf, json_t *obj)
{
    char *line = json_dumps(obj, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
    if (line) {
        fprintf(lf->f, "%s\n", line);
        fflush(lf->f);
        free(line);
    }
    json_decref(obj);
}

void log_step(log_file *lf, const mt_train_progress *p)
{
    emit(lf, json_pack("{s:s, s:I, s:i, s:f, s:f, s:f, s:f}", "event", "train", "step", (json_int_t)p->step,
                       "epoch", p->epoch, "loss", p->loss, "lr", p->lr, "tokens_per_s", p->tokens_per_s,
                       "elapsed_s", p->elapsed_s));
}

void log_validation(log_file *lf, const mt_train_progress *p)
{
    json_t *o = json_pack("{s:s, s:I, s:f, s:f}", "event", "valid", "step", (json_int_t)p->step, "valid_loss",
                          p->valid_loss, "elapsed_s", p->elapsed_s);
    if (p->valid_bleu >= 0) json_object_set_new(o, "valid_bleu", json_real(p->valid_bleu));
    emit(lf, o);
}

void log_close(log_file *lf)
{
    if (lf->f) fclose(lf->f);
    lf->f = NULL;
}
