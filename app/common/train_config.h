/* `mtlab train CONFIG.lua`: the config file returns a Lua table, read here into the engine's
 * mt_train_config. Example (scripts/train/mamba-small.lua):
 *
 *   return {
 *     name = "mamba-small",
 *     model = { preset = "mamba-small", dropout = 0.1 },   -- a preset plus overrides
 *     train_src = "data/bible/train.es", train_tgt = "data/bible/train.en",
 *     valid_src = "data/bible/valid.es", valid_tgt = "data/bible/valid.en",
 *     tokenizer = "data/bible/spm.model",
 *     lr = 1e-3, warmup = 1000, max_tokens = 6000, max_steps = 8000,
 *   }
 *
 * or, for any dataset (mtlab/dataset.h), `dataset = "data/mycorp"` in place of the four file keys:
 * the files, the languages (src_lang, tgt_lang) and the tokenizer (DIR/spm.model) come from it.
 *
 * Unknown keys are errors (a typo must not silently train something else). */
#ifndef MTLAB_APP_TRAIN_CONFIG_H
#define MTLAB_APP_TRAIN_CONFIG_H

#include "mtlab/train.h"

#include <stdio.h>

/* Read path into cfg (defaults first). 0, or -1 with mt_last_error() naming the file and key. */
int train_config_load(mt_train_config *cfg, const char *path);

/* The same, with overrides applied to the returned table before it is read, so they are checked
 * like the file's own keys: "lr=2e-3", "model.d_model=64", "name=try2", "cat_n=false",
 * "model.attn_layers={1,3}". A value that reads as a Lua number, boolean or table constructor is
 * one; anything else is a string. The preset's name goes to preset (size len). */
int train_config_load_with(mt_train_config *cfg, const char *path, const char *const *overrides,
                           int n_overrides, char *preset, size_t len);

/* The same from a caller's Lua state: the settings table at the top of L's stack (a chunk's
 * result) is read into cfg, path naming it in errors. Errors raised by the table's metamethods
 * become mt_last_error(); the stack is left as it was. A sandboxed state (the fuzz target) reads
 * configs without running them with the full libraries. */
struct lua_State;
int train_config_from_state(mt_train_config *cfg, struct lua_State *L, const char *path,
                            const char *const *overrides, int n_overrides, char *preset,
                            size_t len);

/* Write cfg as a self-contained config file (every key, the model as its preset plus every
 * size), which train_config_load reads back into the same cfg: a job's config copy. */
int train_config_write(const mt_train_config *cfg, const char *preset, const char *path);

/* Every key of the two key tables as a markdown reference (types, the run keys' defaults, one
 * line each): `mtlab train --reference`, docs/training-config.md. */
void train_config_reference(FILE *f);

#endif
