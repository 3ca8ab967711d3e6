/* Attribution's passes (attribution_pass.h) from the training backward: the stacks' forward
 * over B copies of one sequence, each copy seeded at its own target position with
 * d log p(y_j) / d logits = onehot(y_j) - softmax (or onehot(y_j) - onehot(contrast)), the
 * stacks' backward down to the embedding output xs[0], and the gradient of the token
 * embedding e read from it: xs[0] = scale * e + positions, so g = scale * d/d xs[0].
 * Integrated gradients give every copy its own point b + alpha (e - b) of the path.
 * Letters: B copies in one pass, T decoder positions, S source positions (encoder-decoder),
 * C d_model, V vocabulary. */
#include "models/attribution_pass.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/attribution_copies.h"
#include "mtlab/error.h"

/* The decoder position that predicts target j. */
static int target_pos(const attr_seq *q, int j) { return q->n_prompt - 1 + j; }

void attr_seq_free(attr_seq *q)
{
    free(q->ids);
    free(q->src);
    free(q->targets);
    free(q->e_dec);
    free(q->b_dec);
    free(q->e_enc);
    free(q->b_enc);
    free(q->logits);
    free(q->gdec);
    free(q->genc);
    if (q->scratch) q->m->be->free(q->scratch);
}

/* Host copies of the embeddings of ids (n) from stack s's table into e, and of the baseline
 * (zero, or <pad>'s row at every position) into b. */
static void host_embeddings(const mt_model *m, const mt_stack *s, const int32_t *ids, int n,
                            mt_attr_baseline baseline, float **e, float **b)
{
    int C = m->cfg.d_model;
    int embed = s->embed_tensor >= 0 ? s->embed_tensor : m->embed_tensor;
    const float *table = m->params + m->tensors[embed].offset;
    *e = mt_xmalloc((size_t)(n ? n : 1) * C * sizeof(float));
    *b = mt_xcalloc((size_t)(n ? n : 1) * C, sizeof(float));
    for (int t = 0; t < n; t++)
        m->be->download(*e + (size_t)t * C, table + (size_t)ids[t] * C, C * sizeof(float));
    if (baseline == MT_ATTR_BASELINE_PAD)
        for (int t = 0; t < n; t++)
            m->be->download(*b + (size_t)t * C, table + (size_t)m->cfg.pad_id * C,
                            C * sizeof(float));
}

int attr_seq_init(attr_seq *q, mt_model *m, const int32_t *src, int src_len, const int32_t *hyp,
                  int hyp_len, const mt_attr_opts *o)
{
    const mt_model_config *cfg = &m->cfg;
    memset(q, 0, sizeof *q);
    q->m = m;
    q->encdec = m->arch->encdec;
    q->contrast = o->contrast;
    if (q->contrast >= cfg->vocab_size)
        return mt_error("attribution: contrast token %d is outside the vocabulary (0..%d)",
                        q->contrast, cfg->vocab_size - 1);
    int sep = mt_model_config_prompt_sep(cfg);
    q->n_prompt = q->encdec ? 1 : src_len + (sep >= 0);
    if (q->n_prompt == 0) return mt_error("attribution: an empty prompt predicts nothing");
    q->T = q->n_prompt + hyp_len;
    q->S = q->encdec ? src_len + 1 : 0;
    q->ids = mt_xmalloc((size_t)q->T * sizeof *q->ids);
    if (q->encdec) {
        q->src = mt_xmalloc((size_t)q->S * sizeof *q->src);
        if (src_len > 0) memcpy(q->src, src, (size_t)src_len * sizeof *src);
        q->src[src_len] = cfg->eos_id;
        q->ids[0] = cfg->decoder_start_id;
    } else {
        if (src_len > 0) memcpy(q->ids, src, (size_t)src_len * sizeof *src);
        if (sep >= 0) q->ids[src_len] = sep;
    }
    if (hyp_len > 0) memcpy(q->ids + q->n_prompt, hyp, (size_t)hyp_len * sizeof *hyp);
    q->rows = hyp_len + 1;
    q->targets = mt_xmalloc((size_t)q->rows * sizeof *q->targets);
    if (hyp_len > 0) memcpy(q->targets, hyp, (size_t)hyp_len * sizeof *hyp);
    q->targets[hyp_len] = cfg->eos_id;
    mt_batch b = {.B = 1, .T = q->T, .ids = q->ids, .S = q->S, .src = q->src};
    if (mt_model_check_batch(m, &b)) return -1;
    for (int j = 0; j < q->rows; j++)
        if (q->targets[j] < 0 || q->targets[j] >= cfg->vocab_size)
            return mt_error("attribution: target id %d is outside the vocabulary (0..%d)",
                            q->targets[j], cfg->vocab_size - 1);
    host_embeddings(m, &m->dec, q->ids, q->T, o->baseline, &q->e_dec, &q->b_dec);
    q->shared_forward =
        attr_copies_supported(&m->dec) && (!q->encdec || attr_copies_supported(&m->enc));
    if (q->encdec) host_embeddings(m, &m->enc, q->src, q->S, o->baseline, &q->e_enc, &q->b_enc);
    return 0;
}

/* A target read from one pass: copy brow's position pos predicts target j. */
typedef struct {
    int brow, pos, j;
} attr_pick;

/* Where B copies sit: copy r on the path at alpha[r], delta (C) added at column col (when
 * delta is not NULL and col a column of the stack). The copies come in runs at one alpha
 * (gradient_passes puts a chunk's equal alphas side by side): run k is copies first[k] ..
 * first[k + 1] - 1, at alpha point[k]; runs 0: none known. */
typedef struct {
    const float *alpha;
    int col;
    const float *delta;
    int runs;
    const int *first; /* (runs + 1) */
    const float *point; /* (runs) */
} attr_path;

/* The ends of one stack's straight path: the token embeddings e and the baseline (n, C) each. */
typedef struct {
    const float *e, *base;
} attr_ends;

/* Embeddings of B copies of one stack's n ids into sa->xs[0], then each copy r moved to
 * b + alpha[r] (e - b), and delta (C) added at position col (when 0 <= col < n):
 *   xs[0] = scale * (b + alpha (e - b) + delta) + positions
 *         = (scale * e + positions) - (1 - alpha) scale (e - b) + scale * delta */
static void embed_path(const mt_model *m, const mt_stack *s, mt_stack_acts *sa,
                       const int32_t *d_ids, int B, int n, const attr_ends *ends,
                       const attr_path *path)
{
    const float *e = ends->e, *base = ends->base, *alpha = path->alpha, *delta = path->delta;
    int col = path->col;
    const mt_backend *be = m->be;
    int C = s->C;
    mt_stack_embed(m, s, sa, d_ids, B, n, 0, NULL);
    int moved = delta && col >= 0 && col < n;
    for (int r = 0; r < B; r++) moved |= alpha[r] != 1.0f;
    if (!moved) return;
    size_t count = (size_t)B * n * C;
    float *x = mt_xmalloc(count * sizeof *x), scale = m->embed_scale;
    be->download(x, sa->xs[0], count * sizeof *x);
    for (int r = 0; r < B; r++)
        for (int t = 0; t < n; t++) {
            float *row = x + ((size_t)r * n + t) * C, keep = 1.0f - alpha[r];
            const float *et = e + (size_t)t * C, *bt = base + (size_t)t * C;
            if (keep != 0.0f)
                for (int c = 0; c < C; c++) row[c] -= keep * scale * (et[c] - bt[c]);
            if (delta && t == col)
                for (int c = 0; c < C; c++) row[c] += scale * delta[c];
        }
    be->upload(sa->xs[0], x, count * sizeof *x);
    free(x);
}

/* The log-probs of the picks (logp, n_picks) and their seeds: dlogits (n_picks, V) =
 * onehot(y) - softmax(logits), or onehot(y) - onehot(contrast). */
static void seed_logits(const attr_seq *q, const float *logits, float *dlogits,
                        const attr_pick *picks, int n_picks, int V, double *logp)
{
    for (int k = 0; k < n_picks; k++) {
        const float *l = logits + (size_t)k * V;
        float *d = dlogits ? dlogits + (size_t)k * V : NULL;
        int32_t y = q->targets[picks[k].j];
        if (q->contrast >= 0) {
            logp[k] = (double)l[y] - (double)l[q->contrast];
            if (d) {
                memset(d, 0, (size_t)V * sizeof *d);
                d[y] += 1.0f;
                d[q->contrast] -= 1.0f;
            }
            continue;
        }
        double most = l[0], sum = 0.0;
        for (int v = 1; v < V; v++)
            if (l[v] > most) most = l[v];
        for (int v = 0; v < V; v++) sum += exp((double)l[v] - most);
        double lse = most + log(sum);
        logp[k] = (double)l[y] - lse;
        /* 1 - p(y) in double before it is rounded (d may be l itself): a confident row's
         * seed is a small difference, whose last digits float's 1.0f + -p lost (1e-4 of an
         * eos row's values) */
        if (d) {
            double rest = 1.0 - exp(logp[k]);
            for (int v = 0; v < V; v++) d[v] = (float)-exp((double)l[v] - lse);
            d[y] = (float)rest;
        }
    }
}

/* The gradients of the embedding output a backward pass gives, host gdec (B, T, C) and
 * genc (B, S, C). */
typedef struct {
    float *gdec, *genc;
} attr_grads;

/* The model's batch of B copies of the sequence's first T decoder positions (its activations
 * grow to hold them). */
static int prepare_copies(attr_seq *q, int T, int B)
{
    int S = q->S;
    size_t BT = (size_t)B * T, NS = (size_t)B * S;
    int32_t *ids = mt_xmalloc(BT * sizeof *ids);
    int32_t *src = NS ? mt_xmalloc(NS * sizeof *src) : NULL;
    for (int r = 0; r < B; r++) {
        memcpy(ids + (size_t)r * T, q->ids, (size_t)T * sizeof *ids);
        if (S) memcpy(src + (size_t)r * S, q->src, (size_t)S * sizeof *src);
    }
    mt_batch b = {.B = B, .T = T, .ids = ids, .S = S, .src = src};
    int rc = mt_model_prepare(q->m, &b);
    free(ids);
    free(src);
    return rc ? mt_error_context("attribution") : 0;
}

/* Floats of a pass's device scratch: xg, dxg (n_picks, C), logits (n_picks, V); with backward
 * also dout, dx (BT, C), dmem, dxs (NS, C) and the units' scratch. */
static size_t pass_scratch_floats(const attr_seq *q, int T, int B, int n_picks, int backward)
{
    const mt_model *m = q->m;
    int S = q->S, C = m->cfg.d_model, V = m->cfg.vocab_size;
    size_t BT = (size_t)B * T, NS = (size_t)B * S, P = (size_t)n_picks, units = 0;
    if (backward) {
        units = mt_stack_scratch_count(&m->dec, B, T, S);
        size_t e = q->encdec ? mt_stack_scratch_count(&m->enc, B, S, 0) : 0;
        if (e > units) units = e;
    }
    return 2 * P * C + P * V + (backward ? 2 * BT * C + 2 * NS * C + units : 0);
}

/* The device scratch grown to n floats (an allocation is zeroed). */
static int reserve_scratch(attr_seq *q, size_t n)
{
    if (n <= q->scratch_cap) return 0;
    const mt_backend *be = q->m->be;
    if (q->scratch) be->free(q->scratch);
    q->scratch = be->alloc(n * sizeof(float));
    q->scratch_cap = q->scratch ? n : 0;
    return q->scratch ? 0 : -1;
}

/* One pass over B copies of the sequence's first T decoder positions (every pick's position
 * is below T: the decoders are causal, so the later ones change nothing), the copies on path
 * (columns counted over source then decoder positions): the log-probs of the picks into logp,
 * and with grads (one pick per copy, pick k on copy k) a backward into grads. */
static int attr_pass(attr_seq *q, int T, int B, const attr_path *path, const attr_pick *picks,
                     int n_picks, double *logp, const attr_grads *grads)
{
    int backward = grads != NULL;
    mt_model *m = q->m;
    const mt_backend *be = m->be;
    int S = q->S, C = m->cfg.d_model, V = m->cfg.vocab_size;
    size_t BT = (size_t)B * T, NS = (size_t)B * S;
    if (prepare_copies(q, T, B)) return -1;
    /* the copies at one point of the path share one forward: FB of them, one per point */
    int FB = q->shared_forward && !path->delta && path->runs > 0 ? path->runs : B;
    attr_path points = *path;
    if (FB < B) points.alpha = path->point;

    const float *mem = NULL;
    if (q->encdec) {
        embed_path(m, &m->enc, &m->enc_acts, m->d_src, FB, S, &(attr_ends){q->e_enc, q->b_enc},
                   &points);
        mt_pass enc = {.B = FB, .T = S, .mask = m->d_src_mask};
        mem = mt_stack_forward(m, &m->enc, &m->enc_acts, &enc);
    }
    attr_path dec_path = points;
    dec_path.col -= S;
    embed_path(m, &m->dec, &m->dec_acts, m->d_ids, FB, T, &(attr_ends){q->e_dec, q->b_dec},
               &dec_path);
    /* the weights' gradients are of no use here: each layer skips its dW products */
    mt_pass dec = {.B = FB,
                   .T = T,
                   .S = S,
                   .mem = mem,
                   .mask = m->d_mask,
                   .mem_mask = m->d_src_mask,
                   .input_grads_only = 1};
    const float *out = mt_stack_forward(m, &m->dec, &m->dec_acts, &dec);
    /* the encoder's slots after the decoder's forward, which reads the first FB of its output */
    if (FB < B && q->encdec) attr_copies_expand(be, &m->enc, &m->enc_acts, path->first, FB, B, S);
    if (FB < B) attr_copies_expand(be, &m->dec, &m->dec_acts, path->first, FB, B, T);
    dec.B = B;

    size_t P = (size_t)n_picks, n = pass_scratch_floats(q, T, B, n_picks, backward);
    if (n > q->scratch_cap) {
        if (reserve_scratch(q, n))
            return mt_error_context("attribution of %d target positions", n_picks);
    } else be->fill(q->scratch, n, 0.0f); /* dout is 0 but at the picks' positions */
    float *dev = q->scratch;
    float *xg = dev, *dxg = xg + P * C, *lg = dxg + P * C, *dout = lg + P * V;
    float *dx = dout + BT * C, *dmem = dx + BT * C, *dxs = dmem + NS * C;
    float *unit_scratch = dxs + NS * C;
    for (size_t k = 0; k < P; k++)
        be->copy(xg + k * C, out + ((size_t)picks[k].brow * T + picks[k].pos) * C,
                 C * sizeof(float));
    mt_model_project(m, lg, xg, P);
    if (P * V > q->logits_cap) {
        free(q->logits);
        q->logits = mt_xmalloc(P * V * sizeof *q->logits);
        q->logits_cap = P * V;
    }
    float *logits = q->logits;
    be->download(logits, lg, P * V * sizeof *logits);
    seed_logits(q, logits, backward ? logits : NULL, picks, n_picks, V, logp);
    if (backward) {
        be->upload(lg, logits, P * V * sizeof *logits);
        int weight = m->lm_head_tensor < 0 ? m->embed_tensor : m->lm_head_tensor;
        const float *w = m->params + m->tensors[weight].offset;
        mt_linear_backward(be, &(mt_weight_grads){dxg, NULL, NULL}, lg, xg, w, P, C, V);
        for (size_t k = 0; k < P; k++)
            be->copy(dout + ((size_t)picks[k].brow * T + picks[k].pos) * C, dxg + k * C,
                     C * sizeof(float));
        dec.dmem = dmem;
        mt_stack_backward(m, &m->dec, &m->dec_acts, dx, dout, &dec, unit_scratch);
        be->download(grads->gdec, dx, BT * C * sizeof(float));
        if (q->encdec) {
            mt_pass enc = {.B = B, .T = S, .mask = m->d_src_mask, .input_grads_only = 1};
            mt_stack_backward(m, &m->enc, &m->enc_acts, dxs, dmem, &enc, unit_scratch);
            be->download(grads->genc, dxs, NS * C * sizeof(float));
        }
    }
    return 0;
}

/* The score of one input position from its gradient g = scale * d/d xs[0] (C floats):
 * saliency ||g||, input x gradient e . g, integrated gradients (e - b) . g (one step's). */
static double position_score(mt_attr_method method, const float *grad, float scale, const float *e,
                             const float *b, int C)
{
    double s = 0.0;
    for (int c = 0; c < C; c++) {
        double g = (double)scale * grad[c];
        if (method == MT_ATTR_SALIENCY) s += g * g;
        else if (method == MT_ATTR_INPUT_X_GRADIENT) s += (double)e[c] * g;
        else s += ((double)e[c] - b[c]) * g;
    }
    return method == MT_ATTR_SALIENCY ? sqrt(s) : s;
}

/* Add weight * the scores of copy r's gradients (of a pass over T decoder positions) to row
 * (cols = S + q->T; the positions from T on get nothing). */
static void add_scores(const attr_seq *q, int T, mt_attr_method method, const attr_grads *grads,
                       int r, double weight, double *row)
{
    const float *gdec = grads->gdec, *genc = grads->genc;
    int C = q->m->cfg.d_model, S = q->S;
    float scale = q->m->embed_scale;
    for (int s = 0; s < S; s++)
        row[s] += weight * position_score(method, genc + ((size_t)r * S + s) * C, scale,
                                          q->e_enc + (size_t)s * C, q->b_enc + (size_t)s * C, C);
    for (int t = 0; t < T; t++)
        row[S + t] +=
            weight * position_score(method, gdec + ((size_t)r * T + t) * C, scale,
                                    q->e_dec + (size_t)t * C, q->b_dec + (size_t)t * C, C);
}

int attr_all_logprobs(attr_seq *q, const mt_attr_point *point, double *logp)
{
    attr_pick *picks = mt_xmalloc((size_t)q->rows * sizeof *picks);
    for (int j = 0; j < q->rows; j++) picks[j] = (attr_pick){0, target_pos(q, j), j};
    attr_path path = {&point->alpha, point->col, point->delta, 0, NULL, NULL};
    int rc = attr_pass(q, q->T, 1, &path, picks, q->rows, logp, NULL);
    free(picks);
    return rc;
}

/* (a pane's next translation sets it, as decoding's) */
int attr_check_cancel(const atomic_int *cancel)
{
    if (cancel && atomic_load(cancel)) return mt_error("attribution cancelled");
    return 0;
}

/* Copies of one pass at least (when that many are left): fewer would leave the products thin. */
#define MIN_CHUNK_COPIES 8

/* A chunk's evaluation i at alpha, for sorting by alpha (then i). */
typedef struct {
    float alpha;
    int i;
} attr_copy;

static int by_alpha(const void *x, const void *y)
{
    const attr_copy *a = x, *b = y;
    if (a->alpha != b->alpha) return a->alpha < b->alpha ? -1 : 1;
    return a->i - b->i;
}

/* The backward passes of n evaluations in order of j, in chunks of copies whose activations stay
 * under MT_ATTR_CHUNK_POSITIONS positions and that run only the decoder positions up to their
 * last target's (so a translation's rows come in about four chunks of growing length, not one
 * of the full length); cancel is checked before every pass. */
int attr_gradient_passes(attr_seq *q, mt_attr_method method, const attr_eval *ev, long n,
                         const attr_sink *sink, const atomic_int *cancel)
{
    int C = q->m->cfg.d_model, per_copy = q->T + q->S, cols = q->S + q->T;
    int chunk = MT_ATTR_CHUNK_POSITIONS / per_copy;
    long quarter = (n + 3) / 4;
    if (chunk > quarter) chunk = quarter > MIN_CHUNK_COPIES ? (int)quarter : MIN_CHUNK_COPIES;
    if (chunk < 1) chunk = 1;
    if (chunk > n) chunk = (int)n;
    float *alpha = mt_xmalloc((size_t)chunk * sizeof *alpha);
    float *point = mt_xmalloc((size_t)chunk * sizeof *point);
    int *run_first = mt_xmalloc(((size_t)chunk + 1) * sizeof *run_first);
    attr_copy *order = mt_xmalloc((size_t)chunk * sizeof *order);
    attr_pick *picks = mt_xmalloc((size_t)chunk * sizeof *picks);
    double *logp = mt_xmalloc((size_t)chunk * sizeof *logp);
    if (chunk > q->grads_copies) {
        free(q->gdec);
        free(q->genc);
        q->gdec = mt_xmalloc((size_t)chunk * q->T * C * sizeof *q->gdec);
        q->genc = q->S ? mt_xmalloc((size_t)chunk * q->S * C * sizeof *q->genc) : NULL;
        q->grads_copies = chunk;
    }
    attr_grads grads = {q->gdec, q->genc};
    attr_path path = {alpha, -1, NULL, 0, run_first, point};
    /* the largest pass's activations and scratch at once: the chunks' growing lengths would
     * otherwise allocate (and zero) about four ever larger blocks of each */
    int rc = prepare_copies(q, q->T, chunk);
    if (rc == 0 && reserve_scratch(q, pass_scratch_floats(q, q->T, chunk, chunk, 1)))
        rc = mt_error_context("attribution of %d target positions", chunk);
    for (long first = 0; first < n && rc == 0; first += chunk) {
        if ((rc = attr_check_cancel(cancel))) break;
        int B = n - first < chunk ? (int)(n - first) : chunk, T = 0;
        /* copies by alpha, in runs at one point that share a forward */
        for (int r = 0; r < B; r++) order[r] = (attr_copy){ev[first + r].alpha, r};
        qsort(order, (size_t)B, sizeof *order, by_alpha);
        path.runs = 0;
        for (int r = 0; r < B; r++) {
            const attr_eval *e = &ev[first + order[r].i];
            alpha[r] = e->alpha;
            picks[r] = (attr_pick){r, target_pos(q, e->j), e->j};
            if (picks[r].pos + 1 > T) T = picks[r].pos + 1;
            if (r == 0 || alpha[r] != alpha[r - 1]) {
                point[path.runs] = alpha[r];
                run_first[path.runs++] = r;
            }
        }
        run_first[path.runs] = B;
        rc = attr_pass(q, T, B, &path, picks, B, logp, &grads);
        for (int r = 0; r < B && rc == 0; r++) {
            long i = first + order[r].i;
            if (sink->weight) {
                add_scores(q, T, method, &grads, r, sink->weight[i],
                           sink->out + (size_t)picks[r].j * cols);
                if (sink->logp) sink->logp[picks[r].j] = logp[r];
                continue;
            }
            add_scores(q, T, method, &grads, r, 1.0, sink->out + (size_t)i * cols);
            sink->logp[i] = logp[r];
        }
    }
    free(alpha);
    free(point);
    free(run_first);
    free(order);
    free(picks);
    free(logp);
    return rc;
}
