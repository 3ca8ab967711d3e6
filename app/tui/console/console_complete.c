/* Tab completion of names against the console state's globals, by raw table walks only. */
#include <lauxlib.h>
#include <stdlib.h>
#include <string.h>

#include "tui/console/console_parts.h"
#include "mtlab/error.h"

static int cmp_str(const void *x, const void *y)
{
    return strcmp(*(const char *const *)x, *(const char *const *)y);
}

/* Push the value that the dotted path text[0..len) names (raw lookups from _G), or nil. */
static void resolve(lua_State *L, const char *text, size_t len)
{
    lua_pushglobaltable(L);
    size_t i = 0;
    while (i < len) {
        const char *dot = memchr(text + i, '.', len - i);
        size_t end = dot ? (size_t)(dot - text) : len;
        if (!lua_istable(L, -1)) {
            lua_pop(L, 1);
            lua_pushnil(L);
            return;
        }
        lua_pushlstring(L, text + i, end - i);
        lua_rawget(L, -2);
        lua_remove(L, -2);
        i = end + 1;
    }
}

/* The word being completed: head[0..head_len) up to its last '.' or ':', then prefix. */
typedef struct {
    const char *head;
    size_t head_len;
    const char *prefix;
} word_parts;

/* Add the keys of the table at idx that start with w->prefix, each after w's head (functions
 * only when methods). */
static void collect(lua_State *L, int idx, const word_parts *w, int methods, char ***out, int *n,
                    int *cap)
{
    const char *head = w->head, *prefix = w->prefix;
    size_t head_len = w->head_len;
    size_t plen = strlen(prefix);
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        size_t klen;
        const char *k = lua_type(L, -2) == LUA_TSTRING ? lua_tolstring(L, -2, &klen) : NULL;
        int fits = k && klen >= plen && !memcmp(k, prefix, plen) && (k[0] != '_' || plen > 0);
        if (fits && methods && !lua_isfunction(L, -1)) fits = 0;
        if (fits) {
            int table = !methods && lua_istable(L, -1);
            if (*n == *cap) {
                *cap = *cap ? 2 * *cap : 16;
                *out = mt_xrealloc(*out, (size_t)*cap * sizeof **out);
            }
            char *c = mt_xmalloc(head_len + klen + 2);
            memcpy(c, head, head_len);
            memcpy(c + head_len, k, klen);
            c[head_len + klen] = table ? '.' : '\0';
            c[head_len + klen + table] = '\0';
            /* a method found twice (the table and its __index) is offered once */
            int dup = 0;
            for (int i = 0; i < *n && !dup; i++) dup = !strcmp((*out)[i], c);
            if (dup) free(c);
            else (*out)[(*n)++] = c;
        }
        lua_pop(L, 1);
    }
}

int console_complete(lua_State *L, const char *word, char ***out)
{
    *out = NULL;
    int n = 0, cap = 0, top = lua_gettop(L);
    const char *colon = strrchr(word, ':');
    const char *dot = strrchr(word, '.');
    const char *sep = colon && (!dot || colon > dot) ? colon : dot;
    size_t head_len = sep ? (size_t)(sep - word) + 1 : 0;
    const char *prefix = word + head_len;
    if (sep) resolve(L, word, (size_t)(sep - word));
    else lua_pushglobaltable(L);
    int v = lua_gettop(L);
    word_parts w = {word, head_len, prefix};
    if (sep == colon && colon) {
        if (lua_istable(L, v)) collect(L, v, &w, 1, out, &n, &cap);
        if (lua_getmetatable(L, v)) {
            int mt = lua_gettop(L);
            /* the methods: __index when it is a table, else the `methods` table the mtlab
             * handles keep beside their __index function */
            lua_getfield(L, mt, "__index");
            if (!lua_istable(L, -1)) lua_getfield(L, mt, "methods");
            if (lua_istable(L, -1)) collect(L, lua_gettop(L), &w, 1, out, &n, &cap);
        }
    } else if (lua_istable(L, v)) {
        collect(L, v, &w, 0, out, &n, &cap);
        if (!sep) {
            /* keywords a line often starts with complete too */
            static const char *const words[] = {"function", "local", "return", "while", "repeat"};
            for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
                if (prefix[0] && !strncmp(words[i], prefix, strlen(prefix))) {
                    if (n == cap) {
                        cap = cap ? 2 * cap : 16;
                        *out = mt_xrealloc(*out, (size_t)cap * sizeof **out);
                    }
                    (*out)[n++] = mt_xstrdup(words[i]);
                }
        }
    }
    lua_settop(L, top);
    if (n > 1) qsort(*out, (size_t)n, sizeof **out, cmp_str);
    return n;
}
