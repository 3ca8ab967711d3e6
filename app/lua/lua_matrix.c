/* mtlab.matrix: a read-only matrix of floats with row and column labels (a probe's map). The
 * values stay in one C array: m[i][j], m:get(i, j) and m:max() read it in place; only
 * m:totable() copies. Indices are 1-based, as everywhere in Lua. */
#include "lua/lua_internal.h"
#include "mtlab/error.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MATRIX_META "mtlab.matrix"
#define ROW_META "mtlab.matrix_row"

typedef struct {
    float *values; /* (rows, cols) */
    int rows, cols;
    char **row_labels; /* (rows) or NULL */
    char **col_labels; /* (cols) or NULL */
    char *what; /* "implicit attention, layer 3" */
} matrix;

typedef struct {
    const matrix *m; /* kept alive by the row's user value */
    int row; /* 0-based */
} matrix_row;

static char **copy_labels(const char *const *labels, int n)
{
    if (!labels) return NULL;
    char **out = mt_xcalloc((size_t)n + 1, sizeof *out);
    for (int i = 0; i < n; i++) out[i] = mt_xstrdup(labels[i] ? labels[i] : "");
    return out;
}

static void free_labels(char **labels, int n)
{
    if (!labels) return;
    for (int i = 0; i < n; i++) free(labels[i]);
    free(labels);
}

static int matrix_gc(lua_State *L)
{
    matrix *m = luaL_checkudata(L, 1, MATRIX_META);
    free(m->values);
    free_labels(m->row_labels, m->rows);
    free_labels(m->col_labels, m->cols);
    free(m->what);
    memset(m, 0, sizeof *m);
    return 0;
}

void mtl_push_matrix(lua_State *L, float *values, int rows, int cols, const char *const *row_labels,
                     const char *const *col_labels, const char *what)
{
    matrix *m = lua_newuserdatauv(L, sizeof *m, 0);
    memset(m, 0, sizeof *m);
    luaL_setmetatable(L, MATRIX_META);
    m->values = values;
    m->rows = rows;
    m->cols = cols;
    m->row_labels = copy_labels(row_labels, rows);
    m->col_labels = copy_labels(col_labels, cols);
    m->what = mt_xstrdup(what ? what : "matrix");
}

int mtl_matrix_view(lua_State *L, int idx, const float **values, int *rows, int *cols,
                    const char *const **row_labels, const char *const **col_labels)
{
    matrix *m = luaL_testudata(L, idx, MATRIX_META);
    if (!m) return -1;
    *values = m->values;
    *rows = m->rows;
    *cols = m->cols;
    *row_labels = (const char *const *)m->row_labels;
    *col_labels = (const char *const *)m->col_labels;
    return 0;
}

static matrix *check_matrix(lua_State *L, int idx) { return luaL_checkudata(L, idx, MATRIX_META); }

static int check_index(lua_State *L, int arg, int n, const char *fn, const char *what)
{
    lua_Integer i = luaL_checkinteger(L, arg);
    if (i < 1 || i > n) mtl_error(L, fn, "%s %lld is out of range 1..%d", what, (long long)i, n);
    return (int)i - 1;
}

/* m:get(i, j) */
static int m_get(lua_State *L)
{
    matrix *m = check_matrix(L, 1);
    int i = check_index(L, 2, m->rows, "mtlab.matrix:get", "row");
    int j = check_index(L, 3, m->cols, "mtlab.matrix:get", "column");
    lua_pushnumber(L, m->values[(size_t)i * (size_t)m->cols + (size_t)j]);
    return 1;
}

/* m:shape() -> rows, cols */
static int m_shape(lua_State *L)
{
    matrix *m = check_matrix(L, 1);
    lua_pushinteger(L, m->rows);
    lua_pushinteger(L, m->cols);
    return 2;
}

/* m:max() / m:min() -> value, row, col (NaN cells are skipped; nil when every cell is NaN) */
static int extreme(lua_State *L, int want_max)
{
    matrix *m = check_matrix(L, 1);
    size_t n = (size_t)m->rows * (size_t)m->cols, best = n;
    for (size_t k = 0; k < n; k++) {
        float v = m->values[k];
        if (isnan(v)) continue;
        if (best == n || (want_max ? v > m->values[best] : v < m->values[best])) best = k;
    }
    if (best == n) return 0;
    lua_pushnumber(L, m->values[best]);
    lua_pushinteger(L, (lua_Integer)(best / (size_t)m->cols) + 1);
    lua_pushinteger(L, (lua_Integer)(best % (size_t)m->cols) + 1);
    return 3;
}
static int m_max(lua_State *L) { return extreme(L, 1); }
static int m_min(lua_State *L) { return extreme(L, 0); }

/* m:totable() -> { {row 1}, {row 2}, ... } */
static int m_totable(lua_State *L)
{
    matrix *m = check_matrix(L, 1);
    lua_createtable(L, m->rows, 0);
    for (int i = 0; i < m->rows; i++) {
        lua_createtable(L, m->cols, 0);
        for (int j = 0; j < m->cols; j++) {
            lua_pushnumber(L, m->values[(size_t)i * (size_t)m->cols + (size_t)j]);
            lua_rawseti(L, -2, j + 1);
        }
        lua_rawseti(L, -2, i + 1);
    }
    return 1;
}

static int push_labels(lua_State *L, char **labels, int n)
{
    lua_createtable(L, n, 0);
    for (int i = 0; labels && i < n; i++) {
        lua_pushstring(L, labels[i]);
        lua_rawseti(L, -2, i + 1);
    }
    return 1;
}
static int m_row_labels(lua_State *L)
{
    matrix *m = check_matrix(L, 1);
    return push_labels(L, m->row_labels, m->rows);
}
static int m_col_labels(lua_State *L)
{
    matrix *m = check_matrix(L, 1);
    return push_labels(L, m->col_labels, m->cols);
}

static int m_len(lua_State *L)
{
    lua_pushinteger(L, check_matrix(L, 1)->rows);
    return 1;
}

static int m_tostring(lua_State *L)
{
    matrix *m = check_matrix(L, 1);
    lua_pushfstring(L, "<mtlab.matrix %dx%d %s>", m->rows, m->cols, m->what);
    return 1;
}

/* m[i] -> a row view (m[i][j] reads the value); m.what; otherwise the methods */
static int m_index(lua_State *L)
{
    matrix *m = check_matrix(L, 1);
    if (lua_type(L, 2) == LUA_TNUMBER) {
        int i = check_index(L, 2, m->rows, "mtlab.matrix", "row");
        matrix_row *r = lua_newuserdatauv(L, sizeof *r, 1);
        r->m = m;
        r->row = i;
        lua_pushvalue(L, 1);
        lua_setiuservalue(L, -2, 1);
        luaL_setmetatable(L, ROW_META);
        return 1;
    }
    const char *key = luaL_checkstring(L, 2);
    if (!strcmp(key, "what")) {
        lua_pushstring(L, m->what);
        return 1;
    }
    luaL_getmetatable(L, MATRIX_META);
    lua_getfield(L, -1, "methods");
    lua_getfield(L, -1, key);
    return 1;
}

static int row_index(lua_State *L)
{
    matrix_row *r = luaL_checkudata(L, 1, ROW_META);
    int j = check_index(L, 2, r->m->cols, "mtlab.matrix", "column");
    lua_pushnumber(L, r->m->values[(size_t)r->row * (size_t)r->m->cols + (size_t)j]);
    return 1;
}

static int row_len(lua_State *L)
{
    lua_pushinteger(L, ((matrix_row *)luaL_checkudata(L, 1, ROW_META))->m->cols);
    return 1;
}

void mtl_open_matrix(lua_State *L)
{
    static const luaL_Reg meta[] = {{"__gc", matrix_gc},        {"__close", matrix_gc},
                                    {"__index", m_index},       {"__len", m_len},
                                    {"__tostring", m_tostring}, {NULL, NULL}};
    static const luaL_Reg methods[] = {{"get", m_get},
                                       {"shape", m_shape},
                                       {"max", m_max},
                                       {"min", m_min},
                                       {"totable", m_totable},
                                       {"row_labels", m_row_labels},
                                       {"col_labels", m_col_labels},
                                       {NULL, NULL}};
    luaL_newmetatable(L, MATRIX_META);
    luaL_setfuncs(L, meta, 0);
    luaL_newlib(L, methods);
    lua_setfield(L, -2, "methods");
    lua_pop(L, 1);
    static const luaL_Reg row_meta[] = {{"__index", row_index}, {"__len", row_len}, {NULL, NULL}};
    luaL_newmetatable(L, ROW_META);
    luaL_setfuncs(L, row_meta, 0);
    lua_pop(L, 1);
}
