/* The generic model handle: tensor table, one parameter allocation, the units' pointers into
 * it, creation with fresh parameters, facts, gradients and the AdamW step. */
#include "models/model_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mtlab/error.h"

static const mt_arch *const archs[] = {
    &mt_arch_transformer, &mt_arch_mamba,       &mt_arch_llama,        &mt_arch_retnet,
    &mt_arch_mamba_mha,   &mt_arch_mamba_local, &mt_arch_mamba_encdec,
};
#define N_ARCHS (sizeof archs / sizeof archs[0])

const mt_arch *mt_arch_find(const char *name)
{
    for (size_t i = 0; i < N_ARCHS; i++)
        if (!strcmp(archs[i]->name, name)) return archs[i];
    return NULL;
}

const mt_arch *mt_arch_find_hf(const char *model_type)
{
    for (size_t i = 0; i < N_ARCHS; i++)
        if (!strcmp(archs[i]->model_type, model_type)) return archs[i];
    return NULL;
}

const char *mt_arch_names(void)
{
    return "transformer, mamba, transformer++, retnet, mamba-mha, mamba-local, mamba-encdec";
}

int mt_model_arch_known(const char *arch) { return arch && mt_arch_find(arch) != NULL; }

int mt_model_add_tensor(mt_model *m, const char *name, int ndim, const int *shape, int decay,
                        int buffer)
{
    if (m->n_tensors == m->cap_tensors) {
        m->cap_tensors = m->cap_tensors ? 2 * m->cap_tensors : 64;
        m->tensors = mt_xrealloc(m->tensors, (size_t)m->cap_tensors * sizeof *m->tensors);
    }
    mt_named_tensor *t = &m->tensors[m->n_tensors];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    t->ndim = ndim;
    t->numel = 1;
    for (int d = 0; d < ndim; d++) {
        t->shape[d] = shape[d];
        t->numel *= (size_t)shape[d];
    }
    t->offset = m->n_floats;
    t->decay = decay;
    t->buffer = buffer;
    m->n_floats += t->numel;
    return m->n_tensors++;
}

void mt_model_add_embeddings(mt_model *m, const char *embed_name, const char *lm_head_name)
{
    int shape[2] = {m->cfg.vocab_size, m->cfg.d_model};
    m->embed_tensor = mt_model_add_tensor(m, embed_name, 2, shape, 1, 0);
    if (!m->cfg.tie_embeddings)
        m->lm_head_tensor = mt_model_add_tensor(m, lm_head_name, 2, shape, 1, 0);
}

static int add_norm_tensors(mt_model *m, mt_norm_kind norm, const char *name, int C)
{
    char full[MT_NAME_MAX];
    snprintf(full, sizeof full, "%s.weight", name);
    int first = mt_model_add_tensor(m, full, 1, &C, 0, 0);
    if (norm == MT_NORM_LAYER) {
        snprintf(full, sizeof full, "%s.bias", name);
        mt_model_add_tensor(m, full, 1, &C, 0, 0);
    }
    return first;
}

mt_unit *mt_model_add_unit(mt_model *m, mt_stack *s, mt_unit_kind kind,
                           const mt_unit_config *cfg, const char *prefix, mt_norm_kind norm,
                           const char *norm_name, int post_norm, float eps)
{
    if (s->n_units == s->cap_units) {
        s->cap_units = s->cap_units ? 2 * s->cap_units : 16;
        s->units = mt_xrealloc(s->units, (size_t)s->cap_units * sizeof *s->units);
    }
    mt_unit *u = &s->units[s->n_units++];
    memset(u, 0, sizeof *u);
    u->kind = kind;
    u->norm = norm;
    u->post_norm = post_norm;
    u->eps = eps;
    u->cfg = *cfg;
    mt_tensor_spec specs[16];
    int n = mt_unit_tensors(kind, cfg, specs);
    u->first_tensor = m->n_tensors;
    for (int i = 0; i < n; i++) {
        char full[MT_NAME_MAX];
        snprintf(full, sizeof full, "%s%s", prefix, specs[i].name);
        mt_model_add_tensor(m, full, specs[i].ndim, specs[i].shape, specs[i].decay, 0);
    }
    u->norm_tensor = add_norm_tensors(m, norm, norm_name, mt_unit_width(u));
    return u;
}

void mt_model_add_final_norm(mt_model *m, mt_stack *s, mt_norm_kind norm, const char *name,
                             float eps)
{
    s->final_norm = norm;
    s->final_eps = eps;
    s->final_norm_tensor = add_norm_tensors(m, norm, name, s->C);
}

float *mt_model_host_tensor(const mt_model *m, float *host, int i)
{
    return host + m->tensors[i].offset;
}

/* Point the units' parameter (or gradient) pointers into block. */
static void bind_stack(mt_model *m, mt_stack *s, float *block, int grads)
{
    for (int i = 0; i < s->n_units; i++) {
        mt_unit *u = &s->units[i];
        float *first = block + m->tensors[u->first_tensor].offset;
        float *nw = block + m->tensors[u->norm_tensor].offset;
        float *nb = u->norm == MT_NORM_LAYER ? block + m->tensors[u->norm_tensor + 1].offset
                                             : NULL;
        mt_unit_params_point(u->kind, &u->cfg, grads ? &u->g : &u->p, first);
        if (grads) {
            u->gnorm_w = nw;
            u->gnorm_b = nb;
        } else {
            u->norm_w = nw;
            u->norm_b = nb;
        }
    }
    if (s->final_norm_tensor >= 0) {
        float *w = block + m->tensors[s->final_norm_tensor].offset;
        float *b = s->final_norm == MT_NORM_LAYER
                       ? block + m->tensors[s->final_norm_tensor + 1].offset
                       : NULL;
        if (grads) {
            s->gfn_w = w;
            s->gfn_b = b;
        } else {
            s->fn_w = w;
            s->fn_b = b;
        }
    }
}

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
    m->be = be;
    m->lm_head_tensor = -1;
    m->logits_bias_tensor = -1;
    m->embed_scale = 1.0f;
    m->enc.final_norm_tensor = -1;
    m->dec.final_norm_tensor = -1;
    m->enc.embed_tensor = -1;
    m->dec.embed_tensor = -1;
    m->enc.C = m->dec.C = cfg->d_model;
    m->dec.site_base = 1u << 20; /* the encoder's dropout sites stay below */
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

size_t mt_model_config_decode_state_bytes(const mt_model_config *cfg, int max_B, int max_T, int max_S)
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
        else if (u->kind == MT_UNIT_RETENTION)
            u->cfg.ret.inv_freq = freq;
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
    bind_stack(m, &m->enc, m->params, 0);
    bind_stack(m, &m->dec, m->params, 0);
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

static void init_stack_norms(const mt_model *m, const mt_stack *s, float *host)
{
    for (int i = 0; i < s->n_units; i++) {
        const mt_unit *u = &s->units[i];
        mt_init_fill(mt_model_host_tensor(m, host, u->norm_tensor), (size_t)s->C, 1.0f);
    }
    if (s->final_norm_tensor >= 0)
        mt_init_fill(mt_model_host_tensor(m, host, s->final_norm_tensor), (size_t)s->C, 1.0f);
}

void mt_model_init_norms(const mt_model *m, float *host)
{
    init_stack_norms(m, &m->enc, host);
    init_stack_norms(m, &m->dec, host);
}

void mt_model_init_embeddings(const mt_model *m, float *host, uint64_t seed, uint64_t stream,
                              float std)
{
    size_t VC = (size_t)m->cfg.vocab_size * m->cfg.d_model;
    mt_rng r;
    mt_rng_init(&r, seed, stream);
    mt_init_normal(&r, mt_model_host_tensor(m, host, m->embed_tensor), VC, std);
    if (m->lm_head_tensor >= 0) {
        mt_rng_init(&r, seed, stream + 1);
        mt_init_normal(&r, mt_model_host_tensor(m, host, m->lm_head_tensor), VC, std);
    }
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
    const mt_backend *be = m->be;
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

float *mt_model_grads(mt_model *m)
{
    if (!m->grads) {
        m->grads = m->be->alloc(m->n_floats * sizeof(float));
        if (!m->grads) return NULL;
        bind_stack(m, &m->enc, m->grads, 1);
        bind_stack(m, &m->dec, m->grads, 1);
    }
    return m->grads;
}

void mt_model_zero_grad(mt_model *m)
{
    if (m->grads) m->be->memzero(m->grads, m->n_floats * sizeof(float));
}

float *mt_model_adam_moments(mt_model *m, float **second)
{
    const mt_backend *be = m->be;
    if (!m->adam) {
        m->adam = be->alloc(2 * m->n_floats * sizeof(float));
        m->decay_mask = be->alloc(m->n_floats);
        if (!m->adam || !m->decay_mask) return NULL;
        uint8_t *mask = mt_xcalloc(m->n_floats, 1);
        for (int i = 0; i < m->n_tensors; i++)
            if (m->tensors[i].decay && !m->tensors[i].buffer)
                memset(mask + m->tensors[i].offset, 1, m->tensors[i].numel);
        be->upload(m->decay_mask, mask, m->n_floats);
        free(mask);
    }
    if (second) *second = m->adam + m->n_floats;
    return m->adam;
}

int mt_model_adamw_step(mt_model *m, const mt_adamw_hparams *h, int step)
{
    if (step < 1) return mt_error("AdamW step %d: steps count from 1", step);
    if (!mt_model_grads(m)) return -1;
    const mt_backend *be = m->be;
    if (!mt_model_adam_moments(m, NULL)) return -1;
    be->adamw_step(m->params, m->grads, m->adam, m->adam + m->n_floats, m->decay_mask,
                   m->n_floats, h, step);
    return 0;
}
