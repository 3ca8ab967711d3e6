/* Reading one tensor out of a validated safetensors file: shape checks and fp32 conversion. */
#include "mtlab/safetensors.h"

#include "io/json_util.h"
#include "math/half.h"
#include "mtlab/error.h"

#include <string.h>

/* Elements are copied out with memcpy: the format does not align them. */
void mt_st_tensor_to_f32(const mt_st_tensor *t, float *out)
{
    const unsigned char *p = t->data;
    const size_t n = t->numel;
    if (n == 0) return;
    switch (t->dtype) {
    case MT_DT_F32: memcpy(out, p, n * sizeof *out); return;
    case MT_DT_F16:
    case MT_DT_BF16:
        for (size_t i = 0; i < n; i++) {
            uint16_t h;
            memcpy(&h, p + 2 * i, 2);
            out[i] = t->dtype == MT_DT_F16 ? mt_f16_to_f32(h) : mt_bf16_to_f32(h);
        }
        return;
    case MT_DT_F64:
        for (size_t i = 0; i < n; i++) {
            double v;
            memcpy(&v, p + 8 * i, 8);
            out[i] = (float)v;
        }
        return;
    case MT_DT_I64:
        for (size_t i = 0; i < n; i++) {
            int64_t v;
            memcpy(&v, p + 8 * i, 8);
            out[i] = (float)v;
        }
        return;
    case MT_DT_I32:
        for (size_t i = 0; i < n; i++) {
            int32_t v;
            memcpy(&v, p + 4 * i, 4);
            out[i] = (float)v;
        }
        return;
    case MT_DT_I16:
        for (size_t i = 0; i < n; i++) {
            int16_t v;
            memcpy(&v, p + 2 * i, 2);
            out[i] = (float)v;
        }
        return;
    case MT_DT_I8:
        for (size_t i = 0; i < n; i++) out[i] = (float)(int8_t)p[i];
        return;
    case MT_DT_U8:
    case MT_DT_BOOL:
    case MT_DT_COUNT:
        for (size_t i = 0; i < n; i++) out[i] = (float)p[i];
        return;
    }
}

static const mt_st_tensor *find_with_shape(const mt_safetensors *st, const char *name, int ndim,
                                           const int64_t *shape)
{
    char quoted[160];
    const mt_st_tensor *t = mt_st_find(st, name);
    if (!t) {
        mt_error("%s: missing tensor '%s'", mt_st_name(st),
                 printable_text(quoted, sizeof quoted, name));
        return NULL;
    }
    int same = t->ndim == ndim;
    for (int d = 0; same && d < ndim; d++) same = t->shape[d] == shape[d];
    if (!same) {
        char have[160], want[160];
        mt_error("%s: tensor '%s' has shape %s, expected %s", mt_st_name(st),
                 printable_text(quoted, sizeof quoted, name),
                 mt_st_shape_text(have, sizeof have, t->ndim, t->shape),
                 mt_st_shape_text(want, sizeof want, ndim, shape));
        return NULL;
    }
    return t;
}

int mt_st_read_f32(const mt_safetensors *st, const char *name, int ndim, const int64_t *shape,
                   float *out)
{
    const mt_st_tensor *t = find_with_shape(st, name, ndim, shape);
    if (!t) return -1;
    if (!mt_dtype_is_float(t->dtype)) {
        char quoted[160];
        return mt_error("%s: tensor '%s' is %s, not a floating-point tensor", mt_st_name(st),
                        printable_text(quoted, sizeof quoted, name), mt_dtype_name(t->dtype));
    }
    mt_st_tensor_to_f32(t, out);
    return 0;
}

int mt_st_read_raw(const mt_safetensors *st, const char *name, mt_dtype dtype, int ndim,
                   const int64_t *shape, void *out)
{
    const mt_st_tensor *t = find_with_shape(st, name, ndim, shape);
    if (!t) return -1;
    if (t->dtype != dtype) {
        char quoted[160];
        return mt_error("%s: tensor '%s' is %s, expected %s", mt_st_name(st),
                        printable_text(quoted, sizeof quoted, name), mt_dtype_name(t->dtype),
                        mt_dtype_name(dtype));
    }
    if (t->nbytes) memcpy(out, t->data, t->nbytes);
    return 0;
}
