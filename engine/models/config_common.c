/* What every architecture's configuration shares: the reserved token ids, the "mtlab" block
 * of config.json (sep/unk ids, dropout) and the check of a key an architecture fixes, used by
 * each architecture's file. */
#include "models/model_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mtlab/dataset.h"
#include "mtlab/error.h"
#include "mtlab/tokenizer.h"

void mt_model_config_init_ids(mt_model_config *cfg)
{
    cfg->pad_id = MT_PAD_ID;
    cfg->eos_id = MT_EOS_ID;
    cfg->sep_id = MT_SEP_ID;
    cfg->bos_id = MT_BOS_ID;
    cfg->unk_id = MT_UNK_ID;
    cfg->decoder_start_id = MT_BOS_ID;
}

int mt_model_config_token_id(const mt_config *c, const char *key, int *id)
{
    if (!mt_config_has(c, key)) return 0;
    char *json = mt_config_value_json(c, key);
    int is_list = json && json[0] == '[';
    free(json);
    if (!is_list) return mt_config_int(c, key, 0, (1 << 22) - 1, id);
    int ids[16], n = 0;
    if (mt_config_int_list(c, key, 0, (1 << 22) - 1, ids, 16, &n)) return -1;
    if (n == 0) return mt_error("%s: key '%s' is an empty list", mt_config_name(c), key);
    *id = ids[0];
    return 0;
}

/* mtlab.src_lang and mtlab.tgt_lang, both or neither; without them a bundle made before they
 * existed (every one was trained on the Bible) reads as es -> en, with langs_recorded 0. */
static int read_langs(mt_model_config *cfg, const mt_config *x)
{
    snprintf(cfg->src_lang, sizeof cfg->src_lang, "%s", MT_DEFAULT_SRC_LANG);
    snprintf(cfg->tgt_lang, sizeof cfg->tgt_lang, "%s", MT_DEFAULT_TGT_LANG);
    cfg->langs_recorded = 0;
    if (!x || (!mt_config_has(x, "src_lang") && !mt_config_has(x, "tgt_lang"))) return 0;
    const char *keys[2] = {"src_lang", "tgt_lang"};
    char *dst[2] = {cfg->src_lang, cfg->tgt_lang};
    for (int i = 0; i < 2; i++) {
        const char *v = mt_config_string(x, keys[i]);
        if (!v) return -1;
        if (mt_lang_check(v) < 0)
            return mt_error_context("%s: key 'mtlab.%s'", mt_config_name(x), keys[i]);
        snprintf(dst[i], sizeof cfg->src_lang, "%s", v);
    }
    cfg->langs_recorded = 1;
    return 0;
}

/* mtlab.prompt (docs/bundles.md §2.4): a text holding "{src}" once. A decoder-only checkpoint
 * without an mtlab block (from the hub) has no <sep> of mtlab's: its prompt is the source text
 * alone, which the model continues. */
static int read_prompt(mt_model_config *cfg, const mt_config *x, int encdec)
{
    cfg->prompt[0] = '\0';
    if (!x) {
        if (!encdec) snprintf(cfg->prompt, sizeof cfg->prompt, "{src}");
        return 0;
    }
    if (!mt_config_has(x, "prompt")) return 0;
    const char *p = mt_config_string(x, "prompt");
    if (!p) return -1;
    const char *at = strstr(p, "{src}");
    if (!at || strstr(at + 5, "{src}"))
        return mt_error("%s: key 'mtlab.prompt' must hold {src} exactly once, got \"%s\"",
                        mt_config_name(x), p);
    if (strlen(p) >= sizeof cfg->prompt)
        return mt_error("%s: key 'mtlab.prompt' is longer than %zu bytes", mt_config_name(x),
                        sizeof cfg->prompt - 1);
    if (encdec)
        return mt_error("%s: key 'mtlab.prompt': a %s model takes the source on its own, without "
                        "a prompt",
                        mt_config_name(x), cfg->arch);
    snprintf(cfg->prompt, sizeof cfg->prompt, "%s", p);
    return 0;
}

int mt_model_config_read_mtlab(mt_model_config *cfg, const mt_config *c, int encdec)
{
    const mt_config *x = mt_config_object(c, "mtlab");
    /* every bundle mtlab writes names its architecture there; a config without (a hub
     * download, or one given a prompt template by hand, docs/bundles.md §2.4) is a hub
     * checkpoint's, which decodes as transformers' generate() does (mtlab/decode.h) */
    cfg->hf_generate = !x || !mt_config_has(x, "architecture");
    /* an unk id no config gave (a hub checkpoint's: its tokenizer's own, if any, is not mtlab's
     * reserved 4) is none, and is not written back */
    if (!x || !mt_config_has(x, "unk_token_id")) cfg->unk_id = -1;
    if (!x) {
        if (mt_config_has(c, "mtlab"))
            return mt_error("%s: key 'mtlab' must be an object", mt_config_name(c));
        return read_langs(cfg, NULL) || read_prompt(cfg, NULL, encdec) ? -1 : 0;
    }
    return mt_model_config_token_id(x, "sep_token_id", &cfg->sep_id) ||
                   read_prompt(cfg, x, encdec) ||
                   mt_model_config_token_id(x, "unk_token_id", &cfg->unk_id) ||
                   mt_config_float_or(x, "dropout", cfg->dropout, 0.0, 0.999, &cfg->dropout) ||
                   read_langs(cfg, x)
               ? -1
               : 0;
}

int mt_model_config_fixed_bool(const mt_config *c, const char *key, int want, const char *model)
{
    int v;
    if (mt_config_bool_or(c, key, want, &v)) return -1;
    if (v != want)
        return mt_error("%s: %s = %s is not supported (mtlab's %s has %s)", mt_config_name(c), key,
                        v ? "true" : "false", model, want ? "true" : "false");
    return 0;
}

int mt_model_config_write_mtlab(const mt_model_config *cfg, mt_config *c, int with_dropout)
{
    mt_config *x = mt_config_set_object(c, "mtlab");
    if (!x) return -1;
    int rc = mt_config_set_string(x, "architecture", cfg->arch);
    /* a prompt template holds its separator: a sep id beside it would name a token nothing uses
     * (the default 2 is an ordinary token of a hub model's vocabulary) */
    if (!cfg->prompt[0]) rc |= mt_config_set_int(x, "sep_token_id", cfg->sep_id);
    if (cfg->unk_id >= 0) rc |= mt_config_set_int(x, "unk_token_id", cfg->unk_id);
    if (with_dropout) rc |= mt_config_set_float(x, "dropout", cfg->dropout);
    if (cfg->prompt[0]) rc |= mt_config_set_string(x, "prompt", cfg->prompt);
    if (cfg->langs_recorded && cfg->src_lang[0] &&
        cfg->tgt_lang[0]) { /* a default stays unwritten */
        rc |= mt_config_set_string(x, "src_lang", cfg->src_lang);
        rc |= mt_config_set_string(x, "tgt_lang", cfg->tgt_lang);
    }
    return rc ? -1 : 0;
}
