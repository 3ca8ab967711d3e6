/* The bundle picker: the bundles under models/, those named with -m and the open panes, each
 * marked when open; choosing one opens or closes its pane. */
#include <dirent.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/paths.h"
#include "mtlab/error.h"
#include "mtlab/metrics.h"
#include "tui/app.h"

/* The bundle name on one line of panes.txt: the text before any '#', without the blanks around
 * it; "" for a blank or comment line. Cuts line in place. */
static const char *pane_name(char *line)
{
    char *hash = strchr(line, '#');
    if (hash) *hash = 0;
    char *b = line + strspn(line, " \t"), *e = b + strlen(b);
    while (e > b && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r')) e--;
    *e = 0;
    return b;
}

static int cmp_str(const void *x, const void *y)
{
    return strcmp(*(const char *const *)x, *(const char *const *)y);
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* The first problem found goes to problem (when there is room for it); later ones are dropped. */
static void report(char *problem, size_t plen, const char *fmt, ...)
{
    if (!problem || !plen || problem[0]) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(problem, plen, fmt, ap);
    va_end(ap);
}

int tui_default_bundles(char ***dirs, const char *where, char *models_dir, size_t len, char *problem,
                        size_t plen)
{
    char root[PATH_MAX];
    *dirs = NULL;
    if (problem && plen) problem[0] = 0;
    if (where) snprintf(root, sizeof root, "%s", where);
    else if (cli_find_resource("models", root, sizeof root) != 0) snprintf(root, sizeof root, "models");
    if (models_dir) snprintf(models_dir, len, "%s", root);
    DIR *d = opendir(root);
    if (!d) return 0;
    int n = 0, cap = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        char path[PATH_MAX], config[PATH_MAX + 16];
        snprintf(path, sizeof path, "%s/%s", root, e->d_name);
        snprintf(config, sizeof config, "%s/config.json", path);
        struct stat st;
        if (stat(config, &st) != 0 || !S_ISREG(st.st_mode)) continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 8;
            *dirs = mt_xrealloc(*dirs, (size_t)cap * sizeof **dirs);
        }
        (*dirs)[n++] = mt_xstrdup(path);
    }
    closedir(d);
    if (n > 1) qsort(*dirs, (size_t)n, sizeof **dirs, cmp_str);
    /* The bundles root/panes.txt lists (when it exists) move to the front in its order; the rest
     * stay sorted. */
    char order_path[PATH_MAX + 16];
    snprintf(order_path, sizeof order_path, "%s/panes.txt", root);
    mt_text_lines order = {0};
    if (access(order_path, F_OK) == 0 && mt_text_lines_read(&order, order_path) != 0)
        report(problem, plen, "%s", mt_last_error());
    for (size_t i = 0, front = 0; i < order.n; i++) {
        const char *name = pane_name(order.lines[i]);
        if (!name[0]) continue;
        size_t k = front;
        while (k < (size_t)n && strcmp(base_name((*dirs)[k]), name)) k++;
        if (k < (size_t)n) {
            char *moved = (*dirs)[k];
            memmove(*dirs + front + 1, *dirs + front, (k - front) * sizeof **dirs);
            (*dirs)[front++] = moved;
        } else {
            report(problem, plen, "%s:%zu names '%s', which is not a bundle there (or is listed twice)",
                   order_path, i + 1, name);
        }
    }
    mt_text_lines_free(&order);
    return n;
}

void tui_picker_free(tui_app *a)
{
    for (int i = 0; i < a->n_picker; i++) free(a->picker_dirs[i]);
    free(a->picker_dirs);
    a->picker_dirs = NULL;
    a->n_picker = 0;
}

static void add_candidate(tui_app *a, const char *dir, int *cap)
{
    for (int i = 0; i < a->n_picker; i++)
        if (!strcmp(a->picker_dirs[i], dir)) return;
    if (a->n_picker == *cap) {
        *cap = *cap ? 2 * *cap : 8;
        a->picker_dirs = mt_xrealloc(a->picker_dirs, (size_t)*cap * sizeof *a->picker_dirs);
    }
    a->picker_dirs[a->n_picker++] = mt_xstrdup(dir);
}

void tui_picker_open(tui_app *a)
{
    tui_picker_free(a);
    int cap = 0;
    for (int i = 0; i < a->n_panes; i++) add_candidate(a, a->panes[i]->dir, &cap);
    for (int i = 0; i < a->n_known; i++) add_candidate(a, a->known_dirs[i], &cap);
    char **defaults;
    int n = tui_default_bundles(&defaults, a->models_root, NULL, 0, NULL, 0);
    for (int i = 0; i < n; i++) {
        add_candidate(a, defaults[i], &cap);
        free(defaults[i]);
    }
    free(defaults);
    a->picker_sel = 0;
    a->overlay = TUI_OVERLAY_PICKER;
    a->dirty = 1;
}

void tui_picker_choose(tui_app *a)
{
    if (a->overlay != TUI_OVERLAY_PICKER || a->picker_sel >= a->n_picker) return;
    const char *dir = a->picker_dirs[a->picker_sel];
    for (int i = 0; i < a->n_panes; i++)
        if (!strcmp(a->panes[i]->dir, dir)) {
            tui_pane_remove(a, i);
            return;
        }
    if (tui_pane_add(a, dir, a->default_device, a->default_int8) != 0) tui_notice(a, "%s", mt_last_error());
}
