/* The reference int8 kernel: one int32 dot product per (row, channel), in index order
 * (cpu_ops.h states what every kernel computes). */
#include "backend/cpu/cpu_ops.h"

void naive_int8_dots(int32_t *acc, int ldc, const int8_t *xq, int M, const int8_t *wq,
                     const int32_t *wsum, int N, int ld)
{
    (void)wsum;
    for (int m = 0; m < M; m++)
        for (int j = 0; j < N; j++) {
            int32_t s = 0;
            for (int k = 0; k < ld; k++)
                s += (int32_t)xq[(size_t)m * ld + k] * (int32_t)wq[(size_t)j * ld + k];
            acc[(size_t)m * ldc + j] = s;
        }
}
