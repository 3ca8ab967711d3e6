#include "tiny_bundle.h"
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mtlab/model.h"
#include "mtlab/tokenizer.h"

int test_tiny_bundle(const char *dir, char *bundle, size_t len)
{
    return test_tiny_bundle_langs(dir, "mamba", NULL, NULL, bundle, len);
}

int test_tiny_bundle_langs(const char *dir, const char *name, const char *src_lang,
                           const char *tgt_lang, char *bundle, size_t len)
{
    char model[272];
    snprintf(model, sizeof model, "%s/spm.model", dir);
    if (access(model, R_OK) != 0 && test_train_fixture_tokenizer(dir, 300, 7)) return -1;
    mt_model_config cfg;
    mt_model_preset(&cfg, "mamba-small");
    cfg.vocab_size = 304;
    cfg.d_model = 16;
    cfg.n_layers = 2;
    cfg.d_state = 4;
    cfg.dt_rank = 2;
    cfg.dropout = 0;
    cfg.tie_embeddings = 0;
    cfg.init_std = 0.1f;
    if (src_lang && tgt_lang) {
        snprintf(cfg.src_lang, sizeof cfg.src_lang, "%s", src_lang);
        snprintf(cfg.tgt_lang, sizeof cfg.tgt_lang, "%s", tgt_lang);
        cfg.langs_recorded = 1;
    }
    mt_model *m = mt_model_create(&cfg, mt_backend_cpu(), 2);
    snprintf(bundle, len, "%s/%s", dir, name);
    int rc = m && mt_model_save(m, bundle, model, MT_DT_F32) == 0 ? 0 : -1;
    mt_model_free(m);
    return rc;
}

char **test_verses(int n)
{
    static const char *const verses[] = {"En el principio creó Dios los cielos y la tierra.",
                                         "Y dijo Dios: Sea la luz; y fue la luz.",
                                         "Y vio Dios que la luz era buena."};
    char **t = malloc((size_t)n * sizeof *t);
    for (int i = 0; i < n; i++) t[i] = strdup(verses[i % 3]);
    return t;
}
