/* `mtlab data import`: any parallel corpus into a dataset directory (mtlab/dataset.h).
 *
 *   sources (two files, or TSV columns) --read, mt_text_clean--> pairs, bad lines counted
 *   --filters: empty, too long, length ratio, exact duplicate, in the given valid/test-->
 *   --split: given files, or a seeded draw of N (or a fraction of) the kept pairs-->
 *   DIR/{train,valid,test}.{SRC,TGT,keys} + manifest.json, renamed into place together */
#include "data/manifest.h"
#include "data/out_files.h"
#include "data/sha256.h"
#include "mtlab/dataset.h"
#include "mtlab/error.h"
#include "mtlab/files.h"
#include "mtlab/rng.h"
#include "mtlab/utf8.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum { DEFAULT_MAX_WORDS = 250, RATIO_MIN_CHARS = 10, SPLIT_STREAM = 0x60000 };
#define DEFAULT_MAX_RATIO 3.0

enum { SPLIT_TRAIN, SPLIT_VALID, SPLIT_TEST };
static const char *const SPLIT_NAMES[] = {"train", "valid", "test"};

typedef struct {
    char *src, *tgt;
    const char *file; /* origin, for the .keys file (the path as given) */
    size_t line;
    int split;
} pair;

typedef struct {
    pair *items; /* (n) */
    size_t n, cap;
} pair_list;

typedef struct {
    const mt_import_opts *o;
    mt_import_counts *c;
    size_t bytes_done, bytes_total;
} import_state;

static void pairs_free(pair_list *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->items[i].src);
        free(l->items[i].tgt);
    }
    free(l->items);
    memset(l, 0, sizeof *l);
}

static void pairs_push(pair_list *l, char *src, char *tgt, const char *file, size_t line, int split)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 1024;
        l->items = mt_xrealloc(l->items, l->cap * sizeof *l->items);
    }
    l->items[l->n++] = (pair){src, tgt, file, line, split};
}

static void report_bad(const import_state *st, const char *file, size_t line, const char *problem)
{
    st->c->bad_line++;
    if (st->o->bad_line) st->o->bad_line(st->o->ud, file, line, problem);
}

/* ---------------------------------------------------------------- filters */
static size_t words_of(const char *s)
{
    size_t n = 0;
    for (const char *p = s; *p; p++) n += *p != ' ' && (p == s || p[-1] == ' ');
    return n;
}

static size_t chars_of(const char *s)
{
    size_t n = 0;
    for (const char *p = s; *p; p++) n += ((unsigned char)*p & 0xC0) != 0x80;
    return n;
}

/* Which filter drops the cleaned pair: a counter to bump, or NULL to keep it. */
static size_t *dropped_by(const import_state *st, const char *src, const char *tgt)
{
    if (!src[0] || !tgt[0]) return &st->c->empty;
    size_t max_words = st->o->max_words ? st->o->max_words : DEFAULT_MAX_WORDS;
    if (words_of(src) > max_words || words_of(tgt) > max_words) return &st->c->too_long;
    double max_ratio = st->o->max_ratio > 0 ? st->o->max_ratio : DEFAULT_MAX_RATIO;
    size_t a = chars_of(src), b = chars_of(tgt), lo = a < b ? a : b, hi = a < b ? b : a;
    if (hi >= RATIO_MIN_CHARS && (double)hi > max_ratio * (double)lo) return &st->c->ratio;
    return NULL;
}

/* Exact pairs: an open-addressing table of indices into a pair_list (index + 1; 0 is empty). */
typedef struct {
    size_t *slots; /* (cap) */
    size_t cap, n;
} pair_set;

static uint64_t pair_hash(const char *src, const char *tgt)
{
    uint64_t h = 1469598103934665603ull;
    for (const char *p = src; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ull;
    h = (h ^ 1u) * 1099511628211ull; /* no cleaned text holds U+0001 */
    for (const char *p = tgt; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ull;
    return h;
}

/* 1 when pairs[i]'s text is already in the set, else adds it and returns 0. */
static int pair_set_seen(pair_set *s, const pair_list *l, size_t i)
{
    if (2 * (s->n + 1) > s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 4096;
        size_t *slots = mt_xcalloc(cap, sizeof *slots);
        for (size_t k = 0; k < s->cap; k++) {
            if (!s->slots[k]) continue;
            const pair *p = &l->items[s->slots[k] - 1];
            size_t at = pair_hash(p->src, p->tgt) & (cap - 1);
            while (slots[at]) at = (at + 1) & (cap - 1);
            slots[at] = s->slots[k];
        }
        free(s->slots);
        s->slots = slots;
        s->cap = cap;
    }
    const pair *p = &l->items[i];
    size_t at = pair_hash(p->src, p->tgt) & (s->cap - 1);
    for (; s->slots[at]; at = (at + 1) & (s->cap - 1)) {
        const pair *q = &l->items[s->slots[at] - 1];
        if (!strcmp(q->src, p->src) && !strcmp(q->tgt, p->tgt)) return 1;
    }
    s->slots[at] = i + 1;
    s->n++;
    return 0;
}

/* ---------------------------------------------------------------- reading */
typedef struct {
    const char *path;
    FILE *f;
    mt_line_reader lr;
    sha256_ctx sha;
} line_source;

static int source_open(line_source *s, const char *path)
{
    memset(s, 0, sizeof *s);
    s->path = path;
    if (!(s->f = mt_file_fopen(path, MT_FILE_STREAM))) return -1;
    mt_line_reader_init(&s->lr, s->f, path, 0);
    s->lr.hint = "one sentence per line expected";
    sha256_init(&s->sha);
    return 0;
}

/* The next line (a final '\r' cut): 1, 0 at the end, -1 on an error naming file and line. */
static int source_next(line_source *s, char **line, size_t *len)
{
    int got = mt_line_next(&s->lr, line, len);
    if (got <= 0) return got;
    sha256_update(&s->sha, *line, *len);
    sha256_update(&s->sha, "\n", 1);
    if (*len > 0 && (*line)[*len - 1] == '\r') (*line)[--*len] = '\0';
    return 1;
}

static void source_close(line_source *s)
{
    if (s->f) {
        mt_line_reader_free(&s->lr);
        fclose(s->f);
    }
    s->f = NULL;
}

/* obj's keys updated from more's, which is released. */
static void update_new(json_t *obj, json_t *more)
{
    json_object_update(obj, more);
    json_decref(more);
}

static size_t file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) ? (size_t)st.st_size : 0;
}

/* Clean one side; NULL after reporting a bad line (invalid UTF-8). */
static char *clean_side(import_state *st, const char *file, size_t line, const char *text,
                        size_t len, int *flags)
{
    int f = 0;
    char *out = mt_text_clean(text, len, &f);
    if (!out) {
        report_bad(st, file, line, mt_last_error());
        return NULL;
    }
    *flags |= f;
    return out;
}

/* One side of a pair as read: its file, its text text[0..len). */
typedef struct {
    const char *file;
    const char *text;
    size_t len;
} pair_side;

/* A cleaned pair of line `line` into l (split `split`), or counted as bad. */
static void add_pair(import_state *st, pair_list *l, const pair_side *s, const pair_side *t,
                     size_t line, int split)
{
    int flags = 0;
    char *src = clean_side(st, s->file, line, s->text, s->len, &flags);
    char *tgt = src ? clean_side(st, t->file, line, t->text, t->len, &flags) : NULL;
    if (!tgt) {
        free(src);
        return;
    }
    st->c->nfc_changed += (flags & MT_CLEAN_NFC) != 0;
    st->c->control_removed += (flags & MT_CLEAN_CONTROL) != 0;
    pairs_push(l, src, tgt, s->file, line, split);
}

static void progress(import_state *st, size_t bytes)
{
    st->bytes_done += bytes;
    if (st->o->progress) st->o->progress(st->o->ud, st->bytes_done, st->bytes_total);
}

/* Two aligned files; info gets the source's manifest entry. */
static int read_two_files(import_state *st, const char *sp, const char *tp, int split, pair_list *l,
                          json_t *info)
{
    line_source s, t;
    if (source_open(&s, sp) < 0) return -1;
    if (source_open(&t, tp) < 0) {
        source_close(&s);
        return -1;
    }
    size_t before = st->c->read, lines = 0;
    int rc = 0;
    for (;;) {
        char *a, *b;
        size_t alen, blen;
        int ga = source_next(&s, &a, &alen);
        if (ga < 0) {
            rc = -1;
            break;
        }
        /* the target's line is read before a is used: a is valid until s's next read */
        int gb = source_next(&t, &b, &blen);
        if (gb < 0) {
            rc = -1;
            break;
        }
        if (ga == 0 || gb == 0) {
            if (ga == gb) break;
            line_source *longer = ga ? &s : &t;
            size_t n = lines + 1;
            char *x;
            size_t xl;
            int g;
            while ((g = source_next(longer, &x, &xl)) > 0) n++;
            rc = g < 0 ? -1
                       : mt_error(
                             "%s has %zu lines but %s has %zu: the two files must be line-aligned",
                             sp, ga ? n : lines, tp, gb ? n : lines);
            break;
        }
        lines++;
        size_t n_before = l->n;
        if (split == SPLIT_TRAIN) {
            st->c->read++;
            st->bytes_done += alen + blen + 2;
            if ((lines & 1023) == 0) progress(st, 0);
        }
        add_pair(st, l, &(pair_side){sp, a, alen}, &(pair_side){tp, b, blen}, lines, split);
        if (split != SPLIT_TRAIN && l->n == n_before) { /* a given file is kept whole */
            rc = mt_error_context("%s and %s, line %zu: a line of the given %s files", sp, tp,
                                  lines, SPLIT_NAMES[split]);
            break;
        }
    }
    char hs[65], ht[65];
    sha256_hex(&s.sha, hs);
    sha256_hex(&t.sha, ht);
    source_close(&s);
    source_close(&t);
    if (rc == 0 && info)
        update_new(info, json_pack("{s:s, s:s, s:I, s:s, s:s}", "src", sp, "tgt", tp, "lines",
                                   (json_int_t)(st->c->read - before), "src_sha256", hs,
                                   "tgt_sha256", ht));
    return rc;
}

/* Column col (1-based) of a tab-separated line: its start and length, or -1 when missing. */
static int tsv_column(const char *line, size_t len, int col, const char **start, size_t *n)
{
    const char *p = line, *end = line + len;
    for (int c = 1; c < col; c++) {
        const char *tab = memchr(p, '\t', (size_t)(end - p));
        if (!tab) return -1;
        p = tab + 1;
    }
    const char *tab = memchr(p, '\t', (size_t)(end - p));
    *start = p;
    *n = (size_t)((tab ? tab : end) - p);
    return 0;
}

static int read_tsv(import_state *st, const mt_import_source *src, pair_list *l, json_t *info)
{
    line_source s;
    if (source_open(&s, src->src) < 0) return -1;
    size_t before = st->c->read;
    char *line;
    size_t len;
    int got;
    while ((got = source_next(&s, &line, &len)) > 0) {
        st->c->read++;
        st->bytes_done += len + 1;
        if ((s.lr.line_no & 1023) == 0) progress(st, 0);
        const char *a, *b;
        size_t alen, blen;
        if (tsv_column(line, len, src->src_col, &a, &alen) < 0 ||
            tsv_column(line, len, src->tgt_col, &b, &blen) < 0) {
            char why[96];
            size_t cols = 1;
            for (size_t i = 0; i < len; i++) cols += line[i] == '\t';
            snprintf(why, sizeof why, "%zu column%s, no column %d", cols, cols == 1 ? "" : "s",
                     src->src_col > src->tgt_col ? src->src_col : src->tgt_col);
            report_bad(st, src->src, s.lr.line_no, why);
            continue;
        }
        add_pair(st, l, &(pair_side){src->src, a, alen}, &(pair_side){src->src, b, blen},
                 s.lr.line_no, SPLIT_TRAIN);
    }
    char h[65];
    sha256_hex(&s.sha, h);
    source_close(&s);
    if (got < 0) return -1;
    update_new(info,
               json_pack("{s:s, s:[i,i], s:I, s:s}", "tsv", src->src, "columns", src->src_col,
                         src->tgt_col, "lines", (json_int_t)(st->c->read - before), "sha256", h));
    return 0;
}

/* ---------------------------------------------------------------- splitting and writing */
enum { AUTO_MAX = 1000 };
#define AUTO_FRACTION 0.05

static size_t split_count(size_t n, double frac, size_t kept)
{
    if (n == MT_SPLIT_AUTO) {
        size_t k = (size_t)(AUTO_FRACTION * (double)kept + 0.5);
        return k > AUTO_MAX ? AUTO_MAX : k;
    }
    return n ? n : (size_t)(frac * (double)kept + 0.5);
}

static int choose_splits(const mt_import_opts *o, pair_list *train, json_t *split_info)
{
    size_t kept = 0;
    for (size_t i = 0; i < train->n; i++) kept += train->items[i].split == SPLIT_TRAIN;
    size_t want[3] = {0, o->valid_files[0] ? 0 : split_count(o->valid_n, o->valid_frac, kept),
                      o->test_files[0] ? 0 : split_count(o->test_n, o->test_frac, kept)};
    if (want[1] + want[2] >= kept && want[1] + want[2] > 0)
        return mt_error(
            "valid (%zu) and test (%zu) pairs would leave no training pair of the %zu kept",
            want[1], want[2], kept);
    if (want[1] + want[2] == 0) return 0;
    size_t *idx = mt_xmalloc(kept * sizeof *idx), k = 0;
    for (size_t i = 0; i < train->n; i++)
        if (train->items[i].split == SPLIT_TRAIN) idx[k++] = i;
    mt_rng rng;
    mt_rng_init(&rng, o->seed, SPLIT_STREAM);
    for (size_t i = 0; i < want[1] + want[2]; i++) { /* a partial Fisher-Yates shuffle */
        size_t j = i + (size_t)mt_rng_below(&rng, kept - i), t = idx[i];
        idx[i] = idx[j];
        idx[j] = t;
        train->items[idx[i]].split = i < want[1] ? SPLIT_VALID : SPLIT_TEST;
    }
    free(idx);
    for (int s = 1; s < 3; s++)
        if (want[s])
            json_object_set_new(split_info, SPLIT_NAMES[s],
                                json_pack("{s:s, s:I, s:I}", "from", "train", "pairs",
                                          (json_int_t)want[s], "seed", (json_int_t)o->seed));
    return 0;
}

static void write_split(out_set *set, const char *dir, const mt_import_opts *o, const pair_list *l,
                        int split)
{
    size_t n = 0;
    for (size_t i = 0; i < l->n; i++) n += l->items[i].split == split;
    if (n == 0) return;
    const char *ext[3] = {o->src_lang, o->tgt_lang, "keys"};
    for (int side = 0; side < 3; side++) {
        char name[MT_LANG_MAX + 16];
        snprintf(name, sizeof name, "%s.%s", SPLIT_NAMES[split], ext[side]);
        FILE *f = out_open(set, dir, name);
        if (!f) return;
        for (size_t i = 0; i < l->n; i++) {
            const pair *p = &l->items[i];
            if (p->split != split) continue;
            if (side == 2) fprintf(f, "%s:%zu\n", p->file, p->line);
            else fprintf(f, "%s\n", side ? p->tgt : p->src);
        }
    }
}

static int check_opts(const mt_import_opts *o)
{
    if (!o->src_lang || !o->tgt_lang)
        return mt_error("the source and target languages must be given");
    if (mt_lang_check(o->src_lang) < 0 || mt_lang_check(o->tgt_lang) < 0) return -1;
    if (!strcmp(o->src_lang, o->tgt_lang) || !strcmp(o->src_lang, "keys") ||
        !strcmp(o->tgt_lang, "keys"))
        return mt_error("source and target languages must differ (both '%s': the split files are "
                        "named by them)",
                        o->src_lang);
    if (o->n_sources == 0) return mt_error("no training source given");
    for (size_t i = 0; i < o->n_sources; i++)
        if (!o->sources[i].tgt && (o->sources[i].src_col < 1 || o->sources[i].tgt_col < 1 ||
                                   o->sources[i].src_col == o->sources[i].tgt_col))
            return mt_error(
                "%s: TSV columns must be two different columns counted from 1 (e.g. 1,2)",
                o->sources[i].src);
    if (o->valid_frac < 0 || o->valid_frac >= 1 || o->test_frac < 0 || o->test_frac >= 1)
        return mt_error("a valid or test fraction must be in [0, 1)");
    return 0;
}

int mt_dataset_import(const mt_import_opts *o, const char *dir, mt_import_counts *counts)
{
    memset(counts, 0, sizeof *counts);
    if (check_opts(o) < 0) return -1;
    import_state st = {o, counts, 0, 0};
    for (size_t i = 0; i < o->n_sources; i++)
        st.bytes_total +=
            file_size(o->sources[i].src) + (o->sources[i].tgt ? file_size(o->sources[i].tgt) : 0);
    pair_list given = {0}, train = {0};
    pair_set seen = {0};
    json_t *info = json_object(), *sources = json_array(), *split_info = json_object();
    json_object_set_new(info, "sources", sources);
    int rc = 0;
    /* the given valid and test files first: training pairs equal to one of theirs are dropped */
    const char *const *given_files[3] = {NULL, o->valid_files, o->test_files};
    for (int s = 1; s < 3 && rc == 0; s++) {
        if (!given_files[s][0]) continue;
        mt_import_counts ignored = {0};
        mt_import_opts quiet = *o; /* a bad line of a given file is an error, not a warning */
        quiet.bad_line = NULL;
        import_state gst = {&quiet, &ignored, 0, 0};
        rc = read_two_files(&gst, given_files[s][0], given_files[s][1], s, &given, NULL);
        if (rc == 0)
            json_object_set_new(
                split_info, SPLIT_NAMES[s],
                json_pack("{s:[s,s]}", "files", given_files[s][0], given_files[s][1]));
    }
    for (size_t i = 0; i < given.n; i++) pair_set_seen(&seen, &given, i);
    pair_set train_seen = {0};
    for (size_t i = 0; i < o->n_sources && rc == 0; i++) {
        json_t *entry = json_object();
        size_t first = train.n, bad_before = counts->bad_line;
        rc = o->sources[i].tgt ? read_two_files(&st, o->sources[i].src, o->sources[i].tgt,
                                                SPLIT_TRAIN, &train, entry)
                               : read_tsv(&st, &o->sources[i], &train, entry);
        size_t kept = 0;
        for (size_t k = first; k < train.n && rc == 0; k++) {
            pair *p = &train.items[k];
            size_t *drop = dropped_by(&st, p->src, p->tgt);
            if (!drop && given.n) {
                /* look the pair up in the given files' set without adding it */
                size_t at = pair_hash(p->src, p->tgt) & (seen.cap - 1);
                for (; seen.slots[at] && !drop; at = (at + 1) & (seen.cap - 1)) {
                    const pair *q = &given.items[seen.slots[at] - 1];
                    if (!strcmp(q->src, p->src) && !strcmp(q->tgt, p->tgt)) drop = &counts->overlap;
                }
            }
            if (!drop && pair_set_seen(&train_seen, &train, k)) drop = &counts->duplicate;
            if (drop) {
                (*drop)++;
                p->split = -1;
            } else {
                kept++;
            }
        }
        json_object_set_new(entry, "kept", json_integer((json_int_t)kept));
        json_object_set_new(entry, "bad_lines",
                            json_integer((json_int_t)(counts->bad_line - bad_before)));
        json_array_append_new(sources, entry);
    }
    free(seen.slots);
    free(train_seen.slots);
    if (rc == 0) progress(&st, 0);
    counts->kept = counts->read - counts->bad_line - counts->empty - counts->too_long -
                   counts->ratio - counts->duplicate - counts->overlap;
    if (rc == 0 && counts->kept == 0)
        rc = mt_error("no pair is left after the filters (%zu read)", counts->read);
    if (rc == 0) rc = choose_splits(o, &train, split_info);
    if (rc == 0) {
        for (size_t i = 0; i < given.n; i++)
            pairs_push(&train, given.items[i].src, given.items[i].tgt, given.items[i].file,
                       given.items[i].line, given.items[i].split);
        given.n = 0; /* the texts moved to train */
        for (size_t i = 0; i < train.n; i++)
            if (train.items[i].split >= 0) counts->split[train.items[i].split]++;
        json_object_set_new(
            info, "filters",
            json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "read",
                      (json_int_t)counts->read, "bad_line", (json_int_t)counts->bad_line, "empty",
                      (json_int_t)counts->empty, "too_long", (json_int_t)counts->too_long, "ratio",
                      (json_int_t)counts->ratio, "duplicate", (json_int_t)counts->duplicate,
                      "overlap", (json_int_t)counts->overlap, "kept", (json_int_t)counts->kept,
                      "nfc_changed", (json_int_t)counts->nfc_changed, "control_removed",
                      (json_int_t)counts->control_removed));
        json_object_set_new(info, "limits",
                            json_pack("{s:I, s:f, s:i}", "max_words",
                                      (json_int_t)(o->max_words ? o->max_words : DEFAULT_MAX_WORDS),
                                      "max_ratio",
                                      o->max_ratio > 0 ? o->max_ratio : DEFAULT_MAX_RATIO,
                                      "ratio_min_chars", RATIO_MIN_CHARS));
        json_object_set_new(info, "split", json_incref(split_info));
        rc = out_dir_make(dir);
    }
    if (rc == 0) {
        out_set set = {0};
        for (int s = 0; s < 3; s++) write_split(&set, dir, o, &train, s);
        rc = manifest_write(&set, dir, o->src_lang, o->tgt_lang, info);
        info = NULL;
        if (out_commit(&set) < 0) rc = -1;
    }
    json_decref(info);
    json_decref(split_info);
    pairs_free(&given);
    pairs_free(&train);
    return rc;
}
