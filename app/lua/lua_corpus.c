/* mtlab.corpus: parallel text files as Lua iterators and lists. Files are read as sacreBLEU
 * and `mtlab eval` read them (mtlab/metrics.h mt_text_lines_read): split at '\n', trailing
 * whitespace removed, invalid UTF-8 an error naming the file, line and byte. */
#include "lua/lua_internal.h"
#include "mtlab/error.h"
#include "mtlab/metrics.h"

#include <string.h>

#define LINES_META "mtlab.lines"

static int lines_gc(lua_State *L)
{
    mt_text_lines_free(luaL_checkudata(L, 1, LINES_META));
    return 0;
}

/* Reads path into a new userdata on the stack. */
static mt_text_lines *push_lines(lua_State *L, const char *fn, const char *path)
{
    mt_text_lines *t = lua_newuserdatauv(L, sizeof *t, 0);
    memset(t, 0, sizeof *t);
    luaL_setmetatable(L, LINES_META);
    if (mt_text_lines_read(t, path) < 0) mtl_error(L, fn, "%s", mt_last_error());
    return t;
}

static int lines_next(lua_State *L)
{
    mt_text_lines *t = lua_touserdata(L, lua_upvalueindex(1));
    lua_Integer i = lua_tointeger(L, lua_upvalueindex(2));
    if ((size_t)i >= t->n) return 0;
    lua_pushinteger(L, i + 1);
    lua_replace(L, lua_upvalueindex(2));
    lua_pushstring(L, t->lines[i]);
    return 1;
}

/* mtlab.corpus.lines(path) -> iterator over the lines */
static int l_lines(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    push_lines(L, "mtlab.corpus.lines", path);
    lua_pushinteger(L, 0);
    lua_pushcclosure(L, lines_next, 2);
    return 1;
}

/* Reads both files and checks they align; leaves both userdata on the stack. */
static void push_pair_lines(lua_State *L, const char *fn, mt_text_lines **src, mt_text_lines **ref)
{
    const char *sp = luaL_checkstring(L, 1), *rp = luaL_checkstring(L, 2);
    *src = push_lines(L, fn, sp);
    *ref = push_lines(L, fn, rp);
    if ((*src)->n != (*ref)->n)
        mtl_error(L, fn, "'%s' has %zu lines but '%s' has %zu: the files are not parallel", sp,
                  (*src)->n, rp, (*ref)->n);
}

static int pairs_next(lua_State *L)
{
    mt_text_lines *s = lua_touserdata(L, lua_upvalueindex(1));
    mt_text_lines *r = lua_touserdata(L, lua_upvalueindex(2));
    lua_Integer i = lua_tointeger(L, lua_upvalueindex(3));
    if ((size_t)i >= s->n) return 0;
    lua_pushinteger(L, i + 1);
    lua_replace(L, lua_upvalueindex(3));
    lua_pushstring(L, s->lines[i]);
    lua_pushstring(L, r->lines[i]);
    return 2;
}

/* mtlab.corpus.pairs(src_path, ref_path) -> iterator of src, ref */
static int l_pairs(lua_State *L)
{
    mt_text_lines *s, *r;
    push_pair_lines(L, "mtlab.corpus.pairs", &s, &r);
    lua_pushinteger(L, 0);
    lua_pushcclosure(L, pairs_next, 3);
    return 1;
}

static void push_pair(lua_State *L, const char *src, size_t src_len, const char *ref,
                      size_t ref_len)
{
    lua_createtable(L, 0, 2);
    lua_pushlstring(L, src, src_len);
    lua_setfield(L, -2, "src");
    lua_pushlstring(L, ref, ref_len);
    lua_setfield(L, -2, "ref");
}

/* mtlab.corpus.read(src_path, ref_path) -> { {src=, ref=}, ... } */
static int l_read(lua_State *L)
{
    mt_text_lines *s, *r;
    push_pair_lines(L, "mtlab.corpus.read", &s, &r);
    lua_createtable(L, (int)s->n, 0);
    for (size_t i = 0; i < s->n; i++) {
        push_pair(L, s->lines[i], strlen(s->lines[i]), r->lines[i], strlen(r->lines[i]));
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    return 1;
}

/* The side `key` ("src" or "ref", or index 1 / 2) of pair i of the list at idx. */
static const char *pair_side(lua_State *L, int idx, lua_Integer i, const char *key, int pos)
{
    static const char *const fn = "mtlab.corpus.cat";
    if (lua_geti(L, idx, i) != LUA_TTABLE)
        mtl_error(L, fn, "pairs[%lld] must be a table {src=, ref=} or {src, ref}, not %s",
                  (long long)i, luaL_typename(L, -1));
    if (lua_getfield(L, -1, key) == LUA_TNIL) {
        lua_pop(L, 1);
        lua_geti(L, -1, pos);
    }
    if (lua_type(L, -1) != LUA_TSTRING)
        mtl_error(L, fn, "pairs[%lld].%s must be a string, not %s", (long long)i, key,
                  luaL_typename(L, -1));
    const char *s = lua_tostring(L, -1);
    lua_pop(L, 2); /* the pair table in the list keeps the string */
    return s;
}

/* mtlab.corpus.cat(pairs, n) -> pairs: each run of n consecutive pairs joined into one, both
 * sides with a space (as the paragraph test sets are built); the last run may be shorter. */
static int l_cat(lua_State *L)
{
    static const char *const fn = "mtlab.corpus.cat";
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_Integer n = luaL_checkinteger(L, 2);
    if (n < 1) mtl_error(L, fn, "n must be at least 1, not %lld", (long long)n);
    lua_Integer len = luaL_len(L, 1);
    lua_createtable(L, (int)((len + n - 1) / n), 0);
    for (lua_Integer first = 1, k = 1; first <= len; first += n, k++) {
        luaL_Buffer src, ref;
        lua_Integer last = first + n - 1 < len ? first + n - 1 : len;
        luaL_buffinit(L, &src);
        for (lua_Integer i = first; i <= last; i++) {
            if (i > first) luaL_addchar(&src, ' ');
            luaL_addstring(&src, pair_side(L, 1, i, "src", 1));
        }
        luaL_pushresult(&src);
        luaL_buffinit(L, &ref);
        for (lua_Integer i = first; i <= last; i++) {
            if (i > first) luaL_addchar(&ref, ' ');
            luaL_addstring(&ref, pair_side(L, 1, i, "ref", 2));
        }
        luaL_pushresult(&ref);
        lua_createtable(L, 0, 2);
        lua_rotate(L, -3, 1);
        lua_setfield(L, -3, "ref");
        lua_setfield(L, -2, "src");
        lua_rawseti(L, -2, k);
    }
    return 1;
}

void mtl_open_corpus(lua_State *L)
{
    luaL_newmetatable(L, LINES_META);
    lua_pushcfunction(L, lines_gc);
    lua_setfield(L, -2, "__gc");
    lua_pop(L, 1);
    static const luaL_Reg fns[] = {
        {"lines", l_lines}, {"pairs", l_pairs}, {"read", l_read}, {"cat", l_cat}, {NULL, NULL}};
    luaL_newlib(L, fns);
    lua_setfield(L, -2, "corpus");
}
