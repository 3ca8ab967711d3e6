/* Bundles in and out: config.json through the architecture's key mapping, every tensor by its
 * Hugging Face name with its shape checked, and the same names and keys written back so that
 * `transformers` loads what mtlab saves. */
#include "models/model_internal.h"

#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "mtlab/error.h"

/* The architecture a config.json describes: "mtlab": {"architecture"} first, then the
 * Hugging Face model_type. */
static const mt_arch *arch_of(const mt_config *c)
{
    const mt_config *x = mt_config_object(c, "mtlab");
    const char *name = x ? mt_config_string_or(x, "architecture", NULL) : NULL;
    if (name) {
        const mt_arch *a = mt_arch_find(name);
        if (!a)
            mt_error("%s: mtlab.architecture '%s' is not one of %s", mt_config_name(c), name,
                     mt_arch_names());
        return a;
    }
    const char *type = mt_config_string_or(c, "model_type", NULL);
    if (!type) {
        mt_error("%s: no model_type (and no mtlab.architecture)", mt_config_name(c));
        return NULL;
    }
    const mt_arch *a = mt_arch_find_hf(type);
    if (!a)
        mt_error("%s: model_type '%s' is not supported (%s)", mt_config_name(c), type,
                 mt_arch_model_types());
    return a;
}

/* The file's name for tensor t: its own, or an alias the architecture accepts. */
static const char *file_name(const mt_model *m, const mt_safetensors *st, const char *name)
{
    if (mt_st_find(st, name)) return name;
    for (const char *const(*a)[2] = m->arch->aliases; a && (*a)[0]; a++)
        if (!strcmp((*a)[0], name) && mt_st_find(st, (*a)[1])) return (*a)[1];
    return NULL;
}

static int known_extra(const mt_model *m, const char *name)
{
    for (const char *const *p = m->arch->ignored; p && *p; p++)
        if (!fnmatch(*p, name, 0)) return 1;
    /* a tied output projection saved anyway (older transformers versions do) */
    return m->lm_head_tensor < 0 && !strcmp(name, "lm_head.weight");
}

/* Damaged weights (a NaN or an infinity, e.g. from a diverged run) would load silently and
 * translate to nothing: name the first bad tensor and element instead. */
static int check_finite(const mt_safetensors *st, const char *name, const float *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (isfinite(v[i])) continue;
        return mt_error("%s: tensor '%s' holds %s at element %zu (of %zu): the weights are "
                        "damaged (a diverged training run?)",
                        mt_st_name(st), name,
                        isnan(v[i]) ? "NaN"
                        : v[i] > 0  ? "+inf"
                                    : "-inf",
                        i, n);
    }
    return 0;
}

/* The copies of a shared token embedding a file may hold (arch->embed_copies, left unread)
 * must be that embedding: where they differ the file has an embedding per stack, and reading
 * one for all would run another model. */
static int check_embed_copies(const mt_model *m, const mt_safetensors *st, const float *host)
{
    const mt_named_tensor *e = &m->tensors[m->embed_tensor];
    if (m->enc.embed_tensor >= 0 || !m->arch->embed_copies) return 0;
    const char *read = file_name(m, st, e->name);
    int64_t shape[2] = {e->shape[0], e->shape[1]};
    float *copy = NULL;
    int rc = 0;
    for (const char *const *name = m->arch->embed_copies; *name && !rc; name++) {
        if (!read || !strcmp(*name, read) || !mt_st_find(st, *name)) continue;
        if (!copy) copy = mt_xmalloc(e->numel * sizeof *copy);
        if (mt_st_read_f32(st, *name, 2, shape, copy) ||
            memcmp(copy, host + e->offset, e->numel * sizeof *copy))
            rc = mt_error("%s: tensor '%s' is not the token embedding read from '%s': the file "
                          "has an embedding per stack (share_encoder_decoder_embeddings false "
                          "in config.json?)",
                          mt_st_name(st), *name, read);
    }
    free(copy);
    return rc;
}

/* Read every tensor into host (n_floats), then refuse tensors the model does not know. */
static int read_tensors(const mt_model *m, const mt_safetensors *st, float *host)
{
    int n_file = mt_st_count(st);
    uint8_t *used = mt_xcalloc((size_t)n_file + 1, 1);
    int rc = 0;
    for (int i = 0; i < m->n_tensors && !rc; i++) {
        const mt_named_tensor *t = &m->tensors[i];
        const char *name = file_name(m, st, t->name);
        if (!name) {
            if (t->buffer) continue; /* absent fixed buffers keep their zeros */
            rc = mt_error("%s: missing tensor '%s' (%s model)", mt_st_name(st), t->name,
                          m->arch->name);
            break;
        }
        int64_t shape[3];
        for (int d = 0; d < t->ndim; d++) shape[d] = t->shape[d];
        rc = mt_st_read_f32(st, name, t->ndim, shape, host + t->offset);
        if (!rc) rc = check_finite(st, name, host + t->offset, t->numel);
        for (int j = 0; j < n_file; j++)
            if (!strcmp(mt_st_tensor_at(st, j)->name, name)) used[j] = 1;
    }
    if (!rc) rc = check_embed_copies(m, st, host);
    for (int j = 0; j < n_file && !rc; j++) {
        const char *name = mt_st_tensor_at(st, j)->name;
        if (!used[j] && !known_extra(m, name))
            rc = mt_error("%s: unexpected tensor '%s' (not part of this %s model; is the "
                          "config right?)",
                          mt_st_name(st), name, m->arch->name);
    }
    free(used);
    return rc;
}

mt_model *mt_model_load(const char *dir, const mt_backend *be, unsigned flags)
{
    mt_bundle *bd =
        mt_bundle_open(dir, flags & MT_MODEL_LOAD_NO_TOKENIZER ? MT_BUNDLE_NO_TOKENIZER : 0);
    if (!bd) return NULL;
    const mt_config *c = mt_bundle_config(bd);
    mt_model_config cfg;
    memset(&cfg, 0, sizeof cfg);
    const mt_arch *arch = arch_of(c);
    mt_model *m = NULL;
    if (arch && !mt_arch_config_read(arch, &cfg, c) &&
        (!cfg.hf_generate || !mt_hf_generation_max_length(&cfg, dir, c))) {
        m = mt_model_new(&cfg, be);
        if (!m) mt_error_context("%s", dir);
    }
    if (m) {
        float *host = mt_xcalloc(m->n_floats, sizeof(float));
        if (read_tensors(m, mt_bundle_weights(bd), host)) {
            mt_model_free(m);
            m = NULL;
        } else {
            be->upload(m->params, host, m->n_floats * sizeof(float));
            const char *tok = mt_bundle_tokenizer_path(bd);
            if (tok) m->tokenizer_path = mt_xstrdup(tok);
        }
        free(host);
    }
    mt_bundle_close(bd);
    return m;
}

int mt_model_config_load(const char *dir, mt_model_config *cfg, char *tokenizer, size_t len)
{
    mt_bundle *bd = mt_bundle_open(dir, 0);
    if (!bd) return -1;
    memset(cfg, 0, sizeof *cfg);
    const mt_arch *arch = arch_of(mt_bundle_config(bd));
    int rc = !arch || mt_arch_config_read(arch, cfg, mt_bundle_config(bd)) ? -1 : 0;
    if (rc == 0 && cfg->hf_generate && mt_hf_generation_max_length(cfg, dir, mt_bundle_config(bd)))
        rc = -1;
    if (rc == 0 && mt_model_config_check(cfg) != 0) rc = mt_error_context("%s", dir);
    if (rc == 0 && (size_t)snprintf(tokenizer, len, "%s", mt_bundle_tokenizer_path(bd)) >= len)
        rc = mt_error("%s: the tokenizer's path is longer than %zu bytes", dir, len - 1);
    mt_bundle_close(bd);
    return rc;
}

int mt_model_save(const mt_model *m, const char *dir, const char *tokenizer_model, mt_dtype dtype)
{
    if (dtype != MT_DT_F32 && dtype != MT_DT_F16 && dtype != MT_DT_BF16)
        return mt_error("%s: weights can be saved as F32, F16 or BF16, not %s", dir,
                        mt_dtype_name(dtype));
    mt_config *c = mt_config_new("config.json");
    /* the dtype the weights are stored in, as transformers reads it (every architecture) */
    if (!c || mt_arch_config_write(m->arch, &m->cfg, c) ||
        mt_config_set_string(c, "dtype", mt_dtype_torch_name(dtype))) {
        mt_config_free(c);
        return mt_error_context("%s", dir);
    }
    float *host = mt_xmalloc(m->n_floats * sizeof(float) + 1);
    m->be->download(host, m->params, m->n_floats * sizeof(float));
    int n_copies = 0;
    /* transformers re-ties the copies itself when the output projection is tied; a model whose
     * encoder has an embedding of its own saves each under its name */
    while (!m->cfg.tie_embeddings && m->enc.embed_tensor < 0 && m->arch->embed_copies &&
           m->arch->embed_copies[n_copies])
        n_copies++;
    int n = m->n_tensors + n_copies;
    mt_st_write_tensor *ts = mt_xcalloc((size_t)n, sizeof *ts);
    for (int i = 0; i < n; i++) {
        int from = i < m->n_tensors ? i : m->embed_tensor;
        const mt_named_tensor *t = &m->tensors[from];
        ts[i].name = i < m->n_tensors ? t->name : m->arch->embed_copies[i - m->n_tensors];
        ts[i].dtype = dtype;
        ts[i].ndim = t->ndim;
        for (int d = 0; d < t->ndim; d++) ts[i].shape[d] = t->shape[d];
        ts[i].f32 = host + t->offset;
    }
    /* transformers refuses safetensors files whose metadata lacks the framework */
    mt_st_meta meta[] = {{"format", "pt"}};
    mt_bundle_contents contents = {
        .config = c,
        .tensors = ts,
        .n_tensors = n,
        .metadata = meta,
        .n_metadata = 1,
        .tokenizer_path = tokenizer_model,
    };
    int rc = mt_bundle_write(dir, &contents);
    free(ts);
    free(host);
    mt_config_free(c);
    return rc;
}

int mt_model_save_dtype_parse(const char *name, mt_dtype *out)
{
    static const struct {
        const char *name;
        mt_dtype dtype;
    } names[] = {{"f32", MT_DT_F32}, {"f16", MT_DT_F16}, {"bf16", MT_DT_BF16}};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (!strcasecmp(name, names[i].name)) {
            *out = names[i].dtype;
            return 0;
        }
    return mt_error("unknown dtype '%s' (f32, f16 or bf16)", name);
}

const char *mt_model_tokenizer_path(const mt_model *m) { return m->tokenizer_path; }
