/* Training-set entity frequencies (mtlab/entities.h) and their corpus_stats.tsv file, which a
 * model bundle stores beside its weights so the recall bins need no training corpus. */
#include "eval/codepoints.h"
#include "mtlab/entities.h"
#include "eval/tsv_file.h"
#include "io/atomic_file.h"
#include "mtlab/error.h"

#include "data/strmap.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define STATS_MAGIC "# mtlab corpus_stats 1"
/* An entity is a few words; a longer line means the file is not a corpus_stats.tsv. */
#define MAX_STATS_LINE 4096

struct mt_corpus_stats {
    strmap counts; /* entity -> training pairs where it is copyable */
    size_t pairs;
    mt_ner_lang lang;
};

mt_corpus_stats *mt_corpus_stats_build(const char *const *src, const char *const *ref, size_t n,
                                       mt_ner_lang lang,
                                       void (*progress)(void *user, size_t done, size_t total),
                                       void *user)
{
    mt_corpus_stats *s = mt_xcalloc(1, sizeof *s);
    s->lang = lang;
    for (size_t i = 0; i < n; i++) {
        mt_entity_set set;
        if (mt_entities_copyable(&set, src[i], ref[i], lang) < 0) {
            mt_error_context("pair %zu", i + 1);
            mt_corpus_stats_free(s);
            return NULL;
        }
        for (size_t k = 0; k < set.n; k++)
            (*strmap_put(&s->counts, set.names[k], strlen(set.names[k]), 0, NULL))++;
        mt_entity_set_free(&set);
        if (progress && ((i + 1) % 1024 == 0 || i + 1 == n)) progress(user, i + 1, n);
    }
    s->pairs = n;
    return s;
}

void mt_corpus_stats_free(mt_corpus_stats *s)
{
    if (!s) return;
    strmap_free(&s->counts);
    free(s);
}

size_t mt_corpus_stats_count(const mt_corpus_stats *s, const char *entity, size_t len)
{
    const size_t *v = strmap_get(&s->counts, entity, len);
    return v ? *v : 0;
}

size_t mt_corpus_stats_pairs(const mt_corpus_stats *s) { return s->pairs; }
size_t mt_corpus_stats_entities(const mt_corpus_stats *s) { return s->counts.n; }
mt_ner_lang mt_corpus_stats_lang(const mt_corpus_stats *s) { return s->lang; }

int mt_corpus_stats_write(const mt_corpus_stats *s, const char *path)
{
    size_t n;
    tsv_name_count *e = tsv_sorted_counts(&s->counts, &n); /* most frequent first */

    atomic_file af;
    int rc = -1;
    if (atomic_file_begin(&af, path)) goto done;
    FILE *f = af.f;
    fprintf(f, "%s\n# pairs=%zu ner=%s\n", STATS_MAGIC, s->pairs, mt_ner_lang_name(s->lang));
    for (size_t i = 0; i < n; i++) fprintf(f, "%s\t%zu\n", e[i].name, e[i].count);
    int write_failed = ferror(f);
    if (write_failed) mt_error("%s: write failed", path);
    if (write_failed || atomic_file_seal(&af)) {
        atomic_file_discard(&af);
        goto done;
    }
    rc = atomic_file_commit(&af);
done:
    free(e);
    return rc;
}

/* The header's second line: "# pairs=N ner=NAME". */
static int parse_header(mt_corpus_stats *s, char *line)
{
    char *pairs = strstr(line, "pairs="), *ner = strstr(line, " ner=");
    if (strncmp(line, "# ", 2) != 0 || !pairs || !ner || ner < pairs) return -1;
    *ner = '\0';
    if (tsv_parse_count(pairs + strlen("pairs="), &s->pairs) < 0) return -1;
    return mt_ner_lang_parse(ner + strlen(" ner="), &s->lang);
}

/* One "ENTITY<TAB>COUNT" line, without its newline. */
static int parse_entry(mt_corpus_stats *s, char *line, size_t len)
{
    char *tab = memchr(line, '\t', len);
    if (!tab || tab == line) return mt_error("expected ENTITY<TAB>COUNT");
    *tab = '\0';
    mt_cpbuf cps = {0};
    int bad_utf8 = mt_utf8_decode(&cps, line, (size_t)(tab - line));
    mt_cpbuf_free(&cps);
    if (bad_utf8 < 0) return -1;
    size_t count;
    if (tsv_parse_count(tab + 1, &count) < 0)
        return mt_error("count '%s' is not a non-negative integer", tab + 1);
    if (count == 0 || count > s->pairs)
        return mt_error("count %zu for '%s' is outside 1..%zu (the pairs in the header)", count,
                        line, s->pairs);
    int inserted;
    *strmap_put(&s->counts, line, (size_t)(tab - line), count, &inserted) = count;
    if (!inserted) return mt_error("'%s' is listed twice", line);
    return 0;
}

static int stats_header(void *user, char *line) { return parse_header(user, line); }

static int stats_row(void *user, char *line, size_t len) { return parse_entry(user, line, len); }

mt_corpus_stats *mt_corpus_stats_read(const char *path)
{
    mt_corpus_stats *s = mt_xcalloc(1, sizeof *s);
    tsv_reader r = {STATS_MAGIC,
                    "a corpus_stats file",
                    MAX_STATS_LINE,
                    "# pairs=N ner=english|generic",
                    stats_header,
                    stats_row,
                    s,
                    NULL};
    if (tsv_read(path, &r) < 0) {
        mt_corpus_stats_free(s);
        return NULL;
    }
    return s;
}
