/* Heatmap arithmetic, without curses: which maps a probe record offers, the 2-D slice to show
 * (one head or the heads' average), and its normalisation to [0, 1]:
 *   raw      v / max, max shared by every pane showing a map, so an SSM pane and an
 *            attention pane are drawn on one scale
 *   per row  v / (max of its row): where each token looks, whatever its magnitude
 *   log      (log10(v / max) + TUI_HEAT_LOG_DECADES) / TUI_HEAT_LOG_DECADES, clamped: three
 *            decades below the (shared) max
 * Values are magnitudes (norms, probabilities, |alpha|); negative ones count as 0.
 *
 * Besides the probes' kinds a pane shows the attribution map (TUI_HEAT_ATTRIBUTION): a
 * gradient attribution of the translation (mtlab/attribution.h) as a record of one map, rows
 * the target tokens, columns the source side then the earlier translation, cells the
 * attribution's magnitude |a| (input x gradient and integrated gradients are signed; the
 * readout gives the sign). */
#ifndef MTLAB_TUI_HEATMAP_H
#define MTLAB_TUI_HEATMAP_H

#include <stddef.h>

#include "mtlab/probe.h"
#include "mtlab/worker.h"

/* A probe record with the tokenizer's pieces for its positions (the UI has no tokenizer);
 * freed with mt_labelled_probe_free. */
typedef mt_labelled_probe tui_probe;

#define TUI_HEAT_LOG_DECADES 3.0
/* The attribution map's kind, after the probes' (every model has it: it needs no probe). */
#define TUI_HEAT_ATTRIBUTION MT_PROBE_KINDS
#define TUI_HEAT_KINDS (MT_PROBE_KINDS + 1)

typedef enum { TUI_NORM_RAW, TUI_NORM_ROW, TUI_NORM_LOG, TUI_NORM_COUNT } tui_heat_norm;

/* Index of the map of the given kind and layer (encoder maps after decoder ones), or -1. */
int tui_heat_find(const mt_probe_record *r, mt_probe_kind kind, int nth);
/* Which map of a kind (the nth, as tui_heat_find counts) is of the model's layer `layer`
 * (0-based, as mt_probe_map.layer; the decoder's before the encoder's; a model-wide map is of
 * every layer), or -1; *layers (len > 0) gets the layers that kind has, 1-based as titles show
 * them ("6, 12"), for messages. */
int tui_heat_nth_of_layer(const mt_probe_record *r, mt_probe_kind kind, int layer, char *layers,
                          size_t len);
/* How many maps of a kind the record holds. */
int tui_heat_count(const mt_probe_record *r, mt_probe_kind kind);
/* The next kind after `kind` that the record has (wrapping; the attribution map, which every
 * model has, after the probes' kinds; r NULL: no probes yet). */
int tui_heat_next_kind(const mt_probe_record *r, int kind);
/* "attention", ... as mt_probe_kind_name, and "attribution" for TUI_HEAT_ATTRIBUTION. */
const char *tui_heat_kind_name(int kind);
/* What a map is, as mt_probe_map_name, and "attribution" for the attribution map. */
const char *tui_heat_map_name(const mt_probe_map *m);
/* The attribution's map as a record of one map (kind TUI_HEAT_ATTRIBUTION, rows on the target
 * axis labelled by its row pieces, columns on the source axis labelled by its column pieces,
 * values |a|): malloc'd, freed with mt_labelled_probe_free. */
tui_probe *tui_heat_attribution_record(const mt_labelled_attribution *la);
/* "saliency", "input x gradient", "integrated gradients" (as a title shows them). */
const char *tui_heat_method_title(int method);

/* The (rows, cols) slice of head h (the mean when h < 0) of map (kind, nth), malloc'd; *map
 * gets the map. NULL (and *map NULL) when r has no such map, or *map set when it is empty. */
float *tui_heat_pick(const mt_probe_record *r, int kind, int nth, int h, const mt_probe_map **map);

/* The first position after the source/target boundary on an axis (the prompt `src <sep>` of
 * a decoder-only model, then its translation), or 0 where the axis has none. */
int tui_heat_split(const mt_probe_record *r, mt_probe_axis axis);
/* The label of position i of an axis: the token as the engine shows it (mt_tokenizer_label:
 * the record's shown labels; a record without them: its piece), "L2" for a layer, "g3" for a
 * channel group, numbered from 1. */
void tui_heat_axis_label(char *out, size_t len, const mt_labelled_probe *pr, mt_probe_axis axis,
                         int i);
/* What a person calls an axis in a caption: "translation", "source", "layer", "channel
 * group"; a decoder-only model's sequence (the source, <sep>, then the translation):
 * "source | translation". */
const char *tui_heat_axis_title(const mt_probe_record *r, mt_probe_axis axis);
/* "translation ↓  source →": the rows' axis and the columns' (arrows: the glyphs to use). */
void tui_heat_axes_caption(char *out, size_t len, const mt_probe_record *r, mt_probe_axis rows,
                           mt_probe_axis cols, const char *down, const char *right);
/* 1 when an axis indexes tokens (target or source positions), not layers or groups. */
int tui_heat_token_axis(mt_probe_axis axis);

/* out (rows, cols) = head h of the map, or the mean over heads when h < 0. */
void tui_heat_slice(float *out, const mt_probe_map *m, int h);
/* Largest value of a slice (0 when empty or all <= 0). */
float tui_heat_max(const float *v, int rows, int cols);
/* out (rows, cols) in [0, 1] from v with the normalisation; max is the shared maximum that raw
 * and log use. */
void tui_heat_normalise(float *out, const float *v, int rows, int cols, tui_heat_norm norm,
                        float max);
/* 1 for the maps of states (norms, groups), 0 for attention-like maps: raw and log scales are
 * shared within a class only. */
int tui_heat_state_class(mt_probe_kind kind);
/* The class whose maps share the raw and log scales: 0 attention-like, 1 states, 2
 * attribution. */
int tui_heat_scale_class(int kind);
/* The scale in numbers and words, for the legend and for exported titles: lo and hi, the
 * values at the scale's two ends (per row: 0 and row_max, the max of the row it is read on),
 * and what it is ("raw, shared by attention", "per row", "log, ..."). */
typedef struct {
    char lo[32], hi[32], what[64];
} tui_heat_scale;
void tui_heat_scale_describe(tui_heat_scale *out, tui_heat_norm norm, int kind, float max,
                             float row_max);
/* The shading glyph (1..n_shades-1; 0 is the blank of a masked cell) of level 0..levels-1:
 * the lowest level is still a glyph, so a zero never looks like a masked cell. */
int tui_heat_shade(int level, int levels, int n_shades);
/* The discrete level 0..levels-1 of a normalised value. */
int tui_heat_level(float v, int levels);

#endif
