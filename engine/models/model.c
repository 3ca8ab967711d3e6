/* The generic model handle: tensor table, one parameter allocation, the units' pointers into
 * it, creation with fresh parameters and facts. Gradients and the AdamW step are in
 * model_train.c. */
#include "models/model_internal.h"

#include <stdlib.h>
#include <string.h>

#include "mtlab/error.h"

/* The layer tables must lay out exactly the floats their point functions walk. */
static int check_units(const mt_model *m, const mt_stack *s)
{
    for (int i = 0; i < s->n_units; i++) {
        const mt_unit *u = &s->units[i];
        size_t table = 0;
        for (int t = u->first_tensor; t < u->norm_tensor; t++) table += m->tensors[t].numel;
        if (table != mt_unit_params_count(u->kind, &u->cfg))
            return mt_error("%s model: unit %d: tensor table holds %zu floats, layer expects %zu",
                            m->arch->name, i, table, mt_unit_params_count(u->kind, &u->cfg));
    }
    return 0;
}

/* The model's tables (tensors, stacks, units) for cfg, without any backend memory. */
static mt_model *build_tables(const mt_model_config *cfg, const mt_backend *be)
{
    if (mt_model_config_check(cfg)) return NULL;
    const mt_arch *arch = mt_arch_find(cfg->arch);
    mt_model *m = mt_xcalloc(1, sizeof *m);
    m->cfg = *cfg;
    m->arch = arch;
    m->be = m->base_be = be;
    m->decode_workspace_limit = MT_DECODE_WORKSPACE_LIMIT;
    m->lm_head_tensor = -1;
    m->logits_bias_tensor = -1;
    m->embed_scale = 1.0f;
    m->enc.final_norm_tensor = -1;
    m->dec.final_norm_tensor = -1;
    m->enc.embed_tensor = -1;
    m->dec.embed_tensor = -1;
    m->enc.C = m->dec.C = cfg->d_model;
    m->dec.site_base = 1u << 20; /* the encoder's dropout sites stay below */
    m->dec.left_padded = !arch->encdec; /* mt_batch: decoder-only rows are left padded */
    if (arch->build(m) || check_units(m, &m->enc) || check_units(m, &m->dec)) {
        mt_model_free(m);
        return NULL;
    }
    return m;
}

size_t mt_model_config_param_count(const mt_model_config *cfg)
{
    mt_model *m = build_tables(cfg, mt_backend_cpu());
    size_t n = m ? mt_model_param_count(m) : 0;
    mt_model_free(m);
    return n;
}

size_t mt_model_config_decode_state_bytes(const mt_model_config *cfg, int max_B, int max_T,
                                          int max_S)
{
    mt_model *m = build_tables(cfg, mt_backend_cpu());
    size_t n = m ? mt_model_decode_state_bytes(m, max_B, max_T, max_S) : 0;
    mt_model_free(m);
    return n;
}

static void bind_rope_stack(mt_stack *s, const float *freq)
{
    for (int i = 0; i < s->n_units; i++) {
        mt_unit *u = &s->units[i];
        if ((u->kind == MT_UNIT_SELF_ATTN || u->kind == MT_UNIT_CROSS_ATTN) && u->cfg.attn.rope_dim)
            u->cfg.attn.rope_inv_freq = freq;
        else if (u->kind == MT_UNIT_RETENTION) u->cfg.ret.inv_freq = freq;
    }
}

/* The rotary angles on the backend, pointed at by every unit that rotates. */
static int bind_rope(mt_model *m)
{
    size_t half = (size_t)m->rope_dim / 2;
    m->rope_freq = m->be->alloc(half * sizeof(float));
    if (!m->rope_freq) return -1;
    float *host = mt_xmalloc(half * sizeof(float));
    mt_rope_inv_freq(host, m->rope_dim, m->rope_base, m->rope_kind);
    m->be->upload(m->rope_freq, host, half * sizeof(float));
    free(host);
    bind_rope_stack(&m->enc, m->rope_freq);
    bind_rope_stack(&m->dec, m->rope_freq);
    return 0;
}

mt_model *mt_model_new(const mt_model_config *cfg, const mt_backend *be)
{
    mt_model *m = build_tables(cfg, be);
    if (!m) return NULL;
    m->params = be->alloc(m->n_floats * sizeof(float));
    if (!m->params) {
        mt_error_context("%s model with %zu parameters", m->arch->name, m->n_floats);
        mt_model_free(m);
        return NULL;
    }
    mt_model_bind_stack(m, &m->enc, m->params, 0);
    mt_model_bind_stack(m, &m->dec, m->params, 0);
    if (m->enc.positions || m->dec.positions) {
        m->pos = be->alloc((size_t)cfg->max_positions * cfg->d_model * sizeof(float));
        if (!m->pos) {
            mt_model_free(m);
            return NULL;
        }
        mt_sinusoid_table(be, m->pos, cfg->max_positions, cfg->d_model);
    }
    if (m->rope_dim > 0 && bind_rope(m)) {
        mt_model_free(m);
        return NULL;
    }
    return m;
}

mt_model *mt_model_create(const mt_model_config *cfg, const mt_backend *be, uint64_t seed)
{
    mt_model *m = mt_model_new(cfg, be);
    if (!m) return NULL;
    float *host = mt_xcalloc(m->n_floats, sizeof(float));
    m->arch->init(m, host, seed);
    be->upload(m->params, host, m->n_floats * sizeof(float));
    free(host);
    return m;
}

static void free_stack(mt_stack *s) { free(s->units); }

void mt_model_free(mt_model *m)
{
    if (!m) return;
    mt_model_decode_workspace_free(m);
    mt_qweights_free(m->qweights);
    const mt_backend *be = m->base_be;
    be->free(m->params);
    be->free(m->grads);
    be->free(m->adam);
    be->free(m->decay_mask);
    be->free(m->pos);
    be->free(m->rope_freq);
    be->free(m->acts);
    be->free(m->scratch);
    be->free(m->io);
    mt_stack_acts_free(&m->enc_acts);
    mt_stack_acts_free(&m->dec_acts);
    free_stack(&m->enc);
    free_stack(&m->dec);
    free(m->tensors);
    free(m->tokenizer_path);
    free(m);
}

const mt_model_config *mt_model_get_config(const mt_model *m) { return &m->cfg; }
const mt_backend *mt_model_backend(const mt_model *m) { return m->be; }
int mt_model_is_encdec(const mt_model *m) { return m->arch->encdec; }

int mt_model_config_is_encdec(const mt_model_config *c)
{
    const mt_arch *a = mt_arch_find(c->arch);
    return a ? a->encdec : 0;
}

size_t mt_model_param_count(const mt_model *m)
{
    size_t n = 0;
    for (int i = 0; i < m->n_tensors; i++)
        if (!m->tensors[i].buffer) n += m->tensors[i].numel;
    return n;
}

int mt_model_tensor_count(const mt_model *m) { return m->n_tensors; }

int mt_model_tensor(const mt_model *m, int i, mt_model_tensor_info *info)
{
    if (i < 0 || i >= m->n_tensors) return mt_error("tensor index %d out of range", i);
    const mt_named_tensor *t = &m->tensors[i];
    info->name = t->name;
    info->ndim = t->ndim;
    memcpy(info->shape, t->shape, sizeof info->shape);
    info->offset = t->offset;
    info->numel = t->numel;
    info->trainable = !t->buffer;
    return 0;
}

int mt_model_find_tensor(const mt_model *m, const char *name)
{
    for (int i = 0; i < m->n_tensors; i++)
        if (!strcmp(m->tensors[i].name, name)) return i;
    return -1;
}

size_t mt_model_param_block_size(const mt_model *m) { return m->n_floats; }
float *mt_model_params(mt_model *m) { return m->params; }
