/* Incremental decoding: a prefill runs the prompt (and the encoder) in parallel, in chunks of
 * bounded length that continue each other's caches (docs/decoding.md §1.1), and fills the
 * per-unit caches; each step then runs one new token per row through the cached units
 * (attention over its KV cache or sliding-window ring, Mamba through its conv + ssm state,
 * docs/models.md §3.6, retention through its recurrent state, docs/models.md §4.3).
 * Nothing is kept for backward: one unit's working set serves them all.
 * Letters (mtlab/backend.h): B rows, T prompt length, S source length, C d_model, V vocabulary,
 * Tr ring slots, Tc prefill chunk. */
#include "models/model_internal.h"

#include <stdlib.h>
#include <string.h>

#include "mtlab/error.h"

/* A state's backend memory, one block per use. A freed state leaves its blocks with the model
 * (mt_model's decode_workspace) and the next state takes them, each used again where it is
 * large enough: call after call, a decoding allocates nothing, where fresh CPU memory cost a page
 * fault and a cleared page per 4 KiB (a quarter of transformer-small's batch-16 int8 decoding
 * time went to faulting in and unmapping its 10 MB). */
enum {
    BLOCK_CACHE, /* cache */
    BLOCK_ENC_CACHE, /* enc_cache */
    BLOCK_REORDER, /* reorder_tmp, taken at the first reorder */
    BLOCK_WORK, /* work */
    BLOCK_ROWS, /* rows */
    BLOCK_IO, /* io */
    BLOCK_SLOT_MASK, /* d_slot_mask */
    N_BLOCKS
};

struct mt_decode_blocks {
    void *p[N_BLOCKS];
    size_t bytes[N_BLOCKS]; /* each block's capacity */
    float *logits; /* host, at least (max_B, V): what the caller's passes write
                    * (mt_decode_state_logits), malloc'd when first asked for */
    size_t logits_bytes;
};

/* What a recorded step's frozen arguments depend on: the backend (its precision's weights),
 * the working set and the rows. The caches, masks, ids and rows buffers never move. */
typedef struct {
    const mt_backend *be;
    const float *work;
    int B;
} step_key;

struct mt_decode_state {
    mt_model *m;
    int max_B, max_T, max_S;
    int B, len, S, primed;
    int chunk; /* Tc: prompt positions per prefill pass, 0 for all at once,
                * MT_PREFILL_AUTO for the longest within the budget */
    float *cache; /* every unit's cache, one allocation */
    mt_unit_cache *uc; /* (decoder units) */
    float *enc_cache; /* the encoder's unit states while it runs in chunks, or NULL */
    mt_unit_cache *enc_uc; /* (encoder units) */
    float *reorder_tmp; /* the largest cache tensor, for reordering rows; NULL until then */
    size_t reorder_floats;
    int *origin, *origin_tmp; /* (max_B) the prefill row whose source each row's fixed caches
                               * (cross-attention keys and values) hold, and a reorder's */
    float *work; /* activations of the current pass, one allocation */
    size_t work_cap;
    mt_stack_acts enc_acts, dec_acts;
    float *rows; /* x_last (B, C), normed (B, C), mean, rstd (B), logits (B, V) */
    void *io; /* ids, src (int32), masks (bytes), rows (a reorder's index,
               * a step's argmax) */
    int32_t *d_ids, *d_src, *d_rows;
    uint8_t *d_key_mask, *d_prompt_mask, *d_src_mask;
    uint8_t *key_mask, *src_mask; /* host copies (max_B, max_T), (max_B, max_S) */
    int ring; /* Tr: slots of the sliding-window rings, 0 when none */
    uint8_t *slot_mask, *d_slot_mask; /* (max_B, Tr) host and backend */
    size_t cache_floats;
    size_t fixed_bytes; /* every allocation but work */
    int replayable; /* steps take the same arguments at every position (below) */
    void *graph; /* the recorded step (backends that record), or NULL */
    step_key graph_for, last_step; /* what it was recorded for; the last step run op by op */
    int unrecordable; /* a recording failed: this state's steps run op by op */
    struct mt_decode_blocks blocks; /* the backend memory above */
};

/* A block of at least `bytes` for use k: the state's own where it is large enough (zeroed
 * where zero says the state reads it before writing all of it, as a fresh allocation is),
 * else a new one; NULL (mt_last_error) when the backend has no memory. */
static void *block_take(mt_decode_state *st, int k, size_t bytes, int zero)
{
    const mt_backend *be = st->m->base_be;
    struct mt_decode_blocks *b = &st->blocks;
    if (b->p[k] && b->bytes[k] >= bytes) {
        if (zero) be->memzero(b->p[k], bytes);
        return b->p[k];
    }
    be->free(b->p[k]);
    b->p[k] = be->alloc(bytes);
    b->bytes[k] = b->p[k] ? bytes : 0;
    return b->p[k];
}

static size_t blocks_bytes(const struct mt_decode_blocks *b)
{
    size_t n = b->logits_bytes;
    for (int k = 0; k < N_BLOCKS; k++) n += b->bytes[k];
    return n;
}

static void blocks_free(const mt_backend *be, struct mt_decode_blocks *b)
{
    for (int k = 0; k < N_BLOCKS; k++) be->free(b->p[k]);
    free(b->logits);
    free(b);
}

void mt_model_decode_workspace_free(mt_model *m)
{
    struct mt_decode_blocks *b = atomic_exchange(&m->decode_workspace, NULL);
    if (b) blocks_free(m->base_be, b);
}

void mt_model_set_decode_workspace_limit(mt_model *m, size_t bytes)
{
    m->decode_workspace_limit = bytes;
    struct mt_decode_blocks *b = atomic_exchange(&m->decode_workspace, NULL);
    if (b && blocks_bytes(b) > bytes) {
        blocks_free(m->base_be, b);
        b = NULL;
    }
    struct mt_decode_blocks *none = NULL;
    if (b && !atomic_compare_exchange_strong(&m->decode_workspace, &none, b))
        blocks_free(m->base_be, b);
}

size_t mt_model_decode_workspace_limit(const mt_model *m) { return m->decode_workspace_limit; }

size_t mt_model_decode_workspace_bytes(mt_model *m)
{
    struct mt_decode_blocks *b = atomic_exchange(&m->decode_workspace, NULL), *none = NULL;
    size_t n = b ? blocks_bytes(b) : 0;
    if (b && !atomic_compare_exchange_strong(&m->decode_workspace, &none, b))
        blocks_free(m->base_be, b);
    return n;
}

/* An encoder runs in chunks when every unit carries its past in a fixed state (the encoder of
 * mamba-encdec); one with bidirectional attention sees the whole source at once (the
 * Transformer's, bounded by its positions). */
static int recurrent_stack(const mt_stack *s)
{
    for (int i = 0; i < s->n_units; i++)
        if (s->units[i].kind == MT_UNIT_SELF_ATTN || s->units[i].kind == MT_UNIT_CROSS_ATTN)
            return 0;
    return 1;
}

/* Whether every decoding step runs the same operations on the same arguments whatever the
 * position: no position table, and units whose step does not depend on it (attention reads a
 * cache that grows; retention rotates by the position). Then one step, recorded, replays for
 * every later one (step_replayed). */
static int position_free_steps(const mt_stack *s)
{
    if (s->positions) return 0;
    for (int i = 0; i < s->n_units; i++)
        if (s->units[i].kind != MT_UNIT_MAMBA && s->units[i].kind != MT_UNIT_FFN &&
            s->units[i].kind != MT_UNIT_GATED_MLP)
            return 0;
    return 1;
}

/* The ring size of the model's sliding-window units (they share the config's window). */
static int ring_slots(const mt_stack *s, int max_T)
{
    for (int i = 0; i < s->n_units; i++)
        if (s->units[i].kind == MT_UNIT_SELF_ATTN && s->units[i].cfg.attn.window > 0)
            return mt_unit_kv_slots(&s->units[i], max_T);
    return 0;
}

static size_t cache_floats(const mt_stack *s, int max_B, int max_T, int max_S)
{
    size_t total = 0;
    for (int i = 0; i < s->n_units; i++)
        total += mt_unit_cache_count(&s->units[i], max_B, max_T, max_S);
    return total;
}

size_t mt_model_decode_state_bytes(const mt_model *m, int max_B, int max_T, int max_S)
{
    return cache_floats(&m->dec, max_B, max_T, m->arch->encdec ? max_S : 0) * sizeof(float);
}

size_t mt_decode_state_bytes_held(const mt_decode_state *st)
{
    return st->fixed_bytes + st->work_cap * sizeof(float);
}

size_t mt_decode_state_model_bytes(const mt_decode_state *st, int rows)
{
    return mt_model_decode_state_bytes(st->m, rows, st->len > 0 ? st->len : 1, st->S);
}

void mt_decode_state_set_prefill_chunk(mt_decode_state *st, int positions)
{
    st->chunk = positions > 0 || positions == MT_PREFILL_AUTO ? positions : 0;
}

/* Positions per pass for a prompt of T through stack s attending over Tk keys: the set
 * chunk, or the longest power-of-two share of MT_PREFILL_MAX_CHUNK whose working set fits
 * MT_PREFILL_WORK_BYTES (a longer chunk makes fewer, larger products; the budget keeps the
 * attention scores (H, Tc, Tk) in bounds however long the keys run). */
static int prefill_chunk(const mt_decode_state *st, const mt_stack *s, int B, int T, int Tk, int S)
{
    if (st->chunk == 0) return T;
    if (st->chunk > 0) return st->chunk < T ? st->chunk : T;
    mt_stack_acts scratch = {0};
    int Tc = MT_PREFILL_MAX_CHUNK;
    while (Tc > 1 && Tc / 2 >= T) Tc /= 2;
    while (Tc > 16 && mt_stack_infer_layout(s, &scratch, NULL, B, Tc, Tk, S) * sizeof(float) >
                          MT_PREFILL_WORK_BYTES)
        Tc /= 2;
    mt_stack_acts_free(&scratch);
    return Tc < T ? Tc : T;
}

void mt_decode_state_free(mt_decode_state *st)
{
    if (!st) return;
    mt_model *m = st->m;
    if (st->graph) m->be->graph_free(st->graph);
    /* the blocks go to the model for its next state, unless it keeps some already (another
     * thread's) or they are more than it may keep */
    struct mt_decode_blocks *b = mt_xmalloc(sizeof *b), *none = NULL;
    *b = st->blocks;
    if (blocks_bytes(b) > m->decode_workspace_limit ||
        !atomic_compare_exchange_strong(&m->decode_workspace, &none, b))
        blocks_free(m->base_be, b);
    free(st->slot_mask);
    free(st->origin);
    free(st->origin_tmp);
    mt_stack_acts_free(&st->enc_acts);
    mt_stack_acts_free(&st->dec_acts);
    free(st->uc);
    free(st->enc_uc);
    free(st->key_mask);
    free(st->src_mask);
    free(st);
}

mt_decode_state *mt_decode_state_new(mt_model *m, int max_B, int max_T, int max_S)
{
    const char *name = m->arch->name;
    if (max_B <= 0 || max_T <= 0 || max_B > (1 << 16) || max_T > (1 << 20)) {
        mt_error("%s decode state: %d rows x %d positions is out of range", name, max_B, max_T);
        return NULL;
    }
    if (m->arch->encdec && (max_S <= 0 || max_S > (1 << 20))) {
        mt_error("%s decode state: source length %d is out of range", name, max_S);
        return NULL;
    }
    if (m->dec.positions && max_T > m->cfg.max_positions) {
        mt_error("%s decode state: %d positions exceed max_position_embeddings %d", name, max_T,
                 m->cfg.max_positions);
        return NULL;
    }
    if (!m->arch->encdec) max_S = 0;
    mt_decode_state *st = mt_xcalloc(1, sizeof *st);
    st->m = m;
    struct mt_decode_blocks *kept = atomic_exchange(&m->decode_workspace, NULL);
    if (kept) {
        st->blocks = *kept;
        free(kept);
    }
    st->max_B = max_B;
    st->max_T = max_T;
    st->max_S = max_S;
    st->origin = mt_xcalloc((size_t)max_B, sizeof *st->origin);
    st->origin_tmp = mt_xcalloc((size_t)max_B, sizeof *st->origin_tmp);
    st->chunk = MT_PREFILL_AUTO;
    const mt_stack *s = &m->dec;
    st->replayable = position_free_steps(s);
    st->uc = mt_xcalloc((size_t)s->n_units + 1, sizeof *st->uc);
    size_t total = cache_floats(s, max_B, max_T, max_S), largest = 0;
    st->cache_floats = total;
    st->ring = ring_slots(s, max_T);
    size_t C = (size_t)m->cfg.d_model, V = (size_t)m->cfg.vocab_size, B = (size_t)max_B;
    size_t io = B * ((size_t)max_T + max_S + 1) * sizeof(int32_t) + B * (2 * (size_t)max_T + max_S);
    st->cache = total ? block_take(st, BLOCK_CACHE, total * sizeof(float), 1) : NULL;
    st->rows = block_take(st, BLOCK_ROWS, B * (2 * C + 2 + V) * sizeof(float), 1);
    /* the host masks count too: they are the state's as much as the backend's copies */
    st->fixed_bytes = (total + B * (2 * C + 2 + V)) * sizeof(float) + io +
                      B * ((size_t)max_T + max_S + 2 * (size_t)st->ring);
    st->io = block_take(st, BLOCK_IO, io, 1);
    if (st->ring) st->d_slot_mask = block_take(st, BLOCK_SLOT_MASK, B * (size_t)st->ring, 1);
    if ((total && !st->cache) || !st->rows || !st->io || (st->ring && !st->d_slot_mask)) {
        mt_error_context("%s decode state for %d rows x %d positions", name, max_B, max_T);
        mt_decode_state_free(st);
        return NULL;
    }
    float *p = st->cache;
    for (int i = 0; i < s->n_units; i++) {
        size_t n = mt_unit_cache_count(&s->units[i], max_B, max_T, max_S);
        if (n) mt_unit_cache_point(&s->units[i], &st->uc[i], p, max_B, max_T, max_S);
        p += n;
        for (int w = 0; w < 2; w++) {
            size_t row, used;
            if (mt_unit_cache_tensor(&s->units[i], &st->uc[i], w, &row, &used) && row * B > largest)
                largest = row * B;
        }
    }
    st->reorder_floats = largest;
    if (m->arch->encdec && recurrent_stack(&m->enc)) {
        size_t n_enc = cache_floats(&m->enc, max_B, max_S, 0);
        st->enc_uc = mt_xcalloc((size_t)m->enc.n_units + 1, sizeof *st->enc_uc);
        st->enc_cache = block_take(st, BLOCK_ENC_CACHE, n_enc * sizeof(float) + 1, 1);
        st->fixed_bytes += n_enc * sizeof(float);
        float *e = st->enc_cache;
        for (int i = 0; e && i < m->enc.n_units; i++) {
            size_t n = mt_unit_cache_count(&m->enc.units[i], max_B, max_S, 0);
            if (n) mt_unit_cache_point(&m->enc.units[i], &st->enc_uc[i], e, max_B, max_S, 0);
            e += n;
        }
    }
    if (st->enc_uc && !st->enc_cache) {
        mt_error_context("%s decode state for %d rows x %d positions", name, max_B, max_T);
        mt_decode_state_free(st);
        return NULL;
    }
    st->d_ids = st->io;
    st->d_src = st->d_ids + B * max_T;
    st->d_rows = st->d_src + B * max_S;
    st->d_key_mask = (uint8_t *)(st->d_rows + B);
    st->d_prompt_mask = st->d_key_mask + B * max_T;
    st->d_src_mask = st->d_prompt_mask + B * max_T;
    st->key_mask = mt_xcalloc(B * max_T, 1);
    st->src_mask = mt_xcalloc(B * (size_t)max_S + 1, 1);
    st->slot_mask = mt_xcalloc(B * (size_t)st->ring + 1, 1);
    return st;
}

int mt_decode_state_length(const mt_decode_state *st) { return st->len; }

float *mt_decode_state_logits(mt_decode_state *st)
{
    struct mt_decode_blocks *b = &st->blocks;
    int V = st->m->cfg.vocab_size;
    size_t bytes = (size_t)st->max_B * (size_t)V * sizeof(float);
    if (b->logits_bytes >= bytes) return b->logits;
    free(b->logits);
    /* sized by the caller's batch and the vocabulary: a failure is a message, not an abort */
    b->logits = malloc(bytes);
    b->logits_bytes = b->logits ? bytes : 0;
    if (!b->logits) mt_error("no memory for the logits of %d rows x %d tokens", st->max_B, V);
    return b->logits;
}

static int size_work(mt_decode_state *st, int B, int Tq, int encode, int Se);

int mt_decode_state_reserve(mt_decode_state *st, int B, int T, int S)
{
    mt_model *m = st->m;
    if (B > st->max_B || T > st->max_T || S > st->max_S)
        return mt_error("%s reserve: %d rows x %d positions exceed the state's %d x %d",
                        m->arch->name, B, T, st->max_B, st->max_T);
    if (m->arch->encdec &&
        size_work(st, B, 1, 1, st->enc_uc ? prefill_chunk(st, &m->enc, B, S, S, 0) : S))
        return -1;
    if (size_work(st, B, prefill_chunk(st, &m->dec, B, T, st->max_T, S), 0, 0) ||
        size_work(st, st->max_B, 1, 0, 0))
        return -1;
    if (st->reorder_floats && !block_take(st, BLOCK_REORDER, st->reorder_floats * sizeof(float), 0))
        return mt_error_context("%s reserve", m->arch->name);
    return mt_decode_state_logits(st) ? 0 : -1;
}

/* Lay out one pass's working set: when encode, the encoder for Se source positions (a chunk,
 * or the whole source when the encoder does not run in chunks); the decoder for Tq new
 * positions. */
static int size_work(mt_decode_state *st, int B, int Tq, int encode, int Se)
{
    mt_model *m = st->m;
    size_t enc = encode ? mt_stack_infer_layout(&m->enc, &st->enc_acts, NULL, B, Se, Se, 0) : 0;
    size_t dec = mt_stack_infer_layout(&m->dec, &st->dec_acts, NULL, B, Tq, st->max_T, st->max_S);
    size_t n = enc + dec;
    if (n > st->work_cap) {
        /* every pass writes its activations before it reads them: no zeroing */
        st->work = block_take(st, BLOCK_WORK, n * sizeof(float), 0);
        st->work_cap = st->work ? n : 0;
        if (!st->work) return mt_error_context("%s decoding", m->arch->name);
    }
    if (encode) mt_stack_infer_layout(&m->enc, &st->enc_acts, st->work, B, Se, Se, 0);
    mt_stack_infer_layout(&m->dec, &st->dec_acts, st->work + enc, B, Tq, st->max_T, st->max_S);
    return 0;
}

/* The rows buffer: x_last (B, C), normed (B, C), mean, rstd (B); returns the logits (B, V)
 * after them. */
static float *rows_parts(const mt_decode_state *st, float **x_last, float **normed, float **mean,
                         float **rstd)
{
    size_t B = (size_t)st->B, C = (size_t)st->m->cfg.d_model;
    *x_last = st->rows;
    *normed = st->rows + B * C;
    *mean = *normed + B * C;
    *rstd = *mean + B;
    return *rstd + B;
}

/* The decoder's operations for Tq new positions per row (ids, masks already on the backend),
 * the last position's next-token logits left in dest (B, V), or in the rows buffer when dest is
 * NULL (returned). Only operations that can be recorded: no upload, download or host result. */
static float *decoder_ops(mt_decode_state *st, int Tq, int first, float *dest)
{
    mt_model *m = st->m;
    const mt_backend *be = m->be;
    mt_stack *s = &m->dec;
    int B = st->B, C = m->cfg.d_model;
    mt_stack_embed(m, s, &st->dec_acts, st->d_ids, B, Tq, st->len, NULL);
    mt_pass pass = {.B = B,
                    .T = Tq,
                    .mask = st->d_prompt_mask,
                    .mem_mask = st->d_src_mask,
                    .key_mask = st->d_key_mask,
                    .key_ld = st->max_T,
                    .slot_mask = st->d_slot_mask,
                    .first = first};
    for (int i = 0; i < s->n_units; i++) {
        pass.branch = s->units[i].parallel ? st->dec_acts.xs[i - 1] : NULL;
        mt_unit_decode(be, &s->units[i], &st->dec_acts.w[i], &st->uc[i], st->dec_acts.xs[i + 1],
                       st->dec_acts.xs[i], &pass);
    }
    float *x_last, *normed, *mean, *rstd, *out = rows_parts(st, &x_last, &normed, &mean, &rstd);
    be->copy2d(x_last, C, st->dec_acts.xs[s->n_units] + (size_t)(Tq - 1) * C, Tq * C, (size_t)B, C);
    const float *dec_out = mt_stack_final_norm(be, s, normed, mean, rstd, x_last, (size_t)B);
    if (dest) out = dest;
    mt_model_project(m, out, dec_out, (size_t)B);
    return out;
}

/* What the units' step does on the host besides queueing operations, which a replay skips:
 * their recurrent states count the positions they have taken (the Mamba mixer's len). */
static void count_step(mt_decode_state *st, int n)
{
    for (int i = 0; i < st->m->dec.n_units; i++)
        if (st->m->dec.units[i].kind == MT_UNIT_MAMBA) st->uc[i].ms.len += n;
}

static int same_step(const step_key *a, const step_key *b)
{
    return a->be == b->be && a->work == b->work && a->B == b->B;
}

/* A step of a replayable decoder on a backend that records (CUDA graphs): the second step in a
 * row with the same backend, working set and rows is recorded and replayed, and every later
 * step with them only replays, one launch instead of the step's thousand-odd operations at the
 * 1.4B shape (docs/cuda.md §4). Anything that changes the key (a beam search dropping rows, a
 * longer prefill moving the working set, another precision) runs op by op until it holds
 * still again. A backend that will not record runs the step op by op; after a recording that
 * fails (nothing recorded has run) so does every later step of this state. */
static float *step_replayed(mt_decode_state *st)
{
    const mt_backend *be = st->m->be;
    step_key k = {be, st->work, st->B};
    if (st->graph && !same_step(&st->graph_for, &k)) {
        be->graph_free(st->graph);
        st->graph = NULL;
    }
    if (st->graph) {
        be->graph_run(st->graph);
        count_step(st, 1);
        float *x_last, *normed, *mean, *rstd;
        return rows_parts(st, &x_last, &normed, &mean, &rstd);
    }
    if (!st->unrecordable && same_step(&st->last_step, &k) && be->graph_begin() == 0) {
        float *out = decoder_ops(st, 1, 0, NULL); /* recorded, not run; the host side counted */
        if ((st->graph = be->graph_end())) {
            st->graph_for = k;
            be->graph_run(st->graph);
            return out;
        }
        count_step(st, -1);
        st->unrecordable = 1;
    }
    st->last_step = k;
    return decoder_ops(st, 1, 0, NULL);
}

/* Run Tq new positions per row (ids already on the backend) through the decoder units and
 * write the last position's next-token logits to host logits (B, V), or with logits NULL each
 * row's most probable next token to host next (B). first: a prefill pass (the prompt's mask in
 * d_prompt_mask); otherwise one step. */
static void run_decoder(mt_decode_state *st, int Tq, int first, float *logits, int32_t *next)
{
    mt_model *m = st->m;
    const mt_backend *be = m->be;
    int B = st->B;
    be->upload(st->d_key_mask, st->key_mask, (size_t)st->max_B * st->max_T);
    if (st->ring && !first) {
        mt_kv_ring_slot_mask(st->slot_mask, st->key_mask, st->max_T, B, st->len + 1, st->ring);
        be->upload(st->d_slot_mask, st->slot_mask, (size_t)B * st->ring);
    }
    /* where the backend's memory is the host's, the projection writes the caller's logits
     * itself: at batch 16 and a vocabulary of 8,000 the copy was 512 KB a step, one thread's
     * work while the other waited (docs/decoding.md §9.1) */
    float *direct = logits && be->host_memory ? logits : NULL;
    float *out = !first && Tq == 1 && st->replayable && be->graph_begin
                     ? step_replayed(st)
                     : decoder_ops(st, Tq, first, direct);
    if (logits) {
        if (out != logits) be->download(logits, out, (size_t)B * m->cfg.vocab_size * sizeof(float));
    } else {
        be->argmax_rows(st->d_rows, out, (size_t)B, m->cfg.vocab_size);
        be->download(next, st->d_rows, (size_t)B * sizeof(int32_t));
    }
    st->len += Tq;
}

/* Positions [t0, t0 + n) of every row of host x (B, T) of width bytes each, uploaded packed
 * (B, n) to dst. */
static void upload_columns(const mt_backend *be, void *dst, const void *x, size_t width, int B,
                           int T, int t0, int n)
{
    uint8_t *packed = mt_xmalloc((size_t)B * n * width + 1);
    for (int r = 0; r < B; r++)
        memcpy(packed + (size_t)r * n * width, (const uint8_t *)x + ((size_t)r * T + t0) * width,
               (size_t)n * width);
    be->upload(dst, packed, (size_t)B * n * width);
    free(packed);
}

/* The encoder output mem (B, n, C), source positions [s0, s0 + n), into every
 * cross-attention unit's keys and values. */
static void fill_cross(mt_decode_state *st, const float *mem, int B, int n, int s0)
{
    mt_model *m = st->m;
    for (int i = 0; i < m->dec.n_units; i++) {
        const mt_unit *u = &m->dec.units[i];
        if (u->kind == MT_UNIT_CROSS_ATTN)
            mt_attention_cross_fill(m->be, &st->uc[i].kv, mem, &u->p.attn, &u->cfg.attn, B, n, s0);
    }
}

/* The encoder in chunks of Se source positions, each unit continuing its state like a decoder
 * unit in a prefill; every chunk's output goes straight into the cross-attention caches. */
static int encode_chunks(mt_decode_state *st, const mt_batch *b, const uint8_t *mask, int Se)
{
    mt_model *m = st->m;
    const mt_backend *be = m->be;
    const mt_stack *s = &m->enc;
    int B = b->B, S = b->S;
    for (int i = 0; i < s->n_units; i++)
        st->enc_uc[i].kv.len = st->enc_uc[i].rs.len = st->enc_uc[i].ms.len = 0;
    for (int t0 = 0; t0 < S; t0 += Se) {
        int n = S - t0 < Se ? S - t0 : Se;
        if (size_work(st, B, 1, 1, n)) return -1;
        upload_columns(be, st->d_src, b->src, sizeof(int32_t), B, S, t0, n);
        upload_columns(be, st->d_src_mask, mask, 1, B, S, t0, n);
        mt_stack_embed(m, s, &st->enc_acts, st->d_src, B, n, t0, NULL);
        mt_pass pass = {.B = B, .T = n, .mask = st->d_src_mask, .first = 1};
        for (int i = 0; i < s->n_units; i++) {
            pass.branch = s->units[i].parallel ? st->enc_acts.xs[i - 1] : NULL;
            mt_unit_decode(be, &s->units[i], &st->enc_acts.w[i], &st->enc_uc[i],
                           st->enc_acts.xs[i + 1], st->enc_acts.xs[i], &pass);
        }
        fill_cross(st,
                   mt_stack_final_norm(be, s, st->enc_acts.fn_out, st->enc_acts.fn_mean,
                                       st->enc_acts.fn_rstd, st->enc_acts.xs[s->n_units],
                                       (size_t)B * n),
                   B, n, t0);
    }
    return 0;
}

static int encode_source(mt_decode_state *st, const mt_batch *b)
{
    mt_model *m = st->m;
    const mt_backend *be = m->be;
    int B = b->B, S = b->S;
    for (size_t i = 0; i < (size_t)B * S; i++) st->src_mask[i] = b->src[i] != m->cfg.pad_id;
    if (st->enc_uc) {
        if (encode_chunks(st, b, st->src_mask, prefill_chunk(st, &m->enc, B, S, S, 0))) return -1;
    } else {
        if (size_work(st, B, 1, 1, S)) return -1;
        be->upload(st->d_src, b->src, (size_t)B * S * sizeof(int32_t));
        be->upload(st->d_src_mask, st->src_mask, (size_t)B * S);
        mt_stack_embed(m, &m->enc, &st->enc_acts, st->d_src, B, S, 0, NULL);
        mt_pass enc = {.B = B, .T = S, .mask = st->d_src_mask};
        fill_cross(st, mt_stack_forward(m, &m->enc, &st->enc_acts, &enc), B, S, 0);
    }
    be->upload(st->d_src_mask, st->src_mask, (size_t)B * S);
    return 0;
}

int mt_model_prefill(mt_model *m, mt_decode_state *st, const mt_batch *b, float *logits)
{
    if (st->m != m) return mt_error("decode state belongs to another model");
    if (mt_model_check_batch(m, b)) return -1;
    if (b->B > st->max_B || b->T > st->max_T)
        return mt_error("%s prefill: %d rows x %d positions exceed the state's %d x %d",
                        m->arch->name, b->B, b->T, st->max_B, st->max_T);
    if (m->arch->encdec && b->S > st->max_S)
        return mt_error("%s prefill: source length %d exceeds the state's %d", m->arch->name, b->S,
                        st->max_S);
    int B = b->B, T = b->T;
    int Tc = prefill_chunk(st, &m->dec, B, T, st->max_T, m->arch->encdec ? b->S : 0);
    st->B = B;
    st->len = 0;
    st->primed = 0;
    st->S = m->arch->encdec ? b->S : 0;
    for (int i = 0; i < m->dec.n_units; i++)
        st->uc[i].kv.len = st->uc[i].rs.len = st->uc[i].ms.len = 0;
    if (m->arch->encdec && encode_source(st, b)) return -1;
    if (size_work(st, B, Tc, 0, 0)) return -1;

    memset(st->key_mask, 0, (size_t)st->max_B * st->max_T);
    uint8_t *prompt = mt_xmalloc((size_t)B * T);
    for (int r = 0; r < B; r++)
        for (int t = 0; t < T; t++) {
            /* the decoder start is real even where it is <pad> (as in forward.c) */
            uint8_t real =
                b->ids[(size_t)r * T + t] != m->cfg.pad_id || (m->arch->encdec && t == 0);
            prompt[(size_t)r * T + t] = real;
            st->key_mask[(size_t)r * st->max_T + t] = real;
        }
    for (int t0 = 0; t0 < T; t0 += Tc) {
        int n = T - t0 < Tc ? T - t0 : Tc;
        upload_columns(m->be, st->d_prompt_mask, prompt, 1, B, T, t0, n);
        upload_columns(m->be, st->d_ids, b->ids, sizeof(int32_t), B, T, t0, n);
        run_decoder(st, n, 1, logits, NULL);
    }
    free(prompt);
    for (int r = 0; r < st->max_B; r++) st->origin[r] = r < B ? r : -1; /* -1: holds no source */
    st->primed = 1;
    return 0;
}

static int step(mt_model *m, mt_decode_state *st, const int32_t *tokens, float *logits,
                int32_t *next)
{
    if (st->m != m) return mt_error("decode state belongs to another model");
    if (!st->primed) return mt_error("%s step before prefill", m->arch->name);
    if (st->len >= st->max_T)
        return mt_error("%s step: the decode state is full (%d positions)", m->arch->name,
                        st->max_T);
    for (int r = 0; r < st->B; r++)
        if (tokens[r] < 0 || tokens[r] >= m->cfg.vocab_size)
            return mt_error("%s step: token %d of row %d is outside the vocabulary (0..%d)",
                            m->arch->name, tokens[r], r, m->cfg.vocab_size - 1);
    if (size_work(st, st->B, 1, 0, 0)) return -1;
    for (int r = 0; r < st->B; r++) st->key_mask[(size_t)r * st->max_T + st->len] = 1;
    m->be->upload(st->d_ids, tokens, (size_t)st->B * sizeof(int32_t));
    run_decoder(st, 1, 0, logits, next);
    return 0;
}

int mt_model_step(mt_model *m, mt_decode_state *st, const int32_t *tokens, float *logits)
{
    return step(m, st, tokens, logits, NULL);
}

int mt_model_step_argmax(mt_model *m, mt_decode_state *st, const int32_t *tokens, int32_t *next)
{
    return step(m, st, tokens, NULL, next);
}

/* Reorder host mask rows (row bytes each) in place by rows. */
static void reorder_host(uint8_t *mask, size_t row, const int32_t *rows, int n_rows, int old_B)
{
    uint8_t *copy = mt_xmalloc(row * (size_t)old_B + 1);
    memcpy(copy, mask, row * (size_t)old_B);
    for (int i = 0; i < n_rows; i++)
        memcpy(mask + (size_t)i * row, copy + (size_t)rows[i] * row, row);
    free(copy);
}

int mt_decode_state_reorder(mt_decode_state *st, const int32_t *rows, int n_rows)
{
    mt_model *m = st->m;
    const mt_backend *be = m->be;
    if (!st->primed) return mt_error("%s reorder before prefill", m->arch->name);
    if (n_rows <= 0 || n_rows > st->max_B)
        return mt_error("%s reorder: %d rows, the state holds at most %d", m->arch->name, n_rows,
                        st->max_B);
    for (int i = 0; i < n_rows; i++)
        if (rows[i] < 0 || rows[i] >= st->B)
            return mt_error("%s reorder: row index %d is outside 0..%d", m->arch->name, rows[i],
                            st->B - 1);
    if (!st->reorder_tmp && st->reorder_floats) {
        /* written (index_select) before it is read: no zeroing */
        st->reorder_tmp = block_take(st, BLOCK_REORDER, st->reorder_floats * sizeof(float), 0);
        if (!st->reorder_tmp) return mt_error_context("%s reorder", m->arch->name);
        st->fixed_bytes += st->reorder_floats * sizeof(float);
    }
    be->upload(st->d_rows, rows, (size_t)n_rows * sizeof(int32_t));
    /* A cross-attention cache is fixed after the prefill, a function of its row's source. Beam
     * search prefills one row per sentence and copies it to the sentence's beams, so a reorder
     * among the beams of each sentence leaves every row with the source it had: those caches
     * (and the source mask) move only when a row's origin changes (the first expansion, a
     * finished sentence leaving the rows). */
    int same_sources = 1;
    for (int i = 0; i < n_rows; i++) {
        st->origin_tmp[i] = st->origin[rows[i]];
        same_sources &= st->origin_tmp[i] == st->origin[i];
    }
    memcpy(st->origin, st->origin_tmp, (size_t)n_rows * sizeof *st->origin);
    for (int i = n_rows; i < st->max_B; i++) st->origin[i] = -1;
    const mt_stack *s = &m->dec;
    for (int i = 0; i < s->n_units; i++) {
        if (same_sources && s->units[i].kind == MT_UNIT_CROSS_ATTN) continue;
        for (int w = 0; w < 2; w++) {
            /* only the part of each row that holds the state moves: a KV cache's filled
             * positions, not its capacity (beam 5 copied whole rows twice a step: a quarter
             * of the transformer's decoding time) */
            size_t row, used;
            float *t = mt_unit_cache_tensor(&s->units[i], &st->uc[i], w, &row, &used);
            if (!t || !used) continue;
            be->index_select(st->reorder_tmp, t, row, st->d_rows, n_rows, used);
            be->copy2d(t, (int)row, st->reorder_tmp, (int)used, (size_t)n_rows, (int)used);
        }
    }
    reorder_host(st->key_mask, (size_t)st->max_T, rows, n_rows, st->B);
    if (st->S && !same_sources) {
        reorder_host(st->src_mask, (size_t)st->S, rows, n_rows, st->B);
        be->upload(st->d_src_mask, st->src_mask, (size_t)n_rows * st->S);
    }
    st->B = n_rows;
    return 0;
}
