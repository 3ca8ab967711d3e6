#include "tui/save.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mtlab/error.h"

static int put_field(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        int r = *s == '\t'   ? fputs("\\t", f)
                : *s == '\n' ? fputs("\\n", f)
                : *s == '\\' ? fputs("\\\\", f)
                             : fputc(*s, f);
        if (r == EOF) return -1;
    }
    return 0;
}

static const char *const verdict_name[] = {"copied", "translated", "dropped"};

/* The distinct names of segment i (the first span of each), and each one's fate in hyp. */
typedef struct {
    const char *name;
    size_t len;
    mt_entity_fate fate;
    const char *form; /* MT_ENTITY_TRANSLATED: the lexicon form found */
} verdict;

static size_t verdicts(const tui_save_entities *e, const char *src, int i, const char *hyp,
                       verdict **out)
{
    size_t n = e->n_spans[i], k = 0;
    *out = mt_xcalloc(n ? n : 1, sizeof **out);
    for (size_t s = 0; s < n; s++) {
        const mt_text_span *sp = &e->spans[i][s];
        verdict v = {src + sp->start, sp->end - sp->start, MT_ENTITY_DROPPED, NULL};
        int seen = 0;
        for (size_t j = 0; j < k; j++)
            seen |= (*out)[j].len == v.len && !memcmp((*out)[j].name, v.name, v.len);
        if (seen) continue;
        v.fate = mt_entity_fate_in(hyp, v.name, v.len, e->lexicon, &v.form);
        (*out)[k++] = v;
    }
    return k;
}

/* "translated Dios→God; dropped Aarón" */
static int put_verdicts(FILE *f, const tui_save_entities *e, const char *src, int i,
                        const char *hyp)
{
    if (!hyp) return 0;
    verdict *v;
    size_t n = verdicts(e, src, i, hyp, &v);
    int bad = 0;
    for (size_t k = 0; k < n; k++) {
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)v[k].len, v[k].name);
        bad |= (k && fputs("; ", f) == EOF) || fputs(verdict_name[v[k].fate], f) == EOF ||
               fputc(' ', f) == EOF || put_field(f, name) ||
               (v[k].form && (fputs("\xe2\x86\x92", f) == EOF || put_field(f, v[k].form)));
    }
    free(v);
    return bad ? -1 : 0;
}

static int write_tsv(FILE *f, char *const *sources, int n, const tui_save_column *cols, int n_cols,
                     const tui_save_entities *ents)
{
    int bad = fputs("source", f) == EOF;
    for (int c = 0; c < n_cols; c++) {
        bad |= fputc('\t', f) == EOF || put_field(f, cols[c].name) || fputs(" (", f) == EOF ||
               put_field(f, cols[c].search) || fputc(')', f) == EOF;
        if (ents)
            bad |= fputc('\t', f) == EOF || put_field(f, cols[c].name) || fputs(" names", f) == EOF;
    }
    bad |= fputc('\n', f) == EOF;
    for (int i = 0; i < n && !bad; i++) {
        bad |= put_field(f, sources[i]);
        for (int c = 0; c < n_cols; c++) {
            const char *hyp = i < cols[c].n_hyps ? cols[c].hyps[i] : NULL;
            bad |= fputc('\t', f) == EOF || put_field(f, hyp);
            if (ents) bad |= fputc('\t', f) == EOF || put_verdicts(f, ents, sources[i], i, hyp);
        }
        bad |= fputc('\n', f) == EOF;
    }
    return bad ? -1 : 0;
}

/* The pane's request figures, null when it has none. */
static json_t *stats_json(const tui_save_stats *st)
{
    if (!st->have) return json_null();
    return json_pack("{s:f, s:I, s:f, s:I, s:I}", "seconds", st->seconds, "tokens",
                     (json_int_t)st->tokens, "tokens_per_s",
                     st->seconds > 0 ? (double)st->tokens / st->seconds : 0.0, "model_state_bytes",
                     (json_int_t)st->model_state_bytes, "working_set_bytes",
                     (json_int_t)st->working_set_bytes);
}

static json_t *names_json(const tui_save_entities *e, const char *src, int i, const char *hyp)
{
    json_t *a = json_array();
    verdict *v;
    size_t n = verdicts(e, src, i, hyp, &v);
    for (size_t k = 0; k < n; k++) {
        json_t *o = json_object();
        json_object_set_new(o, "name", json_stringn(v[k].name, v[k].len));
        json_object_set_new(o, "verdict", json_string(verdict_name[v[k].fate]));
        json_object_set_new(o, "as", v[k].form ? json_string(v[k].form) : json_null());
        json_array_append_new(a, o);
    }
    free(v);
    return a;
}

static int write_jsonl(FILE *f, char *const *sources, int n, const tui_save_column *cols,
                       int n_cols, const tui_save_entities *ents)
{
    int bad = 0;
    for (int i = 0; i < n && !bad; i++) {
        json_t *row = json_object(), *outs = json_array();
        json_object_set_new(row, "segment", json_integer(i + 1));
        json_object_set_new(row, "source", json_string(sources[i]));
        for (int c = 0; c < n_cols; c++) {
            const tui_save_column *col = &cols[c];
            int have = i < col->n_hyps && col->hyps[i];
            json_t *o = json_object();
            json_object_set_new(o, "model", json_string(col->name));
            json_object_set_new(o, "bundle", json_string(col->dir));
            json_object_set_new(o, "search", json_string(col->search));
            json_object_set_new(o, "translation", have ? json_string(col->hyps[i]) : json_null());
            json_object_set_new(o, "finished", json_boolean(have && col->final[i]));
            if (ents && have)
                json_object_set_new(o, "names", names_json(ents, sources[i], i, col->hyps[i]));
            json_object_set_new(o, "request", stats_json(&col->stats));
            json_array_append_new(outs, o);
        }
        json_object_set_new(row, "translations", outs);
        char *line = json_dumps(row, JSON_COMPACT | JSON_PRESERVE_ORDER);
        bad |= !line || fputs(line, f) == EOF || fputc('\n', f) == EOF;
        free(line);
        json_decref(row);
    }
    return bad ? -1 : 0;
}

int tui_write_translations(FILE *tsv, FILE *jsonl, char *const *sources, int n,
                           const tui_save_column *cols, int n_cols, const tui_save_entities *ents)
{
    if (write_tsv(tsv, sources, n, cols, n_cols, ents) ||
        write_jsonl(jsonl, sources, n, cols, n_cols, ents))
        return mt_error("writing the translations failed: %s", strerror(errno));
    return 0;
}

/* Open path for writing only when it does not exist yet. */
static FILE *create_new(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0) return NULL;
    FILE *f = fdopen(fd, "w");
    if (!f) close(fd);
    return f;
}

int tui_create_save_files(const char *dir, FILE **tsv, FILE **jsonl, char *tsv_path,
                          char *jsonl_path, size_t len)
{
    char stamp[32];
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
    for (int k = 1; k < 1000; k++) {
        char suffix[16] = "";
        if (k > 1) snprintf(suffix, sizeof suffix, "-%d", k);
        snprintf(tsv_path, len, "%s/mtlab-translations-%s%s.tsv", dir, stamp, suffix);
        snprintf(jsonl_path, len, "%s/mtlab-translations-%s%s.jsonl", dir, stamp, suffix);
        if (access(jsonl_path, F_OK) == 0) continue;
        *tsv = create_new(tsv_path);
        if (!*tsv) {
            if (errno == EEXIST) continue;
            return mt_error("%s: %s", tsv_path, strerror(errno));
        }
        *jsonl = create_new(jsonl_path);
        if (*jsonl) return 0;
        int err = errno;
        fclose(*tsv);
        unlink(tsv_path);
        if (err != EEXIST) return mt_error("%s: %s", jsonl_path, strerror(err));
    }
    return mt_error("%s: no free name for mtlab-translations-%s (999 taken)", dir, stamp);
}
