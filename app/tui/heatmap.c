#include "tui/heatmap.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "mtlab/error.h"

int tui_heat_count(const mt_probe_record *r, mt_probe_kind kind)
{
    int n = 0;
    for (int i = 0; i < r->n_maps; i++) n += r->maps[i].kind == kind;
    return n;
}

int tui_heat_find(const mt_probe_record *r, mt_probe_kind kind, int nth)
{
    /* decoder maps first, then the encoder's */
    for (int enc = 0; enc < 2; enc++)
        for (int i = 0; i < r->n_maps; i++)
            if (r->maps[i].kind == kind && r->maps[i].encoder == enc && nth-- == 0) return i;
    return -1;
}

int tui_heat_nth_of_layer(const mt_probe_record *r, mt_probe_kind kind, int layer, char *layers,
                          size_t len)
{
    int found = -1;
    if (len) layers[0] = '\0';
    for (int nth = 0, i; (i = tui_heat_find(r, kind, nth)) >= 0; nth++) {
        /* a model-wide map (state norms over every layer) is the one whatever the layer */
        if (found < 0 && (r->maps[i].layer == layer || r->maps[i].layer < 0)) found = nth;
        if (r->maps[i].layer < 0) continue;
        size_t at = strlen(layers);
        if (at < len) snprintf(layers + at, len - at, "%s%d", at ? ", " : "", r->maps[i].layer + 1);
    }
    return found;
}

int tui_heat_next_kind(const mt_probe_record *r, int kind)
{
    for (int step = 1; step <= TUI_HEAT_KINDS; step++) {
        int k = ((kind < 0 ? -1 : kind) + step) % TUI_HEAT_KINDS;
        if (k == TUI_HEAT_ATTRIBUTION || (r && tui_heat_count(r, (mt_probe_kind)k) > 0)) return k;
    }
    return -1;
}

const char *tui_heat_kind_name(int kind)
{
    return kind == TUI_HEAT_ATTRIBUTION ? "attribution" : mt_probe_kind_name((mt_probe_kind)kind);
}

const char *tui_heat_map_name(const mt_probe_map *m)
{
    return m->kind == TUI_HEAT_ATTRIBUTION ? "attribution" : mt_probe_map_name(m);
}

const char *tui_heat_method_title(int method)
{
    switch (method) {
    case MT_ATTR_SALIENCY: return "saliency";
    case MT_ATTR_INPUT_X_GRADIENT: return "input x gradient";
    case MT_ATTR_INTEGRATED_GRADIENTS: return "integrated gradients";
    default: return "?";
    }
}

static char **copy_labels(char *const *labels, int n)
{
    char **out = mt_xcalloc((size_t)n + 1, sizeof *out);
    for (int i = 0; i < n; i++) out[i] = mt_xstrdup(labels && labels[i] ? labels[i] : "?");
    return out;
}

tui_probe *tui_heat_attribution_record(const mt_labelled_attribution *la)
{
    const mt_attribution *at = &la->attr;
    tui_probe *pr = mt_xcalloc(1, sizeof *pr);
    mt_probe_record *r = &pr->rec;
    r->n_tokens = at->rows;
    r->tokens = mt_xmalloc(((size_t)at->rows + 1) * sizeof *r->tokens);
    memcpy(r->tokens, at->row_ids, (size_t)at->rows * sizeof *r->tokens);
    r->n_src = at->cols;
    r->src = mt_xmalloc(((size_t)at->cols + 1) * sizeof *r->src);
    memcpy(r->src, at->col_ids, (size_t)at->cols * sizeof *r->src);
    pr->labels = copy_labels(la->row_labels, at->rows);
    pr->src_labels = copy_labels(la->col_labels, at->cols);
    if (la->row_shown) pr->shown = copy_labels(la->row_shown, at->rows);
    if (la->col_shown) pr->src_shown = copy_labels(la->col_shown, at->cols);
    r->n_maps = 1;
    r->maps = mt_xcalloc(1, sizeof *r->maps);
    mt_probe_map *m = &r->maps[0];
    *m = (mt_probe_map){.kind = (mt_probe_kind)TUI_HEAT_ATTRIBUTION,
                        .unit = MT_PROBE_UNIT_MODEL,
                        .layer = -1,
                        .heads = 1,
                        .rows = at->rows,
                        .cols = at->cols,
                        .row_axis = MT_PROBE_AXIS_TARGET,
                        .col_axis = MT_PROBE_AXIS_SOURCE};
    size_t n = (size_t)at->rows * (size_t)at->cols;
    m->values = mt_xmalloc((n + 1) * sizeof *m->values);
    for (size_t i = 0; i < n; i++) m->values[i] = fabsf(at->values[i]);
    return pr;
}

void tui_heat_slice(float *out, const mt_probe_map *m, int h)
{
    size_t n = (size_t)m->rows * (size_t)m->cols;
    if (h >= 0 && h < m->heads) {
        memcpy(out, m->values + (size_t)h * n, n * sizeof *out);
        return;
    }
    memset(out, 0, n * sizeof *out);
    for (int k = 0; k < m->heads; k++)
        for (size_t i = 0; i < n; i++) out[i] += m->values[(size_t)k * n + i];
    for (size_t i = 0; i < n; i++) out[i] /= (float)m->heads;
}

float tui_heat_max(const float *v, int rows, int cols)
{
    float mx = 0;
    for (size_t i = 0; i < (size_t)rows * (size_t)cols; i++)
        if (v[i] > mx) mx = v[i];
    return mx;
}

void tui_heat_normalise(float *out, const float *v, int rows, int cols, tui_heat_norm norm,
                        float max)
{
    for (int r = 0; r < rows; r++) {
        const float *row = v + (size_t)r * cols;
        float *o = out + (size_t)r * cols;
        float scale = norm == TUI_NORM_ROW ? tui_heat_max(row, 1, cols) : max;
        for (int c = 0; c < cols; c++) {
            float x = row[c] > 0 && scale > 0 ? row[c] / scale : 0;
            if (norm == TUI_NORM_LOG)
                x = x > 0 ? (float)((log10(x) + TUI_HEAT_LOG_DECADES) / TUI_HEAT_LOG_DECADES) : 0;
            o[c] = x < 0 ? 0 : x > 1 ? 1 : x;
        }
    }
}

int tui_heat_shade(int level, int levels, int n_shades)
{
    int shade = 1 + level * (n_shades - 1) / (levels > 0 ? levels : 1);
    return shade < 1 ? 1 : shade >= n_shades ? n_shades - 1 : shade;
}

int tui_heat_level(float v, int levels)
{
    int l = (int)(v * (float)levels);
    return l < 0 ? 0 : l >= levels ? levels - 1 : l;
}

float *tui_heat_pick(const mt_probe_record *r, int kind, int nth, int h, const mt_probe_map **map)
{
    *map = NULL;
    int i = kind >= 0 ? tui_heat_find(r, (mt_probe_kind)kind, nth) : -1;
    if (i < 0) return NULL;
    const mt_probe_map *m = *map = &r->maps[i];
    if (m->rows == 0 || m->cols == 0) return NULL;
    float *v = mt_xmalloc((size_t)m->rows * (size_t)m->cols * sizeof *v);
    tui_heat_slice(v, m, h);
    return v;
}

int tui_heat_split(const mt_probe_record *r, mt_probe_axis axis)
{
    /* an encoder-decoder's decoder sequence is `<bos> hyp`: all of it is the translation */
    return axis == MT_PROBE_AXIS_TARGET && r->n_src == 0 && r->n_prompt < r->n_tokens ? r->n_prompt
                                                                                      : 0;
}

void tui_heat_axis_label(char *out, size_t len, const mt_labelled_probe *pr, mt_probe_axis axis,
                         int i)
{
    if (axis == MT_PROBE_AXIS_LAYER || axis == MT_PROBE_AXIS_GROUP) {
        snprintf(out, len, "%s%d", axis == MT_PROBE_AXIS_LAYER ? "L" : "g", i + 1);
        return;
    }
    int src = axis == MT_PROBE_AXIS_SOURCE, n = src ? pr->rec.n_src : pr->rec.n_tokens;
    /* the engine's labels (mt_tokenizer_label) where the record has them */
    char **shown = src ? pr->src_shown : pr->shown;
    if (shown && i >= 0 && i < n) {
        snprintf(out, len, "%s", shown[i]);
        return;
    }
    char **labels = src ? pr->src_labels : pr->labels;
    snprintf(out, len, "%s", i >= 0 && i < n && labels ? labels[i] : "?");
}

const char *tui_heat_axis_title(const mt_probe_record *r, mt_probe_axis axis)
{
    switch (axis) {
    case MT_PROBE_AXIS_LAYER: return "layer";
    case MT_PROBE_AXIS_GROUP: return "channel group";
    case MT_PROBE_AXIS_SOURCE: return "source";
    default: return r->n_src ? "translation" : "source | translation";
    }
}

void tui_heat_axes_caption(char *out, size_t len, const mt_probe_record *r, mt_probe_axis rows,
                           mt_probe_axis cols, const char *down, const char *right)
{
    snprintf(out, len, "%s %s  %s %s", tui_heat_axis_title(r, rows), down,
             tui_heat_axis_title(r, cols), right);
}

int tui_heat_state_class(mt_probe_kind kind)
{
    return kind == MT_PROBE_STATE_NORMS || kind == MT_PROBE_STATE_GROUPS;
}

int tui_heat_scale_class(int kind)
{
    return kind == TUI_HEAT_ATTRIBUTION ? 2 : tui_heat_state_class((mt_probe_kind)kind);
}

void tui_heat_scale_describe(tui_heat_scale *out, tui_heat_norm norm, int kind, float max,
                             float row_max)
{
    static const char *const shared_by[] = {"shared by attention", "shared by state maps",
                                            "shared by attribution maps"};
    const char *shared = shared_by[tui_heat_scale_class(kind)];
    switch (norm) {
    case TUI_NORM_ROW:
        snprintf(out->lo, sizeof out->lo, "0");
        snprintf(out->hi, sizeof out->hi, "%.3g", row_max);
        snprintf(out->what, sizeof out->what, "per row, top = this row's max");
        break;
    case TUI_NORM_LOG:
        snprintf(out->lo, sizeof out->lo, "%.2g", max * 1e-3);
        snprintf(out->hi, sizeof out->hi, "%.3g", max);
        snprintf(out->what, sizeof out->what, "log, %s", shared);
        break;
    default:
        snprintf(out->lo, sizeof out->lo, "0");
        snprintf(out->hi, sizeof out->hi, "%.3g", max);
        snprintf(out->what, sizeof out->what, "raw, %s", shared);
        break;
    }
}

int tui_heat_token_axis(mt_probe_axis axis)
{
    return axis == MT_PROBE_AXIS_TARGET || axis == MT_PROBE_AXIS_SOURCE;
}
