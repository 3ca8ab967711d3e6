/* The training step figures: the FLOP rate of whole training steps (forward + backward +
 * AdamW on a token-budget batch, dropout on) and of the model's matrix products inside them,
 * against the CPU backend's product alone on exactly the same shapes with hot operands (the
 * BLAS the backend picks for the shape, OpenBLAS or BLIS), and where the rest of the step's
 * time goes, operation by operation. The bare rate is the best those libraries do on those
 * shapes on this machine; the gap is what cold operands, strided views and everything around
 * the products cost. */
#include "bench/bench.h"

#include <stdlib.h>
#include <string.h>

#include "mtlab/clock.h"
#include "mtlab/error.h"
#include "mtlab/rng.h"
#include "mtlab/tokenizer.h"

/* A group of bare calls lasts at least this long, so the clock's resolution does not matter. */
#define BARE_GROUP_SECONDS 0.01

double bench_bare_sgemm_seconds(const bench_gemm_shape *s)
{
    /* stored operands: a (trans_a ? k : m) rows of lda, b (trans_b ? n : k) rows of ldb */
    size_t na = (size_t)(s->trans_a ? s->k : s->m) * (size_t)s->lda;
    size_t nb = (size_t)(s->trans_b ? s->n : s->k) * (size_t)s->ldb;
    size_t nc = (size_t)s->m * (size_t)s->ldc;
    float *a = mt_xmalloc(na * sizeof *a), *b = mt_xmalloc(nb * sizeof *b);
    float *c = mt_xmalloc(nc * sizeof *c);
    for (size_t i = 0; i < na; i++) a[i] = (float)(i % 17) * 0.01f;
    for (size_t i = 0; i < nb; i++) b[i] = (float)(i % 13) * 0.01f;
    memset(c, 0, nc * sizeof *c);
    const mt_backend *cpu = mt_backend_cpu();
    double t0 = mt_now_s();
    cpu->gemm(s->trans_a, s->trans_b, s->m, s->n, s->k, 1.0f, a, s->lda, b, s->ldb, s->beta, c,
              s->ldc);
    double first = mt_now_s() - t0;
    int reps = first > 0 && first < BARE_GROUP_SECONDS ? (int)(BARE_GROUP_SECONDS / first) + 1 : 1;
    t0 = mt_now_s();
    for (int i = 0; i < reps; i++)
        cpu->gemm(s->trans_a, s->trans_b, s->m, s->n, s->k, 1.0f, a, s->lda, b, s->ldb, s->beta, c,
                  s->ldc);
    double per_call = (mt_now_s() - t0) / reps;
    free(a);
    free(b);
    free(c);
    return per_call;
}

static int32_t random_word(mt_rng *rng, int V)
{
    /* ordinary pieces only: the ids up to <unk> frame the sequences */
    return (int32_t)(MT_UNK_ID + 1 + mt_rng_below(rng, (uint64_t)(V - MT_UNK_ID - 1)));
}

void bench_make_batch(const mt_model_config *cfg, int encdec, int B, int S, int T, mt_batch *b,
                      int32_t *ids, int32_t *src)
{
    mt_rng rng;
    mt_rng_init(&rng, 7, 0);
    int V = cfg->vocab_size;
    for (int r = 0; r < B; r++) {
        int32_t *row = ids + (size_t)r * T;
        for (int t = 0; t < T; t++) row[t] = random_word(&rng, V);
        row[T - 1] = cfg->eos_id;
        if (encdec) {
            row[0] = cfg->decoder_start_id;
            int32_t *srow = src + (size_t)r * S;
            for (int t = 0; t < S; t++) srow[t] = random_word(&rng, V);
            srow[S - 1] = cfg->eos_id;
        } else {
            row[T / 2] = cfg->sep_id;
        }
    }
    *b = (mt_batch){.B = B, .T = T, .ids = ids, .S = encdec ? S : 0, .src = encdec ? src : NULL};
}

int bench_train_step(mt_model *m, const mt_batch *b, int step)
{
    mt_step_opts o = {.train = 1, .seed = 1, .step = (uint64_t)step, .label_smoothing = 0.1f};
    mt_adamw_hparams h = {
        .lr = 1e-4f, .beta1 = 0.9f, .beta2 = 0.98f, .eps = 1e-8f, .weight_decay = 0.001f};
    double loss;
    size_t n_tokens;
    mt_model_zero_grad(m);
    if (mt_model_forward_backward(m, b, &o, 0.0f, &loss, &n_tokens)) return -1;
    return mt_model_adamw_step(m, &h, step + 1);
}

void bench_train_result_free(bench_train_result *r)
{
    free(r->shapes);
    free(r->bare_call_seconds);
    r->shapes = NULL;
    r->bare_call_seconds = NULL;
}

int bench_train_gemm(const char *preset, int B, int S, int T, int repeat, bench_train_result *r)
{
    memset(r, 0, sizeof *r);
    r->preset = preset;
    mt_model_config cfg;
    if (mt_model_preset(&cfg, preset)) return -1;
    mt_model *m = mt_model_create(&cfg, bench_counting_backend(), 1);
    if (!m) return -1;
    int encdec = mt_model_is_encdec(m);
    int32_t *ids = mt_xmalloc((size_t)B * T * sizeof *ids);
    int32_t *src = mt_xmalloc((size_t)B * (S > 0 ? S : 1) * sizeof *src);
    mt_batch b;
    bench_make_batch(&cfg, encdec, B, S, T, &b, ids, src);
    r->B = B;
    r->S = encdec ? S : 0;
    r->T = T;
    r->tokens = (size_t)B * (size_t)(r->S + T);
    /* per repeat: step, in-gemm and bare seconds, both ratios; then per shape and repeat: bare */
    double *v = mt_xmalloc((size_t)repeat * 5 * sizeof *v);
    double *step_s = v, *gemm_s = v + repeat, *bare_s = v + 2 * repeat, *ratio = v + 3 * repeat;
    double *step_ratio = v + 4 * repeat;
    double *per_shape = NULL;
    int rc = bench_train_step(m, &b, 0); /* warm-up: allocates gradients, moments, activations */
    for (int i = 0; i < repeat && !rc; i++) {
        bench_counters_reset(NULL, 0);
        double t0 = mt_now_s();
        rc = bench_train_step(m, &b, i + 1);
        step_s[i] = mt_now_s() - t0;
        const bench_counters *c = bench_counters_get();
        if (i == 0) {
            r->n_shapes = c->n_shapes;
            r->gemm_flops = c->gemm_flops;
            r->gemm_calls = c->gemm_calls;
            r->shapes = mt_xmalloc((size_t)c->n_shapes * sizeof *r->shapes);
            memcpy(r->shapes, c->shapes, (size_t)c->n_shapes * sizeof *r->shapes);
            per_shape = mt_xmalloc((size_t)c->n_shapes * repeat * sizeof *per_shape);
        }
        if (c->n_shapes != r->n_shapes) {
            rc = mt_error("%s: the gemm shapes changed between training steps", preset);
            break;
        }
        if (i == 0) r->n_ops = c->n_ops;
        for (int k = 0; k < c->n_ops && k < r->n_ops; k++) {
            r->ops[k].name = c->ops[k].name;
            r->ops[k].calls = c->ops[k].calls;
            r->ops[k].seconds += c->ops[k].seconds / repeat;
        }
        gemm_s[i] = c->gemm_seconds;
        bare_s[i] = 0;
        for (int k = 0; k < r->n_shapes; k++) {
            double call = bench_bare_sgemm_seconds(&c->shapes[k]);
            per_shape[(size_t)k * repeat + i] = call;
            bare_s[i] += (double)c->shapes[k].calls * call;
        }
        ratio[i] = bare_s[i] / gemm_s[i];
        step_ratio[i] = bare_s[i] / step_s[i];
    }
    if (!rc) {
        r->bare_call_seconds = mt_xmalloc((size_t)r->n_shapes * sizeof *r->bare_call_seconds);
        for (int k = 0; k < r->n_shapes; k++)
            r->bare_call_seconds[k] = bench_median(per_shape + (size_t)k * repeat, repeat);
        r->step_seconds = bench_median(step_s, repeat);
        r->gemm_seconds = bench_median(gemm_s, repeat);
        r->bare_seconds = bench_median(bare_s, repeat);
        r->ratio = bench_median(ratio, repeat);
        r->step_ratio = bench_median(step_ratio, repeat);
    } else {
        bench_train_result_free(r);
    }
    bench_counters_free();
    free(per_shape);
    free(v);
    free(ids);
    free(src);
    mt_model_free(m);
    return rc;
}
