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
static int attr_pass(attr_seq *q, int T, int B, const attr_path *path, const attr_pick *picks,
                     int n_picks, double *logp, const attr_grads *grads)
{
    int backward = grads != NULL;
    mt_model *m = q->m;
    const mt_backend *be = m->be;
    int S = q->S, C = m->cfg.d_model, V = m->cfg.vocab_size;
    size_t BT = (size_t)B * T, NS = (size_t)B * S;
    int32_t *ids = mt_xmalloc(BT * sizeof *ids);
    int32_t *src = NS ? mt_xmalloc(NS * sizeof *src) : NULL;
    for (int r = 0; r < B; r++) {
        memcpy(ids + (size_t)r * T, q->ids, (size_t)T * sizeof *ids);
        if (S) memcpy(src + (size_t)r * S, q->src, (size_t)S * sizeof *src);
    }
    mt_batch b = {.B = B, .T = T, .ids = ids, .S = S, .src = src};
    int rc = mt_model_prepare(m, &b);
    free(ids);
    free(src);
    if (rc) return mt_error_context("attribution");

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

    /* device: xg (n_picks, C), dxg (n_picks, C), logits (n_picks, V); with backward also
     * dout, dx (BT, C), dmem, dxs (NS, C) and the units' scratch */
    size_t units = 0;
    if (backward) {
        units = stack_scratch(&m->dec, B, T, S);
        size_t e = q->encdec ? stack_scratch(&m->enc, B, S, 0) : 0;
        if (e > units) units = e;
    }
    size_t P = (size_t)n_picks;
    size_t n = 2 * P * C + P * V + (backward ? 2 * BT * C + 2 * NS * C + units : 0);
    float *dev = be->alloc(n * sizeof(float));
    if (!dev) return mt_error_context("attribution of %d target positions", n_picks);
    float *xg = dev, *dxg = xg + P * C, *lg = dxg + P * C, *dout = lg + P * V;
    float *dx = dout + BT * C, *dmem = dx + BT * C, *dxs = dmem + NS * C;
    float *unit_scratch = dxs + NS * C;
    for (size_t k = 0; k < P; k++)
        be->copy(xg + k * C, out + ((size_t)picks[k].brow * T + picks[k].pos) * C,
                 C * sizeof(float));
    mt_model_project(m, lg, xg, P);
    float *logits = mt_xmalloc(P * V * sizeof *logits);
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
    free(logits);
    be->free(dev);
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

/* Add weight * the scores of copy r's gradients (of a pass over T decoder positions) to
 * row j of out (cols = S + q->T; the positions from T on get nothing). */
static void add_scores(const attr_seq *q, int T, mt_attr_method method, const attr_grads *grads,
                       int r, int j, double weight, double *out)
{
    const float *gdec = grads->gdec, *genc = grads->genc;
    int C = q->m->cfg.d_model, S = q->S;
    float scale = q->m->embed_scale;
    double *row = out + (size_t)j * (S + q->T);
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

/* The backward passes: (target j, node k) pairs in order of j, in chunks of copies whose
 * activations stay under MT_ATTR_CHUNK_POSITIONS positions and that run only the decoder
 * positions up to their last target's (so a translation's rows come in about four chunks of
 * growing length, not one of the full length); scores weighted by the node's weight into acc
 * (rows, cols); cancel is checked before every pass. */
static int attribute_rows(attr_seq *q, mt_attr_method method, int steps, const atomic_int *cancel,
                          double *acc)
{
    int C = q->m->cfg.d_model, per_copy = q->T + q->S;
    int chunk = MT_ATTR_CHUNK_POSITIONS / per_copy;
    long total = (long)q->rows * steps, quarter = (total + 3) / 4;
    if (chunk > quarter) chunk = quarter > MIN_CHUNK_COPIES ? (int)quarter : MIN_CHUNK_COPIES;
    if (chunk < 1) chunk = 1;
    if (chunk > total) chunk = (int)total;
    double *node = mt_xmalloc((size_t)steps * sizeof *node);
    double *weight = mt_xmalloc((size_t)steps * sizeof *weight);
    if (method == MT_ATTR_INTEGRATED_GRADIENTS) gauss_legendre(steps, node, weight);
    else node[0] = weight[0] = 1.0;
    float *alpha = mt_xmalloc((size_t)chunk * sizeof *alpha);
    attr_pick *picks = mt_xmalloc((size_t)chunk * sizeof *picks);
    int *nodes = mt_xmalloc((size_t)chunk * sizeof *nodes);
    double *logp = mt_xmalloc((size_t)chunk * sizeof *logp);
    float *gdec = mt_xmalloc((size_t)chunk * q->T * C * sizeof *gdec);
    float *genc = q->S ? mt_xmalloc((size_t)chunk * q->S * C * sizeof *genc) : NULL;
    attr_grads grads = {gdec, genc};
    attr_path path = {alpha, -1, NULL};
    int rc = 0;
    for (long first = 0; first < total && rc == 0; first += chunk) {
        if ((rc = check_cancel(cancel))) break;
        int B = total - first < chunk ? (int)(total - first) : chunk;
        for (int r = 0; r < B; r++) {
            long i = first + r;
            int j = (int)(i / steps);
            nodes[r] = (int)(i % steps);
            alpha[r] = (float)node[nodes[r]];
            picks[r] = (attr_pick){r, target_pos(q, j), j};
        }
        int T = picks[B - 1].pos + 1; /* the chunk's last target is its latest */
        rc = attr_pass(q, T, B, &path, picks, B, logp, &grads);
        for (int r = 0; r < B && rc == 0; r++)
            add_scores(q, T, method, &grads, r, picks[r].j, weight[nodes[r]], acc);
    }
    free(node);
    free(weight);
    free(alpha);
    free(picks);
    free(nodes);
    free(logp);
    free(gdec);
    free(genc);
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
        rc = attribute_rows(&q, o->method, steps, o->cancel, acc);
    }
    if (rc == 0) rc = check_cancel(o->cancel);
    if (rc == 0) rc = all_logprobs(&q, &(mt_attr_point){1.0f, -1, NULL}, out->logp);
    if (rc == 0 && ig) {
        out->logp_baseline = mt_xmalloc((size_t)q.rows * sizeof *out->logp_baseline);
        rc = all_logprobs(&q, &(mt_attr_point){0.0f, -1, NULL}, out->logp_baseline);
    }
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
