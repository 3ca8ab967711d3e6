/* The console's Lua thread: one lua_State from mtl_new with the `ui` table, print and
 * io.write sent to the scrollback, os.exit asking before it quits the workbench. It takes the
 * UI thread's requests in order: a chunk (run as lua.c runs a line: its values printed), a
 * `? name`, a file (--script, dofile), a bound key. Every call into Lua goes through
 * lua_pcall with the traceback handler, so an error or an interrupt prints where it happened
 * and the console goes on. */
#include <lauxlib.h>
#include <stdlib.h>
#include <string.h>

#include "tui/console/console_internal.h"
#include "lua/mtlab_lua.h"
#include "mtlab/error.h"

static tui_console *console_of(lua_State *L)
{
    return (tui_console *)lua_touserdata(L, lua_upvalueindex(1));
}

static int lua_print(lua_State *L)
{
    tui_console *c = console_of(L);
    int n = lua_gettop(L);
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    for (int i = 1; i <= n; i++) {
        if (i > 1) luaL_addchar(&b, '\t');
        luaL_tolstring(L, i, NULL);
        luaL_addvalue(&b);
    }
    luaL_addchar(&b, '\n');
    luaL_pushresult(&b);
    size_t len;
    const char *s = lua_tolstring(L, -1, &len);
    console_write(c, CONSOLE_OUT, s, len);
    return 0;
}

static int lua_io_write(lua_State *L)
{
    tui_console *c = console_of(L);
    int n = lua_gettop(L);
    for (int i = 1; i <= n; i++) {
        size_t len;
        const char *s = luaL_checklstring(L, i, &len);
        console_write(c, CONSOLE_OUT, s, len);
    }
    lua_getglobal(L, "io");
    lua_getfield(L, -1, "stdout");
    return 1;
}

/* Plots (p:show) go into the scrollback, as wide as its lines, in colour where it can. */
static void output_write(void *ctx, const char *text, size_t len)
{
    console_write(ctx, CONSOLE_OUT, text, len);
}

static int output_width(void *ctx)
{
    tui_console *c = ctx;
    pthread_mutex_lock(&c->lock);
    int w = c->text_w;
    pthread_mutex_unlock(&c->lock);
    return w;
}

static int output_color(void *ctx)
{
    tui_console *c = ctx;
    pthread_mutex_lock(&c->lock);
    int color = c->text_colors;
    pthread_mutex_unlock(&c->lock);
    return color;
}

/* The console's output lines: a plot fits them unless asked for more */
static int output_height(void *ctx)
{
    tui_console *c = ctx;
    pthread_mutex_lock(&c->lock);
    int h = c->text_h;
    pthread_mutex_unlock(&c->lock);
    return h;
}

/* The panes' search: what translate and eval decode with when given no beam= */
static int output_beam(void *ctx)
{
    tui_console *c = ctx;
    pthread_mutex_lock(&c->lock);
    int beam = c->search_beam;
    pthread_mutex_unlock(&c->lock);
    return beam;
}

/* os.exit from the console: the workbench asks first (y quits). */
static int lua_os_exit(lua_State *L)
{
    tui_console *c = console_of(L);
    ui_call call = {.op = UI_CONFIRM_QUIT, .pane = -1};
    pthread_mutex_lock(&c->lock);
    call.next = c->calls;
    c->calls = &call;
    console_wake_ui(c);
    while (!call.done) pthread_cond_wait(&c->answered, &c->lock);
    pthread_mutex_unlock(&c->lock);
    if (call.error[0]) return luaL_error(L, "os.exit: %s", call.error);
    if (call.result) return luaL_error(L, "os.exit: the workbench is quitting");
    static const char kept[] = "os.exit: not quitting (the workbench keeps running)\n";
    console_write(c, CONSOLE_OUT, kept, sizeof kept - 1);
    return 0;
}

static void set_function(lua_State *L, tui_console *c, const char *table, const char *name,
                         lua_CFunction f)
{
    if (table) lua_getglobal(L, table);
    else lua_pushglobaltable(L);
    lua_pushlightuserdata(L, c);
    lua_pushcclosure(L, f, 1);
    lua_setfield(L, -2, name);
    lua_pop(L, 1);
}

static void write_error(tui_console *c, lua_State *L)
{
    size_t len;
    const char *msg = lua_tolstring(L, -1, &len);
    if (!msg) msg = "(an error that is not a string)", len = strlen(msg);
    console_write(c, CONSOLE_ERROR, msg, len);
    console_write(c, CONSOLE_ERROR, "\n", 1);
}

/* The console's message handler. An error raised by a C function (an argument check:
 * "ui.close: no pane 5", or error()) is the user's to read: its message alone, the traceback
 * kept for F12. Any other (a runtime error, an interrupt) comes with its traceback. */
static int console_traceback(lua_State *L)
{
    tui_console *c = console_of(L);
    lua_Debug ar;
    int from_c = lua_getstack(L, 1, &ar) && lua_getinfo(L, "S", &ar) && ar.what[0] == 'C';
    const char *msg = lua_tostring(L, 1);
    if (!msg) msg = luaL_tolstring(L, 1, NULL);
    luaL_traceback(L, L, msg, 1);
    pthread_mutex_lock(&c->lock);
    free(c->last_traceback);
    c->last_traceback = mt_xstrdup(lua_tostring(L, -1));
    pthread_mutex_unlock(&c->lock);
    if (from_c) lua_pushfstring(L, "%s\n  (F12 or Ctrl-T: the traceback)", msg);
    return 1;
}

static void push_handler(tui_console *c, lua_State *L)
{
    lua_pushlightuserdata(L, c);
    lua_pushcclosure(L, console_traceback, 1);
}

/* The values on the stack as one line of text, tab-separated, pretty-printed. It may run a
 * __tostring, so it runs protected (an error there printed, not Lua's panic). */
static int format_results(lua_State *L)
{
    int n = lua_gettop(L);
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    for (int i = 1; i <= n; i++) {
        char *s = console_pretty(L, i);
        lua_pushstring(L, s);
        free(s);
        luaL_addvalue(&b);
        luaL_addchar(&b, i < n ? '\t' : '\n');
    }
    luaL_pushresult(&b);
    return 1;
}

/* Load text (as an expression first) and run it; print the values it returns. */
static void run_chunk(tui_console *c, const char *text)
{
    lua_State *L = c->L;
    int base = lua_gettop(L);
    push_handler(c, L);
    size_t n = strlen(text);
    char *ret = mt_xmalloc(n + 9);
    snprintf(ret, n + 9, "return %s;", text);
    int st = luaL_loadbuffer(L, ret, strlen(ret), "=console");
    free(ret);
    if (st != LUA_OK) {
        lua_pop(L, 1);
        st = luaL_loadbuffer(L, text, n, "=console");
    }
    if (st == LUA_OK) st = lua_pcall(L, 0, LUA_MULTRET, base + 1);
    int results = lua_gettop(L) - base - 1;
    if (st == LUA_OK && results > 0) {
        lua_pushcfunction(L, format_results);
        lua_insert(L, base + 2);
        st = lua_pcall(L, results, 1, base + 1);
    }
    if (st != LUA_OK) {
        write_error(c, L);
    } else if (results > 0) {
        size_t len;
        const char *s = lua_tolstring(L, -1, &len);
        console_write(c, CONSOLE_OUT, s, len);
    }
    lua_settop(L, base);
}

static void show_help(tui_console *c, const char *name)
{
    const char *ui = !strcmp(name, "ui") || !strcmp(name, "ui.") ? ui_help("")
                     : name[0]                                   ? ui_help(name)
                                                                 : NULL;
    if (ui) {
        console_write(c, CONSOLE_OUT, ui, strlen(ui));
        console_write(c, CONSOLE_OUT, "\n", 1);
        return;
    }
    lua_State *L = c->L;
    int base = lua_gettop(L);
    push_handler(c, L);
    lua_getglobal(L, "mtlab");
    lua_getfield(L, -1, "help");
    lua_remove(L, -2);
    if (name[0]) lua_pushstring(L, name);
    if (lua_pcall(L, name[0] ? 1 : 0, 1, base + 1) != LUA_OK) {
        write_error(c, L);
    } else {
        size_t len;
        const char *s = lua_tolstring(L, -1, &len);
        console_write(c, CONSOLE_OUT, s, len);
        console_write(c, CONSOLE_OUT, "\n", 1);
        if (!name[0]) {
            const char *more = ui_help("");
            console_write(c, CONSOLE_OUT, more, strlen(more));
        }
    }
    lua_settop(L, base);
}

static void run_file(tui_console *c, const char *path)
{
    lua_State *L = c->L;
    int base = lua_gettop(L);
    if (mtl_dofile(L, path, 0) != LUA_OK) write_error(c, L);
    lua_settop(L, base);
}

static void run_binding(tui_console *c, int key)
{
    lua_State *L = c->L;
    int base = lua_gettop(L);
    push_handler(c, L);
    lua_getfield(L, LUA_REGISTRYINDEX, "mtlab.console.bindings");
    lua_rawgeti(L, -1, key);
    lua_remove(L, -2);
    if (lua_isfunction(L, -1) && lua_pcall(L, 0, 0, base + 1) != LUA_OK) write_error(c, L);
    lua_settop(L, base);
}

static void *lua_thread(void *arg)
{
    tui_console *c = arg;
    pthread_mutex_lock(&c->lock);
    for (;;) {
        while (!c->req_head && !c->quitting) pthread_cond_wait(&c->wake_lua, &c->lock);
        if (c->quitting) break;
        console_request *r = c->req_head;
        c->req_head = r->next;
        if (!c->req_head) c->req_tail = NULL;
        /* disarmed while the lock is held: an interrupt asked once this request is taken
         * (Ctrl-C, or console_lua_stop seeing busy) is never lost */
        mtl_reset_interrupt(c->L);
        c->busy = 1;
        c->changed = 1;
        console_wake_ui(c);
        pthread_mutex_unlock(&c->lock);

        pthread_mutex_lock(&c->state_lock);
        switch (r->kind) {
        case CONSOLE_REQ_CHUNK: run_chunk(c, r->text); break;
        case CONSOLE_REQ_HELP: show_help(c, r->text); break;
        case CONSOLE_REQ_FILE: run_file(c, r->text); break;
        case CONSOLE_REQ_KEY: run_binding(c, r->key); break;
        }
        pthread_mutex_unlock(&c->state_lock);
        free(r->text);
        free(r);

        pthread_mutex_lock(&c->lock);
        mtl_reset_interrupt(c->L);
        c->busy = 0;
        c->changed = 1;
        console_wake_ui(c);
    }
    pthread_mutex_unlock(&c->lock);
    return NULL;
}

int console_lua_start(tui_console *c)
{
    lua_State *L = mtl_new();
    if (!L) return -1;
    c->L = L;
    set_function(L, c, NULL, "print", lua_print);
    set_function(L, c, "io", "write", lua_io_write);
    set_function(L, c, "os", "exit", lua_os_exit);
    mtl_set_output(
        L, &(mtl_output){output_write, output_width, output_color, c, output_beam, output_height});
    lua_newtable(L);
    lua_setfield(L, LUA_REGISTRYINDEX, "mtlab.console.bindings");
    ui_open_library(L, c);
    /* package.loaded.ui, where an argument error finds the name of a ui function called from
     * C (pcall): "bad argument #1 to 'ui.notify'", not to '?' */
    luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
    lua_getglobal(L, "ui");
    lua_setfield(L, -2, "ui");
    lua_pop(L, 1);
    if (pthread_create(&c->thread, NULL, lua_thread, c) != 0) {
        mtl_close(L);
        c->L = NULL;
        return mt_error("console: cannot start its thread");
    }
    c->thread_started = 1;
    return 0;
}

void console_lua_stop(tui_console *c)
{
    if (!c->thread_started) return;
    pthread_mutex_lock(&c->lock);
    c->quitting = 1;
    if (c->busy) mtl_interrupt(c->L);
    /* calls in flight end with an error, so the thread can reach its loop and stop */
    for (ui_call *lists[2] = {c->calls, c->waiting}, **l = lists; l < lists + 2; l++)
        for (ui_call *w = *l; w; w = w->next) {
            snprintf(w->error, sizeof w->error, "the workbench is closing");
            w->done = 1;
        }
    c->calls = c->waiting = NULL;
    pthread_cond_broadcast(&c->answered);
    pthread_cond_signal(&c->wake_lua);
    pthread_mutex_unlock(&c->lock);
    pthread_join(c->thread, NULL);
    mtl_close(c->L);
    c->L = NULL;
}
