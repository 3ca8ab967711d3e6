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
 * Unknown keys are errors (a typo must not silently train something else). */
#ifndef MTLAB_APP_TRAIN_CONFIG_H
#define MTLAB_APP_TRAIN_CONFIG_H

#include "mtlab/train.h"

/* Read path into cfg (defaults first). 0, or -1 with mt_last_error() naming the file and key. */
int train_config_load(mt_train_config *cfg, const char *path);

#endif
