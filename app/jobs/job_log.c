/* Reading runs/NAME/log.jsonl incrementally: only complete lines, from a byte offset, so a
 * watcher polling a growing file never sees half a record. */
#include "jobs/jobs.h"
#include "mtlab/error.h"
#include "mtlab/files.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static double number(json_t *o, const char *key, double def)
{
    json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : def;
}

/* One line into r; 0 when it is a train or valid record. */
static int parse_record(const char *line, size_t len, job_log_record *r)
{
    json_error_t err;
    json_t *o = json_loadb(line, len, 0, &err);
    if (!o) return -1;
    const char *event = json_string_value(json_object_get(o, "event"));
    int rc = -1;
    if (event && (!strcmp(event, "train") || !strcmp(event, "valid"))) {
        memset(r, 0, sizeof *r);
        r->is_valid = !strcmp(event, "valid");
        r->step = (long)number(o, "step", 0);
        r->epoch = (int)number(o, "epoch", 0);
        r->loss = number(o, "loss", 0);
        r->lr = number(o, "lr", 0);
        r->tokens_per_s = number(o, "tokens_per_s", 0);
        r->valid_loss = number(o, "valid_loss", -1);
        r->valid_bleu = number(o, "valid_bleu", -1);
        r->elapsed_s = number(o, "elapsed_s", 0);
        rc = 0;
    }
    json_decref(o);
    return rc;
}

/* Records by step, train before valid, and by position among equals. */
typedef struct {
    job_log_record r;
    size_t at;
} placed;

static int by_step(const void *a, const void *b)
{
    const placed *x = a, *y = b;
    if (x->r.step != y->r.step) return x->r.step < y->r.step ? -1 : 1;
    if (x->r.is_valid != y->r.is_valid) return x->r.is_valid - y->r.is_valid;
    return x->at < y->at ? -1 : x->at > y->at;
}

/* Keep the last record of each step and event, in step order: recs[0..*n) in place. */
static void last_per_step(job_log_record *recs, size_t *n)
{
    if (*n < 2) return;
    placed *p = mt_xmalloc(*n * sizeof *p);
    for (size_t i = 0; i < *n; i++) p[i] = (placed){recs[i], i};
    qsort(p, *n, sizeof *p, by_step);
    size_t kept = 0;
    for (size_t i = 0; i < *n; i++) {
        int same_as_next =
            i + 1 < *n && p[i + 1].r.step == p[i].r.step && p[i + 1].r.is_valid == p[i].r.is_valid;
        if (!same_as_next) recs[kept++] = p[i].r;
    }
    free(p);
    *n = kept;
}

int job_log_read_since(const char *dir, long *offset, job_log_record **recs, size_t *n)
{
    *recs = NULL;
    *n = 0;
    char path[800];
    snprintf(path, sizeof path, "%s/log.jsonl", dir);
    if (access(path, F_OK) != 0 && errno == ENOENT) return 0; /* nothing logged yet */
    FILE *f = mt_file_fopen(path, MT_FILE_REGULAR);
    if (!f) return -1;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    if (size < *offset) *offset = 0; /* rewritten: a fresh run of the same name */
    if (size == *offset) {
        fclose(f);
        return 0;
    }
    size_t len = (size_t)(size - *offset);
    char *buf = mt_xmalloc(len);
    fseek(f, *offset, SEEK_SET);
    len = fread(buf, 1, len, f);
    fclose(f);
    size_t cap = 0, at = 0;
    for (;;) {
        char *nl = memchr(buf + at, '\n', len - at);
        if (!nl) break;
        size_t line_len = (size_t)(nl - (buf + at));
        job_log_record r;
        if (parse_record(buf + at, line_len, &r) == 0) {
            if (*n == cap) {
                cap = cap ? 2 * cap : 64;
                *recs = mt_xrealloc(*recs, cap * sizeof **recs);
            }
            (*recs)[(*n)++] = r;
        }
        at += line_len + 1;
    }
    *offset += (long)at;
    free(buf);
    last_per_step(*recs, n);
    return 0;
}
