/* `mtlab run SCRIPT.lua [ARGS...]`: runs a Lua script headless with the `mtlab` module.
 * The script sees `arg` as lua.c sets it (arg[0] the script, arg[1..] its arguments, negative
 * indices the command before it) and its arguments as `...`. A script error prints the
 * traceback (none after error(msg, 0), a message meant for the user as it is) and exits 1;
 * Ctrl-C interrupts the script wherever it is (a running translation included) and exits 130
 * with the traceback of where it stopped. */
#include "cli/commands.h"
#include "lua/mtlab_lua.h"
#include "mtlab/error.h"

#include <lauxlib.h>
#include <stdio.h>
#include <string.h>

static lua_State *running;

static void on_sigint(int sig)
{
    (void)sig;
    if (running) mtl_interrupt(running);
}

static int run(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "--reference")) {
        mtl_reference(stdout);
        return 0;
    }
    if (argc < 2 || (argv[1][0] == '-' && argv[1][1] != '\0')) return cli_usage(&cmd_run);
    const char *script = argv[1];
    lua_State *L = mtl_new();
    if (!L) return cli_fail("%s", mt_last_error());
    /* arg: [-2] = "mtlab", [-1] = "run", [0] = the script, [1..] = its arguments */
    lua_createtable(L, argc - 2, 3);
    lua_pushliteral(L, "mtlab");
    lua_rawseti(L, -2, -2);
    lua_pushliteral(L, "run");
    lua_rawseti(L, -2, -1);
    for (int i = 1; i < argc; i++) {
        lua_pushstring(L, argv[i]);
        lua_rawseti(L, -2, i - 1);
    }
    lua_setglobal(L, "arg");
    luaL_checkstack(L, argc, "too many arguments");
    for (int i = 2; i < argc; i++) lua_pushstring(L, argv[i]);
    running = L;
    struct sigaction old;
    cli_sigint_catch(on_sigint, &old);
    int rc = mtl_dofile(L, script, argc - 2);
    cli_sigint_restore(&old);
    running = NULL;
    int status = 0;
    if (rc != LUA_OK) {
        const char *msg = lua_tostring(L, -1);
        fprintf(stderr, "mtlab run: %s\n", msg ? msg : "(error object is not a string)");
        status = mtl_interrupted(L) ? 130 : 1;
    }
    fflush(stdout);
    mtl_close(L);
    return status;
}

const struct mt_command cmd_run = {
    "run", "SCRIPT.lua [ARGS...] | --reference",
    "run a Lua script with the mtlab module (--reference: the API as markdown)", run,
    .parallel = 1};
