/* A model handle: one of the paper's architectures with its configuration, its parameters
 * (one allocation, plus one for gradients and one for AdamW moments), and the operations the
 * trainer, the decoder and the workbench need.
 *
 * Every architecture is a list of residual units (attention, cross-attention, FFN, gated MLP,
 * Mamba mixer), each with its own norm, arranged in one or two stacks (engine/models/
 * model_internal.h); adding an architecture means writing its layer list, its config keys and
 * its tensor names, not another forward pass.
 *
 * Token conventions (docs/models.md §1.2; ids from mtlab/tokenizer.h):
 *   decoder-only    ids = `src <sep> tgt <eos>`, LEFT padded with <pad>; the loss counts the
 *                   predictions made from the first <sep> on (the target tokens and <eos>).
 *   encoder-decoder src = `src <eos>` and ids = `<bos> tgt <eos>`, both RIGHT padded; the loss
 *                   is teacher forcing over the target (predict ids[t+1] from ids[..t]).
 * Positions holding <pad> are masked everywhere; their outputs are meaningless.
 *
 * Letters: B batch rows, T decoder (or decoder-only) length, S source length, V vocabulary. */
#ifndef MTLAB_MODEL_H
#define MTLAB_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "mtlab/backend.h"
#include "mtlab/safetensors.h"

/* Architecture-independent hyper-parameters; each architecture reads the fields it uses and
 * maps them to its config.json keys (Hugging Face ones where a class exists: transformer.c,
 * mamba.c, llama.c; otherwise its own plus the "mtlab" block: retnet.c, hybrid.c,
 * mamba_encdec.c). */
#define MT_MAX_ATTN_LAYERS 64
/* transformers' GenerationConfig().max_length, which generate() lengthens by the prompt */
#define MT_GENERATE_DEFAULT_MAX_LENGTH 20
typedef struct {
    char arch[24]; /* an architecture of mt_model_arch_list() */
    int vocab_size; /* V */
    int d_model; /* C */
    int n_layers; /* decoder-only: layers; encoder-decoder: decoder layers */
    int n_encoder_layers; /* encoder-decoder only */
    int n_heads; /* attention heads */
    int ffn_dim; /* FFN width */
    mt_act activation; /* FFN activation (transformer: ReLU in the paper) */
    int max_positions; /* sinusoid table rows (transformer) */
    int scale_embedding; /* 1: token embeddings times sqrt(C) */
    int tie_embeddings; /* 1: the output projection is the token embedding */
    int separate_embeddings; /* transformer: the encoder has a token embedding of its own
                              * (MarianConfig share_encoder_decoder_embeddings false); a tied
                              * output projection is the decoder's */
    int d_state, d_conv, expand, dt_rank; /* Mamba (docs/models.md §3.1) */
    float dt_min, dt_max, dt_init_floor; /* Mamba time_step_* keys, kept for config.json (the
                                          * initialiser uses mamba_ssm's 1e-3, 0.1, 1e-4) */
    float norm_eps; /* RMSNorm epsilon (Mamba); LayerNorm uses 1e-5 (Marian) */
    float init_std; /* Mamba embedding init N(0, init_std); the transformer's is
                     * N(0, C^-1/2) as in fairseq (init_std is only written out) */
    float dropout; /* residual-branch dropout while training */
    int pad_id, eos_id, sep_id, bos_id, unk_id; /* unk_id -1: none (a hub checkpoint's config
                                                 * gives none; its tokenizer's is its own) */
    int decoder_start_id; /* first decoder token of encoder-decoder models (<bos>) */
    float rope_theta; /* transformer++ rotary base (10000) */
    int value_dim; /* retnet value width over all heads (2 x d_model in the paper) */
    int window; /* mamba-local: a query sees itself and the `window` keys before */
    int n_attn_layers; /* mamba-mha / mamba-local: entries of attn_layers */
    int attn_layers[MT_MAX_ATTN_LAYERS]; /* 0-based indices of the layers that are attention
                                          * blocks (the paper: N/2 - 1 and N - 1) */
    char src_lang[36], tgt_lang[36]; /* the direction, BCP-47 ("es", "en"; MT_LANG_MAX of
                                      * mtlab/dataset.h): config.json's mtlab.src_lang/tgt_lang,
                                      * written by the trainer from its dataset */
    int langs_recorded; /* 0: config.json had none, read as the Bible's es -> en (and
                         * saved without them again); 1: written */
    int hf_generate; /* 1: a checkpoint from the Hugging Face hub (its config.json has no
                      * mtlab block, or one without mtlab's "architecture": a template added
                      * by hand), which decodes as transformers' generate() does
                      * (mtlab/decode.h) */
    int hf_max_length; /* hf_generate: the max_length of generate()'s generation config
                        * (generation_config.json or config.json, docs/bundles.md §3.1), as
                        * it stands there: MT_GENERATE_DEFAULT_MAX_LENGTH where it gives none
                        * (mt_decode_max_new maps it to new tokens); 0: none */
    int mamba_bias; /* Mamba: in_proj and out_proj have biases (MambaConfig use_bias) */
    int mamba_no_conv_bias; /* Mamba: conv1d has none (MambaConfig use_conv_bias false) */
    int pad_vocab_multiple; /* Mamba: MambaConfig pad_vocab_size_multiple (8), checked and not
                             * used: vocab_size holds the padded rows */
    float rotary_pct; /* gpt-neox: the share of each head's dims that rotate (rotary_pct) */
    int parallel_residual; /* gpt-neox: 1: attention and MLP read the same layer input
                            * (use_parallel_residual), 0: the MLP reads the attention's output */
    char prompt[256]; /* decoder-only: config.json's mtlab.prompt, a text template holding
                       * "{src}" once ("{src}<sep>", "Spanish: {src}\nEnglish:"): the source
                       * text goes in its place and the whole is encoded (mt_source_encode),
                       * no <sep> appended; "": ids `src <sep>` (mtlab's own models;
                       * docs/bundles.md §2.4) */
} mt_model_config;

/* The id decoding never generates: <pad>, except where it is also <eos> (the hub's Mamba and
 * GPT-NeoX configs give bos = eos = pad = 0), then none (-1). */
static inline int mt_model_config_never_generated(const mt_model_config *c)
{
    return c->pad_id == c->eos_id ? -1 : c->pad_id;
}

/* The id a decoder-only prompt ends with after the source ids: <sep>, or -1 when the model
 * has a text template (prompt), which holds its separator itself. */
static inline int mt_model_config_prompt_sep(const mt_model_config *c)
{
    return c->prompt[0] ? -1 : c->sep_id;
}

typedef struct mt_model mt_model;

/* ---------------------------------------------------------------- configurations
 * Presets: each architecture's name (the paper's sizes, 77M-82M parameters with V = 32000,
 * docs/models.md §1.5), and each with "-small" (the Bible demo sizes: ~4.6M each with V = 8000). */
int mt_model_preset(mt_model_config *cfg, const char *name);
/* NULL-terminated list of preset names: the architectures, then their "-small" presets. */
const char *const *mt_model_preset_names(void);
/* NULL-terminated list of the architectures' names in the paper's order (engine/models/arch.c,
 * the one registry; docs/adding-an-architecture.md). */
const char *const *mt_model_arch_list(void);
/* 1 when the architecture name is known. */
int mt_model_arch_known(const char *arch);
/* Check that a configuration is usable (positive sizes, heads divide C, ids < V ...). */
int mt_model_config_check(const mt_model_config *cfg);
/* Trainable parameters a configuration gives, without allocating it (0 when invalid). */
size_t mt_model_config_param_count(const mt_model_config *cfg);

/* ---------------------------------------------------------------- lifetime
 * Create with fresh parameters (docs/models.md §3.3 for Mamba, fairseq-style for the transformer),
 * reproducible from seed. */
mt_model *mt_model_create(const mt_model_config *cfg, const mt_backend *be, uint64_t seed);

/* Load a bundle directory (config.json + model.safetensors + tokenizer.model), reading every
 * tensor by its Hugging Face name and checking its shape; F32, F16 and BF16 weights. */
enum {
    MT_MODEL_LOAD_NO_TOKENIZER = 1, /* do not require tokenizer.model (test fixtures) */
};
mt_model *mt_model_load(const char *dir, const mt_backend *be, unsigned flags);
/* The configuration of a bundle or checkpoint directory as mt_model_load reads it, and the path
 * of its tokenizer (mt_bundle_tokenizer_path) into tokenizer (size len), without reading the
 * weights: what a finetune (a train config's init) takes from its checkpoint. 0 or -1. */
int mt_model_config_load(const char *dir, mt_model_config *cfg, char *tokenizer, size_t len);

/* Write a bundle directory that `transformers` loads unchanged (HF tensor names and config
 * keys), replacing any bundle there only once everything is written. tokenizer_model is the
 * path of the tokenizer to copy in, or NULL for none. Weights are stored as dtype: MT_DT_F32
 * (exact, what checkpoints use), MT_DT_F16 or MT_DT_BF16 (rounded to nearest even; half the
 * size, for shipped bundles); loading converts back to fp32. */
int mt_model_save(const mt_model *m, const char *dir, const char *tokenizer_model, mt_dtype dtype);
/* The dtype a bundle's weights can be saved as, by the names users type: "f32", "f16" or "bf16"
 * (any case); -1 and an error naming them otherwise. */
int mt_model_save_dtype_parse(const char *name, mt_dtype *out);
/* The tokenizer.model of the bundle the model was loaded from; NULL for created models or
 * bundles loaded without one. */
const char *mt_model_tokenizer_path(const mt_model *m);

void mt_model_free(mt_model *m);

/* ---------------------------------------------------------------- precision
 * How linear layers compute at inference (docs/quantization.md): fp32, int8 weights (per
 * output channel, quantized from the current parameters when the precision is set) with
 * activations quantized per row on the fly, or bf16 weights (rounded once when the precision
 * is set) with bf16 activations and fp32 sums. Token embeddings stay fp32 (a lookup has no
 * products to speed up); the output projection is converted, tied or not. Training needs
 * fp32: forward_backward on an int8 or bf16 model is an error. */
typedef enum { MT_PRECISION_FP32, MT_PRECISION_INT8, MT_PRECISION_BF16 } mt_precision;
/* "fp32" / "int8" / "bf16" -> *out; -1 + mt_error("unknown precision 'x' (fp32, int8 or
 * bf16)"). */
int mt_precision_parse(const char *name, mt_precision *out);
const char *mt_precision_name(mt_precision p);
/* Switch precision; -1 + mt_error when the backend has no kernels of that kind (int8: the
 * CPU's; bf16: a CUDA device's, weights rounded to bf16 once and multiplied on its tensor
 * cores) or memory runs out (the model keeps its previous precision). Back to fp32, the fp32
 * panels asked for (mt_model_set_fp32_panels) are made again: -1 when memory runs out for
 * them, the model then in fp32 without them. */
int mt_model_set_precision(mt_model *m, mt_precision p);
mt_precision mt_model_precision(const mt_model *m);
/* Bytes held by the int8 or bf16 weights (0 in fp32). */
size_t mt_model_int8_bytes(const mt_model *m);
/* fp32 decoding on a copy of the linear weights in the layout the backend's few-row kernels
 * read fastest (MT_QMATRIX_F32P; the CPU's on AVX2: panels of 16 output channels, docs/decoding.md
 * §9.3): the same precision and parameters, products of 2-39 rows (decoding at batch 2 and more)
 * about 1.2-1.4x faster, and a second copy of those weights in memory. on = 1 asks for them:
 * made now in fp32 (and whenever the model returns to fp32), and not at all where the backend
 * declines (CUDA, the naive CPU table, AVX-512 or pre-AVX2 CPUs, MTLAB_FP32_PANELS=off) or the
 * copies would take more than half of the memory the system has available (both 0, no error);
 * on = 0 frees them. -1 + mt_error when memory runs out (the model runs on without them).
 * Training drops them (mt_model_forward_backward would change the weights under them) and
 * clears the request. mt_model_fp32_panel_bytes: the bytes they hold (0 without). */
int mt_model_set_fp32_panels(mt_model *m, int on);
size_t mt_model_fp32_panel_bytes(const mt_model *m);

/* ---------------------------------------------------------------- facts */
const mt_model_config *mt_model_get_config(const mt_model *m);
const mt_backend *mt_model_backend(const mt_model *m);
int mt_model_is_encdec(const mt_model *m);
/* The same for a configuration: 1 for transformer and mamba-encdec, 0 for the decoder-only
 * architectures and for an unknown arch. */
int mt_model_config_is_encdec(const mt_model_config *c);
/* Trainable parameters (the sinusoid tables and Marian's final_logits_bias are not). */
size_t mt_model_param_count(const mt_model *m);

/* Named tensors in parameter-memory order, for inspection, probes and tests. */
typedef struct {
    const char *name; /* Hugging Face name, "backbone.layers.0.mixer.A_log" */
    int ndim;
    int shape[3];
    size_t offset; /* floats from the start of the parameter block */
    size_t numel;
    int trainable; /* 0 for fixed buffers (final_logits_bias) */
} mt_model_tensor_info;
int mt_model_tensor_count(const mt_model *m);
int mt_model_tensor(const mt_model *m, int i, mt_model_tensor_info *info);
/* Index of a tensor by name, or -1. */
int mt_model_find_tensor(const mt_model *m, const char *name);

/* 0 when got can stand in for want: the same architecture, head count (and window, for
 * mamba-local; rotary base and share, for transformer++ and gpt-neox; residual form, for
 * gpt-neox) and every tensor of want by name and shape; otherwise an error naming got_name,
 * want_name and what differs ("B has 8 heads, A has 4"). */
int mt_model_check_same_layout(const mt_model *want, const char *want_name, const mt_model *got,
                               const char *got_name);

/* Checkpoint averaging (docs/models.md §10.10): the bundle out gets the element-wise mean of
 * the weights of the n bundles dirs (each checked against the first with
 * mt_model_check_same_layout, and each with the first's tokenizer, byte for byte), the first's
 * config, tokenizer and training statistics, stored as dtype (MT_DT_F32, MT_DT_F16, MT_DT_BF16,
 * or -1: the dtype the first bundle's weights are stored in). The sums are in double, so the
 * result does not depend on the order of dirs. out may not be one of dirs. */
int mt_model_average(const char *const *dirs, int n, const char *out, int dtype);

/* The parameter and gradient blocks (backend memory, mt_model_param_block_size floats each;
 * the gradient block is allocated by the first backward). */
size_t mt_model_param_block_size(const mt_model *m);
float *mt_model_params(mt_model *m);
float *mt_model_grads(mt_model *m);

/* ---------------------------------------------------------------- forward and training */
typedef struct {
    int B;
    int T; /* ids length */
    const int32_t *ids; /* host (B, T), see the token conventions above */
    int S; /* encoder-decoder: source length */
    const int32_t *src; /* host (B, S), encoder-decoder only */
    const int *n_prompt; /* decoder-only, host (B) or NULL: ids of each row before its target,
                          * left padding included; the loss counts from there on (a prompt
                          * template's rows, which hold no <sep> to count from) */
} mt_batch;

/* Logits of every position: host (B, T, V). */
int mt_model_forward(mt_model *m, const mt_batch *b, float *logits);

/* Training switches: dropout on when train is 1, with masks drawn from (seed, step) and each
 * row's index in the step's global batch (row0 + b for row b of the batch), so a row draws the
 * same mask however the step's batch is split into micro-batches and ranks. */
typedef struct {
    int train;
    uint64_t seed, step;
    uint32_t row0; /* index of the batch's first row in the step's global batch */
    float label_smoothing;
    /* NULL, or called by backward as soon as range i of mt_model_grad_ranges holds its final
     * gradient for this call (nothing of backward writes there afterwards), so that the
     * ranks' all-reduce of it can overlap the rest of backward (docs/distributed.md §3). */
    void (*grads_ready)(void *ud, int range);
    void *grads_ready_ud;
} mt_step_opts;

/* The gradient block's ranges backward finishes one after another: range i is floats
 * [lo[i], hi[i]) of the block, the tensors of one unit (a layer's mixer and its norm), listed
 * in the order backward completes them (the decoder's units last to first, then the encoder's).
 * The rest of the block (embeddings, final norms, output projection) is complete only when
 * backward returns. Returns the number of ranges; writes at most cap. */
int mt_model_grad_ranges(const mt_model *m, size_t *lo, size_t *hi, int cap);

/* Mean cross-entropy over the target tokens of the batch (see the conventions above), and
 * how many tokens it averages; no gradients. */
int mt_model_loss(mt_model *m, const mt_batch *b, const mt_step_opts *opts, double *loss,
                  size_t *n_tokens);
/* The same, then backward: ACCUMULATES grad_scale * d(sum of token losses)/d(params) into the
 * gradient block; grad_scale 0 means 1 / n_tokens (the mean's gradient). */
int mt_model_forward_backward(mt_model *m, const mt_batch *b, const mt_step_opts *opts,
                              float grad_scale, double *loss, size_t *n_tokens);
void mt_model_zero_grad(mt_model *m);
/* One AdamW step over every trainable parameter (no decay on norms, biases, A_log, D); the
 * moments are allocated by the first call. step counts from 1. */
int mt_model_adamw_step(mt_model *m, const mt_adamw_hparams *h, int step);
/* The AdamW first and second moment blocks (backend memory, mt_model_param_block_size floats
 * each), allocated zeroed on first use, for checkpoints; NULL (mt_last_error) if out of memory. */
float *mt_model_adam_moments(mt_model *m, float **second);

/* ---------------------------------------------------------------- incremental decoding
 * Per-layer caches for up to max_B rows: attention KV cache (max_T positions, prompt
 * included), a sliding-window attention's ring (window + 1 positions), cross-attention
 * keys/values (max_S source positions), Mamba conv and ssm state, RetNet's recurrent state. */
typedef struct mt_decode_state mt_decode_state;
mt_decode_state *mt_decode_state_new(mt_model *m, int max_B, int max_T, int max_S);
void mt_decode_state_free(mt_decode_state *st);
/* Run the prompt in parallel and fill the caches: b->ids (B, T) is the decoder-only prompt
 * (`src <sep>`, left padded) or, for encoder-decoder models, the decoder prefix (usually
 * <bos>) with b->src the source to encode. Writes the next-token logits, host (B, V).
 * The prompt (and a Mamba encoder's source) runs in chunks of the state's prefill chunk,
 * each continuing the caches the chunks before filled, so the working set does not grow
 * with the prompt beyond what the caches themselves need (docs/decoding.md §1.1). */
int mt_model_prefill(mt_model *m, mt_decode_state *st, const mt_batch *b, float *logits);
/* Feed one token per row (host (B)); writes the next-token logits, host (B, V). */
int mt_model_step(mt_model *m, mt_decode_state *st, const int32_t *tokens, float *logits);
/* The same step, but only each row's most probable next token comes back (host (B); the first
 * index of the row's maximum, as argmax_rows), chosen where the logits are: on a GPU a step
 * then downloads B ids instead of B x V logits (Table 4's greedy throughput). */
int mt_model_step_argmax(mt_model *m, mt_decode_state *st, const int32_t *tokens, int32_t *next);
/* Beam search: row i of the new state is row rows[i] of the old one, n_rows <= max_B (so one
 * prefilled row per sentence can be expanded into its beams). */
int mt_decode_state_reorder(mt_decode_state *st, const int32_t *rows, int n_rows);
/* Prompt positions per prefill pass: MT_PREFILL_AUTO by default (the longest power of two up
 * to MT_PREFILL_MAX_CHUNK whose working set fits MT_PREFILL_WORK_BYTES, at least 16), a fixed
 * number, or 0 for the whole prompt in one pass (the reference the chunked prefill is tested
 * and benchmarked against). */
#define MT_PREFILL_AUTO (-1)
#define MT_PREFILL_MAX_CHUNK 1024
#define MT_PREFILL_WORK_BYTES ((size_t)64 << 20)
void mt_decode_state_set_prefill_chunk(mt_decode_state *st, int positions);
/* Tokens the state holds per row (prompt + steps). */
int mt_decode_state_length(const mt_decode_state *st);
/* A host buffer of (max_B, V) floats for the logits a prefill and steps write, kept with the
 * state's backend memory (below) so that decoding call after call does not allocate it either;
 * NULL (mt_last_error) when there is no memory for it. */
float *mt_decode_state_logits(mt_decode_state *st);
/* Bytes of model state a decode state for (max_B, max_T, max_S) holds: KV caches (growing
 * with max_T), sliding-window rings, Mamba conv + ssm states, RetNet recurrent states. */
size_t mt_model_decode_state_bytes(const mt_model *m, int max_B, int max_T, int max_S);
/* The same from a configuration alone (no parameters are allocated), e.g. for paper-size
 * presets in benchmarks; 0 when the configuration is invalid. */
size_t mt_model_config_decode_state_bytes(const mt_model_config *cfg, int max_B, int max_T,
                                          int max_S);
/* What an existing state holds now: those caches plus the working set of its passes so far
 * (the largest prefill chunk or step), its rows, ids and masks: the decoding memory. */
size_t mt_decode_state_bytes_held(const mt_decode_state *st);
/* The caches alone that `rows` rows hold at the state's length now (prompt + steps): KV caches
 * over that length, rings, Mamba and retention states; no working set. */
size_t mt_decode_state_model_bytes(const mt_decode_state *st, int rows);
/* A freed decode state leaves its backend memory (caches, working set, rows, ids and masks) and
 * its host logits with its model when they hold at most the model's workspace limit
 * (MT_DECODE_WORKSPACE_LIMIT unless set; 0 keeps nothing), and the next state of the model
 * draws on them: decoding call after call allocates (and on the CPU faults fresh pages in) only
 * where a call needs more than the last. One state at a time holds them, taken and left
 * atomically, so states made on two threads never share memory. The memory goes with
 * mt_model_free, or with a larger state. */
#define MT_DECODE_WORKSPACE_LIMIT ((size_t)64 << 20)
void mt_model_set_decode_workspace_limit(mt_model *m, size_t bytes);
size_t mt_model_decode_workspace_limit(const mt_model *m);
/* Take now the memory a prefill of B rows, a prompt of T and a source of S positions, then steps
 * of all the state's rows and reorders will want (the working set, the reorder scratch, the host
 * logits), running nothing: freed right after, the state leaves it all with the model for the
 * calls that follow (mt_decode_reserve). */
int mt_decode_state_reserve(mt_decode_state *st, int B, int T, int S);
/* Bytes the model keeps for its next decode state (0 while a state holds them). */
size_t mt_model_decode_workspace_bytes(mt_model *m);

#endif
