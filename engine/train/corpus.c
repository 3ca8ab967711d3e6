/* Loading and tokenizing a parallel corpus for training. */
#include "mtlab/error.h"
#include "mtlab/traindata.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A growing int32 array. */
typedef struct {
    int32_t *v;
    size_t n, cap;
} ids_buf;

static void ids_push(ids_buf *b, const int *ids, size_t n)
{
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 1024;
        b->v = mt_xrealloc(b->v, b->cap * sizeof *b->v);
    }
    for (size_t i = 0; i < n; i++) b->v[b->n + i] = ids[i];
    b->n += n;
}

static void chomp(char *s, ssize_t *len)
{
    while (*len > 0 && (s[*len - 1] == '\n' || s[*len - 1] == '\r')) s[--*len] = '\0';
}

/* Encode one line into buf (cut to max_len); returns the number of ids kept or -1. */
static int encode_line(ids_buf *buf, const mt_tokenizer *tok, const char *line, int max_len,
                       size_t *truncated, const char *path, size_t lineno)
{
    int *ids;
    size_t n;
    if (mt_tokenizer_encode(tok, line, &ids, &n) != 0)
        return mt_error_context("%s:%zu", path, lineno);
    if (max_len > 0 && n > (size_t)max_len) {
        n = (size_t)max_len;
        (*truncated)++;
    }
    ids_push(buf, ids, n);
    free(ids);
    return (int)n;
}

int mt_corpus_load(mt_corpus *c, const char *src_path, const char *tgt_path,
                   const mt_tokenizer *tok, int max_len)
{
    memset(c, 0, sizeof *c);
    FILE *fs = fopen(src_path, "r");
    if (!fs) return mt_error("%s: %s", src_path, strerror(errno));
    FILE *ft = fopen(tgt_path, "r");
    if (!ft) {
        fclose(fs);
        return mt_error("%s: %s", tgt_path, strerror(errno));
    }
    ids_buf buf = {0};
    size_t cap = 0, lineno = 0;
    char *ls = NULL, *lt = NULL;
    size_t ls_cap = 0, lt_cap = 0;
    int rc = -1;
    for (;;) {
        ssize_t ns = getline(&ls, &ls_cap, fs);
        ssize_t nt = getline(&lt, &lt_cap, ft);
        if (ns < 0 && nt < 0) break;
        lineno++;
        if (ns < 0 || nt < 0) {
            mt_error("%s has %zu lines but %s has more", ns < 0 ? src_path : tgt_path,
                     lineno - 1, ns < 0 ? tgt_path : src_path);
            goto out;
        }
        chomp(ls, &ns);
        chomp(lt, &nt);
        if ((ns == 0) != (nt == 0)) {
            mt_error("%s:%zu: empty line whose pair in %s is not empty", ns == 0 ? src_path : tgt_path,
                     lineno, ns == 0 ? tgt_path : src_path);
            goto out;
        }
        if (c->n == cap) {
            cap = cap * 2 + 1024;
            c->src_start = mt_xrealloc(c->src_start, cap * sizeof *c->src_start);
            c->tgt_start = mt_xrealloc(c->tgt_start, cap * sizeof *c->tgt_start);
            c->src_len = mt_xrealloc(c->src_len, cap * sizeof *c->src_len);
            c->tgt_len = mt_xrealloc(c->tgt_len, cap * sizeof *c->tgt_len);
        }
        c->src_start[c->n] = buf.n;
        int n = encode_line(&buf, tok, ls, max_len, &c->truncated, src_path, lineno);
        if (n < 0) goto out;
        c->src_len[c->n] = n;
        c->tgt_start[c->n] = buf.n;
        n = encode_line(&buf, tok, lt, max_len, &c->truncated, tgt_path, lineno);
        if (n < 0) goto out;
        c->tgt_len[c->n] = n;
        c->n++;
    }
    if (c->n == 0) {
        mt_error("%s: no lines", src_path);
        goto out;
    }
    c->ids = buf.v;
    buf.v = NULL;
    rc = 0;
out:
    free(ls);
    free(lt);
    free(buf.v);
    fclose(fs);
    fclose(ft);
    if (rc != 0) mt_corpus_free(c);
    return rc;
}

void mt_corpus_free(mt_corpus *c)
{
    free(c->ids);
    free(c->src_start);
    free(c->tgt_start);
    free(c->src_len);
    free(c->tgt_len);
    memset(c, 0, sizeof *c);
}
