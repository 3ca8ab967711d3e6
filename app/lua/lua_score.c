/* mtlab.score: sacreBLEU-exact BLEU, chrF and TER over Lua lists (mtlab/metrics.h). The result's
 * `line` is what `mtlab score` prints for the same files, to the last digit. */
#include "lua/lua_internal.h"
#include "mtlab/backend.h"
#include "mtlab/comet.h"
#include "mtlab/device.h"
#include "mtlab/error.h"
#include "mtlab/metrics.h"

#include <stdlib.h>
#include <string.h>

/* refs: one stream (a list of strings) or several (a list of such lists), each as long as
 * the hypotheses. What holds the arrays is left on the stack. */
static const char *const *const *check_refs(lua_State *L, int idx, const char *fn, size_t n,
                                            size_t *n_refs)
{
    if (!lua_istable(L, idx))
        mtl_error(L, fn, "refs must be a list of strings or a list of reference lists, not %s",
                  luaL_typename(L, idx));
    lua_geti(L, idx, 1);
    int streams = lua_istable(L, -1);
    lua_pop(L, 1);
    size_t count = streams ? (size_t)luaL_len(L, idx) : 1;
    if (count == 0) mtl_error(L, fn, "refs is empty");
    const char *const **out = lua_newuserdatauv(L, count * sizeof *out, 0);
    /* each stream's list and string array stay on the stack until the caller returns */
    luaL_checkstack(L, 2 * (int)count + 2, "too many reference streams");
    for (size_t r = 0; r < count; r++) {
        size_t len;
        char what[32];
        if (streams) {
            lua_geti(L, idx, (lua_Integer)r + 1);
            snprintf(what, sizeof what, "refs[%zu]", r + 1);
        } else {
            lua_pushvalue(L, idx);
            snprintf(what, sizeof what, "refs");
        }
        out[r] = mtl_check_strings(L, -1, fn, what, &len, 0, NULL);
        if (len != n)
            mtl_error(L, fn, "%s has %zu lines but there are %zu hypotheses", what, len, n);
    }
    *n_refs = count;
    return (const char *const *const *)out;
}

static void push_result(lua_State *L, const char *name, double score, const char *signature,
                        const char *line)
{
    lua_newtable(L);
    mtl_set_string(L, "name", name);
    mtl_set_number(L, "score", score);
    mtl_set_string(L, "signature", signature);
    mtl_set_string(L, "line", line);
    luaL_setmetatable(L, "mtlab.score_result");
}

static mt_bleu_smooth check_smooth(lua_State *L, const char *fn, const char *s)
{
    static const char *const names[] = {"exp", "floor", "add-k", "none"};
    static const mt_bleu_smooth values[] = {MT_SMOOTH_EXP, MT_SMOOTH_FLOOR, MT_SMOOTH_ADD_K,
                                            MT_SMOOTH_NONE};
    for (size_t i = 0; i < 4; i++)
        if (!strcmp(s, names[i])) return values[i];
    mtl_error(L, fn, "unknown smoothing '%s' (exp, floor, add-k, none)", s);
    return MT_SMOOTH_EXP;
}

/* mtlab.score.bleu(hyps, refs [, {lowercase=, smooth=, tokenize=, spm=}]): tokenize is
 * sacreBLEU's --tokenize (13a by default); flores101 and flores200 take spm = FILE. */
static int l_bleu(lua_State *L)
{
    static const char *const fn = "mtlab.score.bleu";
    static const char *const known[] = {"lowercase", "smooth", "tokenize", "spm", NULL};
    lua_settop(L, 3); /* optional arguments at fixed indices, whatever follows */
    size_t n, n_refs;
    const char **hyps = mtl_check_strings(L, 1, fn, "hyps", &n, 0, NULL);
    mtl_check_options(L, 3, fn, known);
    mt_bleu_opts o = mt_bleu_defaults();
    o.lowercase = mtl_opt_boolean(L, 3, fn, "lowercase", 0);
    o.smooth = check_smooth(L, fn, mtl_opt_string(L, 3, fn, "smooth", "exp"));
    const char *tok = mtl_opt_string(L, 3, fn, "tokenize", "13a");
    const char *spm_path = mtl_opt_string(L, 3, fn, "spm", NULL);
    if (mt_bleu_tokenize_parse(tok, &o.tokenize) < 0) mtl_error(L, fn, "%s", mt_last_error());
    int flores = o.tokenize == MT_BLEU_TOK_FLORES101 || o.tokenize == MT_BLEU_TOK_FLORES200;
    if (flores && !spm_path)
        mtl_error(L, fn, "tokenize = '%s' needs spm = FILE (its SentencePiece model)", tok);
    if (!flores && spm_path)
        mtl_error(L, fn, "spm = FILE goes with tokenize = 'flores101' or 'flores200'");
    const char *const *const *refs = check_refs(L, 2, fn, n, &n_refs);
    mt_spm_pieces *spm = NULL;
    if (spm_path && !(spm = mt_spm_pieces_load(spm_path))) mtl_error(L, fn, "%s", mt_last_error());
    o.spm = spm;
    mt_bleu_score s;
    int rc = mt_bleu_corpus(&s, hyps, n, refs, n_refs, &o);
    mt_spm_pieces_free(spm);
    o.spm = NULL;
    if (rc < 0) mtl_error(L, fn, "%s", mt_last_error());
    char sig[160], line[512], verbose[256];
    mt_bleu_signature(sig, sizeof sig, &o, n_refs, 0);
    mt_bleu_format(line, sizeof line, &s, sig, 2);
    mt_bleu_verbose(verbose, sizeof verbose, &s);
    push_result(L, "BLEU", s.score, sig, line);
    mtl_set_string(L, "verbose", verbose);
    mtl_set_number(L, "bp", s.bp);
    mtl_set_number(L, "ratio", s.ratio);
    mtl_set_integer(L, "sys_len", s.sys_len);
    mtl_set_integer(L, "ref_len", s.ref_len);
    lua_createtable(L, MT_BLEU_MAX_ORDER, 0);
    for (int i = 0; i < MT_BLEU_MAX_ORDER; i++) {
        lua_pushnumber(L, s.precisions[i]);
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "precisions");
    return 1;
}

/* mtlab.score.chrf(hyps, refs [, {lowercase=, word_order=}]): chrF2, or chrF2++ with
 * word_order = 2. */
static int l_chrf(lua_State *L)
{
    static const char *const fn = "mtlab.score.chrf";
    static const char *const known[] = {"lowercase", "word_order", NULL};
    lua_settop(L, 3); /* optional arguments at fixed indices, whatever follows */
    size_t n, n_refs;
    const char **hyps = mtl_check_strings(L, 1, fn, "hyps", &n, 0, NULL);
    mtl_check_options(L, 3, fn, known);
    mt_chrf_opts o = mt_chrf_defaults();
    o.lowercase = mtl_opt_boolean(L, 3, fn, "lowercase", 0);
    o.word_order = (int)mtl_opt_integer(L, 3, fn, "word_order", 0, 0, MT_CHRF_MAX_ORDERS - 6);
    const char *const *const *refs = check_refs(L, 2, fn, n, &n_refs);
    double score;
    if (mt_chrf_corpus(&score, hyps, n, refs, n_refs, &o) < 0)
        mtl_error(L, fn, "%s", mt_last_error());
    char name[32], sig[160], line[512];
    mt_chrf_name(name, sizeof name, &o);
    mt_chrf_signature(sig, sizeof sig, &o, n_refs, 0);
    mt_chrf_format(line, sizeof line, score, &o, sig, 2);
    push_result(L, name, score, sig, line);
    return 1;
}

/* mtlab.score.ter(hyps, refs [, {normalized=, no_punct=, asian_support=, case_sensitive=}]):
 * sacreBLEU's TER and its --ter-* options. */
static int l_ter(lua_State *L)
{
    static const char *const fn = "mtlab.score.ter";
    static const char *const known[] = {"normalized", "no_punct", "asian_support", "case_sensitive",
                                        NULL};
    lua_settop(L, 3); /* optional arguments at fixed indices, whatever follows */
    size_t n, n_refs;
    const char **hyps = mtl_check_strings(L, 1, fn, "hyps", &n, 0, NULL);
    mtl_check_options(L, 3, fn, known);
    mt_ter_opts o = mt_ter_defaults();
    o.normalized = mtl_opt_boolean(L, 3, fn, "normalized", 0);
    o.no_punct = mtl_opt_boolean(L, 3, fn, "no_punct", 0);
    o.asian_support = mtl_opt_boolean(L, 3, fn, "asian_support", 0);
    o.case_sensitive = mtl_opt_boolean(L, 3, fn, "case_sensitive", 0);
    const char *const *const *refs = check_refs(L, 2, fn, n, &n_refs);
    double score;
    if (mt_ter_corpus(&score, hyps, n, refs, n_refs, &o) < 0)
        mtl_error(L, fn, "%s", mt_last_error());
    char sig[160], line[512];
    mt_ter_signature(sig, sizeof sig, &o, n_refs, 0);
    mt_ter_format(line, sizeof line, score, sig, 2);
    push_result(L, "TER", score, sig, line);
    return 1;
}

/* mtlab.score.comet(srcs, hyps, refs, {model=DIR, device="cpu"}): COMET's segment scores and
 * their mean, as `mtlab score -m comet` computes them (one reference stream). */
static int l_comet(lua_State *L)
{
    const char *fn = "mtlab.score.comet";
    static const char *const known[] = {"model", "device", NULL};
    lua_settop(L, 4);
    size_t n, n_hyp, n_ref;
    const char **src = mtl_check_strings(L, 1, fn, "srcs", &n, 0, NULL);
    const char **hyp = mtl_check_strings(L, 2, fn, "hyps", &n_hyp, 0, NULL);
    const char **ref = mtl_check_strings(L, 3, fn, "refs", &n_ref, 0, NULL);
    mtl_check_options(L, 4, fn, known);
    const char *dir = mtl_opt_string(L, 4, fn, "model", NULL);
    const char *device = mtl_opt_string(L, 4, fn, "device", NULL);
    if (!dir)
        mtl_error(L, fn, "model = DIR (a COMET model directory, docs/metrics.md §11) is required");
    if (n_hyp != n || n_ref != n)
        mtl_error(L, fn, "srcs, hyps and refs must be as long: %zu, %zu and %zu lines", n, n_hyp,
                  n_ref);
    const mt_backend *be = device ? mt_backend_for(device, 0) : mt_backend_cpu();
    if (!be) mtl_error(L, fn, "%s", mt_last_error());
    mt_comet *comet = mt_comet_open(dir, be);
    if (!comet) mtl_error(L, fn, "%s", mt_last_error());
    float *seg = mt_xmalloc((n ? n : 1) * sizeof *seg);
    int rc = n ? mt_comet_score(comet, src, hyp, ref, n, seg) : 0;
    mt_comet_free(comet);
    if (rc < 0) {
        free(seg);
        mtl_error(L, fn, "%s", mt_last_error());
    }
    double sum = 0; /* left to right, as mtlab score sums them */
    lua_createtable(L, (int)n, 0);
    for (size_t i = 0; i < n; i++) {
        sum += seg[i];
        lua_pushnumber(L, seg[i]);
        lua_seti(L, -2, (lua_Integer)i + 1);
    }
    free(seg);
    double score = n ? sum / (double)n : 0.0;
    char sig[512], line[640];
    snprintf(sig, sizeof sig, "nrefs:1|model:%s|device:%s|version:mtlab", dir,
             device ? device : "cpu");
    snprintf(line, sizeof line, "COMET|%s = %.4f", sig, score);
    push_result(L, "COMET", score, sig, line);
    lua_insert(L, -2);
    lua_setfield(L, -2, "segments");
    return 1;
}

static int result_tostring(lua_State *L)
{
    lua_getfield(L, 1, "line");
    return 1;
}

void mtl_open_score(lua_State *L)
{
    luaL_newmetatable(L, "mtlab.score_result");
    lua_pushcfunction(L, result_tostring);
    lua_setfield(L, -2, "__tostring");
    lua_pop(L, 1);
    static const luaL_Reg fns[] = {
        {"bleu", l_bleu}, {"chrf", l_chrf}, {"ter", l_ter}, {"comet", l_comet}, {NULL, NULL}};
    luaL_newlib(L, fns);
    lua_setfield(L, -2, "score");
}
