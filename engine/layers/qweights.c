/* A model's int8 or bf16 weights by the address of their fp32 matrices (mtlab/layers.h). Entries
 * are kept sorted by address, so a linear layer finds its matrix by binary search: a few
 * comparisons per call against the thousands of multiply-adds it saves. */
#include "mtlab/error.h"
#include "mtlab/layers.h"

#include <stdlib.h>

typedef struct {
    const float *w; /* the fp32 matrix (rows, cols) this entry replaces */
    mt_qmatrix q;
} qweights_entry;

struct mt_qweights {
    const mt_backend *be;
    qweights_entry *e;
    int n, cap;
};

mt_qweights *mt_qweights_new(const mt_backend *be)
{
    mt_qweights *qw = mt_xcalloc(1, sizeof *qw);
    qw->be = be;
    return qw;
}

int mt_qweights_add(mt_qweights *qw, mt_qkind kind, const float *w, int rows, int cols)
{
    if (!qw->be->qmatrix_make && kind == MT_QMATRIX_F32P) return 1;
    if (!qw->be->qmatrix_make)
        return mt_error("the %s backend has no %s linear layers (use precision fp32)", qw->be->name,
                        kind == MT_QMATRIX_BF16 ? "bf16" : "int8");
    mt_qmatrix q;
    int rc = qw->be->qmatrix_make(&q, kind, w, rows, cols);
    if (rc != 0) return rc < 0 ? -1 : 1;
    if (qw->n == qw->cap) {
        qw->cap = qw->cap ? 2 * qw->cap : 32;
        qw->e = mt_xrealloc(qw->e, (size_t)qw->cap * sizeof *qw->e);
    }
    int i = qw->n++;
    for (; i > 0 && qw->e[i - 1].w > w; i--) qw->e[i] = qw->e[i - 1];
    qw->e[i] = (qweights_entry){.w = w, .q = q};
    return 0;
}

const mt_qmatrix *mt_qweights_find(const mt_qweights *qw, const float *w, int cols, int *row0)
{
    int lo = 0, hi = qw->n;
    while (hi - lo > 1) {
        int mid = (lo + hi) / 2;
        if (qw->e[mid].w <= w) lo = mid;
        else hi = mid;
    }
    if (qw->n == 0 || qw->e[lo].w > w) return NULL;
    const qweights_entry *e = &qw->e[lo];
    size_t off = (size_t)(w - e->w);
    if (e->q.cols != cols || off % (size_t)cols || off / (size_t)cols >= (size_t)e->q.rows)
        return NULL;
    *row0 = (int)(off / (size_t)cols);
    return &e->q;
}

size_t mt_qweights_bytes(const mt_qweights *qw)
{
    size_t bytes = 0;
    for (int i = 0; i < qw->n; i++) {
        const mt_qmatrix *q = &qw->e[i].q;
        if (q->kind == MT_QMATRIX_F32P) /* whole panels of 16 channels */
            bytes += (size_t)(q->rows + 15) / 16 * 16 * (size_t)q->cols * sizeof(float);
        else
            bytes += (size_t)q->rows * (q->kind == MT_QMATRIX_BF16
                                            ? (size_t)q->ld * sizeof(uint16_t)
                                            : (size_t)q->ld + sizeof(float) + sizeof(int32_t));
    }
    return bytes;
}

int mt_qweights_count(const mt_qweights *qw) { return qw->n; }

void mt_qweights_free(mt_qweights *qw)
{
    if (!qw) return;
    for (int i = 0; i < qw->n; i++) qw->be->qmatrix_free(&qw->e[i].q);
    free(qw->e);
    free(qw);
}
