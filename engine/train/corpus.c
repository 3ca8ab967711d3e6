/* Loading and tokenizing a parallel corpus for training, and its name-substituted epochs. */
#include "mtlab/error.h"
#include "mtlab/files.h"
#include "mtlab/metrics.h"
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

/* How lines are encoded: the tokenizer, the cut (max_len ids, 0 for none) and the count of
 * lines cut. */
typedef struct {
    const mt_tokenizer *tok;
    int max_len;
    size_t *truncated;
} line_encoding;

/* Encode one line (put into prompt first, unless NULL) into buf, cut to max_len: the last
 * `tail` ids stay (a template's separator), the ones before them go; returns the number of
 * ids kept or -1 (path:lineno in the message). */
static int encode_line(ids_buf *buf, const line_encoding *enc, const char *prompt, int tail,
                       const char *line, const char *path, size_t lineno)
{
    const mt_tokenizer *tok = enc->tok;
    int max_len = enc->max_len;
    int *ids;
    size_t n;
    if (mt_prompt_encode(tok, prompt, line, &ids, &n) != 0)
        return mt_error_context("%s:%zu", path, lineno);
    if (max_len > 0 && n > (size_t)max_len) {
        memmove(ids + max_len - tail, ids + n - (size_t)tail, (size_t)tail * sizeof *ids);
        n = (size_t)max_len;
        (*enc->truncated)++;
    }
    ids_push(buf, ids, n);
    free(ids);
    return (int)n;
}

int mt_corpus_load(mt_corpus *c, const char *src_path, const char *tgt_path,
                   const mt_tokenizer *tok, int max_len)
{
    return mt_corpus_load_prompted(c, src_path, tgt_path, tok, max_len, NULL);
}

/* The ids of a prompt template's text after {src}, encoded alone (at most max_len / 2). */
static int prompt_tail(const mt_tokenizer *tok, const char *prompt, int max_len, int *tail)
{
    const char *at = prompt && prompt[0] ? strstr(prompt, "{src}") : NULL;
    *tail = 0;
    if (!at || !at[5]) return 0;
    int *ids;
    size_t n;
    if (mt_tokenizer_encode(tok, at + 5, &ids, &n) != 0)
        return mt_error_context("prompt \"%s\"", prompt);
    free(ids);
    *tail = max_len > 0 && n > (size_t)max_len / 2 ? max_len / 2 : (int)n;
    return 0;
}

int mt_corpus_load_prompted(mt_corpus *c, const char *src_path, const char *tgt_path,
                            const mt_tokenizer *tok, int max_len, const char *prompt)
{
    memset(c, 0, sizeof *c);
    int tail;
    if (prompt_tail(tok, prompt, max_len, &tail) != 0) return -1;
    FILE *fs = mt_file_fopen(src_path, MT_FILE_REGULAR);
    if (!fs) return -1;
    FILE *ft = mt_file_fopen(tgt_path, MT_FILE_REGULAR);
    if (!ft) {
        fclose(fs);
        return -1;
    }
    ids_buf buf = {0};
    size_t cap = 0, lineno = 0;
    /* one line limit, applied while reading: a file without newlines costs a megabyte */
    mt_line_reader rs, rt;
    mt_line_reader_init(&rs, fs, src_path, 0);
    mt_line_reader_init(&rt, ft, tgt_path, 0);
    rs.hint = rt.hint = "one sentence per line expected";
    int rc = -1;
    for (;;) {
        char *ls, *lt;
        size_t ls_n, lt_n;
        int gs = mt_line_next(&rs, &ls, &ls_n);
        if (gs < 0) goto out;
        int gt = mt_line_next(&rt, &lt, &lt_n);
        if (gt < 0) goto out;
        if (!gs && !gt) break;
        lineno++;
        if (!gs || !gt) {
            mt_error("%s has %zu lines but %s has more", !gs ? src_path : tgt_path, lineno - 1,
                     !gs ? tgt_path : src_path);
            goto out;
        }
        ssize_t ns = (ssize_t)ls_n, nt = (ssize_t)lt_n;
        chomp(ls, &ns);
        chomp(lt, &nt);
        if ((ns == 0) != (nt == 0)) {
            mt_error("%s:%zu: empty line whose pair in %s is not empty",
                     ns == 0 ? src_path : tgt_path, lineno, ns == 0 ? tgt_path : src_path);
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
        line_encoding enc = {tok, max_len, &c->truncated};
        int n = encode_line(&buf, &enc, prompt, tail, ls, src_path, lineno);
        if (n < 0) goto out;
        c->src_len[c->n] = n;
        c->tgt_start[c->n] = buf.n;
        n = encode_line(&buf, &enc, NULL, 0, lt, tgt_path, lineno);
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
    mt_line_reader_free(&rs);
    mt_line_reader_free(&rt);
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

void mt_name_pool_free(mt_name_pool *np)
{
    for (size_t i = 0; i < np->n; i++) {
        free(np->src[i]);
        free(np->tgt[i]);
        mt_entity_set_free(&np->names[i]);
    }
    free(np->pair);
    free(np->src);
    free(np->tgt);
    free(np->names);
    mt_gazetteer_free(&np->gaz);
    memset(np, 0, sizeof *np);
}

int mt_name_pool_build(mt_name_pool *np, const char *src_path, const char *tgt_path,
                       mt_ner_lang lang, const char *gazetteer_path, double p)
{
    memset(np, 0, sizeof *np);
    np->p = p;
    if (mt_gazetteer_load(&np->gaz, gazetteer_path) != 0) return -1;
    mt_text_lines src = {0}, tgt = {0};
    int rc = -1;
    if (mt_text_lines_read(&src, src_path) != 0 || mt_text_lines_read(&tgt, tgt_path) != 0)
        goto out;
    if (src.n != tgt.n) {
        mt_error("%s has %zu lines but %s has %zu", src_path, src.n, tgt_path, tgt.n);
        goto out;
    }
    size_t room = 0;
    for (size_t i = 0; i < src.n; i++) {
        mt_entity_set names;
        if (mt_names_shared(&names, src.lines[i], tgt.lines[i], lang) != 0) {
            mt_error_context("%s:%zu", tgt_path, i + 1);
            goto out;
        }
        if (names.n == 0) {
            mt_entity_set_free(&names);
            continue;
        }
        if (np->n == room) {
            room = room * 2 + 1024;
            np->pair = mt_xrealloc(np->pair, room * sizeof *np->pair);
            np->src = mt_xrealloc(np->src, room * sizeof *np->src);
            np->tgt = mt_xrealloc(np->tgt, room * sizeof *np->tgt);
            np->names = mt_xrealloc(np->names, room * sizeof *np->names);
        }
        np->pair[np->n] = (uint32_t)i;
        np->src[np->n] = src.lines[i];
        np->tgt[np->n] = tgt.lines[i];
        src.lines[i] = tgt.lines[i] = NULL; /* the pool owns them now */
        np->names[np->n++] = names;
    }
    rc = 0;
out:
    mt_text_lines_free(&src);
    mt_text_lines_free(&tgt);
    if (rc != 0) mt_name_pool_free(np);
    return rc;
}

/* The RNG stream of name substitution (batches.c holds the data pipeline's others). */
enum { STREAM_NAMES = 0x40000 };

int mt_corpus_substitute_names(mt_corpus *out, const mt_corpus *base, const mt_name_pool *np,
                               const mt_tokenizer *tok, int max_len, uint64_t seed, uint64_t epoch,
                               size_t *substituted)
{
    memset(out, 0, sizeof *out);
    if (np->n && np->pair[np->n - 1] >= base->n)
        return mt_error("name substitution: the corpus has %zu pairs but its texts more", base->n);
    size_t n = base->n, max_names = 0, count = 0, k = 0;
    for (size_t j = 0; j < np->n; j++)
        if (np->names[j].n > max_names) max_names = np->names[j].n;
    const char **chosen = mt_xmalloc((max_names ? max_names : 1) * sizeof *chosen);
    out->n = n;
    out->truncated = base->truncated;
    out->src_start = mt_xmalloc(n * sizeof *out->src_start);
    out->tgt_start = mt_xmalloc(n * sizeof *out->tgt_start);
    out->src_len = mt_xmalloc(n * sizeof *out->src_len);
    out->tgt_len = mt_xmalloc(n * sizeof *out->tgt_len);
    ids_buf buf = {0};
    mt_rng rng;
    mt_rng_init(&rng, seed, STREAM_NAMES + epoch);
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        char *s = NULL, *t = NULL;
        if (k < np->n && np->pair[k] == i) {
            mt_name_draw draw = {&np->gaz, np->p, &rng};
            int r =
                mt_names_substitute(&s, &t, chosen, np->src[k], np->tgt[k], &np->names[k], &draw);
            k++;
            if (r < 0) {
                rc = mt_error_context("pair %zu", i + 1);
                break;
            }
            count += (size_t)r;
        }
        if (s) {
            /* truncations of the new texts are not counted again: base counted the pair's */
            size_t cut = 0;
            out->src_start[i] = buf.n;
            line_encoding enc = {tok, max_len, &cut};
            out->src_len[i] = encode_line(&buf, &enc, NULL, 0, s, "substituted pair", i + 1);
            out->tgt_start[i] = buf.n;
            out->tgt_len[i] = encode_line(&buf, &enc, NULL, 0, t, "substituted pair", i + 1);
            if (out->src_len[i] < 0 || out->tgt_len[i] < 0) rc = -1;
        } else {
            out->src_start[i] = buf.n;
            ids_push(&buf, base->ids + base->src_start[i], (size_t)base->src_len[i]);
            out->tgt_start[i] = buf.n;
            ids_push(&buf, base->ids + base->tgt_start[i], (size_t)base->tgt_len[i]);
            out->src_len[i] = base->src_len[i];
            out->tgt_len[i] = base->tgt_len[i];
        }
        free(s);
        free(t);
    }
    free(chosen);
    out->ids = buf.v;
    if (rc != 0) {
        mt_corpus_free(out);
        return -1;
    }
    if (substituted) *substituted = count;
    return 0;
}
