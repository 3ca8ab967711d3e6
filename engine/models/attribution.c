/* Gradient attribution (mtlab/attribution.h) from the training backward: the stacks' forward
 * over B copies of one sequence, each copy seeded at its own target position with
 * d log p(y_j) / d logits = onehot(y_j) - softmax (or onehot(y_j) - onehot(contrast)), the
 * stacks' backward down to the embedding output xs[0], and the gradient of the token
 * embedding e read from it: xs[0] = scale * e + positions, so g = scale * d/d xs[0].
 * Integrated gradients give every copy its own point b + alpha (e - b) of the path.
 * Letters: B copies in one pass, T decoder positions, S source positions (encoder-decoder),
 * C d_model, V vocabulary. */
#include "mtlab/attribution.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/model_internal.h"
#include "mtlab/decode.h"
#include "mtlab/error.h"

void mt_attr_opts_init(mt_attr_opts *o)
{
    memset(o, 0, sizeof *o);
    o->method = MT_ATTR_SALIENCY;
    o->baseline = MT_ATTR_BASELINE_PAD;
    o->contrast = -1;
    o->rule = MT_ATTR_RULE_ADAPTIVE;
}

static const char *const method_names[MT_ATTR_METHODS] = {
    "saliency",
    "input_x_gradient",
    "integrated_gradients",
};

const char *mt_attr_method_name(mt_attr_method method)
{
    return method >= 0 && method < MT_ATTR_METHODS ? method_names[method] : "?";
}

int mt_attr_method_parse(const char *name, mt_attr_method *out)
{
    for (int i = 0; i < MT_ATTR_METHODS; i++)
        if (name && !strcmp(name, method_names[i])) {
            *out = (mt_attr_method)i;
            return 0;
        }
    return mt_error("unknown attribution method '%s' (saliency, input_x_gradient or "
                    "integrated_gradients)",
                    name ? name : "");
}

static const char *const rule_names[MT_ATTR_RULES] = {"adaptive", "gauss-legendre"};

const char *mt_attr_rule_name(mt_attr_rule rule)
{
    return rule >= 0 && rule < MT_ATTR_RULES ? rule_names[rule] : "?";
}

int mt_attr_rule_parse(const char *name, mt_attr_rule *out)
{
    for (int i = 0; i < MT_ATTR_RULES; i++)
        if (name && !strcmp(name, rule_names[i])) {
            *out = (mt_attr_rule)i;
            return 0;
        }
    return mt_error("unknown integration rule '%s' (adaptive or gauss-legendre)", name ? name : "");
}

void mt_attribution_free(mt_attribution *a)
{
    free(a->row_ids);
    free(a->col_ids);
    free(a->values);
    free(a->inputs);
    free(a->logp);
    free(a->logp_baseline);
    memset(a, 0, sizeof *a);
}

double mt_attribution_row_sum(const mt_attribution *a, int row)
{
    double s = 0.0;
    for (int i = 0; i < a->cols; i++) s += a->values[(size_t)row * a->cols + i];
    return s;
}

/* One sequence to attribute: its inputs, its targets and the host copies of the token
 * embeddings (and of the baseline) at every input position. */
typedef struct {
    mt_model *m;
    int encdec;
    int T, S; /* decoder positions; source positions (0: decoder-only) */
    int n_prompt; /* decoder positions before the hypothesis */
    int32_t *ids; /* (T) decoder input */
    int32_t *src; /* (S) encoder input */
    int rows; /* targets: the hypothesis and <eos> */
    int32_t *targets; /* (rows) */
    int32_t contrast; /* < 0: none */
    float *e_dec, *b_dec; /* (T, C) token embeddings, baseline */
    float *e_enc, *b_enc; /* (S, C) */
    /* kept from pass to pass, grown as needed (a fresh allocation per pass cost its pages'
     * faults and zeroing every time): the device scratch, the host copy of the logits, and
     * the host copies of the embedding output's gradients, gdec (copies, T, C), genc (copies,
     * S, C) */
    float *scratch, *logits, *gdec, *genc;
    size_t scratch_cap, logits_cap; /* floats */
    int grads_copies;
} attr_seq;

/* The decoder position that predicts target j. */
static int target_pos(const attr_seq *q, int j) { return q->n_prompt - 1 + j; }

static void seq_free(attr_seq *q)
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

/* decoder-only: `src <sep> hyp` (a text template holds its separator in src, as the probes and
 * decoding take it); encoder-decoder: source `src <eos>`, decoder `<bos> hyp` */
static int seq_init(attr_seq *q, mt_model *m, const int32_t *src, int src_len, const int32_t *hyp,
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
    if (q->encdec) host_embeddings(m, &m->enc, q->src, q->S, o->baseline, &q->e_enc, &q->b_enc);
    return 0;
}

/* A target read from one pass: copy brow's position pos predicts target j. */
typedef struct {
    int brow, pos, j;
} attr_pick;

/* Where B copies sit: copy r on the path at alpha[r], delta (C) added at column col (when
 * delta is not NULL and col a column of the stack). */
typedef struct {
    const float *alpha;
    int col;
    const float *delta;
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

static size_t stack_scratch(const mt_stack *s, int B, int T, int S)
{
    size_t most = 0;
    for (int i = 0; i < s->n_units; i++) {
        size_t n = mt_unit_scratch_count(&s->units[i], B, T, S);
        if (n > most) most = n;
    }
    return most;
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

/* One pass over B copies of the sequence's first T decoder positions (every pick's position
 * is below T: the decoders are causal, so the later ones change nothing), the copies on path
 * (columns counted over source then decoder positions): the log-probs of the picks into logp,
 * and with grads (one pick per copy, pick k on copy k) a backward into grads. */
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
        units = stack_scratch(&m->dec, B, T, S);
        size_t e = q->encdec ? stack_scratch(&m->enc, B, S, 0) : 0;
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

static int attr_pass(attr_seq *q, int T, int B, const attr_path *path, const attr_pick *picks,
                     int n_picks, double *logp, const attr_grads *grads)
{
    int backward = grads != NULL;
    mt_model *m = q->m;
    const mt_backend *be = m->be;
    int S = q->S, C = m->cfg.d_model, V = m->cfg.vocab_size;
    size_t BT = (size_t)B * T, NS = (size_t)B * S;
    if (prepare_copies(q, T, B)) return -1;

    const float *mem = NULL;
    if (q->encdec) {
        embed_path(m, &m->enc, &m->enc_acts, m->d_src, B, S, &(attr_ends){q->e_enc, q->b_enc},
                   path);
        mt_pass enc = {.B = B, .T = S, .mask = m->d_src_mask};
        mem = mt_stack_forward(m, &m->enc, &m->enc_acts, &enc);
    }
    attr_path dec_path = *path;
    dec_path.col -= S;
    embed_path(m, &m->dec, &m->dec_acts, m->d_ids, B, T, &(attr_ends){q->e_dec, q->b_dec},
               &dec_path);
    /* the weights' gradients are of no use here: each layer skips its dW products */
    mt_pass dec = {.B = B,
                   .T = T,
                   .S = S,
                   .mem = mem,
                   .mask = m->d_mask,
                   .mem_mask = m->d_src_mask,
                   .input_grads_only = 1};
    const float *out = mt_stack_forward(m, &m->dec, &m->dec_acts, &dec);

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

/* Every target's log-prob at point from one copy. */
static int all_logprobs(attr_seq *q, const mt_attr_point *point, double *logp)
{
    attr_pick *picks = mt_xmalloc((size_t)q->rows * sizeof *picks);
    for (int j = 0; j < q->rows; j++) picks[j] = (attr_pick){0, target_pos(q, j), j};
    attr_path path = {&point->alpha, point->col, point->delta};
    int rc = attr_pass(q, q->T, 1, &path, picks, q->rows, logp, NULL);
    free(picks);
    return rc;
}

static int check_model(const mt_model *m)
{
    if (m->precision != MT_PRECISION_FP32)
        return mt_error("attribution needs fp32 weights; this model runs in %s",
                        mt_precision_name(m->precision));
    return 0;
}

/* Gauss-Legendre nodes and weights of n points on [0, 1] (Newton's iteration on P_n from
 * Chebyshev-like starts, as captum's default "gausslegendre" method): the nodes crowd towards
 * both ends, where the path from a zero baseline changes fastest (a norm of a nearly-zero
 * input, docs/attribution.md), and a smooth integrand is integrated to high order. */
static void gauss_legendre(int n, double *x01, double *w01)
{
    for (int i = 0; i < n; i++) {
        double x = cos(M_PI * (i + 0.75) / (n + 0.5)), dp = 1.0;
        for (int it = 0; it < 100; it++) {
            double p0 = 1.0, p1 = x; /* P_0, P_1, then up to P_n */
            for (int k = 2; k <= n; k++) {
                double p2 = ((2.0 * k - 1.0) * x * p1 - (k - 1.0) * p0) / k;
                p0 = p1;
                p1 = p2;
            }
            if (n == 1) p0 = 1.0, p1 = x;
            dp = n * (x * p1 - p0) / (x * x - 1.0);
            double dx = p1 / dp;
            x -= dx;
            if (fabs(dx) < 1e-15) break;
        }
        x01[i] = (1.0 - x) / 2.0;
        w01[i] = 1.0 / ((1.0 - x * x) * dp * dp);
    }
}

/* -1 and "attribution cancelled" once the caller's cancel flag is set (a pane's next
 * translation, as decoding's), else 0. */
static int check_cancel(const atomic_int *cancel)
{
    if (cancel && atomic_load(cancel)) return mt_error("attribution cancelled");
    return 0;
}

/* Copies of one pass at least (when that many are left): fewer would leave the products thin. */
#define MIN_CHUNK_COPIES 8

/* One gradient evaluation: row j's target differentiated at the path point alpha. */
typedef struct {
    int j;
    float alpha;
} attr_eval;

/* Where the scores of evaluations go: with weight, evaluation i's times weight[i] added to row j
 * of out (rows, cols); without, evaluation i's into row i of out (n, cols) (zeroed by the
 * caller) and its log-prob (the row's at its alpha, from the same pass) into logp[i]. */
typedef struct {
    const double *weight;
    double *out;
    double *logp;
} attr_sink;

/* The backward passes of n evaluations in order of j, in chunks of copies whose activations stay
 * under MT_ATTR_CHUNK_POSITIONS positions and that run only the decoder positions up to their
 * last target's (so a translation's rows come in about four chunks of growing length, not one
 * of the full length); cancel is checked before every pass. */
static int gradient_passes(attr_seq *q, mt_attr_method method, const attr_eval *ev, long n,
                           const attr_sink *sink, const atomic_int *cancel)
{
    int C = q->m->cfg.d_model, per_copy = q->T + q->S, cols = q->S + q->T;
    int chunk = MT_ATTR_CHUNK_POSITIONS / per_copy;
    long quarter = (n + 3) / 4;
    if (chunk > quarter) chunk = quarter > MIN_CHUNK_COPIES ? (int)quarter : MIN_CHUNK_COPIES;
    if (chunk < 1) chunk = 1;
    if (chunk > n) chunk = (int)n;
    float *alpha = mt_xmalloc((size_t)chunk * sizeof *alpha);
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
    attr_path path = {alpha, -1, NULL};
    /* the largest pass's activations and scratch at once: the chunks' growing lengths would
     * otherwise allocate (and zero) about four ever larger blocks of each */
    int rc = prepare_copies(q, q->T, chunk);
    if (rc == 0 && reserve_scratch(q, pass_scratch_floats(q, q->T, chunk, chunk, 1)))
        rc = mt_error_context("attribution of %d target positions", chunk);
    for (long first = 0; first < n && rc == 0; first += chunk) {
        if ((rc = check_cancel(cancel))) break;
        int B = n - first < chunk ? (int)(n - first) : chunk;
        for (int r = 0; r < B; r++) {
            const attr_eval *e = &ev[first + r];
            alpha[r] = e->alpha;
            picks[r] = (attr_pick){r, target_pos(q, e->j), e->j};
        }
        int T = picks[B - 1].pos + 1; /* the chunk's last target is its latest */
        rc = attr_pass(q, T, B, &path, picks, B, logp, &grads);
        for (int r = 0; r < B && rc == 0; r++) {
            long i = first + r;
            if (sink->weight) {
                add_scores(q, T, method, &grads, r, sink->weight[i],
                           sink->out + (size_t)picks[r].j * cols);
                continue;
            }
            add_scores(q, T, method, &grads, r, 1.0, sink->out + (size_t)i * cols);
            sink->logp[i] = logp[r];
        }
    }
    free(alpha);
    free(picks);
    free(logp);
    return rc;
}

/* Saliency and input x gradient (steps 1, at the input), and integrated gradients with the
 * steps Gauss-Legendre nodes for every row: scores weighted into acc (rows, cols). */
static int attribute_fixed(attr_seq *q, mt_attr_method method, int steps, const atomic_int *cancel,
                           double *acc)
{
    double *node = mt_xmalloc((size_t)steps * sizeof *node);
    double *weight = mt_xmalloc((size_t)steps * sizeof *weight);
    if (method == MT_ATTR_INTEGRATED_GRADIENTS) gauss_legendre(steps, node, weight);
    else node[0] = weight[0] = 1.0;
    long n = (long)q->rows * steps;
    attr_eval *ev = mt_xmalloc((size_t)n * sizeof *ev);
    double *w = mt_xmalloc((size_t)n * sizeof *w);
    for (long i = 0; i < n; i++) {
        ev[i] = (attr_eval){(int)(i / steps), (float)node[i % steps]};
        w[i] = weight[i % steps];
    }
    int rc = gradient_passes(q, method, ev, n, &(attr_sink){w, acc, NULL}, cancel);
    free(node);
    free(weight);
    free(ev);
    free(w);
    return rc;
}

/* The adaptive rule's first partition: pieces of [0, 1] of equal length, three nodes each (ends
 * shared), 2 * ADAPTIVE_FIRST_PIECES evaluations (none at alpha = 0, below; fewer pieces when
 * steps is below that). */
#define ADAPTIVE_FIRST_PIECES 4
/* Each round splits the pieces with the largest residuals, a third of a row's pieces (at least
 * one): fewer rounds of bigger passes than one split a round (64 steps: 10 rounds, not 29), at
 * the cost of splitting some that did not need it (docs/attribution.md §2 has the figures). */
#define ADAPTIVE_SPLIT_SHARE 3

/* How a piece [a, b] integrates: Simpson's rule on a, its midpoint m and b; the piece that starts
 * at the baseline (alpha = 0) the midpoint rule on m alone, since the gradient at a zero
 * baseline is the norms' singularity (1/sqrt(eps) per norm, docs/attribution.md §2) and no
 * gradient is taken there; the trapezoid rule on a and b, the one piece a row's odd last
 * evaluation leaves. */
typedef enum { PIECE_SIMPSON, PIECE_OPEN, PIECE_TRAPEZOID } attr_piece_rule;

/* A piece [alpha[a], alpha[b]] of a row's partition of [0, 1]: indices into the row's points. */
typedef struct {
    int a, m, b;
    attr_piece_rule rule;
} attr_piece;

/* Every row's points so far: point 0 is alpha = 0 (its log-prob from the baseline's forward
 * pass, no gradient), the others each one gradient evaluation, at most steps of them. */
typedef struct {
    int points, cols; /* points per row: steps + 1 */
    double *alpha, *logp, *sum; /* (rows, points) the path point, the row's log-prob f there,
                                 * and the sum of its scores (the integrand of the row's sum) */
    double *scores; /* (rows, points, cols) */
    attr_piece *pieces; /* (rows, points) */
    int *n_pieces, *used; /* (rows) pieces; points used (evaluations + 1) */
    attr_eval *ev; /* (n) this round's requests, in order of row */
    int *slot; /* (n) request i's point in its row */
    long n;
} attr_adaptive;

/* Quadrature weights of piece p's points (a, m, b) for the row's sum. */
static void piece_weights(const attr_piece *p, const double *alpha, double w[3])
{
    double h = alpha[p->b] - alpha[p->a];
    if (p->rule == PIECE_SIMPSON) w[0] = h / 6.0, w[1] = 4.0 * h / 6.0, w[2] = h / 6.0;
    else if (p->rule == PIECE_OPEN) w[0] = 0.0, w[1] = h, w[2] = 0.0;
    else w[0] = h / 2.0, w[1] = 0.0, w[2] = h / 2.0;
}

/* Piece p's residual: its quadrature of the row's sum less the change of f over it, which the
 * sum of the attributions would equal if the rule were exact (completeness on [a, b]). */
static double piece_residual(const attr_adaptive *ad, int j, const attr_piece *p)
{
    size_t row = (size_t)j * ad->points;
    const double *alpha = ad->alpha + row, *f = ad->logp + row, *sum = ad->sum + row;
    double w[3];
    piece_weights(p, alpha, w);
    double quad = w[0] * sum[p->a] + w[2] * sum[p->b] + (p->m >= 0 ? w[1] * sum[p->m] : 0.0);
    return quad - (f[p->b] - f[p->a]);
}

/* A new evaluation of row j at alpha, requested for this round: its point in the row. */
static int add_eval(attr_adaptive *ad, int j, double alpha)
{
    int k = ad->used[j]++;
    ad->alpha[(size_t)j * ad->points + k] = alpha;
    ad->slot[ad->n] = k;
    ad->ev[ad->n++] = (attr_eval){j, (float)alpha};
    return k;
}

typedef struct {
    double residual;
    int piece;
} attr_ranked;

static int by_residual(const void *x, const void *y)
{
    const attr_ranked *a = x, *b = y;
    if (a->residual != b->residual) return a->residual < b->residual ? 1 : -1;
    return a->piece - b->piece;
}

/* Row j's next round: its pieces with the largest |residual| split at their midpoint, each half
 * with a new midpoint (2 evaluations; the first half of the piece at 0 stays open; with one
 * evaluation left the second half takes the trapezoid rule; a trapezoid piece gets its
 * midpoint), requests added to the round's. */
static void split_pieces(attr_adaptive *ad, int j, attr_ranked *ranked)
{
    attr_piece *pieces = ad->pieces + (size_t)j * ad->points;
    const double *alpha = ad->alpha + (size_t)j * ad->points;
    int count = ad->n_pieces[j];
    for (int p = 0; p < count; p++)
        ranked[p] = (attr_ranked){fabs(piece_residual(ad, j, &pieces[p])), p};
    qsort(ranked, (size_t)count, sizeof *ranked, by_residual);
    int splits = count / ADAPTIVE_SPLIT_SHARE > 1 ? count / ADAPTIVE_SPLIT_SHARE : 1;
    for (int s = 0; s < splits && ad->used[j] < ad->points; s++) {
        attr_piece *p = &pieces[ranked[s].piece];
        if (p->rule == PIECE_TRAPEZOID) {
            p->m = add_eval(ad, j, (alpha[p->a] + alpha[p->b]) / 2.0);
            p->rule = PIECE_SIMPSON;
            continue;
        }
        attr_piece right = {p->m, -1, p->b, PIECE_TRAPEZOID};
        int left_mid = add_eval(ad, j, (alpha[p->a] + alpha[p->m]) / 2.0);
        if (ad->used[j] < ad->points) {
            right.m = add_eval(ad, j, (alpha[p->m] + alpha[p->b]) / 2.0);
            right.rule = PIECE_SIMPSON;
        }
        *p = (attr_piece){p->a, left_mid, p->m, p->rule};
        pieces[ad->n_pieces[j]++] = right;
    }
}

/* Integrated gradients with the adaptive rule (mtlab/attribution.h, docs/attribution.md §2):
 * every row starts from ADAPTIVE_FIRST_PIECES pieces and, round by round, splits the pieces
 * whose quadrature of the row's sum is furthest from the change of the log-prob over them (both
 * known from the passes already run, f(0) from the baseline's: no extra pass) until it has used
 * steps evaluations; the rows' requests of a round run together, in order of row. The composite
 * rule's weights then sum each evaluation's scores into acc (rows, cols). logp0 (rows) the rows'
 * log-probs at the baseline. Needs steps >= 2. */
static int attribute_adaptive(attr_seq *q, mt_attr_method method, int steps, const double *logp0,
                              const atomic_int *cancel, double *acc)
{
    int rows = q->rows, cols = q->S + q->T, points = steps + 1;
    size_t all = (size_t)rows * points;
    attr_adaptive ad = {.points = points, .cols = cols};
    ad.alpha = mt_xcalloc(all, sizeof *ad.alpha);
    ad.logp = mt_xcalloc(all, sizeof *ad.logp);
    ad.sum = mt_xcalloc(all, sizeof *ad.sum);
    ad.scores = mt_xcalloc(all * cols, sizeof *ad.scores);
    ad.pieces = mt_xmalloc(all * sizeof *ad.pieces);
    ad.n_pieces = mt_xcalloc((size_t)rows, sizeof *ad.n_pieces);
    ad.used = mt_xcalloc((size_t)rows, sizeof *ad.used);
    ad.ev = mt_xmalloc(all * sizeof *ad.ev);
    ad.slot = mt_xmalloc(all * sizeof *ad.slot);
    attr_ranked *ranked = mt_xmalloc(all * sizeof *ranked);
    int first = steps / 2 < ADAPTIVE_FIRST_PIECES ? steps / 2 : ADAPTIVE_FIRST_PIECES;
    for (int j = 0; j < rows; j++) {
        ad.logp[(size_t)j * points] = logp0[j];
        ad.used[j] = 1;
        for (int k = 1; k <= 2 * first; k++) add_eval(&ad, j, (double)k / (2 * first));
        for (int p = 0; p < first; p++)
            ad.pieces[(size_t)j * points + p] =
                (attr_piece){2 * p, 2 * p + 1, 2 * p + 2, p ? PIECE_SIMPSON : PIECE_OPEN};
        ad.n_pieces[j] = first;
    }
    int rc = 0;
    while (ad.n > 0 && rc == 0) {
        long n = ad.n;
        double *scores = mt_xcalloc((size_t)n * cols, sizeof *scores);
        double *logp = mt_xmalloc((size_t)n * sizeof *logp);
        rc = gradient_passes(q, method, ad.ev, n, &(attr_sink){NULL, scores, logp}, cancel);
        for (long i = 0; i < n && rc == 0; i++) {
            size_t at = (size_t)ad.ev[i].j * points + ad.slot[i];
            const double *row = scores + (size_t)i * cols;
            double s = 0.0;
            for (int c = 0; c < cols; c++) s += row[c];
            memcpy(ad.scores + at * cols, row, (size_t)cols * sizeof *row);
            ad.logp[at] = logp[i];
            ad.sum[at] = s;
        }
        free(scores);
        free(logp);
        ad.n = 0;
        for (int j = 0; j < rows && rc == 0; j++)
            if (ad.used[j] < points) split_pieces(&ad, j, ranked);
    }
    /* the composite rule's weight of each point, then the weighted sum of its scores */
    double *w = mt_xmalloc((size_t)points * sizeof *w);
    for (int j = 0; j < rows && rc == 0; j++) {
        const double *alpha = ad.alpha + (size_t)j * points;
        memset(w, 0, (size_t)points * sizeof *w);
        for (int p = 0; p < ad.n_pieces[j]; p++) {
            const attr_piece *pc = &ad.pieces[(size_t)j * points + p];
            double pw[3];
            piece_weights(pc, alpha, pw);
            w[pc->a] += pw[0];
            w[pc->b] += pw[2];
            if (pc->m >= 0) w[pc->m] += pw[1];
        }
        double *out = acc + (size_t)j * cols;
        for (int k = 1; k < points; k++) {
            const double *sc = ad.scores + ((size_t)j * points + k) * cols;
            for (int c = 0; c < cols; c++) out[c] += w[k] * sc[c];
        }
    }
    free(w);
    free(ad.alpha);
    free(ad.logp);
    free(ad.sum);
    free(ad.scores);
    free(ad.pieces);
    free(ad.n_pieces);
    free(ad.used);
    free(ad.ev);
    free(ad.slot);
    free(ranked);
    return rc;
}

/* The model's greedy translation of src into *hyp (malloc'd). */
static int greedy(mt_model *m, const int32_t *src, int src_len, const mt_attr_opts *o,
                  int32_t **hyp, int *hyp_len)
{
    mt_decode_opts d;
    mt_decode_opts_init(&d);
    d.beam = 1;
    d.vocab_limit = o->vocab_limit;
    d.max_new_tokens = o->max_new_tokens;
    d.cancel = o->cancel;
    mt_decode_result res = {0};
    if (mt_decode(m, &src, &src_len, 1, &d, &res)) {
        mt_decode_result_free(&res);
        return mt_error_context("attribution: translating the source");
    }
    if (res.cancelled) {
        mt_decode_result_free(&res);
        return mt_error("attribution cancelled");
    }
    *hyp_len = res.hyps[0].n_ids;
    *hyp = mt_xmalloc(((size_t)*hyp_len + 1) * sizeof **hyp);
    if (*hyp_len) memcpy(*hyp, res.hyps[0].ids, (size_t)*hyp_len * sizeof **hyp);
    mt_decode_result_free(&res);
    return 0;
}

static int check_args(const int32_t *src, int src_len, const int32_t *hyp, int hyp_len,
                      const mt_attr_opts *o)
{
    if (src_len < 0 || (src_len > 0 && !src) || (hyp && hyp_len < 0))
        return mt_error("attribution: bad source or hypothesis (%d and %d tokens)", src_len,
                        hyp_len);
    if (o->method < 0 || o->method >= MT_ATTR_METHODS)
        return mt_error("attribution: unknown method %d", (int)o->method);
    if (o->rule < 0 || o->rule >= MT_ATTR_RULES)
        return mt_error("attribution: unknown integration rule %d", (int)o->rule);
    if (o->steps < 0 || o->steps > MT_ATTR_MAX_STEPS)
        return mt_error("attribution: %d steps, must be in 1..%d", o->steps, MT_ATTR_MAX_STEPS);
    return 0;
}

int mt_attribute(mt_model *m, const int32_t *src, int src_len, const int32_t *hyp, int hyp_len,
                 const mt_attr_opts *o, mt_attribution *out)
{
    memset(out, 0, sizeof *out);
    mt_attr_opts defaults;
    mt_attr_opts_init(&defaults);
    if (!o) o = &defaults;
    if (check_model(m) || check_args(src, src_len, hyp, hyp_len, o)) return -1;
    int32_t *own = NULL;
    if (!hyp) {
        if (greedy(m, src, src_len, o, &own, &hyp_len)) return -1;
        hyp = own;
    }
    int ig = o->method == MT_ATTR_INTEGRATED_GRADIENTS;
    int steps = ig ? (o->steps > 0 ? o->steps : MT_ATTR_DEFAULT_STEPS) : 1;
    /* the adaptive rule's first piece needs 2 evaluations */
    mt_attr_rule rule = ig && steps >= 2 ? o->rule : MT_ATTR_RULE_GAUSS_LEGENDRE;
    int had_grads = m->grads != NULL;
    attr_seq q;
    int rc = seq_init(&q, m, src, src_len, hyp, hyp_len, o);
    free(own);
    if (rc == 0 && !mt_model_grads(m)) rc = -1;
    double *acc = NULL;
    if (rc == 0) {
        out->method = o->method;
        out->rows = q.rows;
        out->cols = q.S + q.T;
        out->n_src = q.encdec ? q.S : q.n_prompt;
        out->steps = ig ? steps : 0;
        out->rule = ig ? rule : MT_ATTR_RULE_GAUSS_LEGENDRE;
        out->row_ids = mt_xmalloc((size_t)q.rows * sizeof *out->row_ids);
        memcpy(out->row_ids, q.targets, (size_t)q.rows * sizeof *q.targets);
        out->col_ids = mt_xmalloc((size_t)out->cols * sizeof *out->col_ids);
        if (q.S) memcpy(out->col_ids, q.src, (size_t)q.S * sizeof *q.src);
        memcpy(out->col_ids + q.S, q.ids, (size_t)q.T * sizeof *q.ids);
        out->logp = mt_xmalloc((size_t)q.rows * sizeof *out->logp);
        size_t C = (size_t)m->cfg.d_model;
        out->inputs = mt_xmalloc((size_t)out->cols * C * sizeof *out->inputs);
        if (q.S) memcpy(out->inputs, q.e_enc, (size_t)q.S * C * sizeof *out->inputs);
        memcpy(out->inputs + (size_t)q.S * C, q.e_dec, (size_t)q.T * C * sizeof *out->inputs);
        acc = mt_xcalloc((size_t)q.rows * out->cols, sizeof *acc);
    }
    if (rc == 0) rc = check_cancel(o->cancel);
    if (rc == 0 && ig) {
        out->logp_baseline = mt_xmalloc((size_t)q.rows * sizeof *out->logp_baseline);
        rc = all_logprobs(&q, &(mt_attr_point){0.0f, -1, NULL}, out->logp_baseline);
    }
    if (rc == 0)
        rc = rule == MT_ATTR_RULE_ADAPTIVE
                 ? attribute_adaptive(&q, o->method, steps, out->logp_baseline, o->cancel, acc)
                 : attribute_fixed(&q, o->method, steps, o->cancel, acc);
    if (rc == 0) rc = check_cancel(o->cancel);
    if (rc == 0) rc = all_logprobs(&q, &(mt_attr_point){1.0f, -1, NULL}, out->logp);
    if (rc == 0) {
        size_t cells = (size_t)q.rows * out->cols;
        out->values = mt_xmalloc(cells * sizeof *out->values);
        for (size_t i = 0; i < cells; i++) out->values[i] = (float)acc[i];
    }
    free(acc);
    seq_free(&q);
    /* the units' weight gradients the backward accumulated are of no use: a model that had
     * none keeps none (its memory back) */
    if (!had_grads && m->grads) {
        m->be->free(m->grads);
        m->grads = NULL;
    }
    if (rc) mt_attribution_free(out);
    return rc;
}

int mt_attribution_logprobs(mt_model *m, const int32_t *src, int src_len, const int32_t *hyp,
                            int hyp_len, const mt_attr_opts *o, const mt_attr_point *point,
                            double *logp)
{
    mt_attr_opts defaults;
    mt_attr_opts_init(&defaults);
    if (!o) o = &defaults;
    if (check_model(m) || check_args(src, src_len, hyp, hyp_len, o)) return -1;
    if (!hyp && hyp_len > 0) return mt_error("attribution: no hypothesis");
    attr_seq q;
    int rc = seq_init(&q, m, src, src_len, hyp, hyp_len, o);
    if (rc == 0 && point->delta && (point->col < 0 || point->col >= q.S + q.T))
        rc = mt_error("attribution: column %d is outside 0..%d", point->col, q.S + q.T - 1);
    if (rc == 0) rc = all_logprobs(&q, point, logp);
    seq_free(&q);
    return rc;
}
