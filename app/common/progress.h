/* A one-line progress bar on stderr for long CLI work (evaluation, training, corpus stats):
 *
 *   eval apertium:spa-eng [==========>         ]  52%  480/919  1234.5/s  ETA 0:01
 *
 * Drawn only when stderr is a terminal (a log file gets nothing but the final line), redrawn
 * at most 10 times a second, sized to the terminal width. Not thread-safe: one owner. */
#ifndef MTLAB_APP_PROGRESS_H
#define MTLAB_APP_PROGRESS_H

#include <stddef.h>
#include <stdio.h>

typedef struct {
    FILE *out; /* stderr */
    char label[64];
    size_t total; /* 0: unknown (no bar, just the count) */
    size_t done;
    double started; /* monotonic seconds */
    double last_draw;
    int interactive; /* out is a terminal */
    int drawn; /* a line is on screen and must be cleared */
    char detail[128]; /* shown after the counts (cli_progress_detail), e.g. "loss 3.21" */
} cli_progress;

/* Starts (and draws) a bar for total units of work. */
void cli_progress_start(cli_progress *p, const char *label, size_t total);
/* Sets the units done; redraws when enough time has passed or the work is complete. */
void cli_progress_update(cli_progress *p, size_t done);
/* Sets the text shown after the counts (printf-style); drawn with the next update. */
void cli_progress_detail(cli_progress *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Removes the bar from the screen so a message can be printed; the next update redraws it. */
void cli_progress_clear(cli_progress *p);
/* Clears the bar and, when `summary` is not NULL, prints "label: summary (N in S s)" in its
 * place. */
void cli_progress_finish(cli_progress *p, const char *summary);

/* The bar for a given width of the terminal, without drawing it (for tests). */
void cli_progress_format(char *out, size_t out_len, const cli_progress *p, double now, int width);

#endif
