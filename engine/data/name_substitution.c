/* Name substitution and its gazetteer (mtlab/names.h, docs/data.md §7–8). */
#include "mtlab/error.h"
#include "mtlab/files.h"
#include "mtlab/names.h"

#include "data/strmap.h"
#include "eval/entities_words.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void mt_gazetteer_free(mt_gazetteer *g)
{
    for (size_t i = 0; i < g->n; i++) free(g->names[i]);
    free(g->names);
    memset(g, 0, sizeof *g);
}

/* NULL when line is one name-shaped word and nothing else, else what is wrong with it. */
static const char *gazetteer_line_problem(const char *line)
{
    entity_words ws;
    if (entity_words_split(&ws, line) < 0) return "invalid UTF-8";
    const char *problem = NULL;
    if (ws.n != 1 || ws.w[0].start != 0 || line[ws.w[0].end] != '\0') problem = "not a single word";
    else if (!entity_word_name_shaped(&ws.w[0]))
        problem = "not a name (capitalised, two or more characters, not all capitals)";
    entity_words_free(&ws);
    return problem;
}

int mt_gazetteer_load(mt_gazetteer *g, const char *path)
{
    memset(g, 0, sizeof *g);
    FILE *f = mt_file_fopen(path, MT_FILE_REGULAR);
    if (!f) return -1;
    strmap seen = {0};
    mt_line_reader lr;
    mt_line_reader_init(&lr, f, path, 0);
    lr.hint = "one name per line expected";
    char *line;
    size_t len, lineno = 0, room = 0;
    int rc = 0, got;
    while ((got = mt_line_next(&lr, &line, &len)) > 0) {
        lineno++;
        while (len > 0 && line[len - 1] == '\r') line[--len] = '\0';
        const char *problem = gazetteer_line_problem(line);
        if (problem) {
            rc = mt_error("%s:%zu: \"%.40s\": %s", path, lineno, line, problem);
            break;
        }
        int inserted;
        strmap_put(&seen, line, len, lineno, &inserted);
        if (!inserted) {
            rc = mt_error("%s:%zu: \"%s\" is listed twice", path, lineno, line);
            break;
        }
        if (g->n == room) {
            room = room * 2 + 256;
            g->names = mt_xrealloc(g->names, room * sizeof *g->names);
        }
        g->names[g->n++] = mt_xstrdup(line);
    }
    if (rc == 0 && got < 0) rc = -1;
    if (rc == 0 && g->n == 0) rc = mt_error("%s: no names", path);
    mt_line_reader_free(&lr);
    fclose(f);
    strmap_free(&seen);
    if (rc != 0) mt_gazetteer_free(g);
    return rc;
}

int mt_names_shared(mt_entity_set *out, const char *src, const char *tgt, mt_ner_lang lang)
{
    memset(out, 0, sizeof *out);
    mt_text_span *spans;
    size_t n_spans;
    if (mt_entities_find(&spans, &n_spans, tgt, lang) < 0) return mt_error_context("target");
    entity_words sw, tw;
    if (entity_words_split(&sw, src) < 0) {
        free(spans);
        return mt_error_context("source");
    }
    entity_words_split(&tw, tgt); /* valid: the recogniser read it */
    strmap src_words = {0}, seen = {0};
    for (size_t i = 0; i < sw.n; i++)
        strmap_put(&src_words, src + sw.w[i].start, sw.w[i].end - sw.w[i].start, 0, NULL);
    size_t room = 0, s = 0;
    for (size_t i = 0; i < tw.n; i++) {
        const entity_word *w = &tw.w[i];
        while (s < n_spans && spans[s].end <= w->start) s++;
        if (s == n_spans || w->start < spans[s].start) continue; /* outside every entity */
        const char *word = tgt + w->start;
        size_t len = w->end - w->start;
        if (!entity_word_name_shaped(w) || !strmap_get(&src_words, word, len)) continue;
        int inserted;
        strmap_put(&seen, word, len, 0, &inserted);
        if (!inserted) continue;
        if (out->n == room) {
            room = room * 2 + 4;
            out->names = mt_xrealloc(out->names, room * sizeof *out->names);
        }
        char *copy = mt_xmalloc(len + 1);
        memcpy(copy, word, len);
        copy[len] = '\0';
        out->names[out->n++] = copy;
    }
    strmap_free(&src_words);
    strmap_free(&seen);
    entity_words_free(&sw);
    entity_words_free(&tw);
    free(spans);
    return 0;
}

char *mt_name_replace(const char *text, const char *name, const char *repl, size_t *count)
{
    entity_words ws;
    if (entity_words_split(&ws, text) < 0) return NULL;
    size_t name_len = strlen(name), repl_len = strlen(repl), text_len = strlen(text), hits = 0;
    for (size_t i = 0; i < ws.n; i++)
        hits += ws.w[i].end - ws.w[i].start == name_len &&
                !memcmp(text + ws.w[i].start, name, name_len);
    char *out = mt_xmalloc(text_len + hits * repl_len + 1), *o = out;
    size_t at = 0;
    for (size_t i = 0; i < ws.n && hits; i++) {
        const entity_word *w = &ws.w[i];
        if (w->end - w->start != name_len || memcmp(text + w->start, name, name_len)) continue;
        memcpy(o, text + at, w->start - at);
        o += w->start - at;
        memcpy(o, repl, repl_len);
        o += repl_len;
        at = w->end;
    }
    memcpy(o, text + at, text_len - at);
    o[text_len - at] = '\0';
    entity_words_free(&ws);
    if (count) *count = hits;
    return out;
}

/* A gazetteer name none of chosen[0..n) holds, or NULL when the gazetteer has too few. */
static const char *draw_name(const mt_gazetteer *g, const char *const *chosen, size_t n,
                             mt_rng *rng)
{
    size_t taken = 0;
    for (size_t k = 0; k < n; k++) taken += chosen[k] != NULL;
    if (taken >= g->n) return NULL;
    for (;;) {
        const char *pick = g->names[mt_rng_below(rng, g->n)];
        size_t k = 0;
        while (k < n && chosen[k] != pick) k++;
        if (k == n) return pick;
    }
}

int mt_names_substitute(char **src_out, char **tgt_out, const char **chosen, const char *src,
                        const char *tgt, const mt_entity_set *names, const mt_name_draw *draw)
{
    const mt_gazetteer *g = draw->g;
    double p = draw->p;
    mt_rng *rng = draw->rng;
    *src_out = *tgt_out = NULL;
    int replaced = 0;
    for (size_t k = 0; k < names->n; k++) {
        chosen[k] = NULL;
        if (p <= 0 || mt_rng_uniform_double(rng) >= p) continue;
        chosen[k] = draw_name(g, chosen, k, rng);
        replaced += chosen[k] != NULL;
    }
    if (!replaced) return 0;
    char *s = mt_xstrdup(src), *t = mt_xstrdup(tgt);
    for (size_t k = 0; k < names->n && s && t; k++) {
        if (!chosen[k]) continue;
        char *s2 = mt_name_replace(s, names->names[k], chosen[k], NULL);
        char *t2 = mt_name_replace(t, names->names[k], chosen[k], NULL);
        free(s);
        free(t);
        s = s2;
        t = t2;
    }
    if (!s || !t) {
        free(s);
        free(t);
        return mt_error("name substitution: invalid UTF-8");
    }
    *src_out = s;
    *tgt_out = t;
    return replaced;
}
