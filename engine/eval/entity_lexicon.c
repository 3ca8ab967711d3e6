/* The bilingual entity lexicon (mtlab/entities.h, docs/metrics.md §8): which target forms the
 * names of the source side take in a training corpus, learned by co-occurrence over the
 * aligned pairs, and its entity_lexicon.tsv file.
 *
 *   dice(s, t) = 2 pairs(s, t) / (pairs(s) + pairs(t))
 *
 * pairs(x) counts the training pairs whose side contains word x (once per pair). Beside the
 * names it keeps the source side's ordinary words (lower-cased), so that the source detector
 * can tell a capitalised "Que" it knows from a name it has never seen. */
#include "eval/entities_words.h"
#include "mtlab/entities.h"
#include "eval/tsv_file.h"
#include "io/atomic_file.h"
#include "mtlab/error.h"
#include "mtlab/metrics.h"

#include "data/strmap.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LEXICON_MAGIC "# mtlab entity_lexicon 2"
#define LEXICON_MAGIC_1 "# mtlab entity_lexicon 1" /* names only: still read */
#define MAX_LEXICON_LINE 4096

typedef struct {
    char *name;
    size_t pairs; /* training pairs with the name */
    char *forms[MT_LEXICON_MAX_FORMS]; /* (n_forms) best first */
    double dice[MT_LEXICON_MAX_FORMS];
    size_t form_pairs[MT_LEXICON_MAX_FORMS];
    size_t n_forms;
} lexicon_entry;

struct mt_entity_lexicon {
    strmap index; /* name -> entry */
    lexicon_entry *entries; /* (n) */
    size_t n, cap;
    size_t pairs;
    strmap words; /* the source's ordinary words, lower-cased (values unused) */
    size_t header_words; /* words=N of a file's header, SIZE_MAX when it has none */
};

static lexicon_entry *add_entry(mt_entity_lexicon *l, const char *name, size_t len, size_t pairs)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 256;
        l->entries = mt_xrealloc(l->entries, l->cap * sizeof *l->entries);
    }
    lexicon_entry *e = &l->entries[l->n];
    memset(e, 0, sizeof *e);
    e->name = mt_xmalloc(len + 1);
    memcpy(e->name, name, len);
    e->name[len] = '\0';
    e->pairs = pairs;
    *strmap_put(&l->index, name, len, 0, NULL) = l->n++;
    return e;
}

static void add_form(lexicon_entry *e, const char *form, double dice, size_t pairs)
{
    e->forms[e->n_forms] = mt_xstrdup(form);
    e->dice[e->n_forms] = dice;
    e->form_pairs[e->n_forms++] = pairs;
}

void mt_entity_lexicon_free(mt_entity_lexicon *l)
{
    if (!l) return;
    for (size_t i = 0; i < l->n; i++) {
        free(l->entries[i].name);
        for (size_t k = 0; k < l->entries[i].n_forms; k++) free(l->entries[i].forms[k]);
    }
    free(l->entries);
    strmap_free(&l->index);
    strmap_free(&l->words);
    free(l);
}

/* ------------------------------------------------------------------ learning */

/* Per side: mid-sentence capitalised uses and lower-case uses of every word. */
typedef struct {
    strmap capitalised; /* name-shaped word -> uses not at a sentence start */
    strmap lower; /* word not starting with a capital -> uses */
    strmap names; /* the side's names -> pairs containing them (filled by the 2nd pass) */
} side_counts;

static void side_counts_free(side_counts *c)
{
    strmap_free(&c->capitalised);
    strmap_free(&c->lower);
    strmap_free(&c->names);
}

static int count_words(side_counts *c, const char *text)
{
    entity_words ws;
    if (entity_words_split(&ws, text) < 0) return -1;
    for (size_t i = 0; i < ws.n; i++) {
        const entity_word *w = &ws.w[i];
        size_t len = w->end - w->start;
        if (!(w->flags & WORD_CAPITALISED))
            (*strmap_put(&c->lower, text + w->start, len, 0, NULL))++;
        else if (entity_word_name_shaped(w) && !(w->flags & WORD_SENTENCE_START))
            (*strmap_put(&c->capitalised, text + w->start, len, 0, NULL))++;
    }
    /* names of several words ("Cristo Jesús", "Pedro Sánchez"), whole, where they stand
     * inside a sentence: a name of the side when twice so (pick_names) */
    for (size_t i = 0; i < ws.n; i++) {
        if (!entity_word_name_shaped(&ws.w[i])) continue;
        size_t last = entity_words_name_last(text, &ws, i);
        /* a sentence's first word stays out ("Ayer Pedro Sánchez" holds Pedro Sánchez) */
        size_t a = ws.w[i].flags & WORD_SENTENCE_START ? entity_words_name_next(text, &ws, i) : i;
        if (a && a != last)
            (*strmap_put(&c->capitalised, text + ws.w[a].start, ws.w[last].end - ws.w[a].start, 0,
                         NULL))++;
        i = last;
    }
    entity_words_free(&ws);
    return 0;
}

/* A name: capitalised mid-sentence at least twice and more often than written in lower case. */
static void pick_names(side_counts *c)
{
    for (size_t i = 0; i < c->capitalised.cap; i++) {
        const char *w = c->capitalised.keys[i];
        if (!w || c->capitalised.vals[i] < 2) continue;
        char *lower = mt_lowercase(w);
        const size_t *uses = lower ? strmap_get(&c->lower, lower, strlen(lower)) : NULL;
        if (!uses || *uses < c->capitalised.vals[i]) strmap_put(&c->names, w, strlen(w), 0, NULL);
        free(lower);
    }
}

/* Code points of a UTF-8 string. */
static size_t utf8_chars(const char *s)
{
    size_t n = 0;
    for (; *s; s++) n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

/* The ordinary words of a side, lower-cased into out: a word written in lower case more often
 * than any capitalised spelling of it stands in the middle of a sentence ("que", "banco"; not
 * "dios", whose Dios is mostly a name). Words a name could never be are left out: one letter
 * long, or starting with a digit. */
static void pick_words(strmap *out, const side_counts *c)
{
    strmap capitalised = {0}; /* lower-cased spelling -> most mid-sentence uses of one spelling */
    for (size_t i = 0; i < c->capitalised.cap; i++) {
        if (!c->capitalised.keys[i]) continue;
        char *lower = mt_lowercase(c->capitalised.keys[i]);
        size_t *most = strmap_put(&capitalised, lower, strlen(lower), 0, NULL);
        if (*most < c->capitalised.vals[i]) *most = c->capitalised.vals[i];
        free(lower);
    }
    for (size_t i = 0; i < c->lower.cap; i++) {
        const char *w = c->lower.keys[i];
        if (!w || utf8_chars(w) < 2 || (*w >= '0' && *w <= '9')) continue;
        char *lower = mt_lowercase(w);
        const size_t *mid = strmap_get(&capitalised, lower, strlen(lower));
        if (!mid || c->lower.vals[i] > *mid) strmap_put(out, lower, strlen(lower), 1, NULL);
        free(lower);
    }
    strmap_free(&capitalised);
}

static void push_distinct(mt_text_span **out, size_t *n, strmap *seen, const char *text,
                          mt_text_span span, const strmap *of, const strmap *also)
{
    const char *w = text + span.start;
    size_t len = span.end - span.start;
    if (!strmap_get(of, w, len) && !(also && strmap_get(also, w, len))) return;
    int inserted;
    strmap_put(seen, w, len, 0, &inserted);
    if (!inserted) return;
    *out = mt_xrealloc(*out, (*n + 1) * sizeof **out);
    (*out)[(*n)++] = span;
}

/* The distinct words of text that are keys of `of` (or, when also is not NULL, of also), as
 * [start, end) spans, *n set; then, from *n_words on, the distinct names of several words that
 * are. */
static int distinct_words(mt_text_span **out, size_t *n, size_t *n_words, const char *text,
                          const strmap *of, const strmap *also)
{
    *out = NULL;
    *n = 0;
    entity_words ws;
    if (entity_words_split(&ws, text) < 0) return -1;
    strmap seen = {0};
    for (size_t i = 0; i < ws.n; i++)
        push_distinct(out, n, &seen, text, (mt_text_span){ws.w[i].start, ws.w[i].end}, of, also);
    *n_words = *n;
    for (size_t i = 0; i < ws.n; i++) {
        if (!entity_word_name_shaped(&ws.w[i])) continue;
        size_t last = entity_words_name_last(text, &ws, i),
               next = entity_words_name_next(text, &ws, i);
        if (last != i)
            push_distinct(out, n, &seen, text, (mt_text_span){ws.w[i].start, ws.w[last].end}, of,
                          also);
        if (next && next != last) /* without its first word, which may only open the sentence */
            push_distinct(out, n, &seen, text, (mt_text_span){ws.w[next].start, ws.w[last].end}, of,
                          also);
        i = last;
    }
    strmap_free(&seen);
    entity_words_free(&ws);
    return 0;
}

typedef struct {
    const char *form;
    double dice;
    size_t pairs;
} candidate;

static size_t spaces(const char *s)
{
    size_t n = 0;
    for (; *s; s++) n += *s == ' ';
    return n;
}

/* Best dice first; on a tie the form of more words (a name of several words co-occurs as often
 * with its one-word parts), then bytewise. */
static int by_dice(const void *a, const void *b)
{
    const candidate *x = a, *y = b;
    if (x->dice != y->dice) return x->dice > y->dice ? -1 : 1;
    size_t wx = spaces(x->form), wy = spaces(y->form);
    if (wx != wy) return wx > wy ? -1 : 1;
    return strcmp(x->form, y->form);
}

/* 1 when word is one of the space-separated words of phrase (Peter of "Peter Sánchez": a part of
 * the best form is not another form). */
static int word_of(const char *phrase, const char *word)
{
    size_t len = strlen(word);
    for (const char *p = phrase; (p = strstr(p, word)); p++)
        if ((p == phrase || p[-1] == ' ') && (p[len] == ' ' || !p[len])) return 1;
    return 0;
}

/* Fills l's entries from the pair counts: joint maps "SOURCE\tTARGET" -> pairs. */
static void choose_forms(mt_entity_lexicon *l, const side_counts *s, const strmap *target_pairs,
                         const strmap *joint)
{
    size_t n;
    tsv_name_count *names = tsv_sorted_counts(&s->names, &n);
    for (size_t i = 0; i < n; i++)
        add_entry(l, names[i].name, strlen(names[i].name), names[i].count);
    free(names);

    /* the candidates of each name, gathered from the joint counts */
    candidate **cands = mt_xcalloc(l->n + 1, sizeof *cands);
    size_t *n_cands = mt_xcalloc(l->n + 1, sizeof *n_cands);
    for (size_t i = 0; i < joint->cap; i++) {
        const char *key = joint->keys[i];
        if (!key || joint->vals[i] < MT_LEXICON_MIN_PAIRS) continue;
        const char *tab = strchr(key, '\t');
        size_t id = *strmap_get(&l->index, key, (size_t)(tab - key));
        const size_t *tp = strmap_get(target_pairs, tab + 1, strlen(tab + 1));
        double dice = 2.0 * (double)joint->vals[i] / (double)(l->entries[id].pairs + *tp);
        if (dice < MT_LEXICON_MIN_DICE) continue;
        cands[id] = mt_xrealloc(cands[id], (n_cands[id] + 1) * sizeof **cands);
        cands[id][n_cands[id]++] = (candidate){tab + 1, dice, joint->vals[i]};
    }
    for (size_t id = 0; id < l->n; id++) {
        if (n_cands[id] > 1)
            qsort(cands[id], n_cands[id], sizeof **cands, by_dice); /* none: NULL */
        /* a further form needs half the best one's dice: co-occurring names are not forms */
        for (size_t k = 0; k < n_cands[id] && l->entries[id].n_forms < MT_LEXICON_MAX_FORMS &&
                           2 * cands[id][k].dice >= cands[id][0].dice;
             k++)
            if (k == 0 || !word_of(cands[id][0].form, cands[id][k].form))
                add_form(&l->entries[id], cands[id][k].form, cands[id][k].dice, cands[id][k].pairs);
        free(cands[id]);
    }
    free(cands);
    free(n_cands);
}

mt_entity_lexicon *mt_entity_lexicon_build(const char *const *src, const char *const *tgt, size_t n,
                                           void (*progress)(void *user, size_t done, size_t total),
                                           void *user)
{
    side_counts s = {0}, t = {0};
    strmap target_pairs = {0}, joint = {0};
    mt_entity_lexicon *l = NULL;
    for (size_t i = 0; i < n; i++) {
        if (count_words(&s, src[i]) < 0 || count_words(&t, tgt[i]) < 0) {
            mt_error_context("pair %zu", i + 1);
            goto out;
        }
    }
    pick_names(&s);
    pick_names(&t);
    for (size_t i = 0; i < n; i++) {
        mt_text_span *sw, *tw;
        size_t ns, nt, ns_words, nt_words;
        distinct_words(&sw, &ns, &ns_words, src[i], &s.names, NULL);
        /* a target word is a candidate when it is a target name or spells a source name */
        distinct_words(&tw, &nt, &nt_words, tgt[i], &t.names, &s.names);
        for (size_t k = 0; k < nt; k++)
            (*strmap_put(&target_pairs, tgt[i] + tw[k].start, tw[k].end - tw[k].start, 0, NULL))++;
        for (size_t a = 0; a < ns; a++) {
            size_t alen = sw[a].end - sw[a].start;
            (*strmap_put(&s.names, src[i] + sw[a].start, alen, 0, NULL))++;
            /* a one-word name takes one-word forms (Dios: God), a name of several words either
             * (Cristo Jesús: Christ Jesus) */
            for (size_t b = 0; b < (a < ns_words ? nt_words : nt); b++) {
                size_t blen = tw[b].end - tw[b].start;
                char key[2 * MAX_LEXICON_LINE];
                if (alen + blen + 2 > sizeof key) continue;
                memcpy(key, src[i] + sw[a].start, alen);
                key[alen] = '\t';
                memcpy(key + alen + 1, tgt[i] + tw[b].start, blen);
                (*strmap_put(&joint, key, alen + 1 + blen, 0, NULL))++;
            }
        }
        free(sw);
        free(tw);
        if (progress && ((i + 1) % 1024 == 0 || i + 1 == n)) progress(user, i + 1, n);
    }
    l = mt_xcalloc(1, sizeof *l);
    l->pairs = n;
    choose_forms(l, &s, &target_pairs, &joint);
    pick_words(&l->words, &s);
out:
    side_counts_free(&s);
    side_counts_free(&t);
    strmap_free(&target_pairs);
    strmap_free(&joint);
    return l;
}

/* ------------------------------------------------------------------ queries */

static const lexicon_entry *entry_of(const mt_entity_lexicon *l, const char *word, size_t len)
{
    const size_t *id = strmap_get(&l->index, word, len);
    return id ? &l->entries[*id] : NULL;
}

size_t mt_entity_lexicon_pairs(const mt_entity_lexicon *l) { return l->pairs; }
size_t mt_entity_lexicon_names(const mt_entity_lexicon *l) { return l->n; }
size_t mt_entity_lexicon_words(const mt_entity_lexicon *l) { return l->words.n; }

int mt_entity_lexicon_is_name(const mt_entity_lexicon *l, const char *word, size_t len)
{
    return entry_of(l, word, len) != NULL;
}

int mt_entity_lexicon_is_word(const mt_entity_lexicon *l, const char *word, size_t len)
{
    if (l->words.n == 0) return 0;
    char stack[256], *copy = len < sizeof stack ? stack : mt_xmalloc(len + 1);
    memcpy(copy, word, len);
    copy[len] = '\0';
    char *lower = mt_lowercase(copy);
    int known = lower && strmap_get(&l->words, lower, strlen(lower)) != NULL;
    free(lower);
    if (copy != stack) free(copy);
    return known;
}

size_t mt_entity_lexicon_forms(const mt_entity_lexicon *l, const char *word, size_t len,
                               const char *const **forms, const double **dice, const size_t **pairs)
{
    const lexicon_entry *e = entry_of(l, word, len);
    if (!e) return 0;
    *forms = (const char *const *)e->forms;
    if (dice) *dice = e->dice;
    if (pairs) *pairs = e->form_pairs;
    return e->n_forms;
}

/* ------------------------------------------------------------------ the file */

static int by_bytes(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int mt_entity_lexicon_write(const mt_entity_lexicon *l, const char *path)
{
    atomic_file af;
    int rc = -1;
    if (atomic_file_begin(&af, path)) goto done;
    FILE *f = af.f;
    fprintf(f, "%s\n# pairs=%zu words=%zu\n", LEXICON_MAGIC, l->pairs, l->words.n);
    for (size_t i = 0; i < l->n; i++) {
        const lexicon_entry *e = &l->entries[i];
        if (e->n_forms == 0) fprintf(f, "%s\t\t0\t%zu\n", e->name, e->pairs);
        for (size_t k = 0; k < e->n_forms; k++)
            fprintf(f, "%s\t%s\t%.4f\t%zu\n", e->name, e->forms[k], e->dice[k], e->form_pairs[k]);
    }
    const char **words = mt_xmalloc((l->words.n + 1) * sizeof *words);
    size_t n_words = 0;
    for (size_t i = 0; i < l->words.cap; i++)
        if (l->words.keys[i]) words[n_words++] = l->words.keys[i];
    qsort(words, n_words, sizeof *words, by_bytes);
    for (size_t i = 0; i < n_words; i++) fprintf(f, "%s\n", words[i]);
    free(words);
    int write_failed = ferror(f);
    if (write_failed) mt_error("%s: write failed", path);
    if (write_failed || atomic_file_seal(&af)) {
        atomic_file_discard(&af);
        goto done;
    }
    rc = atomic_file_commit(&af);
done:
    return rc;
}

static int valid_utf8_word(const char *s)
{
    entity_words ws;
    if (entity_words_split(&ws, s) < 0) return -1;
    entity_words_free(&ws);
    return 0;
}

/* A line without a tab: one ordinary word of the source, in lower case. */
static int parse_word(mt_entity_lexicon *l, const char *line)
{
    entity_words ws;
    if (entity_words_split(&ws, line) < 0) return -1;
    int one_word = ws.n == 1 && ws.w[0].start == 0 && ws.w[0].end == strlen(line);
    entity_words_free(&ws);
    if (!one_word) return mt_error("expected one word, or SOURCE<TAB>TARGET<TAB>DICE<TAB>COUNT");
    char *lower = mt_lowercase(line);
    int same = lower && strcmp(lower, line) == 0;
    free(lower);
    if (!same) return mt_error("word '%s' is not in lower case", line);
    int inserted;
    strmap_put(&l->words, line, strlen(line), 1, &inserted);
    if (!inserted) return mt_error("word '%s' is listed twice", line);
    return 0;
}

/* One "SOURCE<TAB>TARGET<TAB>DICE<TAB>COUNT" line, without its newline. */
static int parse_entry(mt_entity_lexicon *l, char *line)
{
    if (!strchr(line, '\t')) return parse_word(l, line);
    char *f[4];
    f[0] = line;
    for (int k = 1; k < 4; k++) {
        char *tab = strchr(f[k - 1], '\t');
        if (!tab) return mt_error("expected SOURCE<TAB>TARGET<TAB>DICE<TAB>COUNT");
        *tab = '\0';
        f[k] = tab + 1;
    }
    if (strchr(f[3], '\t')) return mt_error("more than four fields");
    if (!*f[0]) return mt_error("empty source name");
    if (valid_utf8_word(f[0]) < 0 || valid_utf8_word(f[1]) < 0) return -1;
    char *end;
    double dice = strtod(f[2], &end);
    if (!*f[2] || *end || !(dice >= 0.0 && dice <= 1.0))
        return mt_error("dice '%s' is not a number from 0 to 1", f[2]);
    size_t count;
    if (tsv_parse_count(f[3], &count) < 0)
        return mt_error("count '%s' is not a non-negative integer", f[3]);
    if (count == 0 || count > l->pairs)
        return mt_error("count %zu is outside 1..%zu (the pairs in the header)", count, l->pairs);
    const size_t *id = strmap_get(&l->index, f[0], strlen(f[0]));
    lexicon_entry *e = id ? &l->entries[*id] : NULL;
    if (!*f[1]) {
        if (e) return mt_error("'%s' is listed twice", f[0]);
        add_entry(l, f[0], strlen(f[0]), count);
        return 0;
    }
    if (!e) e = add_entry(l, f[0], strlen(f[0]), 0);
    if (e->pairs > 0 && e->n_forms == 0)
        return mt_error("'%s' is listed with and without a form", f[0]);
    for (size_t k = 0; k < e->n_forms; k++)
        if (!strcmp(e->forms[k], f[1])) return mt_error("'%s' -> '%s' is listed twice", f[0], f[1]);
    if (e->n_forms == MT_LEXICON_MAX_FORMS)
        return mt_error("'%s' has more than %d forms", f[0], MT_LEXICON_MAX_FORMS);
    add_form(e, f[1], dice, count);
    return 0;
}

/* "# pairs=N words=M", or "# pairs=N" (a file of version 1, or one without words) */
static int lexicon_header(void *user, char *line)
{
    mt_entity_lexicon *l = user;
    if (strncmp(line, "# pairs=", 8) != 0) return -1;
    char *words = strstr(line, " words=");
    l->header_words = SIZE_MAX;
    if (words) {
        *words = '\0';
        if (tsv_parse_count(words + 7, &l->header_words) < 0) return -1;
    }
    return tsv_parse_count(line + 8, &l->pairs);
}

static int lexicon_row(void *user, char *line, size_t len)
{
    (void)len;
    return parse_entry(user, line);
}

mt_entity_lexicon *mt_entity_lexicon_read(const char *path)
{
    mt_entity_lexicon *l = mt_xcalloc(1, sizeof *l);
    tsv_reader r = {LEXICON_MAGIC,
                    "an entity lexicon",
                    MAX_LEXICON_LINE,
                    "# pairs=N words=M",
                    lexicon_header,
                    lexicon_row,
                    l,
                    LEXICON_MAGIC_1};
    if (tsv_read(path, &r) < 0) goto fail;
    if (l->header_words != SIZE_MAX && l->header_words != l->words.n) {
        mt_error("%s: the header counts %zu words but the file lists %zu (cut short?)", path,
                 l->header_words, l->words.n);
        goto fail;
    }
    return l;
fail:
    mt_entity_lexicon_free(l);
    return NULL;
}
