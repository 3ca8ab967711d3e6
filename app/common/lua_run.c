/* The traceback handler and running a file with it (common/lua_run.h). */
#include "common/lua_run.h"

#include <ctype.h>
#include <lauxlib.h>
#include <string.h>

/* 1 when msg's first line holds a position ("chunk:line: "), as error() gives a message at
 * level 1 or more and never at level 0 */
static int has_position(const char *msg)
{
    for (const char *p = msg; *p && *p != '\n'; p++) {
        if (*p != ':' || !isdigit((unsigned char)p[1])) continue;
        const char *q = p + 1;
        while (isdigit((unsigned char)*q)) q++;
        if (q[0] == ':' && q[1] == ' ') return 1;
    }
    return 0;
}

int mtl_traceback(lua_State *L)
{
    const char *msg = lua_tostring(L, 1);
    /* error(msg, 0): a message meant for the user as it is (a script's usage line, a bad
     * argument it names), so no traceback after it; every other error keeps its traceback */
    lua_Debug ar;
    if (msg && !has_position(msg) && lua_getstack(L, 1, &ar) && lua_getinfo(L, "Sn", &ar) &&
        ar.what[0] == 'C' && ar.name && !strcmp(ar.name, "error"))
        return 1;
    if (!msg) msg = luaL_tolstring(L, 1, NULL); /* error objects that are not strings */
    luaL_traceback(L, L, msg, 1);
    return 1;
}

int mtl_dofile(lua_State *L, const char *path, int nargs)
{
    int rc = luaL_loadfile(L, strcmp(path, "-") ? path : NULL);
    lua_insert(L, -(nargs + 1)); /* the chunk (or the message) below the arguments */
    if (rc != LUA_OK) {
        lua_pop(L, nargs);
        return rc;
    }
    int fn = lua_gettop(L) - nargs;
    lua_pushcfunction(L, mtl_traceback);
    lua_insert(L, fn);
    rc = lua_pcall(L, nargs, LUA_MULTRET, fn);
    lua_remove(L, fn);
    return rc;
}
