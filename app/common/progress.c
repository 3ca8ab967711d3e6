#include "common/progress.h"

#include "mtlab/clock.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#define REDRAW_SECONDS 0.1
#define DEFAULT_WIDTH 80

static int terminal_width(FILE *out)
{
    struct winsize ws;
    if (ioctl(fileno(out), TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 20) return ws.ws_col;
    return DEFAULT_WIDTH;
}

/* "1:02:03" or "2:03" */
static void format_duration(char *out, size_t len, double seconds)
{
    long s = seconds < 0 ? 0 : (long)(seconds + 0.5);
    if (s >= 3600) snprintf(out, len, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
    else snprintf(out, len, "%ld:%02ld", s / 60, s % 60);
}

void cli_progress_format(char *out, size_t out_len, const cli_progress *p, double now, int width)
{
    double elapsed = now - p->started;
    double rate = elapsed > 0 ? (double)p->done / elapsed : 0.0;
    char tail[256], eta[32] = "";
    if (p->total > 0 && rate > 0 && p->done < p->total) {
        char d[24];
        format_duration(d, sizeof d, (double)(p->total - p->done) / rate);
        snprintf(eta, sizeof eta, "  ETA %s", d);
    }
    if (p->total == 0) {
        snprintf(out, out_len, "%s  %zu  %.1f/s", p->label, p->done, rate);
        return;
    }
    size_t done = p->done < p->total ? p->done : p->total;
    int percent = (int)(100.0 * (double)done / (double)p->total);
    snprintf(tail, sizeof tail, " %3d%%  %zu/%zu  %.1f/s%s%s%s", percent, done, p->total, rate, eta,
             p->detail[0] ? "  " : "", p->detail);
    /* label, space, '[', bar, ']', tail must fit in width - 1 (no wrap on the last column) */
    int bar = width - 1 - (int)strlen(p->label) - 3 - (int)strlen(tail);
    if (bar < 10) {
        snprintf(out, out_len, "%s%s", p->label, tail);
        return;
    }
    char cells[512];
    if (bar > (int)sizeof cells - 1) bar = (int)sizeof cells - 1;
    int filled = (int)((double)bar * (double)done / (double)p->total);
    for (int i = 0; i < bar; i++) cells[i] = i < filled ? '=' : ' ';
    if (filled > 0 && filled < bar) cells[filled - 1] = '>';
    cells[bar] = '\0';
    snprintf(out, out_len, "%s [%s]%s", p->label, cells, tail);
}

static void draw(cli_progress *p, double now)
{
    char line[640];
    cli_progress_format(line, sizeof line, p, now, terminal_width(p->out));
    fprintf(p->out, "\r%s\033[K", line);
    fflush(p->out);
    p->drawn = 1;
    p->last_draw = now;
}

void cli_progress_start(cli_progress *p, const char *label, size_t total)
{
    memset(p, 0, sizeof *p);
    p->out = stderr;
    snprintf(p->label, sizeof p->label, "%s", label);
    p->total = total;
    p->started = mt_now_s();
    p->interactive = isatty(fileno(p->out));
    if (p->interactive) draw(p, p->started);
}

void cli_progress_update(cli_progress *p, size_t done)
{
    p->done = done;
    if (!p->interactive) return;
    double now = mt_now_s();
    if (now - p->last_draw >= REDRAW_SECONDS || (p->total && done >= p->total)) draw(p, now);
}

void cli_progress_detail(cli_progress *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->detail, sizeof p->detail, fmt, ap);
    va_end(ap);
}

void cli_progress_clear(cli_progress *p)
{
    if (p->drawn) fprintf(p->out, "\r\033[K");
    fflush(p->out);
    p->drawn = 0;
}

void cli_progress_finish(cli_progress *p, const char *summary)
{
    cli_progress_clear(p);
    if (summary)
        fprintf(p->out, "%s: %s (%zu in %.1f s)\n", p->label, summary, p->done,
                mt_now_s() - p->started);
    fflush(p->out);
    p->drawn = 0;
}
