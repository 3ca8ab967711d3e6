/* What the eval files' TSV readers share (corpus_stats.tsv, entity_lexicon.tsv). */
#ifndef MTLAB_EVAL_TSV_COUNT_H
#define MTLAB_EVAL_TSV_COUNT_H

#include <stddef.h>

/* A decimal count without sign, spaces or overflow: 0, or -1 (no message). */
int tsv_parse_count(const char *s, size_t *out);

#endif
