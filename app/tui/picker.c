/* The bundle picker: a line to type any bundle's path, then the bundles under models/, those
 * named with -m and the open panes, each marked when open; choosing one opens or closes its
 * pane. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/paths.h"
#include "mtlab/error.h"
#include "mtlab/metrics.h"
#include "mtlab/utf8.h"
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

int tui_default_bundles(char ***dirs, const char *where, char *models_dir, size_t len,
                        char *problem, size_t plen)
{
    char root[PATH_MAX];
    *dirs = NULL;
    if (problem && plen) problem[0] = 0;
    if (where) snprintf(root, sizeof root, "%s", where);
    else if (cli_find_resource("models", root, sizeof root) != 0)
        snprintf(root, sizeof root, "models");
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
            report(problem, plen,
                   "%s:%zu names '%s', which is not a bundle there (or is listed twice)",
                   order_path, i + 1, name);
        }
    }
    mt_text_lines_free(&order);
    return n;
}

int tui_bundle_path(const char *typed, char *out, size_t len)
{
    char path[PATH_MAX];
    size_t b = strspn(typed, " "), e = strlen(typed);
    while (e > b && typed[e - 1] == ' ') e--;
    if (e == b) return mt_error("type the path of a model bundle (a directory with config.json)");
    const char *t = typed + b;
    int n = (int)(e - b);
    const char *home = getenv("HOME");
    if (t[0] == '~' && (n == 1 || t[1] == '/')) {
        if (!home || !home[0]) return mt_error("%.*s: HOME is not set, so ~ means nothing", n, t);
        snprintf(path, sizeof path, "%s%.*s", home, n - 1, t + 1);
    } else {
        snprintf(path, sizeof path, "%.*s", n, t);
    }
    struct stat st;
    if (stat(path, &st) != 0) return mt_error("%s: %s", path, strerror(errno));
    size_t plen = strlen(path);
    if (S_ISREG(st.st_mode) && plen >= 11 && !strcmp(path + plen - 11, "config.json")) {
        char *slash = strrchr(path, '/');
        if (slash) *slash = '\0';
        else snprintf(path, sizeof path, ".");
    } else if (!S_ISDIR(st.st_mode)) {
        return mt_error("%s: not a directory (a model bundle is a directory with config.json, "
                        "model.safetensors and tokenizer.model)",
                        path);
    }
    char config[PATH_MAX + 16];
    snprintf(config, sizeof config, "%s/config.json", path);
    if (stat(config, &st) != 0 || !S_ISREG(st.st_mode))
        return mt_error("%s: no config.json there, so it is no model bundle (one holds "
                        "config.json, model.safetensors and tokenizer.model)",
                        path);
    snprintf(out, len, "%s", path);
    return 0;
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
    a->picker_sel = a->n_picker > 0 ? 0 : -1;
    a->picker_path[0] = '\0';
    a->overlay = TUI_OVERLAY_PICKER;
    a->dirty = 1;
}

/* Open the bundle at the typed path (a notice says what is wrong with a bad one); a text
 * file typed there (not a bundle's config.json) is loaded as the segments' references. */
static void open_typed(tui_app *a)
{
    char dir[PATH_MAX];
    struct stat st;
    size_t len = strlen(a->picker_path);
    if (stat(a->picker_path, &st) == 0 && S_ISREG(st.st_mode) &&
        !(len >= 11 && !strcmp(a->picker_path + len - 11, "config.json"))) {
        if (tui_refs_load(a, a->picker_path) != 0) {
            tui_notice(a, "%s", mt_last_error());
            return;
        }
        tui_notice(a, "references: %zu lines from %s, scored in every pane", a->refs.n,
                   a->picker_path);
        tui_picker_free(a);
        a->overlay = TUI_OVERLAY_NONE;
        return;
    }
    if (tui_bundle_path(a->picker_path, dir, sizeof dir) != 0) {
        tui_notice(a, "%s", mt_last_error());
        return;
    }
    for (int i = 0; i < a->n_panes; i++)
        if (!strcmp(a->panes[i]->dir, dir)) {
            tui_notice(a, "%s is open already (pane %d)", dir, i + 1);
            return;
        }
    if (tui_pane_add(a, dir, a->default_device, a->default_precision) != 0) {
        tui_notice(a, "%s", mt_last_error());
        return;
    }
    tui_picker_free(a);
    a->overlay = TUI_OVERLAY_NONE;
}

void tui_picker_type(tui_app *a, int ch)
{
    size_t n = strlen(a->picker_path);
    a->picker_sel = -1;
    if (ch == '\b') {
        while (n > 0 && ((unsigned char)a->picker_path[n - 1] & 0xC0) == 0x80) n--;
        if (n > 0) n--;
        a->picker_path[n] = '\0';
    } else {
        char buf[4];
        int k = mt_utf8_put((uint32_t)ch, buf);
        if (ch >= 0x20 && k > 0 && n + (size_t)k < sizeof a->picker_path) {
            memcpy(a->picker_path + n, buf, (size_t)k);
            a->picker_path[n + (size_t)k] = '\0';
        }
    }
    a->dirty = 1;
}

void tui_picker_choose(tui_app *a)
{
    if (a->overlay != TUI_OVERLAY_PICKER) return;
    if (a->picker_sel < 0) {
        open_typed(a);
        return;
    }
    if (a->picker_sel >= a->n_picker) return;
    const char *dir = a->picker_dirs[a->picker_sel];
    for (int i = 0; i < a->n_panes; i++)
        if (!strcmp(a->panes[i]->dir, dir)) {
            tui_pane_remove(a, i);
            return;
        }
    if (tui_pane_add(a, dir, a->default_device, a->default_precision) != 0)
        tui_notice(a, "%s", mt_last_error());
}
