/* Lua table -> mt_train_config, driven by two key tables (run settings, model overrides). */
#include "common/train_config.h"
#include "common/lua_run.h"
#include "mtlab/bundle.h"
#include "mtlab/dataset.h"
#include "mtlab/error.h"

#include <lauxlib.h>
#include <lualib.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* K_LAYERS: a list of 0-based layer indices, stored in mt_model_config's attn_layers and
 * n_attn_layers (the same numbering as config.json) */
typedef enum {
    K_STR,
    K_INT,
    K_LONG,
    K_SIZE,
    K_U64,
    K_DOUBLE,
    K_FLOAT,
    K_BOOL,
    K_ACT,
    K_LAYERS
} key_type;

typedef struct {
    const char *name;
    key_type type;
    size_t offset;
    size_t size; /* K_STR: buffer size */
    const char *doc; /* one line for `mtlab train --reference` (docs/training-config.md) */
} key_desc;

#define RUN_KEY(f, t, doc)                                                          \
    {                                                                               \
#f, t, offsetof(mt_train_config, f), sizeof(((mt_train_config *)0)->f), doc \
    }
static const key_desc run_keys[] = {
    RUN_KEY(name, K_STR, "the run's name; its files go to runs/NAME unless run_dir says otherwise"),
    RUN_KEY(run_dir, K_STR, "where the run's files go (\"\": runs/NAME)"),
    RUN_KEY(dataset, K_STR,
            "a dataset directory (`mtlab data import`, `mtlab data bible`): it gives the four file "
            "keys, the "
            "languages and the tokenizer (DIR/spm.model); docs/data.md §10"),
    RUN_KEY(src_lang, K_STR,
            "source language, a BCP-47 tag; beside dataset, leave both out or swap them for the "
            "reverse direction"),
    RUN_KEY(tgt_lang, K_STR, "target language, as src_lang"),
    RUN_KEY(train_src, K_STR, "training sources, one sentence a line (without dataset)"),
    RUN_KEY(train_tgt, K_STR, "training targets, aligned with train_src"),
    RUN_KEY(valid_src, K_STR, "validation sources (validation loss and BLEU)"),
    RUN_KEY(valid_tgt, K_STR, "validation targets, aligned with valid_src"),
    RUN_KEY(tokenizer, K_STR, "the sentencepiece .model; copied into every saved bundle"),
    RUN_KEY(max_len, K_INT, "token ids per side; longer sides are cut"),
    RUN_KEY(cat_n, K_INT,
            "CAT-N: N >= 2 trains on N consecutive pairs joined into one (0 or 1: off); "
            "docs/models.md §10.3"),
    RUN_KEY(cat_min, K_INT, "CAT-N: 2..N-1 joins a drawn cat_min..N pairs instead (0: exactly N)"),
    RUN_KEY(cat_keep, K_DOUBLE, "CAT-N: the probability that a pair stays alone"),
    RUN_KEY(max_tokens, K_SIZE,
            "padded tokens per side in a micro-batch (decoder-only rows hold both sides, so they "
            "get twice the "
            "rows x length)"),
    RUN_KEY(accum, K_INT, "micro-batches per optimiser step"),
    RUN_KEY(lr, K_DOUBLE, "peak learning rate (inverse square root schedule after the warm-up)"),
    RUN_KEY(warmup, K_LONG, "warm-up steps (0: Hugging Face's timescale form of the schedule)"),
    RUN_KEY(weight_decay, K_DOUBLE, "AdamW's weight decay"),
    RUN_KEY(beta1, K_DOUBLE, "AdamW's beta1"),
    RUN_KEY(beta2, K_DOUBLE, "AdamW's beta2"),
    RUN_KEY(eps, K_DOUBLE, "AdamW's epsilon"),
    RUN_KEY(label_smoothing, K_FLOAT, "label smoothing of the cross-entropy"),
    RUN_KEY(max_steps, K_LONG, "stop after this many optimiser steps"),
    RUN_KEY(seed, K_U64, "the seed of initialisation, batches and dropout"),
    RUN_KEY(log_every, K_INT, "steps between log lines (log.jsonl)"),
    RUN_KEY(valid_every, K_INT, "steps between validations (0: only at the end)"),
    RUN_KEY(valid_bleu_lines, K_INT, "validation lines decoded greedily for BLEU (0: loss only)"),
    RUN_KEY(save_every, K_INT, "steps between checkpoints (0: only at the end)"),
    RUN_KEY(save_dtype_f16, K_BOOL,
            "true: the best/ and steps/ bundles store F16 weights (checkpoints stay F32)"),
    RUN_KEY(device, K_STR, "\"cpu\" (also \"\"), \"cuda\" or \"cuda:N\""),
    RUN_KEY(bf16, K_BOOL, "CUDA: matrix products in bf16, fp32 master weights and state"),
    RUN_KEY(overlap, K_BOOL,
            "several ranks: each bucket of gradients is all-reduced while backward goes on "
            "(false: the whole block after backward, the same bits); docs/distributed.md §3"),
    RUN_KEY(
        bucket_mb, K_DOUBLE,
        "several ranks: a bucket's size cap in MiB of fp32 gradients (whole layers, consecutive)"),
    RUN_KEY(grad_dtype, K_STR,
            "several ranks: \"fp32\" or \"bf16\", what gradients travel as (bf16: half the bytes, "
            "rounded to nearest even, added in fp32)"),
    RUN_KEY(name_substitution, K_DOUBLE,
            "the probability that a name a pair carries verbatim on both sides is replaced by a "
            "gazetteer name, per "
            "name and epoch (0: off); docs/data.md §8"),
    RUN_KEY(gazetteer, K_STR, "the names to substitute with, one per line"),
    RUN_KEY(init, K_STR,
            "a bundle or a checkpoint from the hub (MambaForCausalLM ...) whose weights a new run "
            "starts from: a "
            "finetune; it gives the model keys and the tokenizer, so the model table may be left "
            "out (a key given "
            "there must be the checkpoint's, but for dropout); \"\": fresh weights"),
    RUN_KEY(init_step, K_LONG,
            "with init: the step the run counts on from (the learning-rate schedule's position); "
            "AdamW's moments "
            "start at zero"),
    RUN_KEY(keep_every, K_INT,
            "steps between bundles kept in runs/NAME/steps/STEP (0: none), for checkpoint "
            "averaging; docs/models.md "
            "§10.10"),
};

#define MODEL_KEY(f, t, doc)                                                        \
    {                                                                               \
#f, t, offsetof(mt_model_config, f), sizeof(((mt_model_config *)0)->f), doc \
    }
static const key_desc model_keys[] = {
    MODEL_KEY(vocab_size, K_INT, "V: the vocabulary size (the tokenizer's)"),
    MODEL_KEY(d_model, K_INT, "C: the model width"),
    MODEL_KEY(n_layers, K_INT, "layers (an encoder-decoder's decoder layers)"),
    MODEL_KEY(n_encoder_layers, K_INT, "encoder layers (encoder-decoder models)"),
    MODEL_KEY(n_heads, K_INT, "attention heads"),
    MODEL_KEY(ffn_dim, K_INT, "FFN width"),
    MODEL_KEY(activation, K_ACT, "FFN activation"),
    MODEL_KEY(max_positions, K_INT, "rows of the sinusoid table (transformer)"),
    MODEL_KEY(scale_embedding, K_BOOL, "token embeddings times sqrt(C)"),
    MODEL_KEY(tie_embeddings, K_BOOL, "the output projection is the token embedding"),
    MODEL_KEY(d_state, K_INT, "Mamba: state size per channel"),
    MODEL_KEY(d_conv, K_INT, "Mamba: width of the causal convolution"),
    MODEL_KEY(expand, K_INT, "Mamba: inner width as a multiple of C"),
    MODEL_KEY(dt_rank, K_INT, "Mamba: rank of the step-size projection"),
    MODEL_KEY(dt_min, K_FLOAT,
              "Mamba: config.json's time_step_min (written out; not read by the initialiser)"),
    MODEL_KEY(dt_max, K_FLOAT, "Mamba: config.json's time_step_max (the same)"),
    MODEL_KEY(dt_init_floor, K_FLOAT, "Mamba: config.json's time_step_floor (the same)"),
    MODEL_KEY(norm_eps, K_FLOAT, "RMSNorm epsilon (LayerNorm uses 1e-5)"),
    MODEL_KEY(init_std, K_FLOAT, "Mamba: embedding initialisation N(0, init_std)"),
    MODEL_KEY(dropout, K_FLOAT, "residual-branch dropout while training"),
    MODEL_KEY(rope_theta, K_FLOAT, "transformer++: the rotary base"),
    MODEL_KEY(value_dim, K_INT, "retnet: value width over all heads"),
    MODEL_KEY(window, K_INT, "mamba-local: a query sees itself and the window keys before it"),
    MODEL_KEY(attn_layers, K_LAYERS,
              "mamba-mha, mamba-local: the 0-based indices of the attention layers"),
    MODEL_KEY(prompt, K_STR,
              "decoder-only: a prompt template holding {src} once (\"{src}<sep>\"): training puts "
              "each source into "
              "it and the saved bundle translates with it (config.json's mtlab.prompt, "
              "docs/bundles.md §2.4); "
              "\"\": ids `src <sep>`; a finetune of a checkpoint from the hub, which has none, "
              "must give it"),
};

/* A Lua sequence of layer indices into the config's attn_layers / n_attn_layers. */
static int store_layers(lua_State *L, mt_model_config *mc, const char *where)
{
    if (lua_type(L, -1) != LUA_TTABLE)
        return mt_error("%s: 'attn_layers' must be a list of 0-based layer indices such as {5, 11}",
                        where);
    lua_Integer n = luaL_len(L, -1);
    if (n < 0)
        return mt_error("%s: 'attn_layers' must be a list (its length is %lld)", where,
                        (long long)n);
    if (n > MT_MAX_ATTN_LAYERS)
        return mt_error("%s: 'attn_layers' lists %lld layers, at most %d", where, (long long)n,
                        MT_MAX_ATTN_LAYERS);
    for (lua_Integer i = 1; i <= n; i++) {
        int isnum = 0;
        lua_geti(L, -1, i);
        lua_Integer v = lua_tointegerx(L, -1, &isnum);
        int bad = !isnum || lua_type(L, -1) != LUA_TNUMBER || v < 0 || v > 1000000;
        lua_pop(L, 1);
        if (bad)
            return mt_error("%s: 'attn_layers' entry %lld must be a 0-based layer index", where,
                            (long long)i);
        mc->attn_layers[i - 1] = (int)v;
    }
    mc->n_attn_layers = (int)n;
    return 0;
}

static const struct {
    const char *name;
    mt_act act;
} activations[] = {
    {"relu", MT_ACT_RELU}, {"silu", MT_ACT_SILU}, {"swish", MT_ACT_SILU}, {"gelu", MT_ACT_GELU}};

/* name holds len bytes: a key with a NUL inside is no key's name */
static const key_desc *find_key(const key_desc *keys, size_t n, const char *name, size_t len)
{
    for (size_t i = 0; i < n; i++)
        if (strlen(keys[i].name) == len && !memcmp(keys[i].name, name, len)) return &keys[i];
    return NULL;
}

static void list_keys(char *out, size_t len, const key_desc *keys, size_t n)
{
    size_t at = 0;
    out[0] = '\0';
    for (size_t i = 0; i < n && at < len; i++)
        at += (size_t)snprintf(out + at, len - at, "%s%s", i ? ", " : "", keys[i].name);
}

/* Store the value at the top of the stack into base + k->offset. */
static int store(lua_State *L, void *base, const key_desc *k, const char *where)
{
    char *dst = (char *)base + k->offset;
    int isnum = 0;
    if (k->type == K_LAYERS) return store_layers(L, (mt_model_config *)base, where);
    if (k->type == K_STR || k->type == K_ACT) {
        if (lua_type(L, -1) != LUA_TSTRING)
            return mt_error("%s: '%s' must be a string", where, k->name);
        size_t len;
        const char *s = lua_tolstring(L, -1, &len);
        if (strlen(s) != len) return mt_error("%s: '%s' holds a NUL byte", where, k->name);
        if (k->type == K_ACT) {
            for (size_t i = 0; i < sizeof activations / sizeof activations[0]; i++)
                if (!strcmp(s, activations[i].name)) {
                    *(mt_act *)dst = activations[i].act;
                    return 0;
                }
            return mt_error("%s: activation \"%s\" is not one of relu, silu, gelu", where, s);
        }
        if (len >= k->size)
            return mt_error("%s: '%s' is longer than %zu bytes", where, k->name, k->size - 1);
        memcpy(dst, s, len + 1);
        return 0;
    }
    if (k->type == K_BOOL) {
        if (lua_type(L, -1) != LUA_TBOOLEAN)
            return mt_error("%s: '%s' must be true or false", where, k->name);
        *(int *)dst = lua_toboolean(L, -1);
        return 0;
    }
    if (k->type == K_DOUBLE || k->type == K_FLOAT) {
        lua_Number v = lua_tonumberx(L, -1, &isnum);
        if (!isnum || lua_type(L, -1) != LUA_TNUMBER)
            return mt_error("%s: '%s' must be a number", where, k->name);
        if (!isfinite(v)) return mt_error("%s: '%s' must be a finite number", where, k->name);
        if (k->type == K_FLOAT && fabs(v) > FLT_MAX)
            return mt_error("%s: '%s' is out of range", where, k->name);
        if (k->type == K_DOUBLE) *(double *)dst = (double)v;
        else *(float *)dst = (float)v;
        return 0;
    }
    lua_Integer v = lua_tointegerx(L, -1, &isnum);
    if (!isnum || lua_type(L, -1) != LUA_TNUMBER)
        return mt_error("%s: '%s' must be an integer", where, k->name);
    switch (k->type) {
    case K_INT:
        if (v < -2147483647 || v > 2147483647)
            return mt_error("%s: '%s' is out of range", where, k->name);
        *(int *)dst = (int)v;
        break;
    case K_LONG: *(long *)dst = (long)v; break;
    case K_SIZE:
        if (v < 0) return mt_error("%s: '%s' must not be negative", where, k->name);
        *(size_t *)dst = (size_t)v;
        break;
    default: *(uint64_t *)dst = (uint64_t)v; break;
    }
    return 0;
}

/* Read every string key of the table at the top of the stack through keys into base; the key
 * `skip` (read by the caller) is passed over. */
static int read_table(lua_State *L, void *base, const key_desc *keys, size_t n, const char *where,
                      const char *skip)
{
    lua_pushnil(L);
    while (lua_next(L, -2)) {
        if (lua_type(L, -2) != LUA_TSTRING) {
            const char *type = luaL_typename(L, -2);
            lua_pop(L, 2);
            return mt_error("%s: keys must be names, found a %s key", where, type);
        }
        size_t len;
        const char *name = lua_tolstring(L, -2, &len);
        if (skip && strlen(skip) == len && !memcmp(name, skip, len)) {
            lua_pop(L, 1);
            continue;
        }
        const key_desc *k = find_key(keys, n, name, len);
        if (!k) {
            char known[1024];
            list_keys(known, sizeof known, keys, n);
            lua_pop(L, 2);
            return mt_error("%s: unknown key '%s' (known: %s%s%s)", where, name, known,
                            skip ? ", " : "", skip ? skip : "");
        }
        int rc = store(L, base, k, where);
        lua_pop(L, 1);
        if (rc != 0) {
            lua_pop(L, 1);
            return -1;
        }
    }
    return 0;
}

/* The model table at the top of the stack; the preset's name (read once: a metamethod may answer
 * differently the next time) to preset (size len) unless NULL. */
static int read_model(lua_State *L, mt_model_config *mc, const char *path, char *preset_out,
                      size_t len)
{
    char where[600];
    snprintf(where, sizeof where, "%s: model", path);
    if (lua_type(L, -1) != LUA_TTABLE)
        return mt_error("%s must be a table such as { preset = \"mamba-small\" }", where);
    lua_getfield(L, -1, "preset");
    if (lua_type(L, -1) != LUA_TSTRING) {
        lua_pop(L, 1);
        return mt_error("%s: 'preset' must name a preset (e.g. \"mamba-small\")", where);
    }
    const char *preset = lua_tostring(L, -1);
    int rc = mt_model_preset(mc, preset);
    if (preset_out) snprintf(preset_out, len, "%s", preset);
    lua_pop(L, 1);
    if (rc != 0) return mt_error_context("%s", where);
    return read_table(L, mc, model_keys, sizeof model_keys / sizeof model_keys[0], where, "preset");
}

/* Apply one "key=value" (key or model.key) to the settings table at the top of the stack. */
static int apply_override(lua_State *L, const char *path, const char *ov)
{
    const char *eq = strchr(ov, '=');
    if (!eq || eq == ov)
        return mt_error("override \"%s\": expected KEY=VALUE (e.g. lr=2e-3, model.d_model=64)", ov);
    char key[128];
    if ((size_t)(eq - ov) >= sizeof key)
        return mt_error("override \"%s\": the key is too long", ov);
    snprintf(key, sizeof key, "%.*s", (int)(eq - ov), ov);
    const char *field = key;
    int in_model = !strncmp(key, "model.", 6);
    if (in_model) {
        field = key + 6;
        if (lua_getfield(L, -1, "model") != LUA_TTABLE) {
            lua_pop(L, 1);
            return mt_error("override \"%s\": %s has no model table", ov, path);
        }
    } else {
        lua_pushvalue(L, -1);
    }
    /* the value as a Lua expression in an empty environment: numbers, booleans, tables */
    char chunk[600];
    snprintf(chunk, sizeof chunk, "return %s", eq + 1);
    int typed = 0;
    if (luaL_loadstring(L, chunk) == LUA_OK) {
        lua_newtable(L);
        lua_setupvalue(L, -2, 1);
        if (lua_pcall(L, 0, 1, 0) == LUA_OK) {
            int t = lua_type(L, -1);
            typed = t == LUA_TNUMBER || t == LUA_TBOOLEAN || t == LUA_TTABLE;
        }
        if (!typed) lua_pop(L, 1);
    } else {
        lua_pop(L, 1);
    }
    if (!typed) lua_pushstring(L, eq + 1);
    lua_setfield(L, -2, field);
    lua_pop(L, 1);
    return 0;
}

/* The direction of `dataset = DIR`: src_lang/tgt_lang left out or the dataset's (0), or its
 * two languages swapped (1: trains tgt -> src, as en -> es on the Bible); anything else is an
 * error. Read from the table (still on the stack), since cfg holds the defaults for keys left
 * out. */
static int dataset_direction(lua_State *L, const mt_dataset *d, const char *path,
                             const char *dataset, int *reverse)
{
    const char *keys[2] = {"src_lang", "tgt_lang"}, *given[2] = {NULL, NULL};
    for (int i = 0; i < 2; i++) {
        lua_getfield(L, -1, keys[i]);
        given[i] = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
        lua_pop(L, 1); /* the string stays alive in the table */
    }
    const char *fwd[2] = {d->src_lang, d->tgt_lang};
    for (*reverse = 0; *reverse < 2; (*reverse)++) {
        int fits = 1;
        for (int i = 0; i < 2; i++) fits &= !given[i] || !strcmp(given[i], fwd[i ^ *reverse]);
        if (fits) return 0;
    }
    return mt_error(
        "%s: src_lang = \"%s\", tgt_lang = \"%s\" beside dataset = \"%s\", whose languages are %s "
        "and %s (leave them out for %s -> %s, or swap them for the reverse direction)",
        path, given[0] ? given[0] : "", given[1] ? given[1] : "", dataset, d->src_lang, d->tgt_lang,
        d->src_lang, d->tgt_lang);
}

/* `dataset = DIR`: the files and the languages from the dataset (mtlab/dataset.h); a file key
 * or language given beside it must be the dataset's (a config written back by
 * train_config_write holds both), the tokenizer defaults to DIR/spm.model. Without a dataset the
 * languages are the keys src_lang/tgt_lang (default es, en), checked as BCP-47 tags. With a
 * dataset they choose the direction (dataset_direction). Then the model records them (its
 * bundles' config.json). */
static int resolve_dataset(lua_State *L, mt_train_config *cfg, const char *path)
{
    if (cfg->dataset[0]) {
        mt_dataset d;
        int reverse;
        if (mt_dataset_open(&d, cfg->dataset) < 0)
            return mt_error_context("%s: dataset = \"%s\"", path, cfg->dataset);
        if (dataset_direction(L, &d, path, cfg->dataset, &reverse) < 0) return -1;
        struct {
            const char *key;
            char *value;
            size_t size;
            const char *split;
            int target;
        } files[] = {{"train_src", cfg->train_src, sizeof cfg->train_src, "train", 0},
                     {"train_tgt", cfg->train_tgt, sizeof cfg->train_tgt, "train", 1},
                     {"valid_src", cfg->valid_src, sizeof cfg->valid_src, "valid", 0},
                     {"valid_tgt", cfg->valid_tgt, sizeof cfg->valid_tgt, "valid", 1}};
        for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
            char want[sizeof cfg->train_src];
            if (mt_dataset_path(&d, files[i].split, files[i].target ^ reverse, want, sizeof want) <
                0)
                return mt_error_context("%s: dataset", path);
            if (files[i].value[0] && strcmp(files[i].value, want) != 0)
                return mt_error("%s: '%s' = \"%s\" beside dataset = \"%s\" (which gives %s): give "
                                "one or the other",
                                path, files[i].key, files[i].value, cfg->dataset, want);
            if (files[i].target == 0 && strcmp(files[i].split, "valid") == 0 &&
                access(want, F_OK) != 0)
                break; /* a dataset without a valid split: validation is off */
            snprintf(files[i].value, files[i].size, "%s", want);
        }
        if (!cfg->tokenizer[0])
            snprintf(cfg->tokenizer, sizeof cfg->tokenizer, "%s/spm.model", cfg->dataset);
        snprintf(cfg->src_lang, sizeof cfg->src_lang, "%s", reverse ? d.tgt_lang : d.src_lang);
        snprintf(cfg->tgt_lang, sizeof cfg->tgt_lang, "%s", reverse ? d.src_lang : d.tgt_lang);
    }
    if (mt_lang_check(cfg->src_lang) < 0) return mt_error_context("%s: 'src_lang'", path);
    if (mt_lang_check(cfg->tgt_lang) < 0) return mt_error_context("%s: 'tgt_lang'", path);
    snprintf(cfg->model.src_lang, sizeof cfg->model.src_lang, "%s", cfg->src_lang);
    snprintf(cfg->model.tgt_lang, sizeof cfg->model.tgt_lang, "%s", cfg->tgt_lang);
    cfg->model.langs_recorded = 1;
    return 0;
}

static void write_value(FILE *f, const void *base, const key_desc *k, int exact);

/* A model key's value as a config file holds it, for messages. */
static void value_text(char *out, size_t len, const void *base, const key_desc *k)
{
    FILE *f = fmemopen(out, len, "w");
    if (!f) {
        snprintf(out, len, "?");
        return;
    }
    write_value(f, base, k, 0);
    fclose(f);
}

/* 1 when model key k holds the same value in a and b. */
static int same_value(const mt_model_config *a, const mt_model_config *b, const key_desc *k)
{
    if (k->type == K_LAYERS)
        return a->n_attn_layers == b->n_attn_layers &&
               !memcmp(a->attn_layers, b->attn_layers,
                       (size_t)a->n_attn_layers * sizeof *a->attn_layers);
    if (k->type == K_STR) return !strcmp((const char *)a + k->offset, (const char *)b + k->offset);
    return !memcmp((const char *)a + k->offset, (const char *)b + k->offset, k->size);
}

/* `init = DIR`, a finetune: the model's configuration and tokenizer are the checkpoint's
 * (mt_model_config_load), and the model table (at the top of the stack, or nil) may be left
 * out. A preset given there must be the checkpoint's architecture (its sizes are the
 * checkpoint's), and each key given must hold the checkpoint's value, but for dropout (a
 * training setting). A decoder-only checkpoint from the hub (no mtlab block in config.json)
 * has no template and no separator of mtlab's (its sep id would be an ordinary token), so
 * model.prompt must be given: the template the finetune trains with and its bundles keep. */
static int init_model(lua_State *L, mt_train_config *cfg, const char *path, char *preset_out,
                      size_t len)
{
    char where[600], tok[sizeof cfg->tokenizer], file[700];
    snprintf(where, sizeof where, "%s: init = \"%s\"", path, cfg->init);
    mt_model_config ck;
    if (mt_model_config_load(cfg->init, &ck, tok, sizeof tok) != 0)
        return mt_error_context("%s", where);
    snprintf(file, sizeof file, "%s/config.json", cfg->init);
    mt_config *json = mt_config_load(file);
    if (!json) return mt_error_context("%s", where);
    int hub = !mt_config_has(json, "mtlab") && !mt_model_config_is_encdec(&ck);
    mt_config_free(json);
    if (cfg->tokenizer[0] && strcmp(cfg->tokenizer, tok) != 0)
        return mt_error("%s: 'tokenizer' = \"%s\" contradicts init = \"%s\", whose tokenizer is %s "
                        "(leave it out)",
                        path, cfg->tokenizer, cfg->init, tok);
    snprintf(cfg->tokenizer, sizeof cfg->tokenizer, "%s", tok);
    mt_model_config given = ck;
    if (hub) given.prompt[0] = '\0'; /* "{src}" as read: none of mtlab's */
    if (lua_type(L, -1) == LUA_TTABLE) {
        char model_where[640];
        snprintf(model_where, sizeof model_where, "%s: model", path);
        lua_getfield(L, -1, "preset");
        if (!lua_isnil(L, -1)) {
            mt_model_config p;
            const char *name = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
            int rc = !name ? mt_error("%s: 'preset' must name a preset (e.g. \"mamba-small\")",
                                      model_where)
                     : mt_model_preset(&p, name) != 0 ? mt_error_context("%s", model_where)
                     : strcmp(p.arch, ck.arch) != 0
                         ? mt_error("%s: preset \"%s\" is a %s, but init = \"%s\" is a %s model "
                                    "(leave the preset "
                                    "out: the checkpoint gives the model)",
                                    model_where, name, p.arch, cfg->init, ck.arch)
                         : 0;
            if (rc != 0) {
                lua_pop(L, 1);
                return -1;
            }
        }
        lua_pop(L, 1);
        if (read_table(L, &given, model_keys, sizeof model_keys / sizeof model_keys[0], model_where,
                       "preset") != 0)
            return -1;
    } else if (!lua_isnil(L, -1)) {
        return mt_error("%s: model must be a table of model keys (or left out beside init)", path);
    }
    for (size_t i = 0; i < sizeof model_keys / sizeof model_keys[0]; i++) {
        const key_desc *k = &model_keys[i];
        if (!strcmp(k->name, "dropout") || (hub && !strcmp(k->name, "prompt")) ||
            same_value(&given, &ck, k))
            continue;
        char want[300], got[300];
        value_text(got, sizeof got, &given, k);
        value_text(want, sizeof want, &ck, k);
        return mt_error(
            "%s: model: '%s' = %s contradicts init = \"%s\", whose %s is %s (leave it out: the "
            "checkpoint gives the model)",
            path, k->name, got, cfg->init, k->name, want);
    }
    if (hub && !given.prompt[0])
        return mt_error(
            "%s: init = \"%s\" is a decoder-only checkpoint from the hub (its config.json has no "
            "mtlab block), which has no prompt template and no separator of mtlab's: give "
            "model.prompt, the template training puts each source into and its bundles translate "
            "with (\"{src}<sep>\" with an added <sep> token, or \"Spanish: {src}\\nEnglish:\"; "
            "docs/bundles.md §2.4)",
            path, cfg->init);
    given.hf_generate = 0; /* the finetune's bundles are mtlab's: they decode with its template */
    cfg->model = given;
    if (preset_out) snprintf(preset_out, len, "%s", ck.arch);
    return 0;
}

/* train_config_from_state's arguments, for read_settings under lua_pcall. */
typedef struct {
    mt_train_config *cfg;
    const char *path;
    const char *const *overrides;
    int n_overrides;
    char *preset;
    size_t len;
    int rc;
} read_args;

/* lua_pcall'ed: (args, settings table). A metamethod of the config's tables may raise an
 * error or run out of memory; pcall turns either into a message instead of Lua's panic. */
static int read_settings(lua_State *L)
{
    read_args *a = lua_touserdata(L, 1);
    mt_train_config *cfg = a->cfg;
    const char *path = a->path;
    lua_settop(L, 2);
    a->rc = -1;
    for (int i = 0; i < a->n_overrides; i++)
        if (apply_override(L, path, a->overrides[i]) != 0) return 0;
    if (read_table(L, cfg, run_keys, sizeof run_keys / sizeof run_keys[0], path, "model") != 0)
        return 0;
    lua_getfield(L, -1, "model");
    if (cfg->init[0]) {
        if (init_model(L, cfg, path, a->preset, a->len) != 0) return 0;
    } else {
        if (lua_isnil(L, -1)) {
            mt_error("%s: 'model' is missing (e.g. model = { preset = \"mamba-small\" }, or init = "
                     "a checkpoint "
                     "to finetune)",
                     path);
            return 0;
        }
        if (read_model(L, &cfg->model, path, a->preset, a->len) != 0) return 0;
    }
    lua_pop(L, 1);
    if (resolve_dataset(L, cfg, path) != 0) return 0;
    if (!cfg->run_dir[0]) snprintf(cfg->run_dir, sizeof cfg->run_dir, "runs/%s", cfg->name);
    a->rc = 0;
    return 0;
}

int train_config_from_state(mt_train_config *cfg, lua_State *L, const char *path,
                            const char *const *overrides, int n_overrides, char *preset, size_t len)
{
    mt_train_config_defaults(cfg);
    if (lua_type(L, -1) != LUA_TTABLE)
        return mt_error("%s: the file must `return { ... }` a table of settings, it returned %s",
                        path, luaL_typename(L, -1));
    read_args a = {cfg, path, overrides, n_overrides, preset, len, -1};
    int top = lua_gettop(L);
    lua_pushcfunction(L, read_settings);
    lua_pushlightuserdata(L, &a);
    lua_pushvalue(L, top);
    if (lua_pcall(L, 2, 0, 0) != LUA_OK) {
        const char *msg = lua_tostring(L, -1);
        mt_error("%s: %s", path, msg ? msg : "an error object that is not a string");
        a.rc = -1;
    }
    lua_settop(L, top);
    return a.rc;
}

int train_config_load_with(mt_train_config *cfg, const char *path, const char *const *overrides,
                           int n_overrides, char *preset, size_t len)
{
    mt_train_config_defaults(cfg);
    lua_State *L = luaL_newstate();
    if (!L) return mt_error("%s: cannot create a Lua state", path);
    luaL_openlibs(L);
    int rc = -1;
    if (mtl_dofile(L, path, 0) != LUA_OK) {
        /* the message's first line ("FILE:LINE: what"); the traceback below it names only
         * the config's own chunk */
        const char *msg = lua_tostring(L, -1);
        mt_error("%.*s", (int)strcspn(msg ? msg : "", "\n"), msg ? msg : "(no message)");
        goto out;
    }
    lua_settop(L, 1); /* the chunk's first result (nil when it returns nothing) */
    rc = train_config_from_state(cfg, L, path, overrides, n_overrides, preset, len);
out:
    lua_close(L);
    return rc;
}

int train_config_load(mt_train_config *cfg, const char *path)
{
    return train_config_load_with(cfg, path, NULL, 0, NULL, 0);
}

/* A Lua string literal. */
static void write_quoted(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') fprintf(f, "\\%c", *s);
        else if ((unsigned char)*s < 32) fprintf(f, "\\%03d", (unsigned char)*s);
        else fputc(*s, f);
    }
    fputc('"', f);
}

/* A float key's value; exact: always as a float literal, since Lua reads "-0" as the integer 0
 * (+0.0 once converted). */
static void write_number(FILE *f, const char *fmt, double v, int exact)
{
    char text[64];
    snprintf(text, sizeof text, fmt, v);
    fputs(text, f);
    if (exact && !strpbrk(text, ".eEn")) fputs(".0", f);
}

/* A key's value as Lua reads it; exact: floats with enough digits to read back to the same bits
 * (else the shortest %g form, for people). */
static void write_value(FILE *f, const void *base, const key_desc *k, int exact)
{
    const char *src = (const char *)base + k->offset;
    switch (k->type) {
    case K_STR: write_quoted(f, src); break;
    case K_INT: fprintf(f, "%d", *(const int *)src); break;
    case K_LONG: fprintf(f, "%ld", *(const long *)src); break;
    case K_SIZE: fprintf(f, "%zu", *(const size_t *)src); break;
    case K_U64: fprintf(f, "%lld", (long long)*(const uint64_t *)src); break;
    case K_DOUBLE: write_number(f, exact ? "%.17g" : "%g", *(const double *)src, exact); break;
    case K_FLOAT: write_number(f, exact ? "%.9g" : "%g", (double)*(const float *)src, exact); break;
    case K_BOOL: fputs(*(const int *)src ? "true" : "false", f); break;
    case K_ACT:
        for (size_t i = 0; i < sizeof activations / sizeof activations[0]; i++)
            if (activations[i].act == *(const mt_act *)src) {
                write_quoted(f, activations[i].name);
                break;
            }
        break;
    case K_LAYERS: {
        const mt_model_config *mc = base;
        fputc('{', f);
        for (int i = 0; i < mc->n_attn_layers; i++)
            fprintf(f, "%s%d", i ? ", " : "", mc->attn_layers[i]);
        fputc('}', f);
        break;
    }
    }
}

/* One key = value line. */
static void write_key(FILE *f, const void *base, const key_desc *k, const char *indent)
{
    fprintf(f, "%s%s = ", indent, k->name);
    write_value(f, base, k, 1);
    fputs(",\n", f);
}

static const char *type_name(key_type t)
{
    switch (t) {
    case K_STR: return "string";
    case K_INT:
    case K_LONG:
    case K_SIZE:
    case K_U64: return "integer";
    case K_DOUBLE:
    case K_FLOAT: return "number";
    case K_BOOL: return "boolean";
    case K_ACT: return "\"relu\", \"silu\" (\"swish\") or \"gelu\"";
    case K_LAYERS: return "list of integers";
    }
    return "?";
}

void train_config_reference(FILE *f)
{
    mt_train_config defaults;
    mt_train_config_defaults(&defaults);
    fputs("# Training configuration keys\n\n"
          "<!-- Generated by `mtlab train --reference` from the key tables of "
          "app/common/train_config.c; "
          "tests/lua/train_config_spec.lua checks that this file is its output. -->\n\n"
          "`mtlab train CONFIG.lua` and `mtlab jobs start CONFIG.lua` read a Lua file that returns "
          "a table "
          "of the keys below (`scripts/train/*.lua` are examples). An unknown key, or a value of "
          "the wrong "
          "type, is an error that names the file and the key. `KEY=VALUE` after the config "
          "overrides a key "
          "(`model.KEY=VALUE` a model key), checked the same way. A job's `runs/NAME/config.lua` "
          "is the "
          "config written back with every key.\n\n"
          "## Run keys\n\n"
          "| key | type | default | what it sets |\n| --- | --- | --- | --- |\n",
          f);
    for (size_t i = 0; i < sizeof run_keys / sizeof run_keys[0]; i++) {
        fprintf(f, "| `%s` | %s | `", run_keys[i].name, type_name(run_keys[i].type));
        write_value(f, &defaults, &run_keys[i], 0);
        fprintf(f, "` | %s |\n", run_keys[i].doc);
    }
    fputs(
        "\n## Model keys\n\n"
        "`model = { preset = \"NAME\", KEY = VALUE, ... }`: a preset (an architecture at a size, "
        "such as "
        "`mamba-small` or `transformer`) gives every key its value, and the keys given beside it "
        "override those.\n\n"
        "A finetune names no preset: `init = DIR` (a bundle, or a checkpoint from the hub such as "
        "state-spaces/mamba-130m-hf) gives every model key and the tokenizer, so its config holds "
        "init, the "
        "data and training keys (`scripts/train/finetune-mamba.lua`). A model table beside init "
        "may set "
        "dropout, restate the checkpoint's values, and give `prompt` to a decoder-only checkpoint "
        "from the "
        "hub, which has none (its config.json has no mtlab block) and must get one; any other "
        "value is an "
        "error naming the key. Training rows are then the decoding prompt (the source put into the "
        "template and encoded whole, as `mtlab translate` does), the target and `<eos>`, and every "
        "saved "
        "bundle keeps the template and the Hugging Face layout, so `transformers` loads it "
        "back.\n\n"
        "| key | type | what it sets |\n| --- | --- | --- |\n",
        f);
    for (size_t i = 0; i < sizeof model_keys / sizeof model_keys[0]; i++)
        fprintf(f, "| `%s` | %s | %s |\n", model_keys[i].name, type_name(model_keys[i].type),
                model_keys[i].doc);
}

int train_config_write(const mt_train_config *cfg, const char *preset, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f) return mt_error("%s: %s", path, strerror(errno));
    fprintf(
        f,
        "-- Written by mtlab: every setting of this run, read back by `mtlab train`.\nreturn {\n");
    fputs("  model = {\n    preset = ", f);
    write_quoted(f, preset);
    fputs(",\n", f);
    for (size_t i = 0; i < sizeof model_keys / sizeof model_keys[0]; i++)
        write_key(f, &cfg->model, &model_keys[i], "    ");
    fputs("  },\n", f);
    for (size_t i = 0; i < sizeof run_keys / sizeof run_keys[0]; i++)
        write_key(f, cfg, &run_keys[i], "  ");
    fputs("}\n", f);
    int bad = ferror(f) != 0;
    if (fclose(f) != 0 || bad) return mt_error("%s: write failed: %s", path, strerror(errno));
    return 0;
}
