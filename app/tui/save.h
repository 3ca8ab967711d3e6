/* Ctrl-S: the translated segments and every pane's translation of them, as a TSV table (one
 * row per segment: the source, then one column per pane) and as JSON lines (one object per
 * segment, each pane's translation with its bundle, search and whether it had finished),
 * written side by side into the working directory and never over an existing file. */
#ifndef MTLAB_TUI_SAVE_H
#define MTLAB_TUI_SAVE_H

#include <stdio.h>

#include "mtlab/entities.h"

/* A pane's figures for its last request (all its segments), as the pane shows them. */
typedef struct {
    int have; /* 0: none yet (written as null) */
    double seconds;
    size_t tokens;
    size_t model_state_bytes; /* the model's state of one sentence (KV cache, SSM state) */
    size_t working_set_bytes; /* decoding's working set, caches included */
} tui_save_stats;

/* One pane's column. */
typedef struct {
    const char *name; /* the pane's title name */
    const char *dir; /* its bundle directory */
    const char *search; /* "greedy", "beam 5" */
    char *const *hyps; /* (n_hyps) its translation of each segment (NULL: none yet) */
    const unsigned char *final; /* (n_hyps) 1 when that translation had finished */
    int n_hyps;
    tui_save_stats stats;
} tui_save_column;

/* The source names of each segment, judged in every translation as the panes mark them
 * (marks.h: copied, translated with the lexicon's form, dropped). */
typedef struct {
    const mt_text_span *const *spans; /* (n) each segment's names */
    const size_t *n_spans; /* (n) */
    const mt_entity_lexicon *lexicon; /* may be NULL */
} tui_save_entities;

/* Write the table and the JSON lines of sources[0..n) and the columns; with ents, each
 * translation's verdict on each name too (a "NAME names" column per pane in the TSV, "names"
 * in the JSON lines). In the TSV a tab, newline or backslash inside a text is written \t, \n
 * or \\. 0, or -1 on a write error. */
int tui_write_translations(FILE *tsv, FILE *jsonl, char *const *sources, int n,
                           const tui_save_column *cols, int n_cols, const tui_save_entities *ents);

/* Create base.tsv and base.jsonl in dir for writing, where base is
 * mtlab-translations-YYYYMMDD-HHMMSS (with -2, -3... when those names exist); the paths go to
 * tsv_path and jsonl_path. 0, or -1 with an error naming the file. */
int tui_create_save_files(const char *dir, FILE **tsv, FILE **jsonl, char *tsv_path,
                          char *jsonl_path, size_t len);

#endif
