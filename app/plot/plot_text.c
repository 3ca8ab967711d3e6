/* Plots as terminal text. Everything is first drawn on a canvas of character cells (one
 * character, the series it belongs to, a foreground and a background xterm-256 colour each):
 * plot_text_cells hands those cells over (the workbench paints them with its theme), and
 * plot_text writes them out line by line: ANSI escapes only where the colour changes,
 * trailing blanks dropped.
 *
 * Lines use braille: a cell holds 2 x 4 dots, dot (dx, dy) is bit
 *     dy 0..2: dx == 0 ? 1 << dy : 1 << (dy + 3)      dy 3: dx == 0 ? 0x40 : 0x80
 * of U+2800. Bars grow in eighths of a cell (U+2589..U+258F). Heat cells are coloured
 * backgrounds, or shades when there is no colour. */
#include "plot/plot_internal.h"

#include "mtlab/error.h"
#include "common/columns.h"
#include "common/theme.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int w, h;
    int ascii, color;
    plot_cell *cells; /* (h, w) */
} canvas;

static void canvas_init(canvas *cv, const plot_text_opts *o)
{
    cv->w = o->width, cv->h = o->height;
    cv->ascii = o->ascii, cv->color = o->color;
    cv->cells = mt_xmalloc((size_t)cv->w * (size_t)cv->h * sizeof *cv->cells);
    for (int i = 0; i < cv->w * cv->h; i++) cv->cells[i] = (plot_cell){" ", -1, -1, -1};
}

static void canvas_put(canvas *cv, int x, int y, const char *glyph, int fg, int bg)
{
    if (x < 0 || y < 0 || x >= cv->w || y >= cv->h) return;
    plot_cell *c = &cv->cells[(size_t)y * cv->w + x];
    snprintf(c->glyph, sizeof c->glyph, "%s", glyph);
    c->series = -1;
    c->fg = (short)fg, c->bg = (short)bg;
}

/* A cell of series k: its colour (with colour on) and its index for callers with their own. */
static void canvas_put_series(canvas *cv, int x, int y, const char *glyph, size_t k)
{
    int fg = -1;
    if (cv->color) {
        plot_rgb c = plot_series_rgb(k);
        fg = tui_rgb_to_256(c.r, c.g, c.b);
    }
    canvas_put(cv, x, y, glyph, fg, -1);
    if (x >= 0 && y >= 0 && x < cv->w && y < cv->h)
        cv->cells[(size_t)y * cv->w + x].series = (short)k;
}

/* Columns text takes: each character counts 1 in ASCII mode (it becomes '?'). */
static int text_cols(const char *s, int ascii)
{
    int cols = 0;
    size_t n = strlen(s);
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        int len = tui_utf8_decode(s + i, n - i, &cp);
        if (len == 0) len = 1;
        cols += ascii ? 1 : tui_cp_width(cp);
        i += (size_t)len;
    }
    return cols;
}

/* Write text at (x, y) in at most max_cols columns, cut with an ellipsis; returns the columns
 * written. Invalid UTF-8 shows as U+FFFD, any non-ASCII character as '?' in ASCII mode. */
static int canvas_text(canvas *cv, int x, int y, const char *s, int max_cols, int fg)
{
    if (max_cols <= 0) return 0;
    const char *ellipsis = cv->ascii ? "~" : "\xe2\x80\xa6";
    int cut = text_cols(s, cv->ascii) > max_cols;
    int room = cut ? max_cols - 1 : max_cols, col = 0;
    size_t n = strlen(s);
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        int len = tui_utf8_decode(s + i, n - i, &cp);
        char g[8];
        int w = 1;
        if (cv->ascii) {
            snprintf(g, sizeof g, "%c", cp < 0x80 && cp >= 0x20 ? (char)cp : '?');
        } else if (len == 0) {
            snprintf(g, sizeof g, "\xef\xbf\xbd");
        } else {
            w = tui_cp_width(cp);
            if (cp < 0x20 || cp == 0x7f) {
                snprintf(g, sizeof g, "?");
                w = 1;
            } else {
                memcpy(g, s + i, (size_t)len);
                g[len] = 0;
            }
        }
        i += len ? (size_t)len : 1;
        if (w == 0) {
            if (col > 0 && x + col - 1 < cv->w && y < cv->h) {
                plot_cell *prev = &cv->cells[(size_t)y * cv->w + x + col - 1];
                if (strlen(prev->glyph) + strlen(g) < sizeof prev->glyph) strcat(prev->glyph, g);
            }
            continue;
        }
        if (col + w > room) break;
        canvas_put(cv, x + col, y, g, fg, -1);
        if (w == 2) canvas_put(cv, x + col + 1, y, "", fg, -1);
        col += w;
    }
    if (cut) canvas_put(cv, x + col++, y, ellipsis, fg, -1);
    return col;
}

static void canvas_text_centred(canvas *cv, int x0, int width, int y, const char *s, int fg)
{
    int w = text_cols(s, cv->ascii);
    int x = w >= width ? x0 : x0 + (width - w) / 2;
    canvas_text(cv, x, y, s, width - (x - x0), fg);
}

typedef struct {
    char *s;
    size_t n, cap;
} strbuf;

static void sb_add(strbuf *b, const char *s)
{
    size_t len = strlen(s);
    if (b->n + len + 1 > b->cap) {
        b->cap = (b->n + len + 1) * 2;
        b->s = mt_xrealloc(b->s, b->cap);
    }
    memcpy(b->s + b->n, s, len + 1);
    b->n += len;
}

static void sb_colour(strbuf *b, int fg, int bg)
{
    char esc[40];
    int n = snprintf(esc, sizeof esc, "\x1b[0");
    if (fg >= 0) n += snprintf(esc + n, sizeof esc - (size_t)n, ";38;5;%d", fg);
    if (bg >= 0) n += snprintf(esc + n, sizeof esc - (size_t)n, ";48;5;%d", bg);
    snprintf(esc + n, sizeof esc - (size_t)n, "m");
    sb_add(b, esc);
}

/* The cells as text, colour escapes when color. */
static char *cells_string(const plot_cells *pc, int color)
{
    strbuf b = {0};
    sb_add(&b, "");
    for (int y = 0; y < pc->rows; y++) {
        const plot_cell *row = &pc->cells[(size_t)y * pc->w];
        int last = pc->w - 1;
        while (last >= 0 && !strcmp(row[last].glyph, " ") && row[last].bg < 0) last--;
        int fg = -1, bg = -1;
        for (int x = 0; x <= last; x++) {
            const plot_cell *c = &row[x];
            /* a blank on the terminal's background looks the same in any foreground */
            int blank = !strcmp(c->glyph, " ") && c->bg < 0;
            if (color && !blank && (c->fg != fg || c->bg != bg)) {
                sb_colour(&b, c->fg, c->bg);
                fg = c->fg, bg = c->bg;
            } else if (color && blank && bg >= 0) {
                sb_colour(&b, -1, -1);
                fg = bg = -1;
            }
            sb_add(&b, c->glyph);
        }
        if (fg >= 0 || bg >= 0) sb_add(&b, "\x1b[0m");
        sb_add(&b, "\n");
    }
    return b.s;
}

/* ---------------------------------------------------------------- shared pieces */

static int tick_label_width(const plot_ticks *t, int ascii)
{
    int w = 0;
    for (int i = 0; i < t->n; i++) {
        char buf[48];
        plot_format_tick(buf, sizeof buf, plot_tick_value(t, i), t->step);
        int tw = text_cols(buf, ascii);
        if (tw > w) w = tw;
    }
    return w;
}

/* Ticks along a horizontal axis of `cols` columns whose labels do not crowd each other. */
static void horizontal_ticks(plot_ticks *t, double *lo, double *hi, int cols, int ascii)
{
    for (int max = cols / 4 > 2 ? cols / 4 : 2;; max--) {
        double a = *lo, b = *hi;
        plot_ticks_cover(t, &a, &b, max);
        if (max == 2 || t->n * (tick_label_width(t, ascii) + 2) <= cols) {
            *lo = a, *hi = b;
            return;
        }
    }
}

/* An axis along row y from column x_axis (the corner) to x_end, a tick mark at each of the
 * columns tick_col[i] and its label centred below, unless it would touch the one before. */
static void draw_x_axis(canvas *cv, int y, int x_axis, int x_end, const plot_ticks *t,
                        const int *tick_col)
{
    const char *h = cv->ascii ? "-" : "\xe2\x94\x80", *mark = cv->ascii ? "+" : "\xe2\x94\xac";
    canvas_put(cv, x_axis, y, cv->ascii ? "+" : "\xe2\x94\x94", -1, -1);
    for (int x = x_axis + 1; x < x_end; x++) canvas_put(cv, x, y, h, -1, -1);
    int free_from = 0;
    for (int i = 0; i < t->n; i++) {
        if (tick_col[i] > x_axis) canvas_put(cv, tick_col[i], y, mark, -1, -1);
        char buf[48];
        plot_format_tick(buf, sizeof buf, plot_tick_value(t, i), t->step);
        int w = text_cols(buf, cv->ascii);
        int x = tick_col[i] - (w - 1) / 2;
        if (x + w > cv->w) x = cv->w - w;
        if (x < free_from) continue;
        canvas_text(cv, x, y + 1, buf, w, -1);
        free_from = x + w + 1;
    }
}

/* Legend entries "SAMPLE name" side by side, wrapped at the canvas width, from row y (when
 * draw); returns the rows it takes. sample(k) draws series k's sample, sample_w columns. */
typedef void (*sample_fn)(canvas *cv, int x, int y, size_t k);

static int legend(canvas *cv, const plot *p, int y, int draw, sample_fn sample, int sample_w)
{
    int x = 0, rows = 1;
    for (size_t k = 0; k < p->n_series; k++) {
        char buf[32];
        const char *name = plot_series_name(p, k, buf, sizeof buf);
        int w = sample_w + 1 + text_cols(name, cv->ascii);
        if (w > cv->w) w = cv->w;
        if (x > 0 && x + w > cv->w) x = 0, rows++;
        if (draw) {
            sample(cv, x, y + rows - 1, k);
            canvas_text(cv, x + sample_w + 1, y + rows - 1, name, w - sample_w - 1, -1);
        }
        x += w + 3;
    }
    return rows;
}

static int too_small(const plot *p, const plot_text_opts *o, const char *need)
{
    char what[160];
    return mt_error("%s does not fit in %d x %d cells (%s)", plot_describe(p, what, sizeof what),
                    o->width, o->height, need);
}

/* ---------------------------------------------------------------- line plots */

/* How series k draws a line when colours cannot tell the series apart: `on` dots of every
 * `period` along the line (solid, dotted, dashed, ...). */
static const int dash[][2] = {{1, 1}, {1, 3}, {4, 6}, {2, 3}};

/* Without braille, each series marks its cells with its own character. */
static char ascii_marker(size_t k) { return "*+ox#@%&"[k % 8]; }

typedef struct {
    canvas *cv;
    int x0, y0, pw, ph; /* plot area in cells */
    uint8_t *dots; /* (ph, pw) braille bits */
    int *owner; /* (ph, pw) series drawn last in the cell, -1 none */
    size_t k;
    int on, period; /* dash pattern */
    long step; /* dots along the series so far */
} line_canvas;

static void line_dot(line_canvas *lc, int px, int py, int always)
{
    int keep = always || lc->step % lc->period < lc->on;
    lc->step++;
    if (!keep) return;
    int cx, cy, bit = 0;
    if (lc->cv->ascii) {
        cx = px, cy = py;
    } else {
        cx = px / 2, cy = py / 4;
        int dx = px % 2, dy = py % 4;
        bit = dy < 3 ? (dx == 0 ? 1 << dy : 1 << (dy + 3)) : (dx == 0 ? 0x40 : 0x80);
    }
    if (cx < 0 || cy < 0 || cx >= lc->pw || cy >= lc->ph) return;
    lc->dots[cy * lc->pw + cx] |= (uint8_t)bit;
    lc->owner[cy * lc->pw + cx] = (int)lc->k;
}

/* Bresenham from (x0, y0) to (x1, y1); the end points always show. */
static void line_segment(line_canvas *lc, int x0, int y0, int x1, int y1)
{
    int dx = abs(x1 - x0), dy = -abs(y1 - y0);
    int sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1, err = dx + dy;
    for (;;) {
        int end = x0 == x1 && y0 == y1;
        line_dot(lc, x0, y0, end);
        if (end) break;
        int e2 = 2 * err;
        if (e2 >= dy) err += dy, x0 += sx;
        if (e2 <= dx) err += dx, y0 += sy;
    }
}

static void braille_glyph(char out[4], uint8_t bits)
{
    unsigned cp = 0x2800u + bits;
    out[0] = (char)(0xe0 | (cp >> 12));
    out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
    out[2] = (char)(0x80 | (cp & 0x3f));
    out[3] = 0;
}

static void put_marker(canvas *cv, int x, int y, size_t k)
{
    char g[2] = {ascii_marker(k), 0};
    canvas_put_series(cv, x, y, g, k);
}

/* A line plot's legend sample: 4 columns, long enough to show the dash pattern. */
enum { LINE_SAMPLE_W = 4 };

static void line_sample(canvas *cv, int x, int y, size_t k)
{
    if (cv->ascii) {
        for (int c = 0; c < LINE_SAMPLE_W; c++) put_marker(cv, x + c, y, k);
        return;
    }
    const int *d = cv->color ? dash[0] : dash[k % 4];
    for (int c = 0; c < LINE_SAMPLE_W; c++) {
        uint8_t bits = 0;
        for (int dx = 0; dx < 2; dx++)
            if ((2 * c + dx) % d[1] < d[0]) bits |= (uint8_t)(dx == 0 ? 0x02 : 0x10);
        char g[4];
        braille_glyph(g, bits);
        canvas_put_series(cv, x + c, y, g, k);
    }
}

static int render_line(const plot *p, canvas *cv, const plot_text_opts *o)
{
    int has_legend = p->n_series > 1 || p->series[0].name[0];
    int legend_rows = has_legend ? legend(cv, p, 0, 0, line_sample, LINE_SAMPLE_W) : 0;
    int top = (p->title[0] != 0) + (p->y_label[0] != 0);
    int bottom = 2 + (p->x_label[0] != 0) + legend_rows;
    int ph = cv->h - top - bottom;
    if (ph < 2) return too_small(p, o, "a line plot needs 2 rows for its curves");

    double xlo, xhi, ylo, yhi;
    plot_line_extent(p, &xlo, &xhi, &ylo, &yhi);
    plot_ticks yt, xt;
    plot_ticks_cover(&yt, &ylo, &yhi, ph / 2 + 1);
    int ylw = tick_label_width(&yt, cv->ascii);
    int x0 = ylw + 1, pw = cv->w - x0;
    if (pw < 4) return too_small(p, o, "no room right of the y axis labels");
    horizontal_ticks(&xt, &xlo, &xhi, pw, cv->ascii);

    int sub_x = cv->ascii ? 1 : 2, sub_y = cv->ascii ? 1 : 4;
    int px = pw * sub_x, py = ph * sub_y;
    line_canvas lc = {.cv = cv, .x0 = x0, .y0 = top, .pw = pw, .ph = ph};
    lc.dots = mt_xcalloc((size_t)pw * ph, 1);
    lc.owner = mt_xmalloc((size_t)pw * ph * sizeof *lc.owner);
    for (int i = 0; i < pw * ph; i++) lc.owner[i] = -1;
    for (size_t k = 0; k < p->n_series; k++) {
        const plot_series *s = &p->series[k];
        const int *d = cv->color || cv->ascii ? dash[0] : dash[k % 4];
        lc.k = k, lc.on = d[0], lc.period = d[1], lc.step = 0;
        int have_prev = 0, qx = 0, qy = 0;
        for (size_t i = 0; i < s->n; i++) {
            if (!isfinite(s->x[i]) || !isfinite(s->y[i])) {
                have_prev = 0;
                continue;
            }
            int cx = (int)lround((s->x[i] - xlo) / (xhi - xlo) * (px - 1));
            int cy = (int)lround((yhi - s->y[i]) / (yhi - ylo) * (py - 1));
            if (have_prev) line_segment(&lc, qx, qy, cx, cy);
            else line_dot(&lc, cx, cy, 1);
            have_prev = 1, qx = cx, qy = cy;
        }
    }
    for (int y = 0; y < ph; y++)
        for (int x = 0; x < pw; x++) {
            int k = lc.owner[y * pw + x];
            if (k < 0) continue;
            if (cv->ascii) {
                put_marker(cv, x0 + x, top + y, (size_t)k);
            } else {
                char g[4];
                braille_glyph(g, lc.dots[y * pw + x]);
                canvas_put_series(cv, x0 + x, top + y, g, (size_t)k);
            }
        }
    free(lc.dots);
    free(lc.owner);

    if (p->title[0]) canvas_text_centred(cv, 0, cv->w, 0, p->title, -1);
    if (p->y_label[0]) canvas_text(cv, 0, top - 1, p->y_label, cv->w, -1);
    /* y axis: a tick where each round value's dot row falls */
    for (int y = 0; y < ph; y++)
        canvas_put(cv, ylw, top + y, cv->ascii ? "|" : "\xe2\x94\x82", -1, -1);
    for (int i = 0; i < yt.n; i++) {
        double v = plot_tick_value(&yt, i);
        int row = (int)lround((yhi - v) / (yhi - ylo) * (py - 1)) / sub_y;
        char buf[48];
        plot_format_tick(buf, sizeof buf, v, yt.step);
        canvas_text(cv, ylw - text_cols(buf, cv->ascii), top + row, buf, ylw, -1);
        canvas_put(cv, ylw, top + row, cv->ascii ? "+" : "\xe2\x94\xa4", -1, -1);
    }
    int *cols = mt_xmalloc((size_t)xt.n * sizeof *cols);
    for (int i = 0; i < xt.n; i++)
        cols[i] =
            x0 + (int)lround((plot_tick_value(&xt, i) - xlo) / (xhi - xlo) * (px - 1)) / sub_x;
    draw_x_axis(cv, top + ph, ylw, cv->w, &xt, cols);
    free(cols);
    int y = top + ph + 2;
    if (p->x_label[0]) canvas_text_centred(cv, x0, pw, y++, p->x_label, -1);
    if (has_legend) legend(cv, p, y, 1, line_sample, LINE_SAMPLE_W);
    return cv->h;
}

/* ---------------------------------------------------------------- bar plots */

/* Bars of series k without colour: eighths for the first, whole-cell shades for the others. */
static const char *const bar_shades[] = {"\xe2\x96\x88", "\xe2\x96\x93", "\xe2\x96\x92",
                                         "\xe2\x96\x91"};
static const char *const bar_ascii[] = {"#", "=", "*", "-"};
/* U+258F..U+2589: a cell filled 1/8 .. 7/8 from the left */
static const char *const eighths[] = {"\xe2\x96\x8f", "\xe2\x96\x8e", "\xe2\x96\x8d",
                                      "\xe2\x96\x8c", "\xe2\x96\x8b", "\xe2\x96\x8a",
                                      "\xe2\x96\x89"};

static void bar_sample(canvas *cv, int x, int y, size_t k)
{
    const char *g = cv->ascii ? bar_ascii[k % 4] : cv->color ? bar_shades[0] : bar_shades[k % 4];
    canvas_put_series(cv, x, y, g, k);
    canvas_put_series(cv, x + 1, y, g, k);
}

static int render_bar(const plot *p, canvas *cv, const plot_text_opts *o)
{
    size_t ng = p->n_labels, ns = p->n_series;
    int has_legend = ns > 1 || p->series[0].name[0];
    int legend_rows = has_legend ? legend(cv, p, 0, 0, bar_sample, 2) : 0;
    int top = p->title[0] != 0;
    int bottom = 2 + (p->y_label[0] != 0) + legend_rows;
    long bars = (long)(ng * ns);
    int gap = ns > 1 && top + bars + (long)(ng - 1) + bottom <= cv->h;
    long rows = bars + (gap ? (long)ng - 1 : 0);
    if (top + rows + bottom > cv->h) return too_small(p, o, "one row per bar");

    int lw = 0;
    for (size_t i = 0; i < ng; i++) {
        int w = text_cols(p->labels[i], cv->ascii);
        if (w > lw) lw = w;
    }
    if (lw > cv->w / 3) lw = cv->w / 3;
    int vw = 0;
    for (size_t k = 0; k < ns; k++)
        for (size_t i = 0; i < ng; i++) {
            char buf[32];
            plot_format_value(buf, sizeof buf, p->series[k].y[i]);
            int w = text_cols(buf, cv->ascii) + 1;
            if (w > vw) vw = w;
        }
    int x_axis = lw + 1, x0 = x_axis + 1, bw = cv->w - x0 - vw;
    if (bw < 4) return too_small(p, o, "no room for the bars beside their labels and values");
    double hi = plot_bar_max(p), lo = 0;
    if (hi <= 0) hi = 1;
    plot_ticks t;
    horizontal_ticks(&t, &lo, &hi, bw + 1, cv->ascii);

    if (p->title[0]) canvas_text_centred(cv, 0, cv->w, 0, p->title, -1);
    int y = top;
    for (size_t i = 0; i < ng; i++) {
        canvas_text(cv, 0, y, p->labels[i], lw, -1);
        for (size_t k = 0; k < ns; k++, y++) {
            canvas_put(cv, x_axis, y, cv->ascii ? "|" : "\xe2\x94\x82", -1, -1);
            double v = p->series[k].y[i];
            int len = 0;
            if (!isnan(v)) {
                long e = lround(v / hi * bw * 8);
                int fine = !cv->ascii && (cv->color || k % 4 == 0);
                if (!fine) e = (e + 4) / 8 * 8;
                const char *full = cv->ascii ? bar_ascii[k % 4]
                                   : fine    ? bar_shades[0]
                                             : bar_shades[k % 4];
                for (len = 0; len < e / 8; len++) canvas_put_series(cv, x0 + len, y, full, k);
                if (e % 8) canvas_put_series(cv, x0 + len++, y, eighths[e % 8 - 1], k);
            }
            char buf[32];
            plot_format_value(buf, sizeof buf, v);
            canvas_text(cv, x0 + len + 1, y, buf, vw, -1);
        }
        if (gap && i + 1 < ng) y++;
    }
    int *cols = mt_xmalloc((size_t)t.n * sizeof *cols);
    for (int i = 0; i < t.n; i++) cols[i] = x_axis + (int)lround(plot_tick_value(&t, i) / hi * bw);
    draw_x_axis(cv, y, x_axis, x0 + bw, &t, cols);
    free(cols);
    y += 2;
    if (p->y_label[0]) canvas_text_centred(cv, x0, bw, y++, p->y_label, -1);
    if (has_legend) y += legend(cv, p, y, 1, bar_sample, 2);
    return y;
}

/* ---------------------------------------------------------------- heatmaps */

static const char *const heat_shades[] = {"\xe2\x96\x91", "\xe2\x96\x92", "\xe2\x96\x93",
                                          "\xe2\x96\x88"};
static const char heat_ascii[] = ".:-=+*#%@";

/* Draw one heat cell of value t in [0, 1] (t < 0: not defined, left blank). */
static void heat_put(canvas *cv, const plot *p, int x, int y, double t)
{
    if (t < 0) return;
    if (cv->color) {
        plot_rgb c = plot_heat_rgb(p, t);
        canvas_put(cv, x, y, " ", -1, tui_rgb_to_256(c.r, c.g, c.b));
    } else if (cv->ascii) {
        int n = (int)sizeof heat_ascii - 1, lv = (int)(t * n);
        char g[2] = {heat_ascii[lv < n ? lv : n - 1], 0};
        canvas_put(cv, x, y, g, -1, -1);
    } else {
        int lv = (int)(t * 4);
        canvas_put(cv, x, y, heat_shades[lv < 4 ? lv : 3], -1, -1);
    }
}

/* A heatmap as drawn: the matrix, or, when it has more rows (columns) than there are lines
 * (characters), blocks of rbin x cbin cells shown as their defined cells' mean, labelled by
 * their first row (column). */
typedef struct {
    int rows, cols, rbin, cbin;
    double *v; /* (rows, cols) */
    uint8_t *defined; /* (rows, cols) */
} heat_view;

static void heat_view_make(heat_view *hv, const plot *p, int rbin, int cbin)
{
    hv->rbin = rbin, hv->cbin = cbin;
    hv->rows = (p->rows + rbin - 1) / rbin;
    hv->cols = (p->cols + cbin - 1) / cbin;
    size_t n = (size_t)hv->rows * (size_t)hv->cols;
    hv->v = mt_xcalloc(n, sizeof *hv->v);
    hv->defined = mt_xcalloc(n, 1);
    for (int r = 0; r < hv->rows; r++)
        for (int c = 0; c < hv->cols; c++) {
            double sum = 0;
            int k = 0;
            for (int i = r * rbin; i < (r + 1) * rbin && i < p->rows; i++)
                for (int j = c * cbin; j < (c + 1) * cbin && j < p->cols; j++) {
                    size_t at = (size_t)i * p->cols + j;
                    if (p->defined[at]) sum += p->v[at], k++;
                }
            hv->v[(size_t)r * hv->cols + c] = k ? sum / k : 0;
            hv->defined[(size_t)r * hv->cols + c] = k > 0;
        }
}

static void heat_view_free(heat_view *hv)
{
    free(hv->v);
    free(hv->defined);
}

static int render_heatmap(const plot *p, canvas *cv, const plot_text_opts *o)
{
    int top = p->title[0] != 0;
    int bottom = 1 + (p->x_label[0] != 0);
    int lw = 0, cl = 0;
    for (int r = 0; r < p->rows; r++) {
        int w = text_cols(p->row_labels[r], cv->ascii);
        if (w > lw) lw = w;
    }
    int cap = cv->w / 4 > 4 ? cv->w / 4 : 4;
    if (lw > cap) lw = cap;
    for (int c = 0; c < p->cols; c++) {
        int w = text_cols(p->col_labels[c], cv->ascii);
        if (w > cl) cl = w;
    }
    int x0 = lw + 1, room_w = cv->w - x0;
    if (room_w < 1) return too_small(p, o, "a column beside the row labels");
    int cbin = (p->cols + room_w - 1) / room_w, cols = (p->cols + cbin - 1) / cbin;
    int cw_max = room_w / cols;
    /* column labels across when they fit in a cell (a blank between them), else one character
     * per row, downwards */
    int across = cl < cw_max || (cols == 1 && cl <= cw_max);
    int lab_rows = across ? 1 : cl < 6 ? cl : 6;
    while (!across && lab_rows > 1 && top + lab_rows + p->rows + bottom > cv->h) lab_rows--;
    int avail = cv->h - top - lab_rows - bottom;
    if (avail < 1) return too_small(p, o, "a line for the map");
    heat_view hv;
    heat_view_make(&hv, p, (p->rows + avail - 1) / avail, cbin);
    /* cells as wide as fit, and as high as fit up to square (a character is about twice as
     * high as wide) */
    int cw = cw_max, rh = avail / hv.rows;
    if (rh > cw / 2) rh = cw / 2 > 1 ? cw / 2 : 1;

    double lo, hi;
    plot_heat_range(p, &lo, &hi);
    if (p->title[0]) canvas_text_centred(cv, 0, cv->w, 0, p->title, -1);
    if (p->y_label[0]) canvas_text(cv, 0, top, p->y_label, lw, -1);
    for (int c = 0; c < hv.cols; c++) {
        int x = x0 + c * cw;
        const char *s = p->col_labels[c * cbin];
        if (across) {
            canvas_text(cv, x, top, s, cw, -1);
            continue;
        }
        /* downwards: the label's characters one per row, cut with an ellipsis */
        size_t n = strlen(s), i = 0;
        int total = text_cols(s, cv->ascii);
        for (int row = 0; row < lab_rows && i < n; row++) {
            uint32_t cp;
            int len = tui_utf8_decode(s + i, n - i, &cp);
            if (len == 0) len = 1;
            char g[8];
            if (row == lab_rows - 1 && total > lab_rows) {
                snprintf(g, sizeof g, "%s", cv->ascii ? "~" : "\xe2\x80\xa6");
            } else {
                memcpy(g, s + i, (size_t)len);
                g[len] = 0;
            }
            canvas_text(cv, x + (cw - 1) / 2, top + row, g, cw - (cw - 1) / 2, -1);
            i += (size_t)len;
        }
    }
    int gy = top + lab_rows;
    for (int r = 0; r < hv.rows; r++) {
        canvas_text(cv, 0, gy + r * rh + (rh - 1) / 2, p->row_labels[r * hv.rbin], lw, -1);
        for (int c = 0; c < hv.cols; c++) {
            size_t i = (size_t)r * hv.cols + c;
            double t = hv.defined[i] ? plot_heat_t(hv.v[i], lo, hi) : -1;
            for (int dy = 0; dy < rh; dy++)
                for (int dx = 0; dx < cw; dx++)
                    heat_put(cv, p, x0 + c * cw + dx, gy + r * rh + dy, t);
        }
    }
    int y = gy + hv.rows * rh;
    if (p->x_label[0]) canvas_text_centred(cv, x0, cw * hv.cols, y++, p->x_label, -1);
    /* the scale: low value, the colours or shades in order, high value */
    char lo_s[32], hi_s[32];
    plot_format_value(lo_s, sizeof lo_s, lo);
    plot_format_value(hi_s, sizeof hi_s, hi);
    int x = canvas_text(cv, 0, y, lo_s, cv->w, -1) + 1;
    int steps = cv->color ? 16 : cv->ascii ? (int)sizeof heat_ascii - 1 : 8;
    for (int i = 0; i < steps; i++) heat_put(cv, p, x + i, y, (i + 0.5) / steps);
    x += steps + 1;
    x += canvas_text(cv, x, y, hi_s, cv->w - x, -1);
    /* what a cell stands for when blocks are drawn, then what a blank means */
    char note[96] = "";
    if (hv.rbin > 1 || hv.cbin > 1) {
        int n = snprintf(note, sizeof note, "  mean of");
        if (hv.rbin > 1)
            n += snprintf(note + n, sizeof note - (size_t)n, " %d rows a line", hv.rbin);
        if (hv.cbin > 1)
            snprintf(note + n, sizeof note - (size_t)n, "%s %d columns a character",
                     hv.rbin > 1 ? "," : "", hv.cbin);
    }
    int undefined = 0;
    for (size_t i = 0; i < (size_t)p->rows * (size_t)p->cols; i++) undefined |= !p->defined[i];
    if (undefined)
        snprintf(note + strlen(note), sizeof note - strlen(note), "  blank: not defined");
    if (note[0] && cv->w > x) canvas_text(cv, x, y, note, cv->w - x, -1);
    heat_view_free(&hv);
    return y + 1;
}

/* ---------------------------------------------------------------- entry points */

int plot_text_cells(const plot *p, const plot_text_opts *o, plot_cells *out)
{
    char what[160];
    memset(out, 0, sizeof *out);
    if (o->width < 8 || o->height < 3 || o->width > 4096 || o->height > 4096)
        return mt_error("%s: %d x %d cells is not a usable size (8x3 .. 4096x4096)",
                        plot_describe(p, what, sizeof what), o->width, o->height);
    if (plot_check_drawable(p)) return -1;
    canvas cv;
    canvas_init(&cv, o);
    int rows = p->kind == PLOT_LINE  ? render_line(p, &cv, o)
               : p->kind == PLOT_BAR ? render_bar(p, &cv, o)
                                     : render_heatmap(p, &cv, o);
    if (rows < 0) {
        free(cv.cells);
        return -1;
    }
    *out = (plot_cells){.w = cv.w, .rows = rows, .cells = cv.cells};
    return 0;
}

void plot_cells_free(plot_cells *c)
{
    free(c->cells);
    c->cells = NULL;
    c->w = c->rows = 0;
}

char *plot_text(const plot *p, const plot_text_opts *o)
{
    plot_cells pc;
    if (plot_text_cells(p, o, &pc)) return NULL;
    char *s = cells_string(&pc, o->color);
    plot_cells_free(&pc);
    return s;
}

int plot_text_write(const plot *p, const plot_text_opts *o, FILE *f)
{
    char what[160];
    char *s = plot_text(p, o);
    if (!s) return -1;
    size_t n = strlen(s);
    int rc = fwrite(s, 1, n, f) == n && fflush(f) == 0
                 ? 0
                 : mt_error("%s: writing the text failed: %s", plot_describe(p, what, sizeof what),
                            strerror(errno));
    free(s);
    return rc;
}
