/* Numbers and names as the panes show them: "7.52M", "1.5 MiB", "830 ms", a bundle's name. */
#ifndef MTLAB_TUI_FORMAT_H
#define MTLAB_TUI_FORMAT_H

#include <stddef.h>

/* 812, 12.3K, 7.52M, 1.31G (three significant digits). */
void tui_format_count(char *out, size_t len, size_t n);
/* 512 B, 12.0 KiB, 1.50 MiB, 2.00 GiB. */
void tui_format_bytes(char *out, size_t len, size_t bytes);
/* 830 ms below 10 s, else 12.4 s. */
void tui_format_seconds(char *out, size_t len, double seconds);
/* The decoding search as the panes name it: "greedy" (beam 1) or "beam 5". */
void tui_format_search(char *out, size_t len, int beam);

/* A direction as the titles show it: "es→en" with arrow "→"; "" when src is "" (a bundle
 * that records no languages shows none). */
void tui_format_direction(char *out, size_t len, const char *src, const char *tgt,
                          const char *arrow);

/* A pane's statistics of its last translation. */
typedef struct {
    double seconds; /* decoding wall time of the segments translated */
    size_t tokens; /* tokens they produced */
    size_t state_bytes; /* the model's state of one sentence: KV cache, recurrent state */
    int translated; /* segments decoded */
    int cached; /* segments shown from the result cache */
    size_t work_bytes; /* decoding's working set (every row's caches and the passes'
                        * activations); 0: not shown */
} tui_stats;

/* The statistics in at most width columns, sep between the items: "830 ms · 35.0 tok/s ·
 * state 2.59 MiB · 445 cached · working set 9.00 MiB" shortened by labels first ("35 t/s",
 * "work 9.00 MiB"), then by dropping whole items, the working set first, then the cached count,
 * the rate and the state: a number never loses its unit. "" when not even the time fits.
 * Returns the width in columns. */
int tui_format_stats(char *out, size_t len, const tui_stats *s, const char *sep, int width);

#endif
