/* Small helpers for running Lua safely from C (every call through lua_pcall with a traceback).
 * app/lua/ names its functions mtlua_*, as app/tui/ uses tui_* and app/cli/ cli_*: the lua_,
 * luaL_ and luaopen_ prefixes belong to Lua itself. */
#ifndef MTLAB_APP_LUA_UTIL_H
#define MTLAB_APP_LUA_UTIL_H

#include <lua.h>

/* Load and run a Lua file with a traceback message handler, leaving nresults values on the
 * stack. 0, or -1 with mt_last_error() holding Lua's message and traceback. */
int mtlua_run_file(lua_State *L, const char *path, int nresults);

/* The message handler used with lua_pcall: adds a traceback to the error message. */
int mtlua_traceback(lua_State *L);

#endif
