/* The small helpers every search shares: cancellation, streaming, argmax and log-sum-exp,
 * scoring, filling and clearing a hypothesis, top-k. Below greedy.c, beam.c and
 * reference.c (which use them) and decode.c (which runs the searches); it calls none of them.
 * Letters (mtlab/backend.h): n sentences, K beams, V vocabulary, rows = live rows of the
 * decoding state. */
#include "decode/search.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/cpu_par.h"
#include "backend/cpu/cpu_pool.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mtlab/error.h"

int mt_decode_cancelled(const mt_decode_ctx *c)
{
    return c->o->cancel && atomic_load(c->o->cancel) != 0;
}

void mt_decode_emit(const mt_decode_ctx *c, int sentence, const int32_t *tokens, int n_tokens,
                    int final)
{
    if (!c->o->on_token) return;
    mt_decode_event ev = {
        .sentence = sentence,
        .tokens = tokens,
        .n_tokens = n_tokens,
        .token = n_tokens > 0 ? tokens[n_tokens - 1] : -1,
        .final = final,
    };
    c->o->on_token(c->o->user, &ev);
}

/* The largest of x[0..V) except skip: the CPU backend's vectorised row maximum on the runs
 * before and after skip (these rows are host memory whatever the model's device). */
static float max_except(const float *x, int V, int skip)
{
    if (skip < 0 || skip >= V) return cpu_row_max(x, V);
    float a = cpu_row_max(x, skip), b = cpu_row_max(x + skip + 1, V - skip - 1);
    return a > b ? a : b;
}

/* One vectorised pass over the runs before and after skip (cpu_row_argmax), the earlier run
 * winning a tie: the same index as a scan for the first strict improvement (naive_argmax;
 * tests/unit/test_decode.c). NaN is never chosen; a row with nothing above -inf gives the first
 * index other than skip. */
int32_t mt_argmax(const float *x, int V, int skip)
{
    if (skip < 0 || skip >= V) skip = V;
    float a, b;
    int before = cpu_row_argmax(x, skip, &a);
    int after = skip + 1 < V ? cpu_row_argmax(x + skip + 1, V - skip - 1, &b) : -1;
    if (after >= 0 && (before < 0 || b > a)) return skip + 1 + after;
    if (before >= 0) return before;
    return skip == 0 ? 1 : 0;
}

int32_t naive_argmax(const float *x, int V, int skip)
{
    int32_t best = skip == 0 ? 1 : 0;
    for (int v = best + 1; v < V; v++)
        if (v != skip && x[v] > x[best]) best = v;
    return best;
}

/* One greedy step's rows, for the CPU pool's parts: part r is row r */
typedef struct {
    const mt_decode_ctx *c;
    int never;
    int32_t *tok;
    double *logprob;
} pick_job;

static void pick_row(void *ctx, int r)
{
    const pick_job *j = ctx;
    const mt_decode_ctx *c = j->c;
    const float *x = c->logits + (size_t)r * c->V;
    int32_t t = mt_argmax(x, c->n_gen, j->never);
    j->tok[r] = t;
    /* log p(t) = x[t] - logsumexp(x) */
    j->logprob[r] =
        (double)x[t] - (c->hf ? mt_logsumexp(x, c->V, -1) : mt_logsumexp(x, c->n_gen, j->never));
}

void mt_decode_pick_rows(const mt_decode_ctx *c, int rows, int32_t *tok, double *logprob)
{
    pick_job j = {.c = c,
                  .never = mt_model_config_never_generated(mt_model_get_config(c->m)),
                  .tok = tok,
                  .logprob = logprob};
    cpu_pool_run_if(cpu_fork((size_t)rows * c->V, MT_DECODE_PARALLEL_LOGITS), rows, pick_row, &j);
}

/* lse = max + log(sum exp(x - max)), so no term overflows; the exps are the CPU backend's
 * vectorised float ones, summed in float over short spans and in double across them */
double mt_logsumexp(const float *x, int V, int skip)
{
    float mx = max_except(x, V, skip);
    double sum;
    if (skip < 0 || skip >= V) sum = cpu_row_sum_exp(x, V, mx);
    else sum = cpu_row_sum_exp(x, skip, mx) + cpu_row_sum_exp(x + skip + 1, V - skip - 1, mx);
    return (double)mx + log(sum);
}

double naive_logsumexp(const float *x, int V, int skip)
{
    double mx = x[naive_argmax(x, V, skip)], sum = 0.0;
    for (int v = 0; v < V; v++)
        if (v != skip) sum += exp((double)x[v] - mx);
    return mx + log(sum);
}

double mt_decode_score(double logprob, int gen_len, float length_penalty)
{
    if (gen_len <= 0) return 0.0;
    return logprob / pow((double)gen_len, (double)length_penalty);
}

void mt_hypothesis_clear(mt_hypothesis *h)
{
    free(h->ids);
    free(h->text);
    memset(h, 0, sizeof *h);
}

void mt_hypothesis_set(mt_hypothesis *h, const int32_t *ids, int n_ids, double logprob,
                       int finished, float length_penalty, double seconds)
{
    free(h->ids);
    h->ids = NULL;
    if (n_ids > 0) {
        h->ids = mt_xmalloc((size_t)n_ids * sizeof *h->ids);
        memcpy(h->ids, ids, (size_t)n_ids * sizeof *h->ids);
    }
    h->n_ids = n_ids;
    h->logprob = logprob;
    h->finished = finished;
    h->score = mt_decode_score(logprob, n_ids + finished, length_penalty);
    h->seconds = seconds;
}

void mt_topk_push(mt_scored *top, int *n, int k, double score, long index)
{
    /* strictly better than the last kept one, or room left: ties keep the earlier index */
    if (*n == k && !(score > top[k - 1].score)) return;
    int i = *n < k ? (*n)++ : k - 1;
    while (i > 0 && score > top[i - 1].score) {
        top[i] = top[i - 1];
        i--;
    }
    top[i].score = score;
    top[i].index = index;
}
