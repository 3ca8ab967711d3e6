/* The map a pane's heatmap shows, as data: its slice and title (for drawing), and its export
 * as SVG and PNG through app/plot's cairo renderer and as CSV, with the full token labels
 * and the masked cells left undefined (empty in the CSV, background in the images). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mtlab/error.h"
#include "plot/plot.h"
#include "tui/app.h"
#include "common/columns.h"

enum {
    PX_CONTENT = 1100,
    PX_CELL_MIN = 10,
    PX_CELL_MAX = 28, /* the cells' side, in pixels */
    PX_MARGIN = 260,
    PX_MIN = 400,
    PX_MAX = 4096,
    HEAT_STOPS = 16,
};

int tui_heat_current(const tui_app *a, const tui_pane *p)
{
    if (a->sent_version != a->ed.version) return 0;
    if (p->heat_kind == TUI_HEAT_ATTRIBUTION)
        return p->attr && p->attr_request == p->request &&
               p->attr_segment == tui_cursor_segment(a) && p->attr_of_method == p->attr_method &&
               !strcmp(p->attr_of_contrast, p->attr_contrast);
    return p->probe && p->probe_request == p->request && p->probe_segment == tui_cursor_segment(a);
}

const tui_probe *tui_heat_pane_probe(const tui_pane *p)
{
    return p->heat_kind == TUI_HEAT_ATTRIBUTION ? p->attr : p->probe;
}

int tui_heat_pane_split(const tui_pane *p, mt_probe_axis axis)
{
    if (p->heat_kind == TUI_HEAT_ATTRIBUTION)
        return axis == MT_PROBE_AXIS_SOURCE && p->attr_raw ? p->attr_raw->attr.n_src : 0;
    return p->probe ? tui_heat_split(&p->probe->rec, axis) : 0;
}

const char *tui_heat_pane_axis_title(const tui_pane *p, mt_probe_axis axis)
{
    if (p->heat_kind == TUI_HEAT_ATTRIBUTION)
        return axis == MT_PROBE_AXIS_SOURCE ? "source | translation" : "translation";
    return tui_heat_axis_title(&p->probe->rec, axis);
}

int tui_heat_pane_masked(const tui_pane *p, const mt_probe_map *m, int row, int col)
{
    if (m->kind != TUI_HEAT_ATTRIBUTION || !p->attr_raw) return mt_probe_masked(m, row, col);
    /* the translation side is `<bos> hyp` (encoder-decoder: one more than the rows before
     * </s>) or `hyp` (decoder-only); row i is predicted from its first i + 1 or i tokens */
    int split = p->attr_raw->attr.n_src, side = m->cols - split;
    int seen = row + side - (m->rows - 1);
    return col >= split && col - split >= seen;
}

float tui_heat_pane_value(const tui_pane *p, const mt_probe_map *m, const float *v, int row,
                          int col)
{
    if (m->kind == TUI_HEAT_ATTRIBUTION && p->attr_raw)
        return p->attr_raw->attr.values[(size_t)row * m->cols + col];
    return v[(size_t)row * m->cols + col];
}

float tui_heat_shared_max(const tui_app *a, int kind)
{
    float mx = 0;
    for (int i = 0; i < a->n_panes; i++) {
        const tui_pane *q = a->panes[i];
        if (q->view != TUI_VIEW_HEATMAP) continue;
        const mt_probe_map *m;
        float *v = tui_heat_pane_slice(q, &m);
        if (v && tui_heat_scale_class(m->kind) == tui_heat_scale_class(kind)) {
            float qm = tui_heat_max(v, m->rows, m->cols);
            if (qm > mx) mx = qm;
        }
        free(v);
    }
    return mx;
}

float *tui_heat_pane_slice(const tui_pane *p, const mt_probe_map **map)
{
    *map = NULL;
    const tui_probe *pr = tui_heat_pane_probe(p);
    if (!pr) return NULL;
    return tui_heat_pick(&pr->rec, p->heat_kind,
                         p->heat_kind == TUI_HEAT_ATTRIBUTION ? 0 : p->heat_nth, p->heat_head, map);
}

/* "attribution · input x gradient · vs 'God' · seg 1", shorter to fit width (as below). */
static void attribution_title(char *out, size_t len, const tui_pane *p, const char *dot, int width)
{
    static const char *const terse_method[] = {"saliency", "x-grad", "IG"};
    char contrast[96] = "";
    /* the token the engine found for the contrast asked for, as its maps label tokens */
    if (p->attr_raw && p->attr_raw->contrast_shown)
        snprintf(contrast, sizeof contrast, " %s vs '%s'", dot, p->attr_raw->contrast_shown);
    for (int terse = 0; terse < 3; terse++) {
        char seg[24] = "";
        if (terse == 0) snprintf(seg, sizeof seg, " %s seg %d", dot, p->attr_segment + 1);
        const char *method =
            terse < 2 ? tui_heat_method_title(p->attr_method) : terse_method[p->attr_method % 3];
        snprintf(out, len, "%s %s %s%s%s", terse < 2 ? "attribution" : "attr", dot, method,
                 contrast, seg);
        if (width <= 0 || tui_text_width_z(out) <= width) return;
    }
}

void tui_heat_title(char *out, size_t len, const tui_pane *p, const mt_probe_map *m,
                    const char *dot, int width)
{
    if (m->kind == TUI_HEAT_ATTRIBUTION) {
        attribution_title(out, len, p, dot, width);
        return;
    }
    int count = tui_heat_count(&p->probe->rec, m->kind);
    /* the longest that fits: then without the segment, then heads and layers in short */
    for (int terse = 0; terse < 3; terse++) {
        char head[48] = "", where[64] = "", seg[24] = "";
        if (m->heads > 1 && p->heat_head < 0 && terse < 2)
            snprintf(head, sizeof head, " %s mean of %d heads", dot, m->heads);
        else if (m->heads > 1 && p->heat_head < 0) snprintf(head, sizeof head, " %s mean", dot);
        else if (m->heads > 1)
            snprintf(head, sizeof head, " %s %s%d/%d", dot, terse < 2 ? "head " : "h",
                     p->heat_head + 1, m->heads);
        if (m->layer >= 0 && terse < 2)
            snprintf(where, sizeof where, " %s %sL%d %d/%d", dot, m->encoder ? "encoder " : "",
                     m->layer + 1, p->heat_nth + 1, count);
        else if (m->layer >= 0)
            snprintf(where, sizeof where, " %s %sL%d", dot, m->encoder ? "enc " : "", m->layer + 1);
        if (terse == 0) snprintf(seg, sizeof seg, " %s seg %d", dot, p->probe_segment + 1);
        snprintf(out, len, "%s%s%s%s", mt_probe_map_name(m), where, head, seg);
        if (width <= 0 || tui_text_width_z(out) <= width) return;
    }
}

/* name with every character outside [A-Za-z0-9.+_-] turned into '-', runs folded. */
static void file_safe(char *out, size_t len, const char *name)
{
    size_t k = 0;
    for (const char *s = name; *s && k + 1 < len; s++) {
        int ok = (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
                 *s == '.' || *s == '+' || *s == '_';
        if (ok) out[k++] = *s;
        else if (k > 0 && out[k - 1] != '-') out[k++] = '-';
    }
    while (k > 0 && out[k - 1] == '-') k--;
    out[k] = '\0';
}

/* labels (n) of an axis, malloc'd strings */
static char **axis_labels(const tui_pane *p, mt_probe_axis axis, int n)
{
    char **l = mt_xmalloc((size_t)n * sizeof *l);
    for (int i = 0; i < n; i++) {
        char buf[256];
        tui_heat_axis_label(buf, sizeof buf, tui_heat_pane_probe(p), axis, i);
        l[i] = mt_xstrdup(buf);
    }
    return l;
}

static void free_labels(char **l, int n)
{
    for (int i = 0; i < n; i++) free(l[i]);
    free(l);
}

/* Pixels of a cell: large for a short sentence, smaller for a long one, so a file fits a
 * page or a slide whatever the map's size (a 120-token sequence is about 1300 px, not 3600). */
static int cell_px(int rows, int cols)
{
    int n = rows > cols ? rows : cols;
    int c = PX_CONTENT / (n > 0 ? n : 1);
    return c < PX_CELL_MIN ? PX_CELL_MIN : c > PX_CELL_MAX ? PX_CELL_MAX : c;
}

static int px(int cells, int cell)
{
    int v = PX_MARGIN + cells * cell;
    return v < PX_MIN ? PX_MIN : v > PX_MAX ? PX_MAX : v;
}

/* The theme's heat colours as the file's scale (a theme without them: greys, as the glyphs). */
static void theme_colors(plot *pl, const tui_theme *t)
{
    if (t->n_heat == 0) {
        plot_heatmap_set_scale(pl, PLOT_SCALE_GREYS);
        return;
    }
    uint8_t rgb[3 * HEAT_STOPS];
    for (int i = 0; i < HEAT_STOPS; i++) {
        tui_color c = tui_heat_color(t, (double)i / (HEAT_STOPS - 1));
        rgb[3 * i] = c.r, rgb[3 * i + 1] = c.g, rgb[3 * i + 2] = c.b;
    }
    plot_heatmap_set_colors(pl, rgb, HEAT_STOPS);
}

/* The base name "heatmap-PANE-MAP-L1-h2-seg1" plus "-N" when a file of that base exists. */
static void base_name(char *out, size_t len, const tui_pane *p, const mt_probe_map *m)
{
    char what[128], stem[224];
    if (m->kind == TUI_HEAT_ATTRIBUTION)
        snprintf(what, sizeof what, "%s-attribution-%s%s%s", p->name,
                 mt_attr_method_name((mt_attr_method)p->attr_method),
                 p->attr_contrast[0] ? "-vs-" : "", p->attr_contrast);
    else
        snprintf(what, sizeof what, "%s-%s%s", p->name, m->encoder ? "encoder-" : "",
                 mt_probe_map_name(m));
    char layer[16] = "", head[16] = "";
    if (m->layer >= 0) snprintf(layer, sizeof layer, "-L%d", m->layer + 1);
    if (m->heads > 1 && p->heat_head >= 0) snprintf(head, sizeof head, "-h%d", p->heat_head + 1);
    char safe[128];
    file_safe(safe, sizeof safe, what);
    int seg = m->kind == TUI_HEAT_ATTRIBUTION ? p->attr_segment : p->probe_segment;
    snprintf(stem, sizeof stem, "heatmap-%s%s%s-seg%d", safe, layer, head, seg + 1);
    static const char *const ext[] = {".svg", ".png", ".csv"};
    for (int n = 1;; n++) {
        if (n == 1) snprintf(out, len, "%s", stem);
        else snprintf(out, len, "%s-%d", stem, n);
        int taken = 0;
        for (int e = 0; e < 3; e++) {
            char path[300];
            snprintf(path, sizeof path, "%s%s", out, ext[e]);
            taken |= access(path, F_OK) == 0;
        }
        if (!taken) return;
    }
}

void tui_heat_export(tui_app *a, tui_pane *p)
{
    if (tui_heat_pane_probe(p) && !tui_heat_current(a, p)) {
        tui_notice(a,
                   "export: %s's map is being recomputed for the text shown; export it "
                   "once it shows",
                   p->name);
        return;
    }
    const mt_probe_map *m;
    float *v = tui_heat_pane_slice(p, &m);
    if (!v) {
        tui_notice(a, "export: %s has no map to write yet", p->name);
        return;
    }
    uint8_t *mask = mt_xmalloc((size_t)m->rows * (size_t)m->cols);
    for (int r = 0; r < m->rows; r++)
        for (int c = 0; c < m->cols; c++)
            mask[(size_t)r * m->cols + c] = (uint8_t)tui_heat_pane_masked(p, m, r, c);
    char **rows = axis_labels(p, m->row_axis, m->rows);
    char **cols = axis_labels(p, m->col_axis, m->cols);

    /* the picture the screen shows: its scale (raw over the shared max, per row, log), its
     * colours, labels, boundary and axis names; the CSV keeps the values themselves */
    float max = tui_heat_shared_max(a, m->kind);
    tui_heat_scale sc;
    tui_heat_scale_describe(&sc, p->heat_norm, m->kind, max, max);
    float *shown = mt_xmalloc((size_t)m->rows * (size_t)m->cols * sizeof *shown);
    tui_heat_normalise(shown, v, m->rows, m->cols, p->heat_norm, max);
    char title[384], heading[192], scale[160];
    tui_heat_title(heading, sizeof heading, p, m, "\u00b7", 0);
    if (p->heat_norm == TUI_NORM_ROW)
        snprintf(scale, sizeof scale, "scale per row, 0 to each row's max");
    else snprintf(scale, sizeof scale, "scale %s, %s to %s", sc.what, sc.lo, sc.hi);
    snprintf(title, sizeof title, "%s: %s \u00b7 %s", p->name, heading, scale);
    const char *x_name = tui_heat_pane_axis_title(p, m->col_axis);
    const char *y_name = tui_heat_pane_axis_title(p, m->row_axis);
    char x_label[64], y_label[64];
    snprintf(x_label, sizeof x_label, "%s \u2192", x_name);
    snprintf(y_label, sizeof y_label, "%s \u2193", y_name);
    /* raw: the values on the shared range, so the colour bar reads in them */
    int raw = p->heat_norm == TUI_NORM_RAW && max > 0;
    plot_grid grid = {raw ? v : shown,           m->rows, m->cols, (const char *const *)rows,
                      (const char *const *)cols, mask};
    plot *pl = plot_heatmap_new(title, x_label, y_label, &grid);
    /* the CSV: the values themselves (an attribution's signed ones) */
    const float *values =
        m->kind == TUI_HEAT_ATTRIBUTION && p->attr_raw ? p->attr_raw->attr.values : v;
    grid.v = values;
    plot *data = plot_heatmap_new(title, x_name, y_name, &grid);
    int rc = pl && data ? 0 : -1;
    if (rc == 0) {
        theme_colors(pl, &a->theme);
        rc = plot_heatmap_set_range(pl, 0, raw ? max : 1);
        int rs = tui_heat_pane_split(p, m->row_axis), cs = tui_heat_pane_split(p, m->col_axis);
        if (rc == 0 && (rs || cs)) rc = plot_heatmap_set_split(pl, rs, cs);
    }
    char base[256], paths[3][300], cwd[512];
    base_name(base, sizeof base, p, m);
    static const char *const ext[] = {".svg", ".png", ".csv"};
    int cell = cell_px(m->rows, m->cols);
    for (int e = 0; e < 3 && rc == 0; e++) {
        snprintf(paths[e], sizeof paths[e], "%s%s", base, ext[e]);
        /* wide enough for the title (about 13 px a character) */
        int wpx = px(m->cols, cell), tpx = 13 * tui_text_width_z(title) + 40;
        rc = plot_save(e == 2 ? data : pl, paths[e],
                       wpx > tpx      ? wpx
                       : tpx < PX_MAX ? tpx
                                      : PX_MAX,
                       px(m->rows, cell));
    }
    if (rc == 0) {
        if (!getcwd(cwd, sizeof cwd)) snprintf(cwd, sizeof cwd, ".");
        tui_notice(a, "wrote %s/%s.svg, .png and .csv", cwd, base);
    } else {
        tui_notice(a, "export failed: %s", mt_last_error());
    }
    plot_free(data);
    free(shown);
    plot_free(pl);
    free_labels(rows, m->rows);
    free_labels(cols, m->cols);
    free(mask);
    free(v);
}
