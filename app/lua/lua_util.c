#include "lua/lua_util.h"
#include "mtlab/error.h"

#include <lauxlib.h>

int mtlua_traceback(lua_State *L)
{
    const char *msg = lua_tostring(L, 1);
    if (!msg) msg = luaL_tolstring(L, 1, NULL); /* error objects that are not strings */
    luaL_traceback(L, L, msg, 1);
    return 1;
}

int mtlua_run_file(lua_State *L, const char *path, int nresults)
{
    lua_pushcfunction(L, mtlua_traceback);
    int handler = lua_gettop(L);
    if (luaL_loadfile(L, path) != LUA_OK) {
        mt_error("%s", lua_tostring(L, -1));
        lua_pop(L, 2);
        return -1;
    }
    if (lua_pcall(L, 0, nresults, handler) != LUA_OK) {
        mt_error("%s", lua_tostring(L, -1));
        lua_pop(L, 2);
        return -1;
    }
    lua_remove(L, handler);
    return 0;
}
