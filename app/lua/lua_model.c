/* mtlab.load and the mtlab.model handle: a model bundle (or a rule-based peer such as
 * apertium:spa-eng) that translates and shows its probes.
 *
 * A handle runs on the thread that calls it (a CUDA backend is bound to the thread that opened
 * it: keep a handle on the Lua state that loaded it). Streaming callbacks run inside the
 * decode through lua_pcall: an error there cancels the decode and is raised again, traceback
 * included (any other value raised, e.g. a table, as it is), once the engine has returned and
 * freed what it holds. Closing a handle from inside its own callback marks it and cancels the
 * decode; it is freed when the decode has returned, and translate raises that it was closed. */
#include "common/progress.h"
#include "lua/lua_internal.h"
#include "lua/mtlab_lua.h"
#include "mtlab/attribution.h"
#include "mtlab/backend.h"
#include "mtlab/bundle.h"
#include "mtlab/decode.h"
#include "mtlab/error.h"
#include "mtlab/files.h"
#include "mtlab/model.h"
#include "mtlab/probe.h"
#include "mtlab/runner.h"
#include "mtlab/tokenizer.h"
#include "mtlab/translator.h"

#include <jansson.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MODEL_META "mtlab.model"

typedef struct {
    char *path; /* as given to mtlab.load */
    char *name; /* mt_bundle_name of the directory, or "apertium:MODE" */
    mt_runner *run; /* a bundle (model and tokenizer below are its own) ... */
    mt_model *model;
    mt_tokenizer *tok;
    mt_translator *peer; /* ... or a rule-based system */
    const char *device; /* the backend's name ("cpu", "cuda:0") */
    const char *precision; /* "fp32", "int8" or "bf16" (mtlab/model.h) */
    int busy; /* a translate or probe is running */
    int closed; /* closed (freed once not busy) */
} model_handle;

static void handle_free(model_handle *h)
{
    mt_runner_close(h->run);
    mt_translator_close(h->peer);
    h->run = NULL;
    free(h->path);
    free(h->name);
    h->model = NULL;
    h->tok = NULL;
    h->peer = NULL;
    h->path = h->name = NULL;
}

/* Closed while busy (from its own callback): marked, and the decode cancelled; translate frees
 * it once the engine has returned and raises that the model was closed. */
static int model_close(lua_State *L)
{
    model_handle *h = luaL_checkudata(L, 1, MODEL_META);
    h->closed = 1;
    if (!h->busy) handle_free(h);
    else atomic_store(&mtl_context_of(L)->cancel, 1);
    return 0;
}

/* The handle at idx, open; fn names the caller in the error. */
static model_handle *check_model(lua_State *L, int idx, const char *fn)
{
    model_handle *h = luaL_checkudata(L, idx, MODEL_META);
    if (h->closed) mtl_error(L, fn, "the model handle is closed");
    if (h->busy) mtl_error(L, fn, "the model is busy (called again from its own callback)");
    return h;
}

/* ---------------------------------------------------------------- loading */

/* mtlab.load(path [, {device=, precision=}]) */
static int l_load(lua_State *L)
{
    static const char *const fn = "mtlab.load";
    static const char *const known[] = {"device", "precision", NULL};
    lua_settop(L, 2); /* optional arguments at fixed indices, whatever follows */
    const char *path = luaL_checkstring(L, 1);
    mtl_check_options(L, 2, fn, known);
    const char *device = mtl_opt_string(L, 2, fn, "device", "cpu");
    int flags = mt_runner_precision_flags(mtl_opt_string(L, 2, fn, "precision", "fp32"));
    if (flags < 0) mtl_error(L, fn, "%s", mt_last_error());
    model_handle *h = lua_newuserdatauv(L, sizeof *h, 0);
    memset(h, 0, sizeof *h);
    luaL_setmetatable(L, MODEL_META);
    if (!strncmp(path, "apertium:", 9)) {
        mt_translate_opts o = mt_translate_defaults();
        if (!(h->peer = mt_translator_open(path, &o))) mtl_error(L, fn, "%s", mt_last_error());
        h->path = mt_xstrdup(path);
        h->name = mt_xstrdup(path);
        h->device = "cpu";
        h->precision = "fp32";
        return 1;
    }
    char cfg[4096];
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
        mtl_error(L, fn, "no model bundle at '%s' (not a directory)", path);
    snprintf(cfg, sizeof cfg, "%s/config.json", path);
    if (access(cfg, R_OK) != 0)
        mtl_error(L, fn, "no model bundle at '%s' (config.json missing)", path);
    if (!(h->run = mt_runner_open(path, device, (unsigned)flags)))
        mtl_error(L, fn, "%s", mt_last_error());
    h->model = h->run->model;
    h->tok = h->run->tok;
    h->path = mt_xstrdup(path);
    char name[256];
    mt_bundle_name(name, sizeof name, path);
    h->name = mt_xstrdup(name);
    h->device = h->run->backend->name;
    h->precision = mt_precision_name(mt_model_precision(h->model));
    return 1;
}

/* ---------------------------------------------------------------- fields */

static void push_json(lua_State *L, json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        const char *k;
        json_t *x;
        lua_createtable(L, 0, (int)json_object_size(v));
        json_object_foreach(v, k, x)
        {
            push_json(L, x);
            lua_setfield(L, -2, k);
        }
        break;
    }
    case JSON_ARRAY: {
        size_t i;
        json_t *x;
        lua_createtable(L, (int)json_array_size(v), 0);
        json_array_foreach(v, i, x)
        {
            push_json(L, x);
            lua_rawseti(L, -2, (lua_Integer)i + 1);
        }
        break;
    }
    case JSON_STRING: lua_pushstring(L, json_string_value(v)); break;
    case JSON_INTEGER: lua_pushinteger(L, (lua_Integer)json_integer_value(v)); break;
    case JSON_REAL: lua_pushnumber(L, json_real_value(v)); break;
    case JSON_TRUE: lua_pushboolean(L, 1); break;
    case JSON_FALSE: lua_pushboolean(L, 0); break;
    default: lua_pushnil(L); break;
    }
}

/* model.config: config.json as a Lua table (read when asked: it is small) */
static void push_config(lua_State *L, const model_handle *h)
{
    if (h->peer) {
        lua_newtable(L);
        return;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", h->path);
    json_error_t err;
    FILE *f = mt_file_fopen(path, MT_FILE_REGULAR);
    if (!f) mtl_error(L, "mtlab.model.config", "%s", mt_last_error());
    json_t *root = json_loadf(f, 0, &err);
    fclose(f);
    if (!root)
        mtl_error(L, "mtlab.model.config", "%s:%d: %s", path, err.line, mt_error_oneline(err.text));
    push_json(L, root);
    json_decref(root);
}

static void format_params(char *out, size_t len, size_t n)
{
    if (n >= 1000000000) snprintf(out, len, "%.1fB", (double)n / 1e9);
    else if (n >= 1000000) snprintf(out, len, "%.1fM", (double)n / 1e6);
    else if (n >= 1000) snprintf(out, len, "%.1fk", (double)n / 1e3);
    else snprintf(out, len, "%zu", n);
}

static const char *arch_of(const model_handle *h)
{
    return h->peer ? mt_translator_kind(h->peer) : mt_model_get_config(h->model)->arch;
}

static int model_tostring(lua_State *L)
{
    model_handle *h = luaL_checkudata(L, 1, MODEL_META);
    if (h->closed) {
        lua_pushliteral(L, "<mtlab.model closed>");
        return 1;
    }
    char params[32] = "rules";
    if (h->model) format_params(params, sizeof params, mt_model_param_count(h->model));
    /* the precision only when it is not the default, as the workbench's pane titles do */
    int other = strcmp(h->precision, "fp32") != 0;
    lua_pushfstring(L, "<mtlab.model %s%s%s \xc2\xb7 %s \xc2\xb7 %s \xc2\xb7 %s>", h->name,
                    other ? " \xc2\xb7 " : "", other ? h->precision : "", arch_of(h), params,
                    h->device);
    return 1;
}

static int model_index(lua_State *L)
{
    model_handle *h = luaL_checkudata(L, 1, MODEL_META);
    const char *key = luaL_checkstring(L, 2);
    luaL_getmetatable(L, MODEL_META);
    if (lua_getfield(L, -1, "methods"), lua_getfield(L, -1, key) != LUA_TNIL) return 1;
    if (h->closed) mtl_error(L, "mtlab.model", "the model handle is closed (reading '%s')", key);
    if (!strcmp(key, "name")) lua_pushstring(L, h->name);
    else if (!strcmp(key, "path")) lua_pushstring(L, h->path);
    else if (!strcmp(key, "arch")) lua_pushstring(L, arch_of(h));
    else if (!strcmp(key, "device")) lua_pushstring(L, h->device);
    else if (!strcmp(key, "precision")) lua_pushstring(L, h->precision);
    else if (!strcmp(key, "params"))
        lua_pushinteger(L, h->model ? (lua_Integer)mt_model_param_count(h->model) : 0);
    else if (!strcmp(key, "config")) push_config(L, h);
    else lua_pushnil(L);
    return 1;
}

/* ---------------------------------------------------------------- translate */

typedef struct {
    lua_State *L;
    model_handle *h;
    int on_token; /* stack index of the callback, 0 when none */
    int handler; /* stack index of the traceback handler */
    int failed; /* the callback raised: its message is in the registry */
    int error_ref;
    cli_progress bar;
    int show_bar;
    size_t done;
} translate_call;

/* on_token's message handler: a string gets the traceback; any other value (error{...},
 * error(42)) is left as it is, so that the caller's pcall gets the very value raised. */
static int callback_handler(lua_State *L)
{
    if (lua_type(L, 1) != LUA_TSTRING) return 1;
    return mtl_traceback(L);
}

static void call_on_token(translate_call *c, const mt_decode_event *e)
{
    lua_State *L = c->L;
    lua_pushvalue(L, c->on_token);
    const char *piece = e->n_tokens > 0 ? mt_tokenizer_id_to_piece(c->h->tok, e->token) : "";
    lua_pushstring(L, piece ? piece : "");
    lua_pushinteger(L, e->sentence + 1);
    char *text = mt_tokenizer_decode(c->h->tok, (const int *)e->tokens, (size_t)e->n_tokens);
    lua_pushstring(L, text ? text : "");
    free(text);
    if (lua_pcall(L, 3, 0, c->handler) != LUA_OK) {
        c->failed = 1;
        c->error_ref = luaL_ref(L, LUA_REGISTRYINDEX);
        atomic_store(&mtl_context_of(L)->cancel, 1);
    }
}

static void on_decode_event(void *user, const mt_decode_event *e)
{
    translate_call *c = user;
    if (c->failed || c->h->closed) return; /* the decode is cancelled: its last step's events */
    if (e->final) {
        c->done++;
        if (c->show_bar) cli_progress_update(&c->bar, c->done);
        return;
    }
    if (c->on_token && e->n_tokens > 0) call_on_token(c, e);
}

static void push_result(lua_State *L, const mt_hypothesis *hy, const mt_decode_result *res)
{
    lua_createtable(L, 0, 10);
    mtl_set_string(L, "text", hy->text ? hy->text : "");
    mtl_set_integer(L, "tokens", hy->n_ids);
    mtl_set_number(L, "time_s", hy->seconds);
    mtl_set_integer(L, "state_bytes", (lua_Integer)res->state_bytes);
    mtl_set_integer(L, "model_state_bytes", (lua_Integer)res->model_state_bytes);
    mtl_set_number(L, "score", hy->score);
    mtl_set_number(L, "logprob", hy->logprob);
    lua_pushboolean(L, hy->finished);
    lua_setfield(L, -2, "finished");
    lua_createtable(L, hy->n_ids, 0);
    for (int i = 0; i < hy->n_ids; i++) {
        lua_pushinteger(L, hy->ids[i]);
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "ids");
}

/* A rule-based peer: no streaming tokens, no decoding state. */
static int translate_peer(lua_State *L, model_handle *h, const char **texts, size_t n, int single)
{
    char **hyps = lua_newuserdatauv(L, (n ? n : 1) * sizeof *hyps, 0);
    h->busy = 1;
    int rc = mt_translator_translate(h->peer, hyps, texts, n, NULL, NULL);
    h->busy = 0;
    if (rc < 0) mtl_error(L, "mtlab.model:translate", "%s", mt_last_error());
    const mt_translate_stats *st = mt_translator_last_stats(h->peer);
    lua_createtable(L, (int)n, 0);
    for (size_t i = 0; i < n; i++) {
        lua_createtable(L, 0, 6);
        mtl_set_string(L, "text", hyps[i]);
        mtl_set_number(L, "time_s", st->seconds);
        mtl_set_integer(L, "state_bytes", (lua_Integer)st->peak_bytes);
        mtl_set_integer(L, "model_state_bytes", 0); /* a peer keeps no model state */
        lua_rawseti(L, -2, (lua_Integer)i + 1);
        free(hyps[i]);
    }
    if (single) lua_geti(L, -1, 1);
    return 1;
}

typedef struct {
    mt_sources src;
} sources_box;

static int sources_box_gc(lua_State *L)
{
    sources_box *b = luaL_checkudata(L, 1, "mtlab.sources_box");
    mt_sources_free(&b->src);
    return 0;
}

/* model:translate(text | {texts} [, {beam=, max_len=, batch=, on_token=}]) */
static int m_translate(lua_State *L)
{
    static const char *const fn = "mtlab.model:translate";
    static const char *const known[] = {"beam", "max_len", "batch", "on_token", "progress", NULL};
    lua_settop(L, 3); /* optional arguments at fixed indices, whatever follows */
    model_handle *h = check_model(L, 1, fn);
    size_t n;
    int single;
    const char **texts = mtl_check_strings(L, 2, fn, "text", &n, 1, &single);
    mtl_check_options(L, 3, fn, known);
    mt_decode_opts o;
    mt_decode_opts_init(&o);
    o.beam = (int)mtl_opt_integer(L, 3, fn, "beam", mtl_default_beam(L), 1, 256);
    o.max_new_tokens = (int)mtl_opt_integer(L, 3, fn, "max_len", 0, 0, 65536);
    int batch = (int)mtl_opt_integer(L, 3, fn, "batch", MT_DECODE_DEFAULT_BATCH, 1, 4096);
    int progress = mtl_opt_boolean(L, 3, fn, "progress", 1);
    translate_call c = {.L = L, .h = h};
    if (!lua_isnoneornil(L, 3) && lua_getfield(L, 3, "on_token") != LUA_TNIL) {
        if (!lua_isfunction(L, -1))
            mtl_error(L, fn, "option on_token must be a function, not %s", luaL_typename(L, -1));
        c.on_token = lua_gettop(L);
    }
    if (h->peer) return translate_peer(L, h, texts, n, single);
    if (n > INT_MAX) mtl_error(L, fn, "%zu texts is too many for one call", n);
    lua_pushcfunction(L, callback_handler);
    c.handler = lua_gettop(L);
    mtl_context *ctx = mtl_context_of(L);
    mtl_check_interrupt(L);
    atomic_store(&ctx->cancel, 0);
    /* every text encoded and checked before any is translated, each error naming its text */
    sources_box *sb = lua_newuserdatauv(L, sizeof *sb, 0);
    memset(sb, 0, sizeof *sb);
    luaL_setmetatable(L, "mtlab.sources_box");
    int bad;
    if (mt_sources_encode(&sb->src, h->model, h->tok, texts, (int)n, &o, &bad) != 0) {
        if (bad >= 0 && !single) mtl_error(L, fn, "text[%d]: %s", bad + 1, mt_last_error());
        mtl_error(L, fn, "%s", mt_last_error());
    }
    if (!single) lua_createtable(L, (int)n, 0);
    int out = lua_gettop(L);
    c.show_bar = progress && n > 1 && isatty(STDERR_FILENO);
    if (c.show_bar) cli_progress_start(&c.bar, h->name, n);
    o.on_token = on_decode_event;
    o.user = &c;
    o.cancel = &ctx->cancel;
    mt_decode_result res;
    h->busy = 1;
    int rc = mt_translate_ids(h->model, h->tok, (const int32_t *const *)sb->src.ids, sb->src.len,
                              (int)n, batch, &o, &res);
    h->busy = 0;
    char msg[1024] = "";
    if (rc != 0) snprintf(msg, sizeof msg, "%s", mt_last_error());
    else if (!(c.failed || ctx->interrupted || h->closed))
        for (size_t i = 0; i < n; i++) {
            push_result(L, &res.hyps[i], &res);
            /* the search used, as a pane's title names it */
            if (o.beam > 1) lua_pushfstring(L, "beam %d", o.beam);
            else lua_pushliteral(L, "greedy");
            lua_setfield(L, -2, "search");
            if (!single) lua_rawseti(L, out, (lua_Integer)i + 1);
        }
    if (rc == 0) mt_decode_result_free(&res);
    if (c.show_bar) cli_progress_finish(&c.bar, NULL);
    /* what stopped it, most telling first: the callback's error, an interrupt, a close from
     * the callback, the engine's error */
    if (h->closed) handle_free(h);
    if (c.failed) {
        lua_rawgeti(L, LUA_REGISTRYINDEX, c.error_ref);
        luaL_unref(L, LUA_REGISTRYINDEX, c.error_ref);
        return lua_error(L);
    }
    mtl_check_interrupt(L);
    if (h->closed)
        mtl_error(L, fn, "the model was closed during translate (by its on_token callback)");
    if (rc != 0 && res.failed_input >= 0 && !single)
        mtl_error(L, fn, "text[%d]: %s", res.failed_input + 1, msg);
    if (rc != 0) mtl_error(L, fn, "%s", msg);
    return 1;
}

/* ---------------------------------------------------------------- probes */

static const struct {
    const char *name;
    mt_probe_kind kind;
} probe_kinds[] = {
    {"state_norms", MT_PROBE_STATE_NORMS}, {"state_groups", MT_PROBE_STATE_GROUPS},
    {"attention", MT_PROBE_SELF_ATTN},     {"cross", MT_PROBE_CROSS_ATTN},
    {"implicit", MT_PROBE_IMPLICIT_ATTN},
};
#define N_PROBE_KINDS (sizeof probe_kinds / sizeof probe_kinds[0])

typedef struct {
    mt_probe_record rec;
    int32_t *src, *hyp;
} probe_box;

static int probe_box_gc(lua_State *L)
{
    probe_box *b = luaL_checkudata(L, 1, "mtlab.probe_box");
    mt_probe_record_free(&b->rec);
    free(b->src);
    free(b->hyp);
    memset(b, 0, sizeof *b);
    return 0;
}

/* Encodes text (or takes a list of ids) into a malloc'd array. */
static int32_t *probe_ids(lua_State *L, int idx, const model_handle *h, const char *what, int *n)
{
    static const char *const fn = "mtlab.model:probe";
    if (lua_istable(L, idx)) {
        if (lua_getfield(L, idx, "ids") == LUA_TTABLE) idx = lua_gettop(L); /* a result */
        else lua_pop(L, 1);
        lua_Integer len = luaL_len(L, idx);
        int32_t *ids = mt_xmalloc(((size_t)len + 1) * sizeof *ids);
        for (lua_Integer i = 1; i <= len; i++) {
            int ok;
            lua_Integer v = (lua_geti(L, idx, i), lua_tointegerx(L, -1, &ok));
            lua_pop(L, 1);
            if (!ok || v < 0 || v >= mt_tokenizer_vocab_size(h->tok)) {
                free(ids);
                mtl_error(L, fn, "%s[%lld] is not a token id of this model", what, (long long)i);
            }
            ids[i - 1] = (int32_t)v;
        }
        *n = (int)len;
        return ids;
    }
    if (lua_type(L, idx) != LUA_TSTRING)
        mtl_error(L, fn, "%s must be a string, a list of token ids or a translate result, not %s",
                  what, luaL_typename(L, idx));
    int *raw;
    size_t len;
    /* a source text goes through the model's prompt template, as translate does */
    int rc = !strcmp(what, "src")
                 ? mt_source_encode(h->model, h->tok, lua_tostring(L, idx), &raw, &len)
                 : mt_tokenizer_encode(h->tok, lua_tostring(L, idx), &raw, &len);
    if (rc < 0) mtl_error(L, fn, "%s: %s", what, mt_last_error());
    int32_t *ids = mt_xmalloc((len + 1) * sizeof *ids);
    for (size_t i = 0; i < len; i++) ids[i] = raw[i];
    free(raw);
    *n = (int)len;
    return ids;
}

/* Labels of one axis of map p of record r (malloc'd strings in an array of n). */
static char **axis_labels(const model_handle *h, const mt_probe_record *r, mt_probe_axis axis,
                          int n)
{
    char **out = mt_xcalloc((size_t)n + 1, sizeof *out);
    for (int i = 0; i < n; i++) {
        char buf[256];
        const char *label = NULL;
        /* a token as the engine shows it: "her" for "Ġher", "Dios" for "▁Dios" */
        if (axis == MT_PROBE_AXIS_TARGET && i < r->n_tokens)
            label = mt_tokenizer_label(h->tok, r->tokens[i], buf, sizeof buf);
        else if (axis == MT_PROBE_AXIS_SOURCE && i < r->n_src)
            label = mt_tokenizer_label(h->tok, r->src[i], buf, sizeof buf);
        else if (axis == MT_PROBE_AXIS_LAYER)
            snprintf(buf, sizeof buf, "layer %d", i + 1), label = buf;
        else if (axis == MT_PROBE_AXIS_GROUP)
            snprintf(buf, sizeof buf, "group %d", i + 1), label = buf;
        out[i] = mt_xstrdup(label ? label : "?");
    }
    return out;
}

static void free_strv(char **v, int n)
{
    for (int i = 0; v && i < n; i++) free(v[i]);
    free(v);
}

/* model:probe(src, hyp [, {kind=, layer=, head=, encoder=}]) -> mtlab.matrix */
static int m_probe(lua_State *L)
{
    static const char *const fn = "mtlab.model:probe";
    static const char *const known[] = {"kind", "layer", "head", "encoder", NULL};
    lua_settop(L, 4); /* optional arguments at fixed indices, whatever follows */
    model_handle *h = check_model(L, 1, fn);
    if (h->peer) mtl_error(L, fn, "%s has no probes (a rule-based system)", h->name);
    mtl_check_options(L, 4, fn, known);
    const char *kind_name = mtl_opt_string(L, 4, fn, "kind", NULL);
    /* 1-based when given (0: the first map, the heads' mean) */
    lua_Integer layer = mtl_opt_integer(L, 4, fn, "layer", 0, 1, 4096);
    lua_Integer head = mtl_opt_integer(L, 4, fn, "head", 0, 1, 4096);
    int encoder = mtl_opt_boolean(L, 4, fn, "encoder", 0);
    size_t k = 0;
    if (kind_name) {
        while (k < N_PROBE_KINDS && strcmp(probe_kinds[k].name, kind_name)) k++;
        if (k == N_PROBE_KINDS)
            mtl_error(L, fn,
                      "unknown kind '%s' (state_norms, state_groups, attention, cross, "
                      "implicit)",
                      kind_name);
    }
    probe_box *b = lua_newuserdatauv(L, sizeof *b, 0);
    memset(b, 0, sizeof *b);
    luaL_setmetatable(L, "mtlab.probe_box");
    int n_src, n_hyp;
    b->src = probe_ids(L, 2, h, "src", &n_src);
    b->hyp = probe_ids(L, 3, h, "hyp", &n_hyp);
    mt_probe_opts po = {0};
    if (kind_name) po.kinds = 1u << probe_kinds[k].kind;
    h->busy = 1;
    int rc = mt_probe_run(h->model, b->src, n_src, b->hyp, n_hyp, &po, &b->rec);
    h->busy = 0;
    if (rc < 0) mtl_error(L, fn, "%s", mt_last_error());
    const mt_probe_record *r = &b->rec;
    const mt_probe_map *map = NULL;
    char avail[512] = "";
    for (int i = 0; i < r->n_maps; i++) {
        const mt_probe_map *p = &r->maps[i];
        if (kind_name && p->kind != probe_kinds[k].kind) continue;
        if (p->encoder != encoder) continue;
        char one[48];
        snprintf(one, sizeof one, "%s%d", avail[0] ? ", " : "", p->layer + 1);
        strncat(avail, one, sizeof avail - strlen(avail) - 1);
        if (!map && (layer == 0 || p->layer + 1 == layer)) map = p;
    }
    const char *what_kind = kind_name ? kind_name : "any kind";
    if (!map && !avail[0])
        mtl_error(L, fn, "%s has no %s%s map", h->name, encoder ? "encoder " : "", what_kind);
    if (!map)
        mtl_error(L, fn, "%s has no %s map at layer %lld (layers: %s)", h->name, what_kind,
                  (long long)layer, avail);
    if (head > map->heads)
        mtl_error(L, fn, "head %lld is out of range 1..%d", (long long)head, map->heads);
    size_t cells = (size_t)map->rows * (size_t)map->cols;
    float *values = mt_xcalloc(cells ? cells : 1, sizeof *values);
    for (int hd = 0; hd < map->heads; hd++) {
        if (head && hd != head - 1) continue;
        const float *src = map->values + (size_t)hd * cells;
        for (size_t i = 0; i < cells; i++) values[i] += src[i];
    }
    if (!head && map->heads > 1)
        for (size_t i = 0; i < cells; i++) values[i] /= (float)map->heads;
    char **rows = axis_labels(h, r, map->row_axis, map->rows);
    char **cols = axis_labels(h, r, map->col_axis, map->cols);
    char what[128];
    char where[32] = "all layers";
    if (map->layer >= 0) snprintf(where, sizeof where, "layer %d", map->layer + 1);
    snprintf(what, sizeof what, "%s%s, %s%s", encoder ? "encoder " : "", mt_probe_map_name(map),
             where, map->heads > 1 ? (head ? ", one head" : ", mean of heads") : "");
    mtl_push_matrix(L, values, map->rows, map->cols, (const char *const *)rows,
                    (const char *const *)cols, what);
    free_strv(rows, map->rows);
    free_strv(cols, map->cols);
    return 1;
}

/* model:attribute(src, hyp [, {method=, steps=, rule=, contrast=, baseline=}]) -> mtlab.matrix:
 * gradient attribution (mtlab/attribution.h) of each target token (rows: hyp, then <eos>) onto
 * the inputs (columns: the source side, then the target side); hyp nil: the model's greedy
 * translation of src. */
static int m_attribute(lua_State *L)
{
    static const char *const fn = "mtlab.model:attribute";
    static const char *const known[] = {"method", "steps", "rule", "contrast", "baseline", NULL};
    lua_settop(L, 4);
    model_handle *h = check_model(L, 1, fn);
    if (h->peer) mtl_error(L, fn, "%s has no gradients (a rule-based system)", h->name);
    mtl_check_options(L, 4, fn, known);
    mt_attr_opts o;
    mt_attr_opts_init(&o);
    const char *method = mtl_opt_string(L, 4, fn, "method", "saliency");
    if (mt_attr_method_parse(method, &o.method)) mtl_error(L, fn, "%s", mt_last_error());
    o.steps = (int)mtl_opt_integer(L, 4, fn, "steps", 0, 1, MT_ATTR_MAX_STEPS);
    const char *rule = mtl_opt_string(L, 4, fn, "rule", NULL);
    if (rule && o.method != MT_ATTR_INTEGRATED_GRADIENTS)
        mtl_error(L, fn, "rule is for method integrated_gradients");
    if (rule && mt_attr_rule_parse(rule, &o.rule)) mtl_error(L, fn, "%s", mt_last_error());
    const char *baseline = mtl_opt_string(L, 4, fn, "baseline", "pad");
    if (!strcmp(baseline, "zero")) o.baseline = MT_ATTR_BASELINE_ZERO;
    else if (strcmp(baseline, "pad"))
        mtl_error(L, fn, "baseline must be 'pad' or 'zero', not '%s'", baseline);
    int has_contrast = lua_istable(L, 4) && lua_getfield(L, 4, "contrast") != LUA_TNIL;
    if (has_contrast) { /* a token id, or the text of one token (mt_tokenizer_find_token) */
        int ok;
        lua_Integer id = lua_tointegerx(L, -1, &ok);
        if (!ok && lua_type(L, -1) == LUA_TSTRING) {
            id = mt_tokenizer_find_token(h->tok, lua_tostring(L, -1));
            if (id < 0) mtl_error(L, fn, "contrast %s", mt_last_error());
            ok = 1;
        }
        if (!ok || id < 0 || id >= mt_model_get_config(h->model)->vocab_size)
            mtl_error(L, fn, "contrast must be one token (an id or a text of one token)");
        o.contrast = (int32_t)id;
    }
    if (lua_istable(L, 4)) lua_pop(L, 1);
    o.vocab_limit = mt_tokenizer_vocab_size(h->tok);
    /* Ctrl-C (mtl_interrupt) sets the context's cancel flag: checked before every pass */
    mtl_context *ctx = mtl_context_of(L);
    mtl_check_interrupt(L);
    atomic_store(&ctx->cancel, 0);
    o.cancel = &ctx->cancel;
    probe_box *b = lua_newuserdatauv(L, sizeof *b, 0);
    memset(b, 0, sizeof *b);
    luaL_setmetatable(L, "mtlab.probe_box");
    int n_src, n_hyp = 0;
    b->src = probe_ids(L, 2, h, "src", &n_src);
    if (!lua_isnil(L, 3)) b->hyp = probe_ids(L, 3, h, "hyp", &n_hyp);
    mt_attribution a;
    h->busy = 1;
    int rc = mt_attribute(h->model, b->src, n_src, b->hyp, n_hyp, &o, &a);
    h->busy = 0;
    if (rc == 0 && ctx->interrupted) mt_attribution_free(&a); /* came after the last pass */
    mtl_check_interrupt(L);
    if (rc < 0) mtl_error(L, fn, "%s", mt_last_error());
    char **rows = mt_xcalloc((size_t)a.rows + 1, sizeof *rows);
    char **cols = mt_xcalloc((size_t)a.cols + 1, sizeof *cols);
    for (int i = 0; i < a.rows; i++) {
        const char *p = mt_tokenizer_id_to_piece(h->tok, a.row_ids[i]);
        rows[i] = mt_xstrdup(p ? p : "?");
    }
    for (int i = 0; i < a.cols; i++) {
        const char *p = mt_tokenizer_id_to_piece(h->tok, a.col_ids[i]);
        cols[i] = mt_xstrdup(p ? p : "?");
    }
    const char *foil = o.contrast >= 0 ? mt_tokenizer_id_to_piece(h->tok, o.contrast) : NULL;
    char what[200], how[64] = "";
    if (a.method == MT_ATTR_INTEGRATED_GRADIENTS)
        snprintf(how, sizeof how, " (%d steps, %s rule)", a.steps, mt_attr_rule_name(a.rule));
    snprintf(what, sizeof what, "%s attribution%s%s%s", mt_attr_method_name(a.method), how,
             o.contrast >= 0 ? ", contrast " : "", o.contrast >= 0 ? (foil ? foil : "?") : "");
    float *values = a.values;
    a.values = NULL;
    mtl_push_matrix(L, values, a.rows, a.cols, (const char *const *)rows, (const char *const *)cols,
                    what);
    free_strv(rows, a.rows);
    free_strv(cols, a.cols);
    mt_attribution_free(&a);
    return 1;
}

/* mtlab.average({bundles}, out [, {dtype=, force=}]) -> out: checkpoint averaging
 * (mt_model_average) into a bundle target, as `mtlab average -o` writes: an existing bundle at
 * out is replaced only with force = true, and then whole. */
static int l_average(lua_State *L)
{
    static const char *const fn = "mtlab.average";
    static const char *const known[] = {"dtype", "force", NULL};
    lua_settop(L, 3);
    luaL_checktype(L, 1, LUA_TTABLE);
    const char *out = luaL_checkstring(L, 2);
    mtl_check_options(L, 3, fn, known);
    const char *dtype_name = mtl_opt_string(L, 3, fn, "dtype", NULL);
    int force = mtl_opt_boolean(L, 3, fn, "force", 0);
    mt_dtype dt = MT_DT_F32;
    if (dtype_name && mt_model_save_dtype_parse(dtype_name, &dt) != 0)
        mtl_error(L, fn, "%s", mt_last_error());
    int dtype = dtype_name ? (int)dt : -1;
    lua_Integer n = (lua_Integer)lua_rawlen(L, 1);
    if (n < 1) mtl_error(L, fn, "no bundles to average (the list is empty)");
    if (n > 100000) mtl_error(L, fn, "%lld bundles is too many to average", (long long)n);
    for (lua_Integer i = 1; i <= n; i++) {
        if (lua_rawgeti(L, 1, i) != LUA_TSTRING)
            mtl_error(L, fn, "bundle %lld must be a path (a string), not %s", (long long)i,
                      luaL_typename(L, -1));
        lua_pop(L, 1);
    }
    const char **dirs = lua_newuserdatauv(L, (size_t)n * sizeof *dirs, 0); /* freed by the GC */
    for (lua_Integer i = 1; i <= n; i++) {
        lua_rawgeti(L, 1, i);
        dirs[i - 1] = lua_tostring(L, -1); /* the table holds the string (a raw read) */
        lua_pop(L, 1);
    }
    mt_bundle_target target;
    int rc = mt_bundle_target_begin(&target, out, force);
    if (rc == 0 && (rc = mt_model_average(dirs, (int)n, target.tmp, dtype)) == 0)
        rc = mt_bundle_target_commit(&target);
    mt_bundle_target_discard(&target);
    if (rc == MT_BUNDLE_TARGET_EXISTS)
        mtl_error(L, fn, "%s (force = true replaces it)", mt_last_error());
    if (rc != 0) mtl_error(L, fn, "%s", mt_last_error());
    lua_pushstring(L, out);
    return 1;
}

/* mtlab.architectures() -> {names}: the engine's registry, in its order */
static int l_architectures(lua_State *L)
{
    const char *const *names = mt_model_arch_list();
    lua_newtable(L);
    for (int i = 0; names[i]; i++) {
        lua_pushstring(L, names[i]);
        lua_rawseti(L, -2, i + 1);
    }
    return 1;
}

void mtl_open_model(lua_State *L)
{
    luaL_newmetatable(L, "mtlab.sources_box");
    lua_pushcfunction(L, sources_box_gc);
    lua_setfield(L, -2, "__gc");
    lua_pop(L, 1);
    luaL_newmetatable(L, "mtlab.probe_box");
    lua_pushcfunction(L, probe_box_gc);
    lua_setfield(L, -2, "__gc");
    lua_pop(L, 1);
    static const luaL_Reg meta[] = {{"__gc", model_close},
                                    {"__close", model_close},
                                    {"__tostring", model_tostring},
                                    {"__index", model_index},
                                    {NULL, NULL}};
    static const luaL_Reg methods[] = {{"translate", m_translate},
                                       {"probe", m_probe},
                                       {"attribute", m_attribute},
                                       {"close", model_close},
                                       {NULL, NULL}};
    luaL_newmetatable(L, MODEL_META);
    luaL_setfuncs(L, meta, 0);
    luaL_newlib(L, methods);
    lua_setfield(L, -2, "methods");
    lua_pop(L, 1);
    lua_pushcfunction(L, l_load);
    lua_setfield(L, -2, "load");
    lua_pushcfunction(L, l_average);
    lua_setfield(L, -2, "average");
    lua_pushcfunction(L, l_architectures);
    lua_setfield(L, -2, "architectures");
}
