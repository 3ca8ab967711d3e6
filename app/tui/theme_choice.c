/* Which theme the workbench shows: the themes/ files, the one --theme names (before curses, so
 * a bad name is a plain error message), the terminal's colour level, and switching themes
 * while it runs. */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/paths.h"
#include "mtlab/error.h"
#include "tui/app.h"

static int cmp_str(const void *x, const void *y)
{
    return strcmp(*(const char *const *)x, *(const char *const *)y);
}

/* themes/ *.theme, sorted by name. */
void tui_find_themes(tui_app *a)
{
    char dir[PATH_MAX];
    if (cli_find_resource("themes", dir, sizeof dir) != 0) return;
    DIR *d = opendir(dir);
    if (!d) return;
    int cap = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t n = strlen(e->d_name);
        if (n <= 6 || strcmp(e->d_name + n - 6, ".theme") != 0) continue;
        if (a->n_themes == cap) {
            cap = cap ? 2 * cap : 8;
            a->theme_names = mt_xrealloc(a->theme_names, (size_t)cap * sizeof *a->theme_names);
        }
        char path[PATH_MAX + NAME_MAX + 2];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        a->theme_names[a->n_themes++] = mt_xstrdup(path);
    }
    closedir(d);
    if (a->n_themes > 1)
        qsort(a->theme_names, (size_t)a->n_themes, sizeof *a->theme_names, cmp_str);
}

/* The index of a theme by name (file name without .theme), or -1. */
static int theme_index(const tui_app *a, const char *name)
{
    for (int i = 0; i < a->n_themes; i++) {
        const char *base = strrchr(a->theme_names[i], '/');
        base = base ? base + 1 : a->theme_names[i];
        size_t n = strlen(base) - 6;
        if (strlen(name) == n && !strncmp(base, name, n)) return i;
    }
    return -1;
}

/* Start colours when the terminal has them (COLORS is known only after start_color). */
tui_color_level tui_start_colors(void)
{
    if (!has_colors()) return TUI_COLORS_NONE;
    start_color();
    use_default_colors();
    return tui_color_level_detect(1, COLORS, tigetflag("RGB"), getenv("NO_COLOR"));
}

int tui_apply_theme(tui_app *a, int index)
{
    tui_theme t;
    if (tui_theme_load(&t, a->theme_names[index]) != 0) {
        tui_notice(a, "%s", mt_last_error());
        return -1;
    }
    a->theme = t;
    a->theme_index = index;
    tui_palette_build(&a->palette, &a->theme, a->palette.level);
    tui_notice(a, "theme %s (%d of %d, %s%s; F9: next)", t.name, index + 1, a->n_themes,
               tui_color_level_name(a->palette.level),
               getenv("NO_COLOR") && getenv("NO_COLOR")[0] ? ", NO_COLOR is set" : "");
    clearok(curscr, TRUE);
    a->dirty = 1;
    return 0;
}

/* The theme to start with, before curses (so a bad --theme is a plain error message). */
int tui_choose_theme(tui_app *a, const char *want, int *index)
{
    *index = -1;
    if (want && (strchr(want, '/') || strstr(want, ".theme"))) {
        char **grown = mt_xrealloc(a->theme_names, (size_t)(a->n_themes + 1) * sizeof *grown);
        a->theme_names = grown;
        a->theme_names[a->n_themes] = mt_xstrdup(want);
        *index = a->n_themes++;
    } else {
        const char *name = want ? want : TUI_DEFAULT_THEME;
        *index = theme_index(a, name);
        if (*index < 0 && want) {
            char known[512] = "";
            for (int i = 0; i < a->n_themes; i++) {
                const char *base = strrchr(a->theme_names[i], '/');
                base = base ? base + 1 : a->theme_names[i];
                snprintf(known + strlen(known), sizeof known - strlen(known), "%s%.*s",
                         i ? ", " : "", (int)strlen(base) - 6, base);
            }
            return mt_error("no theme '%s' (themes: %s)", want, a->n_themes ? known : "none found");
        }
    }
    if (*index >= 0 && tui_theme_load(&a->theme, a->theme_names[*index]) != 0) return -1;
    if (*index < 0) tui_theme_plain(&a->theme, "plain");
    return 0;
}
