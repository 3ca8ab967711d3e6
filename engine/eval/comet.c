/* COMET regression metrics (mtlab/comet.h): loading a model directory, sentence embeddings
 * over the XLM-R encoder, the estimator. */
#include "eval/comet_internal.h"
#include "models/xlmr.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mtlab/error.h"
#include "mtlab/files.h"
#include "mtlab/rng.h"
#include "mtlab/safetensors.h"
#include "mtlab/tokenizer.h"
#include "mtlab/torch_checkpoint.h"

/* XLM-R's fairseq ids; sentencepiece's own are <unk>=0 <s>=1 </s>=2, then pieces from 3,
 * which fairseq shifts by one to make room for <pad>. */
enum { XLMR_BOS = 0, XLMR_PAD = 1, XLMR_EOS = 2, XLMR_UNK = 3, XLMR_SPM_OFFSET = 1 };
/* batches of sentences of similar length: at most this many sentences, and rows */
enum { COMET_BATCH = 16, COMET_BATCH_ROWS = 4096, COMET_CHUNK = 256 };
#define COMET_PREFIX "encoder.model."
#define COMET_LN_EPS 1e-12 /* LayerwiseAttention's masked layer norm */

struct mt_comet {
    const mt_backend *be;
    mt_comet_config cfg;
    mt_tokenizer *tok; /* NULL for mt_comet_random */
    float *params; /* backend: encoder, then the estimator */
    size_t n_params;
    xlmr_params enc;
    float *est_w[MT_COMET_MAX_HIDDEN + 1]; /* (out, in) */
    float *est_b[MT_COMET_MAX_HIDDEN + 1]; /* (out) */
    float *layer_w; /* (L + 1) host: gamma * transform(scalars), 0 off the layer */
};

mt_comet_config mt_comet_config_wmt22(void)
{
    mt_comet_config c = {.V = 250002,
                         .C = 1024,
                         .H = 16,
                         .F = 4096,
                         .L = 24,
                         .P = 514,
                         .eps = 1e-5f,
                         .layer = -1,
                         .sparsemax = 1,
                         .layer_norm = 0,
                         .pool = MT_COMET_POOL_AVG,
                         .n_hidden = 2,
                         .hidden = {3072, 1024},
                         .act = MT_ACT_TANH,
                         .final_act = -1};
    return c;
}

const mt_comet_config *mt_comet_config_of(const mt_comet *m) { return &m->cfg; }

/* ---------------------------------------------------------------- the layer mix */
/* sparsemax(z)_i = max(z_i - tau, 0), tau such that the result sums to 1: with z sorted
 * descending, k = max{k : 1 + k z_(k) > sum_{j<=k} z_(j)}, tau = (sum_{j<=k} z_(j) - 1) / k */
void comet_sparsemax(float *p, const float *z, int n)
{
    float *s = mt_xmalloc((size_t)n * sizeof *s);
    memcpy(s, z, (size_t)n * sizeof *s);
    for (int i = 1; i < n; i++) /* insertion sort, descending: n is the layer count */
        for (int j = i; j > 0 && s[j] > s[j - 1]; j--) {
            float t = s[j];
            s[j] = s[j - 1], s[j - 1] = t;
        }
    float cum = 0, tau_sum = 0;
    int k = 0;
    for (int i = 0; i < n; i++) {
        cum += s[i];
        if (1.0f + (float)(i + 1) * s[i] > cum) k = i + 1, tau_sum = cum;
    }
    float tau = (tau_sum - 1.0f) / (float)k;
    for (int i = 0; i < n; i++) p[i] = z[i] > tau ? z[i] - tau : 0.0f;
    free(s);
}

static void softmax_host(float *p, const float *z, int n)
{
    float mx = z[0], sum = 0;
    for (int i = 1; i < n; i++) mx = z[i] > mx ? z[i] : mx;
    for (int i = 0; i < n; i++) sum += p[i] = expf(z[i] - mx);
    for (int i = 0; i < n; i++) p[i] /= sum;
}

/* layer_w from the checkpoint's scalars (L + 1) and gamma */
static void set_layer_weights(mt_comet *m, const float *scalars, float gamma)
{
    int n = m->cfg.L + 1;
    if (m->cfg.layer >= 0) {
        for (int l = 0; l < n; l++) m->layer_w[l] = l == m->cfg.layer ? 1.0f : 0.0f;
        return;
    }
    if (m->cfg.sparsemax) comet_sparsemax(m->layer_w, scalars, n);
    else softmax_host(m->layer_w, scalars, n);
    for (int l = 0; l < n; l++) m->layer_w[l] *= gamma;
}

/* ---------------------------------------------------------------- parameters */
typedef struct {
    xlmr_tensor *t;
    int n;
    float *mix; /* (L + 2) host: the scalars, then gamma (read, not part of the block) */
} tensor_list;

static size_t estimator_count(const mt_comet_config *c)
{
    size_t n = 0, in = 6 * (size_t)c->C;
    for (int k = 0; k <= c->n_hidden; k++) {
        size_t out = k < c->n_hidden ? (size_t)c->hidden[k] : 1;
        n += out * in + out, in = out;
    }
    return n;
}

static int setup(mt_comet *m, tensor_list *tl)
{
    const mt_comet_config *c = &m->cfg;
    size_t n_enc = xlmr_params_count(&(xlmr_config){c->V, c->C, c->H, c->F, c->L, c->P, c->eps});
    m->n_params = n_enc + estimator_count(c);
    m->params = m->be->alloc(m->n_params * sizeof(float));
    if (!m->params) return mt_error_context("COMET parameters (%zu floats)", m->n_params);
    xlmr_config xc = {c->V, c->C, c->H, c->F, c->L, c->P, c->eps};
    tl->t = mt_xcalloc((size_t)xlmr_tensor_count(&xc) + 2 * (c->n_hidden + 1), sizeof *tl->t);
    tl->n = xlmr_params_point(&m->enc, tl->t, m->params, &xc, COMET_PREFIX);
    float *base = m->params + n_enc;
    int in = 6 * c->C;
    for (int k = 0; k <= c->n_hidden; k++) {
        int out = k < c->n_hidden ? c->hidden[k] : 1;
        /* nn.Sequential indices: Linear, activation, Dropout per hidden layer */
        xlmr_tensor *w = &tl->t[tl->n++], *b = &tl->t[tl->n++];
        snprintf(w->name, sizeof w->name, "estimator.ff.%d.weight", 3 * k);
        snprintf(b->name, sizeof b->name, "estimator.ff.%d.bias", 3 * k);
        w->data = m->est_w[k] = base, w->ndim = 2, w->shape[0] = out, w->shape[1] = in;
        base += (size_t)out * in;
        b->data = m->est_b[k] = base, b->ndim = 1, b->shape[0] = out;
        base += out;
        in = out;
    }
    m->layer_w = mt_xcalloc((size_t)c->L + 1, sizeof *m->layer_w);
    tl->mix = mt_xcalloc((size_t)c->L + 2, sizeof *tl->mix);
    return 0;
}

void mt_comet_free(mt_comet *m)
{
    if (!m) return;
    if (m->params) m->be->free(m->params);
    xlmr_params_free(&m->enc);
    if (m->tok) mt_tokenizer_free(m->tok);
    free(m->layer_w);
    free(m);
}

mt_comet *mt_comet_random(const mt_comet_config *cfg, const mt_backend *be, uint64_t seed)
{
    mt_comet *m = mt_xcalloc(1, sizeof *m);
    m->be = be, m->cfg = *cfg;
    tensor_list tl = {0};
    if (setup(m, &tl)) {
        free(tl.t), free(tl.mix), mt_comet_free(m);
        return NULL;
    }
    mt_rng r;
    mt_rng_init(&r, seed, 0);
    size_t biggest = 0;
    for (int i = 0; i < tl.n; i++) {
        size_t n = (size_t)tl.t[i].shape[0] * (tl.t[i].ndim == 2 ? tl.t[i].shape[1] : 1);
        biggest = n > biggest ? n : biggest;
    }
    float *host = mt_xmalloc(biggest * sizeof *host);
    for (int i = 0; i < tl.n; i++) {
        const xlmr_tensor *t = &tl.t[i];
        size_t n = (size_t)t->shape[0] * (t->ndim == 2 ? t->shape[1] : 1);
        /* BERT's init: N(0, 0.02) matrices (uniform of the same spread: faster at 560M),
         * layer norms 1, biases 0 */
        if (t->ndim == 2) mt_init_uniform(&r, host, n, 0.02f * sqrtf(3.0f));
        else mt_init_fill(host, n, strstr(t->name, "LayerNorm.weight") ? 1.0f : 0.0f);
        be->upload(t->data, host, n * sizeof *host);
    }
    free(host);
    set_layer_weights(m, tl.mix, 1.0f);
    free(tl.t), free(tl.mix);
    return m;
}

/* ---------------------------------------------------------------- reading a directory */
static int exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

static mt_safetensors *open_weights(const char *dir)
{
    char *st_path = mt_path_join(dir, "model.safetensors"),
         *ck = mt_path_join(dir, "checkpoints/model.ckpt");
    mt_safetensors *st = NULL;
    if (exists(st_path)) st = mt_st_open(st_path);
    else if (exists(ck)) st = mt_torch_open(ck);
    else
        mt_error("%s: no COMET weights: neither checkpoints/model.ckpt nor model.safetensors", dir);
    free(st_path), free(ck);
    return st;
}

static const mt_st_tensor *need(const mt_safetensors *st, const char *name, int ndim)
{
    const mt_st_tensor *t = mt_st_find(st, name);
    if (!t) mt_error("%s: missing tensor '%s'", mt_st_name(st), name);
    else if (t->ndim != ndim) {
        mt_error("%s: tensor '%s' has %d dimensions, expected %d", mt_st_name(st), name, t->ndim,
                 ndim);
        return NULL;
    }
    return t;
}

/* The encoder's shapes from its weights; heads and eps from config.json when there is one. */
static int encoder_shapes(mt_comet_config *c, const mt_safetensors *st, const char *dir)
{
    const mt_st_tensor *w = need(st, COMET_PREFIX "embeddings.word_embeddings.weight", 2);
    const mt_st_tensor *p =
        w ? need(st, COMET_PREFIX "embeddings.position_embeddings.weight", 2) : NULL;
    const mt_st_tensor *f =
        p ? need(st, COMET_PREFIX "encoder.layer.0.intermediate.dense.weight", 2) : NULL;
    if (!f) return -1;
    c->V = (int)w->shape[0], c->C = (int)w->shape[1], c->P = (int)p->shape[0],
    c->F = (int)f->shape[0];
    char name[XLMR_NAME_MAX];
    for (c->L = 0;; c->L++) {
        snprintf(name, sizeof name, COMET_PREFIX "encoder.layer.%d.attention.self.query.weight",
                 c->L);
        if (!mt_st_find(st, name)) break;
    }
    if (c->P < 6) return mt_error("%s: %d positions is too few for XLM-R", mt_st_name(st), c->P);
    c->H = c->C % 64 == 0 ? c->C / 64 : 1, c->eps = 1e-5f;
    char *cfg_path = mt_path_join(dir, "config.json");
    int rc = 0;
    if (exists(cfg_path)) {
        json_error_t err;
        FILE *cf = mt_file_fopen(cfg_path, MT_FILE_REGULAR);
        json_t *j = cf ? json_loadf(cf, 0, &err) : NULL;
        int opened = cf != NULL;
        if (cf) fclose(cf);
        if (!opened) rc = -1;
        else if (!j) rc = mt_error("%s:%d: %s", cfg_path, err.line, mt_error_oneline(err.text));
        else {
            json_t *h = json_object_get(j, "num_attention_heads");
            json_t *e = json_object_get(j, "layer_norm_eps");
            json_t *act = json_object_get(j, "hidden_act");
            if (h && json_is_integer(h)) c->H = (int)json_integer_value(h);
            if (e && json_is_number(e)) c->eps = (float)json_number_value(e);
            if (act && (!json_is_string(act) || strcmp(json_string_value(act), "gelu")))
                rc = mt_error("%s: hidden_act must be \"gelu\" (XLM-R's)", cfg_path);
            json_decref(j);
        }
    }
    if (!rc && (c->H < 1 || c->C % c->H))
        rc = mt_error("%s: %d heads do not divide the hidden size %d", cfg_path, c->H, c->C);
    if (!rc && c->layer > c->L)
        rc = mt_error("%s/hparams.yaml: layer %d, but the encoder has %d layers", dir, c->layer,
                      c->L);
    free(cfg_path);
    return rc;
}

static int load_tokenizer(mt_comet *m, const char *dir)
{
    char *path = mt_path_join(dir, "sentencepiece.bpe.model");
    int rc = 0;
    if (!exists(path))
        rc = mt_error("%s: missing: COMET's tokenizer is XLM-R's sentencepiece.bpe.model (from "
                      "xlm-roberta-large), which Unbabel's download does not hold: copy it there",
                      path);
    else if (!(m->tok = mt_tokenizer_load_foreign(path))) rc = -1;
    else {
        static const char *const want[3] = {"<unk>", "<s>", "</s>"};
        for (int i = 0; i < 3 && !rc; i++) {
            const char *piece = mt_tokenizer_id_to_piece(m->tok, i);
            if (!piece || strcmp(piece, want[i]))
                rc = mt_error("%s: not XLM-R's layout: id %d is '%s', expected '%s'", path, i,
                              piece ? piece : "(none)", want[i]);
        }
        int n = mt_tokenizer_vocab_size(m->tok);
        if (!rc && n + XLMR_SPM_OFFSET > m->cfg.V)
            rc = mt_error("%s: %d pieces need %d embedding rows, the encoder has %d", path, n,
                          n + XLMR_SPM_OFFSET, m->cfg.V);
    }
    free(path);
    return rc;
}

static int read_tensors(mt_comet *m, const tensor_list *tl, const mt_safetensors *st)
{
    float *host = NULL;
    size_t cap = 0;
    int rc = 0;
    for (int i = 0; i < tl->n && !rc; i++) {
        const xlmr_tensor *t = &tl->t[i];
        size_t n = (size_t)t->shape[0] * (t->ndim == 2 ? t->shape[1] : 1);
        float *dst = t->data;
        if (!m->be->host_memory) {
            if (n > cap) free(host), host = mt_xmalloc(n * sizeof *host), cap = n;
            dst = host;
        }
        rc = mt_st_read_f32(st, t->name, t->ndim, t->shape, dst);
        if (!rc && !m->be->host_memory) m->be->upload(t->data, host, n * sizeof *host);
    }
    free(host);
    if (rc) return -1;
    char name[XLMR_NAME_MAX];
    const int64_t one[1] = {1};
    for (int l = 0; l <= m->cfg.L && m->cfg.layer < 0; l++) {
        snprintf(name, sizeof name, "layerwise_attention.scalar_parameters.%d", l);
        if (mt_st_read_f32(st, name, 1, one, &tl->mix[l])) return -1;
    }
    float gamma = 1.0f;
    if (m->cfg.layer < 0 && mt_st_read_f32(st, "layerwise_attention.gamma", 1, one, &gamma))
        return -1;
    set_layer_weights(m, tl->mix, gamma);
    return 0;
}

mt_comet *mt_comet_open(const char *dir, const mt_backend *be)
{
    mt_comet *m = mt_xcalloc(1, sizeof *m);
    m->be = be;
    char *hp = mt_path_join(dir, "hparams.yaml");
    int rc = comet_hparams_read(hp, &m->cfg);
    free(hp);
    mt_safetensors *st = rc ? NULL : open_weights(dir);
    tensor_list tl = {0};
    if (!st || encoder_shapes(&m->cfg, st, dir) || load_tokenizer(m, dir) || setup(m, &tl) ||
        read_tensors(m, &tl, st)) {
        if (st) mt_st_close(st);
        free(tl.t), free(tl.mix), mt_comet_free(m);
        return NULL;
    }
    mt_st_close(st);
    free(tl.t), free(tl.mix);
    return m;
}

/* ---------------------------------------------------------------- tokens */
int mt_comet_encode(const mt_comet *m, const char *text, int32_t **ids, int *len)
{
    int *pieces;
    size_t n;
    if (mt_tokenizer_encode(m->tok, text, &pieces, &n)) return -1;
    /* COMET tokenizes with max_length = max_positions - 2 = P - 4, <s> and </s> included */
    size_t keep = (size_t)m->cfg.P - 6;
    if (n > keep) n = keep;
    int32_t *out = mt_xmalloc((n + 2) * sizeof *out);
    out[0] = XLMR_BOS;
    for (size_t i = 0; i < n; i++)
        out[i + 1] = pieces[i] == 0 ? XLMR_UNK : pieces[i] + XLMR_SPM_OFFSET;
    out[n + 1] = XLMR_EOS;
    free(pieces);
    *ids = out, *len = (int)n + 2;
    return 0;
}

/* ---------------------------------------------------------------- sentence embeddings */
typedef struct {
    const mt_comet *m;
    float *mix; /* (BT, C) */
    float *ones; /* (BT*C) for the layer norm's mean */
    float *cls; /* (B, C) pool "default": the last layer at <s> */
    const int *len; /* (B) host */
    int B, T;
} mix_ctx;

/* mix += w_l X_l, or with layer_norm w_l (X_l - mean_b) / sqrt(var_b + 1e-12) per sentence b,
 * mean and var over its real rows and all channels */
static void mix_layer(void *vctx, int l, const float *x)
{
    mix_ctx *c = vctx;
    const mt_backend *be = c->m->be;
    const int C = c->m->cfg.C;
    if (c->cls && l == c->m->cfg.L) be->copy2d(c->cls, C, x, c->T * C, (size_t)c->B, C);
    const float w = c->m->layer_w[l];
    if (w == 0.0f) return;
    if (!c->m->cfg.layer_norm) {
        be->axpy(c->mix, x, (size_t)c->B * c->T * C, w);
        return;
    }
    for (int b = 0; b < c->B; b++) {
        const float *xb = x + (size_t)b * c->T * C;
        float *mb = c->mix + (size_t)b * c->T * C;
        size_t n = (size_t)c->len[b] * C;
        double mean = be->sum(xb, n) / (double)n;
        double var = be->sum_squares(xb, n) / (double)n - mean * mean;
        double a = w / sqrt((var > 0 ? var : 0) + COMET_LN_EPS);
        be->axpy(mb, xb, n, (float)a);
        be->axpy(mb, c->ones, n, (float)(-a * mean));
    }
}

/* out (B, C) = the embeddings of B sequences, padded to T */
static int embed_batch(mt_comet *m, float *out, const mt_comet_seq *const *seqs, int B, int T)
{
    const mt_backend *be = m->be;
    const mt_comet_config *c = &m->cfg;
    xlmr_config xc = {c->V, c->C, c->H, c->F, c->L, c->P, c->eps};
    const size_t BT = (size_t)B * T, C = (size_t)c->C;
    int32_t *ids = mt_xmalloc(BT * sizeof *ids);
    uint8_t *mask = mt_xcalloc(BT, 1);
    float *pool = mt_xcalloc((size_t)B * BT, sizeof *pool);
    int *len = mt_xmalloc((size_t)B * sizeof *len);
    for (int b = 0; b < B; b++) {
        len[b] = seqs[b]->len;
        for (int t = 0; t < T; t++) {
            int real = t < len[b];
            ids[(size_t)b * T + t] = real ? seqs[b]->ids[t] : XLMR_PAD;
            mask[(size_t)b * T + t] = (uint8_t)real;
            if (real) pool[(size_t)b * BT + (size_t)b * T + t] = 1.0f / (float)len[b];
        }
    }
    size_t acts_n = xlmr_acts_count(&xc, B, T);
    size_t dev_floats = acts_n + BT * C * (c->layer_norm ? 2 : 1) + (size_t)B * BT + C * B;
    float *dev = be->alloc(dev_floats * sizeof(float) + BT * (sizeof(int32_t) + 1));
    if (!dev) {
        free(ids), free(mask), free(pool), free(len);
        return mt_error_context("COMET batch of %d x %d tokens", B, T);
    }
    xlmr_acts a;
    xlmr_acts_point(&a, dev, &xc, B, T);
    float *p = dev + acts_n;
    mix_ctx ctx = {.m = m, .len = len, .B = B, .T = T};
    ctx.mix = p, p += BT * C;
    if (c->layer_norm) ctx.ones = p, be->fill(p, BT * C, 1.0f), p += BT * C;
    float *pool_d = p;
    p += (size_t)B * BT;
    float *cls = p;
    p += (size_t)B * C;
    int32_t *ids_d = (int32_t *)p;
    uint8_t *mask_d = (uint8_t *)(ids_d + BT);
    if (c->pool == MT_COMET_POOL_DEFAULT) ctx.cls = cls;
    be->upload(ids_d, ids, BT * sizeof *ids);
    be->upload(mask_d, mask, BT);
    be->memzero(ctx.mix, BT * C * sizeof(float));
    xlmr_forward(
        be, &a, ids_d, &m->enc,
        &(xlmr_call){.cfg = &xc, .B = B, .T = T, .mask = mask_d, .fn = mix_layer, .ctx = &ctx});
    switch (c->pool) {
    case MT_COMET_POOL_AVG:
        /* (B, BT) of 1/len at each sentence's real rows, times the mix (BT, C) */
        be->upload(pool_d, pool, (size_t)B * BT * sizeof *pool);
        be->gemm(0, 0, B, (int)C, (int)BT, 1.0f, pool_d, (int)BT, ctx.mix, (int)C, 0.0f, out,
                 (int)C);
        break;
    case MT_COMET_POOL_CLS: be->copy2d(out, (int)C, ctx.mix, T * (int)C, (size_t)B, (int)C); break;
    case MT_COMET_POOL_DEFAULT: be->copy(out, cls, (size_t)B * C * sizeof(float)); break;
    }
    be->free(dev);
    free(ids), free(mask), free(pool), free(len);
    return 0;
}

static const mt_comet_seq *const *sort_seqs;
static int by_length(const void *a, const void *b)
{
    int la = sort_seqs[*(const int *)a]->len, lb = sort_seqs[*(const int *)b]->len;
    return la != lb ? (la > lb ? -1 : 1)
                    : (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b);
}

/* out (n, C): the embeddings of n sequences, in batches of similar lengths */
static int embed_all(mt_comet *m, float *out, const mt_comet_seq *const *seqs, int n)
{
    const size_t C = (size_t)m->cfg.C;
    int *order = mt_xmalloc((size_t)n * sizeof *order);
    for (int i = 0; i < n; i++) order[i] = i;
    sort_seqs = seqs;
    qsort(order, (size_t)n, sizeof *order, by_length);
    const mt_comet_seq **batch = mt_xmalloc(COMET_BATCH * sizeof *batch);
    float *tmp = m->be->alloc(COMET_BATCH * C * sizeof(float));
    int rc = tmp ? 0 : -1;
    for (int i = 0; i < n && !rc;) {
        int T = seqs[order[i]]->len, B = 0;
        while (i + B < n && B < COMET_BATCH && (B == 0 || (size_t)(B + 1) * T <= COMET_BATCH_ROWS))
            batch[B] = seqs[order[i + B]], B++;
        rc = embed_batch(m, tmp, batch, B, T);
        for (int b = 0; b < B && !rc; b++)
            m->be->copy(out + (size_t)order[i + b] * C, tmp + (size_t)b * C, C * sizeof(float));
        i += B;
    }
    if (tmp) m->be->free(tmp);
    free(batch), free(order);
    return rc;
}

/* ---------------------------------------------------------------- the estimator */
/* dst (N, C) = |a - b| = relu(a - b) + relu(b - a); t scratch (N, C) */
static void abs_diff(const mt_backend *be, float *dst, float *t, const float *a, const float *b,
                     size_t n)
{
    be->copy(t, a, n * sizeof(float));
    be->axpy(t, b, n, -1.0f);
    be->act_forward(MT_ACT_RELU, dst, t, n);
    be->scale(t, n, -1.0f);
    be->act_forward(MT_ACT_RELU, t, t, n);
    be->add(dst, dst, t, n);
}

/* scores (N) host from the embeddings s, h, r (N, C) */
static int estimate(mt_comet *m, float *scores, const float *s, const float *h, const float *r,
                    int N)
{
    const mt_backend *be = m->be;
    const mt_comet_config *c = &m->cfg;
    const size_t C = (size_t)c->C;
    int widest = 6 * c->C;
    for (int k = 0; k < c->n_hidden; k++) widest = c->hidden[k] > widest ? c->hidden[k] : widest;
    float *feat = be->alloc(((size_t)N * (2 * (size_t)widest + 2 * C)) * sizeof(float));
    if (!feat) return mt_error_context("COMET estimator for %d segments", N);
    float *x = feat, *y = feat + (size_t)N * widest, *t1 = y + (size_t)N * widest, *t2 = t1 + N * C;
    const int ld = 6 * c->C;
    const float *parts[2] = {r, s};
    be->copy2d(x, ld, h, (int)C, (size_t)N, (int)C);
    be->copy2d(x + C, ld, r, (int)C, (size_t)N, (int)C);
    for (int k = 0; k < 2; k++) { /* h*r, |h-r|, then h*s, |h-s| */
        be->mul(t1, h, parts[k], N * C);
        be->copy2d(x + (2 + 2 * k) * C, ld, t1, (int)C, (size_t)N, (int)C);
        abs_diff(be, t1, t2, h, parts[k], N * C);
        be->copy2d(x + (3 + 2 * k) * C, ld, t1, (int)C, (size_t)N, (int)C);
    }
    int in = ld;
    for (int k = 0; k <= c->n_hidden; k++) {
        int out = k < c->n_hidden ? c->hidden[k] : 1;
        mt_linear_forward(be, y, x, m->est_w[k], m->est_b[k], (size_t)N, in, out);
        if (k < c->n_hidden) be->act_forward(c->act, y, y, (size_t)N * out);
        else if (c->final_act >= 0) be->act_forward((mt_act)c->final_act, y, y, (size_t)N);
        float *sw = x;
        x = y, y = sw, in = out;
    }
    be->download(scores, x, (size_t)N * sizeof *scores);
    be->free(feat);
    return 0;
}

int mt_comet_score_ids(mt_comet *m, const mt_comet_seq *src, const mt_comet_seq *hyp,
                       const mt_comet_seq *ref, size_t n, float *scores)
{
    const size_t C = (size_t)m->cfg.C;
    for (size_t i = 0; i < n; i++) {
        const mt_comet_seq *side[3] = {&src[i], &hyp[i], &ref[i]};
        for (int k = 0; k < 3; k++)
            if (side[k]->len < 2 || side[k]->len > m->cfg.P - 4)
                return mt_error("COMET segment %zu: %d ids, expected 2 to %d", i + 1, side[k]->len,
                                m->cfg.P - 4);
    }
    float *emb = m->be->alloc(3 * COMET_CHUNK * C * sizeof(float));
    if (!emb) return mt_error_context("COMET embeddings");
    const mt_comet_seq **seqs = mt_xmalloc(3 * COMET_CHUNK * sizeof *seqs);
    int rc = 0;
    for (size_t i0 = 0; i0 < n && !rc; i0 += COMET_CHUNK) {
        int N = (int)(n - i0 < COMET_CHUNK ? n - i0 : COMET_CHUNK);
        for (int i = 0; i < N; i++)
            seqs[i] = &src[i0 + i], seqs[N + i] = &hyp[i0 + i], seqs[2 * N + i] = &ref[i0 + i];
        rc = embed_all(m, emb, seqs, 3 * N);
        if (!rc)
            rc = estimate(m, scores + i0, emb, emb + (size_t)N * C, emb + 2 * (size_t)N * C, N);
    }
    free(seqs);
    m->be->free(emb);
    return rc;
}

int mt_comet_score(mt_comet *m, const char *const *src, const char *const *hyp,
                   const char *const *ref, size_t n, float *scores)
{
    if (!m->tok) return mt_error("COMET: this model has no tokenizer (random weights)");
    mt_comet_seq *seqs = mt_xcalloc(3 * n + 1, sizeof *seqs);
    const char *const *texts[3] = {src, hyp, ref};
    static const char *const side[3] = {"source", "hypothesis", "reference"};
    int rc = 0;
    for (int k = 0; k < 3 && !rc; k++)
        for (size_t i = 0; i < n && !rc; i++) {
            int32_t *ids;
            if (mt_comet_encode(m, texts[k][i], &ids, &seqs[k * n + i].len))
                rc = mt_error_context("COMET %s %zu", side[k], i + 1);
            else seqs[k * n + i].ids = ids;
        }
    if (!rc) rc = mt_comet_score_ids(m, seqs, seqs + n, seqs + 2 * n, n, scores);
    for (size_t i = 0; i < 3 * n; i++) free((void *)seqs[i].ids);
    free(seqs);
    return rc;
}

/* ---------------------------------------------------------------- significance */
void mt_sig_comet_row(double *row, float score)
{
    row[0] = score;
    row[1] = 1.0;
}

static double comet_mean_x100(const double *sums, const void *ctx)
{
    (void)ctx;
    return sums[1] > 0 ? 100.0 * sums[0] / sums[1] : 0.0;
}

mt_sig_metric mt_sig_comet_metric(void)
{
    return (mt_sig_metric){
        .name = "COMET", .n_stats = MT_SIG_COMET_STATS, .score = comet_mean_x100};
}
