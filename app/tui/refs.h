/* References for the editor's segments: a file of reference lines, line i for segment i, loaded
 * with `mtlab tui --refs FILE` or ui.references(path). Each pane then shows each finished
 * segment's sentence BLEU and chrF2 against its line, and the corpus BLEU and chrF2 of those
 * segments (sacreBLEU's defaults). */
#ifndef MTLAB_TUI_REFS_H
#define MTLAB_TUI_REFS_H

#include "mtlab/metrics.h"

typedef struct {
    int scored; /* 1 when the segment was scored (finished, with a reference line) */
    double bleu, chrf; /* sacrebleu.sentence_bleu / sentence_chrf, 0..100 */
} tui_ref_score;

/* Score hyps[0..n) (NULL: none yet; final[i] 0: unfinished, not scored) against refs: seg[i]
 * for each segment, *total the corpus scores of the segments scored (total->scored: how many).
 * 0, or -1 on invalid UTF-8 (the message names the segment). */
int tui_ref_scores(const char *const *hyps, const unsigned char *final, int n,
                   const mt_text_lines *refs, tui_ref_score *seg, tui_ref_score *total);

#endif
