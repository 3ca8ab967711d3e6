/* The plot description: constructors that check their input, and what every renderer needs
 * (colours, ranges, round tick values). */
#include "plot/plot_internal.h"

#include "mtlab/error.h"
#include "common/columns.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static char *dup_or_empty(const char *s) { return mt_xstrdup(s ? s : ""); }

static plot *plot_alloc(plot_kind kind, const char *title, const char *x_label, const char *y_label)
{
    plot *p = mt_xcalloc(1, sizeof *p);
    p->kind = kind;
    p->title = dup_or_empty(title);
    p->x_label = dup_or_empty(x_label);
    p->y_label = dup_or_empty(y_label);
    return p;
}

const char *plot_describe(const plot *p, char *buf, size_t n)
{
    static const char *kinds[] = {"line plot", "bar plot", "heatmap"};
    if (p->title[0]) snprintf(buf, n, "%s '%s'", kinds[p->kind], p->title);
    else snprintf(buf, n, "%s", kinds[p->kind]);
    return buf;
}

const char *plot_series_name(const plot *p, size_t i, char *buf, size_t n)
{
    if (p->series[i].name[0]) return p->series[i].name;
    snprintf(buf, n, "series %zu", i + 1);
    return buf;
}

plot *plot_line_new(const char *title, const char *x_label, const char *y_label)
{
    return plot_alloc(PLOT_LINE, title, x_label, y_label);
}

static plot_series *series_push(plot *p, const char *name)
{
    p->series = mt_xrealloc(p->series, (p->n_series + 1) * sizeof *p->series);
    plot_series *s = &p->series[p->n_series++];
    *s = (plot_series){.name = dup_or_empty(name)};
    return s;
}

int plot_line_add(plot *p, const char *name, const double *x, size_t nx, const double *y, size_t ny)
{
    char what[160];
    if (p->kind != PLOT_LINE)
        return mt_error("%s: plot_line_add needs a line plot", plot_describe(p, what, sizeof what));
    const char *nm = name && name[0] ? name : "(unnamed)";
    if (ny == 0) return mt_error("%s: series %s is empty", plot_describe(p, what, sizeof what), nm);
    if (x && nx != ny)
        return mt_error("%s: series %s has %zu x values but %zu y values",
                        plot_describe(p, what, sizeof what), nm, nx, ny);
    plot_series *s = series_push(p, name);
    s->n = ny;
    s->x = mt_xmalloc(ny * sizeof *s->x);
    s->y = mt_xmalloc(ny * sizeof *s->y);
    for (size_t i = 0; i < ny; i++) s->x[i] = x ? x[i] : (double)(i + 1);
    memcpy(s->y, y, ny * sizeof *s->y);
    return 0;
}

plot *plot_bar_new(const char *title, const char *value_label, const char *const *labels,
                   size_t n_labels)
{
    if (n_labels == 0 || !labels) {
        mt_error("bar plot%s%s%s: no labels (a bar plot needs at least one category)",
                 title && title[0] ? " '" : "", title ? title : "", title && title[0] ? "'" : "");
        return NULL;
    }
    plot *p = plot_alloc(PLOT_BAR, title, NULL, value_label);
    p->n_labels = n_labels;
    p->labels = mt_xmalloc(n_labels * sizeof *p->labels);
    for (size_t i = 0; i < n_labels; i++) p->labels[i] = dup_or_empty(labels[i]);
    return p;
}

int plot_bar_add(plot *p, const char *name, const double *values, size_t n)
{
    char what[160];
    if (p->kind != PLOT_BAR)
        return mt_error("%s: plot_bar_add needs a bar plot", plot_describe(p, what, sizeof what));
    const char *nm = name && name[0] ? name : "(unnamed)";
    if (n != p->n_labels)
        return mt_error("%s: series %s has %zu values for %zu labels",
                        plot_describe(p, what, sizeof what), nm, n, p->n_labels);
    for (size_t i = 0; i < n; i++)
        if (values[i] < 0 || isinf(values[i]))
            return mt_error("%s: series %s: value %g at '%s' (bars take finite values >= 0; "
                            "NaN for a missing bar)",
                            plot_describe(p, what, sizeof what), nm, values[i], p->labels[i]);
    plot_series *s = series_push(p, name);
    s->n = n;
    s->y = mt_xmalloc(n * sizeof *s->y);
    memcpy(s->y, values, n * sizeof *s->y);
    return 0;
}

static char **labels_or_numbers(const char *const *given, int n)
{
    char **out = mt_xmalloc((size_t)n * sizeof *out);
    for (int i = 0; i < n; i++) {
        if (given) {
            out[i] = dup_or_empty(given[i]);
        } else {
            char num[16];
            snprintf(num, sizeof num, "%d", i + 1);
            out[i] = mt_xstrdup(num);
        }
    }
    return out;
}

plot *plot_heatmap_new(const char *title, const char *x_label, const char *y_label,
                       const plot_grid *g)
{
    const float *v = g->v;
    const uint8_t *mask = g->mask;
    int rows = g->rows, cols = g->cols;
    if (rows <= 0 || cols <= 0 || !v) {
        mt_error("heatmap%s%s%s: empty matrix (%d x %d)", title && title[0] ? " '" : "",
                 title ? title : "", title && title[0] ? "'" : "", rows, cols);
        return NULL;
    }
    plot *p = plot_alloc(PLOT_HEATMAP, title, x_label, y_label);
    size_t n = (size_t)rows * (size_t)cols;
    p->rows = rows;
    p->cols = cols;
    p->v = mt_xmalloc(n * sizeof *p->v);
    memcpy(p->v, v, n * sizeof *p->v);
    p->defined = mt_xmalloc(n);
    for (size_t i = 0; i < n; i++) p->defined[i] = isfinite(v[i]) && !(mask && mask[i]);
    p->row_labels = labels_or_numbers(g->row_labels, rows);
    p->col_labels = labels_or_numbers(g->col_labels, cols);
    p->scale = PLOT_SCALE_VIRIDIS;
    return p;
}

int plot_heatmap_set_range(plot *p, double lo, double hi)
{
    char what[160];
    if (p->kind != PLOT_HEATMAP)
        return mt_error("%s: a range needs a heatmap", plot_describe(p, what, sizeof what));
    if (!isfinite(lo) || !isfinite(hi) || !(lo < hi))
        return mt_error("%s: range %g..%g is not an interval (finite, low < high)",
                        plot_describe(p, what, sizeof what), lo, hi);
    p->has_range = 1;
    p->lo = lo;
    p->hi = hi;
    return 0;
}

int plot_heatmap_set_scale(plot *p, plot_scale scale)
{
    char what[160];
    if (p->kind != PLOT_HEATMAP)
        return mt_error("%s: a colour scale needs a heatmap", plot_describe(p, what, sizeof what));
    p->scale = scale;
    return 0;
}

int plot_heatmap_set_colors(plot *p, const uint8_t *rgb, int n)
{
    char what[160];
    if (p->kind != PLOT_HEATMAP)
        return mt_error("%s: colours need a heatmap", plot_describe(p, what, sizeof what));
    if (!rgb || n < 2)
        return mt_error("%s: %d colour stops; a scale needs at least 2",
                        plot_describe(p, what, sizeof what), n);
    free(p->stops);
    p->stops = mt_xmalloc((size_t)n * sizeof *p->stops);
    for (int i = 0; i < n; i++)
        p->stops[i] = (plot_rgb){rgb[3 * i], rgb[3 * i + 1], rgb[3 * i + 2]};
    p->n_stops = n;
    return 0;
}

int plot_heatmap_set_split(plot *p, int row_split, int col_split)
{
    char what[160];
    if (p->kind != PLOT_HEATMAP)
        return mt_error("%s: a boundary needs a heatmap", plot_describe(p, what, sizeof what));
    if (row_split < 0 || row_split >= p->rows || col_split < 0 || col_split >= p->cols)
        return mt_error("%s: boundary before row %d, column %d is outside the %d x %d matrix",
                        plot_describe(p, what, sizeof what), row_split, col_split, p->rows,
                        p->cols);
    p->row_split = row_split;
    p->col_split = col_split;
    return 0;
}

int plot_scale_parse(const char *name, plot_scale *scale)
{
    if (!strcmp(name, "viridis")) *scale = PLOT_SCALE_VIRIDIS;
    else if (!strcmp(name, "greys")) *scale = PLOT_SCALE_GREYS;
    else return mt_error("unknown colour scale '%s' (known: viridis, greys)", name);
    return 0;
}

static void free_strings(char **s, size_t n)
{
    if (!s) return;
    for (size_t i = 0; i < n; i++) free(s[i]);
    free(s);
}

void plot_free(plot *p)
{
    if (!p) return;
    for (size_t i = 0; i < p->n_series; i++) {
        free(p->series[i].name);
        free(p->series[i].x);
        free(p->series[i].y);
    }
    free(p->series);
    free_strings(p->labels, p->n_labels);
    free(p->v);
    free(p->defined);
    free(p->stops);
    free_strings(p->row_labels, (size_t)p->rows);
    free_strings(p->col_labels, (size_t)p->cols);
    free(p->title);
    free(p->x_label);
    free(p->y_label);
    free(p);
}

char *plot_utf8_clean(const char *s)
{
    size_t n = strlen(s), o = 0;
    char *out = mt_xmalloc(3 * n + 1);
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        int len = tui_utf8_decode(s + i, n - i, &cp);
        if (len == 0) {
            memcpy(out + o, "\xef\xbf\xbd", 3);
            o += 3, i++;
        } else {
            memcpy(out + o, s + i, (size_t)len);
            o += (size_t)len, i += (size_t)len;
        }
    }
    out[o] = 0;
    return out;
}

/* ---------------------------------------------------------------- data extents */

int plot_line_extent(const plot *p, double *xlo, double *xhi, double *ylo, double *yhi)
{
    *xlo = *ylo = DBL_MAX;
    *xhi = *yhi = -DBL_MAX;
    int any = 0;
    for (size_t k = 0; k < p->n_series; k++)
        for (size_t i = 0; i < p->series[k].n; i++) {
            double x = p->series[k].x[i], y = p->series[k].y[i];
            if (!isfinite(x) || !isfinite(y)) continue;
            any = 1;
            *xlo = fmin(*xlo, x), *xhi = fmax(*xhi, x);
            *ylo = fmin(*ylo, y), *yhi = fmax(*yhi, y);
        }
    return any ? 0 : -1;
}

double plot_bar_max(const plot *p)
{
    double mx = 0;
    for (size_t k = 0; k < p->n_series; k++)
        for (size_t i = 0; i < p->series[k].n; i++)
            if (p->series[k].y[i] > mx) mx = p->series[k].y[i];
    return mx;
}

int plot_check_drawable(const plot *p)
{
    char what[160];
    double a, b, c, d;
    switch (p->kind) {
    case PLOT_LINE:
        if (p->n_series == 0)
            return mt_error("%s: no series to draw", plot_describe(p, what, sizeof what));
        if (plot_line_extent(p, &a, &b, &c, &d))
            return mt_error("%s: no point to draw (every x or y is NaN or infinite)",
                            plot_describe(p, what, sizeof what));
        if (!isfinite(b - a) || !isfinite(d - c))
            return mt_error("%s: the points span more than a double can hold",
                            plot_describe(p, what, sizeof what));
        return 0;
    case PLOT_BAR:
        if (p->n_series == 0)
            return mt_error("%s: no series to draw", plot_describe(p, what, sizeof what));
        return 0;
    case PLOT_HEATMAP:
        for (size_t i = 0; i < (size_t)p->rows * (size_t)p->cols; i++)
            if (p->defined[i]) return 0;
        return mt_error("%s: every cell is masked, NaN or infinite",
                        plot_describe(p, what, sizeof what));
    }
    return 0;
}

void plot_heat_range(const plot *p, double *lo, double *hi)
{
    if (p->has_range) {
        *lo = p->lo, *hi = p->hi;
        return;
    }
    *lo = DBL_MAX, *hi = -DBL_MAX;
    for (size_t i = 0; i < (size_t)p->rows * (size_t)p->cols; i++)
        if (p->defined[i]) *lo = fmin(*lo, p->v[i]), *hi = fmax(*hi, p->v[i]);
    if (*lo > *hi) *lo = 0, *hi = 1; /* nothing defined: plot_check_drawable refuses it */
    if (*lo == *hi) *hi = *lo + 1; /* one value: it sits at the scale's cold end */
}

double plot_heat_t(double v, double lo, double hi)
{
    double t = (v - lo) / (hi - lo);
    return t < 0 ? 0 : t > 1 ? 1 : t;
}

/* ---------------------------------------------------------------- colours */

/* Distinct on white and on a dark terminal, and for the common colour blindnesses first. */
static const plot_rgb series_palette[] = {
    {0x1f, 0x77, 0xb4}, {0xff, 0x7f, 0x0e}, {0x2c, 0xa0, 0x2c}, {0xd6, 0x27, 0x28},
    {0x94, 0x67, 0xbd}, {0x8c, 0x56, 0x4b}, {0xe3, 0x77, 0xc2}, {0x17, 0xbe, 0xcf},
};

plot_rgb plot_series_rgb(size_t i)
{
    return series_palette[i % (sizeof series_palette / sizeof series_palette[0])];
}

static const plot_rgb viridis_stops[] = {
    {0x44, 0x01, 0x54}, {0x47, 0x2d, 0x7b}, {0x3b, 0x52, 0x8b},
    {0x2c, 0x72, 0x8e}, {0x21, 0x91, 0x8c}, {0x28, 0xae, 0x80},
    {0x5e, 0xc9, 0x62}, {0xad, 0xdc, 0x30}, {0xfd, 0xe7, 0x25},
};
static const plot_rgb greys_stops[] = {{0xe6, 0xe6, 0xe6}, {0x14, 0x14, 0x14}};

const plot_rgb plot_masked_rgb = {0xff, 0xff, 0xff};

int plot_scale_stops(plot_scale s, const plot_rgb **stops)
{
    if (s == PLOT_SCALE_GREYS) {
        *stops = greys_stops;
        return (int)(sizeof greys_stops / sizeof greys_stops[0]);
    }
    *stops = viridis_stops;
    return (int)(sizeof viridis_stops / sizeof viridis_stops[0]);
}

/* The colour at t in [0, 1] (clamped) between n stops. */
static plot_rgb stops_rgb(const plot_rgb *st, int n, double t)
{
    t = t < 0 ? 0 : t > 1 ? 1 : t;
    double pos = t * (n - 1);
    int i = (int)pos;
    if (i >= n - 1) return st[n - 1];
    double f = pos - i;
    plot_rgb c = {
        (uint8_t)lround(st[i].r + f * (st[i + 1].r - st[i].r)),
        (uint8_t)lround(st[i].g + f * (st[i + 1].g - st[i].g)),
        (uint8_t)lround(st[i].b + f * (st[i + 1].b - st[i].b)),
    };
    return c;
}

plot_rgb plot_scale_rgb(plot_scale s, double t)
{
    const plot_rgb *st;
    int n = plot_scale_stops(s, &st);
    return stops_rgb(st, n, t);
}

int plot_heat_stops(const plot *p, const plot_rgb **stops)
{
    if (!p->stops) return plot_scale_stops(p->scale, stops);
    *stops = p->stops;
    return p->n_stops;
}

plot_rgb plot_heat_rgb(const plot *p, double t)
{
    const plot_rgb *st;
    int n = plot_heat_stops(p, &st);
    return stops_rgb(st, n, t);
}

/* ---------------------------------------------------------------- ticks */

/* The smallest round step (1, 2, 5 x 10^k) at least raw. */
static double round_step(double raw)
{
    double mag = pow(10, floor(log10(raw)));
    static const double m[] = {1, 2, 5, 10};
    for (int i = 0; i < 4; i++)
        if (m[i] * mag >= raw * (1 - 1e-9)) return m[i] * mag;
    return 10 * mag;
}

void plot_ticks_cover(plot_ticks *t, double *lo, double *hi, int max_ticks)
{
    if (max_ticks < 2) max_ticks = 2;
    if (*hi <= *lo) {
        double d = *lo != 0 ? fabs(*lo) * 0.1 : 1;
        *lo -= d, *hi += d;
    }
    double step = round_step((*hi - *lo) / (max_ticks - 1));
    for (;;) {
        double first = floor(*lo / step + 1e-9) * step, last = ceil(*hi / step - 1e-9) * step;
        int n = (int)lround((last - first) / step) + 1;
        if (n <= max_ticks) {
            *t = (plot_ticks){first, step, n};
            *lo = first, *hi = last;
            return;
        }
        step = round_step(step * 1.5);
    }
}

void plot_ticks_inside(plot_ticks *t, double lo, double hi, int max_ticks)
{
    if (max_ticks < 2) max_ticks = 2;
    double step = round_step((hi - lo) / (max_ticks - 1));
    for (;;) {
        double first = ceil(lo / step - 1e-9) * step, last = floor(hi / step + 1e-9) * step;
        int n = (int)lround((last - first) / step) + 1;
        if (n <= max_ticks) {
            if (n >= 2) *t = (plot_ticks){first, step, n};
            else *t = (plot_ticks){lo, hi - lo, 2};
            return;
        }
        step = round_step(step * 1.5);
    }
}

double plot_tick_value(const plot_ticks *t, int i)
{
    double v = t->first + i * t->step;
    return fabs(v) < t->step * 1e-9 ? 0 : v; /* no "-0" */
}

void plot_format_tick(char *buf, size_t n, double v, double step)
{
    double a = fabs(v);
    if (v == 0) {
        snprintf(buf, n, "0");
    } else if (step >= 1e-4 && a < 1e7) {
        int dec = step >= 1 ? 0 : (int)ceil(-log10(step) - 1e-9);
        snprintf(buf, n, "%.*f", dec, v);
    } else {
        snprintf(buf, n, "%.3g", v);
    }
}

void plot_format_value(char *buf, size_t n, double v)
{
    if (isnan(v)) snprintf(buf, n, "n/a");
    else snprintf(buf, n, "%.4g", v);
}
