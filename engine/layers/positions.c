/* Position information: Marian sinusoid tables and rotary angles. */
#include "mtlab/layers.h"

#include <math.h>

void mt_sinusoid_table(const mt_backend *be, float *table, int P, int C)
{
    be->sinusoid_fill(table, P, C);
}

void mt_positions_add(const mt_backend *be, float *out, const float *table, int B, int T, int C,
                      int pos0)
{
    be->positions_add(out, table, B, T, C, pos0);
}

/* LLaMA:  inv_freq_i = base^(-2i / rot_dim)
 * RetNet: inv_freq_i = base^(-i / (rot_dim/2 - 1)), torchscale's 1 / 10000^linspace(0, 1)
 * Computed in double and rounded once (torch's fp32 pow may differ in the last bit). */
void mt_rope_inv_freq(float *inv_freq, int rot_dim, float base, mt_rope_freqs kind)
{
    int half = rot_dim / 2;
    for (int i = 0; i < half; i++) {
        double exponent =
            kind == MT_ROPE_RETNET ? (half > 1 ? (double)i / (half - 1) : 0.0) : 2.0 * i / rot_dim;
        inv_freq[i] = (float)pow(base, -exponent);
    }
}
