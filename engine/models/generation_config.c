/* The length limit transformers' generate() gives a hub checkpoint when asked for none
 * (transformers 4.57: GenerationMixin._prepare_generation_config and _prepare_generated_length,
 * PretrainedConfig._get_non_default_generation_parameters). The generation config is
 *   - generation_config.json, when the directory holds one; but where that file was made from
 *     config.json (_from_model_config true) and config.json holds generation keys of its own
 *     (the hub's opus-mt configs: max_length 512, num_beams 4, bad_words_ids), generate()
 *     rebuilds it from config.json (the legacy path);
 *   - config.json, when there is no generation_config.json.
 * Its max_length (20 where it has none) is kept as it stands; mt_decode_max_new turns it into
 * new tokens (an encoder-decoder's counts the decoder start and the final </s>, a decoder-only
 * model's its prompt, and the default 20 is lengthened by the prompt). */
#include <string.h>

#include "models/model_internal.h"
#include "mtlab/error.h"
#include "mtlab/files.h"

#define MAX_LENGTH_LIMIT (1 << 20)

/* The generation keys a model config may hold, with MarianConfig()'s values; a key that is
 * absent or null is at its default; `nullable`: the default is null (any value differs). */
static const struct {
    const char *name;
    enum { NUMBER, FALSE, NULLABLE } kind;
    double def;
} generation_keys[] = {
    {"max_length", NUMBER, 20},
    {"min_length", NUMBER, 0},
    {"num_beams", NUMBER, 1},
    {"num_beam_groups", NUMBER, 1},
    {"diversity_penalty", NUMBER, 0},
    {"temperature", NUMBER, 1},
    {"top_k", NUMBER, 50},
    {"top_p", NUMBER, 1},
    {"typical_p", NUMBER, 1},
    {"repetition_penalty", NUMBER, 1},
    {"length_penalty", NUMBER, 1},
    {"no_repeat_ngram_size", NUMBER, 0},
    {"encoder_no_repeat_ngram_size", NUMBER, 0},
    {"num_return_sequences", NUMBER, 1},
    {"forced_eos_token_id", NUMBER, 0}, /* MarianConfig's own default */
    {"do_sample", FALSE, 0},
    {"early_stopping", FALSE, 0},
    {"output_scores", FALSE, 0},
    {"return_dict_in_generate", FALSE, 0},
    {"remove_invalid_values", FALSE, 0},
    {"bad_words_ids", NULLABLE, 0},
    {"forced_bos_token_id", NULLABLE, 0},
    {"exponential_decay_length_penalty", NULLABLE, 0},
    {"suppress_tokens", NULLABLE, 0},
    {"begin_suppress_tokens", NULLABLE, 0},
};

/* 1 when config.json holds a generation key at other than its default (a value of another
 * type than the default's counts as different, as Python's == would have it). */
static int holds_generation_keys(const mt_config *c)
{
    for (size_t i = 0; i < sizeof generation_keys / sizeof *generation_keys; i++) {
        const char *key = generation_keys[i].name;
        if (!mt_config_has(c, key)) continue;
        float f;
        int b;
        switch (generation_keys[i].kind) {
        case NUMBER:
            if (mt_config_float(c, key, -1e30, 1e30, &f) || f != generation_keys[i].def) return 1;
            break;
        case FALSE:
            if (mt_config_bool(c, key, &b) || b) return 1;
            break;
        case NULLABLE: return 1;
        }
    }
    return 0;
}

int mt_hf_generation_max_length(mt_model_config *cfg, const char *dir, const mt_config *c)
{
    int model_len;
    if (mt_config_int_or(c, "max_length", MT_GENERATE_DEFAULT_MAX_LENGTH, 3, MAX_LENGTH_LIMIT,
                         &model_len))
        return -1;
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/generation_config.json", dir) >= sizeof path)
        return mt_error("%s: the directory's path is too long", dir);
    int len = model_len;
    if (mt_file_check(path, MT_FILE_REGULAR) == 0) {
        mt_config *g = mt_config_load(path);
        if (!g) return -1;
        int from_model, gen_len;
        int rc = mt_config_bool_or(g, "_from_model_config", 0, &from_model) ||
                 mt_config_int_or(g, "max_length", MT_GENERATE_DEFAULT_MAX_LENGTH, 3,
                                  MAX_LENGTH_LIMIT, &gen_len);
        mt_config_free(g);
        if (rc) return -1;
        if (!(from_model && holds_generation_keys(c))) len = gen_len;
        mt_clear_error(); /* holds_generation_keys reads values of any type */
    }
    /* as it stands: what it allows depends on the prompt (mt_decode_max_new) */
    cfg->hf_max_length = len;
    return 0;
}
