/* The `ui` table: the workbench as a script sees it. Each function checks its arguments on
 * the Lua thread, then hands the UI thread a ui_call and sleeps until it is answered: the UI
 * thread alone touches panes, the editor, the theme and the status line (ui_execute). Calls
 * that wait (ui.wait, ui.wait_key) are answered later, when what they wait for has happened,
 * or with "interrupted" on Ctrl-C. */
#include <lauxlib.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tui/console/console_internal.h"
#include "mtlab/clock.h"
#include "mtlab/error.h"

static const struct {
    const char *name, *signature, *sentence;
} help[] = {
    {"ui.panes", "ui.panes() -> {{index=, name=, arch=, loaded=, beam=}, ...}",
     "The model panes, left to right, top to bottom (beam 1: greedy search)."},
    {"ui.open", "ui.open(path [, pane]) -> pane",
     "Opens a model bundle in a new pane, or in place of the given one."},
    {"ui.close", "ui.close(pane)", "Closes a pane (its model is freed)."},
    {"ui.set_text", "ui.set_text(text)",
     "Replaces the editor's source text (each non-blank line a segment); it is translated "
     "when typing would be (ui.translate does it now)."},
    {"ui.translate", "ui.translate()", "Sends the editor's text to every loaded pane now."},
    {"ui.heatmap", "ui.heatmap(pane [, {kind=, layer=, head=, scale=, method=, contrast=}])",
     "Shows a pane's heatmap: kind state_norms, state_groups, attention, cross, implicit or "
     "attribution (every model: which source and earlier translation tokens made each "
     "translation token, by method saliency, input_x_gradient or integrated_gradients; contrast "
     "a token, e.g. \"r\": each row attributes log p(its token) - log p(that one); \"\" none); "
     "layer and head 1-based (the heads' mean by default); scale raw (one scale shared by the "
     "panes), row or log."},
    {"ui.text_view", "ui.text_view(pane)", "Shows a pane's translation again."},
    {"ui.notify", "ui.notify(message [, seconds])",
     "Puts a message in the status line until the next one (or for so many seconds); "
     "ui.notify(\"\") clears it."},
    {"ui.bind", "ui.bind(key, fn)",
     "Runs fn on the console's thread when the key (\"F11\", \"Ctrl-G\") is pressed."},
    {"ui.theme", "ui.theme(name)", "Switches to a colour theme of themes/ (dark, light, ...)."},
    {"ui.references", "ui.references(path)",
     "Loads reference lines for the editor's segments (line i for segment i): each pane then "
     "shows each finished segment's BLEU and chrF2 and their total (as `mtlab tui --refs`)."},
    {"ui.wait", "ui.wait([pane])",
     "Waits until the pane (every pane by default) has loaded and translated the editor's "
     "current text, its heatmap included."},
    {"ui.wait_key", "ui.wait_key([{names}]) -> name",
     "Waits for the next key pressed anywhere in the workbench and returns its name (\"Space\", "
     "\"n\", \"Enter\"); with a list of names it takes only those keys, the others drive the "
     "workbench as usual; Ctrl-C interrupts."},
    {"ui.zoom", "ui.zoom(pane | false)",
     "Shows the pane over the whole screen (the console closes; Ctrl-O opens it), or no pane "
     "zoomed."},
    {"ui.cursor", "ui.cursor(pane, row, col)",
     "Puts the pane's heatmap cursor on a cell (1-based, as the map's readout counts) and "
     "scrolls the map to it; the readout under the map names the cell and its value."},
    {"ui.scroll", "ui.scroll(pane, line)",
     "Scrolls the pane so that its text line (or its heatmap row) is the first shown, 1-based."},
    {"ui.export", "ui.export(pane) -> message",
     "Writes the pane's heatmap as SVG, PNG and CSV files, as e does, and says where."},
    {"ui.console", "ui.console{height=, hide=, focus=} -> columns",
     "Sizes the console (height rows, the pane kept on screen first), closes it (hide=true) or "
     "gives the keys to the workbench (focus=false) or back to the console (focus=true); returns "
     "the columns of its text, to wrap what a script prints."},
};

const char *ui_help(const char *name)
{
    static char text[4096];
    size_t n = sizeof help / sizeof help[0];
    if (!name[0]) {
        size_t used = snprintf(text, sizeof text, "In the workbench also:");
        for (size_t i = 0; i < n && used < sizeof text; i++)
            used += snprintf(text + used, sizeof text - used, " %s", help[i].name);
        snprintf(text + used, sizeof text - used, "\n");
        return text;
    }
    for (size_t i = 0; i < n; i++)
        if (!strcmp(help[i].name, name) || !strcmp(help[i].name + 3, name)) {
            snprintf(text, sizeof text, "%s\n  %s", help[i].signature, help[i].sentence);
            return text;
        }
    return NULL;
}

/* ---------------------------------------------------------------- Lua side */

static tui_console *console_of(lua_State *L)
{
    return (tui_console *)lua_touserdata(L, lua_upvalueindex(1));
}

/* Hand the call to the UI thread and wait for its answer; raises its error. */
static void call_ui(lua_State *L, const char *fn, ui_call *call)
{
    tui_console *c = console_of(L);
    pthread_mutex_lock(&c->lock);
    if (c->quitting) {
        pthread_mutex_unlock(&c->lock);
        luaL_error(L, "%s: the workbench is closing", fn);
    }
    ui_call **end = &c->calls;
    while (*end) end = &(*end)->next;
    *end = call;
    console_wake_ui(c);
    while (!call->done) pthread_cond_wait(&c->answered, &c->lock);
    pthread_mutex_unlock(&c->lock);
    if (call->error[0]) luaL_error(L, "%s: %s", fn, call->error);
}

static int check_pane(lua_State *L, int arg, const char *fn)
{
    lua_Integer p = luaL_checkinteger(L, arg);
    if (p < 1 || p > TUI_MAX_PANES)
        luaL_error(L, "%s: no pane %d (panes are 1 to %d)", fn, (int)p, TUI_MAX_PANES);
    return (int)p - 1;
}

static int l_panes(lua_State *L)
{
    ui_call call = {.op = UI_PANES, .pane = -1};
    call_ui(L, "ui.panes", &call);
    lua_createtable(L, call.n_panes, 0);
    for (int i = 0; i < call.n_panes; i++) {
        lua_createtable(L, 0, 4);
        lua_pushinteger(L, i + 1);
        lua_setfield(L, -2, "index");
        lua_pushstring(L, call.panes[i].name);
        lua_setfield(L, -2, "name");
        lua_pushstring(L, call.panes[i].arch);
        lua_setfield(L, -2, "arch");
        lua_pushboolean(L, call.panes[i].loaded);
        lua_setfield(L, -2, "loaded");
        lua_pushinteger(L, call.panes[i].beam);
        lua_setfield(L, -2, "beam");
        lua_rawseti(L, -2, i + 1);
    }
    return 1;
}

static int l_open(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    int pane = lua_isnoneornil(L, 2) ? -1 : check_pane(L, 2, "ui.open");
    char cfg[PATH_MAX];
    struct stat st;
    snprintf(cfg, sizeof cfg, "%s/config.json", path);
    if (stat(cfg, &st) != 0)
        return luaL_error(L, "ui.open: no model bundle at '%s' (config.json missing)", path);
    ui_call call = {.op = UI_OPEN, .pane = pane, .text = (char *)path};
    call_ui(L, "ui.open", &call);
    lua_pushinteger(L, call.result + 1);
    return 1;
}

static int l_close(lua_State *L)
{
    ui_call call = {.op = UI_CLOSE, .pane = check_pane(L, 1, "ui.close")};
    call_ui(L, "ui.close", &call);
    return 0;
}

static int l_set_text(lua_State *L)
{
    ui_call call = {.op = UI_SET_TEXT, .pane = -1, .text = (char *)luaL_checkstring(L, 1)};
    call_ui(L, "ui.set_text", &call);
    return 0;
}

static int l_translate(lua_State *L)
{
    ui_call call = {.op = UI_TRANSLATE, .pane = -1};
    call_ui(L, "ui.translate", &call);
    return 0;
}

static const struct {
    const char *name;
    mt_probe_kind kind;
} kinds[] = {
    {"state_norms", MT_PROBE_STATE_NORMS}, {"state_groups", MT_PROBE_STATE_GROUPS},
    {"attention", MT_PROBE_SELF_ATTN},     {"cross", MT_PROBE_CROSS_ATTN},
    {"implicit", MT_PROBE_IMPLICIT_ATTN},  {"attribution", (mt_probe_kind)TUI_HEAT_ATTRIBUTION},
};

/* The error of a ui.heatmap asking pane p for kind at the model's layer call->layer (as the
 * map's title names it, L1 the first; -1: its first map) and head: none of that kind (naming
 * the kinds it has), no map at that layer (naming the layers that have one) or too few heads;
 * 0 when the pane has it, and *nth is which map of the kind it is. */
static int heat_refused(ui_call *call, const tui_pane *p, int kind, int *nth_out)
{
    int nth = 0;
    const mt_probe_record *r = &p->probe->rec;
    int count = tui_heat_count(r, (mt_probe_kind)kind);
    char layers[160];
    const char *name = mt_probe_kind_name((mt_probe_kind)kind);
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if ((int)kinds[i].kind == kind) name = kinds[i].name;
    if (count == 0) {
        char has[128] = "";
        for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
            if (tui_heat_count(r, kinds[i].kind) > 0)
                snprintf(has + strlen(has), sizeof has - strlen(has), "%s%s", has[0] ? ", " : "",
                         kinds[i].name);
        snprintf(call->error, sizeof call->error, "%s has no %s maps (it records: %s)", p->name,
                 name, has[0] ? has : "none");
    } else if (call->layer >= 0 && (nth = tui_heat_nth_of_layer(r, (mt_probe_kind)kind, call->layer,
                                                                layers, sizeof layers)) < 0) {
        snprintf(call->error, sizeof call->error, "%s has %s maps at layer%s %s, not %d", p->name,
                 name, count == 1 ? "" : "s", layers, call->layer + 1);
    } else if (call->head >= 0) {
        const mt_probe_map *m = &r->maps[tui_heat_find(r, (mt_probe_kind)kind, nth)];
        if (call->head >= m->heads)
            snprintf(call->error, sizeof call->error, "%s's %s layer %d has %d head%s, not %d",
                     p->name, name, m->layer + 1, m->heads, m->heads == 1 ? "" : "s",
                     call->head + 1);
    }
    *nth_out = nth;
    return call->error[0] != 0;
}

static int l_heatmap(lua_State *L)
{
    ui_call call = {.op = UI_HEATMAP,
                    .pane = check_pane(L, 1, "ui.heatmap"),
                    .kind = -1,
                    .layer = -1,
                    .head = -1,
                    .scale = -1,
                    .method = -1};
    if (!lua_isnoneornil(L, 2)) {
        luaL_checktype(L, 2, LUA_TTABLE);
        if (lua_getfield(L, 2, "kind") != LUA_TNIL) {
            const char *k = luaL_checkstring(L, -1);
            for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
                if (!strcmp(k, kinds[i].name)) call.kind = (int)kinds[i].kind;
            if (call.kind < 0)
                return luaL_error(L,
                                  "ui.heatmap: unknown kind '%s' (state_norms, state_groups, "
                                  "attention, cross, implicit, attribution)",
                                  k);
        }
        int attribution = call.kind == TUI_HEAT_ATTRIBUTION;
        if (lua_getfield(L, 2, "method") != LUA_TNIL) {
            const char *m = luaL_checkstring(L, -1);
            mt_attr_method method;
            if (!attribution)
                return luaL_error(
                    L, "ui.heatmap: method is the attribution map's (kind='attribution')");
            if (mt_attr_method_parse(m, &method) != 0)
                return luaL_error(L,
                                  "ui.heatmap: unknown method '%s' (saliency, input_x_gradient, "
                                  "integrated_gradients)",
                                  m);
            call.method = (int)method;
        }
        if (lua_getfield(L, 2, "contrast") != LUA_TNIL) {
            const char *c = luaL_checkstring(L, -1);
            if (!attribution)
                return luaL_error(
                    L, "ui.heatmap: contrast is the attribution map's (kind='attribution')");
            if (strlen(c) >= sizeof((tui_pane *)0)->attr_contrast)
                return luaL_error(L, "ui.heatmap: contrast is one token, not '%s'", c);
            call.text = (char *)c; /* the value stays on the Lua stack during the call */
        }
        if (lua_getfield(L, 2, "scale") != LUA_TNIL) {
            static const char *const scales[] = {"raw", "row", "log", NULL};
            const char *s = luaL_checkstring(L, -1);
            for (int i = 0; scales[i]; i++)
                if (!strcmp(s, scales[i])) call.scale = i;
            if (call.scale < 0)
                return luaL_error(L, "ui.heatmap: unknown scale '%s' (raw, row, log)", s);
        }
        if (lua_getfield(L, 2, "layer") != LUA_TNIL) {
            lua_Integer v = luaL_checkinteger(L, -1);
            if (v < 1) return luaL_error(L, "ui.heatmap: layer is 1-based (got %d)", (int)v);
            call.layer = (int)v - 1;
        }
        if (lua_getfield(L, 2, "head") != LUA_TNIL) {
            lua_Integer v = luaL_checkinteger(L, -1);
            if (v < 1) return luaL_error(L, "ui.heatmap: head is 1-based (got %d)", (int)v);
            call.head = (int)v - 1;
        }
    }
    call_ui(L, "ui.heatmap", &call);
    return 0;
}

static int l_text_view(lua_State *L)
{
    ui_call call = {.op = UI_TEXT_VIEW, .pane = check_pane(L, 1, "ui.text_view")};
    call_ui(L, "ui.text_view", &call);
    return 0;
}

static int l_notify(lua_State *L)
{
    ui_call call = {.op = UI_NOTIFY,
                    .pane = -1,
                    .text = (char *)luaL_checkstring(L, 1),
                    .seconds = luaL_optnumber(L, 2, 0)};
    call_ui(L, "ui.notify", &call);
    return 0;
}

int ui_key_code(const char *name)
{
    int n;
    char c, end;
    if (sscanf(name, "F%d%c", &n, &end) == 1 && n >= 1 && n <= 12) return TUI_FKEY(KEY_F(n));
    if (sscanf(name, "Ctrl-%c%c", &c, &end) == 1 &&
        ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')))
        return TUI_CTRL(c);
    return -1;
}

static int l_bind(lua_State *L)
{
    const char *name = luaL_checkstring(L, 1);
    luaL_checktype(L, 2, LUA_TFUNCTION);
    int key = ui_key_code(name);
    if (key < 0)
        return luaL_error(L, "ui.bind: cannot bind '%s' (F1 to F12, or Ctrl-A to Ctrl-Z)", name);
    if (key == TUI_CTRL('c') || key == TUI_CTRL('o') || key == TUI_CTRL('q'))
        return luaL_error(L, "ui.bind: %s stays the workbench's (interrupt, console, quit)", name);
    ui_call call = {.op = UI_BIND, .pane = -1, .key = key};
    call_ui(L, "ui.bind", &call);
    lua_getfield(L, LUA_REGISTRYINDEX, "mtlab.console.bindings");
    lua_pushvalue(L, 2);
    lua_rawseti(L, -2, key);
    return 0;
}

static int l_references(lua_State *L)
{
    ui_call call = {.op = UI_REFERENCES, .pane = -1, .text = (char *)luaL_checkstring(L, 1)};
    call_ui(L, "ui.references", &call);
    return 0;
}

static int l_theme(lua_State *L)
{
    ui_call call = {.op = UI_THEME, .pane = -1, .text = (char *)luaL_checkstring(L, 1)};
    call_ui(L, "ui.theme", &call);
    return 0;
}

static int l_wait(lua_State *L)
{
    ui_call call = {.op = UI_WAIT,
                    .pane = lua_isnoneornil(L, 1) ? -1 : check_pane(L, 1, "ui.wait")};
    call_ui(L, "ui.wait", &call);
    return 0;
}

static int l_wait_key(lua_State *L)
{
    char names[512] = "";
    if (!lua_isnoneornil(L, 1)) {
        luaL_checktype(L, 1, LUA_TTABLE);
        size_t used = 0;
        lua_Integer n = luaL_len(L, 1);
        if (n == 0) return luaL_error(L, "ui.wait_key: the list of keys is empty");
        for (lua_Integer i = 1; i <= n; i++) {
            lua_rawgeti(L, 1, i);
            const char *k = lua_tostring(L, -1);
            if (!k || !k[0] || strchr(k, '\n'))
                return luaL_error(L, "ui.wait_key: key %d of the list is not a key name", (int)i);
            if (used + strlen(k) + 2 > sizeof names)
                return luaL_error(L, "ui.wait_key: the list of keys is too long");
            used += (size_t)snprintf(names + used, sizeof names - used, "%s\n", k);
            lua_pop(L, 1);
        }
    }
    ui_call call = {.op = UI_WAIT_KEY, .pane = -1, .text = names};
    call_ui(L, "ui.wait_key", &call);
    lua_pushstring(L, call.result_text);
    return 1;
}

static int l_zoom(lua_State *L)
{
    ui_call call = {.op = UI_ZOOM, .pane = -1};
    if (!(lua_isboolean(L, 1) && !lua_toboolean(L, 1))) {
        call.pane = check_pane(L, 1, "ui.zoom");
        call.row = 1;
    }
    call_ui(L, "ui.zoom", &call);
    return 0;
}

static int check_line(lua_State *L, int arg, const char *fn, const char *what)
{
    lua_Integer v = luaL_checkinteger(L, arg);
    if (v < 1 || v > INT_MAX) luaL_error(L, "%s: %s is 1-based (got %d)", fn, what, (int)v);
    return (int)v - 1;
}

static int l_cursor(lua_State *L)
{
    ui_call call = {.op = UI_CURSOR,
                    .pane = check_pane(L, 1, "ui.cursor"),
                    .row = check_line(L, 2, "ui.cursor", "row"),
                    .col = check_line(L, 3, "ui.cursor", "col")};
    call_ui(L, "ui.cursor", &call);
    return 0;
}

static int l_scroll(lua_State *L)
{
    ui_call call = {.op = UI_SCROLL,
                    .pane = check_pane(L, 1, "ui.scroll"),
                    .row = check_line(L, 2, "ui.scroll", "line")};
    call_ui(L, "ui.scroll", &call);
    return 0;
}

static int l_export(lua_State *L)
{
    ui_call call = {.op = UI_EXPORT, .pane = check_pane(L, 1, "ui.export")};
    call_ui(L, "ui.export", &call);
    lua_pushstring(L, call.result_text);
    return 1;
}

static int l_console(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    ui_call call = {.op = UI_CONSOLE, .pane = -1, .focus = -1};
    if (lua_getfield(L, 1, "height") != LUA_TNIL) {
        lua_Integer h = luaL_checkinteger(L, -1);
        if (h < TUI_CONSOLE_MIN_ROWS || h > 200)
            return luaL_error(L, "ui.console: height %d is not %d to 200 rows", (int)h,
                              TUI_CONSOLE_MIN_ROWS);
        call.height = (int)h;
    }
    if (lua_getfield(L, 1, "hide") != LUA_TNIL) call.hide = lua_toboolean(L, -1);
    if (lua_getfield(L, 1, "focus") != LUA_TNIL) call.focus = lua_toboolean(L, -1);
    lua_pop(L, 3);
    lua_pushnil(L);
    while (lua_next(L, 1)) {
        const char *k = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : "";
        if (strcmp(k, "height") && strcmp(k, "hide") && strcmp(k, "focus"))
            return luaL_error(L, "ui.console: unknown field '%s' (height, hide, focus)", k);
        lua_pop(L, 1);
    }
    call_ui(L, "ui.console", &call);
    lua_pushinteger(L, call.result);
    return 1;
}

void ui_open_library(lua_State *L, tui_console *c)
{
    static const luaL_Reg fns[] = {
        {"panes", l_panes},
        {"open", l_open},
        {"close", l_close},
        {"set_text", l_set_text},
        {"translate", l_translate},
        {"heatmap", l_heatmap},
        {"text_view", l_text_view},
        {"notify", l_notify},
        {"bind", l_bind},
        {"theme", l_theme},
        {"wait", l_wait},
        {"wait_key", l_wait_key},
        {"references", l_references},
        {"zoom", l_zoom},
        {"cursor", l_cursor},
        {"scroll", l_scroll},
        {"export", l_export},
        {"console", l_console},
        {NULL, NULL},
    };
    lua_newtable(L);
    lua_pushlightuserdata(L, c);
    luaL_setfuncs(L, fns, 1);
    lua_setglobal(L, "ui");
}

/* ---------------------------------------------------------------- UI side */

static int pane_exists(tui_app *a, ui_call *call)
{
    if (call->pane >= 0 && call->pane < a->n_panes) return 1;
    snprintf(call->error, sizeof call->error, "no pane %d (%d open)", call->pane + 1, a->n_panes);
    return 0;
}

static int theme_named(const tui_app *a, const char *name)
{
    for (int i = 0; i < a->n_themes; i++) {
        const char *base = strrchr(a->theme_names[i], '/');
        base = base ? base + 1 : a->theme_names[i];
        size_t n = strlen(base) - strlen(".theme");
        if (strlen(name) == n && !strncmp(base, name, n)) return i;
    }
    return -1;
}

static void open_pane(tui_app *a, ui_call *call)
{
    if (call->pane >= 0 && call->pane < a->n_panes) tui_pane_remove(a, call->pane);
    if (tui_pane_add(a, call->text, a->default_device, a->default_precision) != 0) {
        snprintf(call->error, sizeof call->error, "%s", mt_last_error());
        return;
    }
    int at = a->n_panes - 1;
    if (call->pane >= 0 && call->pane < at) {
        tui_pane *p = a->panes[at];
        memmove(a->panes + call->pane + 1, a->panes + call->pane,
                (size_t)(at - call->pane) * sizeof *a->panes);
        a->panes[call->pane] = p;
        at = call->pane;
    }
    call->result = at;
}

int ui_wait_key_takes(const ui_call *call, const char *name)
{
    if (!call->text || !call->text[0]) return 1;
    size_t n = strlen(name);
    for (const char *k = call->text; *k; k = strchr(k, '\n') + 1)
        if (!strncmp(k, name, n) && k[n] == '\n') return 1;
    return 0;
}

/* The heatmap the pane shows now, or NULL with the call's error saying why. */
static const mt_probe_map *shown_map(tui_pane *p, ui_call *call, const char *fn)
{
    const tui_probe *pr = tui_heat_pane_probe(p);
    int i = p->view == TUI_VIEW_HEATMAP && pr && p->heat_kind >= 0
                ? tui_heat_find(&pr->rec, (mt_probe_kind)p->heat_kind,
                                p->heat_kind == TUI_HEAT_ATTRIBUTION ? 0 : p->heat_nth)
                : -1;
    if (i >= 0) return &pr->rec.maps[i];
    snprintf(call->error, sizeof call->error,
             "%s shows no heatmap (ui.heatmap(%d), then ui.wait(), "
             "before %s)",
             p->name, call->pane + 1, fn);
    return NULL;
}

static void place_cursor(tui_app *a, ui_call *call)
{
    tui_pane *p = a->panes[call->pane];
    const mt_probe_map *m = shown_map(p, call, "ui.cursor");
    if (!m) return;
    if (call->row >= m->rows || call->col >= m->cols) {
        snprintf(call->error, sizeof call->error,
                 "%s's map has %d rows and %d columns (asked %d, %d)", p->name, m->rows, m->cols,
                 call->row + 1, call->col + 1);
        return;
    }
    p->sel_row = call->row, p->sel_col = call->col;
}

static void scroll_to_line(tui_app *a, ui_call *call)
{
    tui_pane *p = a->panes[call->pane];
    if (p->view == TUI_VIEW_TEXT) {
        p->scroll = call->row;
        return;
    }
    const mt_probe_map *m = shown_map(p, call, "ui.scroll");
    if (!m) return;
    if (call->row >= m->rows) {
        snprintf(call->error, sizeof call->error, "%s's map has %d rows (asked %d)", p->name,
                 m->rows, call->row + 1);
        return;
    }
    /* the drawing keeps the cursor in view: it goes to the first row asked */
    p->heat_row0 = p->sel_row = call->row;
}

static void export_map(tui_app *a, ui_call *call)
{
    tui_pane *p = a->panes[call->pane];
    if (!shown_map(p, call, "ui.export")) return;
    tui_heat_export(a, p);
    if (strncmp(a->notice, "wrote ", 6) != 0)
        snprintf(call->error, sizeof call->error, "%s", a->notice);
    else snprintf(call->result_text, sizeof call->result_text, "%s", a->notice);
}

static void set_console(tui_app *a, ui_call *call)
{
    tui_console *c = a->console;
    if (call->height > 0) a->console_rows = call->height;
    if (call->hide) c->open = c->focused = 0;
    else if (call->height > 0 || call->focus >= 0) c->open = 1;
    if (call->focus >= 0 && c->open) c->focused = call->focus;
    if (c->open) a->zoom = 0;
    a->relayout = 1;
    call->result = COLS > 2 ? COLS - 2 : 1; /* the console spans the screen, inside its border */
}

int ui_execute(tui_app *a, ui_call *call)
{
    switch (call->op) {
    case UI_PANES:
        call->n_panes = a->n_panes;
        for (int i = 0; i < a->n_panes; i++) {
            const tui_pane *p = a->panes[i];
            snprintf(call->panes[i].name, sizeof call->panes[i].name, "%s", p->name);
            snprintf(call->panes[i].arch, sizeof call->panes[i].arch, "%.*s",
                     (int)strcspn(p->info, ","), p->info);
            call->panes[i].loaded = p->loaded;
            call->panes[i].beam = p->beam;
        }
        return 1;
    case UI_OPEN: open_pane(a, call); return 1;
    case UI_CLOSE:
        if (pane_exists(a, call)) tui_pane_remove(a, call->pane);
        return 1;
    case UI_SET_TEXT:
        if (tui_editor_set_text(&a->ed, call->text) > 0)
            snprintf(call->error, sizeof call->error, "the text does not fit the editor (%d KiB)",
                     TUI_EDITOR_MAX_BYTES / 1024);
        a->edit_time = mt_now_s();
        return 1;
    case UI_TRANSLATE: tui_translate(a, NULL); return 1;
    case UI_HEATMAP:
        if (pane_exists(a, call)) {
            tui_pane *p = a->panes[call->pane];
            /* checked against the maps the pane holds before anything changes: a refused call
             * leaves the pane as it was */
            int kind = call->kind >= 0 ? call->kind : p->heat_kind, nth = 0;
            if (p->probe && kind >= 0 && kind != TUI_HEAT_ATTRIBUTION &&
                heat_refused(call, p, kind, &nth))
                return 1;
            if (call->method >= 0) p->attr_method = call->method;
            if (call->text) snprintf(p->attr_contrast, sizeof p->attr_contrast, "%s", call->text);
            p->view = TUI_VIEW_HEATMAP;
            p->heat_kind = kind;
            p->heat_nth = nth;
            /* without the probes yet, the layer is found when they come (events.c) */
            p->heat_layer_asked = p->probe ? 0 : call->layer + 1;
            p->heat_head = call->head;
            if (call->scale >= 0) p->heat_norm = (tui_heat_norm)call->scale;
            tui_request_probe(a, p);
        }
        return 1;
    case UI_TEXT_VIEW:
        if (pane_exists(a, call)) a->panes[call->pane]->view = TUI_VIEW_TEXT;
        return 1;
    case UI_NOTIFY:
        snprintf(a->notice, sizeof a->notice, "%s", call->text);
        a->notice_until = mt_now_s() + (call->seconds > 0 ? call->seconds : 1e9);
        if (call->text[0]) tui_log_add(&a->log, TUI_LOG_INFO, "%s", call->text);
        return 1;
    case UI_BIND: {
        tui_console *c = a->console;
        int known = 0;
        for (int i = 0; i < c->n_bound; i++) known |= c->bound[i] == call->key;
        if (!known && c->n_bound == CONSOLE_MAX_BINDINGS)
            snprintf(call->error, sizeof call->error, "at most %d keys", CONSOLE_MAX_BINDINGS);
        else if (!known) c->bound[c->n_bound++] = call->key;
        return 1;
    }
    case UI_REFERENCES:
        if (tui_refs_load(a, call->text) != 0)
            snprintf(call->error, sizeof call->error, "%s", mt_last_error());
        return 1;
    case UI_THEME: {
        int i = theme_named(a, call->text);
        if (i < 0)
            snprintf(call->error, sizeof call->error, "no theme '%s' in themes/", call->text);
        else if (tui_apply_theme(a, i) != 0)
            snprintf(call->error, sizeof call->error, "%s", mt_last_error());
        return 1;
    }
    case UI_ZOOM:
        if (call->row && !pane_exists(a, call)) return 1;
        a->zoom = call->row;
        if (a->zoom) {
            tui_focus(a, call->pane);
            a->console->open = a->console->focused = 0;
        }
        a->relayout = 1;
        return 1;
    case UI_CURSOR:
        if (pane_exists(a, call)) place_cursor(a, call);
        return 1;
    case UI_SCROLL:
        if (pane_exists(a, call)) scroll_to_line(a, call);
        return 1;
    case UI_EXPORT:
        if (pane_exists(a, call)) export_map(a, call);
        return 1;
    case UI_CONSOLE: set_console(a, call); return 1;
    case UI_WAIT:
        if (call->pane >= 0 && !pane_exists(a, call)) return 1;
        return ui_wait_over(a, call);
    case UI_CONFIRM_QUIT:
        snprintf(a->notice, sizeof a->notice,
                 "os.exit: quit the workbench? y quits, any other key keeps it running");
        a->notice_until = mt_now_s() + 1e9;
        return 0;
    case UI_WAIT_KEY: {
        /* the first key typed ahead that the call takes */
        tui_console *c = a->console;
        for (int i = 0; i < c->n_typeahead; i++) {
            char name[64];
            console_key_name(c->typeahead[i].key, c->typeahead[i].is_char, name, sizeof name);
            if (!ui_wait_key_takes(call, name)) continue;
            snprintf(call->result_text, sizeof call->result_text, "%s", name);
            memmove(c->typeahead + i, c->typeahead + i + 1,
                    (size_t)(--c->n_typeahead - i) * sizeof *c->typeahead);
            return 1;
        }
        return 0;
    }
    }
    return 1;
}

/* The pane has loaded (or failed to), and has translated the editor's current text. */
static int pane_settled(const tui_app *a, const tui_pane *p)
{
    if (p->load_error) return 1;
    if (!p->loaded || p->busy || p->probe_pending || p->attr_pending) return 0;
    return a->sent_version == a->ed.version;
}

int ui_wait_over(tui_app *a, ui_call *call)
{
    if (call->op != UI_WAIT) return 0;
    if (call->pane >= a->n_panes) {
        snprintf(call->error, sizeof call->error, "pane %d was closed", call->pane + 1);
        return 1;
    }
    for (int i = 0; i < a->n_panes; i++)
        if ((call->pane < 0 || call->pane == i) && !pane_settled(a, a->panes[i])) return 0;
    return 1;
}
