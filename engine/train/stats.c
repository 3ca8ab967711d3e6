/* The training corpus's named-entity frequencies, saved with every bundle the trainer writes
 * (the recall bins of mtlab/entities.h: unseen, 1-15, 16+). */
#include "mtlab/error.h"
#include "mtlab/metrics.h"
#include "train_internal.h"

#include <string.h>

mt_corpus_stats *train_corpus_stats(const mt_train_config *cfg)
{
    mt_text_lines src = {0}, tgt = {0};
    if (mt_text_lines_read(&src, cfg->train_src) != 0 || mt_text_lines_read(&tgt, cfg->train_tgt) != 0) {
        mt_text_lines_free(&src);
        return NULL;
    }
    const char *slash = strrchr(cfg->train_tgt, '/'), *dot = strrchr(cfg->train_tgt, '.');
    const char *suffix = dot && (!slash || dot > slash) ? dot + 1 : "";
    size_t n = src.n < tgt.n ? src.n : tgt.n;
    mt_corpus_stats *s = mt_corpus_stats_build((const char *const *)src.lines, (const char *const *)tgt.lines, n,
                                               mt_ner_lang_for_code(suffix), NULL, NULL);
    if (!s) mt_error_context("%s", cfg->train_tgt);
    mt_text_lines_free(&src);
    mt_text_lines_free(&tgt);
    return s;
}
