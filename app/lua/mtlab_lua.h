/* The `mtlab` Lua 5.4 module: one module for `mtlab run SCRIPT.lua` and the workbench's console.
 *
 *   local mtlab = require "mtlab"          -- also the global `mtlab` in scripts
 *   local m = mtlab.load "models/mamba-mha-small"
 *   print(m:translate("Y dijo Dios: Sea la luz").text)
 *
 * Every function checks its arguments before it allocates anything and raises a Lua error that
 * names the function and the argument ("mtlab.load: no model bundle at 'x' (config.json
 * missing)"). Handles are full userdata with one named metatable each (mtlab.model,
 * mtlab.matrix) and __gc, __close, __tostring. The reference of every function is the table in
 * lua_help.c (mtlab.help, the console's `? name`, README's API section). Its C names, public
 * (here) and internal (lua_internal.h), share one prefix: mtl_.
 *
 * Interrupts: mtl_interrupt() may be called from a signal handler; it cancels a running
 * decode and makes the next Lua instruction raise "interrupted" with a traceback, in the main
 * thread and in the coroutine running then. It stays armed (every instruction raises again, so
 * no pcall or coroutine.resume can swallow it) until the caller at the top level, after its
 * lua_pcall has returned, calls mtl_reset_interrupt. */
#ifndef MTLAB_APP_MTLAB_LUA_H
#define MTLAB_APP_MTLAB_LUA_H

#include <lua.h>
#include <stdio.h>

#include "common/lua_run.h"

/* A new state with Lua's standard libraries, `require "mtlab"` and the global `mtlab`.
 * NULL only when memory runs out (mt_last_error). Close it with mtl_close. */
lua_State *mtl_new(void);
void mtl_close(lua_State *L);

/* Async-signal-safe: stop what L runs as soon as possible (see the header comment). */
void mtl_interrupt(lua_State *L);
/* 1 when an interrupt was requested since the state was made (or since the last reset). */
int mtl_interrupted(lua_State *L);
/* Disarm: only where no Lua code of L is running (between two top-level calls). */
void mtl_reset_interrupt(lua_State *L);

/* Where plots go when the state's output is not the terminal (the workbench's console):
 * p:show() hands its text to write (with colour escapes when color says it can paint them),
 * p:text() and p:show() fit width columns; p:text() is plain unless asked for color=true.
 * beam, when not NULL, is the search model:translate and mtlab.eval use when given no beam=
 * (the workbench's panes', so the console decodes as the panes show; else
 * MT_DECODE_DEFAULT_BEAM, as `mtlab translate`). Copied; NULL removes it. */
typedef struct {
    void (*write)(void *ctx, const char *text, size_t len);
    int (*width)(void *ctx);
    int (*color)(void *ctx);
    void *ctx;
    int (*beam)(void *ctx);
    int (*height)(void *ctx); /* the lines a plot may take by default (NULL: 20) */
} mtl_output;
void mtl_set_output(lua_State *L, const mtl_output *out);

/* The API reference as markdown (README's "Lua API" section is this text). */
void mtl_reference(FILE *out);

#endif
