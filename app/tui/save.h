/* Ctrl-S: the translated segments and every pane's translation of them, as a TSV table (one
 * row per segment: the source, then one column per pane) and as JSON lines (one object per
 * segment, each pane's translation with its bundle, search and whether it had finished),
 * written side by side into the working directory and never over an existing file. */
#ifndef MTLAB_TUI_SAVE_H
#define MTLAB_TUI_SAVE_H

#include <stdio.h>

/* One pane's column. */
typedef struct {
    const char *name;          /* the pane's title name */
    const char *dir;           /* its bundle directory */
    const char *search;        /* "greedy", "beam 5" */
    char *const *hyps;         /* (n_hyps) its translation of each segment (NULL: none yet) */
    const unsigned char *final;/* (n_hyps) 1 when that translation had finished */
    int n_hyps;
} tui_save_column;

/* Write the table and the JSON lines of sources[0..n) and the columns. In the TSV a tab,
 * newline or backslash inside a text is written \t, \n or \\. 0, or -1 on a write error. */
int tui_write_translations(FILE *tsv, FILE *jsonl, char *const *sources, int n,
                           const tui_save_column *cols, int n_cols);

/* Create base.tsv and base.jsonl in dir for writing, where base is
 * mtlab-translations-YYYYMMDD-HHMMSS (with -2, -3... when those names exist); the paths go to
 * tsv_path and jsonl_path. 0, or -1 with an error naming the file. */
int tui_create_save_files(const char *dir, FILE **tsv, FILE **jsonl, char *tsv_path,
                          char *jsonl_path, size_t len);

#endif
