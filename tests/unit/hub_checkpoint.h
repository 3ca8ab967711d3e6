/* The checks a decoder-only checkpoint laid out as the hub's goes through against transformers
 * itself (test_mamba_hf, test_neox_hf). Its fixture directory, made by the make.py beside it,
 * holds the checkpoint as model.safetensors (st/) and as pytorch_model.bin (bin/) with its
 * byte-level BPE tokenizer.json (597 tokens, a vocabulary padded to 600) and an mtlab block whose
 * prompt is "{src}<sep>", reference.txt (prompts, their ids, the logits' prompt count, what
 * generate() gave greedily and with 5 beams) and logits.f32; a variant directory VAR/ beside them
 * has VAR_logits.f32 for the first two prompts and no mtlab block. */
#ifndef MTLAB_TEST_HUB_CHECKPOINT_H
#define MTLAB_TEST_HUB_CHECKPOINT_H

#include <stddef.h>

#include "mtlab/model.h"
#include "mtlab/probe.h"

typedef struct {
    const char *fixture; /* tests/fixtures/NAME_hf */
    const char *arch; /* the registry's name the checkpoint loads as */
    /* the architecture's own checks of st/ and bin/'s config (NULL: none) and of the probes
     * over the first prompt and three tokens of its greedy hypothesis */
    void (*check_config)(const mt_model_config *cfg);
    void (*check_probes)(const mt_probe_record *rec);
} hub_case;

/* st/ or bin/: the template's ids, logits within 1e-4, greedy and beam 5 token-identical to
 * generate() alone and batched with the options every front end starts from
 * (mt_decode_opts_init: the search the config picks), translation's text, the loss's tokens,
 * the probes. */
void hub_check_dir(const hub_case *c, const char *subdir);
/* generate()'s rules hold for a config without mtlab's architecture (its length limit where
 * none is asked for: 20 new tokens, or its generation config's max_length less the prompt),
 * and mtlab's for one that names it (a bundle mtlab saved). */
void hub_check_generate_rules(const hub_case *c);
/* A variant's config (check_config) and its logits within 1e-4 on the first two prompts. */
void hub_check_variant(const hub_case *c, const char *subdir,
                       void (*check_config)(const mt_model_config *cfg));
/* Saved again (a finetune's bundle, forward --save): tokenizer.json keeps its name, so that
 * transformers finds it, config.json keeps the prompt, and the copy reloads the same weights. */
void hub_check_save_round_trip(const hub_case *c);
/* A copy of st/ in a new directory (dir) with one file replaced by text. */
void hub_variant(const hub_case *c, char *dir, size_t len, const char *file, const char *text);
/* st/'s config.json with the text from replaced by to (malloc'd). */
char *hub_config_with(const hub_case *c, const char *from, const char *to);
/* st/ with that config.json fails to open with an error holding every string of want (NULL
 * ended). */
void hub_expect_open_error(const hub_case *c, const char *from, const char *to,
                           const char *const *want);
/* Another model's tokenizer.json (GPT-2's) beside the config is refused by its size. */
void hub_check_other_tokenizer(const hub_case *c);

#endif
