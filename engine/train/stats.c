/* The training corpus's named-entity frequencies (the recall bins of mtlab/entities.h: unseen,
 * 1-15, 16+) and its entity lexicon (docs/metrics.md §8), saved with every bundle the trainer
 * writes. */
#include "mtlab/error.h"
#include "mtlab/metrics.h"
#include "train_internal.h"

#include <string.h>

/* The recogniser of the target language the config names (its dataset's), never guessed from
 * a file name. */
mt_ner_lang train_target_lang(const mt_train_config *cfg)
{
    return mt_ner_lang_for_code(cfg->tgt_lang);
}

int train_corpus_stats(const mt_train_config *cfg, train_entities *ent)
{
    ent->stats = NULL;
    ent->lexicon = NULL;
    mt_text_lines src = {0}, tgt = {0};
    if (mt_text_lines_read(&src, cfg->train_src) != 0 ||
        mt_text_lines_read(&tgt, cfg->train_tgt) != 0) {
        mt_text_lines_free(&src);
        return -1;
    }
    size_t n = src.n < tgt.n ? src.n : tgt.n;
    mt_corpus_stats *s =
        mt_corpus_stats_build((const char *const *)src.lines, (const char *const *)tgt.lines, n,
                              train_target_lang(cfg), NULL, NULL);
    mt_entity_lexicon *l =
        s ? mt_entity_lexicon_build((const char *const *)src.lines, (const char *const *)tgt.lines,
                                    n, NULL, NULL)
          : NULL;
    if (!l) {
        mt_error_context("%s", cfg->train_tgt);
        mt_corpus_stats_free(s);
        s = NULL;
    }
    mt_text_lines_free(&src);
    mt_text_lines_free(&tgt);
    ent->stats = s;
    ent->lexicon = l;
    return l ? 0 : -1;
}

void train_entities_free(train_entities *ent)
{
    mt_corpus_stats_free(ent->stats);
    mt_entity_lexicon_free(ent->lexicon);
    ent->stats = NULL;
    ent->lexicon = NULL;
}
