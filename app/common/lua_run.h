/* Running Lua files the way every part of mtlab does: with the traceback handler. Below the
 * `mtlab` module (app/lua), the console and the training-config reader, which all use it. */
#ifndef MTLAB_COMMON_LUA_RUN_H
#define MTLAB_COMMON_LUA_RUN_H

#include <lua.h>

/* Load and run a file (or stdin when path is "-") with the traceback handler, arguments
 * from the stack's top nargs values. LUA_OK, or a Lua status with the message (and traceback)
 * left on the stack. */
int mtl_dofile(lua_State *L, const char *path, int nargs);

/* The message handler every call into Lua uses: the error and a traceback (the message alone
 * when the global error() raised it at level 0, e.g. a script's usage line). */
int mtl_traceback(lua_State *L);

#endif
