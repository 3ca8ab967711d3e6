/* libFuzzer target for the Lua training config (app/common/train_config.c), the file `mtlab
 * train`, `mtlab jobs start` and a job's resume read. The input is a Lua chunk, run in a sandbox
 * (below), whose result goes through train_config_from_state as a config file's would; text
 * after a line "--@overrides" gives KEY=VALUE overrides, one a line. Any chunk gives a config or
 * an error naming the chunk; an accepted config is written with train_config_write and read back
 * by train_config_load (the full reader, as a job's resume does) to the same struct, byte for
 * byte, and the same preset.
 *
 * The sandbox: base (without dofile, loadfile, load: binary chunks are not checked by Lua,
 * collectgarbage, print), string, table and math; an instruction-count hook that raises after
 * about 100k instructions (and on every instruction after that, so a pcall cannot swallow it);
 * an allocator capping the state at 64 MB. No file is opened by the chunk.
 * Build and run: make fuzz (see the Makefile). */
#include "common/train_config.h"
#include "mtlab/error.h"

#include <lauxlib.h>
#include <lualib.h>
#include "fuzz_util.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MEM_CAP ((size_t)64 << 20)
#define HOOK_EVERY 1000
#define HOOK_LIMIT 100 /* x HOOK_EVERY instructions */
#define MAX_OVERRIDES 8

typedef struct {
    size_t used;
    int hooks;
} sandbox;

static sandbox box;

static void *capped_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    sandbox *s = ud;
    size_t old = ptr ? osize : 0;
    if (nsize == 0) {
        free(ptr);
        s->used -= old;
        return NULL;
    }
    if (nsize > old && s->used - old + nsize > MEM_CAP) return NULL;
    void *p = realloc(ptr, nsize);
    if (p) s->used = s->used - old + nsize;
    return p;
}

static void count_hook(lua_State *L, lua_Debug *ar)
{
    (void)ar;
    if (++box.hooks < HOOK_LIMIT) return;
    lua_sethook(L, count_hook, LUA_MASKCOUNT, 1);
    luaL_error(L, "instruction limit");
}

static lua_State *sandbox_new(void)
{
    memset(&box, 0, sizeof box);
    lua_State *L = lua_newstate(capped_alloc, &box);
    CHECK(L);
    static const luaL_Reg libs[] = {{LUA_GNAME, luaopen_base},
                                    {LUA_STRLIBNAME, luaopen_string},
                                    {LUA_TABLIBNAME, luaopen_table},
                                    {LUA_MATHLIBNAME, luaopen_math}};
    for (size_t i = 0; i < sizeof libs / sizeof libs[0]; i++) {
        luaL_requiref(L, libs[i].name, libs[i].func, 1);
        lua_pop(L, 1);
    }
    static const char *const removed[] = {"dofile",  "loadfile",       "load",
                                          "require", "collectgarbage", "print"};
    for (size_t i = 0; i < sizeof removed / sizeof removed[0]; i++) {
        lua_pushnil(L);
        lua_setglobal(L, removed[i]);
    }
    lua_sethook(L, count_hook, LUA_MASKCOUNT, HOOK_EVERY);
    return L;
}

static char dir[64], copy[96];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!dir[0]) {
        fuzz_scratch_dir(dir, sizeof dir, "mtlab-fuzz-tc-");
        snprintf(copy, sizeof copy, "%s/config.lua", dir);
    }
    /* the chunk, and the overrides after the marker */
    static const char marker[] = "\n--@overrides\n";
    const uint8_t *mark = memmem(data, size, marker, sizeof marker - 1);
    size_t chunk_len = mark ? (size_t)(mark - data) : size;
    char ov_text[1024];
    const char *ov[MAX_OVERRIDES];
    int n_ov = 0;
    if (mark) {
        size_t rest = size - chunk_len - (sizeof marker - 1);
        if (rest >= sizeof ov_text) rest = sizeof ov_text - 1;
        memcpy(ov_text, mark + sizeof marker - 1, rest);
        ov_text[rest] = '\0';
        for (char *line = strtok(ov_text, "\n"); line && n_ov < MAX_OVERRIDES;
             line = strtok(NULL, "\n"))
            ov[n_ov++] = line;
    }

    lua_State *L = sandbox_new();
    mt_train_config cfg;
    char preset[128];
    memset(preset, 0x5A, sizeof preset);
    int rc = -1;
    if (luaL_loadbufferx(L, (const char *)data, chunk_len, "=fuzz.lua", "t") == LUA_OK &&
        lua_pcall(L, 0, 1, 0) == LUA_OK) {
        mt_clear_error();
        rc = train_config_from_state(&cfg, L, "fuzz.lua", ov, n_ov, preset, sizeof preset);
        CHECK(lua_gettop(L) == 1);
        if (rc != 0)
            CHECK(strncmp(mt_last_error(), "fuzz.lua", 8) == 0 ||
                  strncmp(mt_last_error(), "override \"", 10) == 0);
    }
    lua_close(L);
    CHECK(box.used == 0);
    if (rc != 0) return 0;

    CHECK(memchr(preset, 0, sizeof preset) && preset[0]);
    CHECK(memchr(cfg.name, 0, sizeof cfg.name) && memchr(cfg.run_dir, 0, sizeof cfg.run_dir));
    CHECK(memchr(cfg.tokenizer, 0, sizeof cfg.tokenizer) &&
          memchr(cfg.device, 0, sizeof cfg.device));
    CHECK(cfg.model.n_attn_layers >= 0 && cfg.model.n_attn_layers <= MT_MAX_ATTN_LAYERS);
    CHECK(cfg.model.langs_recorded == 1);

    /* a job's config copy: what was read is written, and reads back the same */
    if (train_config_write(&cfg, preset, copy) != 0) {
        fprintf(stderr, "write failed: %s\n", mt_last_error());
        CHECK(0);
    }
    mt_train_config back;
    char back_preset[128];
    if (train_config_load_with(&back, copy, NULL, 0, back_preset, sizeof back_preset) != 0) {
        fprintf(stderr, "re-read failed: %s\n", mt_last_error());
        CHECK(0);
    }
    CHECK(strcmp(preset, back_preset) == 0);
    if (memcmp(&cfg, &back, sizeof cfg) != 0) {
        const unsigned char *a = (const unsigned char *)&cfg, *b = (const unsigned char *)&back;
        size_t at = 0;
        while (a[at] == b[at]) at++;
        fprintf(stderr, "read back differs at byte %zu of mt_train_config\n", at);
        CHECK(0);
    }
    return 0;
}
