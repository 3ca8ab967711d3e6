#include "tui/refs.h"

#include <stdlib.h>

#include "mtlab/error.h"
#include "tui/app.h"

int tui_ref_scores(const char *const *hyps, const unsigned char *final, int n,
                   const mt_text_lines *refs, tui_ref_score *seg, tui_ref_score *total)
{
    mt_bleu_opts bo = mt_bleu_defaults();
    mt_chrf_opts co = mt_chrf_defaults();
    mt_bleu_stats bsum = {0};
    mt_chrf_stats csum = {0};
    *total = (tui_ref_score){0};
    for (int i = 0; i < n; i++) {
        seg[i] = (tui_ref_score){0};
        if (!hyps[i] || !final[i] || (size_t)i >= refs->n) continue;
        const char *ref = refs->lines[i];
        mt_bleu_score b;
        mt_bleu_stats bs;
        mt_chrf_stats cs;
        if (mt_bleu_sentence(&b, hyps[i], &ref, 1, &bo) != 0 ||
            mt_chrf_sentence(&seg[i].chrf, hyps[i], &ref, 1, &co) != 0 ||
            mt_bleu_segment_stats(&bs, hyps[i], &ref, 1, &bo) != 0 ||
            mt_chrf_segment_stats(&cs, hyps[i], &ref, 1, &co) != 0)
            return mt_error_context("segment %d", i + 1);
        seg[i].bleu = b.score;
        seg[i].scored = 1;
        mt_bleu_stats_add(&bsum, &bs);
        mt_chrf_stats_add(&csum, &cs);
        total->scored++;
    }
    if (total->scored) {
        mt_bleu_score b;
        mt_bleu_from_stats(&b, &bsum, &bo);
        total->bleu = b.score;
        total->chrf = mt_chrf_from_stats(&csum, &co);
    }
    return 0;
}

int tui_refs_load(tui_app *a, const char *path)
{
    mt_text_lines t;
    if (mt_text_lines_read(&t, path) != 0) return -1;
    mt_text_lines_free(&a->refs);
    a->refs = t;
    free(a->refs_path);
    a->refs_path = mt_xstrdup(path);
    tui_log_add(&a->log, TUI_LOG_INFO, "references: %zu lines from %s, scored in every pane", t.n,
                path);
    a->dirty = 1;
    return 0;
}
