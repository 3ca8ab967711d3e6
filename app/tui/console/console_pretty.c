/* How the console prints a value: one line, tables opened to CONSOLE_PRETTY_DEPTH levels and
 * CONSOLE_PRETTY_ITEMS entries, keys in a stable order so the same table always prints the
 * same. Only raw access: printing never runs a metamethod other than __tostring/__name. */
#include <lauxlib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tui/console/console_parts.h"
#include "mtlab/error.h"

typedef struct {
    char *s;
    size_t len, cap;
} strbuf;

static void put(strbuf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        b->cap = (b->len + n + 1) * 2;
        b->s = mt_xrealloc(b->s, b->cap);
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
}

static void puts_(strbuf *b, const char *s) { put(b, s, strlen(s)); }

static void put_quoted(strbuf *b, const char *s, size_t n)
{
    puts_(b, "\"");
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        char esc[8];
        if (c == '"' || c == '\\') snprintf(esc, sizeof esc, "\\%c", c);
        else if (c == '\n') snprintf(esc, sizeof esc, "\\n");
        else if (c == '\t') snprintf(esc, sizeof esc, "\\t");
        else if (c < 32 || c == 127) snprintf(esc, sizeof esc, "\\%u", c);
        else esc[0] = (char)c, esc[1] = '\0';
        puts_(b, esc);
    }
    puts_(b, "\"");
}

static int tostring_of(lua_State *L)
{
    luaL_tolstring(L, 1, NULL);
    return 1;
}

/* luaL_tolstring's text for the value at idx (uses __tostring and __name). A __tostring that
 * raises is shown by its message: printing must not raise past the buffer it fills. */
static void put_tostring(lua_State *L, strbuf *b, int idx)
{
    lua_pushcfunction(L, tostring_of);
    lua_pushvalue(L, idx);
    int ok = lua_pcall(L, 1, 1, 0) == LUA_OK && lua_type(L, -1) == LUA_TSTRING;
    if (!ok) puts_(b, "(__tostring failed: ");
    size_t n;
    const char *s = lua_tolstring(L, -1, &n);
    if (s) put(b, s, n);
    else puts_(b, "an error that is not a string");
    if (!ok) puts_(b, ")");
    lua_pop(L, 1);
}

static int is_identifier(const char *s, size_t n)
{
    static const char *const reserved[] = {
        "and",      "break",  "do",   "else", "elseif", "end",   "false", "for",
        "function", "goto",   "if",   "in",   "local",  "nil",   "not",   "or",
        "repeat",   "return", "then", "true", "until",  "while",
    };
    if (n == 0 || (s[0] >= '0' && s[0] <= '9')) return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!(c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9')))
            return 0;
    }
    for (size_t i = 0; i < sizeof reserved / sizeof reserved[0]; i++)
        if (strlen(reserved[i]) == n && !memcmp(reserved[i], s, n)) return 0;
    return 1;
}

static void put_value(lua_State *L, strbuf *b, int idx, int depth);

/* The keys of the table at idx beyond its list part 1..n, as a sorted Lua array left on the
 * stack (strings before numbers before the rest, each group in order). */
static int key_rank(lua_State *L, int idx)
{
    int t = lua_type(L, idx);
    return t == LUA_TSTRING ? 0 : t == LUA_TNUMBER ? 1 : 2;
}

static int key_less(lua_State *L, int a, int b)
{
    int ra = key_rank(L, a), rb = key_rank(L, b);
    if (ra != rb) return ra < rb;
    if (ra == 2) return 0;
    return lua_compare(L, a, b, LUA_OPLT);
}

static void put_table(lua_State *L, strbuf *b, int idx, int depth)
{
    if (depth >= CONSOLE_PRETTY_DEPTH) {
        puts_(b, "{...}");
        return;
    }
    luaL_checkstack(L, 8, "console: table too deep");
    lua_Integer n = (lua_Integer)lua_rawlen(L, idx);
    /* the other keys, collected and insertion-sorted (tables shown are small or cut) */
    lua_newtable(L);
    int keys = lua_gettop(L);
    lua_Integer nk = 0;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        lua_pop(L, 1);
        if (lua_isinteger(L, -1) && lua_tointeger(L, -1) >= 1 && lua_tointeger(L, -1) <= n)
            continue;
        lua_Integer pos = ++nk;
        while (pos > 1) {
            lua_rawgeti(L, keys, pos - 1);
            int earlier = key_less(L, -2, -1);
            if (!earlier) {
                lua_pop(L, 1);
                break;
            }
            lua_rawseti(L, keys, pos);
            pos--;
        }
        lua_pushvalue(L, -1);
        lua_rawseti(L, keys, pos);
    }
    lua_Integer total = n + nk, shown = 0;
    puts_(b, "{");
    for (lua_Integer i = 1; i <= n && shown < CONSOLE_PRETTY_ITEMS; i++, shown++) {
        if (shown) puts_(b, ", ");
        lua_rawgeti(L, idx, i);
        put_value(L, b, lua_gettop(L), depth + 1);
        lua_pop(L, 1);
    }
    for (lua_Integer k = 1; k <= nk && shown < CONSOLE_PRETTY_ITEMS; k++, shown++) {
        if (shown) puts_(b, ", ");
        lua_rawgeti(L, keys, k);
        size_t len;
        const char *s = lua_type(L, -1) == LUA_TSTRING ? lua_tolstring(L, -1, &len) : NULL;
        if (s && is_identifier(s, len)) {
            put(b, s, len);
        } else {
            puts_(b, "[");
            put_value(L, b, lua_gettop(L), CONSOLE_PRETTY_DEPTH);
            puts_(b, "]");
        }
        puts_(b, " = ");
        lua_rawget(L, idx);
        put_value(L, b, lua_gettop(L), depth + 1);
        lua_pop(L, 1);
    }
    if (shown < total) {
        char more[48];
        snprintf(more, sizeof more, "%s... (%lld more)", shown ? ", " : "",
                 (long long)(total - shown));
        puts_(b, more);
    }
    puts_(b, "}");
    lua_pop(L, 1);
}

static void put_value(lua_State *L, strbuf *b, int idx, int depth)
{
    switch (lua_type(L, idx)) {
    case LUA_TSTRING: {
        size_t n;
        const char *s = lua_tolstring(L, idx, &n);
        if (depth == 0) put(b, s, n);
        else put_quoted(b, s, n);
        break;
    }
    case LUA_TTABLE:
        if (luaL_getmetafield(L, idx, "__tostring") != LUA_TNIL) {
            lua_pop(L, 1);
            put_tostring(L, b, idx);
        } else {
            put_table(L, b, idx, depth);
        }
        break;
    default: put_tostring(L, b, idx); break;
    }
}

char *console_pretty(lua_State *L, int idx)
{
    strbuf b = {0};
    puts_(&b, "");
    put_value(L, &b, lua_absindex(L, idx), 0);
    return b.s;
}
