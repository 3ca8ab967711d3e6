/* Whole-model passes: batch checks and upload, forward to logits, the target-token loss and
 * backward. Letters (mtlab/backend.h): B rows, T decoder positions, S source positions,
 * BT = B*T rows, C d_model, V vocabulary. */
#include "models/model_internal.h"

#include <stdlib.h>
#include <string.h>

#include "mtlab/error.h"

static int check_ids(const mt_model *m, const int32_t *ids, int B, int T, const char *what)
{
    for (size_t i = 0; i < (size_t)B * T; i++)
        if (ids[i] < 0 || ids[i] >= m->cfg.vocab_size)
            return mt_error("%s model: %s id %d at row %zu, position %zu is outside the "
                            "vocabulary (0..%d)",
                            m->arch->name, what, ids[i], i / (size_t)T, i % (size_t)T,
                            m->cfg.vocab_size - 1);
    return 0;
}

/* Upper bound on what one batch may ask for, so a bad size is an error, not a huge malloc. */
#define MT_MAX_BATCH_POSITIONS (1u << 26)

int mt_model_check_batch(const mt_model *m, const mt_batch *b)
{
    const char *name = m->arch->name;
    if (!b || !b->ids || b->B <= 0 || b->T <= 0)
        return mt_error("%s model: empty batch (B = %d, T = %d)", name, b ? b->B : 0, b ? b->T : 0);
    if ((size_t)b->B * b->T > MT_MAX_BATCH_POSITIONS)
        return mt_error("%s model: batch of %d x %d positions is too large", name, b->B, b->T);
    if (check_ids(m, b->ids, b->B, b->T, m->arch->encdec ? "target" : "token")) return -1;
    if (m->dec.positions && b->T > m->cfg.max_positions)
        return mt_error("%s model: %d target positions exceed max_position_embeddings %d", name,
                        b->T, m->cfg.max_positions);
    if (!m->arch->encdec) return 0;
    if (!b->src || b->S <= 0)
        return mt_error("%s model: encoder-decoder batch without a source", name);
    if ((size_t)b->B * b->S > MT_MAX_BATCH_POSITIONS)
        return mt_error("%s model: source of %d x %d positions is too large", name, b->B, b->S);
    if (m->enc.positions && b->S > m->cfg.max_positions)
        return mt_error("%s model: %d source positions exceed max_position_embeddings %d", name,
                        b->S, m->cfg.max_positions);
    return check_ids(m, b->src, b->B, b->S, "source");
}

size_t mt_model_targets(const mt_model *m, int32_t *targets, const int32_t *ids,
                        const int *n_prompt, int B, int T)
{
    size_t count = 0;
    for (int b = 0; b < B; b++) {
        const int32_t *row = ids + (size_t)b * T;
        /* decoder-only: predictions count from the first <sep> on (docs/models.md §1.3); its
         * rows are left padded, so the <eos> at the end counts even where it is also <pad>
         * (the hub's Mamba configs) */
        int counting = m->arch->encdec;
        for (int t = 0; t < T; t++) {
            if (!counting && (n_prompt ? t >= n_prompt[b] - 1 : row[t] == m->cfg.sep_id))
                counting = 1;
            int32_t next = t + 1 < T ? row[t + 1] : -1;
            int use = counting && next >= 0 &&
                      (next != m->cfg.pad_id || (!m->arch->encdec && next == m->cfg.eos_id));
            targets[(size_t)b * T + t] = use ? next : MT_IGNORE;
            count += (size_t)use;
        }
    }
    return count;
}

/* Sizes of one batch's activations: encoder stack, decoder stack, logits, losses, lse. */
static size_t acts_layout(mt_model *m, float *base, int B, int T, int S)
{
    size_t BT = (size_t)B * T, off = 0;
    if (m->arch->encdec) off += mt_stack_acts_layout(&m->enc, &m->enc_acts, base, B, S, S, 0);
    off += mt_stack_acts_layout(&m->dec, &m->dec_acts, base ? base + off : NULL, B, T, T, S);
    if (base) {
        m->logits = base + off;
        m->losses = base + off + BT * m->cfg.vocab_size;
        m->lse = m->losses + BT;
    }
    return off + BT * ((size_t)m->cfg.vocab_size + 2);
}

/* Grow a backend allocation to at least bytes (contents are not kept). */
static int ensure(const mt_backend *be, void **p, size_t *cap, size_t bytes)
{
    if (*cap >= bytes && *p) return 0;
    be->free(*p);
    *p = be->alloc(bytes);
    *cap = *p ? bytes : 0;
    return *p ? 0 : -1;
}

int mt_model_prepare(mt_model *m, const mt_batch *b)
{
    if (mt_model_check_batch(m, b)) return -1;
    const mt_backend *be = m->be;
    int B = b->B, T = b->T, S = m->arch->encdec ? b->S : 0;
    size_t BT = (size_t)B * T, NS = (size_t)B * S;

    size_t n_acts = acts_layout(m, NULL, B, T, S);
    if (ensure(be, (void **)&m->acts, &m->acts_cap, n_acts * sizeof(float))) return -1;
    acts_layout(m, m->acts, B, T, S);
    m->acts_B = B;
    m->acts_T = T;
    m->acts_S = S;

    /* ids (BT), targets (BT), src (NS), target rows (BT), their targets (BT) as int32, then
     * masks (BT + NS) as bytes */
    size_t io_bytes = (4 * BT + NS) * sizeof(int32_t) + BT + NS;
    if (ensure(be, &m->io, &m->io_cap, io_bytes)) return -1;
    m->d_ids = m->io;
    m->d_targets = m->d_ids + BT;
    m->d_src = m->d_targets + BT;
    m->d_target_rows = m->d_src + NS;
    m->d_row_targets = m->d_target_rows + BT;
    m->d_mask = (uint8_t *)(m->d_row_targets + BT);
    m->d_src_mask = m->d_mask + BT;

    int32_t *targets = mt_xmalloc(2 * BT * sizeof *targets), *rows = targets + BT;
    uint8_t *mask = mt_xmalloc(BT + NS);
    m->n_targets = mt_model_targets(m, targets, b->ids, m->arch->encdec ? NULL : b->n_prompt, B, T);
    /* the rows with a target, then (in targets' place, read no more) their targets */
    size_t n_rows = 0;
    for (size_t i = 0; i < BT; i++)
        if (targets[i] != MT_IGNORE) rows[n_rows++] = (int32_t)i;
    if (n_rows) be->upload(m->d_target_rows, rows, n_rows * sizeof(int32_t));
    /* an encoder-decoder's first decoder input is its start token, a real one even where it is
     * <pad> (Marian's decoder_start_token_id) */
    for (size_t i = 0; i < BT; i++)
        mask[i] = b->ids[i] != m->cfg.pad_id || (m->arch->encdec && i % (size_t)T == 0);
    for (size_t i = 0; i < NS; i++) mask[BT + i] = b->src[i] != m->cfg.pad_id;
    be->upload(m->d_ids, b->ids, BT * sizeof(int32_t));
    be->upload(m->d_targets, targets, BT * sizeof(int32_t));
    for (size_t i = 0; i < n_rows; i++) targets[i] = targets[rows[i]];
    if (n_rows) be->upload(m->d_row_targets, targets, n_rows * sizeof(int32_t));
    if (NS) be->upload(m->d_src, b->src, NS * sizeof(int32_t));
    be->upload(m->d_mask, mask, BT + NS);
    free(targets);
    free(mask);
    return 0;
}

void mt_model_project(const mt_model *m, float *logits, const float *x, size_t BT)
{
    int C = m->cfg.d_model, V = m->cfg.vocab_size;
    const float *bias =
        m->logits_bias_tensor >= 0 ? m->params + m->tensors[m->logits_bias_tensor].offset : NULL;
    if (m->lm_head_tensor < 0) {
        const float *table = m->params + m->tensors[m->embed_tensor].offset;
        mt_tied_logits_forward(m->be, logits, x, table, bias, BT, C, V);
    } else {
        const float *w = m->params + m->tensors[m->lm_head_tensor].offset;
        mt_linear_forward(m->be, logits, x, w, bias, BT, C, V);
    }
}

/* The decoder stack's output of the last forward. */
static const float *decoder_output(const mt_model *m)
{
    const mt_stack *s = &m->dec;
    return s->final_norm_tensor >= 0 ? m->dec_acts.fn_out : m->dec_acts.xs[s->n_units];
}

const float *mt_model_run_stacks(mt_model *m, const mt_step_opts *opts)
{
    int B = m->acts_B, T = m->acts_T, S = m->acts_S;
    const float *mem = NULL;
    if (m->arch->encdec) {
        mt_dropout drop = mt_stack_dropout(&m->enc, -1, 0, opts, m->cfg.dropout);
        mt_stack_embed(m, &m->enc, &m->enc_acts, m->d_src, B, S, 0, &drop);
        mt_pass enc = {.B = B, .T = S, .mask = m->d_src_mask, .opts = opts};
        mem = mt_stack_forward(m, &m->enc, &m->enc_acts, &enc);
    }
    mt_dropout drop = mt_stack_dropout(&m->dec, -1, 0, opts, m->cfg.dropout);
    mt_stack_embed(m, &m->dec, &m->dec_acts, m->d_ids, B, T, 0, &drop);
    mt_pass dec = {.B = B,
                   .T = T,
                   .S = S,
                   .mem = mem,
                   .mask = m->d_mask,
                   .mem_mask = m->d_src_mask,
                   .opts = opts};
    return mt_stack_forward(m, &m->dec, &m->dec_acts, &dec);
}

double mt_model_run_forward(mt_model *m, const mt_step_opts *opts, int want_loss)
{
    size_t BT = (size_t)m->acts_B * m->acts_T;
    mt_model_project(m, m->logits, mt_model_run_stacks(m, opts), BT);
    if (!want_loss) return 0.0;
    float smoothing = opts ? opts->label_smoothing : 0.0f;
    mt_loss_call loss = {
        .BT = BT, .V = m->cfg.vocab_size, .ignore_index = MT_IGNORE, .smoothing = smoothing};
    return mt_cross_entropy_forward(m->be, m->losses, m->lse, m->logits, m->d_targets, &loss);
}

/* Backward of the embeddings of one stack: dx (B, T, C) through dropout into the table. */
static void embed_backward(mt_model *m, const mt_stack *s, float *dx, float *tmp,
                           const int32_t *ids, int B, int T, const mt_step_opts *opts)
{
    const mt_backend *be = m->be;
    int embed = s->embed_tensor >= 0 ? s->embed_tensor : m->embed_tensor;
    float *dtable = m->grads + m->tensors[embed].offset;
    mt_dropout drop = mt_stack_dropout(s, -1, 0, opts, m->cfg.dropout);
    const float *d = dx;
    if (drop.p > 0.0f) { /* dropout's backward into zeros is its forward on the gradient */
        mt_dropout_forward(be, tmp, dx, (size_t)B, (size_t)T * s->C, &drop);
        d = tmp;
    }
    mt_embedding_backward(be, dtable, d, ids, (size_t)B * T, s->C, m->embed_scale);
}

/* Rows of logits one chunk of training's loss holds: about 8 MB of them, enough rows that the
 * chunk's three products stay efficient (the weight gradient's inner size is the chunk's rows). */
#define LOSS_CHUNK_FLOATS ((size_t)1 << 21)

static size_t loss_chunk(const mt_model *m)
{
    size_t chunk = m->loss_chunk_rows > 0 ? (size_t)m->loss_chunk_rows
                                          : LOSS_CHUNK_FLOATS / (size_t)m->cfg.vocab_size;
    return chunk < 1 ? 1 : chunk;
}

/* The loss of the decoder's output and its gradient into dx (BT, C) and the output
 * projection's weight gradient (docs/models.md §10.7). Only the n_targets rows that have a
 * target count (a decoder-only batch's prompt and padding predict nothing: about half its rows
 * at the demo's batch), so those rows alone are gathered, one chunk at a time, into xg
 * (chunk, C), and their input gradient comes back through dxg (chunk, C):
 *   logits_c = xg_c W^T (+ bias) ; losses_c, logits_c <- scale (p - q) in place ;
 *   dxg_c = logits_c W, added to dx's rows ; dW += logits_c^T xg_c
 * A row without a target has p - q = 0 and would add nothing to either gradient. m->logits
 * holds the chunk. Returns the loss sum. */
static double loss_backward_chunked(mt_model *m, const mt_step_opts *opts, float scale, float *dx,
                                    float *xg, float *dxg)
{
    const mt_backend *be = m->be;
    int C = m->cfg.d_model, V = m->cfg.vocab_size;
    size_t BT = (size_t)m->acts_B * m->acts_T, n = m->n_targets, chunk = loss_chunk(m);
    float smoothing = opts ? opts->label_smoothing : 0.0f;
    const float *x = decoder_output(m);
    int tied = m->lm_head_tensor < 0;
    int weight = tied ? m->embed_tensor : m->lm_head_tensor;
    const float *w = m->params + m->tensors[weight].offset;
    float *dw = m->grads + m->tensors[weight].offset;
    be->memzero(dx, BT * C * sizeof(float));
    for (size_t r0 = 0; r0 < n; r0 += chunk) {
        size_t rows = n - r0 < chunk ? n - r0 : chunk;
        const int32_t *at = m->d_target_rows + r0;
        be->embedding_forward(xg, at, x, rows, C, 1.0f); /* the rows, copied */
        mt_model_project(m, m->logits, xg, rows);
        mt_cross_entropy_fused(be, m->losses + r0, m->logits, m->d_row_targets + r0,
                               &(mt_loss_call){rows, V, MT_IGNORE, smoothing, scale});
        be->memzero(dxg, rows * C * sizeof(float));
        if (tied)
            mt_tied_logits_backward(be, &(mt_weight_grads){dxg, dw, NULL}, m->logits, xg, w, rows,
                                    C, V);
        else
            mt_linear_backward(be, &(mt_weight_grads){dxg, dw, NULL}, m->logits, xg, w, rows, C, V);
        be->embedding_backward(dx, dxg, at, rows, C, 1.0f); /* dx's rows (zero) += dxg */
    }
    return be->sum(m->losses, n);
}

int mt_model_run_backward(mt_model *m, const mt_step_opts *opts, float scale, double *loss_sum)
{
    const mt_backend *be = m->be;
    int B = m->acts_B, T = m->acts_T, S = m->acts_S, C = m->cfg.d_model;
    size_t BT = (size_t)B * T, NS = (size_t)B * S;

    /* scratch: ddec_out (BT, C), dx (BT, C), dmem (NS, C), dxs (NS, C), then the units' or
     * the loss's two chunks of gathered rows (its xg and dxg, before the units run) */
    size_t units = mt_stack_scratch_count(&m->dec, B, T, S);
    if (m->arch->encdec) {
        size_t e = mt_stack_scratch_count(&m->enc, B, S, 0);
        if (e > units) units = e;
    }
    size_t chunk = loss_chunk(m) < m->n_targets ? loss_chunk(m) : m->n_targets;
    if (2 * chunk * C > units) units = 2 * chunk * C;
    size_t n = 2 * BT * C + 2 * NS * C + units;
    if (ensure(be, (void **)&m->scratch, &m->scratch_cap, n * sizeof(float)))
        return mt_error_context("%s model backward", m->arch->name);
    float *ddec_out = m->scratch, *dx = ddec_out + BT * C;
    float *dmem = dx + BT * C, *dxs = dmem + NS * C, *unit_scratch = dxs + NS * C;

    *loss_sum =
        loss_backward_chunked(m, opts, scale, ddec_out, unit_scratch, unit_scratch + chunk * C);

    const float *mem = NULL;
    if (m->arch->encdec) {
        const mt_stack *e = &m->enc;
        mem = e->final_norm_tensor >= 0 ? m->enc_acts.fn_out : m->enc_acts.xs[e->n_units];
        be->memzero(dmem, NS * C * sizeof(float));
    }
    mt_pass dec = {.B = B,
                   .T = T,
                   .S = S,
                   .mem = mem,
                   .dmem = dmem,
                   .mask = m->d_mask,
                   .mem_mask = m->d_src_mask,
                   .opts = opts};
    mt_stack_backward(m, &m->dec, &m->dec_acts, dx, ddec_out, &dec, unit_scratch);
    embed_backward(m, &m->dec, dx, ddec_out, m->d_ids, B, T, opts);
    if (m->arch->encdec) {
        mt_pass enc = {.B = B, .T = S, .mask = m->d_src_mask, .opts = opts};
        mt_stack_backward(m, &m->enc, &m->enc_acts, dxs, dmem, &enc, unit_scratch);
        embed_backward(m, &m->enc, dxs, dmem, m->d_src, B, S, opts);
    }
    return 0;
}

int mt_model_forward(mt_model *m, const mt_batch *b, float *logits)
{
    if (mt_model_prepare(m, b)) return -1;
    mt_model_run_forward(m, NULL, 0);
    size_t n = (size_t)b->B * b->T * m->cfg.vocab_size;
    m->be->download(logits, m->logits, n * sizeof(float));
    return 0;
}

int mt_model_loss(mt_model *m, const mt_batch *b, const mt_step_opts *opts, double *loss,
                  size_t *n_tokens)
{
    if (mt_model_prepare(m, b)) return -1;
    double sum = mt_model_run_forward(m, opts, 1);
    if (n_tokens) *n_tokens = m->n_targets;
    if (loss) *loss = m->n_targets ? sum / (double)m->n_targets : 0.0;
    return 0;
}

int mt_model_forward_backward(mt_model *m, const mt_batch *b, const mt_step_opts *opts,
                              float grad_scale, double *loss, size_t *n_tokens)
{
    if (m->precision != MT_PRECISION_FP32)
        return mt_error("training needs fp32 weights; this model runs in %s",
                        mt_precision_name(m->precision));
    mt_model_drop_fp32_panels(m);
    if (!mt_model_grads(m)) return -1;
    if (mt_model_prepare(m, b)) return -1;
    if (n_tokens) *n_tokens = m->n_targets;
    if (loss) *loss = 0.0;
    if (m->n_targets == 0) return 0;
    float scale = grad_scale != 0.0f ? grad_scale : 1.0f / (float)m->n_targets;
    mt_model_run_stacks(m, opts);
    double sum;
    if (mt_model_run_backward(m, opts, scale, &sum)) return -1;
    if (loss) *loss = sum / (double)m->n_targets;
    return 0;
}
