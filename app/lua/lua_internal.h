/* What the files of the `mtlab` Lua module share: the per-state context (interrupt and decode
 * cancel flags), argument checking that names the function, and the registration of each
 * sub-table. Not for use outside app/lua/. */
#ifndef MTLAB_APP_LUA_INTERNAL_H
#define MTLAB_APP_LUA_INTERNAL_H

#include <lauxlib.h>
#include <lua.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>

#include "mtlab/entities.h"

typedef struct {
    atomic_int cancel; /* a running decode's cancel flag (mt_decode_opts) */
    volatile sig_atomic_t interrupted; /* set by mtl_interrupt */
    lua_State *_Atomic running; /* the coroutine running now (NULL: the main thread) */
} mtl_context;

/* The context of L (kept in the state's extra space, so a signal handler can reach it). */
mtl_context *mtl_context_of(lua_State *L);

/* The search translate and eval use when given no beam= (lua_plot.c: the host's, as
 * mtl_set_output sets it, else MT_DECODE_DEFAULT_BEAM). */
int mtl_default_beam(lua_State *L);

/* Raise "interrupted" when an interrupt is pending (long C loops call it between items). */
void mtl_check_interrupt(lua_State *L);

/* luaL_error with "FN: " in front; never returns. */
int mtl_error(lua_State *L, const char *fn, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A list argument of strings: a table with n >= 0 strings at 1..n (or a single string when
 * single_ok; *was_single says which), none holding a NUL byte. The array lives in a userdata
 * pushed on the stack, so an error anywhere later frees it; the strings are the table's own. */
const char **mtl_check_strings(lua_State *L, int idx, const char *fn, const char *what, size_t *n,
                               int single_ok, int *was_single);

/* Options table at idx (absent or nil: none). Every key must be one of `known` (NULL-ended):
 * a misspelt option is an error, never silently ignored. */
void mtl_check_options(lua_State *L, int idx, const char *fn, const char *const *known);
/* Typed option readers; they return the default when the key is absent. */
lua_Integer mtl_opt_integer(lua_State *L, int idx, const char *fn, const char *key, lua_Integer def,
                            lua_Integer lo, lua_Integer hi);
int mtl_opt_boolean(lua_State *L, int idx, const char *fn, const char *key, int def);
const char *mtl_opt_string(lua_State *L, int idx, const char *fn, const char *key, const char *def);

/* Push t[key] = value helpers for result tables at the stack's top. */
void mtl_set_number(lua_State *L, const char *key, double v);
void mtl_set_integer(lua_State *L, const char *key, lua_Integer v);
void mtl_set_string(lua_State *L, const char *key, const char *v);

/* Entity recall as {unseen=, regular=, frequent=, all=}, each {recall (0..1), entities,
 * occurrences, hits}: what mtlab.entities.recall and mtlab.eval give. */
void mtl_push_ne_recall(lua_State *L, const mt_ne_recall *r);

/* Each pushes its sub-table or sets its functions into the module table at the stack's top. */
void mtl_open_score(lua_State *L);
void mtl_open_corpus(lua_State *L);
void mtl_open_entities(lua_State *L);
void mtl_open_model(lua_State *L);
void mtl_open_matrix(lua_State *L);
void mtl_open_plot(lua_State *L);
void mtl_open_eval(lua_State *L);
void mtl_open_jobs(lua_State *L);

/* A matrix handle over `values` (rows x cols, taken: freed by the handle) with labels
 * (NULL-able arrays of rows / cols strings, copied) and a description. Pushed on the stack. */
void mtl_push_matrix(lua_State *L, float *values, int rows, int cols, const char *const *row_labels,
                     const char *const *col_labels, const char *what);

/* The values and labels of the mtlab.matrix at idx (valid while it is alive); -1 when idx
 * holds no matrix. Labels may be NULL. */
int mtl_matrix_view(lua_State *L, int idx, const float **values, int *rows, int *cols,
                    const char *const **row_labels, const char *const **col_labels);

/* mtlab.help's table: name, signature, one sentence. */
typedef struct {
    const char *name;
    const char *signature;
    const char *summary;
} mtl_help_entry;
extern const mtl_help_entry mtl_help[];
extern const size_t mtl_help_count;
int mtl_help_fn(lua_State *L);

#endif
