/* Opening a bundle to run (mtlab/runner.h). */
#include "mtlab/runner.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "mtlab/clock.h"
#include "mtlab/device.h"
#include "mtlab/error.h"

/* The bundle's corpus_stats.tsv into *out: 0 with *out NULL when it has none. */
static int read_corpus_stats(const char *dir, mt_corpus_stats **out)
{
    *out = NULL;
    char path[PATH_MAX];
    struct stat st;
    if (snprintf(path, sizeof path, "%s/corpus_stats.tsv", dir) >= (int)sizeof path)
        return mt_error("%s: path too long", dir);
    if (stat(path, &st) != 0) return 0;
    *out = mt_corpus_stats_read(path);
    return *out ? 0 : -1;
}

static int check_vocab(const mt_model *m, const mt_tokenizer *tok, const char *dir)
{
    int rows = mt_model_get_config(m)->vocab_size, pieces = mt_tokenizer_vocab_size(tok);
    if (mt_vocab_rows_fit(pieces, rows)) return 0;
    return mt_error(
        "%s: %s has %d pieces but the model (%s/config.json vocab_size) has %d rows: "
        "not this model's tokenizer (a padded vocabulary ends at the next multiple of %d)",
        dir, mt_tokenizer_source(tok), pieces, dir, rows, MT_VOCAB_PAD);
}

/* The config's end-of-sentence and padding ids must be the tokenizer's, where it fixes them
 * (an opus-mt config beside another vocabulary would otherwise decode without a word). */
static int check_special_ids(const mt_model *m, const mt_tokenizer *tok, const char *dir)
{
    const mt_model_config *c = mt_model_get_config(m);
    const struct {
        mt_token_role role;
        const char *key, *what;
        int id;
    } ids[] = {{MT_ROLE_EOS, "eos_token_id", "end of sentence", c->eos_id},
               {MT_ROLE_PAD, "pad_token_id", "padding", c->pad_id}};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        int want = mt_tokenizer_special_id(tok, ids[i].role);
        if (want < 0 || want == ids[i].id) continue;
        const char *piece = mt_tokenizer_id_to_piece(tok, ids[i].id);
        return mt_error("%s/config.json: %s %d is '%s' in %s, whose %s is '%s' (id %d)", dir,
                        ids[i].key, ids[i].id, piece ? piece : "outside the vocabulary",
                        mt_tokenizer_source(tok), ids[i].what, mt_tokenizer_id_to_piece(tok, want),
                        want);
    }
    return 0;
}

/* A tokenizer.json fixes no roles, but a config's bos, eos and pad ids must be among its
 * special tokens (<|endoftext|>): an id that is a word piece is another tokenizer's. */
static int check_json_special_ids(const mt_model *m, const mt_tokenizer *tok, const char *dir)
{
    const mt_model_config *c = mt_model_get_config(m);
    if (mt_model_is_encdec(m)) return 0;
    const struct {
        const char *key;
        int id;
    } ids[] = {
        {"eos_token_id", c->eos_id}, {"pad_token_id", c->pad_id}, {"bos_token_id", c->bos_id}};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        if (mt_tokenizer_is_special(tok, ids[i].id) != 0) continue;
        const char *piece = mt_tokenizer_id_to_piece(tok, ids[i].id);
        return mt_error("%s/config.json: %s %d is %s%s%s in %s, not one of its special tokens "
                        "(added_tokens with \"special\": true): not this model's tokenizer?",
                        dir, ids[i].key, ids[i].id, piece ? "'" : "",
                        piece ? piece : "outside the vocabulary", piece ? "'" : "",
                        mt_tokenizer_source(tok));
    }
    return 0;
}

mt_runner *mt_runner_open(const char *dir, const char *device, unsigned flags)
{
    double t0 = mt_now_s();
    const mt_backend *be = mt_backend_for(device, 0);
    if (!be) return NULL;
    mt_runner *r = mt_xcalloc(1, sizeof *r);
    r->dir = mt_xstrdup(dir);
    r->backend = be;
    r->model = mt_model_load(dir, be, 0);
    if (r->model && (mt_model_set_precision(r->model, mt_runner_precision(flags)) != 0 ||
                     mt_model_set_fp32_panels(r->model, 1) != 0)) {
        mt_error_context("%s", dir);
        mt_runner_close(r);
        return NULL;
    }
    const char *tok_path = r->model ? mt_model_tokenizer_path(r->model) : NULL;
    if (r->model && !tok_path) mt_error("%s: the bundle has no tokenizer.model", dir);
    if (tok_path) r->tok = mt_tokenizer_load(tok_path);
    if (!r->tok || check_vocab(r->model, r->tok, dir) != 0 ||
        check_special_ids(r->model, r->tok, dir) != 0 ||
        check_json_special_ids(r->model, r->tok, dir) != 0 ||
        ((flags & MT_RUNNER_STATS) && read_corpus_stats(dir, &r->stats) != 0)) {
        mt_runner_close(r);
        return NULL;
    }
    r->params = mt_model_param_count(r->model);
    r->load_seconds = mt_now_s() - t0;
    return r;
}

int mt_runner_precision_flags(const char *precision)
{
    mt_precision p = MT_PRECISION_FP32;
    if (precision && mt_precision_parse(precision, &p) != 0) return -1;
    return p == MT_PRECISION_INT8 ? MT_RUNNER_INT8 : p == MT_PRECISION_BF16 ? MT_RUNNER_BF16 : 0;
}

mt_precision mt_runner_precision(unsigned flags)
{
    return flags & MT_RUNNER_INT8   ? MT_PRECISION_INT8
           : flags & MT_RUNNER_BF16 ? MT_PRECISION_BF16
                                    : MT_PRECISION_FP32;
}

void mt_runner_close(mt_runner *r)
{
    if (!r) return;
    mt_corpus_stats_free(r->stats);
    mt_tokenizer_free(r->tok);
    mt_model_free(r->model);
    free(r->dir);
    free(r);
}
