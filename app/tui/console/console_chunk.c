/* lua.c's rule for a line typed at the prompt: first try it as an expression ("return " in
 * front), then as statements; when the parser ran out of text (its message ends in "<eof>")
 * the chunk is incomplete and the console asks for another line. One step beyond lua.c: an
 * expression cut short ("{1, 2,") continues too, not only statements. */
#include <lauxlib.h>
#include <stdlib.h>
#include <string.h>

#include "tui/console/console_parts.h"
#include "mtlab/error.h"

static int compiles(lua_State *P, const char *text, int *incomplete)
{
    int top = lua_gettop(P);
    int st = luaL_loadbuffer(P, text, strlen(text), "=console");
    if (st == LUA_ERRSYNTAX && incomplete) {
        size_t len;
        const char *msg = lua_tolstring(P, -1, &len);
        static const char eof[] = "<eof>";
        *incomplete = msg && len >= sizeof eof - 1 && !strcmp(msg + len - (sizeof eof - 1), eof);
    }
    lua_settop(P, top);
    return st == LUA_OK;
}

console_chunk_kind console_chunk_check(lua_State *P, const char *chunk)
{
    size_t n = strlen(chunk);
    char *ret = mt_xmalloc(n + 8);
    memcpy(ret, "return ", 7);
    memcpy(ret + 7, chunk, n);
    ret[7 + n] = '\0';
    int expr_incomplete = 0, incomplete = 0;
    int expr = compiles(P, ret, &expr_incomplete);
    free(ret);
    if (expr) return CONSOLE_CHUNK_EXPRESSION;
    if (compiles(P, chunk, &incomplete)) return CONSOLE_CHUNK_STATEMENTS;
    return incomplete || expr_incomplete ? CONSOLE_CHUNK_INCOMPLETE : CONSOLE_CHUNK_ERROR;
}
