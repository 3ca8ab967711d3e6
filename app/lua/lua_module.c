/* The `mtlab` module's frame: the state with its context, interrupts and `require "mtlab"`.
 * What the bindings share (argument checking, result tables, the traceback handler, running a
 * file) is in lua_util.c, below every file of the module. */
#include "lua/lua_internal.h"
#include "lua/mtlab_lua.h"
#include "mtlab/error.h"

#include <lualib.h>
#include <stdlib.h>

static void interrupt_hook(lua_State *L, lua_Debug *ar)
{
    (void)ar;
    lua_sethook(L, NULL, 0, 0);
    luaL_error(L, "interrupted");
}

void mtlab_lua_interrupt(lua_State *L)
{
    mtl_context *c = mtl_context_of(L);
    c->interrupted = 1;
    atomic_store(&c->cancel, 1);
    /* lua_sethook is the one Lua call that is safe in a signal handler (lua.c does the same) */
    lua_sethook(L, interrupt_hook, LUA_MASKCALL | LUA_MASKRET | LUA_MASKLINE | LUA_MASKCOUNT, 1);
}

int mtlab_lua_interrupted(lua_State *L)
{
    return mtl_context_of(L)->interrupted != 0;
}

void mtlab_lua_reset_interrupt(lua_State *L)
{
    mtl_context *c = mtl_context_of(L);
    c->interrupted = 0;
    atomic_store(&c->cancel, 0);
    lua_sethook(L, NULL, 0, 0);
}

static int luaopen_mtlab(lua_State *L)
{
    lua_newtable(L);
    lua_pushcfunction(L, mtl_help_fn);
    lua_setfield(L, -2, "help");
    mtl_open_matrix(L);
    mtl_open_model(L);
    mtl_open_score(L);
    mtl_open_corpus(L);
    mtl_open_entities(L);
    mtl_open_plot(L);
    mtl_open_eval(L);
    mtl_open_jobs(L);
    return 1;
}

lua_State *mtlab_lua_new(void)
{
    mtl_context *c = calloc(1, sizeof *c);
    lua_State *L = c ? luaL_newstate() : NULL;
    if (!L) {
        free(c);
        mt_error("cannot create a Lua state: out of memory");
        return NULL;
    }
    atomic_init(&c->cancel, 0);
    *(mtl_context **)lua_getextraspace(L) = c;
    luaL_openlibs(L);
    luaL_requiref(L, "mtlab", luaopen_mtlab, 1);
    lua_pop(L, 1);
    return L;
}

void mtlab_lua_close(lua_State *L)
{
    if (!L) return;
    mtl_context *c = mtl_context_of(L);
    lua_close(L);
    free(c);
}
