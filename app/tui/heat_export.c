/* The map a pane's heatmap shows, as data: its slice and title (for drawing), and its export
 * as SVG and PNG through app/plot's cairo renderer and as CSV, with the full token labels
 * and the masked cells left undefined (empty in the CSV, background in the images). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mtlab/error.h"
#include "plot/plot.h"
#include "tui/app.h"
#include "common/columns.h"

enum { PX_PER_CELL = 28, PX_MARGIN = 240, PX_MIN = 400, PX_MAX = 4096 };

float *tui_heat_pane_slice(const tui_pane *p, const mt_probe_map **map)
{
    *map = NULL;
    if (!p->probe) return NULL;
    return tui_heat_pick(&p->probe->rec, p->heat_kind, p->heat_nth, p->heat_head, map);
}

void tui_heat_title(char *out, size_t len, const tui_pane *p, const mt_probe_map *m,
                    const char *dot, int width)
{
    int count = tui_heat_count(&p->probe->rec, m->kind);
    /* the longest that fits: then without the segment, then heads and layers in short */
    for (int terse = 0; terse < 3; terse++) {
        char head[48] = "", where[64] = "", seg[24] = "";
        if (m->heads > 1 && p->heat_head < 0 && terse < 2)
            snprintf(head, sizeof head, " %s mean of %d heads", dot, m->heads);
        else if (m->heads > 1 && p->heat_head < 0)
            snprintf(head, sizeof head, " %s mean", dot);
        else if (m->heads > 1)
            snprintf(head, sizeof head, " %s %s%d/%d", dot, terse < 2 ? "head " : "h",
                     p->heat_head + 1, m->heads);
        if (m->layer >= 0 && terse < 2)
            snprintf(where, sizeof where, " %s %sL%d %d/%d", dot, m->encoder ? "encoder " : "",
                     m->layer, p->heat_nth + 1, count);
        else if (m->layer >= 0)
            snprintf(where, sizeof where, " %s %sL%d", dot, m->encoder ? "enc " : "", m->layer);
        if (terse == 0) snprintf(seg, sizeof seg, " %s seg %d", dot, p->probe_segment + 1);
        snprintf(out, len, "%s%s%s%s", mt_probe_map_name(m), where, head, seg);
        if (width <= 0 || tui_text_width_z(out) <= width) return;
    }
}

/* name with every character outside [A-Za-z0-9.+_-] turned into '-', runs folded. */
static void file_safe(char *out, size_t len, const char *name)
{
    size_t k = 0;
    for (const char *s = name; *s && k + 1 < len; s++) {
        int ok = (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
                 *s == '.' || *s == '+' || *s == '_';
        if (ok) out[k++] = *s;
        else if (k > 0 && out[k - 1] != '-') out[k++] = '-';
    }
    while (k > 0 && out[k - 1] == '-') k--;
    out[k] = '\0';
}

/* labels (n) of an axis, malloc'd strings */
static char **axis_labels(const tui_pane *p, mt_probe_axis axis, int n)
{
    char **l = mt_xmalloc((size_t)n * sizeof *l);
    for (int i = 0; i < n; i++) {
        char buf[256];
        tui_heat_axis_label(buf, sizeof buf, p->probe, axis, i);
        l[i] = mt_xstrdup(buf);
    }
    return l;
}

static void free_labels(char **l, int n)
{
    for (int i = 0; i < n; i++) free(l[i]);
    free(l);
}

static int px(int cells)
{
    int v = PX_MARGIN + cells * PX_PER_CELL;
    return v < PX_MIN ? PX_MIN : v > PX_MAX ? PX_MAX : v;
}

/* The base name "heatmap-PANE-MAP-L1-h2-seg1" plus "-N" when a file of that base exists. */
static void base_name(char *out, size_t len, const tui_pane *p, const mt_probe_map *m)
{
    char what[128], stem[224];
    snprintf(what, sizeof what, "%s-%s%s", p->name, m->encoder ? "encoder-" : "",
             mt_probe_map_name(m));
    char layer[16] = "", head[16] = "";
    if (m->layer >= 0) snprintf(layer, sizeof layer, "-L%d", m->layer);
    if (m->heads > 1 && p->heat_head >= 0) snprintf(head, sizeof head, "-h%d", p->heat_head + 1);
    char safe[128];
    file_safe(safe, sizeof safe, what);
    snprintf(stem, sizeof stem, "heatmap-%s%s%s-seg%d", safe, layer, head, p->probe_segment + 1);
    static const char *const ext[] = {".svg", ".png", ".csv"};
    for (int n = 1;; n++) {
        if (n == 1) snprintf(out, len, "%s", stem);
        else snprintf(out, len, "%s-%d", stem, n);
        int taken = 0;
        for (int e = 0; e < 3; e++) {
            char path[300];
            snprintf(path, sizeof path, "%s%s", out, ext[e]);
            taken |= access(path, F_OK) == 0;
        }
        if (!taken) return;
    }
}

void tui_heat_export(tui_app *a, tui_pane *p)
{
    const mt_probe_map *m;
    float *v = tui_heat_pane_slice(p, &m);
    if (!v) {
        tui_notice(a, "export: %s has no map to write yet", p->name);
        return;
    }
    uint8_t *mask = mt_xmalloc((size_t)m->rows * (size_t)m->cols);
    for (int r = 0; r < m->rows; r++)
        for (int c = 0; c < m->cols; c++) mask[(size_t)r * m->cols + c] = (uint8_t)mt_probe_masked(m, r, c);
    char **rows = axis_labels(p, m->row_axis, m->rows);
    char **cols = axis_labels(p, m->col_axis, m->cols);
    char title[256], heading[192];
    tui_heat_title(heading, sizeof heading, p, m, "\u00b7", 0);
    snprintf(title, sizeof title, "%s: %s", p->name, heading);
    const mt_probe_record *rec = &p->probe->rec;
    plot *pl = plot_heatmap_new(title, tui_heat_axis_name(rec, m->col_axis),
                                tui_heat_axis_name(rec, m->row_axis), v, m->rows, m->cols,
                                (const char *const *)rows, (const char *const *)cols, mask);
    char base[256], paths[3][300], cwd[512];
    base_name(base, sizeof base, p, m);
    static const char *const ext[] = {".svg", ".png", ".csv"};
    int rc = pl ? 0 : -1;
    for (int e = 0; e < 3 && rc == 0; e++) {
        snprintf(paths[e], sizeof paths[e], "%s%s", base, ext[e]);
        /* wide enough for the title (about 13 px a character) */
        int wpx = px(m->cols), tpx = 13 * (int)strlen(title) + 40;
        rc = plot_save(pl, paths[e], wpx > tpx ? wpx : tpx < PX_MAX ? tpx : PX_MAX, px(m->rows));
    }
    if (rc == 0) {
        if (!getcwd(cwd, sizeof cwd)) snprintf(cwd, sizeof cwd, ".");
        tui_notice(a, "wrote %s/%s.svg, .png and .csv", cwd, base);
    } else {
        tui_notice(a, "export failed: %s", mt_last_error());
    }
    plot_free(pl);
    free_labels(rows, m->rows);
    free_labels(cols, m->cols);
    free(mask);
    free(v);
}
