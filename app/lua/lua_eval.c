/* mtlab.eval{...}: the evaluation `mtlab eval` runs (cli/eval_run.h), as Lua data. The table
 * holds every figure of the printed report, each system's hypotheses, and `text`, the report
 * exactly as `mtlab eval` prints it (also its __tostring). */
#include "common/eval_run.h"
#include "lua/lua_internal.h"
#include "mtlab/buckets.h"
#include "mtlab/decode.h"
#include "mtlab/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OUTCOME_META "mtlab.eval_outcome"

static int outcome_gc(lua_State *L)
{
    eval_outcome **o = luaL_checkudata(L, 1, OUTCOME_META);
    if (*o) {
        eval_outcome_free(*o);
        free(*o);
        *o = NULL;
    }
    return 0;
}

/* A source or reference: a file name, or a list of lines (then *_name names it). */
static void request_text(lua_State *L, const char *fn, const char *key, const char **path,
                         const mt_text_lines **lines, mt_text_lines *holder, const char *name)
{
    int t = lua_getfield(L, 1, key);
    if (t == LUA_TSTRING) {
        *path = lua_tostring(L, -1);
        return;
    }
    if (t != LUA_TTABLE)
        mtl_error(L, fn, "%s must be a file name or a list of lines, not %s", key,
                  luaL_typename(L, -1));
    size_t n;
    const char **arr = mtl_check_strings(L, -1, fn, key, &n, 0, NULL);
    holder->lines = (char **)arr; /* borrowed: eval_run copies them */
    holder->n = n;
    *lines = holder;
    *path = name ? name : key;
}

static void push_system(lua_State *L, const eval_outcome *o, size_t s)
{
    const eval_system_result *r = &o->results[s];
    lua_createtable(L, 0, 16);
    mtl_set_string(L, "name", r->name);
    mtl_set_string(L, "kind", r->kind);
    mtl_set_number(L, "bleu", r->bleu.score);
    mtl_set_number(L, "chrf", r->chrf);
    mtl_set_number(L, "chrfpp", r->chrfpp);
    int n_metrics = o->report.comet_model ? EVAL_METRICS : EVAL_COMET;
    if (o->report.comet_model) mtl_set_number(L, "comet", r->comet);
    if (o->report.paired) {
        /* {bleu=, chrf=, chrfpp=, comet=} of {p=, mean=, ci=} against the first system (COMET's
         * mean and ci on the test's scale, the mean x 100) */
        static const char *const key[EVAL_METRICS] = {"bleu", "chrf", "chrfpp", "comet"};
        lua_createtable(L, 0, EVAL_METRICS);
        for (int m = 0; m < n_metrics; m++) {
            const mt_sig_result *t = &r->sig[m];
            lua_createtable(L, 0, 4);
            if (t->has_p) mtl_set_number(L, "p", t->p);
            if (t->has_p) {
                lua_pushboolean(L, t->p <= 0.05);
                lua_setfield(L, -2, "significant");
            }
            if (t->has_ci) mtl_set_number(L, "mean", t->mean);
            if (t->has_ci) mtl_set_number(L, "ci", t->ci);
            lua_setfield(L, -2, key[m]);
        }
        lua_setfield(L, -2, "significance");
    }
    mtl_push_ne_recall(L, &r->ne);
    lua_setfield(L, -2, "ne");
    if (o->report.lexicon_source) {
        mtl_push_ne_recall(L, &r->ne_translated);
        lua_setfield(L, -2, "ne_translated");
    }
    if (o->report.names_source) {
        lua_createtable(L, 0, 3);
        mtl_set_number(L, "recall", r->names.recall);
        mtl_set_integer(L, "names", (lua_Integer)r->names.names);
        mtl_set_integer(L, "hits", (lua_Integer)r->names.hits);
        lua_setfield(L, -2, "names");
    }
    lua_createtable(L, MT_LENGTH_BUCKETS, 0);
    for (int b = 0; b < MT_LENGTH_BUCKETS; b++) {
        lua_createtable(L, 0, 5);
        mtl_set_string(L, "label", mt_length_bucket_name(b));
        mtl_set_integer(L, "segments", (lua_Integer)r->buckets[b].segments);
        mtl_set_integer(L, "src_tokens", (lua_Integer)r->buckets[b].src_tokens);
        mtl_set_number(L, "bleu", r->buckets[b].bleu_score);
        mtl_set_number(L, "chrf", r->buckets[b].chrf_score);
        lua_rawseti(L, -2, b + 1);
    }
    lua_setfield(L, -2, "buckets");
    mtl_set_number(L, "time_s", r->cost.seconds);
    mtl_set_integer(L, "hyp_tokens", (lua_Integer)r->cost.hyp_tokens);
    mtl_set_integer(L, "src_tokens", (lua_Integer)r->cost.src_tokens);
    mtl_set_integer(L, "peak_bytes", (lua_Integer)r->cost.peak_bytes);
    if (r->cost.memory_kind) mtl_set_string(L, "memory_kind", r->cost.memory_kind);
    lua_createtable(L, (int)o->report.segments, 0);
    for (size_t i = 0; o->hyps[s] && i < o->report.segments; i++) {
        lua_pushstring(L, o->hyps[s][i]);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    lua_setfield(L, -2, "hyps");
}

static int eval_tostring(lua_State *L)
{
    lua_getfield(L, 1, "text");
    return 1;
}

/* mtlab.eval{models=, src=, ref=, beam=5, device=, precision=, stats=, train_src=, train_ref=,
 * lexicon=, ner=, length_model=, hyps=, src_name=, ref_name=, names=, paired=, data=, tgt_lang=,
 * comet=}: comet is a COMET model directory (systems[i].comet, significance.comet);
 * the entity recogniser follows tgt_lang, else data's (a dataset directory), else the first
 * model's target language */
static int l_eval(lua_State *L)
{
    static const char *const fn = "mtlab.eval";
    static const char *const known[] = {
        "models",    "src",       "ref",     "beam", "device",       "precision", "stats",
        "train_src", "train_ref", "lexicon", "ner",  "length_model", "hyps",      "src_name",
        "ref_name",  "names",     "paired",  "data", "tgt_lang",     "comet",     NULL};
    lua_settop(L, 1);
    if (!lua_istable(L, 1))
        mtl_error(L, fn, "takes one table {models=, src=, ref=, ...}, not %s", luaL_typename(L, 1));
    mtl_check_options(L, 1, fn, known);
    eval_request rq;
    memset(&rq, 0, sizeof rq);
    if (lua_getfield(L, 1, "models") == LUA_TNIL) mtl_error(L, fn, "models is missing");
    size_t n;
    int models = lua_gettop(L);
    if (!lua_istable(L, models))
        mtl_error(L, fn, "models must be a list, not %s", luaL_typename(L, models));
    n = (size_t)luaL_len(L, models);
    if (n == 0 || n > EVAL_MAX_SYSTEMS)
        mtl_error(L, fn, "models must list 1 to %d systems, not %zu", EVAL_MAX_SYSTEMS, n);
    for (size_t i = 0; i < n; i++) {
        lua_geti(L, models, (lua_Integer)i + 1);
        if (lua_type(L, -1) == LUA_TUSERDATA && luaL_testudata(L, -1, "mtlab.model")) {
            lua_getfield(L, -1, "path"); /* a loaded model: evaluate its bundle */
            lua_replace(L, -2);
        }
        if (lua_type(L, -1) != LUA_TSTRING)
            mtl_error(L, fn,
                      "models[%zu] must be a bundle path, \"apertium:MODE\" or a model, not %s",
                      i + 1, luaL_typename(L, -1));
        rq.systems[i] = lua_tostring(L, -1); /* kept alive on the stack */
    }
    rq.n_systems = n;
    const char *src_name = mtl_opt_string(L, 1, fn, "src_name", NULL);
    const char *ref_name = mtl_opt_string(L, 1, fn, "ref_name", NULL);
    mt_text_lines src_holder = {0}, ref_holder = {0};
    request_text(L, fn, "src", &rq.src, &rq.src_lines, &src_holder, src_name);
    request_text(L, fn, "ref", &rq.ref, &rq.ref_lines, &ref_holder, ref_name);
    rq.beam = (int)mtl_opt_integer(L, 1, fn, "beam", mtl_default_beam(L), 1, MT_DECODE_MAX_BEAM);
    rq.device = mtl_opt_string(L, 1, fn, "device", NULL);
    rq.precision = mtl_opt_string(L, 1, fn, "precision", NULL);
    rq.stats = mtl_opt_string(L, 1, fn, "stats", NULL);
    rq.train_src = mtl_opt_string(L, 1, fn, "train_src", NULL);
    rq.train_ref = mtl_opt_string(L, 1, fn, "train_ref", NULL);
    rq.lexicon = mtl_opt_string(L, 1, fn, "lexicon", NULL);
    rq.ner = mtl_opt_string(L, 1, fn, "ner", NULL);
    rq.length_model = mtl_opt_string(L, 1, fn, "length_model", NULL);
    rq.hyps_dir = mtl_opt_string(L, 1, fn, "hyps", NULL);
    rq.names = mtl_opt_string(L, 1, fn, "names", NULL);
    rq.paired = mtl_opt_string(L, 1, fn, "paired", NULL);
    rq.data = mtl_opt_string(L, 1, fn, "data", NULL);
    rq.tgt_lang = mtl_opt_string(L, 1, fn, "tgt_lang", NULL);
    rq.comet = mtl_opt_string(L, 1, fn, "comet", NULL);
    if (rq.stats && rq.train_src)
        mtl_error(L, fn, "give either stats or train_src/train_ref, not both");
    if (!rq.train_src != !rq.train_ref) mtl_error(L, fn, "train_src and train_ref go together");
    rq.keep_hyps = 1;
    mtl_check_interrupt(L);
    /* Ctrl-C (mtl_interrupt) sets the context's cancel flag: the evaluation stops with no
     * scores, and the interrupt is raised as everywhere else */
    mtl_context *ctx = mtl_context_of(L);
    atomic_store(&ctx->cancel, 0);
    rq.cancel = &ctx->cancel;
    eval_outcome **box = lua_newuserdatauv(L, sizeof *box, 0);
    *box = mt_xcalloc(1, sizeof **box);
    luaL_setmetatable(L, OUTCOME_META);
    if (eval_run(&rq, *box)) {
        mtl_check_interrupt(L);
        mtl_error(L, fn, "%s", mt_last_error());
    }
    const eval_outcome *o = *box;
    char *text = NULL;
    size_t text_len = 0;
    FILE *mem = open_memstream(&text, &text_len);
    if (!mem) mtl_error(L, fn, "out of memory");
    eval_report_print(mem, &o->report);
    fclose(mem);
    lua_createtable(L, 0, 12);
    lua_pushlstring(L, text, text_len);
    free(text);
    lua_setfield(L, -2, "text");
    mtl_set_integer(L, "segments", (lua_Integer)o->report.segments);
    mtl_set_string(L, "src", o->report.src_path);
    mtl_set_string(L, "ref", o->report.ref_path);
    mtl_set_integer(L, "beam", o->report.beam);
    mtl_set_string(L, "bleu_signature", o->report.bleu_signature);
    mtl_set_string(L, "chrf_signature", o->report.chrf_signature);
    mtl_set_string(L, "chrfpp_signature", o->report.chrfpp_signature);
    if (o->report.comet_model) mtl_set_string(L, "comet_model", o->report.comet_model);
    if (o->report.paired) {
        lua_createtable(L, 0, 4);
        mtl_set_string(L, "test", o->report.paired - 1 == MT_SIG_BOOTSTRAP ? "bs" : "ar");
        mtl_set_integer(L, "samples", (lua_Integer)o->report.paired_n);
        mtl_set_integer(L, "seed", (lua_Integer)o->report.seed);
        mtl_set_string(L, "baseline", o->report.systems[0].name);
        lua_setfield(L, -2, "paired_test");
    }
    mtl_set_string(L, "ner", o->report.ner);
    mtl_set_string(L, "length_unit", o->report.length_unit);
    if (o->report.stats_source) mtl_set_string(L, "stats_source", o->report.stats_source);
    if (o->report.lexicon_source) mtl_set_string(L, "lexicon_source", o->report.lexicon_source);
    if (o->report.names_source) mtl_set_string(L, "names_source", o->report.names_source);
    lua_createtable(L, (int)o->report.n_systems, 0);
    for (size_t s = 0; s < o->report.n_systems; s++) {
        push_system(L, o, s);
        lua_rawseti(L, -2, (lua_Integer)s + 1);
    }
    lua_setfield(L, -2, "systems");
    luaL_setmetatable(L, "mtlab.eval_result");
    return 1;
}

void mtl_open_eval(lua_State *L)
{
    luaL_newmetatable(L, OUTCOME_META);
    lua_pushcfunction(L, outcome_gc);
    lua_setfield(L, -2, "__gc");
    lua_pop(L, 1);
    luaL_newmetatable(L, "mtlab.eval_result");
    lua_pushcfunction(L, eval_tostring);
    lua_setfield(L, -2, "__tostring");
    lua_pop(L, 1);
    lua_pushcfunction(L, l_eval);
    lua_setfield(L, -2, "eval");
}
