/* Building a model's tables, for the architecture files: tensors with their Hugging Face
 * names, the token embedding and output projection, residual units with their norms, final
 * norms, and the first values of the norm gains and the embeddings. Below the architecture
 * files; it knows none of them. */
#include "models/model_internal.h"

#include <stdio.h>
#include <string.h>

#include "mtlab/error.h"

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

mt_unit *mt_model_add_unit(mt_model *m, mt_stack *s, mt_unit_kind kind, const mt_unit_config *cfg,
                           const char *prefix, const mt_unit_norm *norm)
{
    if (s->n_units == s->cap_units) {
        s->cap_units = s->cap_units ? 2 * s->cap_units : 16;
        s->units = mt_xrealloc(s->units, (size_t)s->cap_units * sizeof *s->units);
    }
    mt_unit *u = &s->units[s->n_units++];
    memset(u, 0, sizeof *u);
    u->kind = kind;
    u->norm = norm->kind;
    u->post_norm = norm->post;
    u->parallel = norm->parallel;
    u->eps = norm->eps;
    u->cfg = *cfg;
    mt_tensor_spec specs[16];
    int n = mt_unit_tensors(kind, cfg, specs);
    u->first_tensor = m->n_tensors;
    for (int i = 0; i < n; i++) {
        char full[MT_NAME_MAX];
        snprintf(full, sizeof full, "%s%s", prefix, specs[i].name);
        mt_model_add_tensor(m, full, specs[i].ndim, specs[i].shape, specs[i].decay, 0);
    }
    u->norm_tensor = add_norm_tensors(m, norm->kind, norm->name, mt_unit_width(u));
    return u;
}

void mt_model_add_final_norm(mt_model *m, mt_stack *s, mt_norm_kind norm, const char *name,
                             float eps)
{
    s->final_norm = norm;
    s->final_eps = eps;
    s->final_norm_tensor = add_norm_tensors(m, norm, name, s->C);
}

void mt_model_add_decoder_layers(mt_model *m, const mt_decoder_layers *d)
{
    char prefix[MT_NAME_MAX], norm[MT_NAME_MAX];
    mt_unit_norm pre = {.kind = d->norm_kind, .name = norm, .eps = d->eps};
    for (int l = 0; l < m->cfg.n_layers; l++)
        for (int k = 0; k < 2; k++) {
            snprintf(prefix, sizeof prefix, "%s.%d.%s", d->layers, l, d->unit[k]);
            snprintf(norm, sizeof norm, "%s.%d.%s", d->layers, l, d->norm[k]);
            pre.parallel = k == 1 && d->parallel;
            mt_model_add_unit(m, &m->dec, d->kind[k], d->cfg[k], prefix, &pre)->layer = l;
        }
}

float *mt_model_host_tensor(const mt_model *m, float *host, int i)
{
    return host + m->tensors[i].offset;
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

void mt_model_init_hf_normal(mt_model *m, float *host, uint64_t seed)
{
    float std = m->cfg.init_std;
    mt_model_init_embeddings(m, host, seed, 0, std);
    mt_rng r;
    for (int i = 0; i < m->dec.n_units; i++) {
        const mt_unit *u = &m->dec.units[i];
        mt_rng_init(&r, seed, 2 + (uint64_t)i);
        for (int t = u->first_tensor; t < u->norm_tensor; t++)
            if (m->tensors[t].ndim == 2)
                mt_init_normal(&r, mt_model_host_tensor(m, host, t), m->tensors[t].numel, std);
    }
    mt_model_init_norms(m, host);
}

void mt_model_bind_stack(mt_model *m, mt_stack *s, float *block, int grads)
{
    for (int i = 0; i < s->n_units; i++) {
        mt_unit *u = &s->units[i];
        float *first = block + m->tensors[u->first_tensor].offset;
        float *nw = block + m->tensors[u->norm_tensor].offset;
        float *nb = u->norm == MT_NORM_LAYER ? block + m->tensors[u->norm_tensor + 1].offset : NULL;
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
