/* Batched greedy search: every live row takes its most probable next token; a sentence leaves
 * the batch when it emits <eos> or reaches its length limit, and the decoding state is
 * compacted to the rows still running (mt_decode_state_reorder), so finished sentences cost
 * nothing. The naive reference is mt_decode_greedy_naive (reference.c). */
#include "decode/search.h"

#include <stdlib.h>

#include "mtlab/clock.h"
#include "mtlab/error.h"

typedef struct {
    int32_t *tokens; /* (max_new) generated so far */
    int n;
    double logprob;
} greedy_row;

int mt_decode_greedy_run(mt_decode_ctx *c)
{
    const mt_model_config *cfg = mt_model_get_config(c->m);
    int n = c->n;
    float lp = c->o->length_penalty;
    greedy_row *sent = mt_xcalloc((size_t)n, sizeof *sent);
    for (int s = 0; s < n; s++)
        sent[s].tokens = mt_xmalloc((size_t)c->max_new[s] * sizeof(int32_t));
    int *row_sent = mt_xmalloc((size_t)n * sizeof *row_sent); /* live row -> sentence */
    int32_t *keep = mt_xmalloc((size_t)n * sizeof *keep); /* rows that go on */
    int32_t *next = mt_xmalloc((size_t)n * sizeof *next); /* their next input */
    int32_t *best = mt_xmalloc((size_t)n * sizeof *best); /* each live row's pick */
    double *best_lp = mt_xmalloc((size_t)n * sizeof *best_lp); /* and its log-probability */
    for (int s = 0; s < n; s++) row_sent[s] = s;
    int rows = n, rc = 0;

    for (;;) {
        int kept = 0;
        mt_decode_pick_rows(c, rows, best, best_lp);
        for (int r = 0; r < rows; r++) {
            int s = row_sent[r];
            greedy_row *g = &sent[s];
            int32_t tok = best[r];
            g->logprob += best_lp[r];
            int finished = tok == cfg->eos_id;
            if (!finished) {
                g->tokens[g->n++] = tok;
                mt_decode_emit(c, s, g->tokens, g->n, 0);
            }
            if (finished || g->n == c->max_new[s]) {
                /* generate() ends a line at the limit with a forced <eos> (decode.h) */
                mt_hypothesis_set(&c->res->hyps[s], g->tokens, g->n, g->logprob,
                                  finished || c->forced_eos, lp, mt_now_s() - c->t0);
                mt_decode_emit(c, s, g->tokens, g->n, 1);
                continue;
            }
            keep[kept] = r;
            next[kept] = tok;
            row_sent[kept] = s; /* kept <= r: rows not yet read are untouched */
            kept++;
        }
        if (kept == 0) break;
        if (mt_decode_cancelled(c)) {
            c->res->cancelled = 1;
            for (int r = 0; r < kept; r++) {
                int s = row_sent[r];
                mt_hypothesis_set(&c->res->hyps[s], sent[s].tokens, sent[s].n, sent[s].logprob, 0,
                                  lp, mt_now_s() - c->t0);
                mt_decode_emit(c, s, sent[s].tokens, sent[s].n, 1);
            }
            break;
        }
        if (kept < rows && mt_decode_state_reorder(c->st, keep, kept)) {
            rc = -1;
            break;
        }
        rows = kept;
        if (mt_model_step(c->m, c->st, next, c->logits)) {
            rc = -1;
            break;
        }
        c->res->steps++;
    }
    for (int s = 0; s < n; s++) free(sent[s].tokens);
    free(sent);
    free(row_sent);
    free(keep);
    free(next);
    free(best);
    free(best_lp);
    return rc;
}
