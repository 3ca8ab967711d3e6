/* mtlab.jobs: training jobs (app/jobs/jobs.h) from Lua, as handles of metatable mtlab.job.
 * A handle names a run; every read of a changing field re-reads its state file and log, so two
 * handles of one run (or a handle and `mtlab jobs list`) always agree. */
#include "jobs/jobs.h"
#include "lua/lua_internal.h"
#include "mtlab/clock.h"
#include "mtlab/error.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define JOB_META "mtlab.job"

static job_info *push_job(lua_State *L, const job_info *j)
{
    job_info *h = lua_newuserdatauv(L, sizeof *h, 0);
    *h = *j;
    luaL_setmetatable(L, JOB_META);
    return h;
}

/* Argument idx: a job handle or a job's name. */
static job_info *check_job(lua_State *L, int idx, const char *fn)
{
    job_info *h = luaL_testudata(L, idx, JOB_META);
    if (h) return h;
    if (lua_type(L, idx) != LUA_TSTRING)
        mtl_error(L, fn, "argument %d must be a job or a job's name, not %s", idx,
                  luaL_typename(L, idx));
    job_info j;
    if (job_load(&j, lua_tostring(L, idx)) != 0) mtl_error(L, fn, "%s", mt_last_error());
    h = push_job(L, &j);
    lua_replace(L, idx);
    return h;
}

static void refresh(lua_State *L, job_info *j, const char *fn)
{
    if (job_refresh(j) != 0) mtl_error(L, fn, "%s", mt_last_error());
}

/* Fields of a run read afresh: one whose state cannot be read is broken, as mtlab.jobs.list and
 * `jobs list` say, the reason in job.error, rather than a raise at every field of a listed run. */
static void refresh_or_broken(job_info *j)
{
    if (job_refresh(j) == 0) return;
    snprintf(j->error, sizeof j->error, "%s", mt_last_error());
    j->state = JOB_BROKEN;
}

/* The ranks options at idx, as the command's --procs, --nodes, --gpus-per-node, --tasks (0:
 * not given): ranks[4] = procs, nodes, gpus_per_node, tasks. */
static void opt_ranks(lua_State *L, int idx, const char *fn, int ranks[4])
{
    static const char *const keys[4] = {"procs", "nodes", "gpus_per_node", "tasks"};
    for (int k = 0; k < 4; k++) ranks[k] = (int)mtl_opt_integer(L, idx, fn, keys[k], 0, 1, 65536);
}

/* mtlab.jobs.start(config [, {launcher=, name=, overrides={key=value}, procs=, tasks=, nodes=,
 * gpus_per_node=}]) -> job */
static int l_start(lua_State *L)
{
    static const char *const fn = "mtlab.jobs.start";
    static const char *const known[] = {"launcher", "name",  "overrides",     "procs",
                                        "tasks",    "nodes", "gpus_per_node", NULL};
    const char *config = luaL_checkstring(L, 1);
    mtl_check_options(L, 2, fn, known);
    job_start_opts o = {.launcher = JOB_LOCAL};
    int ranks[4];
    opt_ranks(L, 2, fn, ranks);
    o.procs = ranks[0], o.nodes = ranks[1], o.gpus_per_node = ranks[2], o.tasks = ranks[3];
    const char *launcher = mtl_opt_string(L, 2, fn, "launcher", "local");
    if (job_launcher_parse(launcher, &o.launcher) != 0)
        mtl_error(L, fn, "option %s", mt_last_error());
    o.name = mtl_opt_string(L, 2, fn, "name", NULL);
    /* overrides: {lr = 2e-3, ["model.d_model"] = 32} -> "lr=0.002", "model.d_model=32" */
    int n = 0;
    char **ov = NULL;
    if (!lua_isnoneornil(L, 2) && lua_getfield(L, 2, "overrides") != LUA_TNIL) {
        if (!lua_istable(L, -1))
            mtl_error(L, fn, "option overrides must be a table, not %s", luaL_typename(L, -1));
        int t = lua_gettop(L);
        lua_pushnil(L);
        while (lua_next(L, t)) {
            int vt = lua_type(L, -1);
            if (lua_type(L, -2) != LUA_TSTRING ||
                (vt != LUA_TNUMBER && vt != LUA_TSTRING && vt != LUA_TBOOLEAN))
                mtl_error(L, fn, "overrides must map key names to numbers, strings or booleans");
            lua_pop(L, 1);
            n++;
        }
        ov = lua_newuserdatauv(L, (size_t)(n ? n : 1) * sizeof *ov, 0); /* freed with the stack */
        n = 0;
        lua_pushnil(L);
        while (lua_next(L, t)) {
            const char *value = lua_type(L, -1) == LUA_TBOOLEAN
                                    ? (lua_toboolean(L, -1) ? "true" : "false")
                                    : lua_tostring(L, -1);
            lua_pushfstring(L, "%s=%s", lua_tostring(L, -2), value);
            lua_insert(L, t); /* below the table: kept alive on the stack */
            t++;
            ov[n++] = (char *)lua_tostring(L, t - 1);
            lua_pop(L, 1);
        }
    }
    o.overrides = (const char *const *)ov;
    o.n_overrides = n;
    job_info j;
    if (job_start(&j, config, &o) != 0)
        mtl_error(L, fn, "%s (nothing was started)", mt_last_error());
    push_job(L, &j);
    return 1;
}

/* mtlab.jobs.list() -> {jobs} */
static int l_list(lua_State *L)
{
    job_info *jobs;
    size_t n;
    if (job_list(&jobs, &n) != 0) return mtl_error(L, "mtlab.jobs.list", "%s", mt_last_error());
    lua_createtable(L, (int)n, 0);
    for (size_t i = 0; i < n; i++) {
        push_job(L, &jobs[i]);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    free(jobs);
    return 1;
}

static int do_stop(lua_State *L, const char *fn)
{
    job_info *j = check_job(L, 1, fn);
    if (job_stop(j) != 0) mtl_error(L, fn, "%s", mt_last_error());
    lua_settop(L, 1);
    return 1;
}

/* resume(job [, {max_steps=, procs=, tasks=, nodes=, gpus_per_node=}]) -> job */
static int do_resume(lua_State *L, const char *fn)
{
    static const char *const known[] = {"max_steps", "procs",         "tasks",
                                        "nodes",     "gpus_per_node", NULL};
    job_info *j = check_job(L, 1, fn);
    mtl_check_options(L, 2, fn, known);
    int ranks[4];
    opt_ranks(L, 2, fn, ranks);
    job_resume_opts o = {.max_steps = (long)mtl_opt_integer(L, 2, fn, "max_steps", 0, 1, LONG_MAX),
                         .procs = ranks[0],
                         .nodes = ranks[1],
                         .gpus_per_node = ranks[2],
                         .tasks = ranks[3]};
    if (job_resume_with(j, &o) != 0) mtl_error(L, fn, "%s", mt_last_error());
    lua_settop(L, 1);
    return 1;
}

/* wait(job [, timeout_s]) -> job, finished: polls here (not in job_wait) so Ctrl-C stops it */
static int do_wait(lua_State *L, const char *fn)
{
    job_info *j = check_job(L, 1, fn);
    double timeout = -1;
    if (!lua_isnoneornil(L, 2)) {
        int isnum;
        timeout = lua_tonumberx(L, 2, &isnum);
        if (!isnum || timeout < 0)
            mtl_error(L, fn, "timeout must be a number of seconds >= 0, not %s",
                      luaL_tolstring(L, 2, NULL));
    }
    double t0 = mt_now_s();
    for (;;) {
        refresh(L, j, fn);
        if (job_ended(j)) break;
        if (timeout >= 0 && mt_now_s() - t0 >= timeout) break;
        mtl_check_interrupt(L);
        struct timespec pause = {0, 100 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
    lua_settop(L, 1);
    lua_pushboolean(L, job_ended(j));
    return 2;
}

/* log(job) -> {records}: every record of log.jsonl */
static int do_log(lua_State *L, const char *fn)
{
    job_info *j = check_job(L, 1, fn);
    long offset = 0;
    job_log_record *r;
    size_t n;
    if (job_log_read_since(j->dir, &offset, &r, &n) != 0) mtl_error(L, fn, "%s", mt_last_error());
    lua_createtable(L, (int)n, 0);
    for (size_t i = 0; i < n; i++) {
        lua_createtable(L, 0, 8);
        mtl_set_string(L, "event", r[i].is_valid ? "valid" : "train");
        mtl_set_integer(L, "step", r[i].step);
        mtl_set_number(L, "elapsed_s", r[i].elapsed_s);
        if (r[i].is_valid) {
            mtl_set_number(L, "valid_loss", r[i].valid_loss);
            if (r[i].valid_bleu >= 0) mtl_set_number(L, "valid_bleu", r[i].valid_bleu);
        } else {
            mtl_set_integer(L, "epoch", r[i].epoch);
            mtl_set_number(L, "loss", r[i].loss);
            mtl_set_number(L, "lr", r[i].lr);
            mtl_set_number(L, "tokens_per_s", r[i].tokens_per_s);
        }
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    free(r);
    return 1;
}

static int l_stop(lua_State *L) { return do_stop(L, "mtlab.jobs.stop"); }
static int l_resume(lua_State *L) { return do_resume(L, "mtlab.jobs.resume"); }
static int l_wait(lua_State *L) { return do_wait(L, "mtlab.jobs.wait"); }
static int l_log(lua_State *L) { return do_log(L, "mtlab.jobs.log"); }
static int m_stop(lua_State *L) { return do_stop(L, "job:stop"); }
static int m_resume(lua_State *L) { return do_resume(L, "job:resume"); }
static int m_wait(lua_State *L) { return do_wait(L, "job:wait"); }
static int m_log(lua_State *L) { return do_log(L, "job:log"); }

static const luaL_Reg methods[] = {
    {"stop", m_stop}, {"resume", m_resume}, {"wait", m_wait}, {"log", m_log}, {NULL, NULL},
};

static int job_index(lua_State *L)
{
    job_info *j = luaL_checkudata(L, 1, JOB_META);
    const char *k = luaL_checkstring(L, 2);
    for (const luaL_Reg *m = methods; m->name; m++)
        if (!strcmp(k, m->name)) {
            lua_pushcfunction(L, m->func);
            return 1;
        }
    /* fixed at launch */
    if (!strcmp(k, "name")) lua_pushstring(L, j->name);
    else if (!strcmp(k, "dir")) lua_pushstring(L, j->dir);
    else if (!strcmp(k, "launcher")) lua_pushstring(L, job_launcher_name(j->launcher));
    else if (!strcmp(k, "max_steps")) lua_pushinteger(L, j->max_steps);
    else {
        refresh_or_broken(j);
        if (!strcmp(k, "state")) lua_pushstring(L, job_state_name(j->state));
        else if (!strcmp(k, "step")) lua_pushinteger(L, j->step);
        else if (!strcmp(k, "loss")) lua_pushnumber(L, j->loss);
        else if (!strcmp(k, "tokens_per_s")) lua_pushnumber(L, j->tokens_per_s);
        else if (!strcmp(k, "valid_bleu"))
            j->valid_bleu >= 0 ? lua_pushnumber(L, j->valid_bleu) : lua_pushnil(L);
        else if (!strcmp(k, "ranks")) lua_pushinteger(L, j->ranks > 1 ? j->ranks : 1);
        else if (!strcmp(k, "pid")) lua_pushinteger(L, j->pid);
        else if (!strcmp(k, "slurm_id"))
            j->slurm_id[0] ? lua_pushstring(L, j->slurm_id) : lua_pushnil(L);
        else if (!strcmp(k, "error")) j->error[0] ? lua_pushstring(L, j->error) : lua_pushnil(L);
        else if (!strcmp(k, "started_at")) lua_pushnumber(L, j->started_at);
        else if (!strcmp(k, "ended_at"))
            j->ended_at > 0 ? lua_pushnumber(L, j->ended_at) : lua_pushnil(L);
        else
            return mtl_error(L, "job", "no field or method '%s' (see mtlab.help(\"job.name\"))", k);
    }
    return 1;
}

static int job_tostring(lua_State *L)
{
    job_info *j = luaL_checkudata(L, 1, JOB_META);
    refresh_or_broken(j);
    if (j->state == JOB_BROKEN) {
        lua_pushfstring(L, "mtlab.job: %s (broken: %s)", j->name, j->error);
        return 1;
    }
    lua_pushfstring(L, "mtlab.job: %s (%s, %s, step %d/%d)", j->name,
                    job_launcher_name(j->launcher), job_state_name(j->state), (int)j->step,
                    (int)j->max_steps);
    return 1;
}

void mtl_open_jobs(lua_State *L)
{
    luaL_newmetatable(L, JOB_META);
    lua_pushcfunction(L, job_index);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, job_tostring);
    lua_setfield(L, -2, "__tostring");
    luaL_newlib(L, methods); /* what job_index gives, here for mtl_name_functions */
    lua_setfield(L, -2, "methods");
    lua_pop(L, 1);
    static const luaL_Reg fns[] = {
        {"start", l_start}, {"list", l_list}, {"stop", l_stop}, {"resume", l_resume},
        {"wait", l_wait},   {"log", l_log},   {NULL, NULL},
    };
    luaL_newlib(L, fns);
    lua_setfield(L, -2, "jobs");
}
