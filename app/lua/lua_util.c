/* What the files of the `mtlab` module share, below all of them: the state's context,
 * argument checking that names the function, result-table setters. It calls no binding. */
#include "lua/lua_internal.h"
#include "lua/mtlab_lua.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

mtl_context *mtl_context_of(lua_State *L) { return *(mtl_context **)lua_getextraspace(L); }

void mtl_check_interrupt(lua_State *L)
{
    if (mtl_context_of(L)->interrupted) luaL_error(L, "interrupted");
}

int mtl_error(lua_State *L, const char *fn, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return luaL_error(L, "%s: %s", fn, msg);
}

/* The string at idx as C text: a NUL inside it would end the text there without a word. i is
 * its 1-based place in the list `what`, 0 for the argument itself. */
static const char *c_text(lua_State *L, int idx, const char *fn, const char *what, size_t i)
{
    size_t len;
    const char *s = lua_tolstring(L, idx, &len);
    size_t nul = strlen(s);
    if (nul < len) {
        if (i) mtl_error(L, fn, "%s[%zu] holds a NUL byte at byte %zu", what, i, nul);
        mtl_error(L, fn, "%s holds a NUL byte at byte %zu", what, nul);
    }
    return s;
}

const char **mtl_check_strings(lua_State *L, int idx, const char *fn, const char *what, size_t *n,
                               int single_ok, int *was_single)
{
    idx = lua_absindex(L, idx);
    if (was_single) *was_single = 0;
    if (single_ok && lua_type(L, idx) == LUA_TSTRING) {
        const char **one = lua_newuserdatauv(L, sizeof *one, 0);
        one[0] = c_text(L, idx, fn, what, 0);
        *n = 1;
        if (was_single) *was_single = 1;
        return one;
    }
    if (!lua_istable(L, idx))
        mtl_error(L, fn, "%s must be %sa list of strings, not %s", what,
                  single_ok ? "a string or " : "", luaL_typename(L, idx));
    size_t len = (size_t)luaL_len(L, idx);
    const char **arr = lua_newuserdatauv(L, (len ? len : 1) * sizeof *arr, 0);
    for (size_t i = 0; i < len; i++) {
        if (lua_geti(L, idx, (lua_Integer)i + 1) != LUA_TSTRING)
            mtl_error(L, fn, "%s[%zu] must be a string, not %s", what, i + 1, luaL_typename(L, -1));
        arr[i] = c_text(L, -1, fn, what, i + 1);
        lua_pop(L, 1); /* the table keeps the string alive */
    }
    *n = len;
    return arr;
}

void mtl_check_options(lua_State *L, int idx, const char *fn, const char *const *known)
{
    if (lua_isnoneornil(L, idx)) return;
    if (!lua_istable(L, idx))
        mtl_error(L, fn, "options must be a table, not %s", luaL_typename(L, idx));
    idx = lua_absindex(L, idx);
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        lua_pop(L, 1);
        int ok = 0;
        if (lua_type(L, -1) == LUA_TSTRING)
            for (size_t i = 0; known[i] && !ok; i++) ok = !strcmp(known[i], lua_tostring(L, -1));
        if (!ok) {
            char list[512] = "";
            for (size_t i = 0; known[i]; i++) {
                strncat(list, i ? ", " : "", sizeof list - strlen(list) - 1);
                strncat(list, known[i], sizeof list - strlen(list) - 1);
            }
            mtl_error(L, fn, "unknown option '%s' (known: %s)", luaL_tolstring(L, -1, NULL), list);
        }
    }
}

/* Pushes opts[key] (nil when there are no options). */
static int opt_get(lua_State *L, int idx, const char *key)
{
    if (lua_isnoneornil(L, idx)) {
        lua_pushnil(L);
        return LUA_TNIL;
    }
    return lua_getfield(L, idx, key);
}

lua_Integer mtl_opt_integer(lua_State *L, int idx, const char *fn, const char *key, lua_Integer def,
                            lua_Integer lo, lua_Integer hi)
{
    int t = opt_get(L, idx, key);
    lua_Integer v = def;
    if (t != LUA_TNIL) {
        int isint;
        v = lua_tointegerx(L, -1, &isint);
        if (!isint || v < lo || v > hi)
            mtl_error(L, fn, "option %s must be a whole number from %lld to %lld, not %s", key,
                      (long long)lo, (long long)hi, luaL_tolstring(L, -1, NULL));
    }
    lua_pop(L, 1);
    return v;
}

int mtl_opt_boolean(lua_State *L, int idx, const char *fn, const char *key, int def)
{
    int t = opt_get(L, idx, key);
    int v = def;
    if (t != LUA_TNIL) {
        if (t != LUA_TBOOLEAN)
            mtl_error(L, fn, "option %s must be true or false, not %s", key, luaL_typename(L, -1));
        v = lua_toboolean(L, -1);
    }
    lua_pop(L, 1);
    return v;
}

const char *mtl_opt_string(lua_State *L, int idx, const char *fn, const char *key, const char *def)
{
    int t = opt_get(L, idx, key);
    const char *v = def;
    if (t != LUA_TNIL) {
        if (t != LUA_TSTRING)
            mtl_error(L, fn, "option %s must be a string, not %s", key, luaL_typename(L, -1));
        v = lua_tostring(L, -1); /* the options table keeps it alive */
    }
    lua_pop(L, 1);
    return v;
}

void mtl_set_number(lua_State *L, const char *key, double v)
{
    lua_pushnumber(L, v);
    lua_setfield(L, -2, key);
}

void mtl_set_integer(lua_State *L, const char *key, lua_Integer v)
{
    lua_pushinteger(L, v);
    lua_setfield(L, -2, key);
}

void mtl_set_string(lua_State *L, const char *key, const char *v)
{
    lua_pushstring(L, v);
    lua_setfield(L, -2, key);
}

void mtl_push_ne_recall(lua_State *L, const mt_ne_recall *r)
{
    lua_createtable(L, 0, MT_NE_BINS + 1);
    for (int b = -1; b < MT_NE_BINS; b++) {
        lua_createtable(L, 0, 6);
        /* recall is the paper's: the mean over distinct entities (macro); micro is hits over
         * occurrences, which a reader beside hits= and occurrences= may take it for */
        size_t hits = b < 0 ? r->hits_all : r->hits[b],
               occ = b < 0 ? r->occurrences_all : r->occurrences[b];
        mtl_set_number(L, "recall", b < 0 ? r->recall_all : r->recall[b]);
        mtl_set_number(L, "macro_recall", b < 0 ? r->recall_all : r->recall[b]);
        mtl_set_number(L, "micro_recall", occ ? (double)hits / (double)occ : 0);
        mtl_set_integer(L, "entities", (lua_Integer)(b < 0 ? r->entities_all : r->entities[b]));
        mtl_set_integer(L, "occurrences",
                        (lua_Integer)(b < 0 ? r->occurrences_all : r->occurrences[b]));
        mtl_set_integer(L, "hits", (lua_Integer)(b < 0 ? r->hits_all : r->hits[b]));
        lua_setfield(L, -2, b < 0 ? "all" : mt_ne_bin_name(b));
    }
}
