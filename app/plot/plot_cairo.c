/* Plots as SVG and PNG through cairo: white page, title on top, axes with round tick values
 * and light grid lines, a legend for several series, a colour bar beside a heatmap. Text uses
 * cairo's toy API in the system's sans-serif font. The image is drawn into memory and written
 * to the file at the end, so a failed write names the path and the system's reason. */
#include "plot/plot_internal.h"

#include "mtlab/error.h"
#include "mtlab/utf8.h"
#include "common/columns.h"

#include <cairo-svg.h>
#include <cairo.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SANITIZE_ADDRESS__)
/* fontconfig (under cairo's text) keeps its configuration for the life of the process, by
 * design: not a leak for LeakSanitizer in any program that draws a plot */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) { return "leak:libfontconfig.so\n"; }
#endif

typedef struct {
    unsigned char *data;
    size_t n, cap;
} membuf;

static cairo_status_t membuf_write(void *closure, const unsigned char *data, unsigned int len)
{
    membuf *b = closure;
    if (b->n + len > b->cap) {
        b->cap = (b->n + len) * 2;
        b->data = mt_xrealloc(b->data, b->cap);
    }
    memcpy(b->data + b->n, data, len);
    b->n += len;
    return CAIRO_STATUS_SUCCESS;
}

static void set_rgb(cairo_t *cr, plot_rgb c)
{
    cairo_set_source_rgb(cr, c.r / 255.0, c.g / 255.0, c.b / 255.0);
}

static const plot_rgb ink = {0x22, 0x22, 0x22}, grid_rgb = {0xe4, 0xe4, 0xe4},
                      frame_rgb = {0x88, 0x88, 0x88};

static double text_width(cairo_t *cr, const char *s)
{
    char *c = plot_utf8_clean(s);
    cairo_text_extents_t e;
    cairo_text_extents(cr, c, &e);
    free(c);
    return e.x_advance;
}

/* s cut (with an ellipsis) to at most max_w wide; malloc'd valid UTF-8. */
static char *text_fit(cairo_t *cr, const char *s, double max_w)
{
    char *c = plot_utf8_clean(s);
    cairo_text_extents_t e;
    cairo_text_extents(cr, c, &e);
    if (e.x_advance <= max_w) return c;
    size_t n = strlen(c);
    char *out = mt_xmalloc(n + 4);
    while (n > 0) {
        n = mt_utf8_prev(c, n);
        memcpy(out, c, n);
        memcpy(out + n, "\xe2\x80\xa6", 4);
        cairo_text_extents(cr, out, &e);
        if (e.x_advance <= max_w) break;
    }
    if (n == 0) memcpy(out, "\xe2\x80\xa6", 4);
    free(c);
    return out;
}

/* Text at (x, y), shifted by ax of its width and ay of its height (0.5, 0.5: centred there),
 * cut to max_w when max_w > 0. */
static void text_at(cairo_t *cr, double x, double y, const char *s, double ax, double ay,
                    double max_w)
{
    char *c = max_w > 0 ? text_fit(cr, s, max_w) : plot_utf8_clean(s);
    cairo_text_extents_t e;
    cairo_font_extents_t fe;
    cairo_text_extents(cr, c, &e);
    cairo_font_extents(cr, &fe);
    cairo_move_to(cr, x - ax * e.x_advance, y - ay * (fe.ascent + fe.descent) + fe.ascent);
    cairo_show_text(cr, c);
    free(c);
}

/* The same, turned a quarter to the left (reading upwards), anchored like text_at in the
 * turned frame. */
static void text_up(cairo_t *cr, double x, double y, const char *s, double ax, double ay,
                    double max_w)
{
    cairo_save(cr);
    cairo_translate(cr, x, y);
    cairo_rotate(cr, -M_PI / 2);
    text_at(cr, 0, 0, s, ax, ay, max_w);
    cairo_restore(cr);
}

typedef struct {
    double fs; /* base font size */
    double x0, y0, w, h; /* the data area */
} frame;

static void font(cairo_t *cr, double size, int bold)
{
    cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL,
                           bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr, size);
}

static double base_font(int width, int height)
{
    double fs = (width < height ? width : height) / 32.0;
    return fs < 9 ? 9 : fs > 18 ? 18 : fs;
}

static double title_band(cairo_t *cr, const plot *p, double fs, int width)
{
    if (!p->title[0]) return fs * 0.5;
    font(cr, fs * 1.25, 1);
    set_rgb(cr, ink);
    text_at(cr, width / 2.0, fs * 0.6, p->title, 0.5, 0, width - fs);
    return fs * 2.4;
}

static double tick_labels_width(cairo_t *cr, const plot_ticks *t)
{
    double w = 0;
    for (int i = 0; i < t->n; i++) {
        char buf[48];
        plot_format_tick(buf, sizeof buf, plot_tick_value(t, i), t->step);
        double tw = text_width(cr, buf);
        if (tw > w) w = tw;
    }
    return w;
}

/* The legend: a band under the title, entries (a short line or box of the series' colour,
 * then its name) side by side and centred, wrapped onto more rows when the page is narrow.
 * Returns the band's height (0 when there is no legend). */
static double legend_band(cairo_t *cr, const plot *p, double y, int width, double fs, int boxes)
{
    if (p->n_series < 2 && !p->series[0].name[0]) return 0;
    double row_h = fs * 1.5, sample = fs * 1.8, gap = fs * 0.4, space = fs * 1.5;
    double room = width - 2 * fs;
    font(cr, fs, 0);
    char buf[32];
    int rows = 0;
    for (size_t first = 0; first < p->n_series; rows++) {
        /* the entries that fit on this row, at least one */
        size_t last = first;
        double row_w = 0;
        for (size_t k = first; k < p->n_series; k++) {
            double name_w =
                fmin(text_width(cr, plot_series_name(p, k, buf, sizeof buf)), room - sample - gap);
            double w = (k > first ? space : 0) + sample + gap + name_w;
            if (k > first && row_w + w > room) break;
            row_w += w;
            last = k + 1;
        }
        double x = (width - row_w) / 2, cy = y + row_h * (rows + 0.5);
        for (size_t k = first; k < last; k++) {
            const char *name = plot_series_name(p, k, buf, sizeof buf);
            double name_w = fmin(text_width(cr, name), room - sample - gap);
            set_rgb(cr, plot_series_rgb(k));
            if (boxes) {
                cairo_rectangle(cr, x, cy - fs * 0.4, sample, fs * 0.8);
                cairo_fill(cr);
            } else {
                cairo_set_line_width(cr, fs / 6);
                cairo_move_to(cr, x, cy);
                cairo_line_to(cr, x + sample, cy);
                cairo_stroke(cr);
            }
            set_rgb(cr, ink);
            text_at(cr, x + sample + gap, cy, name, 0, 0.5, room - sample - gap);
            x += sample + gap + name_w + space;
        }
        first = last;
    }
    return rows * row_h + fs * 0.3;
}

/* Horizontal grid lines, y tick labels and the frame of the data area for values lo..hi. */
static void draw_y_axis(cairo_t *cr, const frame *f, const plot_ticks *t, double lo, double hi)
{
    font(cr, f->fs, 0);
    cairo_set_line_width(cr, 1);
    for (int i = 0; i < t->n; i++) {
        double v = plot_tick_value(t, i);
        double y = round(f->y0 + f->h - (v - lo) / (hi - lo) * f->h) + 0.5;
        set_rgb(cr, grid_rgb);
        cairo_move_to(cr, f->x0, y);
        cairo_line_to(cr, f->x0 + f->w, y);
        cairo_stroke(cr);
        char buf[48];
        plot_format_tick(buf, sizeof buf, v, t->step);
        set_rgb(cr, ink);
        text_at(cr, f->x0 - f->fs * 0.4, y, buf, 1, 0.5, 0);
    }
}

static void draw_frame(cairo_t *cr, const frame *f)
{
    set_rgb(cr, frame_rgb);
    cairo_set_line_width(cr, 1);
    cairo_rectangle(cr, round(f->x0) + 0.5, round(f->y0) + 0.5, round(f->w), round(f->h));
    cairo_stroke(cr);
}

static void draw_axis_labels(cairo_t *cr, const plot *p, const frame *f, int height,
                             const char *x_label)
{
    font(cr, f->fs, 0);
    set_rgb(cr, ink);
    if (x_label && x_label[0])
        text_at(cr, f->x0 + f->w / 2, height - f->fs * 0.5, x_label, 0.5, 1, f->w);
    if (p->y_label[0]) text_up(cr, f->fs * 0.5, f->y0 + f->h / 2, p->y_label, 0.5, 0, f->h);
}

static void draw_line_plot(cairo_t *cr, const plot *p, int width, int height)
{
    double fs = base_font(width, height);
    double top = title_band(cr, p, fs, width);
    double xlo, xhi, ylo, yhi;
    plot_line_extent(p, &xlo, &xhi, &ylo, &yhi);
    top += legend_band(cr, p, top, width, fs, 0);
    frame f = {.fs = fs};
    f.y0 = top + fs * 0.5;
    f.h = height - f.y0 - fs * 2.2 - (p->x_label[0] ? fs * 1.6 : 0);
    plot_ticks yt, xt;
    int max_y = (int)(f.h / (fs * 2.5)) + 1;
    plot_ticks_cover(&yt, &ylo, &yhi, max_y);
    font(cr, fs, 0);
    f.x0 = fs * 0.8 + (p->y_label[0] ? fs * 1.6 : 0) + tick_labels_width(cr, &yt) + fs * 0.4;
    f.w = width - f.x0 - fs * 1.5;
    for (int max = (int)(f.w / (fs * 3)) + 1;; max--) {
        double a = xlo, b = xhi;
        plot_ticks_cover(&xt, &a, &b, max < 2 ? 2 : max);
        if (max <= 2 || xt.n * (tick_labels_width(cr, &xt) + fs * 1.5) <= f.w) {
            xlo = a, xhi = b;
            break;
        }
    }
    /* the last tick's label is centred on the right edge: keep it on the page */
    char last[48];
    plot_format_tick(last, sizeof last, plot_tick_value(&xt, xt.n - 1), xt.step);
    f.w = fmin(f.w, width - f.x0 - text_width(cr, last) / 2 - fs * 0.5);
    draw_y_axis(cr, &f, &yt, ylo, yhi);
    for (int i = 0; i < xt.n; i++) {
        double v = plot_tick_value(&xt, i);
        double x = round(f.x0 + (v - xlo) / (xhi - xlo) * f.w) + 0.5;
        set_rgb(cr, grid_rgb);
        cairo_move_to(cr, x, f.y0);
        cairo_line_to(cr, x, f.y0 + f.h);
        cairo_stroke(cr);
        char buf[48];
        plot_format_tick(buf, sizeof buf, v, xt.step);
        set_rgb(cr, ink);
        text_at(cr, x, f.y0 + f.h + fs * 0.4, buf, 0.5, 0, 0);
    }
    draw_frame(cr, &f);

    cairo_save(cr);
    cairo_rectangle(cr, f.x0, f.y0, f.w, f.h);
    cairo_clip(cr);
    cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
    cairo_set_line_cap(cr, CAIRO_LINE_CAP_ROUND);
    double lw = fs / 7 > 1.5 ? fs / 7 : 1.5;
    for (size_t k = 0; k < p->n_series; k++) {
        const plot_series *s = &p->series[k];
        set_rgb(cr, plot_series_rgb(k));
        cairo_set_line_width(cr, lw);
        size_t finite = 0;
        int open = 0;
        for (size_t i = 0; i < s->n; i++) {
            if (!isfinite(s->x[i]) || !isfinite(s->y[i])) {
                open = 0;
                continue;
            }
            finite++;
            double x = f.x0 + (s->x[i] - xlo) / (xhi - xlo) * f.w;
            double y = f.y0 + f.h - (s->y[i] - ylo) / (yhi - ylo) * f.h;
            if (open) cairo_line_to(cr, x, y);
            else cairo_move_to(cr, x, y);
            open = 1;
        }
        cairo_stroke(cr);
        /* few points: mark each, so a lone point between NaNs shows too */
        if (finite <= 40)
            for (size_t i = 0; i < s->n; i++) {
                if (!isfinite(s->x[i]) || !isfinite(s->y[i])) continue;
                double x = f.x0 + (s->x[i] - xlo) / (xhi - xlo) * f.w;
                double y = f.y0 + f.h - (s->y[i] - ylo) / (yhi - ylo) * f.h;
                cairo_arc(cr, x, y, lw * 1.6, 0, 2 * M_PI);
                cairo_fill(cr);
            }
    }
    cairo_restore(cr);
    draw_axis_labels(cr, p, &f, height, p->x_label);
}

static void draw_bar_plot(cairo_t *cr, const plot *p, int width, int height)
{
    double fs = base_font(width, height);
    double top = title_band(cr, p, fs, width);
    size_t ng = p->n_labels, ns = p->n_series;
    font(cr, fs, 0);
    double lab_w = 0;
    for (size_t i = 0; i < ng; i++) {
        double tw = text_width(cr, p->labels[i]);
        if (tw > lab_w) lab_w = tw;
    }
    double hi = plot_bar_max(p), lo = 0;
    if (hi <= 0) hi = 1;
    top += legend_band(cr, p, top, width, fs, 1);
    frame f = {.fs = fs};
    f.y0 = top + fs * 0.5;
    /* category labels across when they fit their slot, else upwards (at most a third of the
     * height) */
    double guess_w = width - fs * 6;
    int upright = lab_w > guess_w / ng * 0.92;
    double lab_h = upright ? fmin(lab_w, height / 3.0) : fs;
    f.h = height - f.y0 - fs * 1.0 - lab_h;
    plot_ticks yt;
    plot_ticks_cover(&yt, &lo, &hi, (int)(f.h / (fs * 2.5)) + 1);
    f.x0 = fs * 0.8 + (p->y_label[0] ? fs * 1.6 : 0) + tick_labels_width(cr, &yt) + fs * 0.4;
    f.w = width - f.x0 - fs * 1.5;
    draw_y_axis(cr, &f, &yt, lo, hi);

    double slot = f.w / ng, bw = slot * 0.8 / ns;
    for (size_t i = 0; i < ng; i++) {
        double gx = f.x0 + slot * i + slot * 0.1;
        for (size_t k = 0; k < ns; k++) {
            double v = p->series[k].y[i];
            if (isnan(v)) {
                font(cr, fs * 0.8, 0);
                set_rgb(cr, frame_rgb);
                text_at(cr, gx + bw * (k + 0.47), f.y0 + f.h - fs * 0.2, "n/a", 0.5, 1, bw);
                continue;
            }
            double bh = v / hi * f.h;
            set_rgb(cr, plot_series_rgb(k));
            cairo_rectangle(cr, gx + bw * k, f.y0 + f.h - bh, bw * 0.94, bh);
            cairo_fill(cr);
            char buf[32];
            plot_format_value(buf, sizeof buf, v);
            font(cr, fs * 0.8, 0);
            if (text_width(cr, buf) <= bw * 1.1) {
                set_rgb(cr, ink);
                text_at(cr, gx + bw * (k + 0.47), f.y0 + f.h - bh - fs * 0.2, buf, 0.5, 1, 0);
            }
        }
        font(cr, fs, 0);
        set_rgb(cr, ink);
        double cx = f.x0 + slot * (i + 0.5);
        if (upright) text_up(cr, cx, f.y0 + f.h + fs * 0.4, p->labels[i], 1, 0.5, lab_h);
        else text_at(cr, cx, f.y0 + f.h + fs * 0.4, p->labels[i], 0.5, 0, slot);
    }
    draw_frame(cr, &f);
    draw_axis_labels(cr, p, &f, height, NULL);
}

/* Where a heatmap's pieces go. */
typedef struct {
    double fs, lf; /* base and label font sizes */
    double x0, y0, cell; /* the grid's top left corner and cell size */
    int every_row, every_col; /* label every n-th row / column when cells are small */
    double row_lab_w, col_lab_h;
    double bar_x, bar_w; /* the colour bar */
    double title_h;
} heat_geom;

static void heat_layout(cairo_t *cr, const plot *p, int width, int height, heat_geom *g)
{
    double fs = base_font(width, height);
    g->fs = fs;
    g->title_h = p->title[0] ? fs * 2.4 : fs * 0.5;
    font(cr, fs * 0.85, 0);
    double rw = 0, ch = 0;
    for (int r = 0; r < p->rows; r++) rw = fmax(rw, text_width(cr, p->row_labels[r]));
    for (int c = 0; c < p->cols; c++) ch = fmax(ch, text_width(cr, p->col_labels[c]));
    g->row_lab_w = fmin(rw, width * 0.25);
    g->col_lab_h = fmin(ch, height * 0.25);
    double lo, hi;
    plot_heat_range(p, &lo, &hi);
    plot_ticks t;
    plot_ticks_inside(&t, lo, hi, 6);
    font(cr, fs, 0);
    double tick_w = tick_labels_width(cr, &t);
    char buf[32];
    plot_format_value(buf, sizeof buf, lo);
    tick_w = fmax(tick_w, text_width(cr, buf));
    plot_format_value(buf, sizeof buf, hi);
    tick_w = fmax(tick_w, text_width(cr, buf));
    double left = fs * 0.8 + (p->y_label[0] ? fs * 1.6 : 0) + g->row_lab_w + fs * 0.4;
    double top = g->title_h + (p->x_label[0] ? fs * 1.6 : 0) + g->col_lab_h + fs * 0.4;
    double right = fs + fs * 1.2 + fs * 0.4 + tick_w + fs;
    double aw = width - left - right, ah = height - top - fs;
    g->cell = fmax(1, fmin(aw / p->cols, ah / p->rows));
    g->x0 = round(left);
    g->y0 = round(top);
    g->lf = fmin(fs * 0.85, fmax(6, g->cell * 0.85));
    g->every_row = g->every_col = (int)ceil(g->lf / g->cell);
    g->bar_x = round(g->x0 + g->cell * p->cols + fs);
    g->bar_w = round(fs * 1.2);
}

void plot_cairo_heat_cell(const plot *p, int width_px, int height_px, int r, int c, double rect[4])
{
    cairo_surface_t *s = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, 1, 1);
    cairo_t *cr = cairo_create(s);
    heat_geom g;
    heat_layout(cr, p, width_px, height_px, &g);
    cairo_destroy(cr);
    cairo_surface_destroy(s);
    rect[0] = round(g.x0 + c * g.cell);
    rect[1] = round(g.y0 + r * g.cell);
    rect[2] = round(g.x0 + (c + 1) * g.cell) - rect[0];
    rect[3] = round(g.y0 + (r + 1) * g.cell) - rect[1];
}

static void draw_heatmap(cairo_t *cr, const plot *p, int width, int height)
{
    heat_geom g;
    heat_layout(cr, p, width, height, &g);
    title_band(cr, p, g.fs, width);
    double lo, hi;
    plot_heat_range(p, &lo, &hi);
    double gw = round(g.x0 + p->cols * g.cell) - g.x0, gh = round(g.y0 + p->rows * g.cell) - g.y0;
    /* cells on whole pixels, so that neighbours meet without seams */
    for (int r = 0; r < p->rows; r++)
        for (int c = 0; c < p->cols; c++) {
            size_t i = (size_t)r * p->cols + c;
            double x = round(g.x0 + c * g.cell), y = round(g.y0 + r * g.cell);
            double x1 = round(g.x0 + (c + 1) * g.cell), y1 = round(g.y0 + (r + 1) * g.cell);
            set_rgb(cr, p->defined[i] ? plot_heat_rgb(p, plot_heat_t(p->v[i], lo, hi))
                                      : plot_masked_rgb);
            cairo_rectangle(cr, x, y, x1 - x, y1 - y);
            cairo_fill(cr);
        }
    set_rgb(cr, frame_rgb);
    cairo_set_line_width(cr, 1);
    cairo_rectangle(cr, g.x0 - 0.5, g.y0 - 0.5, gw + 1, gh + 1);
    cairo_stroke(cr);
    /* the source/translation boundary, as the workbench draws it */
    if (p->row_split > 0 || p->col_split > 0) {
        set_rgb(cr, ink);
        cairo_set_line_width(cr, fmax(1.5, g.cell * 0.12));
        if (p->row_split > 0) {
            double y = round(g.y0 + p->row_split * g.cell);
            cairo_move_to(cr, g.x0, y);
            cairo_line_to(cr, g.x0 + gw, y);
        }
        if (p->col_split > 0) {
            double x = round(g.x0 + p->col_split * g.cell);
            cairo_move_to(cr, x, g.y0);
            cairo_line_to(cr, x, g.y0 + gh);
        }
        cairo_stroke(cr);
        cairo_set_line_width(cr, 1);
    }

    font(cr, g.lf, 0);
    set_rgb(cr, ink);
    for (int r = 0; r < p->rows; r += g.every_row)
        text_at(cr, g.x0 - g.fs * 0.4, g.y0 + (r + 0.5) * g.cell, p->row_labels[r], 1, 0.5,
                g.row_lab_w);
    for (int c = 0; c < p->cols; c += g.every_col)
        text_up(cr, g.x0 + (c + 0.5) * g.cell, g.y0 - g.fs * 0.4, p->col_labels[c], 0, 0.5,
                g.col_lab_h);
    font(cr, g.fs, 0);
    if (p->x_label[0])
        text_at(cr, g.x0 + gw / 2, g.title_h, p->x_label, 0.5, 0, gw > g.fs * 4 ? gw : 0);
    if (p->y_label[0]) text_up(cr, g.fs * 0.5, g.y0 + gh / 2, p->y_label, 0.5, 0, gh);

    /* the colour bar: the scale's stops bottom (lo) to top (hi), ticks on its right */
    const plot_rgb *st;
    int n = plot_heat_stops(p, &st);
    cairo_pattern_t *grad = cairo_pattern_create_linear(0, g.y0 + gh, 0, g.y0);
    for (int i = 0; i < n; i++)
        cairo_pattern_add_color_stop_rgb(grad, (double)i / (n - 1), st[i].r / 255.0,
                                         st[i].g / 255.0, st[i].b / 255.0);
    cairo_rectangle(cr, g.bar_x, g.y0, g.bar_w, gh);
    cairo_set_source(cr, grad);
    cairo_fill(cr);
    cairo_pattern_destroy(grad);
    set_rgb(cr, frame_rgb);
    cairo_rectangle(cr, g.bar_x - 0.5, g.y0 - 0.5, g.bar_w + 1, gh + 1);
    cairo_stroke(cr);
    plot_ticks t;
    plot_ticks_inside(&t, lo, hi, (int)(gh / (g.fs * 2.5)) + 1);
    set_rgb(cr, ink);
    for (int i = 0; i < t.n; i++) {
        double v = plot_tick_value(&t, i);
        double y = round(g.y0 + gh - (v - lo) / (hi - lo) * gh) + 0.5;
        cairo_move_to(cr, g.bar_x + g.bar_w, y);
        cairo_line_to(cr, g.bar_x + g.bar_w + g.fs * 0.3, y);
        cairo_stroke(cr);
        char buf[48];
        if (t.step == hi - lo) plot_format_value(buf, sizeof buf, v);
        else plot_format_tick(buf, sizeof buf, v, t.step);
        text_at(cr, g.bar_x + g.bar_w + g.fs * 0.5, y, buf, 0, 0.5, 0);
    }
}

static void draw(cairo_t *cr, const plot *p, int width, int height)
{
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_paint(cr);
    switch (p->kind) {
    case PLOT_LINE: draw_line_plot(cr, p, width, height); break;
    case PLOT_BAR: draw_bar_plot(cr, p, width, height); break;
    case PLOT_HEATMAP: draw_heatmap(cr, p, width, height); break;
    }
}

/* An SVG's text is glyph outlines; a <title> element after the opening <svg> tag carries the
 * plot's title as text (viewers show it, screen readers and searches read it). */
static int write_svg(FILE *f, const plot *p, const membuf *b)
{
    const char *doc = (const char *)b->data;
    const char *svg = memmem(doc, b->n, "<svg", 4);
    const char *gt = svg ? memchr(svg, '>', b->n - (size_t)(svg - doc)) : NULL;
    if (!p->title[0] || !gt) return fwrite(doc, 1, b->n, f) == b->n ? 0 : -1;
    size_t head = (size_t)(gt + 1 - doc);
    if (fwrite(doc, 1, head, f) != head) return -1;
    fputs("\n<title>", f);
    char *t = plot_utf8_clean(p->title);
    for (const char *s = t; *s; s++) {
        switch (*s) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        default: fputc(*s, f);
        }
    }
    free(t);
    fputs("</title>", f);
    return fwrite(doc + head, 1, b->n - head, f) == b->n - head ? 0 : -1;
}

int plot_cairo_save(const plot *p, const char *path, int png, int width, int height)
{
    if (plot_check_drawable(p)) return mt_error_context("%s", path);
    membuf b = {0};
    cairo_surface_t *s = png ? cairo_image_surface_create(CAIRO_FORMAT_ARGB32, width, height)
                             : cairo_svg_surface_create_for_stream(membuf_write, &b, width, height);
    cairo_t *cr = cairo_create(s);
    draw(cr, p, width, height);
    cairo_status_t st = cairo_status(cr);
    cairo_destroy(cr);
    if (st == CAIRO_STATUS_SUCCESS && png)
        st = cairo_surface_write_to_png_stream(s, membuf_write, &b);
    cairo_surface_finish(s);
    if (st == CAIRO_STATUS_SUCCESS) st = cairo_surface_status(s);
    cairo_surface_destroy(s);
    if (st != CAIRO_STATUS_SUCCESS) {
        free(b.data);
        return mt_error("%s: cairo could not draw the plot: %s", path, cairo_status_to_string(st));
    }
    FILE *f = fopen(path, "wb");
    if (!f) {
        int e = errno;
        free(b.data);
        return mt_error("%s: cannot write: %s", path, strerror(e));
    }
    int rc = png ? (fwrite(b.data, 1, b.n, f) == b.n ? 0 : -1) : write_svg(f, p, &b);
    int e = errno;
    if (fclose(f) != 0 && rc == 0) rc = -1, e = errno;
    free(b.data);
    if (rc) {
        remove(path);
        return mt_error("%s: writing failed: %s", path, strerror(e));
    }
    return 0;
}
