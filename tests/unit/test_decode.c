/* Decoding: batched greedy and beam search against their naive references (full forward per
 * token, one sentence at a time), beam 1 = greedy, batching invariance, a tiny model overfit
 * on 32 pairs reproducing its targets, the same hypotheses at one thread and two, streaming
 * and cancel, lengths and option errors. The searches' row helpers: test_search_rows.c.
 * Models are tiny (mt_model_create), for both the transformer (encoder-decoder) and Mamba
 * (decoder-only). Text in and out (mt_translate, `mtlab translate`): test_translate.c. */
#include "test_util.h"

#include <omp.h>
#include <pthread.h>

#include "decode/search.h"
#include "mtlab/decode.h"
#include "mtlab/error.h"
#include "mtlab/model.h"
#include "mtlab/rng.h"

#define V 64
#define FIRST_WORD 5 /* ids below are the reserved ones (mtlab/tokenizer.h) */
/* fp32 models; the cached and the full-forward passes add in different orders */
#define LOGPROB_TOL 1e-3

/* ---------------------------------------------------------------- tiny models */

static void tiny_config(mt_model_config *cfg, const char *arch, int vocab)
{
    int mamba = !strcmp(arch, "mamba");
    assert_int_equal(mt_model_preset(cfg, mamba ? "mamba-small" : "transformer-small"), 0);
    cfg->vocab_size = vocab;
    cfg->d_model = 32;
    cfg->n_layers = 2;
    cfg->n_encoder_layers = 2;
    cfg->n_heads = 4;
    cfg->ffn_dim = 64;
    cfg->max_positions = 64;
    cfg->d_state = 8;
    cfg->dt_rank = 2;
    cfg->dropout = 0.0f;
}

#define N_PAIRS_MAX 32

/* n sources of the given lengths with word ids drawn from seed */
typedef struct {
    int n;
    int len[N_PAIRS_MAX];
    int32_t ids[N_PAIRS_MAX][32];
    const int32_t *ptr[N_PAIRS_MAX];
} sources;

static void make_sources(sources *s, const int *lens, int n, uint64_t seed)
{
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
    s->n = n;
    for (int i = 0; i < n; i++) {
        s->len[i] = lens[i];
        for (int t = 0; t < lens[i]; t++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            s->ids[i][t] = FIRST_WORD + (int32_t)((x >> 33) % (V - FIRST_WORD));
        }
        s->ptr[i] = s->ids[i];
    }
}

static mt_decode_opts opts_beam(int beam, int max_new)
{
    mt_decode_opts o;
    mt_decode_opts_init(&o);
    o.beam = beam;
    o.max_new_tokens = max_new;
    return o;
}

static void decode_ok(mt_model *m, const sources *s, const mt_decode_opts *o, mt_decode_result *r)
{
    if (mt_decode(m, s->ptr, s->len, s->n, o, r)) fail_msg("%s", mt_last_error());
    assert_int_equal(r->n, s->n);
}

/* a[0..n) == b[0..n); either may be NULL when n is 0 */
static int same_ids(const int32_t *a, const int32_t *b, int n)
{
    return n == 0 || !memcmp(a, b, (size_t)n * sizeof *a);
}

static void assert_same_hyp(const mt_hypothesis *a, const mt_hypothesis *b, int sentence)
{
    if (a->n_ids != b->n_ids || a->finished != b->finished || !same_ids(a->ids, b->ids, a->n_ids))
        fail_msg("sentence %d: %d ids (finished %d, score %.6f) vs %d ids (finished %d, score "
                 "%.6f)",
                 sentence, a->n_ids, a->finished, a->score, b->n_ids, b->finished, b->score);
    double tol = LOGPROB_TOL * (1.0 + fabs(a->logprob));
    if (fabs(a->logprob - b->logprob) > tol || fabs(a->score - b->score) > tol)
        fail_msg("sentence %d: logprob %.6f vs %.6f, score %.6f vs %.6f", sentence, a->logprob,
                 b->logprob, a->score, b->score);
}

static const int MIXED_LENGTHS[] = {3, 11, 1, 7, 0, 5};
#define N_MIXED 6

/* ---------------------------------------------------------------- tiny models, trained a little */

#define N_PAIRS 32

typedef struct {
    int32_t src[N_PAIRS][6], tgt[N_PAIRS][6];
    int src_len[N_PAIRS], tgt_len[N_PAIRS];
} pairs;

static void make_pairs(pairs *p, uint64_t seed)
{
    uint64_t x = seed;
    for (int i = 0; i < N_PAIRS; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        p->src_len[i] = 2 + (int)((x >> 40) % 4);
        p->tgt_len[i] = 2 + (int)((x >> 50) % 4);
        for (int t = 0; t < 6; t++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            p->src[i][t] = FIRST_WORD + (int32_t)((x >> 33) % (V - FIRST_WORD));
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            p->tgt[i][t] = FIRST_WORD + (int32_t)((x >> 33) % (V - FIRST_WORD));
        }
    }
}

/* The training batch in the model's token conventions (mtlab/model.h). */
static void training_batch(const mt_model *m, const pairs *p, mt_batch *b, int32_t *ids,
                           int32_t *src)
{
    const mt_model_config *cfg = mt_model_get_config(m);
    memset(b, 0, sizeof *b);
    b->B = N_PAIRS;
    if (mt_model_is_encdec(m)) {
        /* src `x <eos>`, ids `<bos> y <eos>`, right padded */
        b->S = 7;
        b->T = 7;
        for (int i = 0; i < N_PAIRS; i++) {
            int32_t *s = src + i * 7, *d = ids + i * 7;
            for (int t = 0; t < 7; t++) s[t] = d[t] = cfg->pad_id;
            memcpy(s, p->src[i], (size_t)p->src_len[i] * sizeof *s);
            s[p->src_len[i]] = cfg->eos_id;
            d[0] = cfg->decoder_start_id;
            memcpy(d + 1, p->tgt[i], (size_t)p->tgt_len[i] * sizeof *d);
            d[1 + p->tgt_len[i]] = cfg->eos_id;
        }
        b->src = src;
    } else {
        /* `x <sep> y <eos>`, left padded */
        b->T = 12;
        for (int i = 0; i < N_PAIRS; i++) {
            int32_t *d = ids + i * 12;
            int n = p->src_len[i] + p->tgt_len[i] + 2, pad = 12 - n;
            for (int t = 0; t < pad; t++) d[t] = cfg->pad_id;
            memcpy(d + pad, p->src[i], (size_t)p->src_len[i] * sizeof *d);
            d[pad + p->src_len[i]] = cfg->sep_id;
            memcpy(d + pad + p->src_len[i] + 1, p->tgt[i], (size_t)p->tgt_len[i] * sizeof *d);
            d[11] = cfg->eos_id;
        }
    }
    b->ids = ids;
}

/* Full-batch AdamW on the pairs for at most max_steps, stopping below stop_loss; returns
 * the steps taken and the last loss. */
static int train(mt_model *m, const pairs *p, int max_steps, float lr, double stop_loss,
                 double *loss)
{
    int32_t ids[N_PAIRS * 12], src[N_PAIRS * 7];
    mt_batch b;
    training_batch(m, p, &b, ids, src);
    mt_adamw_hparams h = {
        .lr = lr, .beta1 = 0.9f, .beta2 = 0.98f, .eps = 1e-8f, .weight_decay = 0.0f};
    mt_step_opts so = {0};
    int step = 0;
    while (step < max_steps) {
        mt_model_zero_grad(m);
        if (mt_model_forward_backward(m, &b, &so, 0.0f, loss, NULL))
            fail_msg("%s", mt_last_error());
        assert_int_equal(mt_model_adamw_step(m, &h, ++step), 0);
        if (*loss < stop_loss) break;
    }
    return step;
}

/* A fresh model is nearly uniform (or, for Mamba, echoes its input token); a few steps on
 * random pairs give it peaked distributions that depend on the source and reach <eos>
 * after a few tokens on some sentences but not others: real choices for the searches. */
static mt_model *tiny_model_on(const char *arch, uint64_t seed, const mt_backend *be)
{
    mt_model_config cfg;
    tiny_config(&cfg, arch, V);
    mt_model *m = mt_model_create(&cfg, be, seed);
    if (!m) fail_msg("%s", mt_last_error());
    pairs p;
    make_pairs(&p, seed + 1000);
    double loss;
    train(m, &p, mt_model_is_encdec(m) ? 12 : 8, 3e-3f, 0.0, &loss);
    return m;
}

static mt_model *tiny_model(const char *arch, uint64_t seed)
{
    return tiny_model_on(arch, seed, mt_backend_cpu());
}

/* ---------------------------------------------------------------- the decoding workspace */

static size_t backend_allocs, backend_live;
/* each block carries its size in front of it (64 bytes keep the CPU's alignment) */
static void *counted_alloc(size_t bytes)
{
    backend_allocs++;
    char *p = mt_backend_cpu()->alloc(bytes + 64);
    if (!p) return NULL;
    memcpy(p, &bytes, sizeof bytes);
    backend_live += bytes;
    return p + 64;
}
static void counted_free(void *q)
{
    if (!q) return;
    char *p = (char *)q - 64;
    size_t bytes;
    memcpy(&bytes, p, sizeof bytes);
    backend_live -= bytes;
    mt_backend_cpu()->free(p);
}

/* A decoding call draws on the workspace the model's last call left: once a call as large has
 * run, no backend allocation (the CPU's fresh pages each fault in and are cleared), and every
 * call's hypotheses the same to the bit as a fresh model's, whatever ran before it (a longer
 * batch, the other search, rows compacted as sentences end). The host logits go with it: the
 * workspace is the backend blocks decoding left plus the logits of the most rows so far. A
 * model whose workspace limit is below the state keeps nothing. */
static void test_decode_reuses_workspace(void **state)
{
    (void)state;
    mt_backend counting = *mt_backend_cpu();
    counting.alloc = counted_alloc;
    counting.free = counted_free;
    static const int LONGER[] = {13, 2, 9, 5}, SHORTER[] = {4, 1, 6};
    static const char *const archs[] = {"transformer", "mamba"};
    for (int a = 0; a < 2; a++) {
        mt_model *m = tiny_model_on(archs[a], 7, &counting), *fresh = NULL;
        sources longer, shorter;
        make_sources(&longer, LONGER, 4, 1);
        make_sources(&shorter, SHORTER, 3, 2);
        /* runs 2, 4 and 6 need no more than the run before them */
        static const struct {
            int longer, beam;
        } runs[] = {{1, 1}, {0, 1}, {0, 1}, {1, 3}, {0, 3}, {1, 1}, {1, 1}};
        size_t model_live = backend_live, most_rows = 0;
        for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
            const sources *s = runs[i].longer ? &longer : &shorter;
            mt_decode_opts o = opts_beam(runs[i].beam, 0);
            mt_decode_result r, f;
            size_t before = backend_allocs;
            decode_ok(m, s, &o, &r);
            size_t allocs = backend_allocs - before;
            if (i % 2 == 0 && i > 0 && allocs)
                fail_msg("%s run %zu: %zu backend allocations", archs[a], i, allocs);
            size_t rows = (size_t)s->n * (size_t)runs[i].beam;
            if (rows > most_rows) most_rows = rows;
            size_t kept = mt_model_decode_workspace_bytes(m),
                   logits = most_rows * (size_t)V * sizeof(float);
            if (kept != backend_live - model_live + logits)
                fail_msg("%s run %zu: the workspace keeps %zu bytes, not the %zu of the backend "
                         "blocks and %zu of host logits",
                         archs[a], i, kept, backend_live - model_live, logits);
            fresh = tiny_model(archs[a], 7);
            decode_ok(fresh, s, &o, &f);
            for (int k = 0; k < s->n; k++) {
                const mt_hypothesis *x = &r.hyps[k], *y = &f.hyps[k];
                if (x->n_ids != y->n_ids || x->finished != y->finished ||
                    !same_ids(x->ids, y->ids, x->n_ids) || x->logprob != y->logprob ||
                    x->score != y->score)
                    fail_msg("%s run %zu sentence %d: %d ids logprob %.9g vs a fresh model's %d "
                             "ids %.9g",
                             archs[a], i, k, x->n_ids, x->logprob, y->n_ids, y->logprob);
            }
            mt_decode_result_free(&r);
            mt_decode_result_free(&f);
            mt_model_free(fresh);
        }
        /* the limit: a state larger than it is freed, not kept */
        mt_model_set_decode_workspace_limit(m, 1024);
        mt_decode_opts o = opts_beam(1, 0);
        mt_decode_result r;
        decode_ok(m, &longer, &o, &r);
        mt_decode_result_free(&r);
        assert_int_equal(mt_model_decode_workspace_bytes(m), 0);
        size_t before = backend_allocs;
        decode_ok(m, &longer, &o, &r);
        mt_decode_result_free(&r);
        assert_true(backend_allocs > before);
        mt_model_free(m);
    }
}

/* Two threads decoding with one model: each state takes the kept workspace or makes its own,
 * never both at once, so each call's hypotheses equal those of a call alone. */
typedef struct {
    mt_model *m;
    const sources *s;
    const mt_decode_result *want;
    int beam, mismatches;
} decode_thread;

static void *decode_again(void *arg)
{
    decode_thread *t = arg;
    for (int k = 0; k < 6; k++) {
        mt_decode_opts o = opts_beam(t->beam, 0);
        mt_decode_result r;
        if (mt_decode(t->m, t->s->ptr, t->s->len, t->s->n, &o, &r)) {
            t->mismatches++;
            continue;
        }
        for (int i = 0; i < t->s->n; i++)
            if (r.hyps[i].n_ids != t->want->hyps[i].n_ids ||
                !same_ids(r.hyps[i].ids, t->want->hyps[i].ids, r.hyps[i].n_ids) ||
                r.hyps[i].logprob != t->want->hyps[i].logprob)
                t->mismatches++;
        mt_decode_result_free(&r);
    }
    return NULL;
}

static void test_decode_workspace_threads(void **state)
{
    (void)state;
    static const int A[] = {13, 2, 9, 5}, B[] = {4, 1, 6};
    mt_model *m = tiny_model("transformer", 7);
    sources a, b;
    make_sources(&a, A, 4, 1);
    make_sources(&b, B, 3, 2);
    mt_decode_opts oa = opts_beam(1, 0), ob = opts_beam(3, 0);
    mt_decode_result want_a, want_b;
    decode_ok(m, &a, &oa, &want_a);
    decode_ok(m, &b, &ob, &want_b);
    decode_thread t[2] = {{m, &a, &want_a, 1, 0}, {m, &b, &want_b, 3, 0}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&th[i], NULL, decode_again, &t[i]), 0);
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    assert_int_equal(t[0].mismatches, 0);
    assert_int_equal(t[1].mismatches, 0);
    mt_decode_result_free(&want_a);
    mt_decode_result_free(&want_b);
    mt_model_free(m);
}

/* ---------------------------------------------------------------- greedy */

static void greedy_vs_naive(const char *arch)
{
    int finished = 0, total = 0;
    for (uint64_t seed = 1; seed <= 3; seed++) {
        mt_model *m = tiny_model(arch, seed);
        sources s;
        make_sources(&s, MIXED_LENGTHS, N_MIXED, seed);
        mt_decode_opts o = opts_beam(1, 0);
        mt_decode_result r;
        decode_ok(m, &s, &o, &r);
        for (int i = 0; i < s.n; i++) {
            mt_hypothesis ref;
            int max_new = mt_decode_max_new(m, s.len[i], &o);
            assert_int_equal(max_new, 2 * s.len[i] + 10);
            assert_int_equal(mt_decode_greedy_naive(m, s.ids[i], s.len[i], max_new, 1.0f, &ref), 0);
            assert_same_hyp(&r.hyps[i], &ref, i);
            assert_true(r.hyps[i].n_ids <= max_new);
            finished += r.hyps[i].finished;
            total++;
            mt_hypothesis_clear(&ref);
        }
        mt_decode_result_free(&r);
        mt_model_free(m);
    }
    print_message("%s: batched greedy = naive greedy on %d sentences (%d ended with <eos>)\n", arch,
                  total, finished);
    assert_true(finished > 0 && finished < total); /* both endings were exercised */
}

static void test_greedy_matches_naive_transformer(void **state)
{
    (void)state;
    greedy_vs_naive("transformer");
}

static void test_greedy_matches_naive_mamba(void **state)
{
    (void)state;
    greedy_vs_naive("mamba");
}

/* ---------------------------------------------------------------- beam */

static void beam_checks(const char *arch)
{
    int better = 0, worse = 0, total = 0;
    for (uint64_t seed = 1; seed <= 3; seed++) {
        mt_model *m = tiny_model(arch, seed);
        sources s;
        make_sources(&s, MIXED_LENGTHS, N_MIXED, seed + 100);
        mt_decode_opts og = opts_beam(1, 0), o4 = opts_beam(4, 0);
        float lp = seed == 3 ? 0.6f : 1.0f; /* a length penalty other than 1 once */
        og.length_penalty = o4.length_penalty = lp;
        mt_decode_result greedy, beam;
        decode_ok(m, &s, &og, &greedy);
        decode_ok(m, &s, &o4, &beam);
        for (int i = 0; i < s.n; i++) {
            /* the batched search = the naive one, sentence by sentence */
            mt_hypothesis ref;
            int max_new = mt_decode_max_new(m, s.len[i], &o4);
            assert_int_equal(mt_decode_beam_naive(m, s.ids[i], s.len[i], max_new, 4, lp, &ref), 0);
            assert_same_hyp(&beam.hyps[i], &ref, i);
            mt_hypothesis_clear(&ref);
            /* beam search of width 1 (Hugging Face semantics, naive reference) is greedy */
            assert_int_equal(mt_decode_beam_naive(m, s.ids[i], s.len[i], max_new, 1, lp, &ref), 0);
            assert_same_hyp(&greedy.hyps[i], &ref, i);
            mt_hypothesis_clear(&ref);
            /* a wider search usually finds a better score than greedy's, but not always: the
             * greedy path can be pruned early by beams that look better then and end worse */
            if (beam.hyps[i].score < greedy.hyps[i].score - 1e-6) {
                print_message("%s seed %d sentence %d: beam score %.5f < greedy %.5f\n", arch,
                              (int)seed, i, beam.hyps[i].score, greedy.hyps[i].score);
                worse++;
            }
            better += beam.hyps[i].score > greedy.hyps[i].score + 1e-6;
            total++;
        }
        mt_decode_result_free(&greedy);
        mt_decode_result_free(&beam);
        mt_model_free(m);
    }
    print_message("%s: beam 4 = naive beam 4 on %d sentences; its score beats greedy's on %d, "
                  "ties on %d, loses on %d\n",
                  arch, total, better, total - better - worse, worse);
    assert_true(better >= total / 2);
    assert_true(worse <= total / 10);
}

static void test_beam_matches_naive_transformer(void **state)
{
    (void)state;
    beam_checks("transformer");
}

static void test_beam_matches_naive_mamba(void **state)
{
    (void)state;
    beam_checks("mamba");
}

/* One batch of all sentences = one call per sentence, for greedy and beam 5. */
static void test_batched_equals_single(void **state)
{
    (void)state;
    const char *archs[] = {"transformer", "mamba"};
    for (int a = 0; a < 2; a++) {
        mt_model *m = tiny_model(archs[a], 7);
        sources s;
        make_sources(&s, MIXED_LENGTHS, N_MIXED, 7);
        for (int beam = 1; beam <= 5; beam += 4) {
            mt_decode_opts o = opts_beam(beam, 0);
            mt_decode_result all;
            decode_ok(m, &s, &o, &all);
            assert_true(all.state_bytes > 0);
            /* the model's state of one sentence, without the working set: Mamba's is one
             * fixed size per row, whatever the sentences and their lengths */
            size_t fixed = mt_model_decode_state_bytes(m, beam, 1, 0);
            if (a == 1) assert_int_equal(all.model_state_bytes, fixed);
            assert_true(all.model_state_bytes > 0 && all.model_state_bytes < all.state_bytes);
            for (int i = 0; i < s.n; i++) {
                sources one = {.n = 1, .len = {s.len[i]}, .ptr = {s.ids[i]}};
                mt_decode_result r;
                decode_ok(m, &one, &o, &r);
                assert_same_hyp(&all.hyps[i], &r.hyps[0], i);
                assert_true(r.state_bytes < all.state_bytes);
                if (a == 1) assert_int_equal(r.model_state_bytes, fixed);
                /* a Transformer's KV cache grows with the length decoded */
                else assert_true(r.model_state_bytes <= all.model_state_bytes);
                mt_decode_result_free(&r);
            }
            mt_decode_result_free(&all);
        }
        mt_model_free(m);
    }
}

/* Greedy and beam search give the same hypotheses at one thread and at two where their work
 * between steps is shared among the threads (mt_decode_pick_rows, all_candidates: six sources x
 * 12,000 logits, past MT_DECODE_PARALLEL_LOGITS), bit for bit: a row's pick and a sentence's
 * candidates are the same whichever thread makes them. */
static void test_searches_any_threads(void **state)
{
    (void)state;
    const char *archs[] = {"transformer", "mamba"};
    int saved = omp_get_max_threads();
    for (int a = 0; a < 2; a++) {
        mt_model_config cfg;
        tiny_config(&cfg, archs[a], 12000);
        mt_model *m = mt_model_create(&cfg, mt_backend_cpu(), 11);
        assert_non_null(m);
        sources s;
        make_sources(&s, MIXED_LENGTHS, N_MIXED, 11);
        assert_true((size_t)N_MIXED * 12000 > MT_DECODE_PARALLEL_LOGITS);
        for (int beam = 1; beam <= 5; beam += 4) {
            mt_decode_opts o = opts_beam(beam, 8);
            mt_decode_result r[2];
            for (int t = 0; t < 2; t++) {
                omp_set_num_threads(t + 1);
                decode_ok(m, &s, &o, &r[t]);
            }
            omp_set_num_threads(saved);
            for (int i = 0; i < s.n; i++) {
                const mt_hypothesis *x = &r[0].hyps[i], *y = &r[1].hyps[i];
                assert_same_hyp(x, y, i);
                assert_memory_equal(&x->logprob, &y->logprob, sizeof x->logprob);
            }
            mt_decode_result_free(&r[0]);
            mt_decode_result_free(&r[1]);
        }
        mt_model_free(m);
    }
    print_message("searches: greedy and beam 5 over six sources of 12,000-piece models, one "
                  "thread and two: the same hypotheses, bit for bit\n");
}

static void overfit(const char *arch, float lr)
{
    mt_model_config cfg;
    tiny_config(&cfg, arch, V);
    mt_model *m = mt_model_create(&cfg, mt_backend_cpu(), 3);
    assert_non_null(m);
    pairs p;
    make_pairs(&p, 12345);
    double loss;
    /* until every target token is near-certain */
    int step = train(m, &p, 1500, lr, 0.01, &loss);
    sources s = {.n = N_PAIRS};
    for (int i = 0; i < N_PAIRS; i++) {
        s.len[i] = p.src_len[i];
        s.ptr[i] = p.src[i];
    }
    int exact[2] = {0, 0};
    for (int k = 0; k < 2; k++) {
        mt_decode_opts o = opts_beam(k ? 5 : 1, 0);
        mt_decode_result r;
        decode_ok(m, &s, &o, &r);
        for (int i = 0; i < N_PAIRS; i++)
            exact[k] += r.hyps[i].finished && r.hyps[i].n_ids == p.tgt_len[i] &&
                        same_ids(r.hyps[i].ids, p.tgt[i], p.tgt_len[i]);
        mt_decode_result_free(&r);
    }
    print_message("%s overfit: %d AdamW steps (lr %g) to loss %.4f; exact targets: greedy %d/%d, "
                  "beam 5 %d/%d\n",
                  arch, step, lr, loss, exact[0], N_PAIRS, exact[1], N_PAIRS);
    assert_int_equal(exact[0], N_PAIRS);
    assert_int_equal(exact[1], N_PAIRS);
    mt_model_free(m);
}

static void test_overfit_transformer(void **state)
{
    (void)state;
    overfit("transformer", 3e-3f);
}

static void test_overfit_mamba(void **state)
{
    (void)state;
    overfit("mamba", 1e-2f);
}

/* ---------------------------------------------------------------- streaming and cancel */

typedef struct {
    int greedy; /* 1: each event must extend the last one by one token */
    int32_t streamed[N_MIXED][64]; /* greedy: the tokens the non-final events added */
    int n_streamed[N_MIXED]; /* non-final events' current length */
    int32_t final[N_MIXED][64];
    int n_final[N_MIXED], finals[N_MIXED];
    int events, cancel_after, after_cancel;
    atomic_int cancel;
} recorder;

static void record(void *user, const mt_decode_event *ev)
{
    recorder *r = user;
    int s = ev->sentence;
    assert_true(s >= 0 && s < N_MIXED);
    assert_int_equal(r->finals[s], 0); /* nothing after a sentence's final event */
    assert_int_equal(ev->token, ev->n_tokens ? ev->tokens[ev->n_tokens - 1] : -1);
    if (ev->final) {
        r->finals[s]++;
        r->n_final[s] = ev->n_tokens;
        if (ev->n_tokens) memcpy(r->final[s], ev->tokens, (size_t)ev->n_tokens * sizeof(int32_t));
        return;
    }
    /* one event per live sentence per step: the best hypothesis grows by one token */
    assert_int_equal(ev->n_tokens, r->n_streamed[s] + 1);
    if (r->greedy) {
        assert_true(same_ids(ev->tokens, r->streamed[s], r->n_streamed[s]));
        r->streamed[s][r->n_streamed[s]] = ev->token;
    }
    r->n_streamed[s]++;
    r->after_cancel += atomic_load(&r->cancel);
    if (++r->events == r->cancel_after) atomic_store(&r->cancel, 1);
}

static void check_final_events(const recorder *rec, const mt_decode_result *r)
{
    for (int i = 0; i < r->n; i++) {
        assert_int_equal(rec->finals[i], 1);
        assert_int_equal(rec->n_final[i], r->hyps[i].n_ids);
        assert_true(same_ids(rec->final[i], r->hyps[i].ids, r->hyps[i].n_ids));
    }
}

/* Decode with a recorder that cancels after cancel_after events (0: never). */
static recorder *recorded(mt_model *m, const sources *s, int beam, int cancel_after,
                          mt_decode_result *r)
{
    recorder *rec = calloc(1, sizeof *rec);
    rec->greedy = beam == 1;
    rec->cancel_after = cancel_after;
    mt_decode_opts o = opts_beam(beam, 0);
    o.on_token = record;
    o.user = rec;
    o.cancel = &rec->cancel;
    decode_ok(m, s, &o, r);
    check_final_events(rec, r);
    return rec;
}

static void test_stream_and_cancel(void **state)
{
    (void)state;
    mt_model *m = tiny_model("mamba", 2);
    sources s;
    make_sources(&s, MIXED_LENGTHS, N_MIXED, 2);
    for (int beam = 1; beam <= 3; beam += 2) {
        mt_decode_result full, cut;
        recorder *rec = recorded(m, &s, beam, 0, &full);
        assert_int_equal(full.cancelled, 0);
        int outputs = 0; /* the most outputs (ids and <eos>) of a sentence: 1 prefill + steps */
        for (int i = 0; i < s.n; i++) {
            if (beam == 1) {
                /* greedy streams exactly the final tokens */
                assert_int_equal(rec->n_streamed[i], full.hyps[i].n_ids);
                assert_true(same_ids(rec->streamed[i], full.hyps[i].ids, full.hyps[i].n_ids));
            }
            int n_out = full.hyps[i].n_ids + full.hyps[i].finished;
            if (n_out > outputs) outputs = n_out;
        }
        if (beam == 1) assert_int_equal(full.steps, outputs - 1);
        int events = rec->events;
        free(rec);

        /* cancel from the callback half way: decoding stops at the next step's check */
        rec = recorded(m, &s, beam, events / 2, &cut);
        assert_int_equal(cut.cancelled, 1);
        assert_true(cut.steps < full.steps);
        assert_true(rec->after_cancel < N_MIXED); /* only the rest of the cancelling step */
        for (int i = 0; i < s.n; i++) {
            assert_true(cut.hyps[i].n_ids <= cut.steps + 1);
            if (beam == 1) /* greedy stopped early: a prefix of the full result */
                assert_true(cut.hyps[i].n_ids <= full.hyps[i].n_ids &&
                            same_ids(cut.hyps[i].ids, full.hyps[i].ids, cut.hyps[i].n_ids));
        }
        print_message("beam %d: %d events over %d steps; cancelled after %d events at step %d\n",
                      beam, events, full.steps, events / 2, cut.steps);
        free(rec);
        mt_decode_result_free(&full);
        mt_decode_result_free(&cut);
    }

    /* a flag already set: nothing is decoded, every sentence still gets its final event */
    recorder *rec = calloc(1, sizeof *rec);
    atomic_store(&rec->cancel, 1);
    mt_decode_opts o = opts_beam(1, 0);
    o.on_token = record;
    o.user = rec;
    o.cancel = &rec->cancel;
    mt_decode_result r;
    decode_ok(m, &s, &o, &r);
    assert_int_equal(r.cancelled, 1);
    assert_int_equal(r.steps, 0);
    assert_int_equal(rec->events, 0);
    check_final_events(rec, &r);
    for (int i = 0; i < s.n; i++) assert_int_equal(r.hyps[i].n_ids, 0);
    mt_decode_result_free(&r);
    free(rec);
    mt_model_free(m);
}

/* ---------------------------------------------------------------- options and limits */

static void test_lengths_and_errors(void **state)
{
    (void)state;
    mt_model *m = tiny_model("transformer", 1);
    mt_decode_opts o = opts_beam(5, 0);
    assert_int_equal(mt_decode_max_new(m, 4, &o), 18);
    assert_int_equal(mt_decode_max_new(m, 40, &o), 64); /* capped by max_positions 64 */
    assert_int_equal(mt_decode_max_new(m, 64, &o), -1); /* 64 + <eos> does not fit */
    assert_non_null(strstr(mt_last_error(), "exceeds the model's 64 positions"));
    o.max_new_tokens = 3;
    assert_int_equal(mt_decode_max_new(m, 40, &o), 3);

    sources s;
    const int lens[] = {4, 70};
    make_sources(&s, lens, 1, 1);
    s.n = 2;
    static int32_t long_src[70];
    for (int i = 0; i < 70; i++) long_src[i] = FIRST_WORD;
    s.len[1] = 70;
    s.ptr[1] = long_src;
    mt_decode_result r;
    assert_int_equal(mt_decode(m, s.ptr, s.len, s.n, &o, &r), -1);
    assert_int_equal(r.failed_input, 1);
    /* failed_input names the source; the message says what is wrong with it */
    assert_string_equal(mt_last_error(),
                        "source of 70 tokens (+ <eos>) exceeds the model's 64 positions");

    s.n = 1;
    o.beam = 0;
    assert_int_equal(mt_decode(m, s.ptr, s.len, s.n, &o, &r), -1);
    assert_non_null(strstr(mt_last_error(), "beam size 0"));
    o.beam = 40; /* 2K > V */
    assert_int_equal(mt_decode(m, s.ptr, s.len, s.n, &o, &r), -1);
    assert_non_null(strstr(mt_last_error(), "vocabulary of at least 81 tokens (64 here)"));
    o.beam = 2;
    o.length_penalty = NAN;
    assert_int_equal(mt_decode(m, s.ptr, s.len, s.n, &o, &r), -1);
    o.length_penalty = 1.0f;
    o.max_new_tokens = 1;
    assert_int_equal(mt_decode(m, s.ptr, s.len, s.n, &o, &r), 0);
    assert_true(r.hyps[0].n_ids <= 1);
    mt_decode_result_free(&r);
    assert_int_equal(mt_decode(m, s.ptr, s.len, 0, &o, &r), 0); /* nothing to do */
    assert_int_equal(r.n, 0);

    /* 2 decoder layers x (self k, v over 10 positions + cross k, v over 7) x C 32, 3 rows */
    assert_int_equal(mt_model_decode_state_bytes(m, 3, 10, 7), (size_t)2 * 2 * 32 * 17 * 3 * 4);

    /* a vocabulary limit keeps ids at or past it out of the output, greedy and beam alike;
     * without it the same sources do produce such ids (so the check can fail) */
    make_sources(&s, MIXED_LENGTHS, N_MIXED, 3);
    const int beams[] = {1, 4};
    for (int k = 0; k < 2; k++) {
        int past_limit = 0;
        o = opts_beam(beams[k], 12);
        decode_ok(m, &s, &o, &r);
        for (int i = 0; i < s.n; i++)
            for (int t = 0; t < r.hyps[i].n_ids; t++) past_limit += r.hyps[i].ids[t] >= 20;
        mt_decode_result_free(&r);
        assert_true(past_limit > 0);
        o.vocab_limit = 20;
        decode_ok(m, &s, &o, &r);
        for (int i = 0; i < s.n; i++)
            for (int t = 0; t < r.hyps[i].n_ids; t++) assert_true(r.hyps[i].ids[t] < 20);
        mt_decode_result_free(&r);
    }
    mt_model_free(m);

    /* a Mamba model has no position table: the default length grows with the source */
    m = tiny_model("mamba", 1);
    o = opts_beam(5, 0);
    assert_int_equal(mt_decode_max_new(m, 200, &o), 410);
    mt_model_config cfg = *mt_model_get_config(m);
    /* 2 layers x d_inner 64 x (conv 4 + state 8) floats per row, and each layer's step A
     * (d_inner 64 x state 8), shared by the rows */
    assert_int_equal(mt_model_config_decode_state_bytes(&cfg, 3, 100, 0),
                     (size_t)3 * 2 * 64 * 12 * 4 + 2 * 64 * 8 * 4);
    mt_model_free(m);
}

int main(void)
{
    /* These models are tiny: every operation is smaller than OpenMP's fork/join cost, and on a
     * busy two-core machine spinning threads made the binary 5x slower. The parallel paths
     * are the backend tests' business; the searches here are single-threaded logic. */
    omp_set_num_threads(1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decode_reuses_workspace),
        cmocka_unit_test(test_decode_workspace_threads),
        cmocka_unit_test(test_greedy_matches_naive_transformer),
        cmocka_unit_test(test_greedy_matches_naive_mamba),
        cmocka_unit_test(test_beam_matches_naive_transformer),
        cmocka_unit_test(test_beam_matches_naive_mamba),
        cmocka_unit_test(test_batched_equals_single),
        cmocka_unit_test(test_searches_any_threads),
        cmocka_unit_test(test_overfit_transformer),
        cmocka_unit_test(test_overfit_mamba),
        cmocka_unit_test(test_stream_and_cancel),
        cmocka_unit_test(test_lengths_and_errors),
    };
    return cmocka_run_group_tests_name("decode", tests, NULL, NULL);
}
