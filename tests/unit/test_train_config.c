/* The training-config reader (app/common/train_config.c) against configs that are valid Lua but
 * odd tables: metamethods that raise or lie, non-name keys, non-finite numbers, NUL bytes,
 * negative zero, and the reader on a caller's own Lua state (the fuzz target's sandbox). */
#include "test_util.h"
#include "common/train_config.h"
#include "mtlab/error.h"
#include "mtlab/train.h"

#include <lauxlib.h>
#include <lualib.h>

static char tmpdir[64];

static int load_text(mt_train_config *cfg, const char *lua, char *preset, size_t len)
{
    char path[128];
    snprintf(path, sizeof path, "%s/c.lua", tmpdir);
    test_write_text(path, lua);
    return train_config_load_with(cfg, path, NULL, 0, preset, len);
}

static void expect_error(const char *lua, const char *needle)
{
    mt_train_config cfg;
    mt_clear_error();
    assert_int_equal(load_text(&cfg, lua, NULL, 0), -1);
    if (!strstr(mt_last_error(), needle)) fail_msg("expected '%s' in: %s", needle, mt_last_error());
    if (!strstr(mt_last_error(), "c.lua"))
        fail_msg("the file is not named in: %s", mt_last_error());
}

/* An error raised while the reader looks into the table was Lua's panic (an abort). */
static void test_metamethod_errors_are_messages(void **state)
{
    (void)state;
    expect_error("return setmetatable({}, { __index = function(t, k) error('no ' .. k) end })",
                 "no model");
    expect_error(
        "return { model = setmetatable({}, { __index = function() error('no preset') end }) }",
        "no preset");
    expect_error(
        "return { model = { preset = 'mamba-local-small',\n"
        "  attn_layers = setmetatable({}, { __len = function() error('no length') end }) } }",
        "no length");
}

/* A length below zero stored a negative layer count. */
static void test_attn_layers_length_is_checked(void **state)
{
    (void)state;
    expect_error("return { model = { preset = 'mamba-local-small',\n"
                 "  attn_layers = setmetatable({}, { __len = function() return -3 end }) } }",
                 "'attn_layers' must be a list");
}

/* The message named the type of the value below the table, not of the key. */
static void test_bad_key_type_is_named(void **state)
{
    (void)state;
    expect_error("return { model = { preset = 'mamba-small' }, [1] = 2 }", "found a number key");
    expect_error("return { model = { preset = 'mamba-small', [true] = 1 } }",
                 "found a boolean key");
}

/* NaN and infinities passed as learning rates; a float key took any double (1e300 -> inf). */
static void test_numbers_must_be_finite(void **state)
{
    (void)state;
    expect_error("return { model = { preset = 'mamba-small' }, lr = 0/0 }",
                 "'lr' must be a finite number");
    expect_error("return { model = { preset = 'mamba-small' }, beta2 = -1/0 }",
                 "'beta2' must be a finite number");
    expect_error("return { model = { preset = 'mamba-small', dropout = 1e300 } }",
                 "'dropout' is out of range");
    expect_error("return { model = { preset = 'mamba-small' }, label_smoothing = 1e39 }",
                 "'label_smoothing' is out of range");
}

/* A NUL byte cut a string short ('a\0b' read as 'a') and a key with one read as the key. */
static void test_nul_bytes_are_refused(void **state)
{
    (void)state;
    expect_error("return { model = { preset = 'mamba-small' }, name = 'a\\0b' }",
                 "'name' holds a NUL byte");
    expect_error("return { model = { preset = 'mamba-small' }, ['lr\\0x'] = 1 }", "unknown key");
}

/* The preset is named once: a table answering 'preset' only the first time gave "(null)". */
static void test_preset_read_once(void **state)
{
    (void)state;
    mt_train_config cfg;
    char preset[64];
    int rc = load_text(
        &cfg,
        "local n = 0\n"
        "return { model = setmetatable({}, { __index = function(t, k)\n"
        "  if k == 'preset' then n = n + 1; if n == 1 then return 'mamba-small' end end end }) }\n",
        preset, sizeof preset);
    if (rc != 0) fail_msg("%s", mt_last_error());
    assert_string_equal(preset, "mamba-small");
}

/* train_config_write's promise (the same cfg back, bit for bit) held for every value but -0.0,
 * which it wrote as "-0": a Lua integer, read back as +0.0. */
static void test_negative_zero_round_trips(void **state)
{
    (void)state;
    mt_train_config cfg, back;
    char preset[64], copy[128];
    if (load_text(&cfg, "return { model = { preset = 'mamba-small', dropout = -0.0 }, lr = -0.0 }",
                  preset, sizeof preset))
        fail_msg("%s", mt_last_error());
    assert_true(signbit(cfg.lr) && signbit(cfg.model.dropout));
    snprintf(copy, sizeof copy, "%s/copy.lua", tmpdir);
    assert_int_equal(train_config_write(&cfg, preset, copy), 0);
    if (train_config_load(&back, copy)) fail_msg("%s", mt_last_error());
    assert_true(signbit(back.lr) && signbit(back.model.dropout));
    assert_memory_equal(&cfg, &back, sizeof cfg);
}

/* The data-parallel keys: defaults, values read, and written back by train_config_write. */
static void test_gradient_keys_read_and_written(void **state)
{
    (void)state;
    mt_train_config cfg, back;
    char preset[64], copy[128];
    if (load_text(&cfg, "return { model = { preset = 'mamba-small' } }", preset, sizeof preset))
        fail_msg("%s", mt_last_error());
    assert_int_equal(cfg.overlap, 1);
    assert_true(cfg.bucket_mb == 25);
    assert_string_equal(cfg.grad_dtype, "fp32");
    if (load_text(&cfg,
                  "return { model = { preset = 'mamba-small' }, overlap = false, bucket_mb = 0.5,\n"
                  "  grad_dtype = 'bf16' }",
                  preset, sizeof preset))
        fail_msg("%s", mt_last_error());
    assert_int_equal(cfg.overlap, 0);
    assert_true(cfg.bucket_mb == 0.5);
    assert_string_equal(cfg.grad_dtype, "bf16");
    snprintf(copy, sizeof copy, "%s/grads.lua", tmpdir);
    assert_int_equal(train_config_write(&cfg, preset, copy), 0);
    if (train_config_load(&back, copy)) fail_msg("%s", mt_last_error());
    assert_memory_equal(&cfg, &back, sizeof cfg);
    expect_error("return { model = { preset = 'mamba-small' }, overlap = 1 }", "overlap");
}

/* A caller's state: the table at the top is read, the stack is left as it was. */
static void test_from_a_callers_state(void **state)
{
    (void)state;
    lua_State *L = luaL_newstate();
    luaL_openlibs(L);
    lua_pushinteger(L, 7);
    assert_int_equal(
        luaL_dostring(L,
                      "return { name = 'mine', model = { preset = 'mamba-small', d_model = 32 } }"),
        LUA_OK);
    mt_train_config cfg;
    char preset[64];
    const char *ov[] = {"lr=2e-3"};
    if (train_config_from_state(&cfg, L, "chunk", ov, 1, preset, sizeof preset))
        fail_msg("%s", mt_last_error());
    assert_int_equal(lua_gettop(L), 2);
    assert_string_equal(cfg.name, "mine");
    assert_string_equal(cfg.run_dir, "runs/mine");
    assert_int_equal(cfg.model.d_model, 32);
    assert_float_equal(cfg.lr, 2e-3, 1e-15);
    assert_string_equal(preset, "mamba-small");
    lua_pushnil(L);
    assert_int_equal(train_config_from_state(&cfg, L, "chunk", NULL, 0, NULL, 0), -1);
    assert_non_null(strstr(mt_last_error(), "chunk: the file must `return { ... }`"));
    assert_int_equal(lua_gettop(L), 3);
    lua_close(L);
}

static int setup(void **state)
{
    (void)state;
    return test_make_tmpdir(tmpdir, sizeof tmpdir, "train-config");
}

static int teardown(void **state)
{
    (void)state;
    return test_remove_tree(tmpdir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_metamethod_errors_are_messages),
        cmocka_unit_test(test_attn_layers_length_is_checked),
        cmocka_unit_test(test_bad_key_type_is_named),
        cmocka_unit_test(test_numbers_must_be_finite),
        cmocka_unit_test(test_nul_bytes_are_refused),
        cmocka_unit_test(test_preset_read_once),
        cmocka_unit_test(test_negative_zero_round_trips),
        cmocka_unit_test(test_from_a_callers_state),
        cmocka_unit_test(test_gradient_keys_read_and_written),
    };
    return cmocka_run_group_tests_name("train_config", tests, setup, teardown);
}
