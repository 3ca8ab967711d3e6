/* The `mtlab` module's frame: the state with its context, interrupts and `require "mtlab"`.
 * What the bindings share (argument checking, result tables, the traceback handler, running a
 * file) is in lua_util.c, below every file of the module. */
#include "lua/lua_internal.h"
#include "lua/mtlab_lua.h"
#include "mtlab/error.h"

#include <lualib.h>
#include <stdlib.h>
#include <string.h>

/* An interrupt stays armed until the top level clears it (mtl_reset_interrupt): the hook
 * raises "interrupted" at every instruction of Lua code, so a pcall, an xpcall's handler or a
 * coroutine.resume that catches the error only gets as far as its next instruction. It counts
 * instructions only, so C functions (a model's __close, a finaliser) still run to their end. */
static void interrupt_hook(lua_State *L, lua_Debug *ar)
{
    (void)ar;
    luaL_error(L, "interrupted");
}

static void arm(lua_State *L) { lua_sethook(L, interrupt_hook, LUA_MASKCOUNT, 1); }

void mtl_interrupt(lua_State *L)
{
    mtl_context *c = mtl_context_of(L);
    c->interrupted = 1;
    atomic_store(&c->cancel, 1);
    /* lua_sethook is the one Lua call that is safe in a signal handler (lua.c does the same);
     * a hook belongs to one thread, so the coroutine running now is armed too */
    arm(L);
    lua_State *co = atomic_load(&c->running);
    if (co) arm(co);
}

int mtl_interrupted(lua_State *L) { return mtl_context_of(L)->interrupted != 0; }

void mtl_reset_interrupt(lua_State *L)
{
    mtl_context *c = mtl_context_of(L);
    c->interrupted = 0;
    atomic_store(&c->cancel, 0);
    lua_sethook(L, NULL, 0, 0);
}

/* coroutine.resume and the functions of coroutine.wrap run the standard ones (upvalue 1) with
 * the coroutine they resume (upvalue 2 for wrap, else argument 1) recorded as the running
 * thread, so that an interrupt reaches it; a coroutine made before the interrupt has no hook of
 * its own. Once it returns, an interrupt that came meanwhile arms the thread that resumed it. */
static int tracked_resume(lua_State *L)
{
    mtl_context *c = mtl_context_of(L);
    lua_State *co = lua_tothread(L, lua_upvalueindex(2));
    if (!co) {
        luaL_checktype(L, 1, LUA_TTHREAD); /* here, where the message can name this function */
        co = lua_tothread(L, 1);
    }
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_State *outer = atomic_exchange(&c->running, co);
    if (c->interrupted) arm(co);
    int st = lua_pcall(L, lua_gettop(L) - 1, LUA_MULTRET, 0);
    atomic_store(&c->running, outer);
    if (c->interrupted) arm(L);
    if (st != LUA_OK) {
        /* where the wrap function was called, as the standard one says (it saw this C one) */
        if (lua_type(L, lua_upvalueindex(2)) == LUA_TTHREAD && lua_type(L, -1) == LUA_TSTRING) {
            luaL_where(L, 1);
            lua_insert(L, -2);
            lua_concat(L, 2);
        }
        return lua_error(L);
    }
    return lua_gettop(L);
}

static int tracked_wrap(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TFUNCTION);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, 1); /* the standard wrap: a function over a new coroutine */
    lua_getupvalue(L, -1, 1); /* its coroutine */
    lua_pushcclosure(L, tracked_resume, 2);
    return 1;
}

static void track_coroutines(lua_State *L)
{
    lua_getglobal(L, "coroutine");
    lua_getfield(L, -1, "resume");
    lua_pushcclosure(L, tracked_resume, 1);
    lua_setfield(L, -2, "resume");
    lua_getfield(L, -1, "wrap");
    lua_pushcclosure(L, tracked_wrap, 1);
    lua_setfield(L, -2, "wrap");
    lua_pop(L, 1);
}

/* loaded[meta ":" name] = each function of the handle's metatable at mt and of the tables in it
 * (its methods). */
static void name_handle(lua_State *L, int loaded, const char *meta, int mt)
{
    lua_pushnil(L);
    while (lua_next(L, mt)) {
        if (lua_type(L, -2) == LUA_TSTRING && lua_type(L, -1) == LUA_TFUNCTION) {
            lua_pushfstring(L, "%s:%s", meta, lua_tostring(L, -2));
            lua_pushvalue(L, -2);
            lua_settable(L, loaded);
        } else if (lua_type(L, -1) == LUA_TTABLE) {
            name_handle(L, loaded, meta, lua_gettop(L));
        }
        lua_pop(L, 1);
    }
}

/* luaL_argerror names a function called from C (by pcall, as a callback) only when it finds it
 * in package.loaded, at most two levels down; else the message reads "bad argument #1 to '?'".
 * So each sub-table goes there as "mtlab.corpus" (require "mtlab.corpus" gives it too), and each
 * handle's methods and metamethods as "mtlab.model:translate". */
static void name_functions(lua_State *L)
{
    luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
    int loaded = lua_gettop(L);
    lua_getfield(L, loaded, "mtlab");
    lua_pushnil(L);
    while (lua_next(L, -2)) {
        if (lua_type(L, -2) == LUA_TSTRING && lua_type(L, -1) == LUA_TTABLE) {
            lua_pushfstring(L, "mtlab.%s", lua_tostring(L, -2));
            lua_pushvalue(L, -2);
            lua_settable(L, loaded);
        }
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    lua_pushnil(L);
    while (lua_next(L, LUA_REGISTRYINDEX)) {
        if (lua_type(L, -2) == LUA_TSTRING && !strncmp(lua_tostring(L, -2), "mtlab.", 6) &&
            lua_type(L, -1) == LUA_TTABLE)
            name_handle(L, loaded, lua_tostring(L, -2), lua_gettop(L));
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
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

lua_State *mtl_new(void)
{
    mtl_context *c = calloc(1, sizeof *c);
    lua_State *L = c ? luaL_newstate() : NULL;
    if (!L) {
        free(c);
        mt_error("cannot create a Lua state: out of memory");
        return NULL;
    }
    atomic_init(&c->cancel, 0);
    atomic_init(&c->running, NULL);
    *(mtl_context **)lua_getextraspace(L) = c;
    luaL_openlibs(L);
    track_coroutines(L);
    luaL_requiref(L, "mtlab", luaopen_mtlab, 1);
    lua_pop(L, 1);
    name_functions(L);
    return L;
}

void mtl_close(lua_State *L)
{
    if (!L) return;
    mtl_context *c = mtl_context_of(L);
    lua_close(L);
    free(c);
}
