/* What the eval files' readers share (corpus_stats.tsv, entity_lexicon.tsv): a text file of
 * short lines whose first line is a magic string and whose second is a "# key=value" header,
 * then one record per line; and their counts. */
#ifndef MTLAB_EVAL_TSV_FILE_H
#define MTLAB_EVAL_TSV_FILE_H

#include <stddef.h>

#include "data/strmap.h"

/* A decimal count without sign, spaces or overflow: 0, or -1 (no message). */
int tsv_parse_count(const char *s, size_t *out);

typedef struct {
    const char *magic; /* the first line, exactly */
    const char *kind; /* "an entity lexicon", in messages */
    size_t max_line; /* longer lines are refused */
    const char *header_hint; /* what line 2 should look like, "# pairs=N" */
    int (*header)(void *user, char *line); /* 0 or -1 (no message needed) */
    int (*row)(void *user, char *line, size_t len); /* 0 or -1 with mt_error */
    void *user;
    const char *older_magic; /* an earlier version's first line, still read; NULL: none */
} tsv_reader;

/* Read path through r: 0, or -1 with "PATH:LINE: problem" (mt_last_error). */
int tsv_read(const char *path, const tsv_reader *r);

/* The entries of a name -> count map with a count above 0, most frequent first, then bytewise:
 * the files' row order, stable and readable from the top. malloc'd (*n entries); the names
 * are the map's own. */
typedef struct {
    const char *name;
    size_t count;
} tsv_name_count;
tsv_name_count *tsv_sorted_counts(const strmap *m, size_t *n);

#endif
