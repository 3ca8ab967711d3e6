/* Inside a model: a tensor table with Hugging Face names, one or two stacks of residual units,
 * and the per-architecture description (mt_arch) that builds them.
 *
 * A residual unit is one mixer with its norm:
 *   pre-norm  (Mamba, LLaMA, RetNet):  y = x + drop(f(norm(x)))
 *   post-norm (Marian):                y = norm(x + drop(f(x)))
 *   parallel  (GPT-NeoX's use_parallel_residual, the unit after a pre-norm one, whose input
 *              is x_prev):             y = x + drop(f(norm(x_prev)))
 *              so that the two make x_prev + attn(norm1(x_prev)) + mlp(norm2(x_prev)).
 * where f is self-attention (full, causal or sliding-window), cross-attention over the encoder
 * output, an FFN, a gated MLP, multi-scale retention or a Mamba mixer (which applies its own
 * dropout after out_proj). A Marian encoder layer is two units (self-attention, FFN), a
 * decoder layer three (self, cross, FFN); a Mamba layer is one; a LLaMA layer two (attention,
 * SwiGLU), a RetNet layer two (retention, GLU). The hybrids of the paper are other unit lists
 * over the same code: Mamba units with attention units at configured layers (mamba-mha,
 * mamba-local), or [Mamba, cross-attention, gated MLP] decoder blocks (mamba-encdec).
 *
 * Letters (mtlab/backend.h): BT = B*T rows of the stack, C d_model, V vocabulary. */
#ifndef MTLAB_MODEL_INTERNAL_H
#define MTLAB_MODEL_INTERNAL_H

#include "mtlab/bundle.h"
#include "mtlab/layers.h"
#include "mtlab/model.h"
#include "mtlab/rng.h"

#include <stdatomic.h>
#include <stddef.h>

#define MT_NAME_MAX 96

typedef struct {
    char name[MT_NAME_MAX]; /* Hugging Face name */
    int ndim;
    int shape[3];
    size_t offset; /* floats from the start of the parameter block */
    size_t numel;
    int decay; /* AdamW weight decay */
    int buffer; /* fixed: no gradient, not counted, may be absent from a bundle */
} mt_named_tensor;

typedef enum {
    MT_UNIT_SELF_ATTN, /* attention over the unit's own input (causal or not per config) */
    MT_UNIT_CROSS_ATTN, /* attention over the encoder output */
    MT_UNIT_FFN,
    MT_UNIT_GATED_MLP,
    MT_UNIT_MAMBA,
    MT_UNIT_RETENTION, /* multi-scale retention (RetNet) */
    MT_UNIT_KINDS /* their number (the rows of unit.c's table) */
} mt_unit_kind;

typedef enum { MT_NORM_LAYER, MT_NORM_RMS } mt_norm_kind;

typedef union {
    mt_attn_config attn;
    mt_ffn_config ffn;
    mt_gated_mlp_config mlp;
    mt_mamba_config mamba;
    mt_retention_config ret;
} mt_unit_config;

typedef union {
    mt_attn_params attn;
    mt_ffn_params ffn;
    mt_gated_mlp_params mlp;
    mt_mamba_params mamba;
    mt_retention_params ret;
} mt_unit_params;

typedef union {
    mt_attn_acts attn;
    mt_ffn_acts ffn;
    mt_gated_mlp_acts mlp;
    mt_mamba_acts mamba;
    mt_retention_acts ret;
} mt_unit_acts;

/* Activations of one unit for one pass (training forward, prefill or decoding step). */
typedef struct {
    mt_unit_acts a;
    float *pre; /* (BT, C) pre-norm: norm(x); post-norm: x + f before the norm */
    float *mean, *rstd; /* (BT) */
} mt_unit_work;

/* Decoding caches of one unit (the fields its kind uses). */
typedef struct {
    mt_kv_cache kv; /* self-attention: past keys/values (a ring of window + 1 slots for a
                     * sliding window); cross-attention: the source's */
    mt_mamba_state ms; /* Mamba conv + ssm state */
    mt_retention_state rs; /* RetNet recurrent state */
} mt_unit_cache;

typedef struct {
    mt_unit_kind kind;
    mt_norm_kind norm;
    int post_norm;
    int parallel; /* 1: the norm reads the previous unit's input (model_internal.h's top) */
    float eps;
    mt_unit_config cfg;
    int layer; /* the model layer the unit belongs to (0-based, per stack) */
    int first_tensor; /* the mixer's tensors, consecutive in the table */
    int norm_tensor; /* the norm weight; a LayerNorm's bias is the next tensor */
    mt_unit_params p, g;
    float *norm_w, *norm_b; /* (C); norm_b NULL for RMSNorm */
    float *gnorm_w, *gnorm_b;
} mt_unit;

typedef struct {
    mt_unit *units;
    int n_units, cap_units;
    int C;
    int final_norm_tensor; /* -1: none (Marian); else the final norm's weight */
    mt_norm_kind final_norm;
    float final_eps;
    float *fn_w, *fn_b, *gfn_w, *gfn_b;
    int positions; /* 1: sinusoid positions are added to the embeddings */
    int embed_tensor; /* the stack's own token embedding; -1: the model's */
    uint32_t site_base; /* dropout sites of this stack start here */
    int left_padded; /* training batches pad its rows in front (decoder-only): dropout keys from
                      * each row's end (mt_dropout) */
} mt_stack;

/* Activations of a stack for one pass: xs[i] (BT, C) is the residual stream entering unit i,
 * xs[n_units] the last unit's output, fn_out (BT, C) the final norm's output. */
typedef struct {
    mt_unit_work *w; /* (n_units) */
    float **xs; /* (n_units + 1) */
    float *fn_out, *fn_mean, *fn_rstd;
    float *dbranch; /* (BT, C) training of a stack with parallel units: a parallel unit's
                     * gradient of x_prev, added once the unit before has made its own */
} mt_stack_acts;

typedef struct mt_arch {
    const char *name; /* "transformer" */
    const char *hf_class; /* "MarianMTModel"; NULL when Hugging Face has no such class */
    const char *model_type; /* "marian"; mtlab's own name for the others ("retnet") */
    int encdec;
    /* Fill the tensor table and the stacks from m->cfg (mt_model_add_* below). */
    int (*build)(mt_model *m);
    /* Fresh parameters into the host copy of the parameter block. */
    void (*init)(mt_model *m, float *host, uint64_t seed);
    /* Architecture-specific configuration checks (mt_model_config_check does the common ones). */
    int (*check)(const mt_model_config *cfg);
    /* config.json's keys: the tables read in this order (errors name the file and the key),
     * then the mtlab block; written alike (mt_arch_config_read, mt_arch_config_write). */
    struct mt_config_key_table {
        const struct mt_config_key *keys; /* NULL: no table */
        const char *model; /* the model a fixed key's error names ("mtlab's Mamba has ...") */
    } keys[2];
    int mtlab_dropout; /* 1: the mtlab block keeps dropout (no Hugging Face key holds it) */
    /* Name lists, NULL-terminated (a NULL list has no names). Pairs {name, alternative name}
     * tried when a bundle lacks name: */
    const char *const (*aliases)[2];
    /* Names a bundle may hold that the model does not use (tied copies, fixed positions);
     * shell patterns (fnmatch: "gpt_neox.layers.*.attention.bias"). */
    const char *const *ignored;
    /* Names under which the token embedding is saved again (transformers 5 ties Marian's
     * encoder/decoder embed_tokens to model.shared only when the output projection is tied
     * too, so an untied model needs the copies in the file). */
    const char *const *embed_copies;
    /* The preset sizes into a config already zeroed, with its ids and the common dropout:
     * the paper's (small = 0, preset `name`) or the Bible demo's (small = 1, `name`-small). */
    void (*preset)(mt_model_config *cfg, int small);
    /* Configuration fields that shape a model without showing in its tensors' shapes
     * (MT_LAYOUT_*): checkpoints to average or to initialise from must agree on them. */
    unsigned layout_keys;
} mt_arch;

enum {
    MT_LAYOUT_HEADS = 1u << 0,
    MT_LAYOUT_WINDOW = 1u << 1,
    MT_LAYOUT_ROTARY = 1u << 2, /* rope_theta and rotary_pct */
    MT_LAYOUT_RESIDUAL = 1u << 3, /* parallel_residual */
};

/* Each architecture's entry, defined in its own file and listed once in arch.c's mt_archs. */
extern const mt_arch mt_arch_transformer;
extern const mt_arch mt_arch_mamba;
extern const mt_arch mt_arch_llama;
extern const mt_arch mt_arch_retnet;
extern const mt_arch mt_arch_mamba_mha;
extern const mt_arch mt_arch_mamba_local;
extern const mt_arch mt_arch_mamba_encdec;
extern const mt_arch mt_arch_neox;
/* ---- the registry of architectures (arch.c): every list of architectures derives from it */
/* The architectures in the paper's order, NULL-terminated. */
extern const mt_arch *const mt_archs[];
const mt_arch *mt_arch_find(const char *name);
/* "transformer, transformer++, ..." for error messages. */
const char *mt_arch_names(void);
/* "marian, llama, ..." (the model_type of each) for error messages. */
const char *mt_arch_model_types(void);
/* The architecture whose model_type / config.json "architectures" entry matches, or NULL. */
const mt_arch *mt_arch_find_hf(const char *model_type);

struct mt_model {
    mt_model_config cfg;
    const mt_arch *arch;
    const mt_backend *be; /* the backend every operation runs on: base_be, or precision_be */
    const mt_backend *base_be; /* the device's backend the model was made on */
    mt_precision precision;
    mt_qweights *qweights; /* int8 or bf16 copies of the linear weights; in fp32 the f32p copies
                              (fp32_panels) or NULL */
    int fp32_panels; /* 1: in fp32, keep f32p copies where the backend makes them */
    mt_backend precision_be; /* base_be with its qweights = qweights (model_precision.c) */

    mt_named_tensor *tensors;
    int n_tensors, cap_tensors;
    size_t n_floats; /* parameter block size */
    int embed_tensor; /* token embedding (V, C), shared by the stacks */
    int lm_head_tensor; /* -1 when tied to the embedding */
    int logits_bias_tensor; /* -1 when none (Marian's final_logits_bias buffer) */
    float embed_scale;

    float *params; /* (n_floats) backend memory */
    float *grads; /* (n_floats) or NULL before the first backward */
    float *adam; /* (2 n_floats) m then v, or NULL */
    uint8_t *decay_mask; /* (n_floats) backend memory, made with adam */
    float *pos; /* (max_positions, C) sinusoids, or NULL */
    /* rotary angles shared by the units that rotate (transformer++ attention, retention),
     * filled by mt_model_new when rope_dim > 0 */
    int rope_dim;
    float rope_base;
    mt_rope_freqs rope_kind;
    float *rope_freq; /* (rope_dim / 2) backend memory */
    char *tokenizer_path; /* the loaded bundle's tokenizer.model, or NULL */

    mt_stack enc, dec; /* enc unused by decoder-only models */

    /* training activations for the current (B, T, S), one allocation, grown on demand */
    float *acts;
    size_t acts_cap;
    int acts_B, acts_T, acts_S; /* the batch shape the activations are laid out for */
    mt_stack_acts enc_acts, dec_acts;
    float *logits, *losses, *lse; /* (BT, V), (BT), (BT) */
    int loss_chunk_rows; /* rows of logits training's loss holds at once; 0: rows of
                            about LOSS_CHUNK_FLOATS (forward.c) */
    /* backward scratch, one allocation */
    float *scratch;
    size_t scratch_cap;
    /* token ids and masks of the current batch on the backend, one allocation */
    void *io;
    size_t io_cap;
    int32_t *d_ids, *d_targets, *d_src; /* (B, T), (B, T), (B, S) */
    /* the positions that have a target, in order, and their targets: (n_targets) each; the
     * rows training's loss projects (forward.c) */
    int32_t *d_target_rows, *d_row_targets;
    uint8_t *d_mask, *d_src_mask; /* (B, T), (B, S) */
    size_t n_targets;
    /* the backend memory the last freed decode state left for the next (decode_state.c),
     * or NULL; at most decode_workspace_limit bytes */
    _Atomic(struct mt_decode_blocks *) decode_workspace;
    size_t decode_workspace_limit;
};

/* Free the decode workspace a model keeps (decode_state.c). */
void mt_model_decode_workspace_free(mt_model *m);

/* ---- the Mamba keys shared by mamba, mamba-mha, mamba-local and mamba-encdec (mamba.c) */
/* The mixer of a config (d_inner = expand x d_model). */
mt_mamba_config mt_mamba_mixer_config(const mt_model_config *c);
/* Mixer sizes usable (state_size, conv_kernel, expand, time_step_rank, eps, dt range). */
int mt_mamba_keys_check(const mt_model_config *c);
/* mt_arch.init of every model on the Mamba backbone: mamba_ssm's initialisation (mamba.c), and
 * for the attention layers of mamba-mha and mamba-local (ssm-mt's MixerModel) PyTorch's
 * default Linear init. */
void mt_mamba_backbone_init(mt_model *m, float *host, uint64_t seed);
/* mt_arch.aliases of every model on the Mamba backbone (mamba.c): the token embedding as
 * mamba_ssm's own checkpoints name it (backbone.embedding, not backbone.embeddings). */
extern const char *const mt_mamba_aliases[][2];
/* The Mamba sizes of the presets on the Mamba backbone (mamba.c): width C, `layers` layers,
 * mamba_ssm's state 16, kernel 4, expand 2, rank ceil(C / 16), tied output. */
void mt_mamba_preset(mt_model_config *c, int C, int layers);

/* ---- config.json keys from one table per architecture (config_keys.c) */
typedef enum {
    MT_KEY_INT, /* an int field in lo..hi */
    MT_KEY_FLOAT, /* a float field in lo..hi */
    MT_KEY_BOOL, /* an int field, 0 or 1; absent: def */
    MT_KEY_NOT_BOOL, /* an int field holding the key's negation (no_scale_embedding) */
    MT_KEY_TOKEN_ID, /* an int field; absent or null keeps it, a list gives its first */
    MT_KEY_FIXED_BOOL, /* no field: def is the only value mtlab's model supports */
    MT_KEY_FIXED_STRING, /* no field: str is written; absent reads as str, alt is accepted too */
    MT_KEY_CONST_STRING, /* no field: str is written, the key not read (model_type) */
    MT_KEY_CONST_BOOL, /* no field: def is written, the key not read */
    MT_KEY_CONST_FLOAT, /* no field: def is written, the key not read */
    MT_KEY_CONST_CLASS, /* no field: [str] is written (Hugging Face's "architectures"), not read */
    MT_KEY_SAME_INT, /* the int field of the key str, written again; read, must be equal */
    MT_KEY_CUSTOM, /* the key's own read and write (another spelling, a derived value) */
} mt_key_type;

enum {
    MT_KEY_OPTIONAL = 1u << 0, /* MT_KEY_INT / MT_KEY_FLOAT: absent reads as def */
    MT_KEY_READ_ONLY = 1u << 1, /* checked when present, never written */
    MT_KEY_WRITE_ONLY = 1u << 2, /* written, never read */
};

typedef struct mt_config_key {
    const char *name; /* the config.json key; NULL ends a table */
    mt_key_type type;
    size_t offset; /* of the field in mt_model_config */
    double lo, hi, def;
    unsigned flags; /* MT_KEY_* */
    const char *str, *alt,
        *why; /* MT_KEY_FIXED_STRING: written, also accepted, the error's reason */
    int (*read)(mt_model_config *cfg, const mt_config *c); /* MT_KEY_CUSTOM; NULL: not read */
    int (*write)(const mt_model_config *cfg, mt_config *o); /* MT_KEY_CUSTOM */
} mt_config_key;

/* The rows of a key table, by type (f: a field of mt_model_config) */
#define MT_KEY_FIELD(f) offsetof(mt_model_config, f)
#define MT_CFG_INT(k, f, l, h)                                                     \
    {                                                                              \
        .name = k, .type = MT_KEY_INT, .offset = MT_KEY_FIELD(f), .lo = l, .hi = h \
    }
#define MT_CFG_INT_OR(k, f, d, l, h)                                                          \
    {                                                                                         \
        .name = k, .type = MT_KEY_INT, .offset = MT_KEY_FIELD(f), .lo = l, .hi = h, .def = d, \
        .flags = MT_KEY_OPTIONAL                                                              \
    }
#define MT_CFG_FLOAT_OR(k, f, d, l, h)                                                          \
    {                                                                                           \
        .name = k, .type = MT_KEY_FLOAT, .offset = MT_KEY_FIELD(f), .lo = l, .hi = h, .def = d, \
        .flags = MT_KEY_OPTIONAL                                                                \
    }
#define MT_CFG_BOOL_OR(k, f, d)                                             \
    {                                                                       \
        .name = k, .type = MT_KEY_BOOL, .offset = MT_KEY_FIELD(f), .def = d \
    }
#define MT_CFG_NOT_BOOL_OR(k, f, d)                                             \
    {                                                                           \
        .name = k, .type = MT_KEY_NOT_BOOL, .offset = MT_KEY_FIELD(f), .def = d \
    }
#define MT_CFG_TOKEN_ID(k, f)                                         \
    {                                                                 \
        .name = k, .type = MT_KEY_TOKEN_ID, .offset = MT_KEY_FIELD(f) \
    }
#define MT_CFG_FIXED_BOOL(k, v, fl)                                 \
    {                                                               \
        .name = k, .type = MT_KEY_FIXED_BOOL, .def = v, .flags = fl \
    }
#define MT_CFG_FIXED_STRING(k, v, a, w)                                      \
    {                                                                        \
        .name = k, .type = MT_KEY_FIXED_STRING, .str = v, .alt = a, .why = w \
    }
#define MT_CFG_CONST_STRING(k, v)                        \
    {                                                    \
        .name = k, .type = MT_KEY_CONST_STRING, .str = v \
    }
#define MT_CFG_CONST_BOOL(k, v)                        \
    {                                                  \
        .name = k, .type = MT_KEY_CONST_BOOL, .def = v \
    }
#define MT_CFG_CONST_FLOAT(k, v)                        \
    {                                                   \
        .name = k, .type = MT_KEY_CONST_FLOAT, .def = v \
    }
#define MT_CFG_CONST_CLASS(v)                                         \
    {                                                                 \
        .name = "architectures", .type = MT_KEY_CONST_CLASS, .str = v \
    }
#define MT_CFG_SAME_INT(k, f, other)                                                \
    {                                                                               \
        .name = k, .type = MT_KEY_SAME_INT, .offset = MT_KEY_FIELD(f), .str = other \
    }
#define MT_CFG_CUSTOM(k, r, w)                                  \
    {                                                           \
        .name = k, .type = MT_KEY_CUSTOM, .read = r, .write = w \
    }
#define MT_CFG_END   \
    {                \
        .name = NULL \
    }

/* Every key of the table that is read (errors name the file and the key); `model` names the
 * model in a fixed key's error ("mtlab's RetNet has true"). */
int mt_config_keys_read(mt_model_config *cfg, const mt_config *c, const mt_config_key *keys,
                        const char *model);
/* Every key that is written, in the table's order (the order of the keys in config.json). */
int mt_config_keys_write(const mt_model_config *cfg, mt_config *o, const mt_config_key *keys);
/* MambaConfig keys except the layer count (mamba.c), shared by mamba, mamba-mha, mamba-local and
 * mamba-encdec: hidden_size, intermediate_size (expand x hidden_size), state_size,
 * conv_kernel, expand, time_step_*, layer_norm_epsilon, initializer_range, vocab_size,
 * tie_word_embeddings, token ids, and the fixed use_bias / use_conv_bias / hidden_act. */
extern const mt_config_key mt_mamba_keys[];
/* config.json -> cfg through an architecture's entry: cfg zeroed, the reserved ids, its name,
 * its key tables in order, then the mtlab block. */
int mt_arch_config_read(const mt_arch *a, mt_model_config *cfg, const mt_config *c);
/* cfg -> config.json: every table's keys and the mtlab block. */
int mt_arch_config_write(const mt_arch *a, const mt_model_config *cfg, mt_config *o);

/* ---- what every configuration shares (config_common.c) */
/* The reserved token ids of mtlab/tokenizer.h (decoder start = <bos>). */
void mt_model_config_init_ids(mt_model_config *cfg);
/* A token id key: absent or null keeps *id; HF writes some (eos_token_id) as lists, whose
 * first element is taken. */
int mt_model_config_token_id(const mt_config *c, const char *key, int *id);
/* A boolean key whose value `model` fixes (absent means want): any other value is an error
 * "config.json: use_bias = true is not supported (mtlab's Mamba has false)". */
int mt_model_config_fixed_bool(const mt_config *c, const char *key, int want, const char *model);
/* The "mtlab" block shared by every architecture: sep/unk ids, dropout, languages and the
 * prompt, which depends on encdec, the architecture's own flag (passed in, so that this file
 * needs no registry of the architectures that use it). */
int mt_model_config_read_mtlab(mt_model_config *cfg, const mt_config *c, int encdec);
/* cfg->hf_max_length of a hub checkpoint (cfg->hf_generate) in dir, whose config.json is c:
 * the max_length generate() takes when asked for none (generation_config.c); 0 or -1 with an
 * error naming the file and the key. */
int mt_hf_generation_max_length(mt_model_config *cfg, const char *dir, const mt_config *c);
int mt_model_config_write_mtlab(const mt_model_config *cfg, mt_config *c, int with_dropout);

/* ---- building, for the architectures' build functions (model_build.c) */
/* The token embedding (V, C) as embed_name and, when the config unties it, the output
 * projection (V, C) as lm_head_name: m->embed_tensor and m->lm_head_tensor. */
void mt_model_add_embeddings(mt_model *m, const char *embed_name, const char *lm_head_name);
/* Append a tensor to the table; returns its index. */
int mt_model_add_tensor(mt_model *m, const char *name, int ndim, const int *shape, int decay,
                        int buffer);
/* A unit's norm as its architecture declares it: kind, name (".weight" / ".bias" appended),
 * after the residual (post, Marian) or before the mixer (pre), epsilon. */
typedef struct {
    mt_norm_kind kind;
    const char *name;
    int post;
    float eps;
    int parallel; /* 1: a parallel unit (pre-norm, after a pre-norm unit) */
} mt_unit_norm;
/* Append a unit to a stack and register its mixer tensors (names prefix + the layer's local
 * names) and its norm. */
mt_unit *mt_model_add_unit(mt_model *m, mt_stack *s, mt_unit_kind kind, const mt_unit_config *cfg,
                           const char *prefix, const mt_unit_norm *norm);
/* Register a stack's final norm (name + ".weight" [+ ".bias"]). */
void mt_model_add_final_norm(mt_model *m, mt_stack *s, mt_norm_kind norm, const char *name,
                             float eps);
/* The layers of a decoder-only model as its checkpoint names them: each a token mixer unit, then
 * a channel unit, each behind its own pre-norm, layer l's under "LAYERS.l." ("model.layers.0.
 * self_attn.q_proj.weight", "model.layers.0.input_layernorm.weight"). */
typedef struct {
    const char *layers; /* "model.layers" */
    mt_unit_kind kind[2]; /* the mixer's, the channel unit's */
    const mt_unit_config *cfg[2];
    const char *unit[2]; /* their tensors' prefixes in a layer: "self_attn.", "mlp." */
    const char *norm[2]; /* their norms' names in a layer: "input_layernorm", ... */
    mt_norm_kind norm_kind;
    float eps;
    int parallel; /* the channel unit is parallel (GPT-NeoX's use_parallel_residual) */
} mt_decoder_layers;
/* cfg.n_layers such layers appended to m->dec, their units' layer set. */
void mt_model_add_decoder_layers(mt_model *m, const mt_decoder_layers *d);
/* Host pointer of tensor i inside a host copy of the parameter block. */
float *mt_model_host_tensor(const mt_model *m, float *host, int i);
/* Write 1 to every norm gain (units and final norms) in a host block; biases stay 0. */
void mt_model_init_norms(const mt_model *m, float *host);
/* N(0, std) into the token embedding (V, C), from random stream `stream` of seed, and into the
 * untied output projection (V, C), from stream + 1. */
void mt_model_init_embeddings(const mt_model *m, float *host, uint64_t seed, uint64_t stream,
                              float std);
/* transformers' _init_weights of a decoder-only model of Linear units (LlamaPreTrainedModel,
 * GPTNeoXPreTrainedModel): the embeddings (streams 0 and 1) and every unit's weight matrices
 * N(0, cfg.init_std), unit i's from stream 2 + i in table order; biases 0, norm gains 1. An
 * architecture's init. */
void mt_model_init_hf_normal(mt_model *m, float *host, uint64_t seed);
/* Point a stack's unit and final-norm parameter pointers (grads 0) or gradient pointers
 * (grads 1) into block, a parameter-sized block. */
void mt_model_bind_stack(mt_model *m, mt_stack *s, float *block, int grads);

/* ---- the handle (model.c) */
/* Allocate an empty model for cfg with its architecture's tables built, parameters zero. */
mt_model *mt_model_new(const mt_model_config *cfg, const mt_backend *be);

/* ---- units (unit.c) */
/* Activation floats of a unit for B rows of T queries; self-attention attends over Tk keys
 * (T in training, the cache size when decoding), cross-attention over S source positions. */
size_t mt_unit_work_count(const mt_unit *u, int B, int T, int Tk, int S);
void mt_unit_work_point(const mt_unit *u, mt_unit_work *w, float *base, int B, int T, int Tk,
                        int S);
/* Backward scratch floats of a unit (training: Tk = T). */
size_t mt_unit_scratch_count(const mt_unit *u, int B, int T, int S);
/* The unit's tensor table (local names) and parameter floats; point p at base. */
int mt_unit_tensors(mt_unit_kind kind, const mt_unit_config *cfg, mt_tensor_spec *specs);
size_t mt_unit_params_count(mt_unit_kind kind, const mt_unit_config *cfg);
void mt_unit_params_point(mt_unit_kind kind, const mt_unit_config *cfg, mt_unit_params *p,
                          float *base);
/* d_model of a unit. */
int mt_unit_width(const mt_unit *u);

/* One pass over a stack or one of its units: the shape and the masks every kind of unit may
 * read, carried in one place so that a new mask or option is one field here (as the backend's
 * mt_attn_desc and mt_scan_args carry a kernel's). A field a pass does not use is 0 / NULL. */
typedef struct {
    int B, T; /* rows, positions per row (decoding: Tq new positions) */
    int S; /* source positions of mem; 0 without an encoder */
    const float *mem; /* (B, S, C) the encoder output cross-attention reads, or NULL */
    float *dmem; /* (B, S, C) backward: accumulates the gradient of mem */
    const uint8_t *mask; /* (B, T) the rows' padding mask; decoding: the new positions'
                          * (a prefill's prompt), NULL when all are real */
    const uint8_t *mem_mask; /* (B, S) the source's padding mask */
    const mt_step_opts *opts; /* stack passes: training options (dropout), or NULL */
    const mt_dropout *drop; /* unit passes: the unit's dropout (the stack sets it), or NULL */
    const float *branch; /* unit passes of a parallel unit: x_prev (B, T, C), the input of the
                          * unit before, which the norm reads (the stack sets it), or NULL */
    float *dbranch; /* backward of a parallel unit: receives the gradient of branch */
    /* decoding only (mt_unit_decode) */
    const uint8_t *key_mask; /* (B, key_ld) covers cached and new positions */
    int key_ld;
    const uint8_t *slot_mask; /* (B, R) the real tokens in a sliding-window ring */
    int first; /* 1: a prefill (parallel forms), 0: one recurrent step */
    int input_grads_only; /* backward: the gradients of the inputs only, each layer's weight
                           * matrix and bias products (dW) skipped (attribution) */
} mt_pass;

/* y (B, T, C) from x (B, T, C) for pass (B, T, S, mem, mask, mem_mask, drop). */
void mt_unit_forward(const mt_backend *be, const mt_unit *u, mt_unit_work *w, float *y,
                     const float *x, const mt_pass *pass);
/* dy (B, T, C): on entry the gradient of the unit's output, on return that of its input x.
 * pass->dmem (B, S, C) accumulates cross-attention's encoder-output gradient. scratch holds
 * mt_unit_scratch_count floats. */
void mt_unit_backward(const mt_backend *be, mt_unit *u, const mt_unit_work *w, float *dy,
                      const float *x, const mt_pass *pass, float *scratch);
/* Decoding: pass->T new positions per row after the cached ones. pass->key_mask (B, key_ld)
 * covers cached and new positions; pass->mask (B, T) is the new positions' mask for a prefill
 * (NULL when all are real); pass->slot_mask (B, R) marks the real tokens in a sliding-window
 * ring (mt_kv_ring_slot_mask). Self-attention appends to its cache (or ring); Mamba and
 * retention run their parallel forms when pass->first (a prefill: the whole prompt, or one
 * chunk of it that continues the states the chunks before filled, docs/decoding.md §1.1), else
 * one recurrent step (T = 1). */
void mt_unit_decode(const mt_backend *be, const mt_unit *u, mt_unit_work *w, mt_unit_cache *c,
                    float *y, const float *x, const mt_pass *pass);
/* Positions a self-attention unit caches for a decode of up to Tmax: Tmax, or the ring of
 * window + 1 (when shorter) for a sliding window. */
int mt_unit_kv_slots(const mt_unit *u, int Tmax);
size_t mt_unit_cache_count(const mt_unit *u, int B, int Tmax, int Smax);
void mt_unit_cache_point(const mt_unit *u, mt_unit_cache *c, float *base, int B, int Tmax,
                         int Smax);
/* The cache tensors of a unit for beam reordering: tensor which (0, 1), the floats of one
 * batch row of it (row) and how many of them, from the row's start, hold the state now (used:
 * a KV cache's filled positions, all of a recurrent state); NULL when the unit has no such
 * tensor. */
float *mt_unit_cache_tensor(const mt_unit *u, mt_unit_cache *c, int which, size_t *row,
                            size_t *used);

/* ---- stacks (stack.c) */
/* Lay out a stack's activations for (B, T) with attention over Tk keys (self) and S source
 * positions (cross) at base, or only count them when base is NULL; returns the floats. The
 * host arrays of sa are allocated on first use. */
size_t mt_stack_acts_layout(const mt_stack *s, mt_stack_acts *sa, float *base, int B, int T, int Tk,
                            int S);
/* The same for inference, where nothing is kept for backward: the residual stream alternates
 * between two buffers and every unit's work shares one region (the largest unit's), so the
 * working set is one unit's, not the stack's (docs/decoding.md §1.1). */
size_t mt_stack_infer_layout(const mt_stack *s, mt_stack_acts *sa, float *base, int B, int T,
                             int Tk, int S);
void mt_stack_acts_free(mt_stack_acts *sa);
/* 1 when a unit of s is parallel (its training layout then holds dbranch). */
int mt_stack_has_parallel(const mt_stack *s);
/* The most scratch floats a unit of s needs at (B, T) with S source positions: the units take
 * turns with one scratch block. */
size_t mt_stack_scratch_count(const mt_stack *s, int B, int T, int S);
/* Dropout of site k (0..7) of unit i (unit -1: the embeddings). */
mt_dropout mt_stack_dropout(const mt_stack *s, int unit, int k, const mt_step_opts *opts, float p);
/* Embeddings of ids (B, T) into sa->xs[0]: scale * table[ids] (+ positions from pos0), then
 * dropout. */
void mt_stack_embed(const mt_model *m, const mt_stack *s, mt_stack_acts *sa, const int32_t *ids,
                    int B, int T, int pos0, const mt_dropout *drop);
/* Run every unit and the final norm over pass (B, T, S, mem, mask, mem_mask, opts); returns the
 * stack output (BT, C). */
const float *mt_stack_forward(const mt_model *m, const mt_stack *s, mt_stack_acts *sa,
                              const mt_pass *pass);
/* dout (BT, C) the gradient of the stack output; dx (BT, C), another buffer, receives the
 * gradient of the embeddings. pass->dmem as in mt_unit_backward. */
void mt_stack_backward(mt_model *m, mt_stack *s, const mt_stack_acts *sa, float *dx,
                       const float *dout, const mt_pass *pass, float *scratch);
/* Final norm of rows x (BT, C) into out (BT, C) (mean/rstd (BT) saved); returns x when the stack
 * has none. */
const float *mt_stack_final_norm(const mt_backend *be, const mt_stack *s, float *out, float *mean,
                                 float *rstd, const float *x, size_t BT);

/* ---- the model-level passes (forward.c) */
/* Check a batch against the model: sizes, ids inside the vocabulary, positions. */
int mt_model_check_batch(const mt_model *m, const mt_batch *b);
/* Check a batch, upload its ids, targets and masks, size the activations. */
int mt_model_prepare(mt_model *m, const mt_batch *b);
/* Forward of the prepared batch to m->logits (BT, V); returns the loss sum when want_loss. */
double mt_model_run_forward(mt_model *m, const mt_step_opts *opts, int want_loss);
/* Forward of the prepared batch through the stacks only, up to the decoder's output (BT, C),
 * which it returns; mt_model_run_forward is this, the projection and the loss. */
const float *mt_model_run_stacks(mt_model *m, const mt_step_opts *opts);
/* After mt_model_run_stacks: the loss through the output projection, over the rows that have
 * a target only (gathered), in chunks of m->loss_chunk_rows rows that never hold more logits
 * than one chunk (docs/models.md §10.7), and the backward of everything, accumulating
 * scale * d(loss sum) into the gradients. The loss sum goes to *loss_sum; m->logits holds the
 * last chunk's gradient afterwards. */
int mt_model_run_backward(mt_model *m, const mt_step_opts *opts, float scale, double *loss_sum);
/* Output projection of rows x (BT, C) into logits (BT, V). */
void mt_model_project(const mt_model *m, float *logits, const float *x, size_t BT);
/* Targets for the loss from host ids (B, T): targets[b, t] = ids[b, t+1] where counted, else
 * MT_IGNORE (see model.h); returns the number of counted tokens. */
#define MT_IGNORE (-100)
size_t mt_model_targets(const mt_model *m, int32_t *targets, const int32_t *ids,
                        const int *n_prompt, int B, int T);

/* Frees the f32p copies and clears the request for them (model_precision.c): what training
 * does before it changes the weights */
void mt_model_drop_fp32_panels(mt_model *m);

#endif
