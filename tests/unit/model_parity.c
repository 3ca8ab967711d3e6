/* See model_parity.h. */
#include "model_parity.h"
#include "test_util.h"

#include "mtlab/attribution.h"
#include "mtlab/decode.h"
#include "mtlab/error.h"
#include "mtlab/probe.h"

#define V TINY_MODEL_VOCAB

void tiny_model_config(mt_model_config *c, const char *preset, float dropout)
{
    assert_int_equal(mt_model_preset(c, preset), 0);
    c->vocab_size = V;
    c->d_model = 16;
    c->n_heads = 2;
    c->n_layers = 3;
    c->ffn_dim = 24;
    c->value_dim = 32;
    c->dt_rank = 2;
    c->d_state = 4;
    c->n_encoder_layers = 2;
    c->window = 3;
    c->n_attn_layers = 2;
    c->attn_layers[0] = 0;
    c->attn_layers[1] = 2;
    c->dropout = dropout;
}

static double rel_diff(const float *a, const float *b, size_t n)
{
    double d = 0.0, s = 1.0;
    for (size_t i = 0; i < n; i++) {
        if (isnan(a[i]) != isnan(b[i])) return INFINITY;
        d = fmax(d, fabs((double)a[i] - b[i]));
        s = fmax(s, fabs((double)b[i]));
    }
    return d / s;
}

static mt_model *create_on(const mt_backend *be, const mt_model_config *c)
{
    mt_model *m = mt_model_create(c, be, 11);
    if (!m) fail_msg("%s on %s: %s", c->arch, be->name, mt_last_error());
    return m;
}

void tiny_model_perturb(float *p, size_t n, uint64_t seed)
{
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
    for (size_t i = 0; i < n; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        p[i] += 0.2f * ((float)(x >> 40) / (float)(1ull << 24) - 0.5f);
    }
}

/* Move every parameter of both models by the same U(-0.1, 0.1) so logits are of order 1. */
static void perturb_both(mt_model *a, mt_model *b)
{
    size_t n = mt_model_param_block_size(a);
    float *p = malloc(n * sizeof *p);
    mt_model_backend(b)->download(p, mt_model_params(b), n * sizeof *p);
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (size_t i = 0; i < n; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        p[i] += 0.2f * ((float)(x >> 40) / (float)(1ull << 24) - 0.5f);
    }
    mt_model_backend(a)->upload(mt_model_params(a), p, n * sizeof *p);
    mt_model_backend(b)->upload(mt_model_params(b), p, n * sizeof *p);
    free(p);
}

static float *block_of(mt_model *m, float *dev)
{
    size_t n = mt_model_param_block_size(m);
    float *h = malloc(n * sizeof *h);
    mt_model_backend(m)->download(h, dev, n * sizeof *h);
    return h;
}

/* A training batch of two rows in the model's token conventions, the second shorter (left
 * padded for decoder-only models, right padded for encoder-decoder ones). */
typedef struct {
    int32_t ids[2 * 12], src[2 * 7];
    mt_batch b;
} two_rows;

static void make_batch(two_rows *r, const mt_model_config *c, int encdec)
{
    const int first = 5; /* ids below are specials in every preset */
    memset(r, 0, sizeof *r);
    if (encdec) {
        const int S = 7, T = 6;
        for (int i = 0; i < 2; i++) {
            int sl = i ? 4 : 6, tl = i ? 3 : 4;
            for (int j = 0; j < S; j++)
                r->src[i * S + j] = j < sl    ? first + (7 * i + 3 * j) % (V - first)
                                    : j == sl ? c->eos_id
                                              : c->pad_id;
            r->ids[i * T] = c->decoder_start_id;
            for (int j = 1; j < T; j++)
                r->ids[i * T + j] = j <= tl       ? first + (5 * i + 11 * j) % (V - first)
                                    : j == tl + 1 ? c->eos_id
                                                  : c->pad_id;
        }
        r->b = (mt_batch){.B = 2, .T = T, .ids = r->ids, .S = S, .src = r->src};
    } else {
        const int T = 12;
        for (int i = 0; i < 2; i++) {
            int pad = i ? 3 : 0, sl = 5, tl = i ? 2 : 5;
            int32_t *row = r->ids + i * T;
            int j = 0;
            for (; j < pad; j++) row[j] = c->pad_id;
            for (int k = 0; k < sl; k++) row[j++] = first + (7 * i + 3 * k) % (V - first);
            row[j++] = c->sep_id;
            for (int k = 0; k < tl; k++) row[j++] = first + (5 * i + 11 * k) % (V - first);
            row[j++] = c->eos_id;
            assert_int_equal(j, T);
        }
        r->b = (mt_batch){.B = 2, .T = T, .ids = r->ids};
    }
}

static void check(int rc, const char *what, const mt_model_config *c, const mt_backend *be)
{
    if (rc != 0) fail_msg("%s %s on %s: %s", c->arch, what, be->name, mt_last_error());
}

/* Prefill, two steps, a beam reorder (rows swapped and duplicated), three more steps: the
 * largest relative difference of the logits of a against b (on the CPU). On a backend that
 * records steps, a Mamba's second step is recorded and the later ones replayed, the reorder's
 * states included. A third state takes the same steps on a's backend choosing each row's next
 * token there (mt_model_step_argmax): it must choose the maximum of a's logits. */
static double decode_compare(mt_model *ma, mt_model *mb, const two_rows *r,
                             const mt_model_config *c, int encdec)
{
    const mt_backend *be = mt_model_backend(ma), *cpu = mt_model_backend(mb);
    double worst = 0.0;
    mt_decode_state *sa = mt_decode_state_new(ma, 2, 24, 8),
                    *sb = mt_decode_state_new(mb, 2, 24, 8);
    if (!sa || !sb) fail_msg("%s decode state: %s", c->arch, mt_last_error());
    mt_batch prompt = r->b;
    if (encdec) prompt.T = 1;
    else prompt.T = 6; /* row 0: 5 source ids + <sep>; row 1: 3 pads + 3 ids */
    int32_t prompt_ids[2 * 6];
    if (!encdec) {
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 6; j++) prompt_ids[i * 6 + j] = r->ids[i * 12 + j];
        prompt.ids = prompt_ids;
    }
    /* sc takes the same steps on a's backend through mt_model_step_argmax: its ids must be the
     * first maximum of each row of sa's logits */
    mt_decode_state *sc = mt_decode_state_new(ma, 2, 24, 8);
    if (!sc) fail_msg("%s decode state: %s", c->arch, mt_last_error());
    float *sla = malloc(2 * V * sizeof *sla), *slb = malloc(2 * V * sizeof *slb);
    float *slc = malloc(2 * V * sizeof *slc);
    check(mt_model_prefill(ma, sa, &prompt, sla), "prefill", c, be);
    check(mt_model_prefill(mb, sb, &prompt, slb), "prefill", c, cpu);
    check(mt_model_prefill(ma, sc, &prompt, slc), "prefill", c, be);
    worst = fmax(worst, rel_diff(sla, slb, 2 * V));
    const int32_t toks[5][2] = {{7, 9}, {12, 30}, {6, 6}, {21, 8}, {5, 33}};
    const int32_t rows[2] = {1, 1};
    for (int s = 0; s < 5; s++) {
        if (s == 2) {
            check(mt_decode_state_reorder(sa, rows, 2), "reorder", c, be);
            check(mt_decode_state_reorder(sb, rows, 2), "reorder", c, cpu);
            check(mt_decode_state_reorder(sc, rows, 2), "reorder", c, be);
        }
        int32_t next[2];
        check(mt_model_step(ma, sa, toks[s], sla), "step", c, be);
        check(mt_model_step(mb, sb, toks[s], slb), "step", c, cpu);
        check(mt_model_step_argmax(ma, sc, toks[s], next), "step_argmax", c, be);
        worst = fmax(worst, rel_diff(sla, slb, 2 * V));
        for (int row = 0; row < 2; row++) {
            const float *l = sla + (size_t)row * V;
            int best = 0;
            for (int j = 1; j < V; j++)
                if (l[j] > l[best]) best = j;
            if (next[row] != best)
                fail_msg(
                    "%s on %s: step %d row %d: step_argmax chose %d, the logits' maximum is at %d",
                    c->arch, be->name, s, row, next[row], best);
        }
    }
    mt_decode_state_free(sa);
    mt_decode_state_free(sb);
    mt_decode_state_free(sc);

    free(sla), free(slb), free(slc);
    return worst;
}

parity_report model_parity(const mt_backend *be, const char *preset, int exact)
{
    parity_report rep = {0};
    const mt_backend *cpu = mt_backend_cpu();
    mt_model_config c;
    tiny_model_config(&c, preset, 0.1f);
    mt_model *ma = create_on(be, &c), *mb = create_on(cpu, &c);
    perturb_both(ma, mb);
    int encdec = mt_model_is_encdec(mb);
    two_rows r;
    make_batch(&r, &c, encdec);
    size_t nl = (size_t)r.b.B * r.b.T * V, np = mt_model_param_block_size(mb);
    float *la = malloc(nl * sizeof *la), *lb = malloc(nl * sizeof *lb);

    /* 1. logits of the padded batch */
    check(mt_model_forward(ma, &r.b, la), "forward", &c, be);
    check(mt_model_forward(mb, &r.b, lb), "forward", &c, cpu);
    rep.logits = rel_diff(la, lb, nl);

    /* 2. one training step with dropout: loss, gradients, parameters after AdamW */
    mt_step_opts so = {.train = 1, .seed = 5, .step = 3, .label_smoothing = 0.1f};
    double loss_a, loss_b;
    size_t na, nb;
    mt_model_zero_grad(ma);
    mt_model_zero_grad(mb);
    check(mt_model_forward_backward(ma, &r.b, &so, 0.0f, &loss_a, &na), "forward_backward", &c, be);
    check(mt_model_forward_backward(mb, &r.b, &so, 0.0f, &loss_b, &nb), "forward_backward", &c,
          cpu);
    assert_int_equal(na, nb);
    rep.loss = fabs(loss_a - loss_b) / fmax(fabs(loss_b), 1e-30);
    float *ga = block_of(ma, mt_model_grads(ma)), *gb = block_of(mb, mt_model_grads(mb));
    rep.grads = rel_diff(ga, gb, np);
    /* AdamW from the same gradients: its first step moves each parameter by about lr times the
     * sign of its gradient, so a gradient that is rounding noise on both sides (zero on one,
     * 1e-12 on the other) would move by lr on one side only; the gradients are compared above */
    mt_model_backend(ma)->upload(mt_model_grads(ma), gb, np * sizeof *gb);
    mt_adamw_hparams h = {
        .lr = 1e-2f, .beta1 = 0.9f, .beta2 = 0.98f, .eps = 1e-8f, .weight_decay = 0.01f};
    check(mt_model_adamw_step(ma, &h, 1), "adamw", &c, be);
    check(mt_model_adamw_step(mb, &h, 1), "adamw", &c, cpu);
    float *pa = block_of(ma, mt_model_params(ma)), *pb = block_of(mb, mt_model_params(mb));
    rep.params = rel_diff(pa, pb, np);

    /* 3. prefill, two steps, a beam reorder (rows swapped and duplicated), three more steps */
    rep.logits = fmax(rep.logits, decode_compare(ma, mb, &r, &c, encdec));

    /* 4. the probes of one translation: every map of every kind the architecture has */
    {
        const int32_t src[] = {5, 9, 14, 20, 7}, hyp[] = {11, 30, 6};
        mt_probe_record ra = {0}, rb = {0};
        mt_probe_opts po = {0};
        check(mt_probe_run(ma, src, 5, hyp, 3, &po, &ra), "probes", &c, be);
        check(mt_probe_run(mb, src, 5, hyp, 3, &po, &rb), "probes", &c, cpu);
        assert_int_equal(ra.n_maps, rb.n_maps);
        assert_true(rb.n_maps > 0);
        for (int i = 0; i < rb.n_maps; i++) {
            const mt_probe_map *x = &ra.maps[i], *y = &rb.maps[i];
            assert_int_equal(x->kind, y->kind);
            assert_int_equal(x->heads * x->rows * x->cols, y->heads * y->rows * y->cols);
            rep.probes = fmax(rep.probes,
                              rel_diff(x->values, y->values, (size_t)y->heads * y->rows * y->cols));
        }
        mt_probe_record_free(&ra);
        mt_probe_record_free(&rb);
    }

    /* 5. the attributions of one translation: each method (integrated gradients with both rules
     * and, once, a contrast token), the values and the row log-probs */
    {
        const int32_t src[] = {5, 9, 14, 20, 7}, hyp[] = {11, 30, 6};
        const struct {
            mt_attr_method method;
            mt_attr_rule rule;
            int32_t contrast;
        } runs[] = {{MT_ATTR_SALIENCY, MT_ATTR_RULE_ADAPTIVE, -1},
                    {MT_ATTR_INPUT_X_GRADIENT, MT_ATTR_RULE_ADAPTIVE, 17},
                    {MT_ATTR_INTEGRATED_GRADIENTS, MT_ATTR_RULE_ADAPTIVE, -1},
                    {MT_ATTR_INTEGRATED_GRADIENTS, MT_ATTR_RULE_GAUSS_LEGENDRE, 17}};
        for (size_t k = 0; k < sizeof runs / sizeof runs[0]; k++) {
            mt_attr_opts o;
            mt_attr_opts_init(&o);
            o.method = runs[k].method;
            o.rule = runs[k].rule;
            o.contrast = runs[k].contrast;
            o.steps = 6;
            mt_attribution aa = {0}, ab = {0};
            check(mt_attribute(ma, src, 5, hyp, 3, &o, &aa), "attribute", &c, be);
            check(mt_attribute(mb, src, 5, hyp, 3, &o, &ab), "attribute", &c, cpu);
            assert_int_equal(aa.rows, ab.rows);
            assert_int_equal(aa.cols, ab.cols);
            size_t n = (size_t)ab.rows * ab.cols;
            assert_true(n > 0);
            rep.attr = fmax(rep.attr, rel_diff(aa.values, ab.values, n));
            for (int i = 0; i < ab.rows; i++) {
                double s = fmax(fabs(ab.logp[i]), 1.0);
                rep.attr = fmax(rep.attr, fabs(aa.logp[i] - ab.logp[i]) / s);
                if (ab.logp_baseline)
                    rep.attr = fmax(rep.attr, fabs(aa.logp_baseline[i] - ab.logp_baseline[i]) / s);
            }
            mt_attribution_free(&aa);
            mt_attribution_free(&ab);
        }
    }

    /* 6. greedy and beam decoding of three sources */
    if (exact) {
        const int32_t s0[] = {5, 9, 14, 20}, s1[] = {33, 8}, s2[] = {11, 12, 13, 14, 15, 16};
        const int32_t *src[] = {s0, s1, s2};
        const int len[] = {4, 2, 6};
        for (int beam = 1; beam <= 3; beam += 2) {
            mt_decode_opts o;
            mt_decode_opts_init(&o);
            o.beam = beam;
            o.max_new_tokens = 8;
            mt_decode_result ra = {0}, rb = {0};
            check(mt_decode(ma, src, len, 3, &o, &ra), "decode", &c, be);
            check(mt_decode(mb, src, len, 3, &o, &rb), "decode", &c, cpu);
            for (int i = 0; i < 3; i++) {
                assert_int_equal(ra.hyps[i].n_ids, rb.hyps[i].n_ids);
                if (ra.hyps[i].n_ids)
                    assert_memory_equal(ra.hyps[i].ids, rb.hyps[i].ids,
                                        (size_t)ra.hyps[i].n_ids * sizeof(int32_t));
                assert_true(ra.hyps[i].score == rb.hyps[i].score);
            }
            mt_decode_result_free(&ra);
            mt_decode_result_free(&rb);
        }
    }
    print_message("%-14s on %s: logits %.3g, loss %.3g, grads %.3g, params after AdamW %.3g, "
                  "probes %.3g, attributions %.3g (max relative differences from the CPU)\n",
                  preset, be->name, rep.logits, rep.loss, rep.grads, rep.params, rep.probes,
                  rep.attr);
    free(la), free(lb), free(ga), free(gb), free(pa), free(pb);
    mt_model_free(ma);
    mt_model_free(mb);
    return rep;
}

double model_precision_parity(const mt_backend *be, const char *preset, mt_precision p)
{
    const mt_backend *cpu = mt_backend_cpu();
    mt_model_config c;
    tiny_model_config(&c, preset, 0.0f);
    mt_model *ma = create_on(be, &c), *mb = create_on(cpu, &c);
    perturb_both(ma, mb);
    check(mt_model_set_precision(ma, p), "set_precision", &c, be);
    int encdec = mt_model_is_encdec(mb);
    two_rows r;
    make_batch(&r, &c, encdec);
    size_t nl = (size_t)r.b.B * r.b.T * V;
    float *la = malloc(nl * sizeof *la), *lb = malloc(nl * sizeof *lb);
    check(mt_model_forward(ma, &r.b, la), "forward", &c, be);
    check(mt_model_forward(mb, &r.b, lb), "forward", &c, cpu);
    double worst = fmax(rel_diff(la, lb, nl), decode_compare(ma, mb, &r, &c, encdec));
    free(la), free(lb);
    mt_model_free(ma);
    mt_model_free(mb);
    return worst;
}
