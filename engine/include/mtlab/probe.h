/* Probes: what a model computed for a translation, per token and per layer, for the
 * workbench's heatmaps and for analysis scripts.
 *
 * mt_probe_run takes a source and a finished hypothesis and runs the model once more, in one
 * parallel forward pass (no dropout) over the prompt and the hypothesis, then reads the
 * activations that pass keeps anyway: attention probabilities, and Mamba's dt, B, C and scan
 * input. For causal models every position gets the same values in the parallel pass as it
 * got while decoding token by token, so the maps are the decode's own. Decoding itself holds
 * no probe code: with probes off it costs nothing extra.
 *
 * Maps (all fp32, host memory):
 *   state norms      rows = Mamba layers, cols = positions: ||h_t||, the Frobenius norm of
 *                    the layer's SSM state (Di x N) after position t
 *   state groups     one per Mamba layer: rows = channel groups (Di split into `groups`
 *                    equal runs of channels), cols = positions: ||h_t|| over each group
 *   self-attention   one per attention layer: heads x (query positions x key positions);
 *                    for RetNet's retention layers the magnitudes |att[n][m]| of the
 *                    retention weights (signed, see mt_retention_desc)
 *   cross-attention  one per cross-attention layer: heads x (target positions x source
 *                    positions)
 *   implicit         one per Mamba layer: (positions x positions), the mean over channels d
 *                    of |alpha_d[r][c]|, where Mamba's output is y_r,d = sum_{c<=r}
 *                    alpha_d[r][c] u_c,d + D_d u_r,d with (Ali et al. 2024)
 *                      alpha_d[r][c] = sum_n C_r,n * prod_{k=c+1..r} dA_k,d,n * dB_c,d,n
 *                      dA_k,d,n = exp(delta_k,d A_d,n),  dB_c,d,n = delta_c,d B_c,n
 * Positions are those of the decoder sequence (decoder-only: `src <sep> hyp`; encoder-decoder:
 * `<bos> hyp`), or of the source (`src <eos>`) for the encoder's maps and cross-attention.
 *
 * Letters: T positions, D Mamba channels (d_inner), N state size, H heads, G channel groups. */
#ifndef MTLAB_PROBE_H
#define MTLAB_PROBE_H

#include <stdint.h>

#include "mtlab/model.h"

typedef enum {
    MT_PROBE_STATE_NORMS,
    MT_PROBE_STATE_GROUPS,
    MT_PROBE_SELF_ATTN,
    MT_PROBE_CROSS_ATTN,
    MT_PROBE_IMPLICIT_ATTN,
    MT_PROBE_KINDS
} mt_probe_kind;

/* What a map's rows or columns index. */
typedef enum {
    MT_PROBE_AXIS_LAYER,
    MT_PROBE_AXIS_GROUP,
    MT_PROBE_AXIS_TARGET, /* positions of the decoder sequence (mt_probe_record.tokens) */
    MT_PROBE_AXIS_SOURCE, /* positions of the encoder input (mt_probe_record.src) */
} mt_probe_axis;

/* The kind of unit a map was read from: a self-attention map may come from softmax attention
 * (full or a sliding window) or from RetNet's retention, and says which. */
typedef enum {
    MT_PROBE_UNIT_MODEL, /* model-wide (state norms over the Mamba layers) */
    MT_PROBE_UNIT_ATTENTION, /* softmax attention: self (full or sliding-window) or cross */
    MT_PROBE_UNIT_RETENTION, /* RetNet's retention */
    MT_PROBE_UNIT_MAMBA, /* a Mamba layer's scan */
} mt_probe_unit;

typedef struct {
    mt_probe_kind kind;
    mt_probe_unit unit;
    int causal; /* 1: cells with col > row are masked: the unit never looks ahead */
    int window; /* > 0: cells with col < row - window are masked too (sliding window) */
    int layer; /* the model layer it belongs to (0-based); -1 for model-wide maps */
    int encoder; /* 1: a map of the encoder stack */
    int heads; /* stacked maps: 1 unless attention */
    int rows, cols;
    mt_probe_axis row_axis, col_axis;
    float *values; /* (heads, rows, cols) */
} mt_probe_map;

typedef struct {
    int32_t *tokens; /* (n_tokens) the decoder sequence */
    int n_tokens;
    int n_prompt; /* tokens[0 .. n_prompt) are the prompt, the rest the hypothesis */
    int32_t *src; /* (n_src) the encoder input of an encoder-decoder model, else NULL */
    int n_src;
    int groups; /* channel groups of the state-group maps */
    mt_probe_map *maps;
    int n_maps;
} mt_probe_record;

typedef struct {
    unsigned kinds; /* bits (1u << kind) to record; 0 records every kind */
    int groups; /* channel groups for MT_PROBE_STATE_GROUPS; 0 means 8 */
    int max_positions; /* longer sequences are refused (0 means 1024): the implicit maps
                          cost O(T^2 D N) */
} mt_probe_opts;

/* Record the maps of one translation: src (src_len ids, no special tokens) and hyp (hyp_len
 * ids, no <eos>) as mt_decode gave them. 0, or -1 (mt_last_error) with *out empty. */
int mt_probe_run(mt_model *m, const int32_t *src, int src_len, const int32_t *hyp, int hyp_len,
                 const mt_probe_opts *o, mt_probe_record *out);
void mt_probe_record_free(mt_probe_record *r);

/* "state norms", "state groups", "self-attention", "cross-attention", "implicit attention" */
const char *mt_probe_kind_name(mt_probe_kind kind);
/* What the map is, from the unit that made it: the kind's name, except that RetNet's
 * self-attention maps are "retention" and a sliding window's "local window attention". */
const char *mt_probe_map_name(const mt_probe_map *m);
/* 1 when the unit cannot attend from row r to column c (the causal triangle, the cells
 * beyond a sliding window): such cells hold 0 by construction, not by measurement. */
int mt_probe_masked(const mt_probe_map *m, int r, int c);

/* ---------------------------------------------------------------- the Mamba maps on host
 * arrays of one sequence (exposed for tests and scripts). Inputs as the scan takes them, in
 * its mt_scan_args (mtlab/backend.h) with B = 1, host pointers: dt (T, D) before bias and
 * softplus, dt_bias (D), A_log (D, N), Bm and Cm (T, N), u (T, D) (mt_state_norms only);
 * Dskip and h0 are not read. */

/* alpha (D, T, T): alpha[d][r][c] as above, 0 for c > r. O(T^2 D N): for each column c the
 * product is carried down the rows, one multiply per row. */
void mt_implicit_attention(float *alpha, const mt_scan_args *s);
/* The reference: the formula term by term, the product recomputed for every (r, c):
 * O(T^3 D N). */
void mt_implicit_attention_naive(float *alpha, const mt_scan_args *s);
/* norms (T) = ||h_t|| over all channels; groups (G, T) = ||h_t|| over each run of D / G
 * channels (the last run takes the remainder), or NULL. G >= 1. The scan runs again here,
 * on the host, in the recurrent form above. */
void mt_state_norms(float *norms, float *groups, int G, const mt_scan_args *s);

#endif
