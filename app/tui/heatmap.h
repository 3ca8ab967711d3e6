/* Heatmap arithmetic, without curses: which maps a probe record offers, the 2-D slice to show
 * (one head or the heads' average), and its normalisation to [0, 1]:
 *   raw      v / max, max shared by every pane showing a map, so an SSM pane and an
 *            attention pane are drawn on one scale
 *   per row  v / (max of its row): where each token looks, whatever its magnitude
 *   log      (log10(v / max) + TUI_HEAT_LOG_DECADES) / TUI_HEAT_LOG_DECADES, clamped: three
 *            decades below the (shared) max
 * Values are magnitudes (norms, probabilities, |alpha|); negative ones count as 0. */
#ifndef MTLAB_TUI_HEATMAP_H
#define MTLAB_TUI_HEATMAP_H

#include "mtlab/probe.h"

#define TUI_HEAT_LOG_DECADES 3.0

typedef enum { TUI_NORM_RAW, TUI_NORM_ROW, TUI_NORM_LOG, TUI_NORM_COUNT } tui_heat_norm;

/* Index of the map of the given kind and layer (encoder maps after decoder ones), or -1. */
int tui_heat_find(const mt_probe_record *r, mt_probe_kind kind, int nth);
/* How many maps of a kind the record holds. */
int tui_heat_count(const mt_probe_record *r, mt_probe_kind kind);
/* The next kind after `kind` that the record has (wrapping), or -1 when it has none. */
int tui_heat_next_kind(const mt_probe_record *r, int kind);

/* out (rows, cols) = head h of the map, or the mean over heads when h < 0. */
void tui_heat_slice(float *out, const mt_probe_map *m, int h);
/* Largest value of a slice (0 when empty or all <= 0). */
float tui_heat_max(const float *v, int rows, int cols);
/* out (rows, cols) in [0, 1] from v with the normalisation; max is the shared maximum that raw
 * and log use. */
void tui_heat_normalise(float *out, const float *v, int rows, int cols, tui_heat_norm norm,
                        float max);
/* The discrete level 0..levels-1 of a normalised value. */
int tui_heat_level(float v, int levels);

#endif
