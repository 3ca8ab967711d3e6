/* The two CPU backend tables. They differ only where a fast path exists (matrix products,
 * bias, norms, conv1d backward, attention, scan, retention, int8 products); everything else is
 * one implementation, already written as plain loops. */
#include "backend/cpu/cpu_ops.h"

#define CPU_COMMON                                                                            \
    .host_memory = 1, .alloc = cpu_alloc, .free = cpu_free, .upload = cpu_upload,             \
    .download = cpu_download, .copy = cpu_copy, .memzero = cpu_memzero, .sync = cpu_sync,     \
    .fill = cpu_fill, .scale = cpu_scale, .axpy = cpu_axpy, .add = cpu_add, .mul = cpu_mul,   \
    .mul_backward = cpu_mul_backward, .act_forward = cpu_act_forward,                         \
    .act_backward = cpu_act_backward, .gate_forward = cpu_gate_forward,                       \
    .gate_backward = cpu_gate_backward, .mask_rows = cpu_mask_rows, .bias_add = cpu_bias_add, \
    .copy2d = cpu_copy2d, .index_select = cpu_index_select, .sum = cpu_sum,                   \
    .sum_squares = cpu_sum_squares, .argmax_rows = cpu_argmax_rows, .softmax = cpu_softmax,   \
    .log_softmax = cpu_log_softmax, .embedding_forward = cpu_embedding_forward,               \
    .embedding_backward = cpu_embedding_backward, .sinusoid_fill = cpu_sinusoid_fill,         \
    .positions_add = cpu_positions_add, .positions_backward = cpu_positions_backward,         \
    .rope_forward = cpu_rope_forward, .rope_backward = cpu_rope_backward,                     \
    .conv1d_forward = cpu_conv1d_forward, .conv1d_step = cpu_conv1d_step,                     \
    .conv1d_state_fill = cpu_conv1d_state_fill, .scan_step = cpu_scan_step,                   \
    .scan_step_A = cpu_scan_step_A, .retention_state_fill = cpu_retention_state_fill,         \
    .retention_step = cpu_retention_step, .cross_entropy_forward = cpu_cross_entropy_forward, \
    .cross_entropy_backward = cpu_cross_entropy_backward,                                     \
    .cross_entropy_fused = cpu_cross_entropy_fused, .dropout_forward = cpu_dropout_forward,   \
    .dropout_backward = cpu_dropout_backward, .adamw_step = cpu_adamw_step,                   \
    .qmatrix_free = cpu_qmatrix_free

static const mt_backend cpu_backend = {
    .name = "cpu",
    CPU_COMMON,
    .gemm = cpu_gemm,
    .gemm_batched = cpu_gemm_batched,
    .bias_backward = cpu_bias_backward,
    .layernorm_forward = cpu_layernorm_forward,
    .rmsnorm_forward = cpu_rmsnorm_forward,
    .layernorm_backward = cpu_layernorm_backward,
    .rmsnorm_backward = cpu_rmsnorm_backward,
    .conv1d_backward = cpu_conv1d_backward,
    .attention_forward = cpu_attention_forward,
    .attention_backward = cpu_attention_backward,
    .scan_forward = cpu_scan_forward,
    .scan_backward = cpu_scan_backward,
    .mamba_step = cpu_mamba_step,
    .retention_forward = cpu_retention_forward,
    .retention_backward = cpu_retention_backward,
    .qmatrix_make = cpu_qmatrix_make,
    .qlinear_forward = cpu_qlinear_forward,
};

static const mt_backend naive_backend = {
    .name = "cpu-naive",
    CPU_COMMON,
    .gemm = naive_gemm,
    .gemm_batched = naive_gemm_batched,
    .bias_backward = naive_bias_backward,
    .layernorm_forward = naive_layernorm_forward,
    .rmsnorm_forward = naive_rmsnorm_forward,
    .layernorm_backward = naive_layernorm_backward,
    .rmsnorm_backward = naive_rmsnorm_backward,
    .conv1d_backward = naive_conv1d_backward,
    .attention_forward = naive_attention_forward,
    .attention_backward = naive_attention_backward,
    .scan_forward = naive_scan_forward,
    .scan_backward = naive_scan_backward,
    .retention_forward = naive_retention_forward,
    .retention_backward = naive_retention_backward,
    .qmatrix_make = naive_qmatrix_make,
    .qlinear_forward = naive_qlinear_forward,
};

const mt_backend *mt_backend_cpu(void) { return &cpu_backend; }
const mt_backend *mt_backend_cpu_naive(void) { return &naive_backend; }
