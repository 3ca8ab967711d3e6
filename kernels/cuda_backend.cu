// The CUDA backend table: every mt_backend field pointed at its kernel (cuda_*.cu), for the
// calling thread once cuda_thread.cu has bound it to the device.
#include "cuda_api.h"
#include "cuda_ops.h"

#include <stdio.h>

#define MAX_DEVICES 16

extern "C" const struct mt_backend *mt_cuda_backend(int index, int bf16_gemm, char *why,
                                                    size_t why_len)
{
    static mt_backend tables[MAX_DEVICES];
    static char names[MAX_DEVICES][16];
    int bound = cu_bind_thread(index, MAX_DEVICES, bf16_gemm, why, why_len);
    if (bound < 0) return NULL;
    if (bound > 0) return &tables[index];
    // the table of device index is the same for every thread; only its name differs by index
    snprintf(names[index], sizeof names[index], "cuda:%d", index);
    tables[index] = (mt_backend){
        .name = names[index],
        .host_memory = 0,
        .alloc = cu_alloc,
        .free = cu_free,
        .upload = cu_upload,
        .download = cu_download,
        .copy = cu_copy,
        .memzero = cu_memzero,
        .sync = cu_sync,
        .gemm = cu_gemm,
        .gemm_batched = cu_gemm_batched,
        .fill = cu_fill,
        .scale = cu_scale,
        .axpy = cu_axpy,
        .add = cu_add,
        .mul = cu_mul,
        .mul_backward = cu_mul_backward,
        .act_forward = cu_act_forward,
        .act_backward = cu_act_backward,
        .gate_forward = cu_gate_forward,
        .gate_backward = cu_gate_backward,
        .mask_rows = cu_mask_rows,
        .bias_add = cu_bias_add,
        .bias_backward = cu_bias_backward,
        .copy2d = cu_copy2d,
        .index_select = cu_index_select,
        .sum = cu_sum,
        .sum_squares = cu_sum_squares,
        .argmax_rows = cu_argmax_rows,
        .softmax = cu_softmax,
        .log_softmax = cu_log_softmax,
        .layernorm_forward = cu_layernorm_forward,
        .layernorm_backward = cu_layernorm_backward,
        .rmsnorm_forward = cu_rmsnorm_forward,
        .rmsnorm_backward = cu_rmsnorm_backward,
        .embedding_forward = cu_embedding_forward,
        .embedding_backward = cu_embedding_backward,
        .sinusoid_fill = cu_sinusoid_fill,
        .positions_add = cu_positions_add,
        .positions_backward = cu_positions_backward,
        .rope_forward = cu_rope_forward,
        .rope_backward = cu_rope_backward,
        .attention_forward = cu_attention_forward,
        .attention_backward = cu_attention_backward,
        .conv1d_forward = cu_conv1d_forward,
        .conv1d_backward = cu_conv1d_backward,
        .conv1d_step = cu_conv1d_step,
        .conv1d_step_silu = cu_conv1d_step_silu,
        .conv1d_state_fill = cu_conv1d_state_fill,
        .scan_forward = cu_scan_forward,
        .scan_backward = cu_scan_backward,
        .scan_step = cu_scan_step,
        .scan_step_A = NULL, // the step kernel takes A from A_log
        .scan_step_gate = cu_scan_step_gate,
        .mamba_step = NULL, // mt_mamba_step runs the operations one by one
        .retention_forward = cu_retention_forward,
        .retention_backward = cu_retention_backward,
        .retention_state_fill = cu_retention_state_fill,
        .retention_step = cu_retention_step,
        .cross_entropy_forward = cu_cross_entropy_forward,
        .cross_entropy_backward = cu_cross_entropy_backward,
        .cross_entropy_fused = cu_cross_entropy_fused,
        .dropout_forward = cu_dropout_forward,
        .dropout_backward = cu_dropout_backward,
        .adamw_step = cu_adamw_step,
        // bf16 weights (precision bf16); no int8 kernels on the GPU: qmatrix_make refuses
        // int8, naming the backend (docs/quantization.md §3)
        .qmatrix_make = cu_qmatrix_make,
        .qmatrix_free = cu_qmatrix_free,
        .qlinear_forward = cu_qlinear_forward,
        .qlinear_forward_parts = cu_qlinear_forward_parts,
        .graph_begin = cu_graph_begin,
        .graph_end = cu_graph_end,
        .graph_run = cu_graph_run,
        .graph_free = cu_graph_free,
        .qweights = NULL,
    };
    return &tables[index];
}
