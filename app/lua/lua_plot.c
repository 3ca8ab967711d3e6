/* mtlab.plot: line, bar and heatmap plots (app/plot/plot.h) for scripts. A constructor
 * returns a plot handle; p:show() draws it on stdout (braille and block characters, colours on
 * a terminal unless NO_COLOR is set, plain text when piped; in the workbench's console, into
 * the console), p:save(path) writes .svg, .png or .csv by the name's extension, p:text()
 * returns the drawing as a string. */
#include "lua/lua_internal.h"
#include "lua/mtlab_lua.h"
#include "mtlab/decode.h"
#include "mtlab/error.h"
#include "plot/plot.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#define PLOT_META "mtlab.plot"

typedef struct {
    plot *p;
    char kind[16];
} plot_handle;

static int plot_gc(lua_State *L)
{
    plot_handle *h = luaL_checkudata(L, 1, PLOT_META);
    plot_free(h->p);
    h->p = NULL;
    return 0;
}

static plot_handle *push_handle(lua_State *L, const char *kind)
{
    plot_handle *h = lua_newuserdatauv(L, sizeof *h, 0);
    memset(h, 0, sizeof *h);
    snprintf(h->kind, sizeof h->kind, "%s", kind);
    luaL_setmetatable(L, PLOT_META);
    return h;
}

static plot_handle *check_plot(lua_State *L, int idx, const char *fn)
{
    plot_handle *h = luaL_checkudata(L, idx, PLOT_META);
    if (!h->p) mtl_error(L, fn, "the plot is closed");
    return h;
}

/* A list of numbers at t[key] (or t itself when key is NULL) into a userdata array pushed on
 * the stack; nil is NaN (a gap). */
static double *check_numbers(lua_State *L, int idx, const char *fn, const char *what, size_t *n)
{
    if (!lua_istable(L, idx))
        mtl_error(L, fn, "%s must be a list of numbers, not %s", what, luaL_typename(L, idx));
    idx = lua_absindex(L, idx);
    size_t len = (size_t)luaL_len(L, idx);
    double *v = lua_newuserdatauv(L, (len ? len : 1) * sizeof *v, 0);
    for (size_t i = 0; i < len; i++) {
        int t = lua_geti(L, idx, (lua_Integer)i + 1);
        if (t == LUA_TNIL) v[i] = NAN;
        else if (t == LUA_TNUMBER) v[i] = lua_tonumber(L, -1);
        else
            mtl_error(L, fn, "%s[%zu] must be a number, not %s", what, i + 1, luaL_typename(L, -1));
        lua_pop(L, 1);
    }
    *n = len;
    return v;
}

static const char *field_string(lua_State *L, int idx, const char *fn, const char *key)
{
    return mtl_opt_string(L, idx, fn, key, NULL);
}

/* mtlab.plot.line{series={{name=, x=, y=}, ...} | y=, x=, title=, xlabel=, ylabel=} */
static int l_line(lua_State *L)
{
    static const char *const fn = "mtlab.plot.line";
    static const char *const known[] = {"series", "x",      "y",      "name",
                                        "title",  "xlabel", "ylabel", NULL};
    lua_settop(L, 1);
    luaL_checktype(L, 1, LUA_TTABLE);
    mtl_check_options(L, 1, fn, known);
    plot_handle *h = push_handle(L, "line");
    h->p = plot_line_new(field_string(L, 1, fn, "title"), field_string(L, 1, fn, "xlabel"),
                         field_string(L, 1, fn, "ylabel"));
    int has_series = lua_getfield(L, 1, "series") != LUA_TNIL;
    int list = has_series ? lua_gettop(L) : 1;
    if (has_series && !lua_istable(L, list))
        mtl_error(L, fn, "series must be a list of {name=, x=, y=} tables, not %s",
                  luaL_typename(L, list));
    lua_Integer count = has_series ? luaL_len(L, list) : 1;
    if (count == 0) mtl_error(L, fn, "series is empty");
    for (lua_Integer s = 1; s <= count; s++) {
        int top = lua_gettop(L);
        int one = list;
        if (has_series) {
            if (lua_geti(L, list, s) != LUA_TTABLE)
                mtl_error(L, fn, "series[%lld] must be a table {name=, x=, y=}", (long long)s);
            one = lua_gettop(L);
        }
        char what[48];
        size_t nx = 0, ny;
        snprintf(what, sizeof what, has_series ? "series[%lld].y" : "y", (long long)s);
        lua_getfield(L, one, "y");
        const double *y = check_numbers(L, -1, fn, what, &ny);
        const double *x = NULL;
        if (lua_getfield(L, one, "x") != LUA_TNIL) {
            snprintf(what, sizeof what, has_series ? "series[%lld].x" : "x", (long long)s);
            x = check_numbers(L, -1, fn, what, &nx);
            if (nx != ny) mtl_error(L, fn, "%s has %zu values but y has %zu", what, nx, ny);
        }
        lua_getfield(L, one, "name");
        const char *name = lua_isstring(L, -1) ? lua_tostring(L, -1) : NULL;
        if (plot_line_add(h->p, name, x, nx, y, ny) < 0) mtl_error(L, fn, "%s", mt_last_error());
        lua_settop(L, top);
    }
    lua_settop(L, 2);
    return 1;
}

/* A list of strings into a userdata array pushed on the stack. */
static const char **labels_of(lua_State *L, int idx, const char *fn, const char *what, size_t *n)
{
    return mtl_check_strings(L, idx, fn, what, n, 0, NULL);
}

/* mtlab.plot.bar{labels={...}, series={{name=, values=}, ...} | values=, title=, ylabel=} */
static int l_bar(lua_State *L)
{
    static const char *const fn = "mtlab.plot.bar";
    static const char *const known[] = {"labels", "series", "values", "name",
                                        "title",  "ylabel", NULL};
    lua_settop(L, 1);
    luaL_checktype(L, 1, LUA_TTABLE);
    mtl_check_options(L, 1, fn, known);
    size_t n_labels;
    lua_getfield(L, 1, "labels");
    const char **labels = labels_of(L, -1, fn, "labels", &n_labels);
    plot_handle *h = push_handle(L, "bar");
    int handle = lua_gettop(L);
    if (!(h->p = plot_bar_new(field_string(L, 1, fn, "title"), field_string(L, 1, fn, "ylabel"),
                              labels, n_labels)))
        mtl_error(L, fn, "%s", mt_last_error());
    int has_series = lua_getfield(L, 1, "series") != LUA_TNIL;
    int list = has_series ? lua_gettop(L) : 1;
    lua_Integer count = has_series ? luaL_len(L, list) : 1;
    for (lua_Integer s = 1; s <= count; s++) {
        int top = lua_gettop(L);
        int one = list;
        if (has_series) {
            if (lua_geti(L, list, s) != LUA_TTABLE)
                mtl_error(L, fn, "series[%lld] must be a table {name=, values=}", (long long)s);
            one = lua_gettop(L);
        }
        size_t n;
        lua_getfield(L, one, "values");
        const double *v = check_numbers(L, -1, fn, "values", &n);
        lua_getfield(L, one, "name");
        const char *name = lua_isstring(L, -1) ? lua_tostring(L, -1) : NULL;
        if (plot_bar_add(h->p, name, v, n) < 0) mtl_error(L, fn, "%s", mt_last_error());
        lua_settop(L, top);
    }
    lua_pushvalue(L, handle);
    return 1;
}

/* mtlab.plot.heatmap(matrix | {{...}, ...} [, {title=, xlabel=, ylabel=, row_labels=,
 * col_labels=, range={lo, hi}, scale=, causal=}]) */
static int l_heatmap(lua_State *L)
{
    static const char *const fn = "mtlab.plot.heatmap";
    static const char *const known[] = {"title", "xlabel", "ylabel", "row_labels", "col_labels",
                                        "range", "scale",  "causal", NULL};
    lua_settop(L, 2);
    mtl_check_options(L, 2, fn, known);
    const float *values;
    int rows, cols;
    const char *const *rl = NULL, *const *cl = NULL;
    if (mtl_matrix_view(L, 1, &values, &rows, &cols, &rl, &cl) < 0) {
        if (!lua_istable(L, 1))
            mtl_error(L, fn, "the values must be an mtlab.matrix or a list of rows, not %s",
                      luaL_typename(L, 1));
        rows = (int)luaL_len(L, 1);
        cols = rows ? (lua_geti(L, 1, 1), (int)luaL_len(L, -1)) : 0;
        float *v = lua_newuserdatauv(L, ((size_t)rows * (size_t)cols + 1) * sizeof *v, 0);
        for (int i = 0; i < rows; i++) {
            char what[32];
            size_t n;
            snprintf(what, sizeof what, "row %d", i + 1);
            lua_geti(L, 1, i + 1);
            const double *row = check_numbers(L, -1, fn, what, &n);
            if ((int)n != cols)
                mtl_error(L, fn, "row %d has %zu values, row 1 has %d", i + 1, n, cols);
            for (int j = 0; j < cols; j++) v[(size_t)i * (size_t)cols + (size_t)j] = (float)row[j];
            lua_pop(L, 2);
        }
        values = v;
    }
    size_t n;
    if (!lua_isnil(L, 2) && lua_getfield(L, 2, "row_labels") != LUA_TNIL) {
        rl = labels_of(L, -1, fn, "row_labels", &n);
        if ((int)n != rows) mtl_error(L, fn, "row_labels has %zu labels for %d rows", n, rows);
    }
    if (!lua_isnil(L, 2) && lua_getfield(L, 2, "col_labels") != LUA_TNIL) {
        cl = labels_of(L, -1, fn, "col_labels", &n);
        if ((int)n != cols) mtl_error(L, fn, "col_labels has %zu labels for %d columns", n, cols);
    }
    uint8_t *mask = NULL;
    if (mtl_opt_boolean(L, 2, fn, "causal", 0)) {
        mask = lua_newuserdatauv(L, (size_t)rows * (size_t)cols + 1, 0);
        for (int i = 0; i < rows; i++)
            for (int j = 0; j < cols; j++) mask[(size_t)i * (size_t)cols + (size_t)j] = j > i;
    }
    plot_handle *h = push_handle(L, "heatmap");
    int handle = lua_gettop(L);
    plot_grid grid = {values, rows, cols, rl, cl, mask};
    if (!(h->p = plot_heatmap_new(field_string(L, 2, fn, "title"), field_string(L, 2, fn, "xlabel"),
                                  field_string(L, 2, fn, "ylabel"), &grid)))
        mtl_error(L, fn, "%s", mt_last_error());
    const char *scale = field_string(L, 2, fn, "scale");
    plot_scale sc;
    if (scale && (plot_scale_parse(scale, &sc) < 0 || plot_heatmap_set_scale(h->p, sc) < 0))
        mtl_error(L, fn, "%s", mt_last_error());
    if (!lua_isnil(L, 2) && lua_getfield(L, 2, "range") != LUA_TNIL) {
        size_t k;
        const double *r = check_numbers(L, -1, fn, "range", &k);
        if (k != 2 || plot_heatmap_set_range(h->p, r[0], r[1]) < 0)
            mtl_error(L, fn, "range must be {lo, hi} with lo < hi");
    }
    lua_pushvalue(L, handle);
    return 1;
}

#define OUTPUT_KEY "mtlab.plot.output"

void mtl_set_output(lua_State *L, const mtl_output *out)
{
    if (out) {
        mtl_output *o = lua_newuserdatauv(L, sizeof *o, 0);
        *o = *out;
    } else {
        lua_pushnil(L);
    }
    lua_setfield(L, LUA_REGISTRYINDEX, OUTPUT_KEY);
}

/* The output set by mtl_set_output, or NULL: stdout. */
static const mtl_output *output_of(lua_State *L)
{
    lua_getfield(L, LUA_REGISTRYINDEX, OUTPUT_KEY);
    const mtl_output *o = lua_touserdata(L, -1);
    lua_pop(L, 1);
    return o;
}

int mtl_default_beam(lua_State *L)
{
    const mtl_output *out = output_of(L);
    return out && out->beam ? out->beam(out->ctx) : MT_DECODE_DEFAULT_BEAM;
}

/* The size and abilities of where the plot goes: the output set for the state (the console:
 * its width; colour only for show, whose text it paints), else stdout (a terminal's width,
 * colour when it is a terminal). */
static plot_text_opts terminal_opts(lua_State *L, int idx, const char *fn, int show)
{
    static const char *const known[] = {"width", "height", "color", "ascii", NULL};
    mtl_check_options(L, idx, fn, known);
    const mtl_output *out = output_of(L);
    int tty = isatty(STDOUT_FILENO);
    struct winsize ws;
    int cols = tty && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col ? ws.ws_col : 80;
    if (out) {
        cols = out->width(out->ctx);
        tty = show && out->color(out->ctx);
    }
    const char *lang = getenv("LC_ALL");
    if (!lang || !*lang) lang = getenv("LC_CTYPE");
    if (!lang || !*lang) lang = getenv("LANG");
    int utf8 = lang && (strstr(lang, "UTF-8") || strstr(lang, "utf8") || strstr(lang, "UTF8") ||
                        strstr(lang, "utf-8"));
    const char *no_color = getenv("NO_COLOR");
    plot_text_opts o;
    o.width = (int)mtl_opt_integer(L, idx, fn, "width",
                                   cols > 100  ? 100
                                   : cols < 10 ? 10
                                               : cols,
                                   10, 1000);
    int rows = out && out->height ? out->height(out->ctx) : 20;
    o.height = (int)mtl_opt_integer(L, idx, fn, "height", rows < 4 ? 4 : rows, 4, 500);
    o.color = mtl_opt_boolean(L, idx, fn, "color", tty && !(no_color && *no_color));
    o.ascii = mtl_opt_boolean(L, idx, fn, "ascii", !utf8);
    return o;
}

/* p:text([{width=, height=, color=, ascii=}]) -> string */
static int p_text(lua_State *L)
{
    plot_handle *h = check_plot(L, 1, "mtlab.plot:text");
    lua_settop(L, 2);
    plot_text_opts o = terminal_opts(L, 2, "mtlab.plot:text", 0);
    char *text = plot_text(h->p, &o);
    if (!text) mtl_error(L, "mtlab.plot:text", "%s", mt_last_error());
    lua_pushstring(L, text);
    free(text);
    return 1;
}

/* p:show([opts]): the drawing on stdout, or where mtl_set_output sends it */
static int p_show(lua_State *L)
{
    plot_handle *h = check_plot(L, 1, "mtlab.plot:show");
    lua_settop(L, 2);
    plot_text_opts o = terminal_opts(L, 2, "mtlab.plot:show", 1);
    const mtl_output *out = output_of(L);
    if (out) {
        char *text = plot_text(h->p, &o);
        if (!text) mtl_error(L, "mtlab.plot:show", "%s", mt_last_error());
        out->write(out->ctx, text, strlen(text));
        free(text);
        return 0;
    }
    fflush(stdout);
    if (plot_text_write(h->p, &o, stdout) < 0)
        mtl_error(L, "mtlab.plot:show", "%s", mt_last_error());
    fflush(stdout);
    return 0;
}

/* p:save(path [, {width=, height=}]) -> path */
static int p_save(lua_State *L)
{
    static const char *const fn = "mtlab.plot:save";
    static const char *const known[] = {"width", "height", NULL};
    plot_handle *h = check_plot(L, 1, fn);
    const char *path = luaL_checkstring(L, 2);
    lua_settop(L, 3);
    mtl_check_options(L, 3, fn, known);
    int w = (int)mtl_opt_integer(L, 3, fn, "width", 800, 50, 20000);
    int ht = (int)mtl_opt_integer(L, 3, fn, "height", 500, 50, 20000);
    if (plot_save(h->p, path, w, ht) < 0) mtl_error(L, fn, "%s", mt_last_error());
    lua_pushvalue(L, 2);
    return 1;
}

static int p_tostring(lua_State *L)
{
    plot_handle *h = luaL_checkudata(L, 1, PLOT_META);
    lua_pushfstring(L, "<mtlab.plot %s%s>", h->kind, h->p ? "" : " closed");
    return 1;
}

void mtl_open_plot(lua_State *L)
{
    static const luaL_Reg meta[] = {
        {"__gc", plot_gc}, {"__close", plot_gc}, {"__tostring", p_tostring}, {NULL, NULL}};
    static const luaL_Reg methods[] = {
        {"show", p_show}, {"save", p_save}, {"text", p_text}, {"close", plot_gc}, {NULL, NULL}};
    luaL_newmetatable(L, PLOT_META);
    luaL_setfuncs(L, meta, 0);
    luaL_newlib(L, methods);
    lua_setfield(L, -2, "__index");
    lua_pop(L, 1);
    static const luaL_Reg fns[] = {
        {"line", l_line}, {"bar", l_bar}, {"heatmap", l_heatmap}, {NULL, NULL}};
    luaL_newlib(L, fns);
    lua_setfield(L, -2, "plot");
}
