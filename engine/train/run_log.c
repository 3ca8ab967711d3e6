/* runs/NAME/log.jsonl: one JSON object per line, appended as the run goes, so a watcher (the TUI
 * job panel, `tail -f`) sees progress and a killed run loses nothing.
 *
 * The log holds whole lines only: a write that fails (a full disk, a file size limit) is cut
 * back to the last whole line and stops the run. A resumed run first cuts the log back to its
 * checkpoint's step (the records a killed run wrote past its last checkpoint are trained again),
 * in one ftruncate, so no reader sees a step twice. */
#include "mtlab/error.h"
#include "train_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The length of the log's longest prefix of whole lines with no record after step: where a
 * resume from step cuts it. */
static off_t resume_cut(const char *text, size_t len, long step)
{
    size_t at = 0;
    for (;;) {
        const char *nl = memchr(text + at, '\n', len - at);
        if (!nl) return (off_t)at; /* an unfinished last line goes too */
        size_t line_len = (size_t)(nl - (text + at));
        json_t *o = json_loadb(text + at, line_len, 0, NULL);
        json_t *s = o ? json_object_get(o, "step") : NULL;
        int past = json_is_integer(s) && json_integer_value(s) > step;
        json_decref(o);
        if (past) return (off_t)at;
        at += line_len + 1;
    }
}

/* Cut lf's file back to the records up to step; *dropped: the bytes cut. */
static int cut_to_step(log_file *lf, long step, long *dropped)
{
    struct stat st;
    if (fstat(lf->fd, &st) != 0) return mt_error("%s: %s", lf->path, strerror(errno));
    size_t len = (size_t)st.st_size, got = 0;
    char *text = mt_xmalloc(len + 1);
    while (got < len) {
        ssize_t r = pread(lf->fd, text + got, len - got, (off_t)got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            free(text);
            return mt_error("%s: cannot read: %s", lf->path,
                            r < 0 ? strerror(errno) : "it shrank while read");
        }
        got += (size_t)r;
    }
    off_t cut = resume_cut(text, len, step);
    free(text);
    *dropped = (long)(st.st_size - cut);
    if (cut < st.st_size && (ftruncate(lf->fd, cut) != 0 || fsync(lf->fd) != 0))
        return mt_error("%s: cannot cut it back to step %ld: %s", lf->path, step, strerror(errno));
    return 0;
}

int log_open(log_file *lf, const mt_train_config *cfg, long resume_step, long *dropped)
{
    snprintf(lf->path, sizeof lf->path, "%s/log.jsonl", cfg->run_dir);
    *dropped = 0;
    int flags = O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC | (resume_step < 0 ? O_TRUNC : 0);
    lf->fd = open(lf->path, flags, 0666);
    if (lf->fd < 0) return mt_error("%s: %s", lf->path, strerror(errno));
    if (resume_step >= 0 && cut_to_step(lf, resume_step, dropped) != 0) {
        log_close(lf);
        return -1;
    }
    return 0;
}

/* One line, whole or not at all. */
static int emit(log_file *lf, json_t *obj)
{
    char *text = json_dumps(obj, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
    json_decref(obj);
    if (!text) return mt_error("%s: cannot encode a record", lf->path);
    size_t len = strlen(text);
    char *line = mt_xmalloc(len + 1);
    memcpy(line, text, len);
    line[len++] = '\n';
    free(text);
    struct stat st;
    int err = fstat(lf->fd, &st) != 0 ? errno : 0;
    for (size_t done = 0; done < len && !err;) {
        ssize_t w = write(lf->fd, line + done, len - done);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) err = errno;
        else if (w == 0) err = ENOSPC;
        else done += (size_t)w;
    }
    free(line);
    if (!err) return 0;
    /* what was written of the line goes: whole lines only */
    if (ftruncate(lf->fd, st.st_size) != 0)
        return mt_error("%s: cannot write: %s (and cannot cut the part written: %s)", lf->path,
                        strerror(err), strerror(errno));
    return mt_error("%s: cannot write: %s", lf->path, strerror(err));
}

int log_step(log_file *lf, const mt_train_progress *p)
{
    return emit(lf,
                json_pack("{s:s, s:I, s:i, s:f, s:f, s:f, s:f, s:i, s:f, s:f}", "event", "train",
                          "step", (json_int_t)p->step, "epoch", p->epoch, "loss", p->loss, "lr",
                          p->lr, "tokens_per_s", p->tokens_per_s, "elapsed_s", p->elapsed_s,
                          "ranks", p->ranks, "step_s", p->step_s, "reduce_s", p->reduce_s));
}

int log_validation(log_file *lf, const mt_train_progress *p)
{
    json_t *o = json_pack("{s:s, s:I, s:f, s:f}", "event", "valid", "step", (json_int_t)p->step,
                          "valid_loss", p->valid_loss, "elapsed_s", p->elapsed_s);
    if (p->valid_bleu >= 0) json_object_set_new(o, "valid_bleu", json_real(p->valid_bleu));
    return emit(lf, o);
}

void log_close(log_file *lf)
{
    if (lf->fd >= 0) close(lf->fd);
    lf->fd = -1;
}
