/* The heatmap view of a pane: one probe map (state norms, attention, implicit attention) of
 * the segment under the editor's cursor, a legend with the scale and the normalisation, and
 * the selected token's row and column marked.
 *
 *   implicit attention · L0 1/2 · seg 5                      header
 *               ▼                                            the selected column
 *   <bos>   █                                                row label | cells: two map rows
 *   ▶Dios   ▒▓██                                             per line with half blocks in
 *   dijo    ░▓ ▒ █                                           256+ colours, else one, shaded
 *   scale 0 ░░░░░░▒▒▓▓▓▓██ row max  per row                  legend
 *   token 4 'Dios'  row max 0.243  self 0.178                the selection */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mtlab/clock.h"
#include "tui/app.h"
#include "tui/glyphs.h"
#include "tui/styled.h"
#include "tui/columns.h"

enum { LABEL_W = 8, LEGEND_STEPS = 16 };

static const tui_glyphs *glyphs(const tui_app *a) { return tui_glyphs_for(a->utf8 && !a->ascii); }

/* The map the pane shows, or NULL. */
static const mt_probe_map *shown_map(const tui_pane *p)
{
    if (!p->probe || p->heat_kind < 0) return NULL;
    int i = tui_heat_find(&p->probe->rec, (mt_probe_kind)p->heat_kind, p->heat_nth);
    return i >= 0 ? &p->probe->rec.maps[i] : NULL;
}

/* The shown slice (malloc'd rows x cols), or NULL. */
static float *shown_slice(const tui_pane *p, const mt_probe_map **map)
{
    const mt_probe_map *m = shown_map(p);
    *map = m;
    if (!m || m->rows == 0 || m->cols == 0) return NULL;
    float *v = mt_xmalloc((size_t)m->rows * (size_t)m->cols * sizeof *v);
    tui_heat_slice(v, m, p->heat_head);
    return v;
}

/* Maps compared on one scale: state norms with state norms, attention (self, cross,
 * implicit) with attention. */
static int scale_class(mt_probe_kind k)
{
    return k == MT_PROBE_STATE_NORMS || k == MT_PROBE_STATE_GROUPS;
}

/* The raw scale: the largest value any pane's heatmap of the same class shows now. */
static float shared_max(tui_app *a, mt_probe_kind kind)
{
    float mx = 0;
    for (int i = 0; i < a->n_panes; i++) {
        tui_pane *q = a->panes[i];
        if (q->view != TUI_VIEW_HEATMAP) continue;
        const mt_probe_map *m;
        float *v = shown_slice(q, &m);
        if (!v) continue;
        if (scale_class(m->kind) != scale_class(kind)) {
            free(v);
            continue;
        }
        float qm = tui_heat_max(v, m->rows, m->cols);
        if (qm > mx) mx = qm;
        free(v);
    }
    return mx;
}

/* A label for position i of an axis, cut to fit: the piece without its word-start mark. */
static void axis_label(char *out, size_t len, const tui_probe *pr, mt_probe_axis axis, int i)
{
    if (axis == MT_PROBE_AXIS_LAYER || axis == MT_PROBE_AXIS_GROUP) {
        snprintf(out, len, "%s%d", axis == MT_PROBE_AXIS_LAYER ? "L" : "g", i);
        return;
    }
    char **labels = axis == MT_PROBE_AXIS_SOURCE ? pr->src_labels : pr->labels;
    int n = axis == MT_PROBE_AXIS_SOURCE ? pr->rec.n_src : pr->rec.n_tokens;
    const char *s = i < n && labels ? labels[i] : "?";
    if (!strncmp(s, "\u2581", 3)) s += 3;
    snprintf(out, len, "%s", s);
}

static void heat_cell(tui_app *a, WINDOW *w, int y, int x, int top, int bottom)
{
    const tui_palette *pal = &a->palette;
    const tui_glyphs *g = glyphs(a);
    cchar_t cc;
    wchar_t wc[2] = {0, 0};
    if (pal->half_blocks && g->upper_half) {
        short pair = bottom < 0 ? (short)(pal->heat_fg0 + top)
                                : (short)(pal->heat_pair0 + top * pal->heat_levels + bottom);
        wc[0] = 0x2580;
        setcchar(&cc, wc, A_NORMAL, pair, NULL);
        mvwadd_wch(w, y, x, &cc);
        return;
    }
    int L = pal->heat_levels ? pal->heat_levels : TUI_SHADES;
    int shade = top * TUI_SHADES / L;
    if (shade == 0 && top > 0) shade = 1;
    if (pal->heat_levels) wattr_set(w, pal->heat_fg_attr[top], pal->heat_fg0 + top, NULL);
    else tui_set_style(w, pal, TUI_C_TEXT);
    mvwaddstr(w, y, x, g->shades[shade]);
}

static int levels_of(const tui_app *a)
{
    return a->palette.heat_levels ? a->palette.heat_levels : TUI_SHADES;
}

static void draw_legend(tui_app *a, tui_pane *p, WINDOW *w, int y, int x, int width, float max,
                        mt_probe_kind kind)
{
    /* raw and log share their scale with the other panes' maps of the same class */
    const char *shared = scale_class(kind) ? "shared by state maps" : "shared by attention";
    char lo[32], hi[32], what[64];
    switch (p->heat_norm) {
    case TUI_NORM_ROW:
        snprintf(lo, sizeof lo, "0");
        snprintf(hi, sizeof hi, "row max");
        snprintf(what, sizeof what, "per row");
        break;
    case TUI_NORM_LOG:
        snprintf(lo, sizeof lo, "%.2g", max * 1e-3);
        snprintf(hi, sizeof hi, "%.3g", max);
        snprintf(what, sizeof what, "log, %s", shared);
        break;
    default:
        snprintf(lo, sizeof lo, "0");
        snprintf(hi, sizeof hi, "%.3g", max);
        snprintf(what, sizeof what, "raw, %s", shared);
        break;
    }
    tui_set_style(w, &a->palette, TUI_C_DIM);
    int cx = x + tui_put(w, y, x, "scale ", width);
    cx += tui_put(w, y, cx, lo, x + width - cx);
    cx += tui_put(w, y, cx, " ", x + width - cx);
    int L = levels_of(a);
    for (int i = 0; i < LEGEND_STEPS && cx < x + width; i++, cx++) {
        int level = tui_heat_level((i + 0.5f) / LEGEND_STEPS, L);
        heat_cell(a, w, y, cx, level, a->palette.half_blocks ? level : -1);
    }
    tui_set_style(w, &a->palette, TUI_C_DIM);
    cx += tui_put(w, y, cx, " ", x + width - cx);
    cx += tui_put(w, y, cx, hi, x + width - cx);
    cx += tui_put(w, y, cx, "  ", x + width - cx);
    tui_put(w, y, cx, what, x + width - cx);
}

static void draw_header(tui_app *a, tui_pane *p, WINDOW *w, int y, int x, int width,
                        const mt_probe_map *m)
{
    const mt_probe_record *r = &p->probe->rec;
    const char *dot = glyphs(a)->dot;
    char head[32] = "", where[48] = "", line[256];
    int count = tui_heat_count(r, m->kind);
    if (m->heads > 1) {
        if (p->heat_head < 0) snprintf(head, sizeof head, " %s mean of %d heads", dot, m->heads);
        else snprintf(head, sizeof head, " %s head %d/%d", dot, p->heat_head + 1, m->heads);
    }
    if (m->layer >= 0)
        snprintf(where, sizeof where, " %s %sL%d %d/%d", dot, m->encoder ? "encoder " : "",
                 m->layer, p->heat_nth + 1, count);
    snprintf(line, sizeof line, "%s%s%s %s seg %d", mt_probe_kind_name(m->kind), where, head,
             dot, p->probe_segment + 1);
    tui_set_style(w, &a->palette, TUI_C_TITLE);
    tui_put(w, y, x, line, width);
}

/* The status line under the legend: the selected token and the values at its row/column. */
static void draw_selection(tui_app *a, tui_pane *p, WINDOW *w, int y, int x, int width,
                           const mt_probe_map *m, const float *v)
{
    tui_set_style(w, &a->palette, TUI_C_DIM);
    if (p->sel < 0) {
        tui_put(w, y, x, "Left/Right: token  F6 map  F7 layer  F8 head  F12 scale", width);
        return;
    }
    char label[64], line[160];
    axis_label(label, sizeof label, p->probe, MT_PROBE_AXIS_TARGET, p->sel);
    int n = snprintf(line, sizeof line, "token %d '%s'", p->sel, label);
    int on_rows = m->row_axis == MT_PROBE_AXIS_TARGET && p->sel < m->rows;
    int on_cols = m->col_axis == MT_PROBE_AXIS_TARGET && p->sel < m->cols;
    if (on_rows) {
        float rmax = tui_heat_max(v + (size_t)p->sel * m->cols, 1, m->cols);
        n += snprintf(line + n, sizeof line - (size_t)n, "  row max %.3g", rmax);
    }
    if (on_rows && on_cols)
        snprintf(line + n, sizeof line - (size_t)n, "  self %.3g",
                 v[(size_t)p->sel * m->cols + p->sel]);
    tui_set_style(w, &a->palette, TUI_C_SELECTION);
    tui_put(w, y, x, line, width);
}

static void draw_message(tui_app *a, WINDOW *w, int y, int x, int width, const char *msg,
                         tui_meaning mm)
{
    tui_set_style(w, &a->palette, mm);
    tui_put(w, y, x, msg, width);
}

void tui_draw_heatmap(tui_app *a, tui_pane *p, WINDOW *w, int y0, int x0, int h, int width)
{
    p->heat_cells = (tui_rect){0, 0, 0, 0};
    const char *spin = glyphs(a)->spinner[(long)(mt_now_s() * 10) % glyphs(a)->n_spinner];
    char msg[512];
    if (p->probe_error) {
        snprintf(msg, sizeof msg, "no probes: %s", p->probe_error);
        draw_message(a, w, y0, x0, width, msg, TUI_C_ERROR);
        return;
    }
    if (!p->probe) {
        if (p->busy || p->probe_pending)
            snprintf(msg, sizeof msg, "%s %s", p->busy ? "translating" : "recording probes", spin);
        else
            snprintf(msg, sizeof msg, "no heatmap yet: type text in the editor (F3: back to "
                     "the translation)");
        draw_message(a, w, y0, x0, width, msg, TUI_C_DIM);
        return;
    }
    const mt_probe_map *m;
    float *v = shown_slice(p, &m);
    if (!v) {
        draw_message(a, w, y0, x0, width, "this model records no maps", TUI_C_DIM);
        return;
    }
    float max = shared_max(a, m->kind);
    float *norm = mt_xmalloc((size_t)m->rows * (size_t)m->cols * sizeof *norm);
    tui_heat_normalise(norm, v, m->rows, m->cols, p->heat_norm, max);
    draw_header(a, p, w, y0, x0, width, m);

    int per_line = a->palette.half_blocks && glyphs(a)->upper_half ? 2 : 1;
    int map_h = h - 4, map_w = width - LABEL_W;
    int sel_row = m->row_axis == MT_PROBE_AXIS_TARGET ? p->sel : -1;
    int sel_col = m->col_axis == MT_PROBE_AXIS_TARGET ? p->sel : -1;
    /* scroll so the selected token stays in view */
    int lines = (m->rows + per_line - 1) / per_line;
    if (sel_row >= 0 && sel_row < m->rows) {
        if (sel_row / per_line < p->heat_row0) p->heat_row0 = sel_row / per_line;
        if (sel_row / per_line >= p->heat_row0 + map_h) p->heat_row0 = sel_row / per_line - map_h + 1;
    }
    if (p->heat_row0 > lines - map_h) p->heat_row0 = lines - map_h > 0 ? lines - map_h : 0;
    int col0 = 0;
    if (m->cols > map_w && sel_col >= 0) col0 = sel_col - map_w / 2;
    if (col0 > m->cols - map_w) col0 = m->cols - map_w;
    if (col0 < 0) col0 = 0;
    p->heat_col0 = col0;
    p->heat_rows_per_line = per_line;
    p->heat_click_cols = m->col_axis == MT_PROBE_AXIS_TARGET;
    p->heat_cells = (tui_rect){y0 + 2, x0 + LABEL_W, map_h, map_w};

    if (sel_col >= col0 && sel_col < col0 + map_w && map_h > 0) {
        tui_set_style(w, &a->palette, TUI_C_SELECTION);
        mvwaddstr(w, y0 + 1, x0 + LABEL_W + sel_col - col0, glyphs(a)->col_mark);
    }
    int L = levels_of(a);
    for (int line = 0; line < map_h; line++) {
        int r = (p->heat_row0 + line) * per_line;
        if (r >= m->rows) break;
        char label[64];
        axis_label(label, sizeof label, p->probe, m->row_axis, r);
        /* numbered rows name both rows of a half-block line: "L0-1" */
        if (per_line == 2 && r + 1 < m->rows && (m->row_axis == MT_PROBE_AXIS_LAYER ||
                                                  m->row_axis == MT_PROBE_AXIS_GROUP))
            snprintf(label + strlen(label), sizeof label - strlen(label), "-%d", r + 1);
        int selected = sel_row >= r && sel_row < r + per_line;
        tui_set_style(w, &a->palette, selected ? TUI_C_SELECTION : TUI_C_DIM);
        int lx = x0;
        if (selected) lx += tui_put(w, y0 + 2 + line, lx, glyphs(a)->row_mark, 1);
        tui_put(w, y0 + 2 + line, lx, label, x0 + LABEL_W - 1 - lx);
        for (int c = col0; c < m->cols && c - col0 < map_w; c++) {
            int top = tui_heat_level(norm[(size_t)r * m->cols + c], L);
            int bottom = per_line == 2 && r + 1 < m->rows
                             ? tui_heat_level(norm[(size_t)(r + 1) * m->cols + c], L)
                             : -1;
            heat_cell(a, w, y0 + 2 + line, x0 + LABEL_W + c - col0, top, bottom);
        }
    }
    draw_legend(a, p, w, y0 + h - 2, x0, width, max, m->kind);
    draw_selection(a, p, w, y0 + h - 1, x0, width, m, v);
    free(norm);
    free(v);
}
