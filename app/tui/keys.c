#include "tui/keys.h"

#include <curses.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mtlab/error.h"

#define F(n) TUI_FKEY(KEY_F(n))
#define K(k) TUI_FKEY(k)
#define PANES (TUI_IN_PANE | TUI_IN_HEATMAP)
#define SCROLLS (PANES | TUI_IN_OVERLAY | TUI_IN_LOG)
#define JOBS TUI_IN_JOBS

/* Every function key but F1 has a Ctrl key beside it, for laptops where F-keys need Fn.
 * Order matters twice: the help lists sections and lines in this order, and the status line
 * shows the hints in this order. */
const tui_binding tui_bindings[] = {
    {{F(1)}, TUI_IN_ANY, TUI_ACT_HELP, "Workbench", "show or hide this help", "help"},
    {{TUI_CTRL('q'), F(10), TUI_CTRL('c')},
     TUI_IN_ANY,
     TUI_ACT_QUIT,
     "Workbench",
     "quit (the terminal is restored)",
     "quit"},
    {{TUI_CTRL('r')},
     TUI_IN_ANY,
     TUI_ACT_TRANSLATE,
     "Workbench",
     "translate now (also starts 0.5 s after typing stops)",
     "translate"},
    {{'\t'},
     (TUI_IN_ANY & ~TUI_IN_OVERLAY) | TUI_IN_LOG,
     TUI_ACT_FOCUS_NEXT,
     "Workbench",
     "focus the next pane (editor, models, log, editor...)",
     "focus"},
    {{K(KEY_BTAB)},
     (TUI_IN_ANY & ~TUI_IN_OVERLAY) | TUI_IN_LOG,
     TUI_ACT_FOCUS_PREV,
     "Workbench",
     "focus the previous pane",
     NULL},
    {{F(2), TUI_CTRL('w')},
     TUI_IN_ANY,
     TUI_ACT_LOG,
     "Workbench",
     "show or hide the log (loads, errors, timings)",
     "log"},
    {{F(3), TUI_CTRL('v')},
     TUI_IN_ANY & ~TUI_IN_OVERLAY,
     TUI_ACT_HEATMAP,
     "Workbench",
     "focused pane (all from the editor): text or heatmap",
     "heatmap"},
    {{F(4), TUI_CTRL('b')},
     TUI_IN_ANY & ~TUI_IN_OVERLAY,
     TUI_ACT_BEAM,
     "Workbench",
     "focused pane (all from the editor): greedy or beam 5",
     "beam"},
    {{TUI_CTRL('f')},
     TUI_IN_ANY & ~TUI_IN_OVERLAY,
     TUI_ACT_LANGUAGE,
     "Workbench",
     "editor's language: the panes' next source language",
     NULL},
    {{F(5), TUI_CTRL('p')},
     TUI_IN_ANY,
     TUI_ACT_PICKER,
     "Workbench",
     "bundle picker: add or remove model panes",
     "models"},
    {{F(11), TUI_CTRL('g')},
     TUI_IN_ANY | JOBS,
     TUI_ACT_JOBS,
     "Workbench",
     "training jobs under runs/: launch, watch, stop, resume",
     "jobs"},
    {{TUI_CTRL('o')},
     TUI_IN_ANY,
     TUI_ACT_CONSOLE,
     "Workbench",
     "Lua console: open (it takes the keys) or close",
     "console"},
    {{F(9), TUI_CTRL('t')},
     TUI_IN_ANY,
     TUI_ACT_THEME,
     "Workbench",
     "next colour theme (themes/*.theme)",
     "theme"},
    {{TUI_CTRL('s')},
     TUI_IN_ANY,
     TUI_ACT_SAVE,
     "Workbench",
     "save source + translations (.tsv, .jsonl) here",
     "save"},
    {{TUI_CTRL('l')}, TUI_IN_ANY, TUI_ACT_REDRAW, "Workbench", "redraw the screen", NULL},
    {{TUI_ESC},
     TUI_IN_OVERLAY,
     TUI_ACT_CLOSE,
     "Workbench",
     "close the help or the picker",
     "close"},
    {{TUI_ESC}, PANES | TUI_IN_LOG, TUI_ACT_CLOSE, "Workbench", "back to the editor", NULL},

    {{'\r', '\n', K(KEY_ENTER)},
     TUI_IN_EDITOR,
     TUI_ACT_NEWLINE,
     "Editor",
     "new line (each non-blank line is one segment)",
     NULL},
    {{K(KEY_BACKSPACE), 127, TUI_CTRL('h')},
     TUI_IN_EDITOR,
     TUI_ACT_BACKSPACE,
     "Editor",
     "delete the character before the cursor",
     NULL},
    {{K(KEY_DC)},
     TUI_IN_EDITOR,
     TUI_ACT_DELETE,
     "Editor",
     "delete the character under the cursor",
     NULL},
    {{K(KEY_LEFT)}, TUI_IN_EDITOR, TUI_ACT_LEFT, "Editor", "cursor left", NULL},
    {{K(KEY_RIGHT)}, TUI_IN_EDITOR, TUI_ACT_RIGHT, "Editor", "cursor right", NULL},
    {{K(KEY_UP)}, TUI_IN_EDITOR, TUI_ACT_UP, "Editor", "cursor up a row", NULL},
    {{K(KEY_DOWN)}, TUI_IN_EDITOR, TUI_ACT_DOWN, "Editor", "cursor down a row", NULL},
    {{K(KEY_HOME), TUI_CTRL('a')},
     TUI_IN_EDITOR,
     TUI_ACT_HOME,
     "Editor",
     "start of the line",
     NULL},
    {{K(KEY_END), TUI_CTRL('e')}, TUI_IN_EDITOR, TUI_ACT_END, "Editor", "end of the line", NULL},
    {{TUI_CTRL('u')}, TUI_IN_EDITOR, TUI_ACT_CLEAR, "Editor", "clear the editor", NULL},

    {{K(KEY_UP)},
     SCROLLS & ~TUI_IN_HEATMAP,
     TUI_ACT_SCROLL_UP,
     "Panes, log and overlays",
     "scroll up (overlays: move the highlight)",
     NULL},
    {{K(KEY_DOWN)},
     SCROLLS & ~TUI_IN_HEATMAP,
     TUI_ACT_SCROLL_DOWN,
     "Panes, log and overlays",
     "scroll down (overlays: move the highlight)",
     NULL},
    {{K(KEY_PPAGE)},
     SCROLLS,
     TUI_ACT_PAGE_UP,
     "Panes, log and overlays",
     "page up (heatmap: the cursor up 10 rows)",
     NULL},
    {{K(KEY_NPAGE)}, SCROLLS, TUI_ACT_PAGE_DOWN, "Panes, log and overlays", "page down", NULL},
    {{'\r', '\n', K(KEY_ENTER)},
     TUI_IN_OVERLAY,
     TUI_ACT_CHOOSE,
     "Panes, log and overlays",
     "picker: open the typed path, add or remove a bundle",
     "add/remove"},
    {{K(KEY_BACKSPACE), 127, TUI_CTRL('h')},
     TUI_IN_OVERLAY,
     TUI_ACT_BACKSPACE,
     "Panes, log and overlays",
     "picker: delete the last character of the typed path",
     NULL},

    {{F(6), TUI_CTRL('k')},
     TUI_IN_HEATMAP,
     TUI_ACT_HEAT_KIND,
     "Heatmap",
     "next map: state norms, attention, implicit, attribution",
     "map"},
    {{F(7), TUI_CTRL('y')}, TUI_IN_HEATMAP, TUI_ACT_HEAT_LAYER, "Heatmap", "next layer", "layer"},
    {{F(8), TUI_CTRL('d')},
     TUI_IN_HEATMAP,
     TUI_ACT_HEAT_HEAD,
     "Heatmap",
     "next head, or the mean of the heads",
     "head"},
    {{F(12), TUI_CTRL('n')},
     TUI_IN_HEATMAP,
     TUI_ACT_HEAT_NORM,
     "Heatmap",
     "scale: raw (shared by the panes), per row, log",
     "scale"},
    {{'z'},
     TUI_IN_HEATMAP,
     TUI_ACT_ZOOM,
     "Heatmap",
     "zoom: the pane over the whole screen, and back",
     "zoom"},
    {{'e'},
     TUI_IN_HEATMAP,
     TUI_ACT_HEAT_EXPORT,
     "Heatmap",
     "export the map: SVG, PNG and CSV in this directory",
     "export"},
    {{'m'},
     TUI_IN_HEATMAP,
     TUI_ACT_HEAT_METHOD,
     "Heatmap",
     "attribution: saliency, input x grad., integrated grad.",
     NULL},
    {{'c'},
     TUI_IN_HEATMAP,
     TUI_ACT_HEAT_CONTRAST,
     "Heatmap",
     "attribution vs the cursor column's token (again: none)",
     NULL},
    {{K(KEY_LEFT)},
     TUI_IN_HEATMAP,
     TUI_ACT_CURSOR_LEFT,
     "Heatmap",
     "cursor to the column before (marked, named below)",
     NULL},
    {{K(KEY_RIGHT)},
     TUI_IN_HEATMAP,
     TUI_ACT_CURSOR_RIGHT,
     "Heatmap",
     "cursor to the next column",
     NULL},
    {{K(KEY_UP)}, TUI_IN_HEATMAP, TUI_ACT_CURSOR_UP, "Heatmap", "cursor to the row above", NULL},
    {{K(KEY_DOWN)},
     TUI_IN_HEATMAP,
     TUI_ACT_CURSOR_DOWN,
     "Heatmap",
     "cursor to the row below",
     NULL},

    {{'n'},
     JOBS,
     TUI_ACT_JOB_NEW,
     "Jobs view",
     "launch: pick a config from scripts/train/ or type a path",
     "new"},
    {{'\r', '\n', K(KEY_ENTER)},
     JOBS,
     TUI_ACT_CHOOSE,
     "Jobs view",
     "picker: launch the config (a bad one launches nothing)",
     NULL},
    {{'s', 'l'},
     JOBS,
     TUI_ACT_JOB_LAUNCHER,
     "Jobs view",
     "launcher: local or slurm (when sbatch is on PATH)",
     NULL},
    {{'x'},
     JOBS,
     TUI_ACT_JOB_STOP,
     "Jobs view",
     "stop the highlighted run (checkpoint, then exit)",
     "stop"},
    {{'r'},
     JOBS,
     TUI_ACT_JOB_RESUME,
     "Jobs view",
     "resume the highlighted run from its checkpoint",
     "resume"},
    {{'o'},
     JOBS,
     TUI_ACT_JOB_OPEN,
     "Jobs view",
     "open the highlighted run's best bundle in a model pane",
     "open"},
    {{'a'}, JOBS, TUI_ACT_JOB_PLOTS, "Jobs view", "plots: the highlighted run or every run", "all"},
    {{K(KEY_UP)},
     JOBS,
     TUI_ACT_SCROLL_UP,
     "Jobs view",
     "highlight the run (or config) above",
     NULL},
    {{K(KEY_DOWN)},
     JOBS,
     TUI_ACT_SCROLL_DOWN,
     "Jobs view",
     "highlight the run (or config) below",
     NULL},
    {{K(KEY_BACKSPACE), 127, TUI_CTRL('h')},
     JOBS,
     TUI_ACT_BACKSPACE,
     "Jobs view",
     "picker: delete the last character of the typed path",
     NULL},
    {{TUI_ESC}, JOBS, TUI_ACT_CLOSE, "Jobs view", "close the picker, else the jobs view", "close"},

    {{K(KEY_SR)},
     TUI_IN_ANY,
     TUI_ACT_CONSOLE_TALLER,
     "Lua console",
     "make the console taller (it opens)",
     NULL},
    {{K(KEY_SF)},
     TUI_IN_ANY,
     TUI_ACT_CONSOLE_SHORTER,
     "Lua console",
     "make the console shorter",
     NULL},
    {{F(12), TUI_CTRL('t')},
     TUI_IN_CONSOLE,
     TUI_ACT_CONSOLE_TRACEBACK,
     "Lua console",
     "the last error's traceback",
     NULL},

    {{TUI_MOUSE_CLICK},
     TUI_IN_ANY & ~TUI_IN_OVERLAY,
     TUI_ACT_FOCUS_AT,
     "Mouse",
     "focus the pane under the pointer",
     NULL},
    {{TUI_MOUSE_WHEEL_UP},
     TUI_IN_ANY,
     TUI_ACT_SCROLL_UP,
     "Mouse",
     "scroll the pane under the pointer up",
     NULL},
    {{TUI_MOUSE_WHEEL_DOWN},
     TUI_IN_ANY,
     TUI_ACT_SCROLL_DOWN,
     "Mouse",
     "scroll the pane under the pointer down",
     NULL},
};
const size_t tui_n_bindings = sizeof tui_bindings / sizeof tui_bindings[0];

static int binding_has(const tui_binding *b, int key)
{
    for (int i = 0; i < TUI_BINDING_KEYS && b->keys[i]; i++)
        if (b->keys[i] == key) return 1;
    return 0;
}

/* The bindings for anywhere apply in the jobs view and the log too. */
static int applies(const tui_binding *b, unsigned context)
{
    return (b->where & context) ||
           (b->where == TUI_IN_ANY && (context & (TUI_IN_JOBS | TUI_IN_LOG)));
}

tui_action tui_key_action(int key, unsigned context)
{
    tui_action anywhere = TUI_ACT_NONE;
    for (size_t i = 0; i < tui_n_bindings; i++) {
        const tui_binding *b = &tui_bindings[i];
        if (!applies(b, context) || !binding_has(b, key)) continue;
        if (b->where != TUI_IN_ANY) return b->action;
        if (anywhere == TUI_ACT_NONE) anywhere = b->action;
    }
    return anywhere;
}

static const struct {
    int key;
    const char *name;
} named_keys[] = {
    {'\t', "Tab"},
    {'\r', "Enter"},
    {'\n', "Ctrl-J"},
    {TUI_ESC, "Esc"},
    {127, "Backspace"},
    {K(KEY_BTAB), "Shift-Tab"},
    {K(KEY_ENTER), "keypad Enter"},
    {K(KEY_BACKSPACE), "Backspace"},
    {K(KEY_DC), "Delete"},
    {K(KEY_LEFT), "Left"},
    {K(KEY_RIGHT), "Right"},
    {K(KEY_UP), "Up"},
    {K(KEY_DOWN), "Down"},
    {K(KEY_HOME), "Home"},
    {K(KEY_END), "End"},
    {K(KEY_PPAGE), "PgUp"},
    {K(KEY_NPAGE), "PgDn"},
    {K(KEY_SR), "Shift-Up"},
    {K(KEY_SF), "Shift-Down"},
    {TUI_MOUSE_CLICK, "Click"},
    {TUI_MOUSE_WHEEL_UP, "Wheel up"},
    {TUI_MOUSE_WHEEL_DOWN, "Wheel down"},
};

const char *tui_key_name(int key, char *buf, size_t len)
{
    for (size_t i = 0; i < sizeof named_keys / sizeof named_keys[0]; i++)
        if (named_keys[i].key == key) return named_keys[i].name;
    if (TUI_IS_FKEY(key) && (key & 0xffffff) >= KEY_F(1) && (key & 0xffffff) <= KEY_F(12))
        snprintf(buf, len, "F%d", (key & 0xffffff) - KEY_F0);
    else if (key > 0 && key < 32) snprintf(buf, len, "Ctrl-%c", '@' + key);
    else if (key > 32 && key < 127) snprintf(buf, len, "%c", key);
    else snprintf(buf, len, "key %#x", key);
    return buf;
}

/* "Ctrl-Q F10" for a binding: its keys, omitting the less common alternates of Enter. */
static void keys_label(const tui_binding *b, char *out, size_t len)
{
    out[0] = '\0';
    for (int i = 0; i < TUI_BINDING_KEYS && b->keys[i]; i++) {
        if (i > 0 && (b->keys[i] == '\n' || b->keys[i] == K(KEY_ENTER))) continue;
        char buf[32];
        const char *name = tui_key_name(b->keys[i], buf, sizeof buf);
        if (strstr(out, name)) continue; /* Backspace arrives as two codes */
        size_t used = strlen(out);
        snprintf(out + used, len - used, "%s%s", used ? " " : "", name);
    }
}

enum { HELP_KEY_COLS = 22 };

char **tui_help_lines(int *n)
{
    char **lines = mt_xmalloc((2 * tui_n_bindings + 2) * sizeof *lines);
    int k = 0;
    const char *section = NULL;
    for (size_t i = 0; i < tui_n_bindings; i++) {
        const tui_binding *b = &tui_bindings[i];
        if (!section || strcmp(section, b->section) != 0) {
            if (section) lines[k++] = mt_xstrdup("");
            section = b->section;
            lines[k++] = mt_xstrdup(section);
        }
        char keys[96], line[256];
        keys_label(b, keys, sizeof keys);
        snprintf(line, sizeof line, "  %-*s %s", HELP_KEY_COLS, keys, b->help);
        lines[k++] = mt_xstrdup(line);
    }
    *n = k;
    return lines;
}

const char *tui_action_key(tui_action act, char *buf, size_t len)
{
    for (size_t i = 0; i < tui_n_bindings; i++)
        if (tui_bindings[i].action == act) return tui_key_name(tui_bindings[i].keys[0], buf, len);
    snprintf(buf, len, "%s", "");
    return buf;
}

void tui_lines_free(char **lines, int n)
{
    for (int i = 0; i < n; i++) free(lines[i]);
    free(lines);
}

void tui_status_hints(char *buf, size_t len, unsigned context, int width)
{
    size_t used = 0;
    buf[0] = '\0';
    /* the bindings of the context itself first (heatmap keys, overlay keys), then the ones
     * that also work in the editor */
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < tui_n_bindings; i++) {
            const tui_binding *b = &tui_bindings[i];
            int general = (b->where & TUI_IN_EDITOR) != 0;
            if (!b->hint || !applies(b, context) || general != pass) continue;
            char kb[32], item[96];
            const char *key = tui_key_name(b->keys[0], kb, sizeof kb);
            if (b->keys[0] == '\r') key = "Enter";
            int n = snprintf(item, sizeof item, "%s%s %s", used ? "  " : "", key, b->hint);
            if (n < 0 || used + (size_t)n >= len || (int)(used + (size_t)n) > width) return;
            memcpy(buf + used, item, (size_t)n + 1);
            used += (size_t)n;
        }
}
