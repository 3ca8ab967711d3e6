/* Packing examples into model batches (model.h token conventions):
 *   decoder-only     [<pad> ...] src <sep> tgt <eos>          left padded
 *                    [<pad> ...] prompt tgt <eos>             a prompt template's (mc->prompt):
 *                                                             its sources are the template's ids
 *   encoder-decoder  src: src <eos> [<pad> ...]   ids: <bos> tgt <eos> [<pad> ...]
 * A CAT-N example joins the sources of its parts, and their targets, in part order. */
#include "mtlab/error.h"
#include "mtlab/train.h"

#include <stdlib.h>
#include <string.h>

int mt_example_packed_len(const mt_examples *e, size_t i, int encdec, int sep)
{
    if (!encdec) return e->src_len[i] + e->tgt_len[i] + 1 + (sep != 0);
    int s = e->src_len[i] + 1, t = e->tgt_len[i] + 2;
    return s > t ? s : t;
}

/* Copy the source (side 0) or target (side 1) ids of example i to out; returns the count. */
static int copy_side(int32_t *out, const mt_corpus *c, const mt_examples *e, size_t i, int side)
{
    int n = 0;
    for (int k = 0; k < e->n_parts[i]; k++) {
        uint32_t pair = e->parts[e->start[i] + (size_t)k];
        const int32_t *ids = c->ids + (side ? c->tgt_start[pair] : c->src_start[pair]);
        int len = side ? c->tgt_len[pair] : c->src_len[pair];
        memcpy(out + n, ids, (size_t)len * sizeof *ids);
        n += len;
    }
    return n;
}

void mt_batch_pack(mt_batch *b, int encdec, const mt_model_config *mc, const mt_corpus *c,
                   const mt_examples *e, const uint32_t *rows, int n_rows)
{
    memset(b, 0, sizeof *b);
    b->B = n_rows;
    if (!encdec) {
        int sep = mt_model_config_prompt_sep(mc), T = 0;
        for (int r = 0; r < n_rows; r++) {
            int l = mt_example_packed_len(e, rows[r], 0, sep >= 0);
            if (l > T) T = l;
        }
        int32_t *ids = mt_xmalloc((size_t)n_rows * (size_t)T * sizeof *ids);
        int *n_prompt = sep < 0 ? mt_xmalloc((size_t)n_rows * sizeof *n_prompt) : NULL;
        for (int r = 0; r < n_rows; r++) {
            int32_t *row = ids + (size_t)r * (size_t)T;
            int pad = T - mt_example_packed_len(e, rows[r], 0, sep >= 0);
            for (int t = 0; t < pad; t++) row[t] = mc->pad_id;
            int at = pad + copy_side(row + pad, c, e, rows[r], 0);
            if (sep >= 0) row[at++] = sep;
            else n_prompt[r] = at;
            at += copy_side(row + at, c, e, rows[r], 1);
            row[at] = mc->eos_id;
        }
        b->T = T;
        b->ids = ids;
        b->n_prompt = n_prompt;
        return;
    }
    int S = 0, T = 0;
    for (int r = 0; r < n_rows; r++) {
        if (e->src_len[rows[r]] + 1 > S) S = e->src_len[rows[r]] + 1;
        if (e->tgt_len[rows[r]] + 2 > T) T = e->tgt_len[rows[r]] + 2;
    }
    int32_t *src = mt_xmalloc((size_t)n_rows * (size_t)S * sizeof *src);
    int32_t *ids = mt_xmalloc((size_t)n_rows * (size_t)T * sizeof *ids);
    for (int r = 0; r < n_rows; r++) {
        int32_t *srow = src + (size_t)r * (size_t)S, *trow = ids + (size_t)r * (size_t)T;
        int n = copy_side(srow, c, e, rows[r], 0);
        srow[n++] = mc->eos_id;
        while (n < S) srow[n++] = mc->pad_id;
        trow[0] = mc->decoder_start_id;
        n = 1 + copy_side(trow + 1, c, e, rows[r], 1);
        trow[n++] = mc->eos_id;
        while (n < T) trow[n++] = mc->pad_id;
    }
    b->S = S;
    b->src = src;
    b->T = T;
    b->ids = ids;
}

void mt_batch_free(mt_batch *b)
{
    free((void *)b->ids);
    free((void *)b->src);
    free((void *)b->n_prompt);
    memset(b, 0, sizeof *b);
}
