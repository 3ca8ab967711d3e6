/* Plots as CSV (RFC 4180): a header row, then the data; fields with a comma, quote or line
 * break are quoted, invalid UTF-8 bytes in labels become U+FFFD. Numbers are written with the
 * fewest digits that read back to the same value; a NaN, missing or undefined value is an
 * empty field. */
#include "plot/plot_internal.h"

#include "mtlab/error.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void csv_field(FILE *f, const char *text)
{
    char *clean = plot_utf8_clean(text);
    if (!strpbrk(clean, ",\"\r\n")) {
        fputs(clean, f);
    } else {
        fputc('"', f);
        for (const char *s = clean; *s; s++) {
            if (*s == '"') fputc('"', f);
            fputc(*s, f);
        }
        fputc('"', f);
    }
    free(clean);
}

static void csv_number(FILE *f, double v, int is_float)
{
    if (!isfinite(v)) return;
    char buf[40];
    for (int digits = 6; digits <= 17; digits++) {
        snprintf(buf, sizeof buf, "%.*g", digits, v);
        if (is_float ? strtof(buf, NULL) == (float)v : strtod(buf, NULL) == v) break;
    }
    fputs(buf, f);
}

int plot_csv_write(const plot *p, FILE *f)
{
    if (plot_check_drawable(p)) return -1;
    char buf[32];
    switch (p->kind) {
    case PLOT_LINE:
        fputs("series,x,y\n", f);
        for (size_t k = 0; k < p->n_series; k++)
            for (size_t i = 0; i < p->series[k].n; i++) {
                csv_field(f, plot_series_name(p, k, buf, sizeof buf));
                fputc(',', f);
                csv_number(f, p->series[k].x[i], 0);
                fputc(',', f);
                csv_number(f, p->series[k].y[i], 0);
                fputc('\n', f);
            }
        break;
    case PLOT_BAR:
        fputs("label", f);
        for (size_t k = 0; k < p->n_series; k++) {
            fputc(',', f);
            csv_field(f, plot_series_name(p, k, buf, sizeof buf));
        }
        fputc('\n', f);
        for (size_t i = 0; i < p->n_labels; i++) {
            csv_field(f, p->labels[i]);
            for (size_t k = 0; k < p->n_series; k++) {
                fputc(',', f);
                csv_number(f, p->series[k].y[i], 0);
            }
            fputc('\n', f);
        }
        break;
    case PLOT_HEATMAP:
        /* the corner names what the rows are */
        csv_field(f, p->y_label[0] ? p->y_label : "row");
        for (int c = 0; c < p->cols; c++) {
            fputc(',', f);
            csv_field(f, p->col_labels[c]);
        }
        fputc('\n', f);
        for (int r = 0; r < p->rows; r++) {
            csv_field(f, p->row_labels[r]);
            for (int c = 0; c < p->cols; c++) {
                size_t i = (size_t)r * p->cols + c;
                fputc(',', f);
                if (p->defined[i]) csv_number(f, p->v[i], 1);
            }
            fputc('\n', f);
        }
        break;
    }
    if (fflush(f) != 0 || ferror(f)) return mt_error("writing CSV failed: %s", strerror(errno));
    return 0;
}
