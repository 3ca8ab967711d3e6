/* The finished hypotheses of one sentence in beam search: the K best by length-normalised
 * score, with the worst of them at hand for the stopping test (Hugging Face BeamHypotheses,
 * early_stopping = False). */
#include "decode/search.h"

#include <math.h>
#include <stdlib.h>

#include "mtlab/error.h"

void mt_beam_hyps_init(mt_beam_hyps *bh, int K)
{
    bh->K = K;
    bh->n = 0;
    bh->worst = INFINITY;
    bh->h = mt_xcalloc((size_t)K + 1, sizeof *bh->h);
}

void mt_beam_hyps_free(mt_beam_hyps *bh)
{
    if (!bh->h) return;
    for (int i = 0; i <= bh->K; i++) mt_hypothesis_clear(&bh->h[i]);
    free(bh->h);
    bh->h = NULL;
    bh->n = 0;
}

static int lowest(const mt_beam_hyps *bh)
{
    int lo = 0;
    for (int i = 1; i < bh->n; i++)
        if (bh->h[i].score < bh->h[lo].score) lo = i;
    return lo;
}

void mt_beam_hyps_add(mt_beam_hyps *bh, const int32_t *ids, int n_ids, double logprob, int finished,
                      float length_penalty)
{
    double score = mt_decode_score(logprob, n_ids + finished, length_penalty);
    if (bh->n == bh->K && !(score > bh->worst)) return;
    mt_hypothesis_set(&bh->h[bh->n++], ids, n_ids, logprob, finished, length_penalty, 0.0);
    if (bh->n > bh->K) {
        /* drop the lowest: move the last slot into its place */
        int lo = lowest(bh);
        mt_hypothesis tmp = bh->h[lo];
        bh->h[lo] = bh->h[bh->n - 1];
        bh->h[bh->n - 1] = tmp;
        mt_hypothesis_clear(&bh->h[--bh->n]);
    }
    bh->worst = bh->h[lowest(bh)].score;
}

int mt_beam_hyps_done(const mt_beam_hyps *bh, double best_logprob, int cur_len,
                      float length_penalty)
{
    if (bh->n < bh->K) return 0;
    /* the best any running beam could still reach, judged at the current length */
    double highest_attainable = mt_decode_score(best_logprob, cur_len, length_penalty);
    return bh->worst >= highest_attainable;
}

int mt_beam_hyps_best(const mt_beam_hyps *bh)
{
    int best = -1;
    for (int i = 0; i < bh->n; i++)
        if (best < 0 || bh->h[i].score > bh->h[best].score) best = i;
    return best;
}
