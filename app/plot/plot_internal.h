/* What the plot renderers share: the description itself, colours, ranges and tick marks.
 * Not for callers outside app/plot/ (and its tests). */
#ifndef MTLAB_PLOT_INTERNAL_H
#define MTLAB_PLOT_INTERNAL_H

#include "plot/plot.h"

typedef enum { PLOT_LINE, PLOT_BAR, PLOT_HEATMAP } plot_kind;

typedef struct {
    char *name; /* "" when not given */
    double *x; /* (n); NULL for bar series */
    double *y; /* (n): the points' y, or a bar series' values (n == n_labels) */
    size_t n;
} plot_series;

struct plot {
    plot_kind kind;
    char *title, *x_label, *y_label; /* "" when not given; a bar plot's value label is y_label */
    plot_series *series; /* (n_series) line and bar plots */
    size_t n_series;
    char **labels; /* (n_labels) bar categories */
    size_t n_labels;
    float *v; /* (rows, cols) heatmap values */
    uint8_t *defined; /* (rows, cols) 1 = drawn, 0 = masked, NaN or infinite */
    int rows, cols;
    char **row_labels, **col_labels; /* (rows), (cols): given or "1", "2", ... */
    int has_range;
    double lo, hi; /* the range set by plot_heatmap_set_range */
    plot_scale scale;
    struct plot_rgb *stops; /* (n_stops) set by plot_heatmap_set_colors, else NULL */
    int n_stops;
    int row_split, col_split; /* boundary lines before these (0: none) */
};

typedef struct plot_rgb {
    uint8_t r, g, b;
} plot_rgb;

/* The i-th series colour (the palette repeats after 8). */
plot_rgb plot_series_rgb(size_t i);
/* The scale's colour at t in [0, 1] (clamped), interpolated between its stops. */
plot_rgb plot_scale_rgb(plot_scale s, double t);
/* The scale's stops, cold to hot; returns their count. */
int plot_scale_stops(plot_scale s, const plot_rgb **stops);
/* A heatmap's own colours: its stops (plot_heatmap_set_colors) or its scale's. */
plot_rgb plot_heat_rgb(const plot *p, double t);
int plot_heat_stops(const plot *p, const plot_rgb **stops);
/* Background of undefined heat cells in files. */
extern const plot_rgb plot_masked_rgb;

/* s with each invalid UTF-8 byte replaced by U+FFFD (cairo and CSV readers need valid
 * text); malloc'd. */
char *plot_utf8_clean(const char *s);
/* The plot's name for messages: "line plot 'Loss'" or "bar plot" when untitled. */
const char *plot_describe(const plot *p, char *buf, size_t n);
/* The legend name of series i: its name or "series i+1". */
const char *plot_series_name(const plot *p, size_t i, char *buf, size_t n);
/* 0 when there is something to draw, else -1 with a message (no series, every point NaN). */
int plot_check_drawable(const plot *p);
/* Extent of the finite points of a line plot; -1 when there are none. */
int plot_line_extent(const plot *p, double *xlo, double *xhi, double *ylo, double *yhi);
/* Largest bar value (0 when every value is NaN). */
double plot_bar_max(const plot *p);
/* The heatmap's colour range (set, or the defined cells' min..max, widened when equal). */
void plot_heat_range(const plot *p, double *lo, double *hi);
/* Cell value v placed in [0, 1] on the range lo..hi. */
double plot_heat_t(double v, double lo, double hi);

/* Evenly spaced round tick values: step is 1, 2 or 5 times a power of ten. */
typedef struct {
    double first, step;
    int n;
} plot_ticks;

/* At most max_ticks (>= 2) ticks covering lo..hi; *lo and *hi are widened to the outer ticks
 * (a zero-width range first grows around its value). */
void plot_ticks_cover(plot_ticks *t, double *lo, double *hi, int max_ticks);
/* At most max_ticks ticks inside lo..hi (at least the two ends when no round value fits). */
void plot_ticks_inside(plot_ticks *t, double lo, double hi, int max_ticks);
double plot_tick_value(const plot_ticks *t, int i);
/* A tick value with as many decimals as the step needs ("0.25", "1000", "2e-05"). */
void plot_format_tick(char *buf, size_t n, double v, double step);
/* A value for a label beside a bar or a range end: 4 significant digits. */
void plot_format_value(char *buf, size_t n, double v);

/* SVG and PNG (plot_cairo.c). */
int plot_cairo_save(const plot *p, const char *path, int png, int width_px, int height_px);
/* Where cell (r, c) of a heatmap lands in a width_px x height_px image: rect = x, y, w, h. */
void plot_cairo_heat_cell(const plot *p, int width_px, int height_px, int r, int c, double rect[4]);

#endif
