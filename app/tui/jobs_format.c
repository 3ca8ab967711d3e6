/* The jobs view's pure pieces: the ETA from the recent rate, the progress bar, the list's
 * columns. No curses, no files: tests/unit/test_tui_jobs.c checks them alone. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/columns.h"
#include "tui/format.h"
#include "tui/jobs_view.h"

double tui_job_eta_s(const double *step, const double *elapsed, size_t n, long max_steps)
{
    if (n < 2) return -1;
    size_t last = n - 1, first = last;
    /* back through the window while the clock runs forward (a resumed run restarts it) */
    while (first > 0 && elapsed[first - 1] <= elapsed[first] &&
           elapsed[last] - elapsed[first - 1] <= TUI_JOBS_ETA_WINDOW_S)
        first--;
    if (first == last && last > 0 && elapsed[last - 1] <= elapsed[last]) first = last - 1;
    double dt = elapsed[last] - elapsed[first], ds = step[last] - step[first];
    if (step[last] >= (double)max_steps) return 0;
    if (dt <= 0 || ds <= 0) return -1;
    return ((double)max_steps - step[last]) / (ds / dt);
}

void tui_format_eta(char *out, size_t len, double s)
{
    if (s < 0) {
        snprintf(out, len, "-");
        return;
    }
    long t = (long)(s + 0.5);
    if (t < 60) snprintf(out, len, "%lds", t);
    else if (t < 3600) snprintf(out, len, "%ldm%02lds", t / 60, t % 60);
    else if (t < 86400) snprintf(out, len, "%ldh%02ldm", t / 3600, t % 3600 / 60);
    else snprintf(out, len, "%ldd%02ldh", t / 86400, t % 86400 / 3600);
}

/* U+258F..U+2589: a cell filled 1/8 .. 7/8 from the left; U+2588 full; U+2591 light shade */
static const char *const eighths[] = {"\xe2\x96\x8f", "\xe2\x96\x8e", "\xe2\x96\x8d",
                                      "\xe2\x96\x8c", "\xe2\x96\x8b", "\xe2\x96\x8a",
                                      "\xe2\x96\x89"};

void tui_progress_bar(char *out, size_t len, long done, long total, int width, int ascii)
{
    size_t at = 0;
    out[0] = '\0';
    if (width <= 0) return;
    if (done < 0) done = 0;
    if (total > 0 && done > total) done = total;
    long e = total > 0 ? done * 8L * width / total : 0; /* eighths of a cell */
    if (ascii) e = e / 8 * 8;
    for (int c = 0; c < width; c++) {
        long fill = e - 8L * c;
        const char *g = fill >= 8  ? (ascii ? "#" : "\xe2\x96\x88")
                        : fill > 0 ? eighths[fill - 1]
                        : ascii    ? "-"
                                   : "\xe2\x96\x91";
        size_t gl = strlen(g);
        if (at + gl + 1 > len) break;
        memcpy(out + at, g, gl + 1);
        at += gl;
    }
}

void tui_job_columns(tui_job_cols *c, const job_info *j, double eta_s)
{
    snprintf(c->state, sizeof c->state, "%s", job_state_name(j->state));
    c->state_meaning = j->state == JOB_FAILED || j->state == JOB_BROKEN ? TUI_C_ERROR
                       : j->state == JOB_RUNNING                        ? TUI_C_BUSY
                       : j->state == JOB_COMPLETED                      ? TUI_C_DONE
                                                                        : TUI_C_DIM;
    snprintf(c->ranks, sizeof c->ranks, "%d", j->ranks > 1 ? j->ranks : 1);
    if (j->max_steps > 0)
        snprintf(c->steps, sizeof c->steps, "%ld/%ld", job_shown_step(j), j->max_steps);
    else snprintf(c->steps, sizeof c->steps, "%ld", job_shown_step(j));
    if (j->tokens_per_s > 0)
        tui_format_count(c->tokens_per_s, sizeof c->tokens_per_s, (size_t)(j->tokens_per_s + 0.5));
    else snprintf(c->tokens_per_s, sizeof c->tokens_per_s, "-");
    tui_format_eta(c->eta, sizeof c->eta, j->state == JOB_RUNNING ? eta_s : -1);
    if (j->valid_bleu >= 0) snprintf(c->bleu, sizeof c->bleu, "%.2f", j->valid_bleu);
    else snprintf(c->bleu, sizeof c->bleu, "-");
}

void tui_job_curves_free(tui_job_curves *c)
{
    free(c->step);
    free(c->loss);
    free(c->elapsed);
    free(c->valid_step);
    free(c->bleu);
    memset(c, 0, sizeof *c);
}

void tui_job_runs_free(tui_job_run *runs, size_t n)
{
    for (size_t i = 0; i < n; i++) tui_job_curves_free(&runs[i].curves);
    free(runs);
}
