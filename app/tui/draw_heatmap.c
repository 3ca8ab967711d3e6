/* The heatmap view of a pane: one probe map (state norms, attention, retention, implicit
 * attention) of the segment under the editor's cursor, laid out by tui_heat_geom_fit
 * (heat_layout.h: the picture of the parts is there): row and column labels, the cursor's
 * row and column marked, a legend, and a readout naming the cursor's row, column and value.
 * Cells are one colour each (a full block in the theme's heat colour), or shaded glyphs
 * without colours; cells the unit cannot see (mt_probe_masked) are the pane's background. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mtlab/clock.h"
#include "tui/app.h"
#include "common/columns.h"
#include "tui/glyphs.h"
#include "tui/styled.h"

enum { LABEL_MAX = 64 };

static const tui_glyphs *glyphs(const tui_app *a) { return tui_glyphs_for(a->utf8 && !a->ascii); }

/* Maps compared on one scale: state norms with state norms, attention (self, cross,
 * retention, implicit) with attention. */
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
        float *v = tui_heat_pane_slice(q, &m);
        if (v && scale_class(m->kind) == scale_class(kind)) {
            float qm = tui_heat_max(v, m->rows, m->cols);
            if (qm > mx) mx = qm;
        }
        free(v);
    }
    return mx;
}

static int levels_of(const tui_app *a)
{
    return a->palette.heat_levels ? a->palette.heat_levels : TUI_SHADES;
}

/* One character of a heat cell at a level; masked cells (level < 0) are the background. */
static void heat_char(tui_app *a, WINDOW *w, int y, int x, int level)
{
    const tui_palette *pal = &a->palette;
    const tui_glyphs *g = glyphs(a);
    if (level < 0) {
        tui_set_style(w, pal, TUI_C_TEXT);
        mvwaddch(w, y, x, ' ');
        return;
    }
    if (pal->heat_levels) {
        wattr_set(w, pal->heat_fg_attr[level], pal->heat_fg0 + level, NULL);
        mvwaddstr(w, y, x, g->shades[TUI_SHADES - 1]);
        return;
    }
    /* without colours the lowest level is still a glyph, so a zero is not a masked cell */
    int shade = 1 + level * (TUI_SHADES - 1) / levels_of(a);
    tui_set_style(w, pal, TUI_C_TEXT);
    mvwaddstr(w, y, x, g->shades[shade < TUI_SHADES ? shade : TUI_SHADES - 1]);
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
    tui_heat_legend l;
    if (tui_heat_legend_fit(&l, width, tui_text_width_z(lo), tui_text_width_z(hi),
                            tui_text_width_z(what)) < 0)
        return;
    tui_set_style(w, &a->palette, TUI_C_DIM);
    int cx = x;
    if (l.prefix) cx += tui_put(w, y, cx, "scale ", 6);
    if (l.ends) {
        cx += tui_put(w, y, cx, lo, x + width - cx);
        cx += tui_put(w, y, cx, " ", 1);
    }
    int L = levels_of(a);
    for (int i = 0; i < l.steps; i++, cx++) heat_char(a, w, y, cx, tui_heat_level((i + 0.5f) / l.steps, L));
    tui_set_style(w, &a->palette, TUI_C_DIM);
    if (l.ends) {
        cx += tui_put(w, y, cx, " ", 1);
        cx += tui_put(w, y, cx, hi, x + width - cx);
    }
    if (l.what) {
        cx += tui_put(w, y, cx, "  ", 2);
        tui_put(w, y, cx, what, x + width - cx);
    }
}

/* "row 5 'dijo' → col 3 'Marta'  0.0712", shorter when it does not fit; the labels are the
 * cursor's, the ones the markers point at. */
static void draw_readout(tui_app *a, tui_pane *p, WINDOW *w, int y, int x, int width,
                         const mt_probe_map *m, const float *v)
{
    char rl[LABEL_MAX], cl[LABEL_MAX], val[32], line[256];
    tui_heat_axis_label(rl, sizeof rl, p->probe, m->row_axis, p->sel_row);
    tui_heat_axis_label(cl, sizeof cl, p->probe, m->col_axis, p->sel_col);
    int tokens_r = tui_heat_token_axis(m->row_axis), tokens_c = tui_heat_token_axis(m->col_axis);
    if (mt_probe_masked(m, p->sel_row, p->sel_col))
        snprintf(val, sizeof val, "masked");
    else
        snprintf(val, sizeof val, "%.3g", v[(size_t)p->sel_row * m->cols + p->sel_col]);
    const char *arrow = glyphs(a)->arrow;
    snprintf(line, sizeof line, "row %d %s%s%s %s col %d %s%s%s  %s", p->sel_row,
             tokens_r ? "'" : "", rl, tokens_r ? "'" : "", arrow, p->sel_col, tokens_c ? "'" : "",
             cl, tokens_c ? "'" : "", val);
    if (tui_text_width_z(line) > width)
        snprintf(line, sizeof line, "%s%s%s%s%s%s%s %s", tokens_r ? "'" : "", rl,
                 tokens_r ? "'" : "", arrow, tokens_c ? "'" : "", cl, tokens_c ? "'" : "", val);
    tui_set_style(w, &a->palette, TUI_C_SELECTION);
    tui_put(w, y, x, line, width);
}

/* The column labels: down each column (one character a line) or across its cells. */
static void draw_col_labels(tui_app *a, tui_pane *p, WINDOW *w, int y0, int x0,
                            const tui_heat_geom *g, const mt_probe_map *m)
{
    for (int c = g->col0; c < g->col0 + g->n_cols; c++) {
        char label[LABEL_MAX];
        tui_heat_axis_label(label, sizeof label, p->probe, m->col_axis, c);
        int x = x0 + tui_heat_col_x(g, c);
        tui_set_style(w, &a->palette, c == p->sel_col ? TUI_C_SELECTION : TUI_C_DIM);
        if (!g->vertical) {
            tui_put(w, y0 + g->labels_y, x, label, g->cell_w - 1);
            continue;
        }
        const char *s = label;
        for (int k = 0; k < g->labels_h && *s; k++) {
            uint32_t cp;
            int n = tui_utf8_decode(s, strlen(s), &cp);
            char one[8];
            snprintf(one, sizeof one, "%.*s", n ? n : 1, s);
            tui_put(w, y0 + g->labels_y + k, x, one, g->cell_w);
            s += n ? n : 1;
        }
    }
}

/* The boundary between source and translation: a line between their rows and columns. */
static void draw_boundary(tui_app *a, WINDOW *w, int y0, int x0, const tui_heat_geom *g)
{
    tui_set_style(w, &a->palette, TUI_C_BORDER);
    int last_y = tui_heat_row_y(g, g->row0 + g->n_rows - 1) + g->cell_h;
    int last_x = tui_heat_col_x(g, g->col0 + g->n_cols - 1) + g->cell_w;
    if (g->sep_col)
        mvwvline(w, y0 + g->labels_y, x0 + tui_heat_col_x(g, g->col_split) - 1, ACS_VLINE,
                 last_y - g->labels_y);
    if (g->sep_row)
        mvwhline(w, y0 + tui_heat_row_y(g, g->row_split) - 1, x0 + g->cells_x, ACS_HLINE,
                 last_x - g->cells_x);
    if (g->sep_row && g->sep_col)
        mvwaddch(w, y0 + tui_heat_row_y(g, g->row_split) - 1,
                 x0 + tui_heat_col_x(g, g->col_split) - 1, ACS_PLUS);
}

static void draw_message(tui_app *a, WINDOW *w, int y, int x, int width, const char *msg,
                         tui_meaning mm)
{
    tui_set_style(w, &a->palette, mm);
    tui_put(w, y, x, msg, width);
}

/* The widest label of an axis (n positions), in columns, at most LABEL_MAX. */
static int widest_label(const tui_pane *p, mt_probe_axis axis, int n)
{
    int wmax = 0;
    for (int i = 0; i < n; i++) {
        char label[LABEL_MAX];
        tui_heat_axis_label(label, sizeof label, p->probe, axis, i);
        int lw = tui_text_width_z(label);
        if (lw > wmax) wmax = lw;
    }
    return wmax;
}

void tui_draw_heatmap(tui_app *a, tui_pane *p, WINDOW *w, int y0, int x0, int h, int width)
{
    p->heat_geom = (tui_heat_geom){0};
    p->heat_y0 = y0, p->heat_x0 = x0;
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
    float *v = tui_heat_pane_slice(p, &m);
    if (!v) {
        /* the kind asked for is missing; the model may well record others */
        int any = 0;
        for (int k = 0; k < MT_PROBE_KINDS; k++) any |= tui_heat_count(&p->probe->rec, (mt_probe_kind)k) > 0;
        if (any && p->heat_kind >= 0)
            snprintf(msg, sizeof msg, "no %s maps in this model (F3 shows the ones it records)",
                     mt_probe_kind_name((mt_probe_kind)p->heat_kind));
        else
            snprintf(msg, sizeof msg, "this model records no maps");
        draw_message(a, w, y0, x0, width, msg, TUI_C_DIM);
        return;
    }
    p->sel_row = tui_clamp(p->sel_row, 0, m->rows - 1);
    p->sel_col = tui_clamp(p->sel_col, 0, m->cols - 1);
    const mt_probe_record *r = &p->probe->rec;
    int labelled_cols = tui_heat_token_axis(m->col_axis);
    tui_heat_geom_in in = {m->rows, m->cols, tui_heat_split(r, m->row_axis),
                           tui_heat_split(r, m->col_axis), widest_label(p, m->row_axis, m->rows),
                           labelled_cols ? widest_label(p, m->col_axis, m->cols) : 0,
                           p->sel_row, p->sel_col, p->heat_row0, p->heat_col0};
    tui_heat_geom *g = &p->heat_geom;
    tui_heat_geom_fit(g, &in, h, width);
    p->heat_row0 = g->row0, p->heat_col0 = g->col0;

    char title[256];
    tui_heat_title(title, sizeof title, p, m, glyphs(a)->dot, width);
    tui_set_style(w, &a->palette, TUI_C_TITLE);
    tui_put(w, y0 + g->header_y, x0, title, width);

    float max = shared_max(a, m->kind);
    float *norm = mt_xmalloc((size_t)m->rows * (size_t)m->cols * sizeof *norm);
    tui_heat_normalise(norm, v, m->rows, m->cols, p->heat_norm, max);
    int L = levels_of(a);
    if (g->marker_y >= 0) {
        tui_set_style(w, &a->palette, TUI_C_SELECTION);
        mvwaddstr(w, y0 + g->marker_y, x0 + tui_heat_col_x(g, p->sel_col), glyphs(a)->col_mark);
    }
    if (g->labels_h > 0) draw_col_labels(a, p, w, y0, x0, g, m);
    for (int row = g->row0; row < g->row0 + g->n_rows; row++) {
        int y = y0 + tui_heat_row_y(g, row);
        char label[LABEL_MAX];
        tui_heat_axis_label(label, sizeof label, p->probe, m->row_axis, row);
        int selected = row == p->sel_row;
        tui_set_style(w, &a->palette, selected ? TUI_C_SELECTION : TUI_C_DIM);
        int lx = x0;
        if (selected) lx += tui_put(w, y, lx, glyphs(a)->row_mark, 1);
        else lx++;
        tui_put(w, y, lx, label, x0 + g->gutter_w - 1 - lx);
        for (int c = g->col0; c < g->col0 + g->n_cols; c++) {
            int level = mt_probe_masked(m, row, c)
                            ? -1
                            : tui_heat_level(norm[(size_t)row * m->cols + c], L);
            int x = x0 + tui_heat_col_x(g, c);
            for (int dy = 0; dy < g->cell_h; dy++)
                for (int dx = 0; dx < g->cell_w; dx++) heat_char(a, w, y + dy, x + dx, level);
        }
    }
    draw_boundary(a, w, y0, x0, g);
    if (g->legend_y >= 0) draw_legend(a, p, w, y0 + g->legend_y, x0, width, max, m->kind);
    draw_readout(a, p, w, y0 + g->readout_y, x0, width, m, v);
    free(norm);
    free(v);
}
