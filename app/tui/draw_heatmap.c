/* The heatmap view of a pane: one probe map (state norms, attention, retention, implicit
 * attention) of the segment under the editor's cursor, laid out by tui_heat_geom_fit
 * (heat_layout.h: the picture of the parts is there): row and column labels, the cursor's
 * row and column marked, a legend, and a readout naming the cursor's row, column and value.
 * Cells are one colour each (a full block in the theme's heat colour) on 256 colours and more,
 * else shaded glyphs ░▒▓█ in the text's colour (8 or 16 colours make no ramp); cells the unit
 * cannot see (tui_heat_pane_masked) are the pane's background. What the rows and columns are is
 * captioned beside the title or on the marker's line; a map that is not of the pane's current
 * text, search and segment (tui_heat_current) is not drawn: the pane says it is recomputed. */
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

/* Colour levels on 256 colours and more; else one level a shading glyph (░▒▓█). */
static int levels_of(const tui_app *a)
{
    return a->palette.heat_levels && a->palette.level >= TUI_COLORS_256 ? a->palette.heat_levels
                                                                        : TUI_SHADES - 1;
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
    int shade = tui_heat_shade(level, levels_of(a), TUI_SHADES);
    /* 8 or 16 colours make no ramp (the low ones fall to the background's black, like a
     * masked cell): there the glyphs shade in the text's colour, as plot:text{color=false} */
    if (pal->heat_levels && pal->level >= TUI_COLORS_256) {
        wattr_set(w, pal->heat_fg_attr[level], pal->heat_fg0 + level, NULL);
        mvwaddstr(w, y, x, g->shades[TUI_SHADES - 1]);
        return;
    }
    tui_set_style(w, pal, TUI_C_TEXT);
    mvwaddstr(w, y, x, g->shades[shade]);
}

/* The legend in numbers on the row `line` (h 1): per row, its top is the cursor row's max (the
 * row the readout is on). */
static void draw_legend(tui_app *a, tui_pane *p, WINDOW *w, const tui_rect *line, float max,
                        const mt_probe_map *m, const float *v)
{
    int y = line->y, x = line->x, width = line->w;
    tui_heat_scale sc;
    tui_heat_scale_describe(&sc, p->heat_norm, m->kind, max,
                            tui_heat_max(v + (size_t)p->sel_row * m->cols, 1, m->cols));
    const char *lo = sc.lo, *hi = sc.hi, *what = sc.what;
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
    for (int i = 0; i < l.steps; i++, cx++)
        heat_char(a, w, y, cx, tui_heat_level((i + 0.5f) / l.steps, L));
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
    tui_heat_axis_label(rl, sizeof rl, tui_heat_pane_probe(p), m->row_axis, p->sel_row);
    tui_heat_axis_label(cl, sizeof cl, tui_heat_pane_probe(p), m->col_axis, p->sel_col);
    int tokens_r = tui_heat_token_axis(m->row_axis), tokens_c = tui_heat_token_axis(m->col_axis);
    if (tui_heat_pane_masked(p, m, p->sel_row, p->sel_col)) snprintf(val, sizeof val, "masked");
    else snprintf(val, sizeof val, "%.3g", tui_heat_pane_value(p, m, v, p->sel_row, p->sel_col));
    const char *arrow = glyphs(a)->arrow;
    /* numbered from 1, as every index a person reads (titles, exports, Lua) */
    snprintf(line, sizeof line, "row %d %s%s%s %s col %d %s%s%s  %s", p->sel_row + 1,
             tokens_r ? "'" : "", rl, tokens_r ? "'" : "", arrow, p->sel_col + 1,
             tokens_c ? "'" : "", cl, tokens_c ? "'" : "", val);
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
        tui_heat_axis_label(label, sizeof label, tui_heat_pane_probe(p), m->col_axis, c);
        int x = x0 + tui_heat_col_x(g, c);
        tui_set_style(w, &a->palette, c == p->sel_col ? TUI_C_SELECTION : TUI_C_DIM);
        /* a label longer than its room keeps both ends around an ellipsis, as row labels do */
        char fit[LABEL_MAX];
        if (!g->vertical) {
            int line = g->stagger ? (c - g->col0) % 2 : 0;
            int room = (g->stagger ? 2 * g->cell_w : g->cell_w) - 1;
            if (room > g->w - (x - x0)) room = g->w - (x - x0);
            tui_fit_middle(fit, sizeof fit, label, room, glyphs(a)->ellipsis);
            tui_put(w, y0 + g->labels_y + line, x, fit, room);
            continue;
        }
        tui_fit_middle_lines(fit, sizeof fit, label, g->labels_h, glyphs(a)->ellipsis);
        const char *s = fit;
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

/* The axes' caption where the title had no room for it: on the marker's line, right or left of
 * the marker, else on a free line above the legend. 0 when neither has room. */
static int draw_axes_elsewhere(tui_app *a, const tui_pane *p, WINDOW *w, int y0, int x0, int width,
                               const tui_heat_geom *g, const char *axes)
{
    int aw = tui_text_width_z(axes), y = -1, x = 0;
    if (g->marker_y >= 0 && aw <= width) {
        int mx = tui_heat_col_x(g, p->sel_col);
        if (mx < width - aw - 1) y = g->marker_y, x = width - aw;
        else if (aw + 1 < mx) y = g->marker_y, x = 0;
    }
    int last = g->n_rows > 0 ? tui_heat_row_y(g, g->row0 + g->n_rows - 1) + g->cell_h : 0;
    int below = g->legend_y >= 0 ? g->legend_y : g->readout_y;
    if (y < 0 && last < below && aw <= width) y = below - 1, x = 0;
    if (y < 0) return 0;
    tui_set_style(w, &a->palette, TUI_C_DIM);
    tui_put(w, y0 + y, x0 + x, axes, aw);
    return 1;
}

/* The widest label of an axis (n positions), in columns, at most LABEL_MAX. */
static int widest_label(const tui_pane *p, mt_probe_axis axis, int n)
{
    int wmax = 0;
    for (int i = 0; i < n; i++) {
        char label[LABEL_MAX];
        tui_heat_axis_label(label, sizeof label, tui_heat_pane_probe(p), axis, i);
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
    int attribution = p->heat_kind == TUI_HEAT_ATTRIBUTION;
    const tui_probe *pr = tui_heat_pane_probe(p);
    if (attribution ? p->attr_error != NULL : p->probe_error != NULL) {
        snprintf(msg, sizeof msg, "%s: %s", attribution ? "no attribution" : "no probes",
                 attribution ? p->attr_error : p->probe_error);
        draw_message(a, w, y0, x0, width, msg, TUI_C_ERROR);
        return;
    }
    if (pr && !tui_heat_current(a, p)) {
        /* never a map of another text, search or segment than the pane's */
        snprintf(msg, sizeof msg, "%s: recomputing the map %s",
                 a->sent_version != a->ed.version ? "the text changed"
                 : attribution && p->attr_segment == tui_cursor_segment(a)
                     ? "new method or contrast"
                     : "not this segment",
                 spin);
        draw_message(a, w, y0, x0, width, msg, TUI_C_DIM);
        return;
    }
    if (!pr) {
        if (p->busy || (attribution ? p->attr_pending : p->probe_pending))
            snprintf(msg, sizeof msg, "%s %s",
                     p->busy       ? "translating"
                     : attribution ? "attributing"
                                   : "recording probes",
                     spin);
        else
            snprintf(msg, sizeof msg,
                     "no heatmap yet: type text in the editor (F3: back to "
                     "the translation)");
        draw_message(a, w, y0, x0, width, msg, TUI_C_DIM);
        return;
    }
    const mt_probe_map *m;
    float *v = tui_heat_pane_slice(p, &m);
    if (!v) {
        /* the kind asked for is missing; the model may well record others */
        int any = 0;
        for (int k = 0; k < MT_PROBE_KINDS; k++)
            any |= tui_heat_count(&pr->rec, (mt_probe_kind)k) > 0;
        if (any && p->heat_kind >= 0)
            snprintf(msg, sizeof msg, "no %s maps in this model (F3 shows the ones it records)",
                     tui_heat_kind_name(p->heat_kind));
        else snprintf(msg, sizeof msg, "this model records no maps");
        draw_message(a, w, y0, x0, width, msg, TUI_C_DIM);
        return;
    }
    p->sel_row = tui_clamp(p->sel_row, 0, m->rows - 1);
    p->sel_col = tui_clamp(p->sel_col, 0, m->cols - 1);
    int labelled_cols = tui_heat_token_axis(m->col_axis);
    tui_heat_geom_in in = {m->rows,
                           m->cols,
                           tui_heat_pane_split(p, m->row_axis),
                           tui_heat_pane_split(p, m->col_axis),
                           widest_label(p, m->row_axis, m->rows),
                           labelled_cols ? widest_label(p, m->col_axis, m->cols) : 0,
                           p->sel_row,
                           p->sel_col,
                           p->heat_row0,
                           p->heat_col0};
    tui_heat_geom *g = &p->heat_geom;
    tui_heat_geom_fit(g, &in, h, width);
    p->heat_row0 = g->row0, p->heat_col0 = g->col0;

    /* the title, and what the rows and columns are: beside it when both fit, else on another
     * line, else beside a shorter title */
    char title[256], axes[96];
    snprintf(axes, sizeof axes, "%s %s  %s %s", tui_heat_pane_axis_title(p, m->row_axis),
             a->utf8 && !a->ascii ? "\u2193" : "v", tui_heat_pane_axis_title(p, m->col_axis),
             glyphs(a)->arrow);
    int axes_w = tui_text_width_z(axes);
    tui_heat_title(title, sizeof title, p, m, glyphs(a)->dot, width);
    int beside = tui_text_width_z(title) + 2 + axes_w <= width;
    if (!beside && !draw_axes_elsewhere(a, p, w, y0, x0, width, g, axes)) {
        tui_heat_title(title, sizeof title, p, m, glyphs(a)->dot, width - axes_w - 2);
        beside = tui_text_width_z(title) + 2 + axes_w <= width;
        if (!beside) tui_heat_title(title, sizeof title, p, m, glyphs(a)->dot, width);
    }
    tui_set_style(w, &a->palette, TUI_C_TITLE);
    tui_put(w, y0 + g->header_y, x0, title, width);
    if (beside) {
        tui_set_style(w, &a->palette, TUI_C_DIM);
        tui_put(w, y0 + g->header_y, x0 + width - axes_w, axes, axes_w);
    }

    float max = tui_heat_shared_max(a, m->kind);
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
        tui_heat_axis_label(label, sizeof label, tui_heat_pane_probe(p), m->row_axis, row);
        int selected = row == p->sel_row;
        tui_set_style(w, &a->palette, selected ? TUI_C_SELECTION : TUI_C_DIM);
        int lx = x0;
        if (selected) lx += tui_put(w, y, lx, glyphs(a)->row_mark, 1);
        else lx++;
        char fit[LABEL_MAX];
        tui_fit_middle(fit, sizeof fit, label, x0 + g->gutter_w - 1 - lx, glyphs(a)->ellipsis);
        tui_put(w, y, lx, fit, x0 + g->gutter_w - 1 - lx);
        for (int c = g->col0; c < g->col0 + g->n_cols; c++) {
            int level = tui_heat_pane_masked(p, m, row, c)
                            ? -1
                            : tui_heat_level(norm[(size_t)row * m->cols + c], L);
            int x = x0 + tui_heat_col_x(g, c);
            for (int dy = 0; dy < g->cell_h; dy++)
                for (int dx = 0; dx < g->cell_w; dx++) heat_char(a, w, y + dy, x + dx, level);
        }
    }
    draw_boundary(a, w, y0, x0, g);
    if (g->legend_y >= 0)
        draw_legend(a, p, w, &(tui_rect){.y = y0 + g->legend_y, .x = x0, .h = 1, .w = width}, max,
                    m, v);
    draw_readout(a, p, w, y0 + g->readout_y, x0, width, m, v);
    free(norm);
    free(v);
}
