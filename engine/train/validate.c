/* Validation BLEU during training: the paper selects models by validation BLEU with greedy
 * decoding (docs/models.md §10.4), here on the first valid_bleu_lines pairs. */
#include "mtlab/decode.h"
#include "mtlab/error.h"
#include "mtlab/metrics.h"
#include "train_internal.h"

int validate_bleu(mt_model *m, const mt_tokenizer *tok, const mt_train_config *cfg, double *bleu)
{
    mt_text_lines src = {0}, ref = {0};
    if (mt_text_lines_read(&src, cfg->valid_src) != 0 ||
        mt_text_lines_read(&ref, cfg->valid_tgt) != 0) {
        mt_text_lines_free(&src);
        return -1;
    }
    size_t n = src.n < ref.n ? src.n : ref.n;
    if (n > (size_t)cfg->valid_bleu_lines) n = (size_t)cfg->valid_bleu_lines;
    int rc = -1;
    mt_decode_opts o;
    mt_decode_opts_init(&o);
    o.beam = 1;
    mt_decode_result res = {0};
    if (mt_translate(m, tok, (const char *const *)src.lines, (int)n, 0, &o, &res) != 0) goto out;
    mt_bleu_opts bo = mt_bleu_defaults();
    mt_bleu_stats total = {0};
    for (size_t i = 0; i < n; i++) {
        mt_bleu_stats s;
        const char *r = ref.lines[i];
        if (mt_bleu_segment_stats(&s, res.hyps[i].text ? res.hyps[i].text : "", &r, 1, &bo) != 0) {
            mt_error_context("%s:%zu", cfg->valid_tgt, i + 1);
            goto out;
        }
        mt_bleu_stats_add(&total, &s);
    }
    mt_bleu_score score;
    mt_bleu_from_stats(&score, &total, &bo);
    *bleu = score.score;
    rc = 0;
out:
    mt_decode_result_free(&res);
    mt_text_lines_free(&src);
    mt_text_lines_free(&ref);
    return rc;
}
