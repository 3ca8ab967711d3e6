/* Gradient attribution (mtlab/attribution.h): the options and names, and mt_attribute, which
 * builds the sequence, hands a rule (attribution_rules.c: which path points each row is
 * differentiated at, and their weights) the passes of attribution_pass.c as its evaluator, and
 * collects the rows. */
#include "mtlab/attribution.h"

#include <stdlib.h>
#include <string.h>

#include "models/attribution_pass.h"
#include "models/attribution_rules.h"
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

static int check_model(const mt_model *m)
{
    if (m->precision != MT_PRECISION_FP32)
        return mt_error("attribution needs fp32 weights; this model runs in %s",
                        mt_precision_name(m->precision));
    return 0;
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

/* The rules' evaluator: attribution_pass.c's passes by one method, with the caller's cancel
 * flag. */
typedef struct {
    attr_seq *q;
    mt_attr_method method;
    const atomic_int *cancel;
} attr_job;

static int evaluate(void *ctx, const attr_eval *ev, long n, const attr_sink *sink)
{
    const attr_job *job = ctx;
    return attr_gradient_passes(job->q, job->method, ev, n, sink, job->cancel);
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
    int rc = attr_seq_init(&q, m, src, src_len, hyp, hyp_len, o);
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
    if (rc == 0) rc = attr_check_cancel(o->cancel);
    if (rc == 0 && ig) {
        out->logp_baseline = mt_xmalloc((size_t)q.rows * sizeof *out->logp_baseline);
        rc = attr_all_logprobs(&q, &(mt_attr_point){0.0f, -1, NULL}, out->logp_baseline);
    }
    attr_job job = {&q, o->method, o->cancel};
    attr_evaluator ev = {evaluate, &job, q.rows, q.S + q.T};
    if (rc == 0)
        rc = rule == MT_ATTR_RULE_ADAPTIVE
                 ? attr_integrate_adaptive(&ev, steps, out->logp_baseline, acc)
                 : attr_integrate_fixed(&ev, o->method, steps, acc, ig ? NULL : out->logp);
    if (rc == 0) rc = attr_check_cancel(o->cancel);
    /* saliency's and input x gradient's passes are at the input: their log-probs are the rows' */
    if (rc == 0 && ig) rc = attr_all_logprobs(&q, &(mt_attr_point){1.0f, -1, NULL}, out->logp);
    if (rc == 0) {
        size_t cells = (size_t)q.rows * out->cols;
        out->values = mt_xmalloc(cells * sizeof *out->values);
        for (size_t i = 0; i < cells; i++) out->values[i] = (float)acc[i];
    }
    free(acc);
    attr_seq_free(&q);
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
    int rc = attr_seq_init(&q, m, src, src_len, hyp, hyp_len, o);
    if (rc == 0 && point->delta && (point->col < 0 || point->col >= q.S + q.T))
        rc = mt_error("attribution: column %d is outside 0..%d", point->col, q.S + q.T - 1);
    if (rc == 0) rc = attr_all_logprobs(&q, point, logp);
    attr_seq_free(&q);
    return rc;
}
