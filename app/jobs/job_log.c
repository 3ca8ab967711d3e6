/* Reading runs/NAME/log.jsonl incrementally: only complete lines, from a byte offset, so a
 * watcher polling a growing file never sees half a record. */
#include "jobs/jobs.h"
#include "mtlab/error.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int job_log_read_since(const char *dir, long *offset, job_log_record **recs, size_t *n)
{
    *recs = NULL;
    *n = 0;
    char path[800];
    snprintf(path, sizeof path, "%s/log.jsonl", dir);
    FILE *f = fopen(path, "rb");
    if (!f) return errno == ENOENT ? 0 : mt_error("%s: %s", path, strerror(errno));
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
    return 0;
}
