/* sacreBLEU's multi-system table (app/common/sig_table.h): cells of one or more lines, each line
 * aligned on its own, columns as wide as their widest line plus a space each side. */
#include "common/sig_table.h"

#include <stdlib.h>
#include <string.h>

#include "mtlab/error.h"
#include "mtlab/utf8.h"

#define CELL_LEN 128

/* display width of a line: its code points (every character here is one column wide) */
static size_t columns(const char *s, size_t n)
{
    size_t w = 0;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        i += (size_t)mt_utf8_next_lossy(s + i, n - i, &cp);
        w++;
    }
    return w;
}

/* line k of a cell ("" past its last), as a pointer and length */
static const char *cell_line(const char *cell, int k, size_t *len)
{
    const char *s = cell;
    for (int i = 0; i < k; i++) {
        const char *nl = strchr(s, '\n');
        if (!nl) {
            *len = 0;
            return "";
        }
        s = nl + 1;
    }
    const char *nl = strchr(s, '\n');
    *len = nl ? (size_t)(nl - s) : strlen(s);
    return s;
}

static int cell_lines(const char *cell)
{
    int n = 1;
    for (const char *s = cell; *s; s++) n += *s == '\n';
    return n;
}

static void rule(FILE *out, const size_t *w, size_t n_cols, const char *left, const char *fill,
                 const char *mid, const char *right)
{
    fputs(left, out);
    for (size_t c = 0; c < n_cols; c++) {
        for (size_t i = 0; i < w[c] + 2; i++) fputs(fill, out);
        fputs(c + 1 < n_cols ? mid : right, out);
    }
    fputc('\n', out);
}

/* one table row: column 0 right-aligned, the others centred (the odd space on the right) */
static void row(FILE *out, char (*cells)[CELL_LEN], const size_t *w, size_t n_cols)
{
    int height = 1;
    for (size_t c = 0; c < n_cols; c++)
        if (cell_lines(cells[c]) > height) height = cell_lines(cells[c]);
    for (int k = 0; k < height; k++) {
        fputs("│", out);
        for (size_t c = 0; c < n_cols; c++) {
            size_t len;
            const char *s = cell_line(cells[c], k, &len);
            size_t pad = w[c] - columns(s, len), left = c == 0 ? pad : pad / 2;
            fprintf(out, " %*s%.*s%*s │", (int)left, "", (int)len, s, (int)(pad - left), "");
        }
        fputc('\n', out);
    }
}

void sig_table_print(FILE *out, const char *const *systems, size_t n_sys, const char *const *names,
                     const mt_sig_result *const *results, size_t n_metrics, int width)
{
    size_t n_cols = n_metrics + 1;
    /* cells[(1 + s) * n_cols + c]: row 0 the header */
    char(*cells)[CELL_LEN] = mt_xmalloc((n_sys + 1) * n_cols * sizeof *cells);
    int bootstrap = n_metrics > 0 && results[0][0].has_ci;
    snprintf(cells[0], CELL_LEN, "System");
    for (size_t m = 0; m < n_metrics; m++)
        snprintf(cells[1 + m], CELL_LEN, bootstrap ? "%s (μ ± 95%% CI)" : "%s", names[m]);
    for (size_t s = 0; s < n_sys; s++) {
        char(*r)[CELL_LEN] = cells + (1 + s) * n_cols;
        snprintf(r[0], CELL_LEN, "%s%s", s == 0 ? "Baseline: " : "", systems[s]);
        for (size_t m = 0; m < n_metrics; m++) {
            const mt_sig_result *x = &results[m][s];
            int n = snprintf(r[1 + m], CELL_LEN, "%.*f", width, x->score);
            if (x->has_ci)
                n += snprintf(r[1 + m] + n, CELL_LEN - (size_t)n, " (%.*f ± %.*f)", width, x->mean,
                              width, x->ci);
            if (x->has_p)
                snprintf(r[1 + m] + n, CELL_LEN - (size_t)n, "\n(p = %.4f)%s", x->p,
                         x->p <= 0.05 ? "*" : "");
        }
    }
    size_t *w = calloc(n_cols, sizeof *w);
    for (size_t r = 0; r <= n_sys; r++)
        for (size_t c = 0; c < n_cols; c++) {
            const char *cell = cells[r * n_cols + c];
            for (int k = 0; k < cell_lines(cell); k++) {
                size_t len;
                const char *s = cell_line(cell, k, &len);
                if (columns(s, len) > w[c]) w[c] = columns(s, len);
            }
        }
    rule(out, w, n_cols, "╒", "═", "╤", "╕");
    row(out, cells, w, n_cols);
    rule(out, w, n_cols, "╞", "═", "╪", "╡");
    for (size_t s = 0; s < n_sys; s++) {
        if (s) rule(out, w, n_cols, "├", "─", "┼", "┤");
        row(out, cells + (1 + s) * n_cols, w, n_cols);
    }
    rule(out, w, n_cols, "╘", "═", "╧", "╛");
    free(w);
    free(cells);
}
