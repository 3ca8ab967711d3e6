/* fp32, int8 or bf16 linear layers for a model (mtlab/model.h, docs/quantization.md §3). In int8
 * or bf16 the model runs on a copy of its backend whose qweights lists the low-precision
 * matrices, so every linear layer of every architecture (prefill and step, the output
 * projection too) finds them through mt_linear_forward, and nothing above the layers changes. */
#include "models/model_internal.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "mtlab/error.h"

int mt_precision_parse(const char *name, mt_precision *out)
{
    if (name && !strcmp(name, "fp32")) *out = MT_PRECISION_FP32;
    else if (name && !strcmp(name, "int8")) *out = MT_PRECISION_INT8;
    else if (name && !strcmp(name, "bf16")) *out = MT_PRECISION_BF16;
    else return mt_error("unknown precision '%s' (fp32, int8 or bf16)", name ? name : "");
    return 0;
}

const char *mt_precision_name(mt_precision p)
{
    return p == MT_PRECISION_INT8 ? "int8" : p == MT_PRECISION_BF16 ? "bf16" : "fp32";
}

/* The matrices linear layers multiply by: every 2-D ".weight" that is not a token embedding,
 * and the embedding the output projection reads when it is tied to it. Norm gains are 1-D;
 * Mamba's A_log, 2-D, is no ".weight"; Marian's positions are no tensor of the block. */
static int is_linear_weight(const mt_model *m, int i)
{
    const mt_named_tensor *t = &m->tensors[i];
    size_t len = strlen(t->name);
    if (t->ndim != 2 || t->buffer || len < 7 || strcmp(t->name + len - 7, ".weight")) return 0;
    if (i == m->enc.embed_tensor || i == m->dec.embed_tensor) return 0;
    if (i == m->embed_tensor) return m->lm_head_tensor < 0;
    return 1;
}

/* 1 when w is a Mamba mixer's in_proj or out_proj and the backend steps Mamba in one pass
 * (mamba_step), which reads the fp32 matrices at every batch (docs/decoding.md §9.3): no use
 * for their panels */
static int read_by_mamba_step(const mt_model *m, const float *w)
{
    if (!m->base_be->mamba_step) return 0;
    const mt_stack *stacks[2] = {&m->enc, &m->dec};
    for (int s = 0; s < 2; s++)
        for (int i = 0; i < stacks[s]->n_units; i++) {
            const mt_unit *u = &stacks[s]->units[i];
            if (u->kind == MT_UNIT_MAMBA &&
                (w == u->p.mamba.in_proj_w || w == u->p.mamba.out_proj_w))
                return 1;
        }
    return 0;
}

/* 1 for the linear weights that get an f32p copy */
static int gets_panels(const mt_model *m, int i)
{
    return is_linear_weight(m, i) && !read_by_mamba_step(m, m->params + m->tensors[i].offset);
}

/* The `kind` copies of every linear weight in *out: 0, 1 when the backend declined (f32p; *out
 * NULL), -1 + mt_error naming the tensor */
static int make_copies(mt_model *m, mt_qkind kind, const char *what, mt_qweights **out)
{
    *out = NULL;
    mt_qweights *qw = mt_qweights_new(m->base_be);
    for (int i = 0; i < m->n_tensors; i++) {
        if (!is_linear_weight(m, i)) continue;
        const mt_named_tensor *t = &m->tensors[i];
        if (kind == MT_QMATRIX_F32P && !gets_panels(m, i)) continue;
        int rc = mt_qweights_add(qw, kind, m->params + t->offset, t->shape[0], t->shape[1]);
        if (rc != 0) {
            mt_qweights_free(qw);
            return rc < 0 ? mt_error_context("%s in %s", t->name, what) : 1;
        }
    }
    *out = qw;
    return 0;
}

/* m->qweights and the backend linear layers run on: qw (NULL: the base backend) */
static void use_copies(mt_model *m, mt_qweights *qw)
{
    mt_qweights_free(m->qweights);
    m->qweights = qw;
    m->precision_be = *m->base_be;
    m->precision_be.qweights = qw;
    m->be = qw ? &m->precision_be : m->base_be;
}

/* What f32p copies would add: the bytes of the fp32 weights that get them */
static size_t panel_bytes(const mt_model *m)
{
    size_t n = 0;
    for (int i = 0; i < m->n_tensors; i++)
        if (gets_panels(m, i))
            n += (size_t)m->tensors[i].shape[0] * (size_t)m->tensors[i].shape[1] * sizeof(float);
    return n;
}

/* Memory the system can give without swapping: MemAvailable (free pages and the page cache
 * it can drop), else the free pages; 0 when neither can be read */
static size_t available_bytes(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    char line[128];
    unsigned long long kb = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) break;
    if (f) fclose(f);
    if (kb) return (size_t)kb * 1024;
    long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? (size_t)pages * (size_t)page : 0;
}

/* In fp32 with panels asked for and none held: make them where the backend does and memory
 * allows */
static int make_panels(mt_model *m)
{
    if (m->precision != MT_PRECISION_FP32 || !m->fp32_panels || m->qweights) return 0;
    size_t avail = available_bytes();
    if (avail && panel_bytes(m) > avail / 2) return 0;
    mt_qweights *qw;
    int rc = make_copies(m, MT_QMATRIX_F32P, "fp32 panels", &qw);
    if (rc < 0) return -1;
    if (qw) use_copies(m, qw);
    return 0;
}

int mt_model_set_precision(mt_model *m, mt_precision p)
{
    if (p == m->precision) return 0;
    if (p != MT_PRECISION_FP32) {
        mt_qkind kind = p == MT_PRECISION_BF16 ? MT_QMATRIX_BF16 : MT_QMATRIX_INT8;
        mt_qweights *qw;
        int rc = make_copies(m, kind, mt_precision_name(p), &qw);
        if (rc != 0)
            return rc < 0 ? -1
                          : mt_error("the %s backend has no %s linear layers", m->base_be->name,
                                     mt_precision_name(p));
        use_copies(m, qw); /* int8 -> bf16: the new copies first, then the old go */
        m->precision = p;
        return 0;
    }
    use_copies(m, NULL);
    m->precision = p;
    return make_panels(m);
}

mt_precision mt_model_precision(const mt_model *m) { return m->precision; }

size_t mt_model_int8_bytes(const mt_model *m)
{
    return m->qweights && m->precision != MT_PRECISION_FP32 ? mt_qweights_bytes(m->qweights) : 0;
}

int mt_model_set_fp32_panels(mt_model *m, int on)
{
    m->fp32_panels = on != 0;
    if (m->precision != MT_PRECISION_FP32) return 0;
    if (!on) {
        use_copies(m, NULL);
        return 0;
    }
    return make_panels(m);
}

size_t mt_model_fp32_panel_bytes(const mt_model *m)
{
    return m->qweights && m->precision == MT_PRECISION_FP32 ? mt_qweights_bytes(m->qweights) : 0;
}

/* Training changes the weights the copies were made from */
void mt_model_drop_fp32_panels(mt_model *m)
{
    m->fp32_panels = 0;
    if (m->precision == MT_PRECISION_FP32 && m->qweights) use_copies(m, NULL);
}
