/* The jobs view over the whole screen but the status line: the runs with their progress (or
 * the config picker), the last action's outcome, and braille plots of training loss and
 * validation BLEU against steps, drawn from plot_text_cells in the theme's series colours
 * (each run keeps its colour: its place in the list). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mtlab/error.h"
#include "plot/plot.h"
#include "tui/app.h"
#include "common/columns.h"
#include "tui/glyphs.h"
#include "tui/styled.h"

enum { NAME_W = 16, STATE_W = 10, RANKS_W = 5, STEPS_W = 13, BAR_W = 12, NUM_W = 8 };
/* the columns after RUN, with the space before each */
enum {
    AFTER_NAME_W =
        1 + STATE_W + 1 + RANKS_W + 1 + STEPS_W + 1 + BAR_W + 1 + NUM_W + 1 + NUM_W + 1 + NUM_W - 2
};

static tui_meaning series_meaning(size_t run)
{
    return (tui_meaning)(TUI_C_SERIES1 + run % TUI_N_SERIES);
}

static int use_ascii(const tui_app *a) { return !a->utf8 || a->ascii; }

/* The RUN column: as wide as the longest name where the window has room for it beside the
 * other columns, and never narrower than NAME_W for want of room. */
static int name_width(const tui_jobs *v, int width)
{
    int longest = 3; /* "RUN" */
    for (size_t i = 0; i < v->n_runs; i++) {
        int tw = tui_text_width_z(v->runs[i].info.name);
        if (tw > longest) longest = tw;
    }
    int room = width - 2 - AFTER_NAME_W, floor = longest < NAME_W ? longest : NAME_W;
    return longest < room ? longest : room > floor ? room : floor;
}

static void draw_runs(tui_app *a, WINDOW *w, int y0, int rows)
{
    tui_jobs *v = a->jobs;
    int width = getmaxx(w) - 2, name_w = name_width(v, width);
    char line[512];
    tui_set_style(w, &a->palette, TUI_C_TITLE);
    snprintf(line, sizeof line, "  %-*s %-*s %*s %-*s %-*s %*s %*s %*s", name_w, "RUN", STATE_W,
             "STATE", RANKS_W, "RANKS", STEPS_W, "STEP", BAR_W, "PROGRESS", NUM_W, "TOK/S", NUM_W,
             "ETA", NUM_W - 2, "BLEU");
    tui_put(w, y0, 1, line, width);
    if (v->list_error[0]) {
        tui_set_style(w, &a->palette, TUI_C_ERROR);
        tui_put(w, y0 + 1, 2, v->list_error, width - 1);
        return;
    }
    if (v->n_runs == 0) {
        tui_set_style(w, &a->palette, TUI_C_DIM);
        tui_put(w, y0 + 1, 2, "no runs under runs/ yet: n launches a config", width - 1);
        return;
    }
    int first = v->sel >= rows ? v->sel - rows + 1 : 0;
    for (int r = 0; r < rows && first + r < (int)v->n_runs; r++) {
        size_t i = (size_t)(first + r);
        const tui_job_run *run = &v->runs[i];
        const tui_job_curves *c = &run->curves;
        tui_job_cols cols;
        tui_job_columns(&cols, &run->info,
                        tui_job_eta_s(c->step, c->elapsed, c->n_train, run->info.max_steps));
        char bar[3 * BAR_W + 1];
        tui_progress_bar(bar, sizeof bar, run->info.step, run->info.max_steps, BAR_W, use_ascii(a));
        int y = y0 + 1 + r, sel = (int)i == v->sel;
        tui_meaning base = sel ? TUI_C_SELECTION : TUI_C_TEXT;
        tui_set_style(w, &a->palette, base);
        if (sel) mvwhline(w, y, 1, ' ', width);
        /* the run's colour, as its curves have it */
        tui_set_style(w, &a->palette, series_meaning(i));
        tui_put(w, y, 1, use_ascii(a) ? "*" : "\xe2\x97\x8f", 1);
        char name[3 * sizeof run->info.name];
        tui_fit_middle(name, sizeof name, run->info.name, name_w,
                       tui_glyphs_for(!use_ascii(a))->ellipsis);
        const struct {
            const char *text;
            int cols, right; /* right-aligned */
            tui_meaning m;
        } col[] = {
            {name, name_w, 0, base},
            {cols.state, STATE_W, 0, sel ? base : cols.state_meaning},
            {cols.ranks, RANKS_W, 1, base},
            {cols.steps, STEPS_W, 0, base},
            {bar, BAR_W, 0, base},
            {cols.tokens_per_s, NUM_W, 1, base},
            {cols.eta, NUM_W, 1, base},
            {cols.bleu, NUM_W - 2, 1, base},
        };
        /* columns left to right, each cut at the window's right border */
        for (size_t k = 0, x = 3; k < sizeof col / sizeof col[0] && (int)x <= width; k++) {
            int room = width + 1 - (int)x, cw = col[k].cols < room ? col[k].cols : room;
            int tw = tui_text_width_z(col[k].text);
            int pad = col[k].right && tw < cw ? cw - tw : 0;
            tui_set_style(w, &a->palette, col[k].m);
            tui_put(w, y, (int)x + pad, col[k].text, cw - pad);
            x += (size_t)col[k].cols + 1;
        }
    }
}

static void draw_picker(tui_app *a, WINDOW *w, int y0, int rows)
{
    tui_jobs *v = a->jobs;
    int width = getmaxx(w) - 2;
    char line[700];
    tui_set_style(w, &a->palette, TUI_C_TITLE);
    snprintf(
        line, sizeof line,
        "  launch a config: type its path or pick one (Enter launches, Esc cancels); launcher %s%s",
        job_launcher_name(v->launcher), v->have_sbatch ? " (s/l on a listed config switches)" : "");
    tui_put(w, y0, 1, line, width);
    int n = v->n_configs + 1;
    int first = v->config_sel >= rows ? v->config_sel - rows + 1 : 0;
    for (int r = 0; r < rows && first + r < n; r++) {
        int i = first + r, sel = i == v->config_sel, y = y0 + 1 + r;
        if (i > 0) snprintf(line, sizeof line, "  %s", v->configs[i - 1]);
        else snprintf(line, sizeof line, "  path: %s%s", v->path, sel ? "_" : "");
        tui_set_style(w, &a->palette, sel ? TUI_C_SELECTION : TUI_C_TEXT);
        if (sel) mvwhline(w, y, 1, ' ', width);
        tui_put(w, y, 1, line, width);
    }
}

/* One plot of the runs' curves (train loss or validation BLEU) in the rectangle. */
static void draw_plot(tui_app *a, WINDOW *w, int y0, int x0, int h, int width, int bleu)
{
    tui_jobs *v = a->jobs;
    plot *p = plot_line_new(bleu ? "validation BLEU" : "training loss", "step", NULL);
    /* every run shown is a series, one without points too (a NaN point draws nothing), so a
     * run keeps its series index, and with it its dash pattern or ASCII marker, in both plots */
    size_t run_of[64], n_series = 0, with_points = 0;
    const double none = NAN;
    for (size_t i = 0; i < v->n_runs && n_series < 64; i++) {
        if (!v->plot_all && (int)i != v->sel) continue;
        const tui_job_curves *c = &v->runs[i].curves;
        size_t n = bleu ? c->n_valid : c->n_train;
        if (n > 0)
            plot_line_add(p, v->runs[i].info.name, bleu ? c->valid_step : c->step, n,
                          bleu ? c->bleu : c->loss, n);
        else plot_line_add(p, v->runs[i].info.name, &none, 1, &none, 1);
        with_points += n > 0;
        run_of[n_series++] = i;
    }
    plot_text_opts o = {width, h, a->palette.level != TUI_COLORS_NONE, use_ascii(a)};
    plot_cells pc;
    if (with_points == 0 || plot_text_cells(p, &o, &pc) != 0) {
        tui_set_style(w, &a->palette, TUI_C_DIM);
        char line[160];
        snprintf(line, sizeof line, "%s: %s", bleu ? "validation BLEU" : "training loss",
                 with_points == 0 ? "no points yet" : "no room");
        tui_put(w, y0, x0 + 1, line, width - 1);
        plot_free(p);
        return;
    }
    for (int y = 0; y < pc.rows; y++)
        for (int x = 0; x < pc.w; x++) {
            const plot_cell *c = &pc.cells[y * pc.w + x];
            if (!c->glyph[0] || !strcmp(c->glyph, " ")) continue;
            tui_set_style(w, &a->palette,
                          c->series >= 0 ? series_meaning(run_of[c->series]) : TUI_C_DIM);
            mvwaddstr(w, y0 + y, x0 + x, c->glyph);
        }
    plot_cells_free(&pc);
    plot_free(p);
}

void tui_draw_jobs(tui_app *a)
{
    tui_jobs *v = a->jobs;
    int H = LINES - 1, W = COLS;
    if (H < 3 || W < 10) return;
    if (!a->w_jobs || getmaxy(a->w_jobs) != H || getmaxx(a->w_jobs) != W) {
        if (a->w_jobs) delwin(a->w_jobs);
        a->w_jobs = newwin(H, W, 0, 0);
        if (!a->w_jobs) return;
    }
    WINDOW *w = a->w_jobs;
    tui_style_background(w, &a->palette);
    werase(w);
    tui_set_style(w, &a->palette, TUI_C_FOCUS);
    box(w, 0, 0);
    char title[128];
    snprintf(title, sizeof title, " jobs (F11): runs/, launcher %s, plots: %s ",
             job_launcher_name(v->launcher), v->plot_all ? "every run" : "the highlighted run");
    tui_put(w, 0, 2, title, W - 4);

    int inner = H - 2;
    int list_rows = v->picking ? v->n_configs + 1 : (int)v->n_runs;
    if (list_rows < 1) list_rows = 1;
    int cap = inner / 3 > 3 ? inner / 3 : 3;
    if (list_rows > cap) list_rows = cap;
    if (v->picking) draw_picker(a, w, 1, list_rows);
    else draw_runs(a, w, 1, list_rows);
    int y = 2 + list_rows;
    const tui_job_run *sel = v->sel >= 0 && (size_t)v->sel < v->n_runs ? &v->runs[v->sel] : NULL;
    if (v->message[0]) {
        tui_set_style(w, &a->palette, v->message_is_error ? TUI_C_ERROR : TUI_C_DONE);
        tui_put(w, y++, 2, v->message, W - 4);
    } else if (sel && sel->info.error[0]) {
        char line[700];
        snprintf(line, sizeof line, "%s: %s", sel->info.name, sel->info.error);
        tui_set_style(w, &a->palette, TUI_C_ERROR);
        tui_put(w, y++, 2, line, W - 4);
    }
    int ph = H - 1 - y;
    if (ph < 4) return;
    if (W >= 90) {
        int pw = (W - 3) / 2;
        draw_plot(a, w, y, 1, ph, pw, 0);
        draw_plot(a, w, y, 2 + pw, ph, W - 3 - pw, 1);
    } else if (ph >= 10) {
        draw_plot(a, w, y, 1, ph / 2, W - 2, 0);
        draw_plot(a, w, y + ph / 2, 1, ph - ph / 2, W - 2, 1);
    } else {
        draw_plot(a, w, y, 1, ph, W - 2, 0);
    }
    wnoutrefresh(w);
}
