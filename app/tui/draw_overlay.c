/* Overlays: the F1 help (generated from the key table) and the bundle picker. */
#include <stdio.h>
#include <string.h>

#include "tui/app.h"
#include "tui/glyphs.h"
#include "tui/styled.h"

static void frame(tui_app *a, WINDOW *w, const char *title, const char *footer)
{
    werase(w);
    tui_set_style(w, &a->palette, TUI_C_FOCUS);
    box(w, 0, 0);
    tui_put(w, 0, 2, title, getmaxx(w) - 4);
    tui_set_style(w, &a->palette, TUI_C_DIM);
    tui_put(w, getmaxy(w) - 1, 2, footer, getmaxx(w) - 4);
}

static void draw_help(tui_app *a, WINDOW *w)
{
    frame(a, w, " mtlab workbench: keys ", " Esc or F1 closes; Up/Down scroll ");
    int n;
    char **lines = tui_help_lines(&n);
    int h = getmaxy(w) - 2, width = getmaxx(w) - 4;
    if (a->help_scroll > n - h) a->help_scroll = n - h > 0 ? n - h : 0;
    for (int y = 0; y < h && a->help_scroll + y < n; y++) {
        const char *l = lines[a->help_scroll + y];
        tui_set_style(w, &a->palette, l[0] != ' ' ? TUI_C_TITLE : TUI_C_TEXT);
        tui_put(w, 1 + y, 2, l, width);
    }
    tui_lines_free(lines, n);
}

static void draw_picker(tui_app *a, WINDOW *w)
{
    char title[64];
    snprintf(title, sizeof title, " model bundles (%d/%d panes) ", a->n_panes, TUI_MAX_PANES);
    frame(a, w, title,
          " type a bundle or references-file path (~ is home) or pick; Enter toggles ");
    int h = getmaxy(w) - 2, width = getmaxx(w) - 4;
    char line[1200];
    snprintf(line, sizeof line, "path: %s%s", a->picker_path, a->picker_sel < 0 ? "_" : "");
    tui_set_style(w, &a->palette, a->picker_sel < 0 ? TUI_C_SELECTION : TUI_C_TEXT);
    if (a->picker_sel < 0) mvwhline(w, 1, 1, ' ', getmaxx(w) - 2);
    tui_put(w, 1, 2, line, width);
    if (a->n_picker == 0) {
        tui_set_style(w, &a->palette, TUI_C_DIM);
        tui_put(
            w, 2, 2,
            "No bundles found: put bundle directories (config.json, model.safetensors, "
            "tokenizer.model) under models/, type a path above, or start with `mtlab tui -m DIR`.",
            width);
        return;
    }
    int rows = h - 1;
    int first = a->picker_sel >= rows ? a->picker_sel - rows + 1 : 0;
    for (int y = 0; y < rows && first + y < a->n_picker; y++) {
        int i = first + y, open = 0;
        for (int k = 0; k < a->n_panes; k++) open |= !strcmp(a->panes[k]->dir, a->picker_dirs[i]);
        snprintf(line, sizeof line, "[%c] %s", open ? 'x' : ' ', a->picker_dirs[i]);
        tui_set_style(w, &a->palette, i == a->picker_sel ? TUI_C_SELECTION : TUI_C_TEXT);
        if (i == a->picker_sel) mvwhline(w, 2 + y, 1, ' ', getmaxx(w) - 2);
        tui_put(w, 2 + y, 2, line, width);
    }
}

void tui_draw_overlay(tui_app *a, WINDOW *w)
{
    if (a->overlay == TUI_OVERLAY_HELP) draw_help(a, w);
    else draw_picker(a, w);
}
