/* One forward for identical copies (attribution_copies.h). Every saved activation of a stack is
 * an array whose first dimension is the copy (B, ...), laid out one after the other
 * (mt_stack_acts_layout, mt_unit_work_point, the layers' acts_point), so a forward at batch K
 * over the B copies' pointers fills the first K copies' slots of each, and copying slot k into
 * the slots of the copies at point k gives every copy the forward it would have made itself.
 * An array's per-copy size is its distance to the next one over B. Letters: B copies, K
 * points, T positions, C d_model. */
#include "models/attribution_copies.h"

#include <stdlib.h>

#include "mtlab/layers.h"

/* The most arrays of one unit kind's activations (mt_mamba_acts and mt_retention_acts hold 11). */
#define MAX_FIELDS 16

/* The activation arrays of unit u's kind into f (NULL ones left out): their count, or -1 for a
 * kind not listed here. The lists follow mtlab/layers.h's mt_*_acts structs; a field missing
 * here would merge with the one before it (or, the first, be left out) and leave copies stale,
 * which test_attribution's shared-forward test sees for every architecture. */
static int unit_fields(const mt_unit *u, const mt_unit_acts *a, float **f)
{
    int n = 0;
    switch (u->kind) {
    case MT_UNIT_SELF_ATTN:
    case MT_UNIT_CROSS_ATTN:
        f[n++] = a->attn.q, f[n++] = a->attn.k, f[n++] = a->attn.v, f[n++] = a->attn.att;
        f[n++] = a->attn.ctx, f[n++] = a->attn.qkv;
        break;
    case MT_UNIT_FFN: f[n++] = a->ffn.pre, f[n++] = a->ffn.act; break;
    case MT_UNIT_GATED_MLP:
        f[n++] = a->mlp.value, f[n++] = a->mlp.gate, f[n++] = a->mlp.hidden;
        break;
    case MT_UNIT_MAMBA:
        f[n++] = a->mamba.x, f[n++] = a->mamba.z, f[n++] = a->mamba.xc, f[n++] = a->mamba.u;
        f[n++] = a->mamba.dt_low, f[n++] = a->mamba.Bm, f[n++] = a->mamba.Cm;
        f[n++] = a->mamba.dt, f[n++] = a->mamba.y, f[n++] = a->mamba.yg, f[n++] = a->mamba.o;
        break;
    case MT_UNIT_RETENTION:
        f[n++] = a->ret.q, f[n++] = a->ret.k, f[n++] = a->ret.v, f[n++] = a->ret.g;
        f[n++] = a->ret.att, f[n++] = a->ret.r, f[n++] = a->ret.o, f[n++] = a->ret.on;
        f[n++] = a->ret.rstd, f[n++] = a->ret.gated, f[n++] = a->ret.step;
        break;
    default: return -1;
    }
    int kept = 0;
    for (int i = 0; i < n; i++)
        if (f[i]) f[kept++] = f[i];
    return kept;
}

int attr_copies_supported(const mt_stack *s)
{
    float *f[MAX_FIELDS];
    mt_unit_acts none = {0};
    for (int i = 0; i < s->n_units; i++)
        if (unit_fields(&s->units[i], &none, f) < 0) return 0;
    return 1;
}

/* Copies of the first K slots and where they go: slot k into copies first[k] .. first[k+1] - 1. */
typedef struct {
    const int *first;
    int K;
} attr_runs;

/* Array p of copies of n floats each: slot k into its run's copies. From the last run down:
 * run k's copies lie at or after k, so a slot is read before a run below it is written there.
 * Within a run the filled copies double each time (a few calls per array, not one per copy: a
 * device's copies are calls). */
static void expand(const mt_backend *be, float *p, size_t n, const attr_runs *runs)
{
    for (int k = runs->K - 1; k >= 0; k--) {
        size_t at = (size_t)runs->first[k], end = (size_t)runs->first[k + 1];
        if (at != (size_t)k) be->copy(p + at * n, p + (size_t)k * n, n * sizeof(float));
        for (size_t filled = 1; at + filled < end; filled *= 2) {
            size_t more = end - at - filled < filled ? end - at - filled : filled;
            be->copy(p + (at + filled) * n, p + at * n, more * n * sizeof(float));
        }
    }
}

static int by_address(const void *x, const void *y)
{
    const float *a = *(float *const *)x, *b = *(float *const *)y;
    return (a > b) - (a < b);
}

void attr_copies_expand(const mt_backend *be, const mt_stack *s, mt_stack_acts *sa,
                        const int *first, int K, int B, int T)
{
    const attr_runs *runs = &(attr_runs){first, K};
    size_t TC = (size_t)T * s->C;
    for (int i = 0; i <= s->n_units; i++) expand(be, sa->xs[i], TC, runs);
    for (int i = 0; i < s->n_units; i++) {
        const mt_unit *u = &s->units[i];
        mt_unit_work *w = &sa->w[i];
        float *f[MAX_FIELDS + 1];
        int n = unit_fields(u, &w->a, f);
        /* the unit's arrays in the order laid out, w->pre right after the last */
        qsort(f, (size_t)n, sizeof *f, by_address);
        f[n] = w->pre;
        for (int k = 0; k < n; k++) expand(be, f[k], (size_t)(f[k + 1] - f[k]) / B, runs);
        expand(be, w->pre, (size_t)T * mt_unit_width(u), runs);
        expand(be, w->mean, (size_t)T, runs);
        expand(be, w->rstd, (size_t)T, runs);
    }
    if (s->final_norm_tensor >= 0) {
        expand(be, sa->fn_out, TC, runs);
        expand(be, sa->fn_mean, (size_t)T, runs);
        expand(be, sa->fn_rstd, (size_t)T, runs);
    }
}
