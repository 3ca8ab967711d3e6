/* Small helpers for running Lua safely from C (every call through lua_pcall with a traceback). */
#ifndef MTLAB_APP_LUA_UTIL_H
#define MTLAB_APP_LUA_UTIL_H

#include <lua.h>

/* Load and run a Lua file with a traceback message handler, leaving nresults values on the
 * stack. 0, or -1 with mt_last_error() holding Lua's message and traceback. */
int lua_run_file(lua_State *L, const char *path, int nresults);

/* The message handler used with lua_pcall: adds a traceback to the error message. */
int lua_traceback_handler(lua_State *L);

#endif
