/* Plots, drawn once and shown three ways: as terminal text (braille lines, block bars,
 * heat cells), as SVG or PNG files through cairo, and as CSV. A plot is a description built
 * with the constructors below; the renderers never change it.
 *
 *   line     several named series of (x, y) points; a point with a NaN or infinite
 *            coordinate is skipped and its line breaks there
 *   bar      n_labels categories, one value per category and series (several series: grouped
 *            bars); values are >= 0, a NaN value is a missing bar
 *   heatmap  a (rows, cols) matrix of floats with row and column labels; masked cells (the
 *            causal triangle) and NaN/infinite cells are not defined and are drawn as
 *            background; colours from a scale over a value range
 *
 * Sizes: n = points in a series, n_labels = bar categories, rows x cols = heatmap cells.
 * Every fallible call returns 0 (or a valid pointer) on success and -1 (or NULL) after
 * recording a message with mt_error() (mtlab/error.h) that names the plot and the problem. */
#ifndef MTLAB_PLOT_H
#define MTLAB_PLOT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct plot plot;

typedef enum {
    PLOT_SCALE_VIRIDIS, /* dark purple -> teal -> yellow; readable in greyscale */
    PLOT_SCALE_GREYS, /* light grey -> near black; for print */
} plot_scale;

/* Labels may be NULL (no title, no axis label). The plot copies every string and array. */
plot *plot_line_new(const char *title, const char *x_label, const char *y_label);
/* Add a series: x (nx), y (ny) with nx == ny > 0; x NULL (nx 0) means x = 1..ny.
 * name may be NULL or "" (the legend then says "series N"). Colours follow the order added. */
int plot_line_add(plot *p, const char *name, const double *x, size_t nx, const double *y,
                  size_t ny);

/* A bar plot over labels (n_labels > 0 strings); value_label names the bars' axis. */
plot *plot_bar_new(const char *title, const char *value_label, const char *const *labels,
                   size_t n_labels);
/* Add one series of values (n == n_labels). */
int plot_bar_add(plot *p, const char *name, const double *values, size_t n);

/* The matrix of a heatmap: v (rows, cols), row-major. row_labels (rows) and col_labels (cols)
 * may be NULL (cells are then numbered from 1); mask (rows, cols) may be NULL, nonzero = not
 * defined. */
typedef struct {
    const float *v;
    int rows, cols;
    const char *const *row_labels;
    const char *const *col_labels;
    const uint8_t *mask;
} plot_grid;
/* A heatmap of g (copied). The range is the defined cells' min..max and the scale viridis
 * until set otherwise. */
plot *plot_heatmap_new(const char *title, const char *x_label, const char *y_label,
                       const plot_grid *g);
/* Fix the colour range to lo..hi (finite, lo < hi); values outside are clamped. */
int plot_heatmap_set_range(plot *p, double lo, double hi);
int plot_heatmap_set_scale(plot *p, plot_scale scale);
/* Colour by n >= 2 stops instead (rgb: 3n bytes, red green blue, cold to hot, evenly spaced):
 * a caller's own palette, e.g. the workbench's theme, so a file looks like the screen. */
int plot_heatmap_set_colors(plot *p, const uint8_t *rgb, int n);
/* Boundary lines before row row_split and before column col_split (0: none), e.g. between a
 * source and its translation; each must lie inside the matrix. */
int plot_heatmap_set_split(plot *p, int row_split, int col_split);
/* "viridis" or "greys" -> *scale; 0, or -1 naming the known scales. */
int plot_scale_parse(const char *name, plot_scale *scale);

void plot_free(plot *p);

/* Terminal text, fitted to width x height character cells (a line plot fills them; bars and
 * heatmaps take what they need up to that). color: 256-colour ANSI escapes, else plain text
 * (the caller decides: NO_COLOR, not a tty). ascii: only 7-bit characters (no UTF-8 locale);
 * lines are then drawn with one marker per cell. */
typedef struct {
    int width, height;
    int color;
    int ascii;
} plot_text_opts;

/* One character cell of a plot drawn as text, for callers that paint the cells themselves
 * (the workbench, in its theme's colours). */
typedef struct {
    char glyph[16]; /* one character and any zero-width ones after it; "" right of a wide one */
    short series; /* the series whose line, marker or bar this is; -1: text, axes, heat */
    short fg, bg; /* xterm-256 colours when opts->color, -1: the terminal's own */
} plot_cell;

typedef struct {
    int w, rows; /* rows: the lines the plot takes, at most opts->height */
    plot_cell *cells; /* (rows, w) */
} plot_cells;

/* The cells plot_text writes out (the one renderer). 0, or -1 when the plot is empty or does
 * not fit (nothing to free then); plot_cells_free after success. */
int plot_text_cells(const plot *p, const plot_text_opts *opts, plot_cells *out);
void plot_cells_free(plot_cells *c);

/* The text, lines ending in '\n', malloc'd; NULL when the plot is empty or does not fit. */
char *plot_text(const plot *p, const plot_text_opts *opts);
int plot_text_write(const plot *p, const plot_text_opts *opts, FILE *f);

/* Write a file chosen by path's extension (case-insensitive): .svg and .png through cairo at
 * width_px x height_px (SVG: points), .csv as plot_csv_write. */
int plot_save(const plot *p, const char *path, int width_px, int height_px);
/* CSV with a header row: a line plot as "series,x,y" rows; bars as "label,SERIES..." rows;
 * a heatmap as one row per matrix row, its label first, undefined cells empty. */
int plot_csv_write(const plot *p, FILE *f);

#endif
