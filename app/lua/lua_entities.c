/* mtlab.entities: the paper's named-entity recall (mtlab/entities.h) over Lua lists. */
#include "lua/lua_internal.h"
#include "mtlab/entities.h"
#include "mtlab/error.h"

#include <string.h>

#define TESTSET_META "mtlab.ne_testset"
#define STATS_META "mtlab.corpus_stats"

static int testset_gc(lua_State *L)
{
    mt_ne_testset_free(luaL_checkudata(L, 1, TESTSET_META));
    return 0;
}

static int stats_gc(lua_State *L)
{
    mt_corpus_stats **s = luaL_checkudata(L, 1, STATS_META);
    mt_corpus_stats_free(*s);
    *s = NULL;
    return 0;
}

/* mtlab.entities.recall(srcs, hyps, refs [, {stats=PATH, lang="english"|"generic"}]) ->
 * {unseen=, regular=, frequent=, all=, lang=}: each bin {recall (0..1), entities,
 * occurrences, hits}. Without stats every entity is unseen. */
static int l_recall(lua_State *L)
{
    static const char *const fn = "mtlab.entities.recall";
    static const char *const known[] = {"stats", "lang", NULL};
    lua_settop(L, 4); /* optional arguments at fixed indices, whatever follows */
    size_t n_src, n_hyp, n_ref;
    const char **src = mtl_check_strings(L, 1, fn, "srcs", &n_src, 0, NULL);
    const char **hyp = mtl_check_strings(L, 2, fn, "hyps", &n_hyp, 0, NULL);
    const char **ref = mtl_check_strings(L, 3, fn, "refs", &n_ref, 0, NULL);
    if (n_hyp != n_src || n_ref != n_src)
        mtl_error(L, fn, "srcs, hyps and refs must be as long as each other (%zu, %zu, %zu)", n_src,
                  n_hyp, n_ref);
    mtl_check_options(L, 4, fn, known);
    const char *stats_path = mtl_opt_string(L, 4, fn, "stats", NULL);
    mt_ner_lang lang = MT_NER_ENGLISH;
    const char *lang_name = mtl_opt_string(L, 4, fn, "lang", NULL);
    if (lang_name && mt_ner_lang_parse(lang_name, &lang) < 0)
        mtl_error(L, fn, "%s", mt_last_error());
    mt_corpus_stats **stats = lua_newuserdatauv(L, sizeof *stats, 0);
    *stats = NULL;
    luaL_setmetatable(L, STATS_META);
    if (stats_path) {
        if (!(*stats = mt_corpus_stats_read(stats_path))) mtl_error(L, fn, "%s", mt_last_error());
        if (!lang_name) lang = mt_corpus_stats_lang(*stats);
        else if (mt_corpus_stats_lang(*stats) != lang)
            mtl_error(L, fn, "%s counts %s entities, not %s", stats_path,
                      mt_ner_lang_name(mt_corpus_stats_lang(*stats)), mt_ner_lang_name(lang));
    }
    mt_ne_testset *ts = lua_newuserdatauv(L, sizeof *ts, 0);
    memset(ts, 0, sizeof *ts);
    luaL_setmetatable(L, TESTSET_META);
    if (mt_ne_testset_build(ts, src, ref, n_src, lang, *stats) < 0)
        mtl_error(L, fn, "%s", mt_last_error());
    mt_ne_recall r;
    mt_ne_recall_score(&r, ts, hyp, NULL);
    mtl_push_ne_recall(L, &r);
    mtl_set_string(L, "lang", mt_ner_lang_name(lang));
    return 1;
}

void mtl_open_entities(lua_State *L)
{
    luaL_newmetatable(L, TESTSET_META);
    lua_pushcfunction(L, testset_gc);
    lua_setfield(L, -2, "__gc");
    lua_pop(L, 1);
    luaL_newmetatable(L, STATS_META);
    lua_pushcfunction(L, stats_gc);
    lua_setfield(L, -2, "__gc");
    lua_pop(L, 1);
    static const luaL_Reg fns[] = {{"recall", l_recall}, {NULL, NULL}};
    luaL_newlib(L, fns);
    lua_setfield(L, -2, "entities");
}
