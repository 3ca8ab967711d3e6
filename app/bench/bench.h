/* The measurements behind `mtlab bench` (app/cli/cmd_bench.c). Speed goals live here as
 * printed figures and ratios measured in one run, never as timed tests: every timing warms up
 * once, repeats, and keeps the median, so a busy machine blurs the figures less.
 *
 * Letters: B batch rows, S source length, T decoder (or decoder-only) length, V vocabulary. */
#ifndef MTLAB_APP_BENCH_H
#define MTLAB_APP_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "mtlab/backend.h"
#include "mtlab/model.h"

/* ---------------------------------------------------------------- timing */
double bench_median(double *v, int n); /* sorts v; 0 when n is 0 */

/* ---------------------------------------------------------------- counting backend
 * The CPU backend with a wrapper around its matrix products and the operations that read
 * parameters: every gemm is timed and its FLOPs (2 m n k) counted per distinct shape, and the
 * bytes of parameter memory each operation reads are added up. The products attention_forward
 * and attention_backward make inside the backend are not gemm calls and are not counted. The
 * CPU backend itself is untouched, so ordinary runs pay nothing; only models created on this
 * table are counted. Every other operation a training step calls is timed too, one total per
 * operation, for the step's time breakdown. One counter set for the process: the table has
 * no context pointer. */
typedef struct {
    int trans_a, trans_b, m, n, k, lda, ldb, ldc;
    float beta;
    long calls;
    double seconds; /* wall time inside these calls */
} bench_gemm_shape;

/* Wall time of one backend operation over the calls since the last reset. */
#define BENCH_MAX_OPS 64
typedef struct {
    const char *name; /* the backend field's name: "scan_backward" */
    long calls;
    double seconds;
} bench_op_time;

typedef struct {
    bench_gemm_shape *shapes; /* (n_shapes) in first-seen order */
    int n_shapes, cap;
    long gemm_calls;
    double gemm_flops, gemm_seconds;
    size_t param_bytes; /* parameter bytes read since the last reset */
    const float *params; /* the parameter block recognised by param_bytes */
    size_t n_params; /* floats */
    bench_op_time ops[BENCH_MAX_OPS]; /* (n_ops) every other timed operation, first-seen order */
    int n_ops;
} bench_counters;

const mt_backend *bench_counting_backend(void);
/* Zero every counter; params (n_params floats) is the block whose reads are tallied, or NULL. */
void bench_counters_reset(const float *params, size_t n_params);
const bench_counters *bench_counters_get(void);
/* Release the shape table (the counters stay usable). */
void bench_counters_free(void);

/* ---------------------------------------------------------------- training step vs bare gemm
 * One training step (forward + backward + AdamW) against the backend's products alone on its gemm
 * shapes with hot operands (docs/models.md §10.9). The step's model FLOPs are 2 m n k summed
 * over the gemm calls it makes (forward and backward), counted the same way for every preset;
 * the products inside attention, retention and the scan, and all per-element work, add time
 * but no FLOPs. So the whole-step rate (model FLOPs / step seconds) over the bare rate (the
 * same FLOPs / bare seconds) is the share of the step a perfect run of its gemms would take.
 * Each repeat runs one step and then the bare shapes, so both see the same load from whatever
 * else the machine runs; ratios are medians of the per-repeat ratios. */
typedef struct {
    const char *preset;
    int B, S, T; /* the batch trained on (S 0 for decoder-only) */
    size_t tokens; /* B * (S + T): tokens per step, both sides */
    double step_seconds; /* median step */
    double gemm_seconds; /* median time inside the gemms of a step */
    double bare_seconds; /* median time of the same gemms bare, one by one */
    double ratio; /* median of bare / in-step gemm time per repeat */
    double step_ratio; /* median of bare / whole step time per repeat */
    double gemm_flops; /* per step: the model FLOPs */
    long gemm_calls; /* per step */
    bench_gemm_shape *shapes; /* (n_shapes) one step's calls and in-step seconds */
    double *bare_call_seconds; /* (n_shapes) median bare seconds per call */
    int n_shapes;
    bench_op_time ops[BENCH_MAX_OPS]; /* (n_ops) mean seconds per step of the other operations */
    int n_ops;
} bench_train_result;

int bench_train_gemm(const char *preset, int B, int S, int T, int repeat, bench_train_result *r);
void bench_train_result_free(bench_train_result *r);

/* A full batch without padding, laid out as the trainer feeds it (model.h), fixed seed:
 *   encoder-decoder  src (B, S) = words <eos>; ids (B, T) = <bos> words <eos>
 *   decoder-only     ids (B, T) = words <sep> words <eos>, half source, half target
 * ids (B, T) and src (B, S) are the caller's buffers. */
void bench_make_batch(const mt_model_config *cfg, int encdec, int B, int S, int T, mt_batch *b,
                      int32_t *ids, int32_t *src);
/* One training step as the trainer takes it: zero grads, forward+backward with dropout and
 * label smoothing 0.1, AdamW (step counts from 0 here). 0 or -1. */
int bench_train_step(mt_model *m, const mt_batch *b, int step);

/* Seconds per call of the CPU backend's product alone on one recorded shape: one warm-up call, then
 * a group of calls long enough for the clock (operands hot). */
double bench_bare_sgemm_seconds(const bench_gemm_shape *s);

/* ---------------------------------------------------------------- fixed-length decoding
 * Greedy decoding that produces exactly new_tokens per row: neither <eos> nor <pad> is ever
 * chosen, as the peers' minimum-length settings suppress <eos> (CTranslate2's
 * min_decoding_length, transformers' min_new_tokens), so every system decodes the same ids.
 * Prompts as decode.h describes them: `src <sep>` left padded, or source `src <eos>` with
 * prefix <decoder_start>. tokens_out (n, new_tokens) receives the ids when not NULL. */
typedef struct {
    double prefill_seconds, step_seconds; /* step_seconds: all new_tokens - 1 steps */
    /* the process's CPU time over the steps (every thread's): at one thread the steps' own
     * work, which the rest of a busy machine does not stretch as it does the wall time */
    double step_cpu_seconds;
} bench_decode_time;

int bench_decode_fixed(mt_model *m, const int32_t *const *src, const int *src_len, int n,
                       int new_tokens, int32_t *tokens_out, bench_decode_time *t);
/* The same length, each step's token the row's maximum chosen on the model's backend
 * (mt_model_step_argmax: a GPU step downloads n ids, not n x V logits), eos and pad included:
 * greedy throughput as the paper's Table 4 measures it. */
int bench_decode_device_pick(mt_model *m, const int32_t *const *src, const int *src_len, int n,
                             int new_tokens, bench_decode_time *t);

/* Parameter bytes one batch-1 decoding step reads (measured with the counting backend on a
 * model created from cfg, after a 16-token prefill) and the size of the parameter block. */
int bench_step_param_bytes(const mt_model_config *cfg, size_t *step_bytes, size_t *all_bytes);

/* ---------------------------------------------------------------- memory
 * Copy bandwidth in bytes/s (read + written bytes over time) of a parallel memcpy of `bytes`,
 * median of repeat runs after a warm-up. */
double bench_copy_bandwidth(size_t bytes, int repeat);
/* Size of the L3 cache cpu0 sees (sysfs), 0 when unknown. */
size_t bench_l3_bytes(void);

/* ---------------------------------------------------------------- peer inputs
 * A file of token-id lines: each line holds one source as decimal ids separated by spaces,
 * each a token of cfg's vocabulary but the ones that frame or pad a source: <pad> and <eos>,
 * and with mtlab's own tokenizers <sep> and <bos> (ids 0-3 there); a hub checkpoint's other
 * low ids are ordinary (opus-mt's <eos> is 0 and its <pad> the last id, a mamba-*-hf's both 0).
 * Errors name the file, the line and the bad field. */
typedef struct {
    int32_t **ids; /* (n) rows of len[i] ids */
    int *len;
    int n;
} bench_ids;

int bench_ids_read(const char *path, const mt_model_config *cfg, bench_ids *out);
void bench_ids_free(bench_ids *x);

/* Write random-weight transformer-small and mamba-small bundles under dir (F32, fixed seeds),
 * dir/transformer-small and dir/mamba-small. */
int bench_make_bundles(const char *dir);

/* ---------------------------------------------------------------- long prefill
 * A preset (random weights) prefilled with one T-token prompt (a T-token source for the
 * encoder-decoders), its state sized for new_tokens more, in chunks of `chunk` positions (0:
 * one pass), in a child process: the prefill's seconds and the child's peak RSS, or why the
 * model refused the prompt (a model whose positions are limited). */
typedef struct {
    double seconds;
    size_t peak_rss_bytes;
    char refused[256]; /* "" when it ran */
} bench_prefill_result;
int bench_prefill_child(const char *preset, int T, int new_tokens, int chunk,
                        bench_prefill_result *r);

/* ---------------------------------------------------------------- the two modes of the command
 * bench_run_all prints the chosen sections of `mtlab bench`; bench_run_peer decodes a
 * peer-inputs file with a bundle and prints its tokens/s (the figure `make bench-peers`
 * compares). Both 0, or -1 with mt_last_error. */
enum {
    BENCH_GEMM = 1, /* 1. training gemm rate vs bare sgemm */
    BENCH_DECODE = 2, /* 2. decode tokens/s */
    BENCH_ROOFLINE = 4, /* 3. batch-1 decode vs the bandwidth roofline */
    BENCH_STATE = 8, /* 4. decoding-state memory */
    BENCH_PROBES = 16, /* 5. the probes' pass vs decoding */
    BENCH_INT8 = 32, /* 6. decode tokens/s with int8 linear layers vs fp32 */
    BENCH_PREFILL = 64, /* 7. a long prompt's prefill: chunks vs one pass */
    BENCH_ATTRIBUTION = 2048, /* 8. input x gradient attribution vs decoding */
    BENCH_LENGTH = 4096, /* 9. decode tokens/s against source length (bench_length.c) */
    BENCH_ALL = 127 | BENCH_ATTRIBUTION | BENCH_LENGTH,
    /* the GPU report's sections after its device figures (--device; `decode` is Table 4 there) */
    BENCH_CUDA_KERNELS = 128,
    BENCH_CUDA_TRAIN = 256,
    BENCH_CUDA_ALL = BENCH_CUDA_KERNELS | BENCH_DECODE | BENCH_CUDA_TRAIN,
    /* COMET at wmt22-comet-da's size, on the CPU or --device; only when named (2.2 GB) */
    BENCH_COMET = 512,
    /* data-parallel training, 1 and 2 ranks under mpirun; only when named */
    BENCH_RANKS = 1024,
};
typedef struct {
    int repeat; /* timed runs per figure, after one warm-up */
    unsigned sections; /* BENCH_* bits */
    int verbose; /* per-shape gemm table */
    /* section 9: the bundles or presets compared (the first against each other; none: mamba-,
     * transformer- and transformer++-small) and the longest source (0: BENCH_LENGTH_MAX) */
    const char *const *models;
    int n_models, max_len;
} bench_opts;

int bench_run_all(const bench_opts *o);

/* ---------------------------------------------------------------- decoding vs source length
 * Section 9: ms per generated token at batch 1 after sources of 64, 128, ... max_len tokens,
 * and the length from which the first model decodes faster than each other one. */
#define BENCH_LENGTH_MAX 4096
int bench_run_length(const bench_opts *o);
/* The crossover of two costs per token measured at n increasing lengths (0 where a model
 * refused the length): 1 with *at = the first length when ref is already the cheaper there, 2
 * with *at interpolated (linear in log2 of the length) between the last length where ref cost
 * at least as much as other and the first where it cost less, 0 when ref is never cheaper. */
int bench_crossover(const int *lens, const double *ref, const double *other, int n, double *at);
/* COMET segments per second at XLM-R large's shapes, random weights (app/bench/bench_comet.c);
 * device NULL: the CPU. */
int bench_run_comet(const char *device, int repeat);
/* Step time and its all-reduce share for 1 and 2 ranks (app/bench/bench_ranks.c). */
int bench_run_ranks(int repeat);
/* `mtlab bench --device cuda[:N]` (what `make bench-cuda` runs on a GPU machine): the device's
 * copy bandwidth and cuBLAS rates, the selective scan / attention / GEMM efficiencies against
 * them, Table-4 decoding (batch 16, 1024 new tokens) of a Mamba-1.4B and a Transformer++ of
 * the same size with their state memory, and training tokens/s of the seven 77M presets in
 * bf16 — against PyTorch's when torch_json (tests/bench/torch_train.py's output) is given. */
/* decode (NULL: all of Table 4) narrows Table 4 (`--only decode`): which architecture ("mamba" or
 * "transformer++"; NULL both), which precisions (precision_set: that one only, fp32 or bf16) and
 * how many new tokens (0: Table 4's 1024); a shorter decode of one row is what a profiler can
 * take (docs/cuda.md §8) */
typedef struct {
    const char *arch;
    int precision_set;
    mt_precision precision;
    int new_tokens;
} bench_cuda_decode;
int bench_run_cuda(const char *device, const char *torch_json, int repeat, unsigned sections,
                   const bench_cuda_decode *decode);
/* tokens_out, when not NULL, receives one untimed pass's ids: one line of new_tokens per source. */
int bench_run_peer(const char *bundle, const char *inputs, const char *tokens_out, int new_tokens,
                   int batch, int repeat, mt_precision precision);

#endif
